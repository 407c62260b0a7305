"""Generate tests/dft/data/grid_references.json: PySCF's Kohn-Sham energies on its finest grid.

Run:  python tools/make_dft_grid_references.py [--cases water/rks/pbe,h2o+/uks/b3lyp] [--out PATH]

For every case of ``tests.dft.grid_cases.REFERENCE_CASES`` (water RKS, C2v and without
symmetry, and H2O+ UKS in 6-31G, LDA to meta-GGA hybrids and VV10), PySCF's RKS/UKS with

* hartree's basis data (``tests.helpers.to_pyscf``: the same shells, AO order and
  normalisation) and the libxc functional hartree uses (``parse_functional(xc).xc_code``);
* ``grids.level = 9``, ``grids.prune = None`` (PySCF's finest grid: Treutler-Ahlrichs radii,
  Becke partition with Treutler's size adjustment, all Lebedev points everywhere);
* ``small_rho_cutoff = 0``: PySCF otherwise drops the points where ρ w < 1e-7 after the first
  cycle (it moved the PBE water energy by 6e-10 Eh); the reference is the grid itself;
* VV10 functionals: ``nlcgrids.level = NLC_LEVEL`` (3), ``nlcgrids.prune = None`` (why not 9:
  tests/dft/grid_cases.py);
* ``conv_tol = 1e-11``, ``conv_tol_grad = 1e-7``, started from the converged density of the
  same SCF on PySCF's default grid (a few expensive cycles instead of a dozen; the converged
  energy does not depend on the start).

The output holds the PySCF and libxc versions, the date, the settings, and per case the
molecule (geometry text, unit, charge, multiplicity), basis, functional (hartree's name and
the libxc code given to PySCF), method, class and tolerance, the grid sizes, cycles, wall
time and the energy.  ``--cases`` regenerates some cases and keeps the others of an existing
file.  The whole set took 29 minutes on a shared 2-core machine (the five VV10 cases 19 of them).
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "dft" / "data" / "grid_references.json"
CONV_TOL = 1e-11
CONV_TOL_GRAD = 1e-7


def pyscf_reference(name, method, xc):
    """One case's record (module docstring)."""
    from pyscf import dft

    from hartree.basis import load_basis
    from hartree.dft import parse_functional
    from tests.dft import grid_cases as gc
    from tests.helpers import to_pyscf

    mol = gc.molecule(name)
    pmol = to_pyscf(mol, load_basis(mol, gc.BASIS))
    xc_code = parse_functional(xc).xc_code
    make = dft.RKS if method == "rks" else dft.UKS
    t0 = time.perf_counter()
    start = make(pmol)
    start.xc = xc_code
    start.nlcgrids.level = 1
    start.conv_tol = 1e-9
    start.kernel()
    if not start.converged:
        raise RuntimeError(f"{gc.case_id(name, method, xc)}: the starting SCF did not converge")
    mf = make(pmol)
    mf.xc = xc_code
    mf.grids.level = gc.FINEST_LEVEL
    mf.grids.prune = None
    mf.nlcgrids.level = gc.NLC_LEVEL
    mf.nlcgrids.prune = None
    mf.small_rho_cutoff = 0.0
    mf.conv_tol = CONV_TOL
    mf.conv_tol_grad = CONV_TOL_GRAD
    cycles = []
    mf.callback = lambda env: cycles.append(float(env["e_tot"]))
    energy = float(mf.kernel(dm0=start.make_rdm1()))
    if not mf.converged:
        raise RuntimeError(f"{gc.case_id(name, method, xc)}: PySCF's SCF on the finest grid did not converge")
    nlc = mf.do_nlc()
    spec = gc.MOLECULES[name]
    return {
        "id": gc.case_id(name, method, xc),
        "molecule": {"name": name, **spec},
        "basis": gc.BASIS,
        "method": method,
        "xc": xc,
        "xc_code": xc_code,
        "class": gc.functional_class(xc),
        "tolerance": gc.tolerance(xc),
        "pyscf": {
            "grids.level": gc.FINEST_LEVEL,
            "grids.prune": None,
            "grid_points": int(mf.grids.weights.size),
            "nlcgrids.level": gc.NLC_LEVEL if nlc else None,
            "nlcgrids.prune": None,
            "nlc_grid_points": int(mf.nlcgrids.weights.size) if nlc else None,
            "small_rho_cutoff": 0.0,
            "conv_tol": CONV_TOL,
            "conv_tol_grad": CONV_TOL_GRAD,
            "start_energy": float(start.e_tot),
            "cycles": len(cycles),
            "wall_s": round(time.perf_counter() - t0, 1),
        },
        "energy": energy,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))

    import numpy as np
    import pyscf
    from pyscf import lib
    from pyscf.dft import libxc

    from hartree.io.files import write_text
    from tests.dft import grid_cases as gc

    every = {gc.case_id(*c): c for c in gc.REFERENCE_CASES}
    chosen = [c for c in args.cases.split(",") if c] or list(every)
    unknown = [c for c in chosen if c not in every]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(every)}")
    out = Path(args.out)
    old = json.loads(out.read_text(encoding="utf-8"))["cases"] if out.is_file() and args.cases else []
    records = {r["id"]: r for r in old}
    for cid in chosen:
        records[cid] = pyscf_reference(*every[cid])
        print(json.dumps(records[cid]), flush=True)
        doc = {
            "generator": "tools/make_dft_grid_references.py",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "pyscf": pyscf.__version__,
            "libxc": str(libxc.__version__),
            "numpy": np.__version__,
            "python": platform.python_version(),
            "threads": lib.num_threads(),
            "basis_data": "hartree's (tests.helpers.to_pyscf)",
            "cases": [records[c] for c in every if c in records],
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text(out, json.dumps(doc, indent=1) + "\n")  # after every case: a cut-off run keeps its cases


if __name__ == "__main__":
    main()
