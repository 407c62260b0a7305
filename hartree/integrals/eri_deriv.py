"""First derivatives of the ERIs contracted with density products, per atom (numba).

The two-electron energy of an SCF determinant is E_2 = 1/2 sum Gamma_abcd (ab|cd) with

    Gamma_abcd = DJ_ab DJ_cd - k_factor/2 sum_s (DK^s_ac DK^s_bd + DK^s_ad DK^s_bc)     (1)

(RHF: DJ = D, one DK = D, k_factor 1/2; UHF and ROHF: DJ = D_alpha + D_beta, DK = D_alpha,
D_beta, k_factor 1).  Its gradient (Pople, Krishnan, Schlegel & Binkley, Int. J. Quantum
Chem. Symp. 13, 225 (1979)) is contracted quartet by quartet and never stored:

    dE_2/dX = 1/2 sum_(P>=Q) w_PQ sum_(abcd in P,Q) Gamma_abcd d(ab|cd)/dX,            (2)

over unique quartets of shell pairs P = (a, b), Q = (c, d), with w_PQ = 2 for P != Q, times
2 for each pair of two different shells (the images of the 8-fold symmetry).  Derivatives
by the centres A, B (of P) and C (the first shell of Q) follow from the Gaussian-exponent
rule (Obara & Saika, J. Chem. Phys. 84, 3963 (1986), eq. 20)

    d/dA_x (ab|cd) = 2 alpha (a+1_x b|cd) - a_x (a-1_x b|cd),                          (3)

the exponent weight 2 alpha taken per primitive pair (a copy of the primitive-pair table
with the coefficients times 2 alpha, or 2 beta for B), the raised and lowered classes by the
same Rys primitive stage and transfers as the energy (:mod:`hartree.integrals.eri_prim`,
:mod:`hartree.integrals.eri_kernel`, which take l as arguments); the C derivative is that of
the bra of (cd|ab).  D follows by translational invariance,
d/dD = -(d/dA + d/dB + d/dC).

Quartets are screened by Q_P Q_Q max|Gamma| < threshold with the Schwarz factors of the
energy (Haser & Ahlrichs, J. Comput. Chem. 10, 104 (1989)).  Densities are cartesian
(``cart_loc`` order).  The erf-attenuated operator (omega > 0, range-separated hybrids)
goes through the same steps: eq. (3) holds for any operator of r12 alone.  This generic
kernel is the reference for per-class kernels printed from
:mod:`hartree.integrals.rys_program` (not written yet).
"""

import math

import numba
import numpy as np

from hartree.integrals.eri_kernel import alloc_scratch, class_block
from hartree.integrals.eri_pairs import CART, CART_START, PP_COEF, PRIM_PAIR_CUTOFF
from hartree.integrals.gaussian_product import product_exponent
from hartree.integrals.jk import shell_dmax

#: largest l of a shell (the raised l + 1 must fit the kernels' tables, 2(l+1) <= 12)
MAX_L_DERIV = 5


@numba.njit(cache=True)
def _pair_exponents(shell_l, shell_nprim, shell_prim_start, shell_center, exponents, pair_shells, pair_start):
    """(nprimpair, 2): the exponents (alpha, beta) of shells (a, b) of every primitive pair,
    in the order of :func:`hartree.integrals.eri_pairs.build_shell_pairs` (same cutoff)."""
    out = np.empty((pair_start[-1], 2))
    logcut = -math.log(PRIM_PAIR_CUTOFF)
    for P in range(pair_shells.shape[0]):
        sa, sb = pair_shells[P, 0], pair_shells[P, 1]
        r2 = 0.0
        for d in range(3):
            r2 += (shell_center[sa, d] - shell_center[sb, d]) ** 2
        n = pair_start[P]
        for p in range(shell_nprim[sa]):
            a = exponents[shell_prim_start[sa] + p]
            for q in range(shell_nprim[sb]):
                b = exponents[shell_prim_start[sb] + q]
                if product_exponent(a, b, r2) > logcut:
                    continue
                out[n, 0] = a
                out[n, 1] = b
                n += 1
        if n != pair_start[P + 1]:
            raise ValueError("primitive pairs out of step with the pair table")
    return out


def weighted_pair_tables(basis, pairs):
    """(pair_start3, pp3): the primitive-pair table three times -- as is, with coefficients
    times 2 alpha, times 2 beta -- so that pair P + k npair reads copy k (eq. (3))."""
    ab = _pair_exponents(
        basis.shell_l, basis.shell_nprim, basis.shell_prim_start, basis.shell_center, basis.exponents,
        pairs.pair_shells, pairs.pair_start,
    )  # fmt: skip
    pp_a = pairs.pp.copy()
    pp_a[:, PP_COEF] *= 2.0 * ab[:, 0]
    pp_b = pairs.pp.copy()
    pp_b[:, PP_COEF] *= 2.0 * ab[:, 1]
    n = pairs.pp.shape[0]
    s = pairs.pair_start
    start3 = np.concatenate([s[:-1], s[:-1] + n, s + 2 * n]).astype(np.int64)
    return start3, np.ascontiguousarray(np.vstack([pairs.pp, pp_a, pp_b]))


@numba.njit(cache=True)
def _block(Pd, Qd, P, Q, la, lb, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g, coef, acc, h1, out,
           abpow, term_i, term_c, rys_table, omega):  # fmt: skip
    """:func:`hartree.integrals.eri_kernel.class_block` out of line (compiled once, not six
    times into the driver); omega > 0: the erf(omega r12)/r12 operator."""
    class_block(Pd, Qd, P, Q, la, lb, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g, coef, acc, h1, out,
                abpow, term_i, term_c, rys_table, omega)  # fmt: skip


@numba.njit(cache=True, inline="always")
def _cidx(lx, ly, lz):
    """Index of component (lx, ly, lz) in CART (all l, L-major)."""
    l = lx + ly + lz
    return CART_START[l] + (l - lx) * (l - lx + 1) // 2 + lz


@numba.njit(cache=True, inline="always")
def _contract_deriv(up, down, gam, nbefore, l, nafter, g3):
    """g3 += sum gam[b, i, a] (up[b, i + 1_x, a] - i_x down[b, i - 1_x, a]) for x = 0, 1, 2:
    eq. (3) on the middle index of blocks (nbefore, ncart(l +- 1), nafter), contracted."""
    n = (l + 1) * (l + 2) // 2
    nu = (l + 2) * (l + 3) // 2
    nd = l * (l + 1) // 2
    i0 = CART_START[l]
    for i in range(n):
        ex, ey, ez = CART[i0 + i, 0], CART[i0 + i, 1], CART[i0 + i, 2]
        for x in range(3):
            iu = _cidx(ex + (x == 0), ey + (x == 1), ez + (x == 2)) - CART_START[l + 1]
            ni = ex if x == 0 else (ey if x == 1 else ez)
            idn = _cidx(ex - (x == 0), ey - (x == 1), ez - (x == 2)) - CART_START[l - 1] if ni > 0 else 0
            s = 0.0
            for b in range(nbefore):
                for a in range(nafter):
                    v = up[(b * nu + iu) * nafter + a]
                    if ni > 0:
                        v -= ni * down[(b * nd + idn) * nafter + a]
                    s += gam[(b * n + i) * nafter + a] * v
            g3[x] += s


@numba.njit(cache=True, inline="always")
def _gamma_block(gam, gamt, dj, dk, k_factor, oa, ob, oc, od, na, nb, nc, nd):
    """Gamma of eq. (1) on one quartet, with the exchange part symmetrised over c <-> d
    (eq. (2) uses the 8-fold symmetry of Gamma): gam (a, b, c, d) and its transpose gamt
    (c, d, a, b); returns max |Gamma|."""
    nk = dk.shape[0]
    hk = 0.5 * k_factor
    big = 0.0
    for a in range(na):
        for b in range(nb):
            jab = dj[oa + a, ob + b]
            for c in range(nc):
                for d in range(nd):
                    v = jab * dj[oc + c, od + d]
                    for s in range(nk):
                        v -= hk * (dk[s, oa + a, oc + c] * dk[s, ob + b, od + d]
                                   + dk[s, oa + a, od + d] * dk[s, ob + b, oc + c])  # fmt: skip
                    gam[((a * nb + b) * nc + c) * nd + d] = v
                    gamt[((c * nd + d) * na + a) * nb + b] = v
                    big = max(big, abs(v))
    return big


@numba.njit(cache=True, parallel=True)
def _eri_gradient(order, q_sorted, pair_shells, pair_start3, pp3, pair_ab, shell_l, shell_atom, cart_loc,
                  lmax, dj, dk, k_factor, dshell, threshold, natm, nthreads, rys_table, omega):  # fmt: skip
    """Per-atom dE_2/dX (natm, 3), eq. (2), threads over the Schwarz-sorted pairs."""
    npair = pair_shells.shape[0]
    npl = order.shape[0]
    buf = np.zeros((nthreads, natm, 3))
    dmax = 0.0
    for i in range(dshell.shape[0]):
        for j in range(dshell.shape[1]):
            dmax = max(dmax, dshell[i, j])
    gmax = dmax * dmax * (1.0 + k_factor * dk.shape[0])
    nc1 = (lmax + 1) * (lmax + 2) // 2
    for t in numba.prange(nthreads):
        (roots, weights, g, acc, h1, up, tmp, abpow, term_i, term_c, coef) = alloc_scratch(lmax + 1)
        down = np.empty(nc1**4)
        gam = np.empty(nc1**4)
        gamt = np.empty(nc1**4)
        grad = buf[t]
        ga = np.zeros(3)
        gb = np.zeros(3)
        gc = np.zeros(3)
        for ip in range(t, npl, nthreads):
            qp = q_sorted[ip]
            if qp * qp * gmax < threshold:
                break
            P = order[ip]
            sa, sb = pair_shells[P, 0], pair_shells[P, 1]
            la, lb = shell_l[sa], shell_l[sb]
            oa, ob = cart_loc[sa], cart_loc[sb]
            na, nb = cart_loc[sa + 1] - oa, cart_loc[sb + 1] - ob
            for iq in range(ip, npl):
                qq = qp * q_sorted[iq]
                if qq * gmax < threshold:
                    break
                Q = order[iq]
                sc, sd = pair_shells[Q, 0], pair_shells[Q, 1]
                dq = max(max(dshell[sa, sb], dshell[sc, sd]), max(max(dshell[sa, sc], dshell[sa, sd]),
                                                                  max(dshell[sb, sc], dshell[sb, sd])))  # fmt: skip
                if qq * dq * dq * (1.0 + k_factor * dk.shape[0]) < threshold:
                    continue
                lc, ld = shell_l[sc], shell_l[sd]
                oc, od = cart_loc[sc], cart_loc[sd]
                nc, nd = cart_loc[sc + 1] - oc, cart_loc[sd + 1] - od
                big = _gamma_block(gam, gamt, dj, dk, k_factor, oa, ob, oc, od, na, nb, nc, nd)
                if qq * big < threshold:
                    continue
                w = 0.5
                if P != Q:
                    w *= 2.0
                if sa != sb:
                    w *= 2.0
                if sc != sd:
                    w *= 2.0
                for x in range(3):
                    ga[x] = 0.0
                    gb[x] = 0.0
                    gc[x] = 0.0
                # d/dA: (a+1 b|cd) with 2 alpha, (a-1 b|cd)
                _block(P + npair, Q, P, Q, la + 1, lb, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g,
                       coef, acc, h1, up, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                if la > 0:
                    _block(P, Q, P, Q, la - 1, lb, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g,
                           coef, acc, h1, down, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                _contract_deriv(up, down, gam, 1, la, nb * nc * nd, ga)
                # d/dB: (a b+1|cd) with 2 beta, (a b-1|cd)
                _block(P + 2 * npair, Q, P, Q, la, lb + 1, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g,
                       coef, acc, h1, up, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                if lb > 0:
                    _block(P, Q, P, Q, la, lb - 1, lc, ld, pair_start3, pp3, pair_ab, roots, weights, g,
                           coef, acc, h1, down, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                _contract_deriv(up, down, gam, na, lb, nc * nd, gb)
                # d/dC: the bra of (cd|ab)
                _block(Q + npair, P, Q, P, lc + 1, ld, la, lb, pair_start3, pp3, pair_ab, roots, weights, g,
                       coef, acc, h1, up, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                if lc > 0:
                    _block(Q, P, Q, P, lc - 1, ld, la, lb, pair_start3, pp3, pair_ab, roots, weights, g,
                           coef, acc, h1, down, abpow, term_i, term_c, rys_table, omega)  # fmt: skip
                _contract_deriv(up, down, gamt, 1, lc, nd * na * nb, gc)
                ia, ib, ic, id_ = shell_atom[sa], shell_atom[sb], shell_atom[sc], shell_atom[sd]
                for x in range(3):
                    grad[ia, x] += w * ga[x]
                    grad[ib, x] += w * gb[x]
                    grad[ic, x] += w * gc[x]
                    grad[id_, x] -= w * (ga[x] + gb[x] + gc[x])
    return buf.sum(axis=0)


def eri_gradient(basis, pairs, order, dj_cart, dk_cart, k_factor, natm, threshold=1e-12, omega=0.0):
    """Per-atom gradient of E_2 (eq. (2)), (natm, 3), hartree/bohr.

    basis: hartree Basis; pairs: its :class:`hartree.integrals.eri.ShellPairs`; order: its
    :func:`hartree.integrals.jk.schwarz_order`; dj_cart (ncart, ncart) and dk_cart
    (nk, ncart, ncart): the densities of eq. (1) in the cartesian AO basis, symmetric;
    k_factor: eq. (1); threshold: hartree (screening of the module docstring).  omega
    (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12 (the rule of
    :mod:`hartree.integrals.rys_program`; its Schwarz factors bounded by those of 1/r12).
    """
    if omega < 0.0:
        raise ValueError("eri_gradient takes omega >= 0 (erfc is 1/r12 minus erf)")
    lmax = pairs.lmax
    if lmax > MAX_L_DERIV:
        raise ValueError(f"ERI derivatives support l <= {MAX_L_DERIV}, basis has l = {lmax}")
    start3, pp3 = weighted_pair_tables(basis, pairs)
    dj = np.ascontiguousarray(dj_cart, dtype=np.float64)
    dk = np.ascontiguousarray(dk_cart, dtype=np.float64).reshape(-1, dj.shape[0], dj.shape[0])
    loc = np.array(basis.cart_loc, dtype=np.int64)
    dshell = shell_dmax(np.concatenate([dj[None], dk]), loc)
    return _eri_gradient(
        order[0], order[1], pairs.pair_shells, start3, pp3, pairs.pair_ab, np.array(basis.shell_l, dtype=np.int64),
        np.array(basis.shell_atom, dtype=np.int64), loc, int(lmax), dj, dk, float(k_factor), dshell,
        float(threshold), int(natm), numba.get_num_threads(), pairs.rys_table, float(omega),
    )  # fmt: skip
