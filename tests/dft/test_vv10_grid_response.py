"""The grid response of the VV10 gradient (hartree.dft.vv10_response, issue 18): the kernel's
explicit point derivative against central differences of Φ, the whole dE_nlc/dR of a fixed
density against central differences of E_nlc on its moving grid and against PySCF's
get_nlc_vxc_full_response, and the Kohn-Sham gradient with grid_response=True against central
differences of hartree's own SCF energies (RKS b97m-v) and PySCF's full-response gradient
(UKS vv10).  STO-3G, grid level 1 (semilocal and VV10 grids)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.dft import make_grid, parse_functional
from hartree.dft.vv10 import NonLocal, _local, nlc_gradient
from hartree.dft.vv10_response import motion_sums
from hartree.dft.xc_kernels import CPUKernels
from hartree.errors import InputError
from hartree.gradients import scf_gradient
from hartree.molecule import Molecule
from hartree.scf import run
from tests.helpers import to_pyscf

pytest.importorskip("pyscf")

#: a distorted water (Angstrom; every component of the gradient non-zero)
WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"
#: H2O+ (doublet) without symmetry (bohr; tests/dft/test_scf_dft.py says why not OH)
CATION = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"
LEVEL = 1
B97M_V = (6.0, 0.01)


def _phi(ri, rj, w0i, ki, w0j, kj):
    """The VV10 kernel Φ (Vydrov and Van Voorhis 2010) of points ri (3,) and rj (m, 3)."""
    r2 = ((ri[None, :] - rj) ** 2).sum(axis=1)
    g, gp = w0i * r2 + ki, w0j * r2 + kj
    return -1.5 / (g * gp * (g + gp))


def test_motion_sums_equal_central_differences_of_the_kernel():
    """Σ_j a_j ∂Φ_ij/∂r_i of the numba kernel equals central differences (h = 1e-5 bohr) of
    Σ_j a_j Φ_ij in r_i to 1e-7 relative (measured 5e-11); the self pair adds nothing."""
    rng = np.random.default_rng(7)
    n = 40
    xyz = rng.normal(size=(n, 3)) * 1.5
    rho = np.exp(-rng.uniform(0.0, 6.0, n))
    sigma = rho**2 * rng.uniform(0.0, 4.0, n)
    w0, kappa, _, _ = _local(rho, sigma, *B97M_V, np)
    a = rho * rng.uniform(0.01, 0.5, n)
    outer = np.concatenate([xyz.T, w0[None], kappa[None]])
    got = motion_sums(outer, np.concatenate([outer, a[None]]))
    h = 1e-5
    ref = np.zeros((3, n))
    for i in range(n):
        for x in range(3):
            e = []
            for step in (h, -h):
                ri = xyz[i].copy()
                ri[x] += step
                e.append(a @ _phi(ri, xyz, w0[i], kappa[i], w0, kappa))
            ref[x, i] = (e[0] - e[1]) / (2 * h)
    assert np.abs(got - ref).max() < 1e-7 * np.abs(ref).max(), np.abs(got - ref).max() / np.abs(ref).max()


def test_nlc_gradient_of_a_fixed_density_with_its_moving_grid():
    """dE_nlc/dR of a fixed density matrix with grid_response=True equals central differences
    (h = 1e-4 bohr) of E_nlc with the basis and the VV10 grid rebuilt at each geometry to 1e-9
    Eh/bohr (measured 2.7e-12 on all nine coordinates), where the fixed-grid gradient is off by
    1.4e-5; its sum over atoms is zero (1e-12; measured 3e-18), and it equals PySCF's
    get_nlc_vxc_full_response (on PySCF's grid of the same level, which keeps 36 points of
    weight below hartree's threshold) to 2e-5 (measured 1.4e-9).  With kernels it is refused
    (the grid response runs on the host)."""
    from pyscf import dft
    from pyscf.grad.rks import get_nlc_vxc_full_response

    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "sto-3g")
    c = np.random.default_rng(1).normal(size=(basis.nao, 5)) * 0.4
    dm = c @ c.T
    grid = make_grid(mol, level=LEVEL)
    full = nlc_gradient(mol, basis, grid, dm, B97M_V, grid_response=True)
    fixed = nlc_gradient(mol, basis, grid, dm, B97M_V)
    h = 1e-4
    picked = [(0, 2), (0, 0), (1, 1), (2, 0)]
    fd = np.zeros(len(picked))
    for n, (atom, x) in enumerate(picked):
        e = []
        for step in (h, -h):
            coords = mol.coords.copy()
            coords[atom, x] += step
            moved = mol.replace(coords=coords)
            e.append(NonLocal(load_basis(moved, "sto-3g"), make_grid(moved, level=LEVEL), B97M_V)(dm)[0])
        fd[n] = (e[0] - e[1]) / (2 * h)
    rows, cols = np.array(picked).T
    np.testing.assert_allclose(full[rows, cols], fd, rtol=0, atol=1e-9)
    assert np.abs(fixed[rows, cols] - fd).max() > 1e-6
    assert np.abs(full.sum(axis=0)).max() < 1e-12
    pmol = to_pyscf(mol, basis)
    grids = dft.gen_grid.Grids(pmol)
    grids.level = LEVEL
    grids.build()
    exc, vmat = get_nlc_vxc_full_response(dft.numint.NumInt(), pmol, grids, parse_functional("b97m-v").xc_code, dm)
    ao_atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    ref = exc + np.array([2.0 * np.einsum("xij,ij->x", vmat[:, ao_atom == a], dm[ao_atom == a]) for a in range(3)])
    np.testing.assert_allclose(full, ref, rtol=0, atol=2e-5)
    with pytest.raises(InputError, match="grid response runs on the host only"):
        nlc_gradient(mol, basis, grid, dm, B97M_V, kernels=CPUKernels(), grid_response=True)


def test_rks_gradient_with_the_grid_response_equals_finite_differences():
    """Issue 18's acceptance: the RKS b97m-v gradient with grid_response=True (semilocal and
    VV10 grids both moving) equals central differences (h = 1e-3 bohr) of hartree's SCF
    energies (conv_tol 1e-11) on four coordinates of three atoms to 1e-5 Eh/bohr (measured
    1.6e-7 on all nine).  Without the VV10 term's response (the XC grid's response kept) the
    gradient is off by 1.2e-5 on O z, and with both grids fixed by 2e-3; the forces sum to
    zero (1e-10; measured 4e-14) and so does the vv10 component alone (1e-12)."""
    mol = Molecule.from_string(WATER)
    opts = {"xc": "b97m-v", "grid_level": LEVEL, "device": "cpu", "conv_tol": 1e-11, "conv_tol_grad": 1e-8}
    res = run(mol, "sto-3g", "rks", **opts)
    full = scf_gradient(res, grid_response=True)
    fixed = scf_gradient(res)
    vv10_response = full.components["vv10"] - fixed.components["vv10"]
    guess = {"guess_orbitals": (res.mo_coeff, res.mo_energy)}
    h = 1e-3
    picked = [(0, 2), (0, 0), (1, 0), (2, 1)]
    fd = np.zeros(len(picked))
    for n, (atom, x) in enumerate(picked):
        e = []
        for step in (h, -h):
            coords = mol.coords.copy()
            coords[atom, x] += step
            e.append(run(mol.replace(coords=coords), "sto-3g", "rks", **opts, **guess).energy)
        fd[n] = (e[0] - e[1]) / (2 * h)
    rows, cols = np.array(picked).T
    diff = full.gradient[rows, cols] - fd
    assert np.abs(diff).max() < 1e-5, diff
    assert np.abs((full.gradient - vv10_response)[rows, cols] - fd).max() > 5e-6
    assert np.abs(fixed.gradient[rows, cols] - fd).max() > 1e-4
    assert np.abs(full.gradient.sum(axis=0)).max() < 1e-10
    assert np.abs(full.components["vv10"].sum(axis=0)).max() < 1e-12
    assert np.abs(vv10_response).max() > 5e-6


def test_uks_gradient_with_the_grid_response_equals_pyscf():
    """UKS H2O+ with libxc's vv10: the gradient with grid_response=True equals PySCF's
    nuc_grad_method() with grid_response on PySCF's own grids of the same level (both grids
    level 1), handed hartree's converged orbitals, to 2e-5 Eh/bohr (measured 3.9e-10, and the same with
    PySCF's own SCF); the forces sum to zero (1e-10; measured 1.4e-14)."""
    from pyscf import dft

    mol = Molecule.from_string(CATION, unit="bohr", charge=1)
    basis = load_basis(mol, "sto-3g")
    res = run(mol, basis, "uks", xc="vv10", grid_level=LEVEL, device="cpu", conv_tol=1e-12, conv_tol_grad=1e-9)
    g = scf_gradient(res, grid_response=True)
    mf = dft.UKS(to_pyscf(mol, basis))
    mf.xc = parse_functional("vv10").xc_code
    mf.grids.level = mf.nlcgrids.level = LEVEL
    mf.mo_coeff, mf.mo_energy, mf.mo_occ = (np.asarray(x) for x in (res.mo_coeff, res.mo_energy, res.mo_occ))
    mf.converged = True
    grad = mf.nuc_grad_method()
    grad.grid_response = True
    ref = grad.kernel()
    np.testing.assert_allclose(g.gradient, ref, rtol=0, atol=2e-5)
    assert np.abs(g.gradient.sum(axis=0)).max() < 1e-10
    assert np.abs(g.components["vv10"]).max() > 1e-5
