"""Electron-repulsion integrals (ab|cd) by Rys quadrature: public entry points.

    from hartree.integrals.eri import eri_full, ShellPairs
    pairs = ShellPairs.build(basis)       # shell-pair data + Schwarz factors, reusable
    g = eri_full(basis, pairs)            # (nao, nao, nao, nao), chemists' notation

The per-quartet kernel lives in eri_kernel.py, the shell-pair tables in eri_pairs.py,
direct J/K in jk.py.  Integrals are in hartree, in the final AO basis of ``basis``
(spherical when ``basis.pure``), with PySCF's AO order and normalisation.
"""

from dataclasses import dataclass

import numba
import numpy as np

from hartree.errors import BasisError
from hartree.integrals.eri_kernel import LMAX_ERI, alloc_scratch, quartet_block_call
from hartree.integrals.eri_pairs import build_shell_pairs, c2s_stack
from hartree.integrals.rys import rys_table_array


@dataclass(frozen=True)
class ShellPairs:
    """Shell-pair data of a basis, computed once and shared by eri_full and jk.

    Fields:
      pair_shells  int64 (npair, 2)      shells (a, b) of pair i(i+1)/2 + j, l_a >= l_b
      pair_start   int64 (npair+1,)      offsets into ``pp``
      pair_ab      float64 (npair, 3)    A - B, bohr
      pp           float64 (nprimpair, 8) primitive-pair table (see eri_pairs.py)
      schwarz      float64 (npair,)      Q_ab = sqrt(max |(ab|ab)|), hartree^(1/2)
      c2s          float64 (lmax+1, ncart, 2lmax+1) stacked cart2sph matrices
      lmax         int, largest l of the basis
      rys_table    one read-only float64 array, rys.rys_table_array() (passed down to the kernels)
    """

    pair_shells: np.ndarray
    pair_start: np.ndarray
    pair_ab: np.ndarray
    pp: np.ndarray
    schwarz: np.ndarray
    c2s: np.ndarray
    lmax: int
    rys_table: tuple

    @classmethod
    def build(cls, basis):
        """Precompute pair data and Schwarz factors for ``basis`` (a hartree Basis)."""
        lmax = int(basis.max_l) if basis.nshell else 0
        if lmax > LMAX_ERI:
            raise BasisError(f"ERIs support angular momentum up to l={LMAX_ERI}, basis has l={lmax}")
        pair_shells, pair_start, pair_ab, pp = build_shell_pairs(basis)
        c2s = c2s_stack(lmax)
        table = rys_table_array()
        schwarz = _schwarz(
            pair_shells, pair_start, pair_ab, pp, basis.shell_l, basis.pure, c2s, lmax, numba.get_num_threads(), table
        )
        return cls(pair_shells, pair_start, pair_ab, pp, schwarz, c2s, lmax, table)


@numba.njit(parallel=True, cache=True)
def _schwarz(pair_shells, pair_start, pair_ab, pp, shell_l, pure, c2s, lmax, nthreads, rys_table):
    """Q_P = sqrt(max_{ab} |(ab|ab)|) over the diagonal quartet (P|P) of every pair."""
    npair = pair_shells.shape[0]
    q = np.zeros(npair)
    for t in numba.prange(nthreads):
        (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c, coef) = alloc_scratch(lmax)
        for P in range(t, npair, nthreads):
            if pair_start[P + 1] == pair_start[P]:
                continue
            na, nb, nc, nd = quartet_block_call(
                P,
                P,
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
            )
            m = 0.0
            for k in range(na * nb * nc * nd):
                m = max(m, abs(out[k]))
            q[P] = np.sqrt(m)
    return q


@numba.njit(parallel=True, cache=True)
def _eri_full(pair_shells, pair_start, pair_ab, pp, shell_l, ao_loc, pure, c2s, lmax, nthreads, rys_table, omega):
    nao = ao_loc[-1]
    npair = pair_shells.shape[0]
    eri = np.zeros((nao, nao, nao, nao))
    for t in numba.prange(nthreads):
        (roots, weights, g, acc, h1, out, tmp, abpow, term_i, term_c, coef) = alloc_scratch(lmax)
        for P in range(t, npair, nthreads):
            oa, ob = ao_loc[pair_shells[P, 0]], ao_loc[pair_shells[P, 1]]
            for Q in range(P + 1):
                oc, od = ao_loc[pair_shells[Q, 0]], ao_loc[pair_shells[Q, 1]]
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
                k = 0
                for a in range(oa, oa + na):
                    for b in range(ob, ob + nb):
                        for c in range(oc, oc + nc):
                            for d in range(od, od + nd):
                                v = out[k]
                                k += 1
                                # 8-fold permutational symmetry (ab|cd) = (ba|cd) = ...
                                eri[a, b, c, d] = v
                                eri[b, a, c, d] = v
                                eri[a, b, d, c] = v
                                eri[b, a, d, c] = v
                                eri[c, d, a, b] = v
                                eri[d, c, a, b] = v
                                eri[c, d, b, a] = v
                                eri[d, c, b, a] = v
    return eri


def eri_full(basis, pairs=None, omega=0.0):
    """Full ERI tensor (mu nu|lambda sigma), shape (nao, nao, nao, nao), hartree.

    Chemists' notation, final AO basis of ``basis``.  Every unique shell quartet is
    computed once (no screening) and copied to its 8 symmetric images; meant for small
    systems and tests (memory nao^4 * 8 bytes).  ``pairs``: a ShellPairs to reuse.
    omega > 0 (bohr^-1): the integrals of erf(omega r12)/r12 instead.
    """
    if pairs is None:
        pairs = ShellPairs.build(basis)
    return _eri_full(
        pairs.pair_shells,
        pairs.pair_start,
        pairs.pair_ab,
        pairs.pp,
        basis.shell_l,
        basis.ao_loc,
        basis.pure,
        pairs.c2s,
        pairs.lmax,
        numba.get_num_threads(),
        pairs.rys_table,
        float(omega),
    )
