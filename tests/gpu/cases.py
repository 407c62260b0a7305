"""Random small molecules for the GPU J/K tests (deterministic per seed).

Each case: symbols, coordinates (bohr), basis name, cartesian flag, densities
(nset, nao, nao) symmetric random.  Shared by the tests and by ``make_reference.py``
(which writes PySCF references where PySCF is installed).
"""

import os

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

#: (name, elements, basis, cartesian, nset, seed); highest l: sto-3g p, 6-31g** d,
#: cc-pvdz d, cc-pvtz f
CASES = [
    ("h2o_sto3g", ("O", "H", "H"), "sto-3g", False, 1, 1),
    ("chno_631gss", ("C", "H", "N", "O"), "6-31g**", False, 2, 2),
    ("cnf_ccpvdz_cart", ("C", "N", "F", "H"), "cc-pvdz", True, 1, 3),
    ("ch_ccpvtz", ("C", "H"), "cc-pvtz", False, 1, 4),
]


#: every quartet class up to (gg|gg) (120 classes; shells s, s, p, d, f, g contracted over
#: 1-3 primitives on C, N, O, data/sg_contracted.nw), two densities; J/K reference from the
#: CPU engine in data/jk_sg_reference.npz (make_reference.py --classes)
SG_CASE = ("sg_contracted", ("C", "N", "O"), os.path.join(DATA, "sg_contracted.nw"), False, 2, 5)
SG_REFERENCE = os.path.join(DATA, "jk_sg_reference.npz")


def molecule(elements, seed):
    """hartree.Molecule (neutral, lowest multiplicity) with a random geometry: atoms
    >= 1.8 bohr apart within a 6-bohr box (coordinates in bohr)."""
    from hartree.constants import atomic_number
    from hartree.molecule import Molecule

    rng = np.random.default_rng(seed)
    coords = []
    while len(coords) < len(elements):
        x = rng.uniform(-3.0, 3.0, 3)
        if all(np.linalg.norm(x - y) > 1.8 for y in coords):
            coords.append(x)
    numbers = np.array([atomic_number(s) for s in elements])
    return Molecule(
        numbers=numbers,
        coords=np.array(coords),
        charge=0,
        multiplicity=1 + int(numbers.sum()) % 2,
        symbols=tuple(elements),
    )


def densities(nao, nset, seed):
    """Symmetric random densities (nset, nao, nao), entries O(1) / nao."""
    rng = np.random.default_rng(1000 + seed)
    d = rng.standard_normal((nset, nao, nao)) / nao
    return d + d.transpose(0, 2, 1)


def build(case):
    """(molecule, basis, dms) for one CASES entry (needs basis-set-exchange)."""
    from hartree.basis import load_basis

    name, elements, basis_name, cart, nset, seed = case
    mol = molecule(elements, seed)
    basis = load_basis(mol, basis_name, cartesian=cart)
    return mol, basis, densities(basis.nao, nset, seed)


def shell_subset(basis, ls):
    """Basis with only the shells of `basis` whose l is in `ls` (same order and data)."""
    from hartree.basis import Basis

    keep = [i for i in range(basis.nshell) if int(basis.shell_l[i]) in ls]
    exps, coefs, start = [], [], []
    for i in keep:
        start.append(len(exps))
        p0, n = int(basis.shell_prim_start[i]), int(basis.shell_nprim[i])
        exps.extend(basis.exponents[p0 : p0 + n])
        coefs.extend(basis.coefficients[p0 : p0 + n])
    return Basis(
        name=f"{basis.name} (l in {sorted(ls)})",
        pure=basis.pure,
        shell_atom=[int(basis.shell_atom[i]) for i in keep],
        shell_l=[int(basis.shell_l[i]) for i in keep],
        shell_nprim=[int(basis.shell_nprim[i]) for i in keep],
        shell_prim_start=start,
        shell_center=basis.shell_center[keep],
        exponents=exps,
        coefficients=coefs,
        atom_symbols=basis.atom_symbols,
    )
