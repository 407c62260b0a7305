"""Fixtures for the grid tests: small molecules with hartree bases, their PySCF twins
(tests.helpers.to_pyscf: same shells, same AO order) and S-orthonormal orbitals."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.molecule import Molecule
from tests.helpers import to_pyscf

# Water without symmetry (bohr), so permutation or sign mistakes show.
WATER = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"


def orthonormal_orbitals(overlap, seed):
    """Random C with C^T S C = 1 (every AO mixed in)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal(overlap.shape))
    w, v = np.linalg.eigh(overlap)
    return (v / np.sqrt(w)) @ v.T @ q


def make_system(text, basis_name, cartesian=False, multiplicity=None):
    """(Molecule, Basis, PySCF Mole) for a molecule given in bohr."""
    mol = Molecule.from_string(text, unit="bohr", multiplicity=multiplicity)
    basis = load_basis(mol, basis_name, cartesian=cartesian)
    return mol, basis, to_pyscf(mol, basis)


@pytest.fixture(scope="session")
def water_qz():
    """Water with cc-pVQZ (s..g), spherical and cartesian: {cart: (mol, basis, pmol)}."""
    return {cart: make_system(WATER, "cc-pvqz", cartesian=cart) for cart in (False, True)}


def fake_result(text, basis_name, seed=3, cartesian=False):
    """(SCFResult-like namespace, PySCF Mole): RHF-shaped, random S-orthonormal orbitals."""
    from types import SimpleNamespace

    mol, basis, pmol = make_system(text, basis_name, cartesian=cartesian)
    nao = basis.nao
    occ = np.zeros(nao)
    occ[: mol.nelectron // 2] = 2.0
    return SimpleNamespace(
        method="rhf",
        converged=True,
        energy=-76.0,
        mo_energy=np.linspace(-20.0, 3.0, nao),
        mo_coeff=orthonormal_orbitals(pmol.intor("int1e_ovlp"), seed),
        mo_occ=occ,
        energy_components={"one_electron": -120.0, "coulomb": 45.0, "exchange": -9.0, "nuclear_repulsion": 8.0},
        iterations=9,
        history=[],
        dipole=np.zeros(3),
        mulliken_charges=np.zeros(mol.natm),
        s_squared=None,
        wall_time=1.0,
        device="cpu (test)",
        molecule=mol,
        basis=basis,
    ), pmol
