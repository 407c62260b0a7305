"""The XC energy's nuclear gradient of a fixed density (hartree.dft.xc_gradient) against
PySCF's (pyscf.grad.rks/uks get_vxc on hartree's grid; get_vxc_full_response on PySCF's own
grid of the same level for the grid response), and the Becke/Stratmann weight derivatives
(hartree.dft.grid_response) against central differences of make_grid's weights."""

import numpy as np
import pytest
from pyscf import dft
from pyscf.grad import rks as rks_grad
from pyscf.grad import uks as uks_grad

from hartree.dft import make_grid, parse_functional
from hartree.dft.grid_response import partition_weight_gradient
from hartree.dft.grids import size_adjustment
from hartree.dft.xc_gradient import xc_gradient

#: LDA, GGA, a hybrid's semilocal part, meta-GGAs
FUNCTIONALS = ["svwn", "pbe", "b3lyp", "tpss", "r2scan"]
#: |ours - PySCF| allowed, Eh/bohr (measured: below 2e-14)
TOL = 1e-10


def _pyscf_xc_gradient(pmol, grids, dm, name, response):
    """PySCF's dE_xc/dR (natm, 3) of the fixed density dm: the AO-derivative matrices of
    get_vxc (or get_vxc_full_response) contracted with dm over each atom's AOs, times 2
    (as pyscf.grad.rhf/uhf.grad_elec do), plus the grid response when asked."""
    ni, xc = dft.numint.NumInt(), parse_functional(name).xc_code
    unrestricted = dm.ndim == 3
    module = uks_grad if unrestricted else rks_grad
    if response:
        exc, vxc = module.get_vxc_full_response(ni, pmol, grids, xc, dm)
    else:
        exc, vxc = module.get_vxc(ni, pmol, grids, xc, dm)
    de = np.zeros((pmol.natm, 3)) if exc is None else np.array(exc)
    for k, (_, _, p0, p1) in enumerate(pmol.aoslice_by_atom()):
        if unrestricted:
            de[k] += 2.0 * np.einsum("sxij,sij->x", vxc[:, :, p0:p1], dm[:, p0:p1])
        else:
            de[k] += 2.0 * np.einsum("xij,ij->x", vxc[:, p0:p1], dm[p0:p1])
    return de


def _hartree_grids(pmol, grid):
    grids = dft.gen_grid.Grids(pmol)
    grids.coords = np.array(grid.coords)
    grids.weights = np.array(grid.weights)
    return grids


@pytest.mark.parametrize("name", FUNCTIONALS)
@pytest.mark.parametrize("spin", ["restricted", "unrestricted"])
def test_fixed_grid_equals_pyscf(water_rhf, water_cation_uhf, name, spin):
    """grid_response=False: PySCF's get_vxc on the same points and weights; the sum over
    atoms is PySCF's too (not zero: the grid does not follow the atoms)."""
    mol, basis, pmol, dm = water_rhf if spin == "restricted" else water_cation_uhf
    grid = make_grid(mol, level=1)
    ours = xc_gradient(mol, basis, grid, dm, name)
    ref = _pyscf_xc_gradient(pmol, _hartree_grids(pmol, grid), dm, name, response=False)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=TOL)
    assert np.abs(ref.sum(axis=0)).max() > 1e-6  # what grid_response=True fixes


@pytest.mark.parametrize("name", ["svwn", "pbe", "tpss"])
@pytest.mark.parametrize("spin", ["restricted", "unrestricted"])
def test_grid_response_equals_pyscf(water_rhf, water_cation_uhf, name, spin):
    """grid_response=True: PySCF's get_vxc_full_response, which rebuilds PySCF's grid of the
    level (the same points as hartree's; PySCF keeps the few with weights below 1e-15 that
    hartree drops); the forces then sum to zero."""
    mol, basis, pmol, dm = water_rhf if spin == "restricted" else water_cation_uhf
    ours = xc_gradient(mol, basis, make_grid(mol, level=1), dm, name, grid_response=True, block_points=500)
    grids = dft.gen_grid.Grids(pmol)
    grids.level = 1
    ref = _pyscf_xc_gradient(pmol, grids.build(), dm, name, response=True)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=TOL)
    assert np.abs(ours.sum(axis=0)).max() < 1e-12


def test_blocks_do_not_change_the_result(water_cation_uhf):
    """Small blocks (shells screened per block, blocks cut at atoms' grids) give the same
    gradient as the default blocks."""
    mol, basis, _, dm = water_cation_uhf
    grid = make_grid(mol, level=1)
    for response in (False, True):
        ref = xc_gradient(mol, basis, grid, dm, "pbe", response)
        small = xc_gradient(mol, basis, grid, dm, "pbe", response, block_points=97)
        np.testing.assert_allclose(small, ref, rtol=0, atol=1e-13)


@pytest.mark.parametrize("scheme", ["becke", "stratmann"])
def test_weight_derivatives_equal_finite_differences(water_cation_uhf, scheme):
    """∂w/∂R of every point (points moving with their atom) against central differences
    (h = 1e-5 bohr) of make_grid's weights with every point kept, to 1e-7 of the largest."""
    mol = water_cation_uhf[0]
    kw = {"level": 1, "partition": scheme, "weight_threshold": 0.0}
    grid = make_grid(mol, **kw)
    adjust = size_adjustment(mol.numbers)
    dw = partition_weight_gradient(grid.coords, grid.weights, grid.atoms, mol.coords, adjust, scheme)
    h = 1e-5
    for atom in range(mol.natm):
        for x in range(3):
            coords = np.array(mol.coords)
            coords[atom, x] += h
            plus = make_grid(mol.replace(coords=coords), **kw).weights
            coords[atom, x] -= 2 * h
            minus = make_grid(mol.replace(coords=coords), **kw).weights
            fd = (plus - minus) / (2 * h)
            np.testing.assert_allclose(dw[atom, x], fd, rtol=0, atol=1e-7 * np.abs(fd).max())
    np.testing.assert_allclose(dw.sum(axis=0), 0.0, rtol=0, atol=1e-12 * np.abs(dw).max())
