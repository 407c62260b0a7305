"""Three-index (mu nu|P) and two-index (P|Q) Coulomb integrals for density fitting / RI.

    int3c2e(basis, aux)                    -> (nao, nao, naux)   (mu nu|P), hartree
    int3c2e(basis, aux, aux_shells=(s0, s1))  only aux shells s0 <= s < s1 (batching)
    int2c2e(aux)                           -> (naux, naux)       (P|Q), hartree
    int3c2e(..., omega=w), int2c2e(aux, omega=w)   the same of an attenuated operator
    aux_shell_batches(aux, max_functions)  -> [(s0, s1), ...] aux-shell ranges of bounded size
    mo_int3c2e(basis, aux, [(C_occ, C_vir), ...], memory_mb) -> [(no, nv, naux), ...]  (ia|P)

(mu nu|P) = int int mu(r1) nu(r1) P(r2) / |r1 - r2| dr1 dr2, equal to PySCF's
``df.incore.aux_e2(mol, auxmol, 'int3c2e')`` and ``auxmol.intor('int2c2e')`` for the same basis
data (AO order of hartree.basis, spherical or cartesian per basis).  Rys quadrature as
specified in three_center_kernels.py; total angular momentum l_mu + l_nu + l_P up to
LTOT_MAX = 26 (MAX_NROOTS = 14 roots), e.g. g orbital shells with i auxiliary shells.

omega (bohr^-1), PySCF's convention (``mol.with_range_coulomb(omega)``, equal to its integrals
there): 0 for 1/|r1 - r2|; > 0 for erf(omega |r1 - r2|)/|r1 - r2| (the kernels' eq. (4), omega a
run-time argument of the one compiled kernel); < 0 for erfc(|omega| |r1 - r2|)/|r1 - r2| =
1/|r1 - r2| - erf(|omega| |r1 - r2|)/|r1 - r2|, computed as that difference (absolute error
~1e-16 of the 1/r12 integral; the range-separated fits of :mod:`hartree.df.range_separated`).
"""

import numpy as np

from hartree.errors import BasisError
from hartree.integrals import three_center_kernels as _k
from hartree.integrals.one_electron import cart2sph_table
from hartree.integrals.rys import rys_table_array

__all__ = ["int3c2e", "int2c2e", "mo_int3c2e", "aux_shell_batches", "significant_pairs"]


def _arrays(basis):
    """Writable contiguous copies of the kernel's per-shell arrays (one numba signature)."""
    return (
        np.array(basis.shell_l, dtype=np.int64),
        np.array(basis.shell_prim_start, dtype=np.int64),
        np.array(basis.shell_nprim, dtype=np.int64),
        np.array(basis.shell_center, dtype=np.float64).reshape(-1, 3),
        np.array(basis.exponents, dtype=np.float64),
        np.array(basis.coefficients, dtype=np.float64),
    )


def _lmax(basis):
    return int(np.max(basis.shell_l)) if basis.nshell else 0


def _check(bra_lmax2, aux):
    if bra_lmax2 + _lmax(aux) > _k.LTOT_MAX:
        raise BasisError(
            f"three-index integrals support l_mu + l_nu + l_P <= {_k.LTOT_MAX}; "
            f"this basis pair needs {bra_lmax2 + _lmax(aux)}"
        )


def _c2s(lmax):
    return np.ascontiguousarray(cart2sph_table(max(lmax, 1)), dtype=np.float64)


def aux_shell_batches(aux, max_functions):
    """Contiguous aux-shell ranges [(s0, s1), ...] holding at most ``max_functions`` AOs each
    (a single shell larger than that forms its own batch)."""
    loc = np.asarray(aux.ao_loc)
    batches, s0 = [], 0
    for s in range(1, aux.nshell + 1):
        if loc[s] - loc[s0] > max_functions and s - 1 > s0:
            batches.append((s0, s - 1))
            s0 = s - 1
    if s0 < aux.nshell:
        batches.append((s0, aux.nshell))
    return batches


def significant_pairs(basis, threshold=1e-14):
    """Shell pairs (i >= j) whose largest primitive prefactor
    max_pq |c_p c_q| exp(-a_p a_q / (a_p + a_q) |A - B|^2) exceeds ``threshold``
    (Gaussian product overlap screening), int64 (npair, 2), costliest first."""
    ii, jj = np.tril_indices(basis.nshell)
    if threshold > 0 and ii.size:
        e, c = np.asarray(basis.exponents), np.abs(np.asarray(basis.coefficients))
        start, nprim = np.asarray(basis.shell_prim_start), np.asarray(basis.shell_nprim)
        # per shell: the most diffuse exponent and the largest |coefficient| bound the
        # product (a_p a_q / (a_p + a_q) grows with both exponents)
        amin = np.array([e[s : s + n].min() for s, n in zip(start, nprim)])
        cmax = np.array([c[s : s + n].max() for s, n in zip(start, nprim)])
        cen = np.asarray(basis.shell_center)
        r2 = np.sum((cen[ii] - cen[jj]) ** 2, axis=1)
        mu = amin[ii] * amin[jj] / (amin[ii] + amin[jj])
        keep = cmax[ii] * cmax[jj] * np.exp(-mu * r2) > threshold
        ii, jj = ii[keep], jj[keep]
    cost = (np.asarray(basis.shell_l) + 1) * np.asarray(basis.shell_nprim)
    order = np.argsort(-(cost[ii] * cost[jj]), kind="stable")
    return np.ascontiguousarray(np.stack([ii, jj], axis=1)[order], dtype=np.int64)


def int3c2e(basis, aux, aux_shells=None, out=None, screening=1e-14, omega=0.0):
    """(mu nu|P) for orbital basis ``basis`` and auxiliary basis ``aux`` (hartree.basis.Basis,
    same molecule), shape (nao, nao, naux_batch), float64, hartree.

    aux_shells: optional (s0, s1) restricting P to aux shells s0 <= s < s1 (its AOs
    aux.ao_loc[s0]:aux.ao_loc[s1]); out: optional preallocated C-contiguous array to fill;
    screening: shell pairs below this product-overlap bound (significant_pairs) are left
    zero (0 computes every pair); omega (bohr^-1): the operator (module docstring).
    """
    omega = float(omega)
    if omega < 0.0:  # erfc = 1/r12 - erf
        out = int3c2e(basis, aux, aux_shells, out, screening)
        out -= int3c2e(basis, aux, aux_shells, None, screening, -omega)
        return out
    s0, s1 = (0, aux.nshell) if aux_shells is None else (int(aux_shells[0]), int(aux_shells[1]))
    if not 0 <= s0 <= s1 <= aux.nshell:
        raise ValueError(f"aux_shells {aux_shells} outside 0..{aux.nshell}")
    _check(2 * _lmax(basis), aux)
    loc = np.asarray(basis.ao_loc, dtype=np.int64)
    xloc = np.asarray(aux.ao_loc, dtype=np.int64)
    nao = int(loc[-1])
    nx = int(xloc[s1] - xloc[s0])
    if out is None:
        out = np.zeros((nao, nao, nx))
    elif out.shape != (nao, nao, nx) or not out.flags.c_contiguous:
        raise ValueError(f"out must be C-contiguous with shape {(nao, nao, nx)}")
    else:
        out[...] = 0.0
    if nx == 0 or nao == 0:
        return out
    pairs = significant_pairs(basis, screening)  # i >= j, costliest first (load balance)
    pair_off = np.ascontiguousarray(loc[pairs], dtype=np.int64)
    pair_sym = pairs[:, 0] != pairs[:, 1]
    lmax = max(_lmax(basis), _lmax(aux))
    _k.int3c_kernel(
        pairs,
        pair_off,
        pair_sym,
        *_arrays(basis),
        *_arrays(aux),
        xloc,
        s0,
        s1,
        bool(basis.pure),
        bool(aux.pure),
        _c2s(lmax),
        rys_table_array(),
        omega,
        out,
    )
    return out


def int2c2e(aux, omega=0.0):
    """(P|Q) Coulomb metric of the auxiliary basis, (naux, naux) float64, hartree; omega
    (bohr^-1): the operator (module docstring).

    Computed as (P 1|Q) with the unit function 1 (s, exponent 0, coefficient sqrt(4 pi) to
    cancel the s-function factor f(0)) appended to the bra shells.
    """
    omega = float(omega)
    if omega < 0.0:  # erfc = 1/r12 - erf
        return int2c2e(aux) - int2c2e(aux, -omega)
    lmax = _lmax(aux)
    if 2 * lmax > _k.LTOT_MAX:
        raise BasisError(f"two-index integrals support l_P + l_Q <= {_k.LTOT_MAX}")
    l, ps, npr, cen, ex, co = _arrays(aux)
    n = aux.nshell
    l_b = np.append(l, 0)
    ps_b = np.append(ps, ex.size)
    npr_b = np.append(npr, 1)
    cen_b = np.vstack([cen, np.zeros((1, 3))])
    ex_b = np.append(ex, 0.0)
    co_b = np.append(co, 1.0 / _k.FL[0])
    xloc = np.asarray(aux.ao_loc, dtype=np.int64)
    naux = int(xloc[-1])
    pairs = np.ascontiguousarray(np.stack([np.arange(n), np.full(n, n)], axis=1), dtype=np.int64)
    pair_off = np.ascontiguousarray(np.stack([xloc[:-1], np.zeros(n, dtype=np.int64)], axis=1))
    out = np.empty((naux, 1, naux))
    if naux == 0:
        return out.reshape(0, 0)
    _k.int3c_kernel(
        pairs,
        pair_off,
        np.zeros(n, dtype=np.bool_),
        l_b,
        ps_b,
        npr_b,
        cen_b,
        ex_b,
        co_b,
        l,
        ps,
        npr,
        cen,
        ex,
        co,
        xloc,
        0,
        n,
        bool(aux.pure),
        bool(aux.pure),
        _c2s(lmax),
        rys_table_array(),
        omega,
        out,
    )
    out = out.reshape(naux, naux)
    return 0.5 * (out + out.T)


def mo_int3c2e(basis, aux, orbital_pairs, memory_mb=2000.0, screening=1e-14, out=None):
    """(ia|P) = sum_mu,nu C_mu,i C'_nu,a (mu nu|P) for each (C (nao, ni), C' (nao, na)) in
    ``orbital_pairs``: a list of (ni, na, naux) float64 arrays, hartree.

    (mu nu|P) is computed in aux-shell batches of at most ``memory_mb`` MB and transformed
    batch by batch, so the AO tensor never exists whole.  out: optional list of 2-D
    array-likes (ni*na, naux) supporting slice assignment (e.g. h5py datasets on disk) to
    write into instead; they are returned as given.
    """
    nao = basis.nao
    per_aux = max(nao * nao * 8 / 1e6, 1e-12)  # MB per aux function of (mu nu|P)
    batches = aux_shell_batches(aux, max(1, int(memory_mb / per_aux)))
    if out is None:
        arrays = [np.empty((c1.shape[1], c2.shape[1], aux.nao)) for c1, c2 in orbital_pairs]
        dests = [x.reshape(-1, aux.nao) for x in arrays]
    else:
        arrays = dests = list(out)
    loc = np.asarray(aux.ao_loc)
    for s0, s1 in batches:
        j3 = int3c2e(basis, aux, (s0, s1), screening=screening)  # (nao, nao, nb)
        for (c1, c2), dst in zip(orbital_pairs, dests):
            half = np.tensordot(c1, j3, axes=(0, 0))  # (ni, nao, nb)
            blk = np.einsum("nb,inP->ibP", c2, half, optimize=True)
            if blk.size:
                dst[:, loc[s0] : loc[s1]] = blk.reshape(-1, blk.shape[2])
    return arrays
