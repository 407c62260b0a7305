"""Primitive stage of the Rys ERI kernel: the contracted (e0|f0) block of a shell quartet.

Work is batched over primitive quartets and roots.  For one contracted quartet, a scalar
loop over primitive quartets (p, q) computes T, the prefactor and the Rys roots/weights,
and stores per (quartet, root) index k the recurrence coefficients of
Rys, Dupuis, King, J. Comput. Chem. 4, 154 (1983), eqs. 14-19 (see eri_kernel.py):

    W   = w_r * 2 pi^(5/2) / (zeta eta sqrt(zeta+eta)) * K_ab K_cd c_a c_b c_c c_d
    B00 = u / (2(zeta+eta)),  B10 = (1 - eta u/(zeta+eta)) / (2 zeta),
    B01 = (1 - zeta u/(zeta+eta)) / (2 eta),
    C00 = (P-A) - eta u (P-Q)/(zeta+eta),  D00 = (Q-C) + zeta u (P-Q)/(zeta+eta).

When KMAX entries are collected, the 2-D integrals G_d(n, m) are built by the vertical
recurrences for all k at once (vector loops over k) and the quadrature

    acc[e, f] += sum_k G_x(ex, fx)[k] G_y(ey, fy)[k] G_z(ez, fz)[k]

is a dot product over k.  With one root (l_a+l_b+l_c+l_d <= 1) the root and weight come
directly from the Boys functions: w = F_0(T), u = F_1(T)/F_0(T); two roots from F_0..F_3
(rys_low); more from the Chebyshev tables of rys.py.
"""

import math

import numba
import numpy as np

from hartree.integrals.eri_pairs import CART, CART_START, PP_COEF, PP_INVZETA, PP_PAX, PP_PX, PP_ZETA
from hartree.integrals.rys import rys_roots_weights

TWO_PI_52 = 2.0 * math.pi**2.5
HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)

#: Batch length (primitive quartets x roots) of the vectorised recurrences.
KMAX = 64
# rows of the coefficient table
C_W, C_B00, C_B10, C_B01, C_C00, C_D00 = 0, 1, 2, 3, 4, 7
NCOEF = 10
U = np.uint64


# ---------------------------------------------------------------- Boys functions
# F_m(T) = int_0^1 s^(2m) exp(-T s^2) ds on the grid T_i = i / BOYS_GRID, m = 0..BOYS_MMAX,
# evaluated by a 7-term Taylor expansion about the nearest grid point,
#   F_m(T_i + d) = sum_k F_(m+k)(T_i) (-d)^k / k!,  |d| <= 1/(2 BOYS_GRID)   (error < 1e-16),
# and by upward recursion from F_0 = sqrt(pi/T)/2 beyond BOYS_TMAX.
BOYS_GRID = 32
BOYS_TMAX = 40.0
BOYS_MMAX = 3  # largest m needed (two Rys roots use F_0..F_3)
_BOYS_NTAYLOR = 7


def _boys_table():
    """F_m(T_i) for T_i = 0, 1/32, ..., BOYS_TMAX + 1 and m = 0..BOYS_MMAX + 6.

    Top m from the positive series F_m(T) = e^-T sum_k (2T)^k / ((2m+1)(2m+3)...(2m+2k+1)),
    the others by downward recursion F_m = (2T F_(m+1) + e^-T) / (2m+1); both stable.
    """
    t = np.arange(int((BOYS_TMAX + 1) * BOYS_GRID) + 1) / BOYS_GRID
    mtop = BOYS_MMAX + _BOYS_NTAYLOR - 1
    term = np.full_like(t, 1.0 / (2 * mtop + 1))
    total = term.copy()
    for k in range(1, 400):
        term = term * 2.0 * t / (2 * mtop + 2 * k + 1)
        total += term
    et = np.exp(-t)
    table = np.empty((t.size, mtop + 1))
    table[:, mtop] = et * total
    for m in range(mtop - 1, -1, -1):
        table[:, m] = (2.0 * t * table[:, m + 1] + et) / (2 * m + 1)
    return table


BOYS_TABLE = _boys_table()
_INV_FACT = np.array([1.0 / math.factorial(k) for k in range(_BOYS_NTAYLOR)])


@numba.njit(cache=True, inline="always")
def boys_low(t, mmax, f):
    """f[m] = F_m(T) for m = 0..mmax (mmax = 1 or 3), T >= 0.

    The Taylor sums for the different m are evaluated side by side (independent Horner
    chains, so they overlap in the pipeline).
    """
    if t < BOYS_TMAX:
        i = int(t * BOYS_GRID + 0.5)
        d = i / BOYS_GRID - t  # -(T - T_i)
        n = _BOYS_NTAYLOR - 1
        c = _INV_FACT[n]
        s0 = BOYS_TABLE[i, n] * c
        s1 = BOYS_TABLE[i, n + 1] * c
        if mmax == 1:
            for k in range(n - 1, -1, -1):
                c = _INV_FACT[k]
                s0 = s0 * d + BOYS_TABLE[i, k] * c
                s1 = s1 * d + BOYS_TABLE[i, k + 1] * c
            f[0] = s0
            f[1] = s1
            return
        s2 = BOYS_TABLE[i, n + 2] * c
        s3 = BOYS_TABLE[i, n + 3] * c
        for k in range(n - 1, -1, -1):
            c = _INV_FACT[k]
            s0 = s0 * d + BOYS_TABLE[i, k] * c
            s1 = s1 * d + BOYS_TABLE[i, k + 1] * c
            s2 = s2 * d + BOYS_TABLE[i, k + 2] * c
            s3 = s3 * d + BOYS_TABLE[i, k + 3] * c
        f[0] = s0
        f[1] = s1
        f[2] = s2
        f[3] = s3
        return
    f[0] = HALF_SQRT_PI / math.sqrt(t)
    et = math.exp(-t)
    h = 0.5 / t
    for m in range(mmax):
        f[m + 1] = ((2 * m + 1) * f[m] - et) * h


@numba.njit(cache=True, inline="always")
def rys_low(nr, t, roots, weights, f, need_u):
    """Rys roots and weights for nr = 1 or 2 from the moments F_0..F_(2nr-1).

    nr = 1: u = F_1/F_0, w = F_0.  nr = 2: the roots of the monic orthogonal polynomial
    u^2 + c1 u + c0 with sum_i w_i u_i^m = F_m (m = 0..3):
    c1 = (F1 F2 - F0 F3)/(F0 F2 - F1^2), c0 = -(F2 + c1 F1)/F0; w from the first two
    moments.
    """
    if nr == 1:
        boys_low(t, 1, f)
        weights[0] = f[0]
        if need_u:
            roots[0] = f[1] / f[0]
        return
    boys_low(t, 3, f)
    f0, f1, f2, f3 = f[0], f[1], f[2], f[3]
    rden = 1.0 / (f0 * f2 - f1 * f1)
    c1 = (f1 * f2 - f0 * f3) * rden
    c0 = (f1 * f3 - f2 * f2) * rden
    big = 0.5 * (-c1 + math.sqrt(c1 * c1 - 4.0 * c0))
    small = c0 / big
    roots[0] = small
    roots[1] = big
    w1 = (f1 - f0 * small) / (big - small)
    weights[1] = w1
    weights[0] = f0 - w1


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _flush(nk, nmax, mmax, coef, g, acc, e0, ne, f0, nf):
    """Vertical recurrences for nk batched entries, then the quadrature into acc.

    Offsets are unsigned (U) so that numba emits no negative-index wraparound in the
    k loops, which lets LLVM vectorise them.
    """
    uk = U(nk)
    if nmax + mmax == 0:
        s = 0.0
        for k in range(uk):
            s += coef[k]  # row C_W = 0
        acc[0] += s
        return
    n1 = nmax + 1
    m1 = mmax + 1
    b00 = U(C_B00 * KMAX)
    b10 = U(C_B10 * KMAX)
    b01 = U(C_B01 * KMAX)
    for d in range(3):
        c00 = U((C_C00 + d) * KMAX)
        d00 = U((C_D00 + d) * KMAX)
        o = d * n1 * m1 * KMAX  # G_d(n, m)[k] at o + (n m1 + m) KMAX + k
        uo = U(o)
        if d == 2:
            for k in range(uk):
                g[uo + k] = coef[k]  # w_r * prefactor
        else:
            for k in range(uk):
                g[uo + k] = 1.0
        if nmax > 0:
            o1 = U(o + m1 * KMAX)
            for k in range(uk):
                g[o1 + k] = coef[c00 + k] * g[uo + k]
        for n in range(1, nmax):
            on = U(o + (n + 1) * m1 * KMAX)
            oc = U(o + n * m1 * KMAX)
            op = U(o + (n - 1) * m1 * KMAX)
            fn = float(n)
            for k in range(uk):
                g[on + k] = coef[c00 + k] * g[oc + k] + fn * coef[b10 + k] * g[op + k]
        for m in range(mmax):
            fm = float(m)
            on = U(o + (m + 1) * KMAX)
            oc = U(o + m * KMAX)
            om = U(o + max(m - 1, 0) * KMAX)
            for k in range(uk):  # n = 0
                g[on + k] = coef[d00 + k] * g[oc + k] + fm * coef[b01 + k] * g[om + k]
            for n in range(1, nmax + 1):
                fn = float(n)
                on = U(o + (n * m1 + m + 1) * KMAX)
                oc = U(o + (n * m1 + m) * KMAX)
                onm = U(o + ((n - 1) * m1 + m) * KMAX)
                om = U(o + (n * m1 + max(m - 1, 0)) * KMAX)
                for k in range(uk):
                    g[on + k] = (
                        coef[d00 + k] * g[oc + k] + fm * coef[b01 + k] * g[om + k] + fn * coef[b00 + k] * g[onm + k]
                    )
    oy = n1 * m1 * KMAX
    oz = 2 * oy
    for e in range(ne):
        ex, ey, ez = CART[e0 + e, 0], CART[e0 + e, 1], CART[e0 + e, 2]
        for f in range(nf):
            fx, fy, fz = CART[f0 + f, 0], CART[f0 + f, 1], CART[f0 + f, 2]
            ax = U((ex * m1 + fx) * KMAX)
            ay = U(oy + (ey * m1 + fy) * KMAX)
            az = U(oz + (ez * m1 + fz) * KMAX)
            s = 0.0
            for k in range(uk):
                s += g[ax + k] * g[ay + k] * g[az + k]
            acc[e * nf + f] += s


@numba.njit(cache=True, inline="always")
def primitive_sum(P, Q, la, lb, lc, ld, pair_start, pp, roots, weights, coef, g, acc, rys_table, omega=0.0):
    """Contracted cartesian (e0|f0) block of bra pair P and ket pair Q into acc.

    acc[e * nf + f], e over the cartesian components of l_a..l_a+l_b (L-major),
    f over l_c..l_c+l_d.  Returns (ne, nf).  omega > 0 (bohr^-1): the integrals of
    erf(omega r12)/r12 instead (:data:`hartree.integrals.rys_program.ATTENUATION`: theta per
    primitive quartet, the rule at theta T, roots times theta, prefactor times sqrt(theta)).
    """
    nmax = la + lb
    mmax = lc + ld
    nr = (nmax + mmax) // 2 + 1
    e0 = CART_START[la]
    ne = CART_START[nmax + 1] - e0
    f0 = CART_START[lc]
    nf = CART_START[mmax + 1] - f0
    for i in range(ne * nf):
        acc[i] = 0.0
    need_u = nmax + mmax > 0
    fm = coef[NCOEF * KMAX :]  # room for F_0..F_3
    nk = 0
    for p in range(pair_start[P], pair_start[P + 1]):
        zeta = pp[p, PP_ZETA]
        izeta = pp[p, PP_INVZETA]
        cab = TWO_PI_52 * pp[p, PP_COEF] * izeta
        pax, pay, paz = pp[p, PP_PAX], pp[p, PP_PAX + 1], pp[p, PP_PAX + 2]
        px, py, pz = pp[p, PP_PX], pp[p, PP_PX + 1], pp[p, PP_PX + 2]
        for q in range(pair_start[Q], pair_start[Q + 1]):
            eta = pp[q, PP_ZETA]
            izpe = 1.0 / (zeta + eta)
            pqx = px - pp[q, PP_PX]
            pqy = py - pp[q, PP_PX + 1]
            pqz = pz - pp[q, PP_PX + 2]
            t = zeta * eta * izpe * (pqx * pqx + pqy * pqy + pqz * pqz)
            # 2 pi^(5/2) / (zeta eta sqrt(zeta + eta)) c_ab c_cd
            pref = cab * pp[q, PP_COEF] * pp[q, PP_INVZETA] * math.sqrt(izpe)
            theta = 1.0
            if omega > 0.0:  # rys_program.ATTENUATION
                theta = omega * omega / (omega * omega + zeta * eta * izpe)
                t = theta * t
                pref = math.sqrt(theta) * pref
            if nr <= 2:
                rys_low(nr, t, roots, weights, fm, need_u)
            else:
                rys_roots_weights(nr, t, roots, weights, rys_table)
            if nk + nr > KMAX:
                _flush(nk, nmax, mmax, coef, g, acc, e0, ne, f0, nf)
                nk = 0
            if not need_u:
                coef[U(nk)] = weights[0] * pref  # row C_W = 0
                nk += 1
                continue
            hz = 0.5 * izeta
            he = 0.5 * pp[q, PP_INVZETA]
            qcx, qcy, qcz = pp[q, PP_PAX], pp[q, PP_PAX + 1], pp[q, PP_PAX + 2]
            for r in range(nr):
                u = theta * roots[r]  # rys_program.ATTENUATION_ROOT (theta = 1: 1/r12)
                j = U(nk)
                eo = eta * izpe * u
                zo = zeta * izpe * u
                coef[j] = weights[r] * pref
                coef[j + U(C_B00 * KMAX)] = 0.5 * u * izpe
                coef[j + U(C_B10 * KMAX)] = hz * (1.0 - eo)
                coef[j + U(C_B01 * KMAX)] = he * (1.0 - zo)
                coef[j + U(C_C00 * KMAX)] = pax - eo * pqx
                coef[j + U((C_C00 + 1) * KMAX)] = pay - eo * pqy
                coef[j + U((C_C00 + 2) * KMAX)] = paz - eo * pqz
                coef[j + U(C_D00 * KMAX)] = qcx + zo * pqx
                coef[j + U((C_D00 + 1) * KMAX)] = qcy + zo * pqy
                coef[j + U((C_D00 + 2) * KMAX)] = qcz + zo * pqz
                nk += 1
    if nk > 0:
        _flush(nk, nmax, mmax, coef, g, acc, e0, ne, f0, nf)
    return ne, nf


def g_size(lmax):
    """Length of the flat G array for shells up to lmax."""
    return 3 * (2 * lmax + 1) ** 2 * KMAX
