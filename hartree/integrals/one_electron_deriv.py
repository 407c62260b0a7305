"""First derivatives of the one-electron integrals, contracted with densities (numba).

The SCF gradient needs (Pople, Krishnan, Schlegel & Binkley, Int. J. Quantum Chem. Symp.
13, 225 (1979), eq. 9)

    dE_1/dX = sum_mn D_mn d<m|T + V|n>/dX - sum_mn W_mn d<m|n>/dX,

D the total density, W the energy-weighted density, both symmetric.  Differentiating a
cartesian Gaussian by its centre (Obara & Saika, J. Chem. Phys. 84, 3963 (1986), eq. 20)

    d/dA_x phi_a = 2 alpha phi_(a + 1_x) - a_x phi_(a - 1_x)                           (1)

turns every derivative into integrals of the existing kernels with l raised and lowered by
one (:func:`hartree.integrals.one_electron_kernels.prim_pair_accumulate` takes l as an
argument, and f(l) of the differentiated shell stays that of the original shell).  Because
the operators and densities are symmetric, sum_mn D_mn d<m|O|n> = 2 sum_mn D_mn <dm|O|n>:
only the bra is differentiated, over all ordered shell pairs.  The nuclear attraction also
moves with its nucleus C; translational invariance of <m| 1/|r - C| |n> gives

    d/dC <m|V_C|n> = -(d/dA + d/dB) <m|V_C|n>,                                         (2)

so each nucleus's term is computed once, added to the atom of the bra and subtracted from
the atom C (the Hellmann-Feynman part).  Densities are cartesian (``cart_loc`` order): a
spherical density D is handed in as T D T^T with T the cart->spherical blocks.
"""

import numba
import numpy as np

from hartree.integrals.gaussian_product import angular_factor, product_exponent
from hartree.integrals.one_electron import _basis_arrays, cart_xyz_table
from hartree.integrals.one_electron_kernels import (
    OP_KINETIC,
    OP_NUCLEAR,
    OP_OVERLAP,
    PRIM_CUTOFF,
    prim_pair_accumulate,
)
from hartree.integrals.rys import rys_table_array

#: largest l of a shell: the raised shell l + 1 must fit the tables of the kernels (l <= 6)
MAX_L_DERIV = 5


@numba.njit(cache=True, inline="always")
def _cart_index(lx, ly, lz):
    """Position of (lx, ly, lz) among the components of l = lx + ly + lz (PySCF order)."""
    l = lx + ly + lz
    return (l - lx) * (l - lx + 1) // 2 + lz


@numba.njit(cache=True)
def _bra_derivative_block(
    op, ish, jsh, ci, zi, shell_l, shell_nprim, shell_prim_start, shell_center, exponents, coefficients,
    cart_xyz, rys_table, s1d, t1d, rys_u, rys_w, rys1d, up, down, out,
):  # fmt: skip
    """<d m/dA|O|n> for shells ish (bra, centre A) and jsh, cartesian: out (3, nca, ncb).

    ``zi``, ``ci``: the charge (e) and position (3,) of the one nucleus of O = -Z/|r - C|
    (ignored by overlap and kinetic).  ``up``, ``down``: scratch for the raised and lowered
    blocks of eq. (1).
    """
    la, lb = shell_l[ish], shell_l[jsh]
    nca = (la + 1) * (la + 2) // 2
    ncb = (lb + 1) * (lb + 2) // 2
    ncu = (la + 2) * (la + 3) // 2
    ncd = la * (la + 1) // 2
    up[:, :ncu, :ncb] = 0.0
    down[:, :ncd, :ncb] = 0.0
    A = shell_center[ish]
    B = shell_center[jsh]
    rab2 = (A[0] - B[0]) ** 2 + (A[1] - B[1]) ** 2 + (A[2] - B[2]) ** 2
    norm = angular_factor(la) * angular_factor(lb)
    origin = np.zeros(3)
    charges = np.full(1, zi)
    coords = ci.reshape(1, 3)
    for pa in range(shell_prim_start[ish], shell_prim_start[ish] + shell_nprim[ish]):
        a = exponents[pa]
        for pb in range(shell_prim_start[jsh], shell_prim_start[jsh] + shell_nprim[jsh]):
            b = exponents[pb]
            if product_exponent(a, b, rab2) > PRIM_CUTOFF:
                continue
            scale = norm * coefficients[pa] * coefficients[pb]
            prim_pair_accumulate(
                op, la + 1, lb, a, b, A, B, 2.0 * a * scale, cart_xyz, origin, charges, coords, rys_table,
                s1d, t1d, rys_u, rys_w, rys1d, up,
            )  # fmt: skip
            if la > 0:
                prim_pair_accumulate(
                    op, la - 1, lb, a, b, A, B, scale, cart_xyz, origin, charges, coords, rys_table,
                    s1d, t1d, rys_u, rys_w, rys1d, down,
                )  # fmt: skip
    for ia in range(nca):
        ix, iy, iz = cart_xyz[la, ia, 0], cart_xyz[la, ia, 1], cart_xyz[la, ia, 2]
        for d in range(3):
            e = (ix + (d == 0), iy + (d == 1), iz + (d == 2))
            iu = _cart_index(e[0], e[1], e[2])
            n = (ix, iy, iz)[d]
            for ib in range(ncb):
                out[d, ia, ib] = up[0, iu, ib]
            if n > 0:
                idn = _cart_index(ix - (d == 0), iy - (d == 1), iz - (d == 2))
                for ib in range(ncb):
                    out[d, ia, ib] -= n * down[0, idn, ib]


@numba.njit(cache=True, inline="always")
def _contract(block, dm, oa, ob, nca, ncb):
    """(3,): sum_ab dm[oa + a, ob + b] block[:, a, b]."""
    g0 = 0.0
    g1 = 0.0
    g2 = 0.0
    for ia in range(nca):
        for ib in range(ncb):
            w = dm[oa + ia, ob + ib]
            g0 += w * block[0, ia, ib]
            g1 += w * block[1, ia, ib]
            g2 += w * block[2, ia, ib]
    return g0, g1, g2


@numba.njit(cache=True, parallel=True)
def _one_electron_gradient(
    shell_atom, shell_l, shell_nprim, shell_prim_start, shell_center, exponents, coefficients, cart_loc,
    dm, wdm, charges, coords, charge_atom, cart_xyz, rys_table, natm, nthreads,
):  # fmt: skip
    """Per-atom gradient (natm, 3) of the module docstring's dE_1/dX (cartesian densities)."""
    nshell = shell_l.shape[0]
    lmax = 0
    for i in range(nshell):
        lmax = max(lmax, shell_l[i])
    nc = (lmax + 1) * (lmax + 2) // 2
    ncu = (lmax + 2) * (lmax + 3) // 2
    nroots = (2 * lmax + 1) // 2 + 1
    buf = np.zeros((nthreads, natm, 3))
    zero = np.zeros(3)
    for t in numba.prange(nthreads):
        s1d = np.empty((3, lmax + 2, lmax + 3))
        t1d = np.empty((3, lmax + 2, lmax + 1))
        rys_u = np.empty(nroots)
        rys_w = np.empty(nroots)
        rys1d = np.empty((3, lmax + 2, lmax + 1, nroots))
        up = np.empty((1, ncu, nc))
        down = np.empty((1, nc, nc))
        blk = np.empty((3, nc, nc))
        g = buf[t]
        for ish in range(t, nshell, nthreads):
            ia = shell_atom[ish]
            oa = cart_loc[ish]
            nca = cart_loc[ish + 1] - oa
            for jsh in range(nshell):
                ob = cart_loc[jsh]
                ncb = cart_loc[jsh + 1] - ob
                args = (shell_l, shell_nprim, shell_prim_start, shell_center, exponents, coefficients, cart_xyz,
                        rys_table, s1d, t1d, rys_u, rys_w, rys1d, up, down, blk)  # fmt: skip
                # overlap with -W, kinetic with D: 2 sum_ab X_ab <da|O|b>
                _bra_derivative_block(OP_OVERLAP, ish, jsh, zero, 0.0, *args)
                s0, s1, s2 = _contract(blk, wdm, oa, ob, nca, ncb)
                _bra_derivative_block(OP_KINETIC, ish, jsh, zero, 0.0, *args)
                k0, k1, k2 = _contract(blk, dm, oa, ob, nca, ncb)
                g[ia, 0] += 2.0 * (k0 - s0)
                g[ia, 1] += 2.0 * (k1 - s1)
                g[ia, 2] += 2.0 * (k2 - s2)
                # nuclear attraction, one nucleus at a time: eq. (2)
                for c in range(charges.shape[0]):
                    if charges[c] == 0.0:
                        continue
                    _bra_derivative_block(OP_NUCLEAR, ish, jsh, coords[c], charges[c], *args)
                    v0, v1, v2 = _contract(blk, dm, oa, ob, nca, ncb)
                    ic = charge_atom[c]
                    g[ia, 0] += 2.0 * v0
                    g[ia, 1] += 2.0 * v1
                    g[ia, 2] += 2.0 * v2
                    if ic >= 0:
                        g[ic, 0] -= 2.0 * v0
                        g[ic, 1] -= 2.0 * v1
                        g[ic, 2] -= 2.0 * v2
    return buf.sum(axis=0)


def one_electron_gradient(basis, dm_cart, wdm_cart, charges, coords, charge_atom, natm):
    """Per-atom gradient of the one-electron energy, (natm, 3), hartree/bohr.

    basis: hartree Basis (shells on atoms ``basis.shell_atom``); dm_cart, wdm_cart: total
    and energy-weighted densities in the *cartesian* AO basis (ncart, ncart), symmetric;
    charges (ncharge,) in e at coords (ncharge, 3) bohr, the nuclei of the attraction
    operator; charge_atom (ncharge,): the atom each charge moves with (-1: a fixed
    external charge, whose own gradient is not asked for).
    """
    lmax = int(basis.max_l) if basis.nshell else 0
    if lmax > MAX_L_DERIV:
        raise ValueError(f"one-electron derivatives support l <= {MAX_L_DERIV}, basis has l = {lmax}")
    l_, nprim, start, centre, expo, coef = _basis_arrays(basis)
    return _one_electron_gradient(
        np.array(basis.shell_atom, dtype=np.int64), l_, nprim, start, centre, expo, coef,
        np.array(basis.cart_loc, dtype=np.int64),
        np.ascontiguousarray(dm_cart, dtype=np.float64), np.ascontiguousarray(wdm_cart, dtype=np.float64),
        np.array(charges, dtype=np.float64).reshape(-1), np.array(coords, dtype=np.float64).reshape(-1, 3),
        np.array(charge_atom, dtype=np.int64).reshape(-1), cart_xyz_table(), rys_table_array(), int(natm),
        numba.get_num_threads(),
    )  # fmt: skip
