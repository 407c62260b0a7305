"""First derivatives of the three-index (mn|P) and two-index (P|Q) Coulomb integrals,
contracted with a density-like tensor per atom and never stored (numba, CPU).

    grad3c(basis, aux, gamma)              -> (natm, 3)  sum_mnP Gamma_mnP d(mn|P)/dR_atom
    grad3c(basis, aux, gamma, (s0, s1))       the same for aux shells s0 <= s < s1 only
                                              (gamma (nao, nao, naux of the batch))
    grad2c(aux, gamma2)                    -> (natm, 3)  sum_PQ Gamma_PQ d(P|Q)/dR_atom

hartree/bohr times the units of Gamma; Gamma symmetric in m, n (and in P, Q), in the final
AO order of hartree.basis (spherical or cartesian per basis).  ``omega`` (bohr^-1, keyword of
both; the convention of :mod:`hartree.integrals.three_center`): 0 for 1/r12, > 0 for
erf(omega r12)/r12 (the kernels' attenuated quadrature, eq. (4) of
:mod:`hartree.integrals.three_center_kernels`, omega a run-time argument of the one compiled
kernel: eq. (1) below holds for any operator of r12), < 0 for erfc(|omega| r12)/r12 =
1/r12 - erf, computed as that difference.  natm: the molecule's atoms
(the largest ``shell_atom`` of either basis plus one, or ``natm`` when given).

Derivatives by the orbital centres A, B follow the Gaussian-exponent rule (Obara & Saika,
J. Chem. Phys. 84, 3963 (1986), eq. 20) applied to a cartesian primitive,

    d/dA_x (ab|P) = 2 alpha (a+1_x b|P) - a_x (a-1_x b|P),                            (1)

where the raised class (weights 2 alpha per primitive) and the lowered class are the
three-index integrals of :mod:`hartree.integrals.three_center_kernels` for a copy of the
orbital shells with l + 1 and coefficients times 2 alpha, and one with l - 1 (the same
primitive stage, transfer and spherical transformation, which read l from the shell tables;
the f(l) factor of cartesian s/p stays the original shell's).  The auxiliary centre C
follows by translational invariance, d/dC = -(d/dA + d/dB).  The two-index metric is
(P 1|Q) with the unit function (as :func:`hartree.integrals.three_center.int2c2e`): its
derivative by the centre of P is eq. (1) for the bra P, the unit function has none, and the
centre of Q takes minus that.  Because Gamma is symmetric in m, n the off-diagonal shell
pairs m > n are visited once and counted twice.
"""

import numba
import numpy as np

from hartree.errors import BasisError
from hartree.integrals import three_center_kernels as _k
from hartree.integrals.rys import MAX_NROOTS, rys_table_array
from hartree.integrals.three_center import _arrays, _c2s, _lmax, significant_pairs

__all__ = ["grad3c", "grad2c"]

#: largest l_m + l_n + l_P: the raised class needs one more (nroots = L // 2 + 1 <= MAX_NROOTS)
LTOT_MAX_DERIV = _k.LTOT_MAX - 1


def _augmented(basis_arrays):
    """Shell tables three times: as given, raised (l + 1, coefficients times 2 alpha), and
    lowered (l - 1; l = 0 kept at 0, never used); shell s + k nshell reads copy k."""
    l, ps, npr, cen, ex, co = basis_arrays
    nprim_total = ex.size
    return (
        np.concatenate([l, l + 1, np.maximum(l - 1, 0)]),
        np.concatenate([ps, ps + nprim_total, ps]),
        np.concatenate([npr, npr, npr]),
        np.ascontiguousarray(np.vstack([cen, cen, cen])),
        np.concatenate([ex, ex]),
        np.concatenate([co, 2.0 * ex * co]),
    )


@numba.njit(cache=True)
def _shifted(acc, cart, sa, sb, sc, la_, lb_, A, B, l3, ps3, np3, cen3, ex3, co3, xl, xps, xnp, xcen, xex, xco,
             rys_table, roots, weights, g, omega):  # fmt: skip
    """Cartesian (a'b'|c) of augmented shells (sa, sb) into cart[ia, ib, f] of 1/r12 (omega = 0)
    or erf(omega r12)/r12 (omega > 0, bohr^-1); returns nf."""
    _ne, nf = _k._primitive_sum(
        sa, sb, sc, l3, ps3, np3, cen3, ex3, co3, xl, xps, xnp, xcen, xex, xco, rys_table, roots, weights, g, acc, omega
    )
    _k._hrr(la_, lb_, A, B, acc, nf, cart)
    return nf


@numba.njit(cache=True)
def _rule(up, dn, lx, x, side, nother, nf, der):
    """Eq. (1) in direction x on index ``side`` (0: a, 1: b) of shell l = lx:
    der[.., i, ..] = up[.., i + 1_x, ..] - i_x dn[.., i - 1_x, ..] (cartesian blocks)."""
    e0 = _k.CART_START[lx]
    for i in range((lx + 1) * (lx + 2) // 2):
        cx, cy, cz = _k.CART[e0 + i, 0], _k.CART[e0 + i, 1], _k.CART[e0 + i, 2]
        iu = _k._cart_index(cx + (x == 0), cy + (x == 1), cz + (x == 2)) - _k.CART_START[lx + 1]
        ni = cx if x == 0 else (cy if x == 1 else cz)
        idn = 0
        if ni > 0:
            idn = _k._cart_index(cx - (x == 0), cy - (x == 1), cz - (x == 2)) - _k.CART_START[lx - 1]
        for o in range(nother):
            for f in range(nf):
                if side == 0:
                    v = up[iu, o, f]
                    if ni > 0:
                        v -= ni * dn[idn, o, f]
                    der[i, o, f] = v
                else:
                    v = up[o, iu, f]
                    if ni > 0:
                        v -= ni * dn[o, idn, f]
                    der[o, i, f] = v


@numba.njit(cache=True, parallel=True)
def _grad3c_kernel(pairs, pair_off, pair_sym, nshell, shell_atom, l3, ps3, np3, cen3, ex3, co3, xl, xps, xnp, xcen,
                   xex, xco, xloc, xatom, c0, c1, pure_ab, pure_c, deriv_b, c2s, rys_table, gamma, natm,
                   nthreads, omega):  # fmt: skip
    """Per-atom sum Gamma d(ab|c)/dR, (natm, 3): eq. (1) for A and (when deriv_b) B, C by
    translational invariance; threads over the bra pairs (costliest first, round robin); omega
    (bohr^-1) >= 0, a run-time argument: the operator of :func:`_shifted`."""
    lmax = 0
    for s in range(nshell):
        lmax = max(lmax, l3[s])
    xlmax = 0
    for s in range(c0, c1):
        xlmax = max(xlmax, xl[s])
    nce = _k.CART_START[2 * lmax + 2]
    ncx = (xlmax + 1) * (xlmax + 2) // 2
    nca = (lmax + 1) * (lmax + 2) // 2
    ncu = (lmax + 2) * (lmax + 3) // 2
    buf = np.zeros((nthreads, natm, 3))
    npair = pairs.shape[0]
    for t in numba.prange(nthreads):
        roots = np.empty(MAX_NROOTS)
        weights = np.empty(MAX_NROOTS)
        g = np.empty((3, 2 * lmax + 2, xlmax + 1))
        acc = np.empty((nce, ncx))
        up = np.empty((ncu, ncu, ncx))
        dn = np.empty((ncu, ncu, ncx))
        der = np.empty((nca, nca, ncx))
        fin = np.empty((nca, nca, ncx))
        sums = np.zeros((2, 3))
        grad = buf[t]
        for p in range(t, npair, nthreads):
            sa, sb = pairs[p, 0], pairs[p, 1]
            la, lb = l3[sa], l3[sb]
            A, B = cen3[sa], cen3[sb]
            na = (la + 1) * (la + 2) // 2
            nb = (lb + 1) * (lb + 2) // 2
            i0, j0 = pair_off[p, 0], pair_off[p, 1]
            w = 2.0 if pair_sym[p] else 1.0
            for sc in range(c0, c1):
                lc = xl[sc]
                k0 = xloc[sc] - xloc[c0]
                for side in range(2 if deriv_b else 1):
                    lx = la if side == 0 else lb
                    if side == 0:
                        nf = _shifted(acc, up, sa + nshell, sb, sc, la + 1, lb, A, B, l3, ps3, np3, cen3, ex3, co3,
                                      xl, xps, xnp, xcen, xex, xco, rys_table, roots, weights, g, omega)  # fmt: skip
                        if la > 0:
                            _shifted(acc, dn, sa + 2 * nshell, sb, sc, la - 1, lb, A, B, l3, ps3, np3, cen3, ex3,
                                     co3, xl, xps, xnp, xcen, xex, xco, rys_table, roots, weights, g,
                                     omega)  # fmt: skip
                    else:
                        nf = _shifted(acc, up, sa, sb + nshell, sc, la, lb + 1, A, B, l3, ps3, np3, cen3, ex3, co3,
                                      xl, xps, xnp, xcen, xex, xco, rys_table, roots, weights, g, omega)  # fmt: skip
                        if lb > 0:
                            _shifted(acc, dn, sa, sb + 2 * nshell, sc, la, lb - 1, A, B, l3, ps3, np3, cen3, ex3,
                                     co3, xl, xps, xnp, xcen, xex, xco, rys_table, roots, weights, g,
                                     omega)  # fmt: skip
                    for x in range(3):
                        _rule(up, dn, lx, x, side, nb if side == 0 else na, nf, der)
                        ma, mb, mc = _k._to_final(der, na, nb, nf, la, lb, lc, pure_ab, pure_c, c2s, fin)
                        s = 0.0
                        for i in range(ma):
                            for j in range(mb):
                                for k in range(mc):
                                    s += fin[i, j, k] * gamma[i0 + i, j0 + j, k0 + k]
                        sums[side, x] = w * s
                ia, ib, ic = shell_atom[sa], shell_atom[sb], xatom[sc]
                for x in range(3):
                    sb_x = sums[1, x] if deriv_b else 0.0
                    grad[ia, x] += sums[0, x]
                    if deriv_b:
                        grad[ib, x] += sb_x
                    grad[ic, x] -= sums[0, x] + sb_x
    return buf.sum(axis=0)


def _natm(*bases, natm=None):
    if natm is not None:
        return int(natm)
    return 1 + max(int(np.max(b.shell_atom)) if b.nshell else -1 for b in bases)


def grad3c(basis, aux, gamma, aux_shells=None, natm=None, screening=1e-14, omega=0.0):
    """sum_mnP Gamma_mnP d(mn|P)/dR per atom, (natm, 3), hartree/bohr (module docstring).

    gamma: (nao, nao, naux_batch) float64, symmetric in m, n, over the aux functions of
    aux shells ``aux_shells`` = (s0, s1) (default: all); screening: shell pairs below this
    product-overlap bound (:func:`hartree.integrals.three_center.significant_pairs`) are
    skipped, as for the integrals themselves; omega (bohr^-1): the operator (module docstring).
    """
    omega = float(omega)
    if omega < 0.0:  # erfc = 1/r12 - erf
        return grad3c(basis, aux, gamma, aux_shells, natm, screening) - grad3c(
            basis, aux, gamma, aux_shells, natm, screening, -omega
        )
    s0, s1 = (0, aux.nshell) if aux_shells is None else (int(aux_shells[0]), int(aux_shells[1]))
    if not 0 <= s0 <= s1 <= aux.nshell:
        raise ValueError(f"aux_shells {aux_shells} outside 0..{aux.nshell}")
    if 2 * _lmax(basis) + _lmax(aux) > LTOT_MAX_DERIV:
        raise BasisError(f"three-index derivatives support l_m + l_n + l_P <= {LTOT_MAX_DERIV}")
    loc = np.asarray(basis.ao_loc, dtype=np.int64)
    xloc = np.asarray(aux.ao_loc, dtype=np.int64)
    nao, nx = int(loc[-1]), int(xloc[s1] - xloc[s0])
    gamma = np.ascontiguousarray(gamma, dtype=np.float64)
    if gamma.shape != (nao, nao, nx):
        raise ValueError(f"gamma must have shape {(nao, nao, nx)}, got {gamma.shape}")
    natm = _natm(basis, aux, natm=natm)
    if nx == 0 or nao == 0:
        return np.zeros((natm, 3))
    pairs = significant_pairs(basis, screening)
    return _grad3c_kernel(
        pairs, np.ascontiguousarray(loc[pairs]), pairs[:, 0] != pairs[:, 1], int(basis.nshell),
        np.array(basis.shell_atom, dtype=np.int64), *_augmented(_arrays(basis)), *_arrays(aux), xloc,
        np.array(aux.shell_atom, dtype=np.int64), s0, s1, bool(basis.pure), bool(aux.pure), True,
        _c2s(max(_lmax(basis), _lmax(aux)) + 1), rys_table_array(), gamma, natm, numba.get_num_threads(), omega,
    )  # fmt: skip


def grad2c(aux, gamma2, natm=None, omega=0.0):
    """sum_PQ Gamma_PQ d(P|Q)/dR per atom, (natm, 3), hartree/bohr; gamma2 (naux, naux)
    float64, symmetric (module docstring: the bra of (P 1|Q) differentiated, Q's centre by
    translational invariance); omega (bohr^-1): the operator (module docstring)."""
    omega = float(omega)
    if omega < 0.0:  # erfc = 1/r12 - erf
        return grad2c(aux, gamma2, natm) - grad2c(aux, gamma2, natm, -omega)
    if 2 * _lmax(aux) > LTOT_MAX_DERIV:
        raise BasisError(f"two-index derivatives support l_P + l_Q <= {LTOT_MAX_DERIV}")
    naux = int(aux.nao)
    gamma2 = np.ascontiguousarray(gamma2, dtype=np.float64)
    if gamma2.shape != (naux, naux):
        raise ValueError(f"gamma2 must have shape {(naux, naux)}, got {gamma2.shape}")
    natm = _natm(aux, natm=natm)
    if naux == 0:
        return np.zeros((natm, 3))
    l, ps, npr, cen, ex, co = _arrays(aux)
    n = aux.nshell
    bra = (  # the aux shells and the unit function (s, exponent 0, coefficient 1/f(0)) at the end
        np.append(l, 0), np.append(ps, ex.size), np.append(npr, 1), np.vstack([cen, np.zeros((1, 3))]),
        np.append(ex, 0.0), np.append(co, 1.0 / _k.FL[0]),
    )  # fmt: skip
    xloc = np.asarray(aux.ao_loc, dtype=np.int64)
    pairs = np.ascontiguousarray(np.stack([np.arange(n), np.full(n, n)], axis=1), dtype=np.int64)
    pair_off = np.ascontiguousarray(np.stack([xloc[:-1], np.zeros(n, dtype=np.int64)], axis=1))
    atoms = np.array(aux.shell_atom, dtype=np.int64)
    return _grad3c_kernel(
        pairs, pair_off, np.zeros(n, dtype=np.bool_), n + 1, np.append(atoms, 0), *_augmented(bra),
        l, ps, npr, cen, ex, co, xloc, atoms, 0, n, bool(aux.pure), bool(aux.pure), False,
        _c2s(_lmax(aux) + 1), rys_table_array(), gamma2.reshape(naux, 1, naux), natm, numba.get_num_threads(),
        omega,
    )  # fmt: skip
