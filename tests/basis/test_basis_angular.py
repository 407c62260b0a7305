"""Cartesian components and the cartesian -> spherical matrices against PySCF."""

import numpy as np
import pytest

from hartree.basis import MAX_L, cart2sph, cart_components, ncart, nsph


@pytest.mark.parametrize("l", range(MAX_L + 1))
def test_cart2sph_equals_pyscf(l):
    import pyscf.gto

    ours_raw = cart2sph(l, normalized=None)
    assert ours_raw.shape == (ncart(l), nsph(l))
    np.testing.assert_allclose(ours_raw, pyscf.gto.cart2sph(l), rtol=0, atol=1e-13)
    np.testing.assert_allclose(cart2sph(l), pyscf.gto.cart2sph(l, normalized="sp"), rtol=0, atol=1e-13)


def test_cart2sph_matches_mol_cart2sph_coeff():
    import pyscf.gto
    from scipy.linalg import block_diag

    mol = pyscf.gto.M(atom="Ne 0 0 0", basis={"Ne": [[l, [1.0, 1.0]] for l in range(7)]}, verbose=0)
    ours = block_diag(*[cart2sph(l) for l in range(7)])
    np.testing.assert_allclose(ours, mol.cart2sph_coeff(), rtol=0, atol=1e-13)


def test_spherical_functions_orthonormal_on_sphere():
    # Real solid harmonics r^l Y_lm from cart2sph(l, None) are orthonormal over the unit
    # sphere; product quadrature: Gauss-Legendre in cos(theta) x trapezoid in phi (exact here).
    x, w = np.polynomial.legendre.leggauss(20)
    phi = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    ct, ph = np.meshgrid(x, phi, indexing="ij")
    st = np.sqrt(1 - ct**2)
    pts = np.stack([st * np.cos(ph), st * np.sin(ph), ct], axis=-1).reshape(-1, 3)
    wts = (w[:, None] * np.full(phi.size, 2 * np.pi / phi.size)).ravel()
    for l in range(MAX_L + 1):
        mono = np.stack([pts[:, 0] ** i * pts[:, 1] ** j * pts[:, 2] ** k for i, j, k in cart_components(l)], axis=1)
        y = mono @ cart2sph(l, normalized=None)
        np.testing.assert_allclose(y.T @ (wts[:, None] * y), np.eye(2 * l + 1), atol=1e-12)


def test_cart_components_order_equals_pyscf():
    import pyscf.gto

    mol = pyscf.gto.M(atom="Ne 0 0 0", basis={"Ne": [[l, [1.0, 1.0]] for l in range(7)]}, cart=True, verbose=0)
    labels = [lab.split()[-1][2:] for lab in mol.cart_labels()]  # e.g. "1s", "2px" -> "x"
    ours = []
    for l in range(7):
        comps = cart_components(l)
        assert len(comps) == ncart(l) == (l + 1) * (l + 2) // 2
        assert all(i + j + k == l for i, j, k in comps)
        ours += ["x" * i + "y" * j + "z" * k for i, j, k in comps]
    assert labels == ours


def test_bad_l():
    with pytest.raises(ValueError):
        cart2sph(7)
