"""Molecular integration grids: point for point against PySCF's grids of the same level,
the numba partition against a numpy transcription of the same formulas, exact integrals of
Gaussian densities, the electron count of a PySCF SCF density."""

import numpy as np
import pytest
from pyscf import dft

from hartree.dft.grids import (
    becke_partition,
    lebedev,
    lebedev_orders,
    make_grid,
    mura_knowles,
    size_adjustment,
    treutler_ahlrichs,
)
from hartree.dft.numint import ao_values
from hartree.errors import InputError
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water


def gaussian_density(grid, molecule):
    """A sum over atoms of normalised s Gaussians (Z electrons each, exponent 0.8 Z^0.5
    bohr^-2) at the grid's points: integrates to the number of electrons exactly."""
    rho = np.zeros(grid.npoints)
    for z, centre in zip(molecule.numbers, molecule.coords):
        a = 0.8 * np.sqrt(z)
        r2 = ((grid.coords - centre) ** 2).sum(axis=1)
        rho += z * (a / np.pi) ** 1.5 * np.exp(-a * r2)
    return rho


@pytest.mark.parametrize(
    "level, prune, partition", [(1, True, "becke"), (3, True, "becke"), (3, False, "becke"), (3, True, "stratmann")]
)
def test_grid_equals_pyscf_grid_of_the_same_level(level, prune, partition):
    mol = water()
    grid = make_grid(mol, level=level, prune=prune, partition=partition, weight_threshold=0.0)
    ref = dft.gen_grid.Grids(to_pyscf(mol, "sto-3g"))
    ref.level, ref.alignment, ref.prune = level, 0, (dft.gen_grid.nwchem_prune if prune else None)
    if partition == "stratmann":
        ref.becke_scheme = dft.gen_grid.stratmann
    ref.build(sort_grids=False)
    assert grid.npoints == ref.weights.size
    ours = np.lexsort(np.round(grid.coords, 9).T)
    theirs = np.lexsort(np.round(ref.coords, 9).T)
    np.testing.assert_allclose(grid.coords[ours], ref.coords[theirs], rtol=0, atol=1e-12)
    np.testing.assert_allclose(grid.weights[ours], ref.weights[theirs], rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(grid.atoms[ours], ref.atm_idx[theirs])


@pytest.mark.parametrize("rule", [treutler_ahlrichs, mura_knowles])
def test_radial_rules_integrate_gaussians(rule):
    r, w = rule(75, 8)
    assert np.all(np.diff(r) > 0) and np.all(w > 0)
    for a in (0.1, 1.0, 30.0):  # ∫ r² exp(-a r²) dr = sqrt(π) / (4 a^1.5)
        np.testing.assert_allclose(w @ np.exp(-a * r * r), np.sqrt(np.pi) / (4 * a**1.5), rtol=1e-8)


def test_lebedev_rules_are_exact_to_their_order():
    assert lebedev_orders()[:3] == (3, 5, 7) and lebedev_orders()[-1] == 131
    for order in (11, 29, 35, 65):
        x, w = lebedev(order)
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
        np.testing.assert_allclose(w.sum(), 4 * np.pi, rtol=1e-14)
        # ∫ x^2 y^2 z^4 dΩ = 4π 1·1·3 / (3·5·7·9) is of degree 8
        np.testing.assert_allclose(w @ (x[:, 0] ** 2 * x[:, 1] ** 2 * x[:, 2] ** 4), 4 * np.pi / 315, rtol=1e-12)
    with pytest.raises(InputError, match="no Lebedev rule of order 33"):
        lebedev(33)


@pytest.mark.parametrize("scheme", ["becke", "stratmann"])
def test_partition_is_a_partition_of_unity(scheme):
    mol = water()
    rng = np.random.default_rng(1)
    points = rng.normal(scale=2.0, size=(500, 3))
    adjust = size_adjustment(mol.numbers)
    np.testing.assert_allclose(adjust, -adjust.T, atol=0)
    total = sum(becke_partition(points, mol.coords, adjust, np.full(500, ia), scheme) for ia in range(mol.natm))
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=1e-14)


def numpy_partition(points, atom_coords, adjust, owner, scheme):
    """Slow reference of becke_partition (hartree's numpy version before the numba kernel):
    P_i = Π_{j≠i} s(ν_ij) over a (natm, natm, n) array, Becke 1988 eqs. 11, 13, 19-22, A2,
    or Stratmann et al. 1996 eq. 14 (a = 0.64)."""
    natm = atom_coords.shape[0]
    i, j = np.triu_indices(natm, k=1)
    inv_r = 1.0 / np.linalg.norm(atom_coords[i] - atom_coords[j], axis=-1)
    dist = np.linalg.norm(points[None, :, :] - atom_coords[:, None, :], axis=-1)  # (natm, n)
    mu = (dist[i] - dist[j]) * inv_r[:, None]
    nu = mu + adjust[i, j][:, None] * (1.0 - mu * mu)
    if scheme == "becke":
        g = nu
        for _ in range(3):
            g = g * (1.5 - 0.5 * g * g)
    else:
        t = np.clip(nu / 0.64, -1.0, 1.0)
        t2 = t * t
        g = t * (35.0 + t2 * (-35.0 + t2 * (21.0 - 5.0 * t2))) / 16.0
    s = np.empty((natm, natm, points.shape[0]))
    s[i, j] = 0.5 * (1.0 - g)
    s[j, i] = 0.5 * (1.0 + g)
    s[np.arange(natm), np.arange(natm)] = 1.0
    cell = s.prod(axis=1)
    return cell[owner, np.arange(points.shape[0])] / cell.sum(axis=0)


@pytest.mark.parametrize("scheme", ["becke", "stratmann"])
@pytest.mark.parametrize("size_adjust", ["treutler", "becke", None])
def test_partition_kernel_equals_numpy_reference(scheme, size_adjust):
    mol = Molecule.from_string("O 0 0 0; H 0.96 0 0; C -0.5 1.3 0.2; N 0.3 -1.1 1.4; Cl 2.1 1.0 -0.8; H -1.2 -0.4 -1.0")
    rng = np.random.default_rng(7)
    points = rng.normal(scale=2.5, size=(1000, 3))  # 1000: several blocks and a partial one
    owner = rng.integers(0, mol.natm, size=1000)
    adjust = size_adjustment(mol.numbers, size_adjust)
    ours = becke_partition(points, mol.coords, adjust, owner, scheme)
    ref = numpy_partition(points, mol.coords, adjust, owner, scheme)
    np.testing.assert_allclose(ours, ref, rtol=1e-14, atol=0)
    grid = make_grid(mol, level=1)  # read-only inputs (the Grid's) work too
    ours = becke_partition(grid.coords, mol.coords, adjust, grid.atoms, scheme)
    ref = numpy_partition(grid.coords, mol.coords, adjust, grid.atoms, scheme)
    np.testing.assert_allclose(ours, ref, rtol=1e-14, atol=0)


@pytest.mark.parametrize("radial", ["treutler", "mura-knowles"])
def test_gaussian_density_integrates_to_electron_count(radial):
    mol = water()
    errors = []
    for level in (1, 3, 9):
        grid = make_grid(mol, level=level, radial=radial)
        errors.append(abs(grid.weights @ gaussian_density(grid, mol) - 10.0))
    assert errors[1] < 1e-6
    assert errors[2] < 1e-9  # level 9 converges
    assert grid.weights.min() >= 1e-15


def test_scf_density_integrates_to_electron_count(water_rhf):
    mol, basis, _, dm = water_rhf
    for level, tol in ((3, 1e-6), (6, 1e-7)):
        grid = make_grid(mol, level=level)
        phi = ao_values(basis, grid.coords, deriv=0)[0]
        rho = np.einsum("pi,ij,pj->p", phi, dm, phi)
        assert abs(grid.weights @ rho - 10.0) < tol


def test_grid_arrays_are_read_only_and_bad_options_fail():
    grid = make_grid(water(), level=1)
    assert grid.coords.shape == (grid.npoints, 3) and grid.atoms.max() == 2
    with pytest.raises(ValueError):
        grid.weights[0] = 1.0
    for kwargs, message in (
        ({"level": 0}, "grid level must be an integer 1..9"),
        ({"level": 10}, "grid level"),
        ({"radial": "gauss"}, "unknown radial grid 'gauss'"),
        ({"partition": "lko"}, "unknown partition"),
        ({"size_adjust": "covalent"}, "unknown atomic size adjustment"),
    ):
        with pytest.raises(InputError, match=message):
            make_grid(water(), **kwargs)
