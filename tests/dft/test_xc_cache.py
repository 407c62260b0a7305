"""The XC integration's blocks and AO cache (hartree.dft.ao_cache, ao_kernels): the numba AO
values equal numint.ao_values, the blocks partition the grid and screen only negligible
shells, and E_xc, V_xc are the same numbers whether the values are cached, partly cached
(tiny budgets) or computed afresh, and equal an unscreened numpy evaluation on all points."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.dft import Grid, make_grid, xc_energy_potential
from hartree.dft.ao_cache import AOCache, default_budget, spatial_blocks
from hartree.dft.ao_kernels import block_values
from hartree.dft.functionals import libxc, parse_functional
from hartree.dft.numint import AO_THRESHOLD, ao_values, densities, make_xc_cache, shell_radii
from hartree.errors import InputError
from hartree.grid.cpu import prepare_basis
from tests.helpers import water

pytest.importorskip("pyscf")

#: LDA, GGA, hybrid GGA, meta-GGA
FUNCTIONALS = ["svwn", "pbe", "b3lyp", "tpss"]


@pytest.mark.parametrize("cartesian", [False, True])
def test_block_values_equal_ao_values(cartesian):
    """Values and gradients of blocks with their own shell lists (any order, up to f) equal
    numint.ao_values (the numpy reference, checked against PySCF) to 1e-15 of the largest."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz", cartesian=cartesian)
    rng = np.random.default_rng(3)
    points = np.concatenate([rng.normal(scale=2.0, size=(250, 3)), mol.coords])
    lists = [np.arange(basis.nshell)[::-1], np.array([2, 0, 7, 5]), np.arange(basis.nshell)]
    starts = np.array([0, 100, 180, points.shape[0]])
    shells = np.concatenate(lists)
    shell_start = np.concatenate([[0], np.cumsum([s.size for s in lists])])
    for deriv in (0, 1):
        buffer, offsets = block_values(prepare_basis(basis), points, starts, shells, shell_start, deriv)
        for b, sh in enumerate(lists):
            pts = points[starts[b] : starts[b + 1]]
            ours = buffer[offsets[b] : offsets[b + 1]].reshape(1 + 3 * deriv, -1, pts.shape[0])
            ref = ao_values(basis, pts, deriv, sh)
            np.testing.assert_allclose(ours.transpose(0, 2, 1), ref, rtol=0, atol=1e-15 * np.abs(ref).max())


def test_spatial_blocks_partition_the_points():
    coords = make_grid(water(), level=1).coords
    order, starts = spatial_blocks(coords, 200)
    np.testing.assert_array_equal(np.sort(order), np.arange(coords.shape[0]))
    sizes = np.diff(starts)
    assert sizes.min() >= 100 and sizes.max() <= 200
    order2, starts2 = spatial_blocks(coords, 200)
    np.testing.assert_array_equal(order, order2)
    np.testing.assert_array_equal(starts, starts2)


def test_screened_shells_are_negligible_on_their_blocks(water_rhf):
    """Every value and gradient of a shell a block drops stays below AO_THRESHOLD on it."""
    mol, basis, _, _ = water_rhf
    grid = make_grid(mol, level=1)
    cache = AOCache(basis, grid, 1, shell_radii(basis), memory_budget=0, block_points=64)
    assert any(i.size < basis.nao for i in cache.ao_index)  # some blocks do screen
    for b in range(cache.nblock):
        kept = cache.shells[cache.shell_start[b] : cache.shell_start[b + 1]]
        dropped = np.setdiff1d(np.arange(basis.nshell), kept)
        if dropped.size:
            pts = cache.coords[cache.starts[b] : cache.starts[b + 1]]
            assert np.abs(ao_values(basis, pts, 1, dropped)).max() < AO_THRESHOLD


def _reference_rks(basis, grid, dm, name):
    """E_xc and V_xc of a closed-shell density by numpy on all points and all functions:
    E = Σ w ρ ε, V = Σ w [v_ρ φφ^T + 2 v_σ (∇ρ·∇φ φ^T + φ ∇ρ·∇φ^T) + ½ v_τ Σ_x ∂_xφ ∂_xφ^T]."""
    f = parse_functional(name)
    ao = ao_values(basis, grid.coords, 1)
    rho = densities(ao, dm, f.family)
    eps, v = libxc().eval_xc(f.xc_code, rho, spin=0, deriv=1)[:2]
    w = grid.weights
    r0 = rho if f.family == "LDA" else rho[0]
    vxc = ao[0].T @ (ao[0] * (w * v[0])[:, None])
    if f.family != "LDA":
        g = np.einsum("xp,xpi->pi", rho[1:4], ao[1:4]) * (2.0 * w * v[1])[:, None]
        vxc += ao[0].T @ g + g.T @ ao[0]
    if f.family == "MGGA":
        vxc += sum(ao[1 + x].T @ (ao[1 + x] * (0.5 * w * v[3])[:, None]) for x in range(3))
    return float(w @ (r0 * eps)), vxc


@pytest.mark.parametrize("name", FUNCTIONALS)
def test_equals_unscreened_numpy_on_all_points(water_rhf, name):
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    exc, vxc, _ = xc_energy_potential(basis, grid, dm, name, cache=make_xc_cache(basis, grid, name))
    ref_exc, ref_vxc = _reference_rks(basis, grid, dm, name)
    assert abs(exc - ref_exc) < 1e-12
    np.testing.assert_allclose(vxc, ref_vxc, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", FUNCTIONALS)
def test_cached_partly_cached_and_uncached_agree(water_rhf, water_cation_uhf, name):
    """The full cache, budgets of a few blocks (the rest recomputed in small chunks) and no
    cache give the same E_xc, V_xc and electron counts (restricted and unrestricted)."""
    for mol, basis, _, dm in (water_rhf, water_cation_uhf):
        grid = make_grid(mol, level=1)
        full = make_xc_cache(basis, grid, name, block_points=128)
        assert full.ncached == full.nblock
        ref = xc_energy_potential(basis, grid, dm, name, cache=full)
        tiny = AOCache(basis, grid, full.deriv, shell_radii(basis), 3 * int(full.block_bytes[0]), 128, scratch_bytes=1)
        none = make_xc_cache(basis, grid, name, memory_budget=0, block_points=128)
        assert 0 < tiny.ncached < tiny.nblock and none.ncached == 0 and none.cached_bytes == 0
        assert len(list(tiny.chunks())) == 1 + tiny.nblock - tiny.ncached  # block by block past the budget
        for other in (
            xc_energy_potential(basis, grid, dm, name, cache=tiny),
            xc_energy_potential(basis, grid, dm, name, cache=none),
            xc_energy_potential(basis, grid, dm, name, block_points=128),
        ):
            assert abs(other[0] - ref[0]) < 1e-12
            np.testing.assert_allclose(other[1], ref[1], rtol=0, atol=1e-12)
            np.testing.assert_allclose(other[2], ref[2], rtol=0, atol=1e-12)


def test_points_no_function_reaches_contribute_nothing(water_rhf):
    """A point far from every shell forms a block with no functions (ρ = 0 there)."""
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    far = Grid(
        np.concatenate([grid.coords, [[90.0, 0.0, 0.0]]]),
        np.concatenate([grid.weights, [5.0]]),
        np.concatenate([grid.atoms, [0]]),
    )
    cache = make_xc_cache(basis, far, "b3lyp", block_points=1)
    assert any(i.size == 0 for i in cache.ao_index)
    ours = xc_energy_potential(basis, far, dm, "b3lyp", cache=cache)
    ref = xc_energy_potential(basis, grid, dm, "b3lyp")
    assert abs(ours[0] - ref[0]) < 1e-12 and abs(ours[2] - ref[2]) < 1e-12
    np.testing.assert_allclose(ours[1], ref[1], rtol=0, atol=1e-12)


def test_cache_of_another_grid_or_an_lda_cache_for_a_gga_is_refused(water_rhf):
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    with pytest.raises(InputError, match="another basis or grid"):
        xc_energy_potential(basis, make_grid(mol, level=2), dm, "pbe", cache=make_xc_cache(basis, grid, "pbe"))
    with pytest.raises(InputError, match="order 0, 1 needed"):
        xc_energy_potential(basis, grid, dm, "pbe", cache=make_xc_cache(basis, grid, "svwn"))


def test_default_budget_is_at_most_2_gib():
    assert 0 < default_budget() <= 2 * 1024**3
