"""Densities: against PySCF's numint.eval_rho, and their integral over a fine lattice."""

import numpy as np
from pyscf.dft import numint

from hartree.grid import evaluate_density, lattice_around

from .conftest import make_system, orthonormal_orbitals

# H2 and H3 (bohr): only soft s/p/d Gaussians (widest exponent 13 bohr^-2), so a 0.2 bohr
# lattice integrates them to ~1e-6 (the lattice error of smooth Gaussians falls off like exp(-1/h^2)).
H2 = "H 0.0 0.0 -0.70; H 0.0 0.1 0.70"
H3 = "H 0.0 0.0 -0.90; H 0.0 0.2 0.90; H 1.4 0.1 0.1"


def test_restricted_density_matches_pyscf_and_integrates_to_n():
    mol, basis, pmol = make_system(H2, "cc-pvdz")
    coeff = orthonormal_orbitals(pmol.intor("int1e_ovlp"), seed=1)
    occ = np.zeros(basis.nao)
    occ[:1] = 2.0
    lattice = lattice_around(mol.coords, spacing=0.2, margin=6.0, unit="bohr")
    rho = evaluate_density(basis, coeff, occ, lattice)
    dm = (coeff * occ) @ coeff.T
    points = lattice.points(0, 5000)
    ref = numint.eval_rho(pmol, numint.eval_ao(pmol, points), dm)
    np.testing.assert_allclose(rho.ravel()[:5000], ref, rtol=0, atol=1e-10)
    total = rho.sum() * lattice.voxel_volume
    assert abs(total - 2.0) < 1e-4, total


def test_unrestricted_density_and_spin_density_integrate_to_counts():
    mol, basis, pmol = make_system(H3, "cc-pvdz", multiplicity=2)
    s = pmol.intor("int1e_ovlp")
    coeff = np.stack([orthonormal_orbitals(s, seed=2), orthonormal_orbitals(s, seed=3)])
    occ = np.zeros((2, basis.nao))
    occ[0, :2] = 1.0
    occ[1, :1] = 1.0
    lattice = lattice_around(mol.coords, spacing=0.2, margin=6.0, unit="bohr")
    rho = evaluate_density(basis, coeff, occ, lattice)
    spin = evaluate_density(basis, coeff, occ, lattice, spin=True)
    dv = lattice.voxel_volume
    assert abs(rho.sum() * dv - 3.0) < 1e-4
    assert abs(spin.sum() * dv - 1.0) < 1e-4
    ao = numint.eval_ao(pmol, lattice.points(0, 3000))
    dma = (coeff[0] * occ[0]) @ coeff[0].T
    dmb = (coeff[1] * occ[1]) @ coeff[1].T
    ref = numint.eval_rho(pmol, ao, dma) - numint.eval_rho(pmol, ao, dmb)
    np.testing.assert_allclose(spin.ravel()[:3000], ref, rtol=0, atol=1e-10)


def test_restricted_open_shell_spin_density_is_the_singly_occupied_orbital():
    mol, basis, pmol = make_system(H3, "sto-3g", multiplicity=2)
    coeff = orthonormal_orbitals(pmol.intor("int1e_ovlp"), seed=4)
    occ = np.array([2.0, 1.0, 0.0])
    points = np.random.default_rng(0).normal(size=(200, 3))
    spin = evaluate_density(basis, coeff, occ, points, spin=True)
    psi1 = numint.eval_ao(pmol, points) @ coeff[:, 1]
    np.testing.assert_allclose(spin, psi1**2, rtol=0, atol=1e-12)
