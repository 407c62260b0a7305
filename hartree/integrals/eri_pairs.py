"""Shell-pair data for the Rys ERI kernels, and the small constant tables they use.

A *shell pair* (a, b) is stored with l_a >= l_b so that the vertical recurrence builds
angular momentum on the centre with the larger l (fewer intermediate components, cheaper
horizontal transfer).  For every pair we keep its surviving primitive pairs (Gaussian
product theorem, e.g. Helgaker, Jorgensen, Olsen, "Molecular Electronic-Structure
Theory", eq. 9.2.10):

    exp(-a r_A^2) exp(-b r_B^2) = K_ab exp(-zeta r_P^2),
    zeta = a + b,  P = (a A + b B) / zeta,  K_ab = exp(-a b / zeta |A - B|^2).

Primitive pairs with K_ab < PRIM_PAIR_CUTOFF are dropped.  Everything is in bohr and
bohr^-2.  The arrays are plain numpy so that numba kernels can take them as arguments.
"""

import math

import numba
import numpy as np

from hartree.basis import MAX_L, cart2sph
from hartree.integrals.gaussian_product import angular_factors, product_centre, product_exponent

#: Largest angular momentum the tables cover (the basis data model's limit).
LMAX_TABLE = MAX_L
#: Largest total angular momentum of a bra or ket (e = l_a + l_b).
LE_MAX = 2 * LMAX_TABLE
#: Primitive pairs whose overlap prefactor K_ab falls below this are skipped.
PRIM_PAIR_CUTOFF = 1e-18

# Columns of the primitive-pair table PP (one row per primitive pair, contiguous).
PP_ZETA, PP_PX, PP_PY, PP_PZ, PP_PAX, PP_PAY, PP_PAZ, PP_COEF, PP_INVZETA = range(9)
PP_NCOL = 9

# Normalisation factors f(l) of the libcint convention (hartree.integrals.gaussian_product).
_F_L = angular_factors(LMAX_TABLE + 1)


def _cart_tables():
    """CART[c] = (lx, ly, lz) for all L <= LE_MAX, L-major in PySCF order.

    Component c of angular momentum L sits at CART_START[L] + idx with
    idx = (L - lx)(L - lx + 1)/2 + lz (the position in the order "lx descending,
    then ly descending").
    """
    start = np.zeros(LE_MAX + 2, dtype=np.int64)
    rows = []
    for L in range(LE_MAX + 1):
        start[L] = len(rows)
        for lx in range(L, -1, -1):
            for ly in range(L - lx, -1, -1):
                rows.append((lx, ly, L - lx - ly))
    start[LE_MAX + 1] = len(rows)
    return np.array(rows, dtype=np.int64), start


CART, CART_START = _cart_tables()
BINOM = np.array([[math.comb(n, k) for k in range(LE_MAX + 1)] for n in range(LE_MAX + 1)], dtype=np.float64)


def c2s_stack(lmax):
    """Stacked cart -> spherical matrices, shape (lmax+1, ncart(lmax), 2 lmax + 1).

    Entry [l, :ncart(l), :2l+1] is ``hartree.basis.cart2sph(l)`` (the 'sp' convention, so
    l = 0, 1 are identities); the rest is zero padding.
    """
    nc = (lmax + 1) * (lmax + 2) // 2
    out = np.zeros((lmax + 1, nc, 2 * lmax + 1))
    for l in range(lmax + 1):
        m = cart2sph(l)
        out[l, : m.shape[0], : m.shape[1]] = m
    return out


@numba.njit(cache=True)
def _count_pairs(shell_l, shell_nprim, shell_prim_start, shell_center, exponents):
    nshell = shell_l.shape[0]
    counts = np.zeros(nshell * (nshell + 1) // 2, dtype=np.int64)
    logcut = -math.log(PRIM_PAIR_CUTOFF)
    ij = 0
    for i in range(nshell):
        for j in range(i + 1):
            r2 = 0.0
            for d in range(3):
                r2 += (shell_center[i, d] - shell_center[j, d]) ** 2
            n = 0
            for p in range(shell_nprim[i]):
                a = exponents[shell_prim_start[i] + p]
                for q in range(shell_nprim[j]):
                    b = exponents[shell_prim_start[j] + q]
                    if product_exponent(a, b, r2) <= logcut:
                        n += 1
            counts[ij] = n
            ij += 1
    return counts


@numba.njit(cache=True)
def _fill_pairs(shell_l, shell_nprim, shell_prim_start, shell_center, exponents, coefficients, counts, f_l):
    nshell = shell_l.shape[0]
    npair = counts.shape[0]
    pair_shells = np.empty((npair, 2), dtype=np.int64)
    pair_start = np.zeros(npair + 1, dtype=np.int64)
    for k in range(npair):
        pair_start[k + 1] = pair_start[k] + counts[k]
    pair_ab = np.empty((npair, 3))
    pp = np.empty((pair_start[npair], PP_NCOL))
    logcut = -math.log(PRIM_PAIR_CUTOFF)
    ij = 0
    for i in range(nshell):
        for j in range(i + 1):
            # store the shell with the larger l first
            if shell_l[j] > shell_l[i]:
                sa, sb = j, i
            else:
                sa, sb = i, j
            pair_shells[ij, 0] = sa
            pair_shells[ij, 1] = sb
            r2 = 0.0
            for d in range(3):
                pair_ab[ij, d] = shell_center[sa, d] - shell_center[sb, d]
                r2 += pair_ab[ij, d] ** 2
            fab = f_l[shell_l[sa]] * f_l[shell_l[sb]]
            n = pair_start[ij]
            for p in range(shell_nprim[sa]):
                a = exponents[shell_prim_start[sa] + p]
                ca = coefficients[shell_prim_start[sa] + p]
                for q in range(shell_nprim[sb]):
                    b = exponents[shell_prim_start[sb] + q]
                    cb = coefficients[shell_prim_start[sb] + q]
                    zeta = a + b
                    x = product_exponent(a, b, r2)
                    if x > logcut:
                        continue
                    pp[n, PP_ZETA] = zeta
                    pp[n, PP_INVZETA] = 1.0 / zeta
                    for d in range(3):
                        pd = product_centre(a, b, shell_center[sa, d], shell_center[sb, d])
                        pp[n, PP_PX + d] = pd
                        pp[n, PP_PAX + d] = pd - shell_center[sa, d]
                    pp[n, PP_COEF] = ca * cb * fab * math.exp(-x)
                    n += 1
            ij += 1
    return pair_shells, pair_start, pair_ab, pp


def build_shell_pairs(basis):
    """All shell pairs i >= j of ``basis`` with their primitive-pair data.

    Returns a tuple ``(pair_shells, pair_start, pair_ab, pp)``:
      pair_shells  int64 (npair, 2)    shells (a, b) of pair ij = i(i+1)/2 + j, l_a >= l_b
      pair_start   int64 (npair+1,)    offsets of each pair's rows in ``pp``
      pair_ab      float64 (npair, 3)  A - B, bohr
      pp           float64 (nprimpair, 9) columns zeta (bohr^-2), P (3, bohr),
                   P - A (3, bohr), c_a c_b f(l_a) f(l_b) K_ab, 1/zeta
    """
    counts = _count_pairs(basis.shell_l, basis.shell_nprim, basis.shell_prim_start, basis.shell_center, basis.exponents)
    return _fill_pairs(
        basis.shell_l,
        basis.shell_nprim,
        basis.shell_prim_start,
        basis.shell_center,
        basis.exponents,
        basis.coefficients,
        counts,
        _F_L,
    )
