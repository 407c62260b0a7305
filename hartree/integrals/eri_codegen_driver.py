"""Template of the J/K driver that the generated ERI module (eri_codegen.py) contains.

The text below is real Python appended to the generated kernels: numba resolves the
class dispatcher ``cart_block_gen`` as a global of that module, so the driver has to live
beside it.  It is the loop of jk._jk_direct, and takes the per-quartet rules from jk.py
itself (screening factor ``_quartet_dmax``, scale ``_quartet_scale``, digestion
``_digest``), so that a change to one of them reaches both drivers; the loop differs in
two ways:

* a quartet whose bra pair class is smaller than the ket's (or, for equal classes, whose
  bra has more primitive pairs) is swapped, (ab|cd) -> (cd|ab):
  the digestion of jk.py is symmetric under the swap (it yields J = A + A^T and
  K = B + B^T, and the swap only transposes the individual updates of A and B), so the
  generated kernels are needed for one bra/ket order only;
* the cartesian block comes from the generated kernel of its class when there is one,
  otherwise from the generic eri_kernel.cart_block; the cart -> spherical step is shared.

``{OMEGA}`` marks where the attenuated variant (erf(omega r12)/r12, eri_codegen's
``attenuated``) passes its argument ``omega`` on: :func:`driver_source` fills it in, with
nothing for the kernels of 1/r12 (whose text stays as it was).
"""

DRIVER_SOURCE = '''
import numpy as np

from hartree.integrals.eri_kernel import alloc_scratch, cart_block_call, spherical_
from hartree.integrals.jk import _digest, _quartet_dmax, _quartet_scale


@numba.njit(cache=True, inline="always")
def quartet_block_gen(P, Q, pair_shells, pair_start, pair_ab, pp, shell_l, pure, c2s,
                      roots, weights, g, coef, acc, h1, out, tmp, abpow, term_i, term_c,
                      rys_table{OMEGA}):
    """eri_kernel.quartet_block, through the generated kernel of the class when there is
    one (bra pair class >= ket pair class)."""
    la, lb = shell_l[pair_shells[P, 0]], shell_l[pair_shells[P, 1]]
    lc, ld = shell_l[pair_shells[Q, 0]], shell_l[pair_shells[Q, 1]]
    cid = (la * (la + 1) // 2 + lb) * 64 + lc * (lc + 1) // 2 + ld
    if cart_block_gen(cid, P, Q, pair_start, pp, pair_ab, out, roots, weights, rys_table{OMEGA}):
        na = (la + 1) * (la + 2) // 2
        nb = (lb + 1) * (lb + 2) // 2
        nc = (lc + 1) * (lc + 2) // 2
        nd = (ld + 1) * (ld + 2) // 2
    else:
        na, nb, nc, nd = cart_block_call(P, Q, pair_shells, pair_start, pair_ab, pp,
                                         shell_l, roots, weights, g, coef, acc, h1, out,
                                         abpow, term_i, term_c, rys_table{OMEGA})
    if not pure or (la < 2 and lc < 2):
        return na, nb, nc, nd
    return spherical_(out, tmp, la, lb, lc, ld, c2s)


@numba.njit(cache=True)
def quartet_block_gen_call(P, Q, pair_shells, pair_start, pair_ab, pp, shell_l, pure, c2s,
                           lmax, rys_table{OMEGA}):
    """One block (a copy) through quartet_block_gen, for tests."""
    (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c,
     coef) = alloc_scratch(lmax)
    na, nb, nc, nd = quartet_block_gen(P, Q, pair_shells, pair_start, pair_ab, pp, shell_l,
                                       pure, c2s, roots, weights, g, coef, acc, h1, out,
                                       tmp, abpow, term_i, term_c, rys_table{OMEGA})
    return out[:na * nb * nc * nd].copy().reshape((na, nb, nc, nd))


@numba.njit(parallel=True, cache=True)
def jk_direct_gen(order, q_sorted, pair_shells, pair_start, pair_ab, pp, shell_l, ao_loc,
                  pure, c2s, lmax, dms, dshell, with_j, with_k, threshold, nthreads,
                  rys_table{OMEGA}):
    """jk._jk_direct with the generated kernels: half matrices A, B (nset, nao, nao)."""
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
        (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c,
         coef) = alloc_scratch(lmax)
        ti = np.int64(t)
        jt = jbuf[min(ti, nj - 1)]
        kt = kbuf[min(ti, nk - 1)]
        for ip in range(ti, npl, nthreads):
            qp = q_sorted[ip]
            if qp * q_sorted[ip] * dmax < threshold:
                break      # Q sorted descending: no later pair can pass either
            P0 = order[ip]
            sa0, sb0 = pair_shells[P0, 0], pair_shells[P0, 1]
            cP = shell_l[sa0] * (shell_l[sa0] + 1) // 2 + shell_l[sb0]
            for iq in range(ip, npl):
                qq = qp * q_sorted[iq]
                if qq * dmax < threshold:
                    break
                Q0 = order[iq]
                sc0, sd0 = pair_shells[Q0, 0], pair_shells[Q0, 1]
                if qq * _quartet_dmax(dshell, sa0, sb0, sc0, sd0, with_j, with_k) < threshold:
                    continue
                cQ = shell_l[sc0] * (shell_l[sc0] + 1) // 2 + shell_l[sd0]
                # same class: the pair with more primitives goes to the ket, whose loop
                # is the inner, vectorised one
                if cP > cQ or (cP == cQ and pair_start[P0 + 1] - pair_start[P0]
                               <= pair_start[Q0 + 1] - pair_start[Q0]):
                    P, Q, sa, sb, sc, sd = P0, Q0, sa0, sb0, sc0, sd0
                else:
                    P, Q, sa, sb, sc, sd = Q0, P0, sc0, sd0, sa0, sb0
                na, nb, nc, nd = quartet_block_gen(P, Q, pair_shells, pair_start, pair_ab,
                                                   pp, shell_l, pure, c2s, roots, weights,
                                                   g, coef, acc, h1, out, tmp, abpow,
                                                   term_i, term_c, rys_table{OMEGA})
                _digest(out, na, nb, nc, nd, ao_loc[sa], ao_loc[sb], ao_loc[sc],
                        ao_loc[sd], _quartet_scale(sa, sb, sc, sd, P, Q), dms, jt, kt,
                        with_j, with_k)
    return jbuf.sum(axis=0) if with_j else jbuf[0], kbuf.sum(axis=0) if with_k else kbuf[0]
'''


def driver_source(attenuated=False):
    """DRIVER_SOURCE with ``{OMEGA}`` filled in: ', omega' for the attenuated variant."""
    return DRIVER_SOURCE.replace("{OMEGA}", ", omega" if attenuated else "")
