"""Basis-function and orbital values against PySCF's numint.eval_ao (the oracle)."""

import numpy as np
import pytest
from pyscf.dft import numint

from hartree.grid import evaluate_ao, evaluate_orbitals, lattice_around, lattice_from_axes
from hartree.grid.cpu import prepare_basis, shell_cutoffs

from .conftest import orthonormal_orbitals


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(3)
    near = rng.normal(scale=1.5, size=(400, 3))  # bohr, around the nuclei
    far = rng.normal(scale=6.0, size=(100, 3))
    nuclei = np.array([[0.0, 0.05, -0.11], [0.02, 1.43, 0.97]])  # a point exactly on nuclei
    return np.concatenate([near, far, nuclei])


@pytest.mark.parametrize("cart", [False, True])
def test_ao_values_match_pyscf_up_to_g(water_qz, points, cart):
    mol, basis, pmol = water_qz[cart]
    assert basis.max_l == 4
    ref = numint.eval_ao(pmol, points)
    ours = evaluate_ao(basis, points)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-10)
    single = evaluate_ao(basis, points, dtype=np.float32)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("cart", [False, True])
def test_orbitals_on_lattice_both_paths_match_pyscf(water_qz, cart):
    mol, basis, pmol = water_qz[cart]
    lattice = lattice_around(mol.coords, spacing=0.35, margin=2.0, unit="bohr")
    coeff = orthonormal_orbitals(pmol.intor("int1e_ovlp"), seed=5)[:, [3, 4, 20]]
    ref = (numint.eval_ao(pmol, lattice.points()) @ coeff).T.reshape((3,) + lattice.shape)
    for method in ("ao", "separable"):
        psi = evaluate_orbitals(basis, coeff, lattice, method=method)
        np.testing.assert_allclose(psi, ref, rtol=0, atol=1e-10, err_msg=method)
        single = evaluate_orbitals(basis, coeff, lattice, method=method, dtype=np.float32)
        assert single.dtype == np.float32
        scale = np.abs(ref).max()
        np.testing.assert_allclose(single, ref, rtol=0, atol=1e-5 * scale, err_msg=method)


def test_tilted_lattice_and_point_list(water_qz):
    mol, basis, pmol = water_qz[False]
    angle = 0.4
    rot = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1.0]])
    lattice = lattice_from_axes([-2.0, -2.5, -2.0], 0.5 * rot, (9, 10, 8))
    assert not lattice.is_rectilinear
    coeff = orthonormal_orbitals(pmol.intor("int1e_ovlp"), seed=9)[:, :2]
    psi = evaluate_orbitals(basis, coeff, lattice)  # auto -> "ao" path
    ref = (numint.eval_ao(pmol, lattice.points()) @ coeff).T.reshape((2,) + lattice.shape)
    np.testing.assert_allclose(psi, ref, atol=1e-10, rtol=0)
    np.testing.assert_allclose(
        evaluate_orbitals(basis, coeff[:, 0], lattice.points())[0], ref[0].ravel(), atol=1e-10, rtol=0
    )


def test_screening_radius_bounds_the_functions(water_qz):
    mol, basis, _ = water_qz[False]
    rcut2 = shell_cutoffs(basis, threshold=1e-8)
    prepared = prepare_basis(basis, threshold=1e-8)
    np.testing.assert_array_equal(prepared.rcut2, rcut2)
    # just beyond the radius of each shell, the unscreened values are below the threshold
    for ish in range(basis.nshell):
        r = np.sqrt(rcut2[ish]) * 1.0001
        directions = np.random.default_rng(ish).normal(size=(20, 3))
        pts = basis.shell_center[ish] + r * directions / np.linalg.norm(directions, axis=1)[:, None]
        values = evaluate_ao(basis, pts, threshold=1e-300)[:, basis.ao_loc[ish] : basis.ao_loc[ish + 1]]
        assert np.abs(values).max() < 1e-8
