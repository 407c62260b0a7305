"""CPU SCF benchmark: hartree and PySCF side by side, same machine, same basis data.

Run:  python benchmarks/cpu_scf.py [--cases water,benzene,caffeine,vitc] [--threads 2]

For each case both programs run RHF with the same basis (PySCF's basis is built from
hartree's shells through tests/helpers.to_pyscf, so basis versions cannot differ), the same
convergence threshold (1e-9 Eh) and the same integral screening (1e-13). Both run *direct*
SCF: PySCF's max_memory is set to 10 MB so that it cannot store the ERI tensor (by default
it does so whenever nao^4/8 doubles fit in 4 GB, i.e. for every case here; that incore SCF
time is reported in its own column). Reported: whole-SCF wall time (warm: numba kernels
compiled beforehand), the time of one full-density J+K build, cycles, energies and the
ratio hartree/PySCF-direct.  Writes
benchmarks/results/cpu_scf.json and cpu_scf.md.
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hartree  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.integrals.engine import CPUEngine  # noqa: E402
from hartree.molecule import Molecule  # noqa: E402
from tests.helpers import to_pyscf  # noqa: E402

SHARED = ROOT.parent / "shared" / "molecules"
GPU_DATA = ROOT / "tests" / "gpu" / "data"  # committed copies of some shared molecules


def benzene():
    """Benzene, D6h, C-C 1.39 A, C-H 1.09 A, in the xy plane."""
    lines = []
    for k in range(6):
        phi = np.pi / 3 * k
        c, s = np.cos(phi), np.sin(phi)
        lines.append(f"C {1.39 * c:.6f} {1.39 * s:.6f} 0.0")
        lines.append(f"H {2.48 * c:.6f} {2.48 * s:.6f} 0.0")
    return Molecule.from_string("\n".join(lines))


CASES = {
    "water": (lambda: Molecule.from_xyz(ROOT / "examples" / "water.xyz"), "cc-pvdz"),
    "benzene": (benzene, "def2-tzvp"),
    "caffeine": (lambda: Molecule.from_xyz(ROOT / "examples" / "caffeine.xyz"), "6-31g**"),
    "vitc": (lambda: Molecule.from_xyz(GPU_DATA / "020_Vitamin_C.xyz"), "6-31g**"),
}


def time_hartree(mol, basis, dm):
    engine = CPUEngine(mol, basis, screening_threshold=1e-13)
    engine.jk(dm)  # warm: Schwarz factors and pair data cached, kernels compiled
    t0 = time.perf_counter()
    engine.jk(dm)
    t_jk = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = hartree.scf.run(mol, basis, "rhf", engine=CPUEngine(mol, basis, screening_threshold=1e-13), conv_tol=1e-9)
    t_scf = time.perf_counter() - t0
    return t_jk, t_scf, res.energy, res.iterations


def _pyscf_rhf(pmol, direct):
    from pyscf import scf

    mf = scf.RHF(pmol)
    mf.conv_tol = 1e-9
    mf.direct_scf_tol = 1e-13
    mf.verbose = 0
    if direct:
        mf.max_memory = 10  # MB: too little for the ERI tensor, so PySCF stays direct
    return mf


def time_pyscf(pmol, dm, with_incore):
    mf = _pyscf_rhf(pmol, direct=True)
    t0 = time.perf_counter()
    mf.get_jk(pmol, dm)
    t_jk = time.perf_counter() - t0
    assert mf._eri is None, "PySCF went incore; the J/K timing would not be direct"
    mf = _pyscf_rhf(pmol, direct=True)
    t0 = time.perf_counter()
    e = mf.kernel()
    t_scf = time.perf_counter() - t0
    t_incore = None
    if with_incore:
        mf_in = _pyscf_rhf(pmol, direct=False)
        t0 = time.perf_counter()
        mf_in.kernel()
        t_incore = time.perf_counter() - t0
    return t_jk, t_scf, e, mf.cycles, t_incore


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--no-incore", action="store_true", help="skip PySCF's default incore SCF column")
    ap.add_argument(
        "--resume",
        help="JSON-lines file of rows already measured in this session "
        "(the lines this script prints); their cases are not rerun",
    )
    args = ap.parse_args()

    import numba
    from pyscf import lib

    lib.num_threads(args.threads)
    numba.set_num_threads(args.threads)

    # compile the kernels once on a tiny case so that timings below are warm
    small = Molecule.from_string("O 0 0 0\nH 0 0.76 0.59\nH 0 -0.76 0.59")
    hartree.scf.run(small, "def2-tzvp", "rhf")

    rows = []
    if args.resume:
        rows = [json.loads(line) for line in Path(args.resume).read_text().splitlines() if line.startswith("{")]
    done = {r["case"] for r in rows}
    for name in args.cases.split(","):
        if name in done:
            continue
        make_mol, basis_name = CASES[name]
        mol = make_mol()
        basis = load_basis(mol, basis_name)
        pmol = to_pyscf(mol, basis)
        rng = np.random.default_rng(1)
        a = rng.standard_normal((basis.nao, basis.nao)) * 0.1
        dm = a @ a.T
        h_jk, h_scf, h_e, h_cyc = time_hartree(mol, basis, dm)
        p_jk, p_scf, p_e, p_cyc, p_incore = time_pyscf(pmol, dm, not args.no_incore)
        row = dict(
            case=name,
            basis=basis_name,
            natm=mol.natm,
            nao=basis.nao,
            hartree_jk_s=h_jk,
            pyscf_jk_s=p_jk,
            ratio_jk=h_jk / p_jk,
            hartree_scf_s=h_scf,
            pyscf_scf_s=p_scf,
            ratio_scf=h_scf / p_scf,
            pyscf_incore_scf_s=p_incore,
            hartree_cycles=h_cyc,
            pyscf_cycles=p_cyc,
            hartree_energy=h_e,
            pyscf_energy=p_e,
            energy_diff=h_e - p_e,
        )
        print(json.dumps(row), flush=True)
        rows.append(row)

    import pyscf

    meta = dict(
        benchmark="cpu_scf",
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        machine=platform.processor() or platform.machine(),
        cpu_count=os.cpu_count(),
        threads=args.threads,
        python=platform.python_version(),
        numpy=np.__version__,
        numba=numba.__version__,
        pyscf=pyscf.__version__,
        hartree=hartree.__version__,
        conv_tol=1e-9,
        screening=1e-13,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu_scf.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=2))
    md = [
        "# CPU SCF: hartree vs PySCF (same machine, same basis data)",
        "",
        f"{meta['date']}, {meta['cpu_count']} cores, {args.threads} threads; numba {meta['numba']}, "
        f"PySCF {meta['pyscf']}, hartree {meta['hartree']}. RHF, conv_tol 1e-9, screening 1e-13; "
        "J+K = one full-density build of a random symmetric density (hartree warm: kernels "
        "compiled, pair data cached). Both programs direct; 'PySCF incore' is PySCF's default, "
        "which stores all ERIs for molecules this size.",
        "",
        "| case | basis | nao | J+K hartree (s) | J+K PySCF (s) | ratio | SCF hartree (s) "
        "| SCF PySCF direct (s) | ratio | SCF PySCF incore (s) | cycles h/p | ΔE (Eh) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['case']} | {r['basis']} | {r['nao']} | {r['hartree_jk_s']:.3f} | {r['pyscf_jk_s']:.3f} | "
            f"{r['ratio_jk']:.2f} | {r['hartree_scf_s']:.2f} | {r['pyscf_scf_s']:.2f} | {r['ratio_scf']:.2f} | "
            f"{'-' if r['pyscf_incore_scf_s'] is None else format(r['pyscf_incore_scf_s'], '.2f')} | "
            f"{r['hartree_cycles']}/{r['pyscf_cycles']} | {r['energy_diff']:.1e} |"
        )
    (out / "cpu_scf.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
