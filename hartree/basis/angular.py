"""Angular parts of Gaussian shells: cartesian components and the
cartesian -> real spherical transformation (PySCF/libcint conventions).

A cartesian function of a shell with angular momentum l is
x^i y^j z^k R(r) f(l) with i + j + k = l, where f(0) = 1/sqrt(4 pi),
f(1) = sqrt(3/(4 pi)) and f(l >= 2) = 1 (libcint's "sp-normalized" convention).
The components are ordered i descending, then j descending:
l=2 -> xx, xy, xz, yy, yz, zz.

Real spherical functions are r^l Y_lm(theta, phi) R(r), with Y_lm the real
spherical harmonics normalised to 1 on the unit sphere, ordered m = -l..l
(except p, which is x, y, z, the order PySCF uses).
"""

from functools import cache
from math import comb, factorial, pi, sqrt

import numpy as np

#: Largest angular momentum the data model supports (i functions).
MAX_L = 6

_L_LETTERS = "spdfghi"


def l_letter(l):
    """Spectroscopic letter of angular momentum l (0 -> 's', ..., 6 -> 'i')."""
    return _L_LETTERS[l]


def ncart(l):
    """Number of cartesian components of a shell: (l+1)(l+2)/2."""
    return (l + 1) * (l + 2) // 2


def nsph(l):
    """Number of real spherical components of a shell: 2l+1."""
    return 2 * l + 1


def cart_components(l):
    """Exponent triples (i, j, k) of x^i y^j z^k for angular momentum l, in PySCF order."""
    return [(i, j, l - i - j) for i in range(l, -1, -1) for j in range(l - i, -1, -1)]


def _solid_harmonic(l, m):
    """Coefficients {(i,j,k): c} of r^l Y_lm in monomials x^i y^j z^k.

    Real solid harmonics in Racah normalisation (Helgaker, Jorgensen, Olsen,
    "Molecular Electronic-Structure Theory", eq. 6.4.47-6.4.50), multiplied by
    sqrt((2l+1)/(4 pi)) to turn them into r^l Y_lm with unit-normalised Y_lm:

      S_lm = N_lm sum_{t=0}^{(l-|m|)/2} sum_{u=0}^{t} sum_v C^{lm}_{tuv}
             x^(2t+|m|-2(u+v)) y^(2(u+v)) z^(l-2t-|m|)
      C^{lm}_{tuv} = (-1)^(t+v-v_m) (1/4)^t binom(l,t) binom(l-t,|m|+t) binom(t,u) binom(|m|,2v)
      N_lm = sqrt(2 (l+|m|)! (l-|m|)! / 2^delta_{m0}) / (2^|m| l!)

    with v_m = 0 for m >= 0 (v = 0, 1, ...) and v_m = 1/2 for m < 0
    (v = 1/2, 3/2, ...).  We loop over w = 2v to stay in integers.
    """
    am = abs(m)
    norm = sqrt(2.0 * factorial(l + am) * factorial(l - am) / (2.0 if m == 0 else 1.0))
    norm /= 2.0**am * factorial(l)
    norm *= sqrt((2 * l + 1) / (4.0 * pi))
    two_vm = 0 if m >= 0 else 1
    coeffs = {}
    for t in range((l - am) // 2 + 1):
        for u in range(t + 1):
            for w in range(two_vm, am + 1, 2):  # w = 2v
                sign = -1.0 if ((2 * t + w - two_vm) // 2) % 2 else 1.0
                c = sign * 0.25**t * comb(l, t) * comb(l - t, am + t) * comb(t, u) * comb(am, w)
                i = 2 * t + am - 2 * u - w
                j = 2 * u + w
                k = l - 2 * t - am
                key = (i, j, k)
                coeffs[key] = coeffs.get(key, 0.0) + norm * c
    return coeffs


@cache
def _cart2sph_raw(l):
    comps = cart_components(l)
    index = {c: n for n, c in enumerate(comps)}
    mat = np.zeros((ncart(l), nsph(l)))
    ms = [1, -1, 0] if l == 1 else range(-l, l + 1)  # p: x, y, z
    for col, m in enumerate(ms):
        for key, c in _solid_harmonic(l, m).items():
            mat[index[key], col] = c
    mat.flags.writeable = False
    return mat


def cart2sph(l, normalized="sp"):
    """Cartesian -> real spherical transformation matrix C_l, shape (ncart(l), 2l+1).

    Spherical functions are C_l^T times the cartesian ones (columns m = -l..l;
    p ordered x, y, z).  Units: dimensionless.

    normalized="sp" (default): the cartesian functions carry the factor f(l)
    of the libcint convention (s and p already normalised), so C_0 and C_1 are
    identity matrices; equals ``pyscf.gto.cart2sph(l, normalized='sp')`` and the
    blocks of PySCF's ``mol.cart2sph_coeff()``.
    normalized=None: plain monomials x^i y^j z^k for every l; equals
    ``pyscf.gto.cart2sph(l)`` (C_0 = 1/sqrt(4 pi), C_1 = sqrt(3/(4 pi)) I).
    For l >= 2 both are the same matrix.
    """
    if not 0 <= l <= MAX_L:
        raise ValueError(f"angular momentum {l} outside 0..{MAX_L}")
    if normalized == "sp" and l <= 1:
        return np.eye(ncart(l))
    if normalized not in ("sp", None):
        raise ValueError("normalized must be 'sp' or None")
    return np.array(_cart2sph_raw(l))


def cart2sph_matrix(basis):
    """Block-diagonal C, float64 (ncart, nao), of a :class:`hartree.basis.Basis`: the final
    AOs are C^T times the cartesian functions (``cart_loc`` order), so a final-basis density
    D is T = C D C^T on the cartesian functions; the identity for a cartesian basis."""
    C = np.zeros((basis.ncart, basis.nao))
    for i, l in enumerate(basis.shell_l):
        c0, c1 = basis.cart_loc[i], basis.cart_loc[i + 1]
        a0, a1 = basis.ao_loc[i], basis.ao_loc[i + 1]
        C[c0:c1, a0:a1] = cart2sph(int(l)) if basis.pure else np.eye(c1 - c0)
    return C
