"""Direct Coulomb and exchange matrices with Cauchy-Schwarz and density screening.

    J_mn = sum_ls (mn|ls) D_ls,     K_mn = sum_ls (ml|ns) D_ls

for a stack of symmetric densities D (nset, nao, nao).  Every unique shell quartet
(P|Q) of shell pairs P = (a, b), Q = (c, d) is visited once; it is skipped when

    Q_P Q_Q max|D|_quartet < threshold,       Q_P = sqrt(max |(ab|ab)|)

(Haser & Ahlrichs, J. Comput. Chem. 10, 104 (1989)), with max|D| taken over the density
blocks the quartet touches (D_ab, D_cd for J; D_ac, D_ad, D_bc, D_bd for K), so that
incremental Fock builds with small density differences skip most quartets.

Pairs are sorted by decreasing Q_P; for pair number p only pairs q >= p are visited,
and the inner loop stops at the first q with Q_p Q_q max|D| < threshold.  Threads
take the outer pairs round-robin (heavy pairs come first in the sorted order, so this
spreads them) and accumulate into private J/K buffers, summed at the end.

Digestion (8-fold symmetry).  With v = (ab|cd) s, s = 1/2 for each of a == b, c == d,
P == Q (the block loops cover both orders of a diagonal pair), the 8 images of v give
J = A + A^T and K = B + B^T with

    A_ab += 2 v D_cd,   A_cd += 2 v D_ab,
    B_ac += v D_bd,  B_bc += v D_ad,  B_ad += v D_bc,  B_bd += v D_ac.

Two drivers run this loop.  The default, ``jk_direct_gen`` of the generated module
(eri_codegen.py, template in eri_codegen_driver.py), takes each quartet's cartesian
block from the unrolled kernel of its angular-momentum class when there is one (l <= 2,
l_a+l_b+l_c+l_d <= 4) and from the generic kernel otherwise.  ``_jk_direct`` here uses
the generic kernel only: it is the reference (``jk(..., generated=False)``), and calls
the block kernel out of line (~15% slower than inlined, ~35 s shorter to compile
cold).
"""

import numba
import numpy as np

from hartree.integrals.eri_codegen import load_module
from hartree.integrals.eri_kernel import alloc_scratch, quartet_block_call
from hartree.integrals.eri_prim import U


@numba.njit(cache=True, inline="always")
def _digest(buf, na, nb, nc, nd, oa, ob, oc, od, scale, dms, jt, kt, with_j, with_k):
    """Add one quartet block's contributions to the half matrices A (jt) and B (kt).

    Indices are unsigned (U) so that numba emits no negative-index wraparound.
    """
    nset = dms.shape[0]
    ua, ub, uc, ud = U(oa), U(ob), U(oc), U(od)
    for s in range(nset):
        k = U(0)
        for a in range(ua, ua + U(na)):
            for b in range(ub, ub + U(nb)):
                dab = dms[s, a, b]
                jab = 0.0
                for c in range(uc, uc + U(nc)):
                    dac = dms[s, a, c]
                    dbc = dms[s, b, c]
                    kac = 0.0
                    kbc = 0.0
                    for d in range(ud, ud + U(nd)):
                        v = buf[k] * scale
                        k += U(1)
                        if with_j:
                            jab += v * dms[s, c, d]
                            jt[s, c, d] += 2.0 * v * dab
                        if with_k:
                            kac += v * dms[s, b, d]
                            kbc += v * dms[s, a, d]
                            kt[s, a, d] += v * dbc
                            kt[s, b, d] += v * dac
                    if with_k:
                        kt[s, a, c] += kac
                        kt[s, b, c] += kbc
                if with_j:
                    jt[s, a, b] += 2.0 * jab


@numba.njit(cache=True, inline="always")
def _quartet_dmax(dshell, sa, sb, sc, sd, with_j, with_k):
    """max |D| over the density blocks quartet (ab|cd) touches: D_ab, D_cd for J;
    D_ac, D_ad, D_bc, D_bd for K (the screening factor of the module docstring)."""
    dq = 0.0
    if with_j:
        dq = max(dshell[sa, sb], dshell[sc, sd])
    if with_k:
        dq = max(dq, max(max(dshell[sa, sc], dshell[sa, sd]), max(dshell[sb, sc], dshell[sb, sd])))
    return dq


@numba.njit(cache=True, inline="always")
def _quartet_scale(sa, sb, sc, sd, P, Q):
    """s = 1/2 for each of a == b, c == d, P == Q (see Digestion above)."""
    scale = 1.0
    if sa == sb:
        scale *= 0.5
    if sc == sd:
        scale *= 0.5
    if P == Q:
        scale *= 0.5
    return scale


@numba.njit(cache=True)
def shell_dmax(dms, ao_loc):
    """max over sets and block elements of |D|, per shell pair: (nshell, nshell); ao_loc
    the shells' first functions in the layout of dms (``ao_loc`` or ``cart_loc``)."""
    nshell = ao_loc.shape[0] - 1
    out = np.zeros((nshell, nshell))
    for s in range(dms.shape[0]):
        for i in range(nshell):
            for j in range(nshell):
                m = out[i, j]
                for a in range(ao_loc[i], ao_loc[i + 1]):
                    for b in range(ao_loc[j], ao_loc[j + 1]):
                        m = max(m, abs(dms[s, a, b]))
                out[i, j] = m
    return out


@numba.njit(parallel=True, cache=True)
def _jk_direct(
    order,
    q_sorted,
    pair_shells,
    pair_start,
    pair_ab,
    pp,
    shell_l,
    ao_loc,
    pure,
    c2s,
    lmax,
    dms,
    dshell,
    with_j,
    with_k,
    threshold,
    nthreads,
    rys_table,
    omega=0.0,
):
    """Half matrices A, B summed over threads; shapes (nset, nao, nao) each; omega > 0:
    the operator erf(omega r12)/r12."""
    nset, nao = dms.shape[0], dms.shape[1]
    npl = order.shape[0]
    nj = nthreads if with_j else 1
    nk = nthreads if with_k else 1
    jbuf = np.zeros((nj, nset, nao, nao))
    kbuf = np.zeros((nk, nset, nao, nao))
    dmax = 0.0
    for i in range(dshell.shape[0]):
        for j in range(dshell.shape[1]):
            dmax = max(dmax, dshell[i, j])
    for t in numba.prange(nthreads):
        (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c, coef) = alloc_scratch(lmax)
        ti = np.int64(t)
        jt = jbuf[min(ti, nj - 1)]
        kt = kbuf[min(ti, nk - 1)]
        for ip in range(ti, npl, nthreads):
            qp = q_sorted[ip]
            if qp * q_sorted[ip] * dmax < threshold:
                break  # Q sorted descending: no later pair can pass either
            P = order[ip]
            sa, sb = pair_shells[P, 0], pair_shells[P, 1]
            for iq in range(ip, npl):
                qq = qp * q_sorted[iq]
                if qq * dmax < threshold:
                    break
                Q = order[iq]
                sc, sd = pair_shells[Q, 0], pair_shells[Q, 1]
                if qq * _quartet_dmax(dshell, sa, sb, sc, sd, with_j, with_k) < threshold:
                    continue
                na, nb, nc, nd = quartet_block_call(
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
                _digest(
                    out,
                    na,
                    nb,
                    nc,
                    nd,
                    ao_loc[sa],
                    ao_loc[sb],
                    ao_loc[sc],
                    ao_loc[sd],
                    _quartet_scale(sa, sb, sc, sd, P, Q),
                    dms,
                    jt,
                    kt,
                    with_j,
                    with_k,
                )
    return jbuf.sum(axis=0) if with_j else jbuf[0], kbuf.sum(axis=0) if with_k else kbuf[0]


def schwarz_order(schwarz):
    """Pairs with Q > 0 sorted by decreasing Q: (order int64, q_sorted float64)."""
    order = np.argsort(-schwarz, kind="stable")
    order = order[schwarz[order] > 0.0].astype(np.int64)
    return order, np.ascontiguousarray(schwarz[order])


def jk(basis, dms, with_j=True, with_k=True, threshold=1e-13, pairs=None, order=None, generated=None, omega=0.0):
    """Coulomb and exchange matrices of symmetric densities, direct (integral-free).

    basis: hartree Basis; dms: (nao, nao) or (nset, nao, nao), symmetric (not checked).
    threshold: Schwarz x density screening threshold (PySCF's direct_scf_tol), hartree.
    pairs: a prebuilt eri.ShellPairs; order: a prebuilt schwarz_order(pairs.schwarz).
    generated: use the unrolled per-class kernels of eri_codegen (same results to
    rounding); False runs the generic kernel only (the reference); None (default): True for
    1/r12, False for omega != 0, whose generated variant costs minutes of numba compile on a
    cold cache (measured: ~290 s against ~50 s for the generic driver on a loaded 2-core
    host) for ~35 % less time per build.
    omega (bohr^-1): 0 for 1/r12; > 0 the long-range operator erf(omega r12)/r12 (the
    attenuated variant of the generated module, compiled at its first use); < 0 the
    short-range erfc(|omega| r12)/r12 = 1/r12 - erf(|omega| r12)/r12 (PySCF's convention).
    The screening keeps the Schwarz factors of 1/r12, which bound both (the kernels
    erf(omega r)/r and erfc(omega r)/r are positive definite and below 1/r).
    Returns (J, K) with the shape of ``dms``; an unrequested matrix is None.
    """
    from hartree.integrals.eri import ShellPairs

    if pairs is None:
        pairs = ShellPairs.build(basis)
    if order is None:
        order = schwarz_order(pairs.schwarz)
    dms = np.asarray(dms, dtype=np.float64)
    single = dms.ndim == 2
    d3 = np.ascontiguousarray(dms[None] if single else dms)
    nao = basis.nao
    if d3.shape[1:] != (nao, nao):
        raise ValueError(f"density matrices must be ({nao}, {nao}), got {dms.shape}")
    if not (with_j or with_k):
        return None, None
    dshell = shell_dmax(d3, basis.ao_loc)
    omega = float(omega)
    if omega < 0.0:  # erfc = 1/r12 - erf
        jf, kf = jk(basis, dms, with_j, with_k, threshold, pairs, order, generated)
        jl, kl = jk(basis, dms, with_j, with_k, threshold, pairs, order, generated, -omega)
        return (None if jf is None else jf - jl), (None if kf is None else kf - kl)
    if generated is None:
        generated = omega == 0.0
    driver = load_module(attenuated=omega > 0.0).jk_direct_gen if generated else _jk_direct
    extra = (omega,) if omega > 0.0 or not generated else ()  # one compiled signature of _jk_direct
    a, b = driver(
        order[0],
        order[1],
        pairs.pair_shells,
        pairs.pair_start,
        pairs.pair_ab,
        pairs.pp,
        basis.shell_l,
        basis.ao_loc,
        basis.pure,
        pairs.c2s,
        pairs.lmax,
        d3,
        dshell,
        bool(with_j),
        bool(with_k),
        float(threshold),
        numba.get_num_threads(),
        pairs.rys_table,
        *extra,
    )
    out = []
    for flag, half in ((with_j, a), (with_k, b)):
        if not flag:
            out.append(None)
            continue
        m = half + half.transpose(0, 2, 1)
        out.append(m[0] if single else m)
    return out[0], out[1]
