"""Gradient time against size: (alanine)n, 6-31G and 6-31G** (the QUICK document's figure),
hartree and PySCF side by side on the same CPU, same basis data.

Run:  python benchmarks/gradient_alanine.py [--n 1,2,4,8] [--bases 6-31g,6-31g**] [--threads 2]

The chains are extended strands of standard peptide geometry built in code
(benchmarks/peptides.py says how).  For each chain both programs run RHF to the same
tolerances (GRADIENT_SCF_DEFAULTS: 1e-9 Eh, commutator 1e-7; screening 1e-13) and then the analytic nuclear
gradient; reported are the gradient wall times (warm: numba kernels compiled beforehand on a
small chain, PySCF's libcint needs no compilation), the SCF times for context, and the largest
difference between the two gradients (Eh/bohr).  Writes benchmarks/results/
gradient_alanine_cpu.json and .md (one current record per device).
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hartree  # noqa: E402
from benchmarks.peptides import peptide  # noqa: E402
from benchmarks.records import record_path  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.gradients import GRADIENT_SCF_DEFAULTS, scf_gradient  # noqa: E402
from hartree.integrals.engine import CPUEngine  # noqa: E402
from tests.helpers import to_pyscf  # noqa: E402


def time_hartree(mol, basis):
    """(scf s, gradient s, energy, gradient (natm, 3))."""
    engine = CPUEngine(mol, basis, screening_threshold=1e-13)
    t0 = time.perf_counter()
    res = hartree.scf.run(mol, basis, "rhf", engine=engine, **GRADIENT_SCF_DEFAULTS)
    t_scf = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = scf_gradient(res, engine)
    return t_scf, time.perf_counter() - t0, res.energy, g.gradient


def time_pyscf(mol, basis):
    """(scf s, gradient s, energy, gradient) of PySCF's direct RHF and nuc_grad_method()."""
    from pyscf import scf

    mf = scf.RHF(to_pyscf(mol, basis))
    mf.conv_tol, mf.conv_tol_grad = GRADIENT_SCF_DEFAULTS["conv_tol"], GRADIENT_SCF_DEFAULTS["conv_tol_grad"]
    mf.direct_scf_tol = 1e-13
    t0 = time.perf_counter()
    e = mf.kernel()
    t_scf = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = mf.nuc_grad_method().kernel()
    return t_scf, time.perf_counter() - t0, e, g


def table(rows, meta):
    lines = [
        "# Gradient time against size: (alanine)n, hartree vs PySCF on the same CPU",
        "",
        f"{meta['date']}, {meta['cores']} threads; {meta['versions']}. RHF to "
        f"{GRADIENT_SCF_DEFAULTS['conv_tol']:g} Eh (commutator {GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g}), "
        "screening 1e-13; times are wall seconds of the analytic gradient after a converged SCF (hartree warm). "
        "PySCF's SCF keeps its default (all ERIs in memory where they fit), so that column is context only. "
        "Chains: extended strands built by benchmarks/peptides.py.",
        "",
        "| n | atoms | basis | nao | gradient hartree (s) | gradient PySCF (s) | ratio | SCF hartree (s) | "
        "SCF PySCF (s) | max abs diff (Eh/bohr) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['natm']} | {r['basis']} | {r['nao']} | {r['hartree_gradient_s']:.2f} | "
            f"{r['pyscf_gradient_s']:.2f} | {r['hartree_gradient_s'] / r['pyscf_gradient_s']:.2f} | "
            f"{r['hartree_scf_s']:.1f} | {r['pyscf_scf_s']:.1f} | {r['max_diff']:.1e} |"
        )
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1,2,4,8", help="chain lengths")
    ap.add_argument("--bases", default="6-31g,6-31g**")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import numba
    import pyscf
    from pyscf import lib

    lib.num_threads(args.threads)
    numba.set_num_threads(args.threads)
    small = peptide("A")
    time_hartree(small, load_basis(small, "6-31g**"))  # compile the kernels: timings below are warm
    rows = []
    for basis_name in args.bases.split(","):
        for n in (int(x) for x in args.n.split(",")):
            mol = peptide("A" * n)
            basis = load_basis(mol, basis_name)
            hs, hg, he, hgrad = time_hartree(mol, basis)
            ps, pg, pe, pgrad = time_pyscf(mol, basis)
            row = dict(n=n, natm=mol.natm, basis=basis_name, nao=basis.nao, hartree_scf_s=hs, hartree_gradient_s=hg,
                       pyscf_scf_s=ps, pyscf_gradient_s=pg, energy_diff=he - pe,
                       max_diff=float(np.abs(hgrad - pgrad).max()))  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": args.threads,
        "cpu": platform.processor() or platform.machine(),
        "versions": f"hartree {hartree.__version__}, numba {numba.__version__}, PySCF {pyscf.__version__}",
    }
    path = record_path("gradient_alanine", "cpu")
    Path(path + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    Path(path + ".md").write_text(table(rows, meta))
    print(table(rows, meta))


if __name__ == "__main__":
    main()
