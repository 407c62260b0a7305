"""J and K of fixed test cases from one tree, stored to compare two trees to 1e-12.

    python tools/jk_snapshot.py OUT.npz [--device cpu|gpu] [--molecules]
    python tools/jk_snapshot.py NEW.npz --compare OLD.npz

The restructuring of the package must leave J/K unchanged: each matrix of the new tree
equal to the old tree's to 1e-12 relative to its largest element.  The cases are those of
tests/gpu/cases.py (random small molecules in STO-3G, 6-31G**, cc-pVDZ cartesian,
cc-pVTZ, and the case holding every quartet class up to (gg|gg)); ``--molecules`` adds
Vitamin C / 6-31G** and def2-TZVP (benchmarks/molecules.py finds it) with random densities.  Run the
dump with the old tree first on PYTHONPATH (e.g. an extracted ``git archive``), then the
new one, then ``--compare``.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gpu"))

import cases  # noqa: E402  (tests/gpu/cases.py: the shared GPU test cases)

TOLERANCE = 1e-12


def _cases(with_molecules):
    yield from cases.CASES
    yield cases.SG_CASE
    if with_molecules:
        sys.path.insert(0, os.path.join(HERE, ".."))
        from benchmarks.molecules import molecule_path  # ../shared/molecules or a carried copy

        path = str(molecule_path("020_Vitamin_C"))
        yield ("vitc_631gss", path, "6-31g**", False, 1, 7)
        yield ("vitc_def2tzvp", path, "def2-tzvp", False, 1, 8)


def _build(case):
    name, elements, basis_name, cart, nset, seed = case
    if isinstance(elements, str):  # an XYZ file
        from hartree.basis import load_basis
        from hartree.molecule import Molecule

        mol = Molecule.from_xyz(elements)
        basis = load_basis(mol, basis_name, cartesian=cart)
        return mol, basis, cases.densities(basis.nao, nset, seed)
    return cases.build(case)


def snapshot(out, device, with_molecules):
    arrays = {}
    for case in _cases(with_molecules):
        mol, basis, dms = _build(case)
        if device == "gpu":
            from hartree.gpu import GPUEngine

            engine = GPUEngine(mol, basis)
        else:
            from hartree.integrals.engine import CPUEngine

            engine = CPUEngine(mol, basis)
        t0 = time.perf_counter()
        J, K = engine.jk(dms)
        print(f"{case[0]}: nao {basis.nao}, {time.perf_counter() - t0:.2f} s", flush=True)
        arrays[f"{case[0]}_J"] = np.asarray(J)
        arrays[f"{case[0]}_K"] = np.asarray(K)
    np.savez(out, **arrays)


def compare(new, old):
    a, b = np.load(new), np.load(old)
    worst = 0.0
    for key in sorted(b.files):
        if key not in a.files:
            print(f"{key}: missing in {new}")
            worst = np.inf
            continue
        err = np.abs(a[key] - b[key]).max() / np.abs(b[key]).max()
        worst = max(worst, err)
        print(f"{key}: relative difference {err:.2e}")
    print(f"largest relative difference {worst:.2e} (tolerance {TOLERANCE:.0e})")
    return 0 if worst <= TOLERANCE else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--molecules", action="store_true")
    parser.add_argument("--compare", metavar="OLD")
    args = parser.parse_args()
    if args.compare:
        return compare(args.out, args.compare)
    snapshot(args.out, args.device, args.molecules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
