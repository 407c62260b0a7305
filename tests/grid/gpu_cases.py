"""Systems for the GPU grid tests that need no PySCF (the device machine has none).

The CPU paths they are compared with are checked against PySCF in test_values.py,
test_density.py and test_cli_orbitals.py, so GPU == CPU to the stated tolerance means
GPU == PySCF to it as well.
"""

import numpy as np

from hartree.basis import load_basis
from hartree.molecule import Molecule

# Water without symmetry (bohr), as in conftest.WATER.
WATER = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"
# A linear-ish chain with two elements repeated (several atoms per kind; JIT kinds shared).
CHAIN = "O 0 0 0; H 0 1.4 1.0; O 0 0 5.5; H 0 -1.4 6.5; H 0.3 0.2 -1.8; H 0.1 -0.3 7.4"


def system(text, basis_name, cartesian):
    mol = Molecule.from_string(text, unit="bohr")
    return mol, load_basis(mol, basis_name, cartesian=cartesian)


def coefficients(nao, norb, seed):
    """Random coefficients (nao, norb), unit-norm columns: values of order 1 everywhere."""
    c = np.random.default_rng(seed).standard_normal((nao, norb))
    return c / np.linalg.norm(c, axis=0)


def scattered_points(seed, n=700):
    """Points around the molecule (bohr), including far ones, in no spatial order."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(scale=1.5, size=(n - 100, 3)), rng.normal(scale=6.0, size=(100, 3))])
