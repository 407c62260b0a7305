"""Fixtures for the DFT tests: water (and its cation) with hartree bases, their PySCF twins
(tests.helpers.to_pyscf: same shells, same AO order) and PySCF SCF density matrices."""

import pytest

from hartree.basis import load_basis
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water


@pytest.fixture(scope="session")
def water_rhf():
    """(Molecule, Basis, PySCF Mole, RHF density (nao, nao)) of water / 6-31G."""
    from pyscf import scf

    mol = water()
    basis = load_basis(mol, "6-31g")
    pmol = to_pyscf(mol, basis)
    dm = scf.RHF(pmol).run(conv_tol=1e-10).make_rdm1()
    return mol, basis, pmol, dm


@pytest.fixture(scope="session")
def water_cation_uhf():
    """(Molecule, Basis, PySCF Mole, UHF densities (2, nao, nao)) of H2O+ (doublet) / 6-31G,
    geometry without symmetry so that permutation or sign mistakes show."""
    from pyscf import scf

    mol = Molecule.from_string("O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02", unit="bohr", charge=1)
    basis = load_basis(mol, "6-31g")
    pmol = to_pyscf(mol, basis)
    dm = scf.UHF(pmol).run(conv_tol=1e-10).make_rdm1()
    return mol, basis, pmol, dm
