"""Baker's 30-molecule optimization set at HF/6-31G**: hartree's optimizer (geomeTRIC on the
analytic gradients) against the published step counts, energies checked by PySCF.

Run:  python benchmarks/baker_opt.py [--molecules water,ammonia] [--device auto] [--threads 2]

Geometries and reference step counts: shared/molecules/baker/ (SOURCE.md there: Baker's
start geometries as redistributed by Shajan, Manathunga, Goetz & Merz, chemrxiv 2023,
doi:10.26434/chemrxiv-2023-7r7qn-v4; ``paper_steps`` is the ASE/Berny column of their
Table 1 at HF/6-31G**, ``pyberny_steps`` PyBerny driven by PySCF).  The paper converged on
the largest Cartesian gradient component alone, fmax = 4.5e-4 Eh/bohr; the closest
geomeTRIC set is GAU (the default here), whose gmax is the same 4.5e-4 Eh/bohr (on atomic
gradient norms) with RMS gradient, energy-change and displacement criteria on top, so a
molecule can need a step or two more than the paper.

Per molecule: RHF/6-31G** optimization (``hartree.optimize.optimize``, TRIC coordinates),
recording geomeTRIC's steps and the energy+gradient evaluations (steps + 1), whether it
converged, the final energy and the wall time; then a PySCF single point at our final
geometry with exactly our basis data (tests.helpers.to_pyscf, conv_tol 1e-10) and the
energy difference.  The whole set writes benchmarks/results/baker_opt_<device>.json and .md
(one current record per device: 'cpu' or the GPU's short name); a subset (--molecules)
prints its rows and writes only with --out, so that no partial record replaces the whole
one.
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hartree  # noqa: E402
from benchmarks.molecules import search_dirs  # noqa: E402
from benchmarks.records import gpu_slug, record_path  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.errors import ConvergenceError  # noqa: E402
from hartree.molecule import Molecule  # noqa: E402
from hartree.optimize import optimize  # noqa: E402
from tests.helpers import to_pyscf  # noqa: E402


def baker_dir():
    """The folder holding the Baker set (reference.json and the .xyz files)."""
    for d in search_dirs():
        if (d / "baker" / "reference.json").is_file():
            return d / "baker"
    raise FileNotFoundError("baker/reference.json not found in " + ", ".join(str(d) for d in search_dirs()))


def pyscf_energy(molecule, basis):
    """RHF energy (Eh) of PySCF at ``molecule`` with hartree's basis data."""
    from pyscf import scf

    mf = scf.RHF(to_pyscf(molecule, basis))
    mf.conv_tol, mf.conv_tol_grad, mf.verbose = 1e-10, 1e-7, 0
    energy = mf.kernel()
    if not mf.converged:
        raise RuntimeError("PySCF's SCF at the optimized geometry did not converge")
    return float(energy)


def run_one(name, reference, folder, args):
    """The row of one molecule."""
    mol = Molecule.from_xyz(folder / f"{name}.xyz", charge=reference["charge"], multiplicity=reference["mult"])
    basis = load_basis(mol, args.basis)
    t0 = time.perf_counter()
    try:
        result = optimize(
            mol,
            basis,
            "rhf",
            convergence=args.convergence,
            max_steps=args.max_steps,
            device=args.device,
            allow_unconverged=True,
        )
    except ConvergenceError as error:  # an SCF that did not converge at some step
        return dict(molecule=name, natm=mol.natm, nao=basis.nao, converged=False, error=str(error),
                    wall_s=time.perf_counter() - t0)  # fmt: skip
    row = dict(
        molecule=name,
        natm=mol.natm,
        nao=basis.nao,
        converged=bool(result.converged),
        steps=result.iterations,
        evaluations=result.gradient_evaluations,
        rejected=sum(1 for s in result.steps if s.rejected),
        paper_steps=reference.get("paper_steps"),
        pyberny_steps=reference.get("pyberny_steps"),
        energy=result.energy,
        start_energy=result.steps[0].energy,
        max_gradient=result.steps[-1].max_gradient,
        wall_s=result.wall_time,
        device=result.device,
    )
    if not args.no_pyscf:
        row["pyscf_energy"] = pyscf_energy(result.molecule, basis)
        row["energy_diff"] = row["energy"] - row["pyscf_energy"]
    return row


def table(rows, meta):
    """The Markdown record."""
    lines = [
        "# Baker's optimization set, HF/6-31G**: hartree + geomeTRIC",
        "",
        f"{meta['date']}; {meta['device']}, {meta['threads']} threads; {meta['versions']}. Convergence set "
        f"{meta['convergence']} (geomeTRIC), TRIC coordinates, at most {meta['max_steps']} steps. 'evaluations' "
        "counts energy+gradient evaluations (steps + 1); 'paper' is the ASE/Berny column of Shajan et al. 2023 "
        "(fmax 4.5e-4 Eh/bohr only), 'PyBerny' PyBerny on PySCF (benchmarks' reference.json). "
        "E − PySCF: PySCF's RHF at our final geometry with the same basis data.",
        "",
        "| molecule | atoms | nao | steps | evaluations | paper | PyBerny | converged | final energy (Eh) "
        "| E − PySCF (Eh) | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['molecule']} | {r['natm']} | {r['nao']} | - | - | - | - | SCF failed | - | - | "
                         f"{r['wall_s']:.1f} |")  # fmt: skip
            continue
        diff = f"{r['energy_diff']:.1e}" if "energy_diff" in r else "-"
        lines.append(
            f"| {r['molecule']} | {r['natm']} | {r['nao']} | {r['steps']} | {r['evaluations']} | "
            f"{r['paper_steps']} | {r['pyberny_steps']} | {'yes' if r['converged'] else 'NO'} | "
            f"{r['energy']:.8f} | {diff} | {r['wall_s']:.1f} |"
        )
    done = [r for r in rows if "error" not in r]
    if done:
        lines.append(
            f"| total ({len(done)}) | | | {sum(r['steps'] for r in done)} | {sum(r['evaluations'] for r in done)} | "
            f"{sum(r['paper_steps'] or 0 for r in done)} | {sum(r['pyberny_steps'] or 0 for r in done)} | "
            f"{sum(r['converged'] for r in done)}/{len(rows)} | | | {sum(r['wall_s'] for r in rows):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--molecules", default=None, help="comma-separated subset (file names without .xyz)")
    ap.add_argument("--basis", default="6-31g**")
    ap.add_argument("--convergence", default="gau")
    ap.add_argument("--max-steps", type=int, default=100)
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-pyscf", action="store_true", help="skip the PySCF single points")
    ap.add_argument("--out", default=None, help="path stem of the record (default: results/baker_opt_<device>)")
    args = ap.parse_args()

    import geometric
    import numba
    import numpy as np
    import pyscf
    from pyscf import lib

    from hartree.device.selection import resolve_device

    lib.num_threads(args.threads)
    numba.set_num_threads(args.threads)
    folder = baker_dir()
    references = json.loads((folder / "reference.json").read_text())
    names = args.molecules.split(",") if args.molecules else sorted(references)
    unknown = [n for n in names if n not in references]
    if unknown:
        ap.error(f"not in the Baker set: {', '.join(unknown)}; choose from {', '.join(sorted(references))}")
    device = resolve_device(args.device)
    slug = gpu_slug() if device == "gpu" else "cpu"
    rows = []
    for name in names:
        row = run_one(name, references[name], folder, args)
        print(json.dumps(row), flush=True)
        rows.append(row)
    meta = dict(
        benchmark="baker_opt",
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        device=rows[0].get("device", device) if rows else device,
        machine=platform.processor() or platform.machine(),
        cpu_count=os.cpu_count(),
        threads=args.threads,
        basis=args.basis,
        convergence=args.convergence,
        max_steps=args.max_steps,
        versions=f"hartree {hartree.__version__}, geomeTRIC {geometric.__version__}, PySCF {pyscf.__version__}, "
        f"numba {numba.__version__}, numpy {np.__version__}, Python {platform.python_version()}",
    )
    text = table(rows, meta)
    print(text)
    whole = sorted(names) == sorted(references)
    stem = args.out or (record_path("baker_opt", slug) if whole else None)
    if stem is None:
        print("a subset: no record written (give --out to write one)")
        return
    Path(stem + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    Path(stem + ".md").write_text(text)
    print(f"wrote {stem}.json and {stem}.md")


if __name__ == "__main__":
    main()
