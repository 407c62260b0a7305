"""numba kernels for three-index (ab|c) and two-index (a|c) Coulomb integrals (Rys quadrature).

A three-index integral is a four-index one whose fourth function is the unit function
(an s Gaussian of exponent 0 with coefficient 1):  (ab|c) = (ab|c 1).  For a primitive
triple with bra pair (zeta = a_a + a_b, P, K_ab) and ket primitive (eta = a_c, C),
rho = zeta eta / (zeta + eta), T = rho |P - C|^2 and

    (ab|c) = 2 pi^(5/2) / (zeta eta sqrt(zeta + eta)) K_ab c_c  sum_r w_r Ix Iy Iz      (1)

with Rys roots u_r and weights w_r of F_m(T) (rys.py).  The 2-D integrals G(n, m) (n quanta
on A, m on C) follow the vertical recurrences of Rys, Dupuis & King, J. Comput. Chem. 4,
154 (1983), eqs. 14-19, with the ket pair collapsed onto C (Q = C, D00 measured from C):

    G(0,0) = 1,  G(n+1,m) = C00 G(n,m) + n B10 G(n-1,m) + m B00 G(n,m-1)
                 G(n,m+1) = D00 G(n,m) + m B01 G(n,m-1) + n B00 G(n-1,m)                 (2)
    B00 = u/(2(zeta+eta)),  B10 = (1 - eta u/(zeta+eta))/(2 zeta),
    B01 = (1 - zeta u/(zeta+eta))/(2 eta),
    C00 = (P-A) - eta u (P-C)/(zeta+eta),  D00 = zeta u (P-C)/(zeta+eta).

The primitive sum gives (e0|c) for l_a <= |e| <= l_a + l_b; the horizontal transfer
(Head-Gordon & Pople 1988) moves quanta to B in closed binomial form,

    (x - B_x)^j = sum_t binom(j, t) (A_x - B_x)^(j-t) (x - A_x)^t,                       (3)

then each index goes to real spherical functions with cart2sph(l).  Cartesian s and p
functions carry PySCF's f(l) factors (f(0) = 1/sqrt(4 pi), f(1) = sqrt(3/(4 pi))).

The erf-attenuated operator erf(omega r12)/r12 of range-separated hybrids (omega > 0, bohr^-1)
changes only the quadrature of each primitive triple (Gill & Adamson, Chem. Phys. Lett. 261,
105 (1996); :data:`hartree.integrals.rys_program.ATTENUATION`): with theta = omega^2 /
(omega^2 + rho), the Rys rule is taken at theta T, each root u becomes theta u in eq. (2) and
the prefactor of eq. (1) is multiplied by sqrt(theta)                                   (4)

(theta = 1 is 1/r12; omega is a run-time argument, one compiled kernel serves every value).

The two-index metric (a|c) is (a 1|c): the driver appends the unit shell to the bra
basis and passes pairs (a, unit).  Written independently for hartree; the ERI kernels
(eri_*.py) follow the same equations.
"""

import math

import numba
import numpy as np

from hartree.integrals.gaussian_product import angular_factors
from hartree.integrals.rys import MAX_NROOTS, rys_roots_weights

TWO_PI_52 = 2.0 * math.pi**2.5
#: Largest total angular momentum l_a + l_b + l_c: nroots = L // 2 + 1 <= MAX_NROOTS.
LTOT_MAX = 2 * MAX_NROOTS - 2
_LC = LTOT_MAX  # cartesian component table reaches this L


def _cart_tables(lmax):
    """All cartesian components for L = 0..lmax (L-major, PySCF order) and start offsets."""
    comps, start = [], [0]
    for L in range(lmax + 1):
        for i in range(L, -1, -1):
            for j in range(L - i, -1, -1):
                comps.append((i, j, L - i - j))
        start.append(len(comps))
    return np.array(comps, dtype=np.int64), np.array(start, dtype=np.int64)


CART, CART_START = _cart_tables(_LC)
BINOM = np.array([[math.comb(n, k) for k in range(_LC + 1)] for n in range(_LC + 1)], dtype=np.float64)
#: Primitive pairs with |c_a c_b exp(-a_a a_b/(a_a+a_b) |AB|^2)| below this are skipped; the
#: Coulomb factor 2 pi^(5/2) c_c / (zeta eta sqrt(zeta+eta)) times the polynomial factors stays
#: below ~1e3 for normalised valence/auxiliary primitives, so each skipped term is < ~1e-14.
PRIM_CUTOFF = 1e-17
#: PySCF's angular factor of cartesian s and p functions, 1 for l >= 2.
FL = angular_factors(_LC + 1)


@numba.njit(cache=True, inline="always")
def _cart_index(lx, ly, lz):
    """Position of component (lx, ly, lz) in the L-major table CART."""
    L = lx + ly + lz
    return CART_START[L] + (L - lx) * (L - lx + 1) // 2 + lz


@numba.njit(cache=True)
def _primitive_sum(
    sa,
    sb,
    sc,
    l,
    pstart,
    nprim,
    center,
    exps,
    coefs,
    xl,
    xpstart,
    xnprim,
    xcenter,
    xexps,
    xcoefs,
    rys_table,
    roots,
    weights,
    g,
    acc,
    omega,
):
    """Contracted cartesian (e0|c) block into acc[e, f] (e over L = l_a..l_a+l_b, f over the
    cartesian components of l_c); returns (ne, nf).  g: scratch (3, n1, m1) per root.
    omega (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12 (eq. (4))."""
    la, lb, lc = l[sa], l[sb], xl[sc]
    nmax = la + lb
    mmax = lc
    nr = (nmax + mmax) // 2 + 1
    e0 = CART_START[la]
    ne = CART_START[nmax + 1] - e0
    f0 = CART_START[lc]
    nf = CART_START[lc + 1] - f0
    for e in range(ne):
        for f in range(nf):
            acc[e, f] = 0.0
    A = center[sa]
    B = center[sb]
    C = xcenter[sc]
    abx, aby, abz = A[0] - B[0], A[1] - B[1], A[2] - B[2]
    rab2 = abx * abx + aby * aby + abz * abz
    for ip in range(pstart[sa], pstart[sa] + nprim[sa]):
        ai = exps[ip]
        for jp in range(pstart[sb], pstart[sb] + nprim[sb]):
            aj = exps[jp]
            zeta = ai + aj
            iz = 1.0 / zeta
            kab = math.exp(-ai * aj * iz * rab2) * coefs[ip] * coefs[jp]
            if abs(kab) < PRIM_CUTOFF:  # negligible primitive pair (see PRIM_CUTOFF)
                continue
            px = (ai * A[0] + aj * B[0]) * iz
            py = (ai * A[1] + aj * B[1]) * iz
            pz = (ai * A[2] + aj * B[2]) * iz
            pax, pay, paz = px - A[0], py - A[1], pz - A[2]
            pcx, pcy, pcz = px - C[0], py - C[1], pz - C[2]
            pc2 = pcx * pcx + pcy * pcy + pcz * pcz
            for kp in range(xpstart[sc], xpstart[sc] + xnprim[sc]):
                eta = xexps[kp]
                izpe = 1.0 / (zeta + eta)
                t = zeta * eta * izpe * pc2
                pref = TWO_PI_52 * iz / eta * math.sqrt(izpe) * kab * xcoefs[kp]  # eq. (1)
                theta = 1.0
                if omega > 0.0:  # eq. (4)
                    theta = omega * omega / (omega * omega + zeta * eta * izpe)
                    t = theta * t
                    pref = math.sqrt(theta) * pref
                rys_roots_weights(nr, t, roots, weights, rys_table)
                for r in range(nr):
                    u = theta * roots[r]  # eq. (4); theta = 1 for 1/r12
                    eo = eta * izpe * u
                    zo = zeta * izpe * u
                    b00 = 0.5 * u * izpe
                    b10 = 0.5 * iz * (1.0 - eo)
                    b01 = 0.5 / eta * (1.0 - zo)
                    for d in range(3):  # eq. (2), one dimension
                        if d == 0:
                            c00, d00 = pax - eo * pcx, zo * pcx
                        elif d == 1:
                            c00, d00 = pay - eo * pcy, zo * pcy
                        else:
                            c00, d00 = paz - eo * pcz, zo * pcz
                        g[d, 0, 0] = 1.0
                        if nmax > 0:
                            g[d, 1, 0] = c00
                        for n in range(1, nmax):
                            g[d, n + 1, 0] = c00 * g[d, n, 0] + n * b10 * g[d, n - 1, 0]
                        for m in range(mmax):
                            g[d, 0, m + 1] = d00 * g[d, 0, m]
                            if m > 0:
                                g[d, 0, m + 1] += m * b01 * g[d, 0, m - 1]
                            for n in range(1, nmax + 1):
                                v = d00 * g[d, n, m] + n * b00 * g[d, n - 1, m]
                                if m > 0:
                                    v += m * b01 * g[d, n, m - 1]
                                g[d, n, m + 1] = v
                    w = weights[r] * pref
                    for e in range(ne):
                        ex, ey, ez = CART[e0 + e, 0], CART[e0 + e, 1], CART[e0 + e, 2]
                        for f in range(nf):
                            fx, fy, fz = CART[f0 + f, 0], CART[f0 + f, 1], CART[f0 + f, 2]
                            acc[e, f] += w * g[0, ex, fx] * g[1, ey, fy] * g[2, ez, fz]
    return ne, nf


@numba.njit(cache=True)
def _hrr(la, lb, A, B, acc, nf, cart):
    """cart[ia, ib, f] = (ab|f) from acc[e, f] by eq. (3)."""
    na = (la + 1) * (la + 2) // 2
    nb = (lb + 1) * (lb + 2) // 2
    e0 = CART_START[la]
    ab = np.empty((3, lb + 1))
    for d in range(3):
        ab[d, 0] = 1.0
        for k in range(1, lb + 1):
            ab[d, k] = ab[d, k - 1] * (A[d] - B[d])
    for ia in range(na):
        ax, ay, az = CART[e0 + ia, 0], CART[e0 + ia, 1], CART[e0 + ia, 2]
        for ib in range(nb):
            c = CART_START[lb] + ib
            bx, by, bz = CART[c, 0], CART[c, 1], CART[c, 2]
            for f in range(nf):
                cart[ia, ib, f] = 0.0
            for tx in range(bx + 1):
                cx = BINOM[bx, tx] * ab[0, bx - tx]
                for ty in range(by + 1):
                    cxy = cx * BINOM[by, ty] * ab[1, by - ty]
                    for tz in range(bz + 1):
                        w = cxy * BINOM[bz, tz] * ab[2, bz - tz]
                        if w == 0.0:
                            continue
                        e = _cart_index(ax + tx, ay + ty, az + tz) - e0
                        for f in range(nf):
                            cart[ia, ib, f] += w * acc[e, f]
    return na, nb


@numba.njit(cache=True)
def _to_final(cart, na, nb, nf, la, lb, lc, pure_ab, pure_c, c2s, fin):
    """fin[:ma, :mb, :mc] = cart block transformed to spherical where requested, with the
    f(l) factors of cartesian s/p; returns (ma, mb, mc)."""
    fac = FL[la] * FL[lb] * FL[lc]
    ma = 2 * la + 1 if pure_ab else na
    mb = 2 * lb + 1 if pure_ab else nb
    mc = 2 * lc + 1 if pure_c else nf
    sa = pure_ab and la >= 2
    sb = pure_ab and lb >= 2
    sc = pure_c and lc >= 2
    for i in range(ma):
        for j in range(mb):
            for k in range(mc):
                s = 0.0
                ci_lo, ci_hi = (0, na) if sa else (i, i + 1)
                cj_lo, cj_hi = (0, nb) if sb else (j, j + 1)
                for ci in range(ci_lo, ci_hi):
                    wi = c2s[la, ci, i] if sa else 1.0
                    if wi == 0.0:
                        continue
                    for cj in range(cj_lo, cj_hi):
                        wj = c2s[lb, cj, j] if sb else 1.0
                        if wj == 0.0:
                            continue
                        if sc:
                            t = 0.0
                            for ck in range(nf):
                                t += c2s[lc, ck, k] * cart[ci, cj, ck]
                        else:
                            t = cart[ci, cj, k]
                        s += wi * wj * t
                fin[i, j, k] = s * fac
    return ma, mb, mc


@numba.njit(cache=True, parallel=True)
def int3c_kernel(
    pairs,
    pair_off,
    pair_sym,
    l,
    pstart,
    nprim,
    center,
    exps,
    coefs,
    xl,
    xpstart,
    xnprim,
    xcenter,
    xexps,
    xcoefs,
    xloc,
    c0,
    c1,
    pure_ab,
    pure_c,
    c2s,
    rys_table,
    omega,
    out,
):
    """(ab|c) for bra shell pairs ``pairs`` (npair, 2) and aux shells c0 <= c < c1, of
    1/r12 (omega = 0) or erf(omega r12)/r12 (omega > 0, bohr^-1; eq. (4)).

    Writes out[i0 + i, j0 + j, xloc[c] - xloc[c0] + k] with (i0, j0) = pair_off[p], and
    also the transposed bra block out[j0 + j, i0 + i, ...] when pair_sym[p].
    Hartree (e^2 / bohr) units; blocks are final AO functions (spherical when pure_*).
    """
    lmax = 0
    for s in range(l.shape[0]):
        lmax = max(lmax, l[s])
    xlmax = 0
    for s in range(c0, c1):
        xlmax = max(xlmax, xl[s])
    nce = CART_START[2 * lmax + 1]
    ncx = (xlmax + 1) * (xlmax + 2) // 2
    nca = (lmax + 1) * (lmax + 2) // 2
    for p in numba.prange(pairs.shape[0]):
        sa, sb = pairs[p, 0], pairs[p, 1]
        la, lb = l[sa], l[sb]
        roots = np.empty(MAX_NROOTS)
        weights = np.empty(MAX_NROOTS)
        g = np.empty((3, 2 * lmax + 1, xlmax + 1))
        acc = np.empty((nce, ncx))
        cart = np.empty((nca, nca, ncx))
        fin = np.empty((nca, nca, ncx))
        i0, j0 = pair_off[p, 0], pair_off[p, 1]
        for sc in range(c0, c1):
            ne, nf = _primitive_sum(
                sa,
                sb,
                sc,
                l,
                pstart,
                nprim,
                center,
                exps,
                coefs,
                xl,
                xpstart,
                xnprim,
                xcenter,
                xexps,
                xcoefs,
                rys_table,
                roots,
                weights,
                g,
                acc,
                omega,
            )
            na, nb = _hrr(la, lb, center[sa], center[sb], acc, nf, cart)
            ma, mb, mc = _to_final(cart, na, nb, nf, la, lb, xl[sc], pure_ab, pure_c, c2s, fin)
            k0 = xloc[sc] - xloc[c0]
            for i in range(ma):
                for j in range(mb):
                    for k in range(mc):
                        out[i0 + i, j0 + j, k0 + k] = fin[i, j, k]
            if pair_sym[p]:
                for i in range(ma):
                    for j in range(mb):
                        for k in range(mc):
                            out[j0 + j, i0 + i, k0 + k] = fin[i, j, k]
