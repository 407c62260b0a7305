"""Analytic gradients of Kohn-Sham energies (RKS, UKS) against PySCF's nuc_grad_method()
on the same grid and basis data (grid_response False: hartree's points and weights handed to
PySCF; True: PySCF's own grid of the same level, point for point hartree's), against central
differences of our own energies (with the grid response), and with the GPU engine's
integral terms in emulation."""

import dataclasses

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.dft import make_grid, parse_functional
from hartree.errors import InputError
from hartree.gradients import gradient, scf_gradient
from hartree.molecule import Molecule
from hartree.scf import run
from tests.helpers import to_pyscf

pytest.importorskip("pyscf")

#: a distorted water (no symmetry: every component of the gradient is non-zero)
WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"
#: H2O+ (doublet) without symmetry; not OH, whose UKS stalls (tests/dft/test_scf_dft.py)
CATION = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"
TIGHT = {"conv_tol": 1e-12, "conv_tol_grad": 1e-9}
LEVEL = 1


def _molecule(system):
    if system == "water":
        return Molecule.from_string(WATER)
    return Molecule.from_string(CATION, unit="bohr", charge=1)


def _pyscf_gradient(mol, basis, xc, grid_response):
    """PySCF's (energy, gradient (natm, 3)) of RKS/UKS with the same libxc functional: on
    hartree's grid (coords and weights handed over) or, with the grid response, on PySCF's
    own grid of LEVEL (get_vxc_full_response rebuilds it from the level)."""
    from pyscf import dft

    pmol = to_pyscf(mol, basis)
    mf = (dft.RKS if mol.multiplicity == 1 else dft.UKS)(pmol)
    mf.xc = parse_functional(xc).xc_code
    if grid_response:
        mf.grids.level = LEVEL
    else:
        grid = make_grid(mol, level=LEVEL)
        mf.grids = dft.gen_grid.Grids(pmol)
        mf.grids.coords, mf.grids.weights = np.array(grid.coords), np.array(grid.weights)
    mf.conv_tol, mf.conv_tol_grad = TIGHT["conv_tol"], TIGHT["conv_tol_grad"]
    energy = mf.kernel()
    assert mf.converged
    g = mf.nuc_grad_method()
    g.grid_response = grid_response
    return energy, g.kernel()


CASES = [
    ("water", "rks", "svwn", False),
    ("water", "rks", "pbe", False),
    ("water", "rks", "b3lyp", False),
    ("water", "rks", "tpss", False),
    ("cation", "uks", "svwn", False),
    ("cation", "uks", "pbe", False),
    ("cation", "uks", "b3lyp", False),
    ("cation", "uks", "tpss", False),
    ("water", "rks", "b3lyp", True),
    ("cation", "uks", "pbe", True),
]


@pytest.mark.parametrize(("system", "method", "xc", "grid_response"), CASES)
def test_gradient_equals_pyscf(system, method, xc, grid_response):
    """The whole gradient equals PySCF's to 1e-7 Eh/bohr (measured: 1e-11 to 5e-10); the
    parts add up.  Without the grid response the forces do not sum to zero, by the same
    amount as PySCF's (1e-4 Eh/bohr at this grid level); with it they do."""
    mol = _molecule(system)
    basis = load_basis(mol, "6-31g")
    res = run(mol, basis, method, xc=xc, grid_level=LEVEL, device="cpu", **TIGHT)
    g = scf_gradient(res, grid_response=grid_response)
    energy, ref = _pyscf_gradient(mol, basis, xc, grid_response)
    assert abs(res.energy - energy) < 1e-9
    np.testing.assert_allclose(g.gradient, ref, rtol=0, atol=1e-7)
    assert set(g.components) == {"nuclear_repulsion", "one_electron", "two_electron", "exchange_correlation"}
    np.testing.assert_allclose(sum(g.components.values()), g.gradient, rtol=0, atol=1e-14)
    assert g.method == method and g.energy == res.energy
    net, ref_net = g.gradient.sum(axis=0), ref.sum(axis=0)
    if grid_response:
        assert np.abs(net).max() < 1e-10
    else:
        assert np.abs(net).max() > 1e-5
        np.testing.assert_allclose(net, ref_net, rtol=0, atol=1e-8)


def test_grid_response_gradient_equals_finite_differences_of_our_energies():
    """Central differences (h = 1e-4 bohr) of our UKS/PBE energies at grid level 1, on four
    coordinates of three atoms, equal the gradient with the grid response to 1e-6 Eh/bohr
    (measured on every coordinate of H2O+/6-31G: 2e-9, and of RKS/B3LYP water likewise); the
    gradient without it is off by about 1e-4 here (2e-6 to 9e-6 at grid level 3)."""
    mol = _molecule("cation")
    opts = {"xc": "pbe", "grid_level": LEVEL, "device": "cpu", **TIGHT}
    full = gradient(mol, "sto-3g", "uks", grid_response=True, **opts).gradient
    fixed = gradient(mol, "sto-3g", "uks", **opts).gradient
    h = 1e-4
    picked = [(0, 0), (0, 2), (1, 1), (2, 2)]
    fd = np.zeros(len(picked))
    for n, (a, x) in enumerate(picked):
        e = []
        for step in (h, -h):
            coords = mol.coords.copy()
            coords[a, x] += step
            e.append(run(mol.replace(coords=coords), "sto-3g", "uks", **opts).energy)
        fd[n] = (e[0] - e[1]) / (2 * h)
    rows, cols = np.array(picked).T
    np.testing.assert_allclose(full[rows, cols], fd, rtol=0, atol=1e-6)
    assert np.abs(fixed[rows, cols] - fd).max() > 1e-5


def test_the_gpu_engine_with_the_xc_term_on_the_host():
    """A Kohn-Sham gradient with GPUEngine's integral terms (serial CPU emulation of its
    kernels) and the XC term on the host equals the CPU engine's, for a pure functional
    (exchange factor 0) and a hybrid."""
    from hartree.device import emulator
    from hartree.gpu.engine import GPUEngine

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = _molecule("water")
    basis = load_basis(mol, "sto-3g")
    for xc in ("pbe", "b3lyp"):
        res = run(mol, basis, "rks", xc=xc, grid_level=LEVEL, device="cpu", **TIGHT)
        ref = scf_gradient(res).gradient
        gpu = GPUEngine(mol, basis, backend=emulator.EmulatedBackend())
        np.testing.assert_allclose(scf_gradient(res, gpu).gradient, ref, rtol=0, atol=1e-10)


def test_refusals():
    """grid_response is for Kohn-Sham only (before the SCF for gradient()); a Kohn-Sham result
    that does not record its grid is refused rather than differentiated on a guessed grid."""
    mol = Molecule.from_string("H 0 0 0; H 0 0 1.4", unit="bohr")
    with pytest.raises(InputError, match="grid_response is for Kohn-Sham"):
        gradient(mol, "sto-3g", "rhf", grid_response=True, device="cpu")
    res = run(mol, "sto-3g", "rhf", device="cpu")
    with pytest.raises(InputError, match="grid_response is for Kohn-Sham"):
        scf_gradient(res, grid_response=True)
    res = run(mol, "sto-3g", "rks", xc="svwn", grid_level=LEVEL, device="cpu")
    with pytest.raises(InputError, match="does not record its grid level"):
        scf_gradient(dataclasses.replace(res, dft=None))
