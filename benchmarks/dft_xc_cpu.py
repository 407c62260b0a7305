"""CPU XC benchmark: one E_xc/V_xc evaluation, hartree against PySCF's numint, same grid and density.

Run:  python benchmarks/dft_xc_cpu.py [--cases water,benzene,caffeine] [--threads N] [--repeat 5] [--scf]

Per case (RKS B3LYP, grid level 3; water/6-31G, benzene/6-31G*, caffeine/6-31G** from the
shared Baker geometries, found by benchmarks/molecules.py) both programs get the same points
and weights (hartree's make_grid) and the same density (PySCF's minao guess), in one process
with the same threads:

* hartree cached: ``xc_energy_potential(..., cache=make_xc_cache(...))``, the AO values and
  gradients built once beforehand (what every SCF cycle after the first costs); the build is
  timed on its own ('build');
* hartree uncached: ``xc_energy_potential`` without a cache (values computed in the call);
* PySCF: ``NumInt().nr_rks`` on a Grids holding the same points, sorted and masked as
  PySCF's own Grids.build does for an RKS run (``arg_group_grids``, ``make_mask``), so that
  PySCF screens its AO blocks as usual.

Each timing is the minimum (and median) of ``--repeat`` warm runs, interleaved so that a
change of the machine's load hits all three alike; the load average is recorded before and
after.  ``--scf`` adds a whole RKS B3LYP SCF of benzene/6-31G* with hartree's stage times.
``--threads N`` sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and
NUMBA_NUM_THREADS before numpy loads (default: what the environment gives).  Writes
benchmarks/results/dft_xc_cpu.json and dft_xc_cpu.md (``--name`` for another record, e.g.
dft_xc_cpu_1thread with ``--threads 1``).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.records import cpu_model, timed  # noqa: E402

CASES = {
    "water": ("baker/water", "6-31g"),
    "benzene": ("baker/benzene", "6-31g*"),
    "caffeine": ("baker/caffeine", "6-31g**"),
}
XC = "b3lyp"
LEVEL = 3
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def pyscf_grids(pmol, grid):
    """A PySCF Grids with hartree's points and weights, grouped and masked as Grids.build does."""
    import numpy as np
    from pyscf.dft import gen_grid

    grids = gen_grid.Grids(pmol)
    order = gen_grid.arg_group_grids(pmol, np.asarray(grid.coords))
    grids.coords = np.ascontiguousarray(np.asarray(grid.coords)[order])
    grids.weights = np.ascontiguousarray(np.asarray(grid.weights)[order])
    grids.non0tab = grids.screen_index = grids.make_mask(pmol, grids.coords)
    return grids


def run_case(name, repeat):
    import numpy as np
    from pyscf import dft, scf

    from benchmarks.molecules import molecule_path
    from hartree.basis import load_basis
    from hartree.dft import make_grid, parse_functional, xc_energy_potential
    from hartree.dft.numint import make_xc_cache
    from hartree.molecule import Molecule
    from tests.helpers import to_pyscf

    geometry, basis_name = CASES[name]
    load_before = os.getloadavg()
    mol = Molecule.from_xyz(molecule_path(geometry))
    basis = load_basis(mol, basis_name)
    t_grid, grid = timed(lambda: make_grid(mol, level=LEVEL))
    pmol = to_pyscf(mol, basis)
    dm = scf.RHF(pmol).get_init_guess(pmol, "minao")
    xc_code = parse_functional(XC).xc_code
    ni = dft.numint.NumInt()
    grids = pyscf_grids(pmol, grid)

    t_build, cache = timed(lambda: make_xc_cache(basis, grid, XC))
    cached = lambda: xc_energy_potential(basis, grid, dm, XC, cache=cache)  # noqa: E731
    uncached = lambda: xc_energy_potential(basis, grid, dm, XC)  # noqa: E731
    pyscf = lambda: ni.nr_rks(pmol, grids, xc_code, dm)  # noqa: E731
    ours, ref = cached(), pyscf()  # warm: kernels loaded, libxc's tables built
    uncached()
    times = {"cached": [], "uncached": [], "pyscf": []}
    for _ in range(repeat):
        for key, fn in (("cached", cached), ("pyscf", pyscf), ("uncached", uncached)):
            times[key].append(timed(fn)[0])
    best = {k: min(v) for k, v in times.items()}
    return dict(
        case=name,
        basis=basis_name,
        natm=int(mol.natm),
        nao=int(basis.nao),
        grid_points=int(grid.npoints),
        grid_s=t_grid,
        blocks=int(cache.nblock),
        cached_blocks=int(cache.ncached),
        cache_mib=cache.cached_bytes / 2**20,
        functions_per_block=float(np.mean([i.size for i in cache.ao_index])),
        build_s=t_build,
        hartree_cached_s=best["cached"],
        hartree_uncached_s=best["uncached"],
        pyscf_s=best["pyscf"],
        median_s={k: statistics.median(v) for k, v in times.items()},
        ratio_cached=best["cached"] / best["pyscf"],
        ratio_uncached=best["uncached"] / best["pyscf"],
        exc_diff=float(ours[0] - ref[1]),
        vxc_max_diff=float(np.abs(ours[1] - ref[2]).max()),
        nelec=float(ours[2]),
        load_before=list(load_before),
        load_after=list(os.getloadavg()),
    )


def run_scf():
    """A whole RKS B3LYP SCF of benzene/6-31G* (grid level 3) with hartree's stage times."""
    import hartree
    from benchmarks.molecules import molecule_path
    from hartree.molecule import Molecule

    mol = Molecule.from_xyz(molecule_path("baker/benzene"))
    hartree.scf.run(Molecule.from_string("O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59"), "sto-3g", "rks", xc=XC)  # warm
    load_before = os.getloadavg()
    t, res = timed(lambda: hartree.scf.run(mol, "6-31g*", "rks", xc=XC, grid_level=LEVEL))
    stages = {k: float(v) for k, v in res.timings.items() if not k.endswith("_builds")}
    return dict(
        case="benzene",
        basis="6-31g*",
        wall_s=t,
        energy=float(res.energy),
        iterations=int(res.iterations),
        converged=bool(res.converged),
        stages_s=stages,
        load_before=list(load_before),
        load_after=list(os.getloadavg()),
    )


def markdown(meta, rows, scf_row):
    lines = [
        "# CPU XC evaluation: hartree vs PySCF's numint (same grid, same density)",
        "",
        f"{meta['date']}; {meta['cpu']} ({meta['cpu_count']} logical CPUs); threads: {meta['threads']}; "
        f"hartree {meta['hartree']}, PySCF {meta['pyscf']} (libxc {meta['libxc']}), numpy {meta['numpy']}, "
        f"numba {meta['numba']}, Python {meta['python']}.",
        "",
        f"RKS {XC.upper()}, grid level {LEVEL} (hartree's points and weights given to both), density: PySCF's "
        "minao guess. One evaluation of E_xc and V_xc, best of "
        f"{meta['repeat']} warm runs (interleaved). *cached*: the AO values and gradients kept from a "
        "previous evaluation, as in every SCF cycle after the first (their one-off *build* beside); "
        "*uncached*: values computed in the call; PySCF: `NumInt.nr_rks` with its usual grouping and "
        "mask of the points. Load average (1 min) before/after each case in the last column: "
        "**the machine was shared**, so absolute times are inflated; the ratios come from the same "
        "process and the same moments.",
        "",
        "| case | basis | nao | points | cache (MiB) | build (s) | hartree cached (s) | hartree uncached (s) "
        "| PySCF (s) | cached / PySCF | uncached / PySCF | ΔE_xc (Eh) | max ΔV (Eh) | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['basis']} | {r['nao']} | {r['grid_points']} | {r['cache_mib']:.0f} | "
            f"{r['build_s']:.3f} | {r['hartree_cached_s']:.3f} | {r['hartree_uncached_s']:.3f} | "
            f"{r['pyscf_s']:.3f} | {r['ratio_cached']:.2f} | {r['ratio_uncached']:.2f} | {r['exc_diff']:.1e} | "
            f"{r['vxc_max_diff']:.1e} | {r['load_before'][0]:.1f}/{r['load_after'][0]:.1f} |"
        )
    if scf_row:
        s = scf_row["stages_s"]
        lines += [
            "",
            f"Whole RKS {XC.upper()} SCF, benzene/6-31G*, grid level {LEVEL} (hartree, CPU engine): "
            f"{scf_row['wall_s']:.1f} s, {scf_row['iterations']} cycles; stages (s): "
            + ", ".join(f"{k} {v:.2f}" for k, v in s.items())
            + f"; load {scf_row['load_before'][0]:.1f}/{scf_row['load_after'][0]:.1f}.",
        ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--threads", type=int, default=0, help="threads for every library (0: the environment's)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scf", action="store_true", help="also time a whole RKS SCF of benzene/6-31G*")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--name", default="dft_xc_cpu", help="file name of the record, without .json/.md")
    args = ap.parse_args()
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    if args.threads > 0:
        for var in THREAD_VARIABLES:
            os.environ[var] = str(args.threads)

    import numba
    import numpy as np
    import pyscf
    from pyscf import lib
    from pyscf.dft import libxc

    import hartree
    from hartree.io.files import write_text

    rows = []
    for name in args.cases.split(","):
        rows.append(run_case(name, args.repeat))
        print(json.dumps(rows[-1]), flush=True)
    scf_row = run_scf() if args.scf else None
    if scf_row:
        print(json.dumps(scf_row), flush=True)
    meta = dict(
        benchmark="dft_xc_cpu",
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        cpu=cpu_model(),
        cpu_count=os.cpu_count(),
        cpus_allowed=len(os.sched_getaffinity(0)),
        threads={"pyscf_omp": lib.num_threads(), "numba": numba.get_num_threads()}
        | {var: os.environ.get(var) for var in THREAD_VARIABLES},
        repeat=args.repeat,
        python=platform.python_version(),
        numpy=np.__version__,
        numba=numba.__version__,
        pyscf=pyscf.__version__,
        libxc=str(libxc.__version__),
        hartree=hartree.__version__,
        xc=XC,
        grid_level=LEVEL,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / f"{args.name}.json", json.dumps(dict(meta=meta, rows=rows, scf=scf_row), indent=2) + "\n")
    text = markdown(meta, rows, scf_row)
    write_text(out / f"{args.name}.md", text)
    print(text)


if __name__ == "__main__":
    main()
