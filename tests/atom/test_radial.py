"""Closed-form radial integrals against direct numerical quadrature."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from hartree.atom import radial
from hartree.atom.nucleus import make_nucleus, potential_moment


def _rk_quadrature(n1, p1, n2, p2, k):
    def f(r2, r1):
        lo, hi = min(r1, r2), max(r1, r2)
        return r1**n1 * math.exp(-p1 * r1**2) * r2**n2 * math.exp(-p2 * r2**2) * lo**k / hi ** (k + 1)

    top1, top2 = 12.0 / math.sqrt(p1), 12.0 / math.sqrt(p2)
    top = max(top1, top2)
    a = integrate.dblquad(f, 0, top, 0, lambda r1: r1, epsabs=1e-14, epsrel=1e-12)[0]
    b = integrate.dblquad(f, 0, top, lambda r1: r1, top, epsabs=1e-14, epsrel=1e-12)[0]
    return a + b


@pytest.mark.parametrize(
    "n1,p1,n2,p2,k",
    [
        (2, 1.3, 2, 0.7, 0),
        (4, 2.0, 6, 0.3, 2),
        (3, 5.0, 5, 0.2, 1),
        (6, 40.0, 4, 0.05, 2),
        (8, 0.9, 8, 1.1, 4),
        (2, 900.0, 2, 0.4, 0),
    ],
)
def test_rk_prim_matches_quadrature(n1, p1, n2, p2, k):
    ref = _rk_quadrature(n1, p1, n2, p2, k)
    assert radial.rk_prim(n1, p1, n2, p2, k) == pytest.approx(ref, rel=1e-10)


def test_rk_prim_symmetry_and_large_ratio():
    # R^k is symmetric in its two densities; at exponent ratio 1e9 the far region factorizes:
    # R -> ∫ r^{n1+k} e^{-p1 r²} · ∫ r^{n2-k-1} e^{-p2 r²} (first density inside the second).
    assert radial.rk_prim(4, 3.0, 6, 0.2, 2) == pytest.approx(radial.rk_prim(6, 0.2, 4, 3.0, 2), rel=1e-15)
    p1, p2 = 1e8, 0.1
    limit = radial.gaussian_moment(6, p1) * radial.gaussian_moment(3, p2)
    assert radial.rk_prim(4, p1, 6, p2, 2) == pytest.approx(limit, rel=1e-6)


@pytest.mark.parametrize("model", ["point", "gaussian", "sphere"])
@pytest.mark.parametrize("n", [2, 4, 6])
def test_potential_moments_match_quadrature(model, n):
    nuc = make_nucleus(80, model)
    if model == "gaussian":

        def pot(r):
            return -80 * special.erf(math.sqrt(nuc.parameter) * r) / r
    elif model == "sphere":
        big_r = nuc.parameter

        def pot(r):
            return -80 / r if r > big_r else -80 * (3 - r * r / big_r**2) / (2 * big_r)
    else:

        def pot(r):
            return -80 / r

    for p in (0.3, 2.0e3, 5.0e8):  # up to exponents that see the nuclear size
        scale = 1 / math.sqrt(p)
        pts = [1e-6, 1e-5, 1e-4] if model != "point" else None
        if model == "sphere":
            pts.append(nuc.parameter)  # the kink of V at r = R
        ref = integrate.quad(
            lambda r: r**n * pot(r) * math.exp(-p * r * r), 0, 40 * scale, points=pts, limit=400, epsabs=0, epsrel=1e-12
        )[0]
        assert potential_moment(nuc, n, np.array([p]))[0] == pytest.approx(ref, rel=1e-9)


def test_nuclear_sizes_visscher_dyall():
    # Visscher-Dyall r_rms = (0.836 A^(1/3) + 0.570) fm; Hg-202: eta = 3/(2 r²)
    nuc = make_nucleus(80, "gaussian")
    r = (0.836 * 202 ** (1 / 3) + 0.570) / 52917.7249
    assert nuc.parameter == pytest.approx(1.5 / r**2, rel=1e-14)
    sphere = make_nucleus(80, "sphere")
    assert sphere.parameter == pytest.approx(math.sqrt(5 / 3) * r, rel=1e-14)


def test_mass_numbers_match_pyscf():
    from pyscf.data import elements

    from hartree.atom.nucleus import MASS_NUMBERS

    assert list(MASS_NUMBERS[1:87]) == [int(x) for x in elements.ISOTOPE_MAIN[1:87]]


@pytest.mark.parametrize("l", [0, 1, 2, 3])
def test_kinetic_and_kinetic_balance(l):
    # T from the kinetic-balance functions equals the textbook radial kinetic integral
    zeta = np.array([0.3, 1.7, 11.0])
    t = radial.kinetic(l, zeta)
    big = radial.large_set(l, zeta)
    for i, zi in enumerate(zeta):
        for j, zj in enumerate(zeta):
            ni, nj = big.coef[i, 0], big.coef[j, 0]

            def f(r, z=zi):
                return r ** (l + 1) * math.exp(-z * r * r)

            def df(r, z=zi):
                return ((l + 1) * r**l - 2 * z * r ** (l + 2)) * math.exp(-z * r * r)

            def g(r, z=zj):
                return r ** (l + 1) * math.exp(-z * r * r)

            def dg(r, z=zj):
                return ((l + 1) * r**l - 2 * z * r ** (l + 2)) * math.exp(-z * r * r)

            ref = (
                0.5
                * integrate.quad(
                    lambda r: df(r) * dg(r) + l * (l + 1) * f(r) * g(r) / r**2, 0, 30, epsabs=0, epsrel=1e-12
                )[0]
            )
            assert t[i, j] == pytest.approx(ni * nj * ref, rel=1e-11)
    # both kappa of l give the same small-component metric 2T
    if l > 0:
        for kappa in (l, -(l + 1)):
            q = radial.small_set(l, kappa, zeta, 1.0)
            np.testing.assert_allclose(radial.overlap(q, q), 2 * t, rtol=1e-12)
