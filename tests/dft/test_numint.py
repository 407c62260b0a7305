"""E_xc, V_xc and the electron count against PySCF's numint on hartree's grid (the same
points and weights), AO gradients against PySCF's, V_xc against finite differences of E_xc."""

import numpy as np
import pytest
from pyscf import dft

from hartree.basis import load_basis
from hartree.dft import Grid, make_grid, parse_functional, xc_energy_potential
from hartree.dft.numint import ao_values, shell_radii
from hartree.errors import InputError
from tests.helpers import pyscf_grids, to_pyscf, water

#: LDA, GGA, a hybrid's semilocal part, meta-GGAs
FUNCTIONALS = ["svwn", "pbe", "b3lyp", "tpss", "r2scan"]


@pytest.mark.parametrize("cartesian", [False, True])
def test_ao_values_and_gradients_match_pyscf(cartesian):
    mol = water()
    basis = load_basis(mol, "cc-pvdz", cartesian=cartesian)  # up to d
    pmol = to_pyscf(mol, basis)
    rng = np.random.default_rng(7)
    points = np.concatenate([rng.normal(scale=2.0, size=(300, 3)), mol.coords])
    ours = ao_values(basis, points, deriv=1)
    ref = pmol.eval_gto("GTOval_cart_deriv1" if cartesian else "GTOval_sph_deriv1", points)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("cartesian", [False, True])
def test_ao_second_derivatives_match_pyscf(cartesian):
    """deriv=2 (for the XC gradient): rows 0-3 as deriv=1, rows 4-9 xx, xy, xz, yy, yz, zz as
    PySCF's GTOval_*_deriv2, up to f functions, to 1e-15 of the largest value."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz", cartesian=cartesian)  # up to f
    pmol = to_pyscf(mol, basis)
    rng = np.random.default_rng(11)
    points = np.concatenate([rng.normal(scale=2.0, size=(200, 3)), mol.coords])
    ours = ao_values(basis, points, deriv=2)
    ref = pmol.eval_gto("GTOval_cart_deriv2" if cartesian else "GTOval_sph_deriv2", points)
    assert ours.shape == ref.shape == (10, points.shape[0], basis.nao)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-15 * np.abs(ref).max())
    np.testing.assert_array_equal(ours[:4], ao_values(basis, points, deriv=1))
    with pytest.raises(InputError, match="order 3"):
        ao_values(basis, points, deriv=3)


def test_second_derivative_radii_bound_the_values():
    """Beyond shell_radii(..., deriv=2) no value or derivative up to second order reaches the
    threshold (sampled along a line from each shell's centre)."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz")
    radii = shell_radii(basis, threshold=1e-10, deriv=2)
    assert np.all(radii >= shell_radii(basis, threshold=1e-10))
    direction = np.array([0.48, 0.6, 0.64])
    for ish in range(basis.nshell):
        t = radii[ish] + np.linspace(0.0, 5.0, 200)
        points = basis.shell_center[ish] + t[:, None] * direction
        values = ao_values(basis, points, deriv=2, shells=[ish])
        assert np.abs(values).max() < 1e-10


@pytest.mark.parametrize("name", FUNCTIONALS)
def test_restricted_equals_pyscf_on_the_same_grid(water_rhf, name):
    mol, basis, pmol, dm = water_rhf
    grid = make_grid(mol, level=1)
    exc, vxc, nelec = xc_energy_potential(basis, grid, dm, name)
    ref_n, ref_exc, ref_vxc = dft.numint.NumInt().nr_rks(
        pmol, pyscf_grids(pmol, grid), parse_functional(name).xc_code, dm
    )
    assert abs(exc - ref_exc) < 1e-10
    assert abs(nelec - ref_n) < 1e-10
    np.testing.assert_allclose(vxc, ref_vxc, rtol=0, atol=1e-10)
    np.testing.assert_allclose(vxc, vxc.T, rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", FUNCTIONALS)
def test_unrestricted_equals_pyscf_on_the_same_grid(water_cation_uhf, name):
    mol, basis, pmol, dm = water_cation_uhf
    grid = make_grid(mol, level=1)
    exc, vxc, nelec = xc_energy_potential(basis, grid, dm, name)
    ref_n, ref_exc, ref_vxc = dft.numint.NumInt().nr_uks(
        pmol, pyscf_grids(pmol, grid), parse_functional(name).xc_code, dm
    )
    assert vxc.shape == (2, basis.nao, basis.nao) and nelec.shape == (2,)
    assert abs(exc - ref_exc) < 1e-10
    np.testing.assert_allclose(nelec, ref_n, rtol=0, atol=1e-10)
    np.testing.assert_allclose(vxc, ref_vxc, rtol=0, atol=1e-10)


def test_b3lyp_is_libxc_b3lyp_with_vwn_rpa(water_rhf):
    """hartree's b3lyp is libxc's HYB_GGA_XC_B3LYP (VWN-RPA), not the VWN5 variant."""
    mol, basis, pmol, dm = water_rhf
    grid = make_grid(mol, level=1)
    exc = xc_energy_potential(basis, grid, dm, "b3lyp")[0]
    ni, grids = dft.numint.NumInt(), pyscf_grids(pmol, grid)
    rpa = ni.nr_rks(pmol, grids, ".08*SLATER + .72*B88, .81*LYP + .19*VWN_RPA", dm)[1]
    vwn5 = ni.nr_rks(pmol, grids, ".08*SLATER + .72*B88, .81*LYP + .19*VWN5", dm)[1]
    assert abs(exc - rpa) < 1e-10 and abs(exc - vwn5) > 1e-3


def _directional_check(basis, grid, dm, name, direction, h=1e-4):
    """(E(D + hX) - E(D - hX)) / 2h and Σ V·X."""
    e_plus = xc_energy_potential(basis, grid, dm + h * direction, name)[0]
    e_minus = xc_energy_potential(basis, grid, dm - h * direction, name)[0]
    vxc = xc_energy_potential(basis, grid, dm, name)[1]
    return (e_plus - e_minus) / (2 * h), float(np.sum(vxc * direction))


def _symmetric(rng, shape, scale):
    x = rng.normal(scale=scale, size=shape)
    return x + np.swapaxes(x, -1, -2)


@pytest.mark.parametrize("name", ["svwn", "pbe", "tpss", "r2scan"])
def test_potential_is_the_derivative_of_the_energy(water_rhf, water_cation_uhf, name):
    """Restricted and unrestricted, on every 5th point of a level-1 grid (any points and
    weights define an E_xc whose derivative V_xc must be); measured 1e-11..1e-10."""
    rng = np.random.default_rng(11)
    for mol, basis, _, dm in (water_rhf, water_cation_uhf):
        full = make_grid(mol, level=1)
        grid = Grid(full.coords[::5], full.weights[::5], full.atoms[::5])
        direction = _symmetric(rng, dm.shape, 0.01)
        fd, analytic = _directional_check(basis, grid, dm, name, direction)
        assert abs(fd - analytic) <= 1e-7 * abs(analytic)


def test_bad_density_matrix_shapes_fail(water_rhf):
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    with pytest.raises(InputError, match=r"density matrix has shape \(3, 13, 13\); expected \(13, 13\)"):
        xc_energy_potential(basis, grid, np.stack([dm, dm, dm]), "pbe")


def test_small_blocks_screen_shells_without_changing_results(water_rhf):
    """With 128-point blocks some blocks lie beyond the radius of the O 1s shell and skip it."""
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    whole = xc_energy_potential(basis, grid, dm, "pbe")
    small = xc_energy_potential(basis, grid, dm, "pbe", block_points=128)
    assert abs(whole[0] - small[0]) < 1e-12 and abs(whole[2] - small[2]) < 1e-12
    np.testing.assert_allclose(small[1], whole[1], rtol=0, atol=1e-12)
