"""Analytic gradients of density-fitted range-separated hybrids (hartree.df.gradient eqs. (4)-(5);
issue 19): the long-range exchange fitted with the erf integrals and the truncated erf metric,
against PySCF's density-fitted gradients (``dft.RKS(mol, xc).density_fit(auxbasis=...)
.nuc_grad_method()``: its ``range_coulomb`` fit, auxiliary-basis terms included) with the same
orbital and auxiliary basis data and hartree's grid; against central differences of hartree's
own fitted energies (grid response on: the grid moves with the atoms in the differences); and
the term of eq. (5) that the gradient leaves out, computed here the slow way."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.df.auxiliary import load_jk_aux
from hartree.df.engine import FittedEngine
from hartree.df.gradient import fitted_two_electron_gradient
from hartree.df.range_separated import LINEAR_DEPENDENCE, truncated_metric_factor
from hartree.gradients import scf_gradient
from hartree.integrals.engine import CPUEngine
from hartree.integrals.three_center import int2c2e, int3c2e
from hartree.integrals.three_center_deriv import grad2c
from hartree.scf import run
from tests.helpers import pyscf_density_fitted, water, water_cation_c1

pytest.importorskip("pyscf")

#: max |hartree - PySCF| per component, Eh/bohr (issue 19's acceptance for DFT)
TOL_PYSCF = 2e-5
#: max |analytic - central difference| per component, Eh/bohr (h = 1e-3 bohr)
TOL_FD = 1e-5
#: grid level of every Kohn-Sham SCF here (one grid for both codes)
LEVEL = 1
#: tight SCFs (the gradient's error is first order in the density's), from the core guess
SCF = {"guess": "core", "conv_tol": 1e-12, "conv_tol_grad": 1e-9, "device": "cpu", "grid_level": LEVEL}


def _system(name):
    return water() if name == "water" else water_cation_c1()


@pytest.mark.parametrize(
    ("system", "basis_name", "method", "xc"),
    [
        ("water", "def2-svp", "rks", "wb97x"),
        ("water", "6-31g", "rks", "cam-b3lyp"),
        ("cation", "sto-3g", "uks", "cam-b3lyp"),
    ],
)
def test_gradient_equals_pyscf_density_fit(system, basis_name, method, xc):
    """hartree's fitted gradient equals PySCF's (no grid response on either side) to 2e-5
    Eh/bohr; measured 4e-10 (wB97X, def2-SVP), 5e-10 (CAM-B3LYP), 8e-10 (UKS CAM-B3LYP): the
    SCFs' residue, the two codes leaving out the same term of eq. (5)."""
    mol = _system(system)
    basis = load_basis(mol, basis_name)
    aux = load_jk_aux(mol, basis)
    res = run(mol, basis, method, xc=xc, density_fitting=True, **SCF)
    mf = pyscf_density_fitted(mol, basis, aux, method, xc, level=LEVEL)
    mf.conv_tol_grad = 1e-9  # as hartree's (PySCF's default, 1e-6, leaves 4e-8 Eh/bohr for UKS)
    dm0 = np.asarray(res.density)
    mf.kernel(dm0=dm0[0] if method == "rks" else dm0)  # from hartree's density: a few cycles
    assert mf.converged and abs(res.energy - mf.e_tot) < 1e-8
    grad = mf.nuc_grad_method()
    assert grad.auxbasis_response and not grad.grid_response
    ref = grad.kernel()
    got = scf_gradient(res).gradient
    assert np.abs(ref).max() > 1e-3  # a gradient, not zeros
    np.testing.assert_allclose(got, ref, rtol=0, atol=TOL_PYSCF)
    # the long-range term is there: the fitted 1/r12 part alone is not the gradient
    assert res.density_fitting["range_separated"] and res.density_fitting["exact_k"] is False


def test_gradient_is_the_derivative_of_the_fitted_energy():
    """RKS wB97X water / def2-SVP: central differences (h = 1e-3 bohr) of hartree's fitted
    energies in two coordinates equal the analytic gradient with the grid response to 1e-5
    Eh/bohr (measured 6e-8 and 1.4e-7: the h^2 error; the rank of the truncated erf metric is
    the same at every displacement)."""
    mol, basis_name, method, xc = water(), "def2-svp", "rks", "wb97x"
    res = run(mol, basis_name, method, xc=xc, density_fitting=True, **SCF)
    got = scf_gradient(res, grid_response=True).gradient
    rank = res.density_fitting["range_separated"][0]["metric_rank"]
    h = 1e-3
    for atom, xyz in ((0, 2), (1, 1)):
        energies = []
        for sign in (1, -1):
            coords = np.array(mol.coords, dtype=float)
            coords[atom, xyz] += sign * h
            moved = run(mol.replace(coords=coords), basis_name, method, xc=xc, density_fitting=True, **SCF)
            assert moved.density_fitting["range_separated"][0]["metric_rank"] == rank
            energies.append(moved.energy)
        assert abs(got[atom, xyz]) > 1e-3
        assert abs((energies[0] - energies[1]) / (2 * h) - got[atom, xyz]) < TOL_FD


def _left_out_term(v, x, k):
    """Gamma (naux, naux) of eq. (5)'s second term: sum_PQ Gamma_PQ dV_PQ is the part of
    d tr(W B) that couples the kept eigenvectors of v (eigenvalues above LINEAR_DEPENDENCE) to
    the dropped ones, for B = -k/2 x^T x (x (npair, naux): the fitted vectors, eq. (4) with
    D = C C^T); element by element from the eigenpairs, B in the eigenbasis as (x u)^T (x u)
    (forming B first and then U^T B U loses the digits along the near-null eigenvectors)."""
    w, u = np.linalg.eigh(v)
    keep = w > LINEAR_DEPENDENCE
    xu = x @ u
    bt = -0.5 * k * xu.T @ xu
    g = np.zeros_like(bt)
    for i in np.flatnonzero(keep):
        for j in np.flatnonzero(~keep):
            g[i, j] = g[j, i] = bt[i, j] / (w[i] * (w[i] - w[j]))
    return u @ g @ u.T


def test_left_out_term_of_the_truncated_metric_is_small():
    """The second term of eq. (5) (the kept eigenvectors of the truncated erf metric turning
    towards the dropped ones), computed here from the eigenpairs at the SCF density, moves the
    long-range exchange gradient by less than 1e-7 Eh/bohr for RKS wB97X water / STO-3G
    (measured 1e-9; 34 of the 113 eigenvectors of the erf(0.3 r12) metric dropped, some within
    a factor 2 of the threshold); and the gradient without it is the derivative of the fitted
    exchange energy at that density: central differences (h = 1e-4 bohr) to 1e-8 Eh/bohr
    (measured 2e-10)."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    res = run(mol, basis, "rks", xc="wb97x", density_fitting=True, **SCF)
    d = np.asarray(res.density)[0]
    omega, k = 0.3, 0.5 * (1.0 - 0.157706)  # wB97X's long-range exact exchange, RKS (k = c_w / 2)
    wd, c = np.linalg.eigh(d)
    c = c[:, wd > 1e-10] * np.sqrt(wd[wd > 1e-10])  # D = C C^T

    def fitted(b, a, v):
        """x (npair, naux) and v; the long-range fitted exchange energy of eq. (4), Eh."""
        x = np.einsum("ai,bj,abP->ijP", c, c, int3c2e(b, a, omega=omega)).reshape(-1, a.nao)
        m, _ = truncated_metric_factor(np, v)
        return x, -0.5 * k * np.sum((x @ m.T) ** 2)

    v = int2c2e(aux, omega)
    x, _ = fitted(basis, aux, v)
    rank = int((np.linalg.eigvalsh(v) > LINEAR_DEPENDENCE).sum())
    assert 0 < rank < 0.9 * aux.nao
    moved = grad2c(aux, _left_out_term(v, x, k), natm=mol.natm, omega=omega)
    assert np.abs(moved).max() < 1e-7
    ours = fitted_two_electron_gradient(CPUEngine(mol, basis), aux, None, d[None], k, omega=omega)
    h = 1e-4
    for atom, xyz in ((0, 2), (1, 1)):
        energies = []
        for sign in (1, -1):
            coords = np.array(mol.coords, dtype=float)
            coords[atom, xyz] += sign * h
            shifted = mol.replace(coords=coords)
            b = load_basis(shifted, "sto-3g")
            a = load_jk_aux(shifted, b)
            energies.append(fitted(b, a, int2c2e(a, omega))[1])
        assert abs(ours[atom, xyz]) > 1e-2
        assert abs((energies[0] - energies[1]) / (2 * h) - ours[atom, xyz]) < 1e-8


def test_fitted_engine_serves_the_attenuated_gradient():
    """FittedEngine.two_electron_gradient with omega != 0 and a fitted K (the contract's member,
    no longer refused) is the gradient of that operator's fit, J included when DJ is given:
    equal to fitted_two_electron_gradient with omega; with exact_k the wrapped engine's."""
    mol = water_cation_c1()
    basis = load_basis(mol, "sto-3g")
    inner = CPUEngine(mol, basis)
    aux = load_jk_aux(mol, basis)
    rng = np.random.default_rng(7)
    dk = rng.standard_normal((2, basis.nao, basis.nao)) * 0.1
    dk = dk + dk.transpose(0, 2, 1)
    dj = dk[0] + dk[1]
    ours = FittedEngine(inner, aux).two_electron_gradient(dj, dk, 1.0, omega=0.33)
    expected = fitted_two_electron_gradient(inner, aux, dj, dk, 1.0, omega=0.33)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)
    assert np.abs(ours).max() > 1e-3
    exact = FittedEngine(inner, aux, exact_k=True).two_electron_gradient(np.zeros_like(dj), dk, 1.0, omega=0.33)
    np.testing.assert_allclose(exact, inner.two_electron_gradient(np.zeros_like(dj), dk, 1.0, 0.33), atol=1e-12)
