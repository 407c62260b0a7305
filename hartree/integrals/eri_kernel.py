"""Contracted shell-quartet electron-repulsion integrals by Rys quadrature (numba).

For a primitive quartet with bra pair (zeta, P, K_ab) and ket pair (eta, Q, K_cd),
rho = zeta eta / (zeta + eta) and T = rho |P - Q|^2,

    (ab|cd) = 2 pi^(5/2) / (zeta eta sqrt(zeta + eta)) K_ab K_cd
              sum_r w_r I_x(r) I_y(r) I_z(r)                                (1)

with Rys roots u_r = t_r^2 and weights w_r for F_m(T) (rys.py).  The 2-D integrals
G(n, m) (n quanta on the bra centre A, m on the ket centre C) obey, per dimension and
root (Rys, Dupuis, King, J. Comput. Chem. 4, 154 (1983), eqs. 14-19):

    G(0,0)   = 1
    G(n+1,m) = C00 G(n,m) + n B10 G(n-1,m) + m B00 G(n,m-1)
    G(n,m+1) = D00 G(n,m) + m B01 G(n,m-1) + n B00 G(n-1,m)                 (2)

    B00 = u / (2(zeta+eta)),  B10 = (1 - eta u/(zeta+eta)) / (2 zeta),
    B01 = (1 - zeta u/(zeta+eta)) / (2 eta),
    C00 = (P - A) - eta u (P - Q)/(zeta+eta),  D00 = (Q - C) + zeta u (P - Q)/(zeta+eta).

The quadrature (1) is summed for all (e0|f0) with l_a <= |e| <= l_a + l_b and
l_c <= |f| <= l_c + l_d, and contracted over primitives.  Because the horizontal
recurrence does not depend on exponents (Head-Gordon & Pople, J. Chem. Phys. 89, 5777
(1988)), it is applied once per contracted quartet, here in closed (binomial) form:

    (x - B_x)^j = sum_t binom(j, t) (A_x - B_x)^(j-t) (x - A_x)^t               (3)

so (a b| = sum_t prod_xyz binom(b, t) AB^(b-t) (a + t, 0| and the same on the ket.
Finally each index is transformed to real spherical functions with cart2sph(l).
The primitive stage (roots, recurrences (2), quadrature (1), batched over primitive
quartets) is in eri_prim.py.

Performance notes: the small hot helpers are ``inline="always"`` (numba IR inlining) so that
their callers compile them into one function: separate calls with many array arguments
cost ~40 ns each in reference counting.  The large bodies called once per quartet or class
(cart_block, class_block, quartet_block, spherical_) are plain calls: numba types an inlined
body again in every caller, and inlining them made the cold compile of the CPU kernels
265 s instead of 142 s on a 2-core host, for no measurable gain in a caffeine/6-31G** J/K
build (20-25 s either way).  Index arithmetic in the innermost loops is
unsigned (U = uint64) so numba emits no negative-index wraparound, which otherwise blocks
LLVM's vectorisation.
"""

import numba
import numpy as np

from hartree.integrals.eri_pairs import BINOM, CART, CART_START
from hartree.integrals.eri_prim import KMAX, NCOEF, U, primitive_sum
from hartree.integrals.rys import MAX_NROOTS

#: Largest l a quartet may have on all four shells: 4 l / 2 + 1 <= MAX_NROOTS.
LMAX_ERI = (MAX_NROOTS - 1) // 2


@numba.njit(cache=True)
def alloc_scratch(lmax):
    """Per-thread work arrays for shells up to angular momentum ``lmax``.

    Returns (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c, coef):
    g and coef are the batched 2-D integrals and recurrence coefficients (eri_prim.py);
    acc the contracted (e0|f0) block;
    h1 the bra-transferred (ab|f0) block; out/tmp the final block (ping-pong).
    """
    le = 2 * lmax
    nc = (lmax + 1) * (lmax + 2) // 2
    ne = CART_START[le + 1]
    nterm = nc * nc * (lmax + 1) ** 3
    roots = np.empty(MAX_NROOTS)
    weights = np.empty(MAX_NROOTS)
    g = np.empty(3 * (le + 1) ** 2 * KMAX)
    acc = np.empty(ne * ne)
    h1 = np.empty(nc * nc * ne)
    out = np.empty(nc**4)
    tmp = np.empty(nc**4)
    abpow = np.empty((3, lmax + 1))
    fterm_i = np.empty((nterm, 2), dtype=np.int64)
    fterm_c = np.empty(nterm)
    coef = np.empty(NCOEF * KMAX + 4)
    return roots, weights, g, acc, h1, out, tmp, abpow, fterm_i, fterm_c, coef


@numba.njit(cache=True, inline="always")
def _powers(abpow, pair_ab, P, lmax):
    """abpow[d, k] = (A - B)_d^k for k <= lmax."""
    for d in range(3):
        abpow[d, 0] = 1.0
        for k in range(1, lmax + 1):
            abpow[d, k] = abpow[d, k - 1] * pair_ab[P, d]


@numba.njit(cache=True, inline="always")
def _hrr_terms(la, lb, abpow, term_i, term_c):
    """List the terms of (3): (target ab index, source e index, coefficient)."""
    nb = CART_START[lb + 1] - CART_START[lb]
    na = CART_START[la + 1] - CART_START[la]
    e0 = CART_START[la]
    nt = 0
    for ia in range(na):
        ax, ay, az = CART[e0 + ia, 0], CART[e0 + ia, 1], CART[e0 + ia, 2]
        for ib in range(nb):
            c = CART_START[lb] + ib
            bx, by, bz = CART[c, 0], CART[c, 1], CART[c, 2]
            for tx in range(bx + 1):
                cx = BINOM[bx, tx] * abpow[0, bx - tx]
                for ty in range(by + 1):
                    cxy = cx * BINOM[by, ty] * abpow[1, by - ty]
                    for tz in range(bz + 1):
                        coef = cxy * BINOM[bz, tz] * abpow[2, bz - tz]
                        if coef == 0.0:
                            continue
                        lx, lz = ax + tx, az + tz
                        L = lx + ay + ty + lz
                        e = CART_START[L] + (L - lx) * (L - lx + 1) // 2 + lz - e0
                        term_i[nt, 0] = ia * nb + ib
                        term_i[nt, 1] = e
                        term_c[nt] = coef
                        nt += 1
    return nt


@numba.njit(cache=True, inline="always")
def _c2s_axis(src, dst, nbefore, nc, nafter, c2s, l):
    """dst[b, s, a] = sum_c C_l[c, s] src[b, c, a]; src (nbefore, nc, nafter).

    (Offsets are unsigned, U, so that numba emits no wraparound checks in the
    innermost loops and LLVM can vectorise them; the same below.)
    """
    ns = 2 * l + 1
    un = U(nafter)
    for b in range(nbefore):
        for s in range(ns):
            o = U((b * ns + s) * nafter)
            for a in range(un):
                dst[o + a] = 0.0
            for c in range(nc):
                w = c2s[l, c, s]
                if w == 0.0:
                    continue
                i = U((b * nc + c) * nafter)
                for a in range(un):
                    dst[o + a] += w * src[i + a]


@numba.njit(cache=True, inline="always")
def _hrr_bra(acc, h1, nab, nf, nt, term_i, term_c):
    """h1[ab, f] = sum_terms c acc[e, f]   (eq. 3 on the bra)."""
    for i in range(U(nab * nf)):
        h1[i] = 0.0
    un = U(nf)
    for t in range(nt):
        row = U(term_i[t, 0] * nf)
        src = U(term_i[t, 1] * nf)
        w = term_c[t]
        for f in range(un):
            h1[row + f] += w * acc[src + f]


@numba.njit(cache=True, inline="always")
def _hrr_ket(src, out, nab, nf, ncd, nt, term_i, term_c):
    """out[ab, cd] = sum_terms c src[ab, f]   (eq. 3 on the ket)."""
    for i in range(U(nab * ncd)):
        out[i] = 0.0
    for row in range(nab):
        o = U(row * ncd)
        i = U(row * nf)
        for t in range(nt):
            out[o + U(term_i[t, 0])] += term_c[t] * src[i + U(term_i[t, 1])]


@numba.njit(cache=True, inline="always")
def _copy(src, dst, n):
    for i in range(U(n)):
        dst[i] = src[i]


@numba.njit(cache=True)
def cart_block(
    P,
    Q,
    pair_shells,
    pair_start,
    pair_ab,
    pp,
    shell_l,
    roots,
    weights,
    g,
    coef,
    acc,
    h1,
    out,
    abpow,
    term_i,
    term_c,
    rys_table,
    omega=0.0,
):
    """Cartesian ERIs (ab|cd) of shell pairs P = (a, b), Q = (c, d) into out (C order
    a, b, c, d), generic in l; returns (na, nb, nc, nd) cartesian counts."""
    sa, sb = pair_shells[P, 0], pair_shells[P, 1]
    sc, sd = pair_shells[Q, 0], pair_shells[Q, 1]
    la, lb, lc, ld = shell_l[sa], shell_l[sb], shell_l[sc], shell_l[sd]
    class_block(
        P, Q, P, Q, la, lb, lc, ld, pair_start, pp, pair_ab, roots, weights, g, coef, acc, h1, out, abpow,
        term_i, term_c, rys_table, omega,
    )  # fmt: skip
    return (la + 1) * (la + 2) // 2, (lb + 1) * (lb + 2) // 2, (lc + 1) * (lc + 2) // 2, (ld + 1) * (ld + 2) // 2


@numba.njit(cache=True)
def class_block(Pd, Qd, P, Q, la, lb, lc, ld, pair_start, pp, pair_ab, roots, weights, g, coef, acc, h1, out,
                abpow, term_i, term_c, rys_table, omega=0.0):  # fmt: skip
    """Cartesian (ab|cd) of the class (la lb|lc ld) given (any l, also one raised or lowered
    from the shells': the derivative integrals), C order a, b, c, d, into out: bra primitives
    from the pair-table rows of Pd, ket from Qd, transfers by A-B of pair P and C-D of
    pair Q.  omega > 0 (bohr^-1): erf(omega r12)/r12 (eri_prim.primitive_sum)."""
    ne, nf = primitive_sum(Pd, Qd, la, lb, lc, ld, pair_start, pp, roots, weights, coef, g, acc, rys_table, omega)
    nab = (la + 1) * (la + 2) // 2 * ((lb + 1) * (lb + 2) // 2)
    ncd = (lc + 1) * (lc + 2) // 2 * ((ld + 1) * (ld + 2) // 2)
    # horizontal transfers (eq. 3): acc (e, f) -> h1 (ab, f) -> out (ab, cd)
    if lb > 0:
        _powers(abpow, pair_ab, P, lb)
        nt = _hrr_terms(la, lb, abpow, term_i, term_c)
        _hrr_bra(acc, h1, nab, nf, nt, term_i, term_c)
    if ld > 0:
        _powers(abpow, pair_ab, Q, ld)
        nt = _hrr_terms(lc, ld, abpow, term_i, term_c)
        if lb > 0:
            _hrr_ket(h1, out, nab, nf, ncd, nt, term_i, term_c)
        else:
            _hrr_ket(acc, out, nab, nf, ncd, nt, term_i, term_c)
    elif lb > 0:
        _copy(h1, out, nab * ncd)
    else:
        _copy(acc, out, nab * ncd)


@numba.njit(cache=True)
def spherical_(out, tmp, la, lb, lc, ld, c2s):
    """Transform the cartesian block in out (C order a, b, c, d) to real spherical
    functions in place, one index at a time (ping-pong out <-> tmp); returns the new
    (na, nb, nc, nd).  Shells with l < 2 are left alone (cart2sph is the identity)."""
    n0 = (la + 1) * (la + 2) // 2
    n1 = (lb + 1) * (lb + 2) // 2
    n2 = (lc + 1) * (lc + 2) // 2
    n3 = (ld + 1) * (ld + 2) // 2
    in_tmp = False
    if la >= 2:
        _c2s_axis(out, tmp, 1, n0, n1 * n2 * n3, c2s, la)
        n0 = 2 * la + 1
        in_tmp = True
    if lb >= 2:
        if in_tmp:
            _c2s_axis(tmp, out, n0, n1, n2 * n3, c2s, lb)
        else:
            _c2s_axis(out, tmp, n0, n1, n2 * n3, c2s, lb)
        n1 = 2 * lb + 1
        in_tmp = not in_tmp
    if lc >= 2:
        if in_tmp:
            _c2s_axis(tmp, out, n0 * n1, n2, n3, c2s, lc)
        else:
            _c2s_axis(out, tmp, n0 * n1, n2, n3, c2s, lc)
        n2 = 2 * lc + 1
        in_tmp = not in_tmp
    if ld >= 2:
        if in_tmp:
            _c2s_axis(tmp, out, n0 * n1 * n2, n3, 1, c2s, ld)
        else:
            _c2s_axis(out, tmp, n0 * n1 * n2, n3, 1, c2s, ld)
        n3 = 2 * ld + 1
        in_tmp = not in_tmp
    if in_tmp:
        _copy(tmp, out, n0 * n1 * n2 * n3)
    return n0, n1, n2, n3


@numba.njit(cache=True)
def quartet_block(
    P,
    Q,
    pair_shells,
    pair_start,
    pair_ab,
    pp,
    shell_l,
    pure,
    c2s,
    roots,
    weights,
    g,
    coef,
    acc,
    h1,
    out,
    tmp,
    abpow,
    term_i,
    term_c,
    rys_table,
    omega=0.0,
):
    """ERIs (ab|cd) of shell pairs P = (a, b) and Q = (c, d) in the final AO basis.

    Writes out[:na*nb*nc*nd], the block in C order (a, b, c, d) (spherical when
    ``pure``), hartree, and returns (na, nb, nc, nd).  The other arrays are scratch from
    alloc_scratch (passed one by one: no tuples or array rebinding in the hot path, which
    would cost reference-count traffic); ``rys_table``: rys.rys_table_array().
    omega > 0 (bohr^-1): the integrals of erf(omega r12)/r12 (eri_prim.primitive_sum).
    """
    na, nb, nc, nd = cart_block(
        P,
        Q,
        pair_shells,
        pair_start,
        pair_ab,
        pp,
        shell_l,
        roots,
        weights,
        g,
        coef,
        acc,
        h1,
        out,
        abpow,
        term_i,
        term_c,
        rys_table,
        omega,
    )
    la = shell_l[pair_shells[P, 0]]
    lc = shell_l[pair_shells[Q, 0]]
    if not pure or (la < 2 and lc < 2):
        return na, nb, nc, nd
    return spherical_(out, tmp, la, shell_l[pair_shells[P, 1]], lc, shell_l[pair_shells[Q, 1]], c2s)


@numba.njit(cache=True)
def quartet_block_call(
    P,
    Q,
    pair_shells,
    pair_start,
    pair_ab,
    pp,
    shell_l,
    pure,
    c2s,
    roots,
    weights,
    g,
    coef,
    acc,
    h1,
    out,
    tmp,
    abpow,
    term_i,
    term_c,
    rys_table,
    omega=0.0,
):
    """quartet_block as an ordinary (not inlined) function, for callers that are not hot
    (Schwarz factors, full tensor, tests): compiled once instead of inlined in each."""
    return quartet_block(
        P,
        Q,
        pair_shells,
        pair_start,
        pair_ab,
        pp,
        shell_l,
        pure,
        c2s,
        roots,
        weights,
        g,
        coef,
        acc,
        h1,
        out,
        tmp,
        abpow,
        term_i,
        term_c,
        rys_table,
        omega,
    )


@numba.njit(cache=True)
def cart_block_call(
    P,
    Q,
    pair_shells,
    pair_start,
    pair_ab,
    pp,
    shell_l,
    roots,
    weights,
    g,
    coef,
    acc,
    h1,
    out,
    abpow,
    term_i,
    term_c,
    rys_table,
    omega=0.0,
):
    """cart_block as an ordinary function: the fallback of the generated J/K driver for
    classes without a generated kernel (rare, expensive quartets, where one call costs
    little), compiled once instead of inlined."""
    return cart_block(
        P,
        Q,
        pair_shells,
        pair_start,
        pair_ab,
        pp,
        shell_l,
        roots,
        weights,
        g,
        coef,
        acc,
        h1,
        out,
        abpow,
        term_i,
        term_c,
        rys_table,
        omega,
    )
