"""Robustness of the GPU SCF on a hard case: 168_Valinomycin RHF/6-31G**.

GPU4PySCF 1.9.0 with default settings stops unconverged after 50 cycles on this molecule
(../shared/tools/README.md, H100). This runs hartree's whole SCF on the GPU with
conv_tol 1e-9 Eh and records whether and how it converged, cycle by cycle.

Run on a GPU machine:  python benchmarks/gpu_scf_robustness.py --out DIR
Writes DIR/gpu_scf_robustness_<device>.json and .md (copy them into benchmarks/results/).
"""

import argparse
import json
import time
from pathlib import Path

import hartree
from hartree.molecule import Molecule

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--molecule", default=str(ROOT / "tests" / "gpu" / "data" / "168_Valinomycin.xyz"))
    ap.add_argument("--basis", default="6-31g**")
    ap.add_argument("--max-cycle", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()

    mol = Molecule.from_xyz(args.molecule)
    t0 = time.perf_counter()
    res = hartree.scf.run(
        mol,
        args.basis,
        "rhf",
        device="gpu",
        conv_tol=1e-9,
        max_cycle=args.max_cycle,
        allow_unconverged=True,
        callback=lambda r: print(
            f"{r.cycle:4d} {r.energy:.10f} {r.delta_energy:+.2e} {r.gradient_norm:.2e} {r.step} {r.time:.1f}s",
            flush=True,
        ),
    )
    wall = time.perf_counter() - t0
    doc = dict(
        benchmark="gpu_scf_robustness",
        molecule=Path(args.molecule).stem,
        basis=args.basis,
        nao=res.basis.nao,
        converged=bool(res.converged),
        energy=float(res.energy),
        iterations=int(res.iterations),
        wall_time_s=wall,
        device=res.device,
        conv_tol=1e-9,
        notes=list(res.notes),
        history=[
            dict(
                cycle=r.cycle,
                energy=r.energy,
                delta_energy=r.delta_energy,
                gradient_norm=r.gradient_norm,
                step=r.step,
                time=r.time,
            )
            for r in res.history
        ],
        anchor="GPU4PySCF 1.9.0 default settings: 50 cycles, not converged, 37.4 s (H100, shared/tools/README.md)",
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        hartree=hartree.__version__,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from records import gpu_slug  # benchmarks/ (this script's folder) is on sys.path

    stem = f"gpu_scf_robustness_{gpu_slug()}"  # one record per device
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=2))
    md = [
        "# GPU SCF robustness: Valinomycin RHF/6-31G**",
        "",
        f"{doc['date']}, {doc['device']}, hartree {doc['hartree']}, conv_tol 1e-9 Eh (wall time includes "
        "kernel compilation on a cold cache and the SAD guess).",
        "",
        "| molecule | basis | nao | converged | cycles | energy (Eh) | wall (s) | anchor |",
        "|---|---|---|---|---|---|---|---|",
        f"| {doc['molecule']} | {args.basis} | {doc['nao']} | {doc['converged']} | {doc['iterations']} | "
        f"{doc['energy']:.9f} | {wall:.1f} | {doc['anchor']} |",
    ]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
