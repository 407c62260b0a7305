"""Numba kernels for the one-electron integrals (overlap, kinetic, nuclear, dipole).

Everything here works on the flat shell arrays of :class:`hartree.basis.Basis` and is
called by :mod:`hartree.integrals.one_electron`, which holds the public API.

Method
------
A cartesian Gaussian on centre A is ``(x-Ax)^i (y-Ay)^j (z-Az)^k exp(-a r_A^2)``.  The
product of two primitives (exponents a, b) is a Gaussian on
``P = (a A + b B) / p`` with ``p = a + b`` times ``K_AB = exp(-mu |A-B|^2)``,
``mu = a b / p`` (Gaussian product theorem).

* Overlap, kinetic and multipole integrals factor into 1-D integrals per cartesian
  direction; the 1-D overlaps follow the Obara-Saika recurrences
  (Obara & Saika, J. Chem. Phys. 84, 3963 (1986), overlap recurrence in 1-D form)::

      S_{i+1,j} = X_PA S_{ij} + (i S_{i-1,j} + j S_{i,j-1}) / (2p)
      S_{i,j+1} = X_PB S_{ij} + (i S_{i-1,j} + j S_{i,j-1}) / (2p)

  with ``S_00 = 1``; the common factor ``(pi/p)^{3/2} K_AB`` is applied once.
* Kinetic energy: differentiating the ket twice gives (equivalent to O&S 1986's
  kinetic recurrence)
  ``T_ij = b (2j+1) S_ij - 2 b^2 S_{i,j+2} - j (j-1)/2 S_{i,j-2}`` and
  ``T = Tx Sy Sz + Sx Ty Sz + Sx Sy Tz``.
* Dipole about C: ``x - Cx = (x - Bx) + (Bx - Cx)`` so
  ``<i| x - Cx |j> = S_{i,j+1} + X_BC S_ij``.
* Nuclear attraction to a point charge Z at C: Rys quadrature (Dupuis, Rys & King,
  J. Chem. Phys. 65, 111 (1976); King & Dupuis, J. Comput. Phys. 21, 144 (1976))::

      <a| 1/|r-C| |b> = (2 pi / p) K_AB  sum_r  w_r  Ix(u_r) Iy(u_r) Iz(u_r)

  with ``T = p |P-C|^2``, roots ``u_r = t_r^2`` and weights from
  :func:`hartree.integrals.rys.rys_roots_weights` (``n = (la+lb)//2 + 1`` roots, exact
  since the integrand is a polynomial of degree <= (la+lb)//2 in ``u``).  The 1-D
  factors obey the same two-index recurrence as the overlap with the shifted
  displacements ``X_PA - u X_PC``, ``X_PB - u X_PC`` and ``(1-u)/(2p)`` in place of
  ``1/(2p)`` (the Rys-polynomial form of O&S 1986's nuclear-attraction recurrence),
  starting from ``I_00 = 1``.

Normalisation (PySCF / libcint convention): the coefficients in the basis already hold
the radial normalisation of each primitive; a cartesian function additionally carries
``f(0) = 1/sqrt(4 pi)``, ``f(1) = sqrt(3/(4 pi))``, ``f(l>=2) = 1``.
"""

import math

import numba
import numpy as np

from hartree.integrals.gaussian_product import angular_factor, product_centre, product_exponent
from hartree.integrals.rys import rys_roots_weights

OP_OVERLAP = 0
OP_KINETIC = 1
OP_NUCLEAR = 2
OP_DIPOLE = 3

# Primitive pairs with mu |A-B|^2 above this are skipped: exp(-60) ~ 1e-26 relative.
PRIM_CUTOFF = 60.0


@numba.njit(cache=True)
def ncomp_of(op):
    """Number of operator components produced for operator code ``op``."""
    if op == OP_DIPOLE:
        return 3
    return 1


@numba.njit(cache=True)
def os_table_1d(imax, jmax, xpa, xpb, half_inv_p, out):
    """Fill ``out[:imax+1, :jmax+1]`` with 1-D Obara-Saika overlap-type integrals.

    ``out[i, j]`` relative to ``out[0, 0] = 1``; ``xpa = P - A``, ``xpb = P - B`` (bohr),
    ``half_inv_p = 1/(2p)`` (bohr^2).  With shifted arguments (Rys form) the same
    recurrence gives the nuclear-attraction polynomials.
    """
    for j in range(jmax + 1):
        for i in range(imax + 1):
            if j == 0:
                if i == 0:
                    v = 1.0
                else:
                    # S_{i,0} = X_PA S_{i-1,0} + (i-1)/(2p) S_{i-2,0}
                    v = xpa * out[i - 1, 0]
                    if i >= 2:
                        v += (i - 1) * half_inv_p * out[i - 2, 0]
            else:
                # S_{i,j} = X_PB S_{i,j-1} + (i S_{i-1,j-1} + (j-1) S_{i,j-2}) / (2p)
                v = xpb * out[i, j - 1]
                if i >= 1:
                    v += i * half_inv_p * out[i - 1, j - 1]
                if j >= 2:
                    v += (j - 1) * half_inv_p * out[i, j - 2]
            out[i, j] = v


@numba.njit(cache=True)
def prim_pair_accumulate(
    op, la, lb, a, b, A, B, scale, cart_xyz, origin, charges, coords, rys_table, s1d, t1d, rys_u, rys_w, rys1d, block
):
    """Add one primitive pair's integrals, times ``scale``, to the cartesian ``block``.

    Shapes: ``A``, ``B``, ``origin`` (3,), bohr; ``cart_xyz`` (lmax+1, ncart_max, 3)
    exponents of each cartesian component; ``charges`` (ncharge,), ``coords``
    (ncharge, 3) bohr; ``rys_table`` from :func:`hartree.integrals.rys.rys_table_array`;
    ``block`` (ncomp, ncart(la), ncart(lb)).  ``s1d``, ``t1d``,
    ``rys1d``, ``rys_u``, ``rys_w`` are scratch arrays large enough for ``la``, ``lb``.
    """
    p = a + b
    half_inv_p = 0.5 / p
    nca = (la + 1) * (la + 2) // 2
    ncb = (lb + 1) * (lb + 2) // 2
    # Gaussian product centre (a tuple: no allocation per primitive pair)
    P = (product_centre(a, b, A[0], B[0]), product_centre(a, b, A[1], B[1]), product_centre(a, b, A[2], B[2]))
    rab2 = (A[0] - B[0]) ** 2 + (A[1] - B[1]) ** 2 + (A[2] - B[2]) ** 2
    kab = math.exp(-product_exponent(a, b, rab2))

    if op == OP_NUCLEAR:
        nroots = (la + lb) // 2 + 1
        pref = scale * 2.0 * math.pi / p * kab
        for c in range(charges.shape[0]):
            zc = charges[c]
            if zc == 0.0:
                continue
            T = 0.0
            for d in range(3):
                T += (P[d] - coords[c, d]) ** 2
            T *= p
            rys_roots_weights(nroots, T, rys_u, rys_w, rys_table)
            # V = -Z (2 pi/p) K_AB sum_r w_r Ix Iy Iz; the factor -Z (2 pi/p) K_AB w_r is
            # folded into Ix.  rys1d[d, i, j, r] keeps the roots contiguous.
            f = -zc * pref
            for r in range(nroots):
                u = rys_u[r]
                for d in range(3):
                    xpc = P[d] - coords[c, d]
                    tab = s1d[d]
                    os_table_1d(la, lb, P[d] - A[d] - u * xpc, P[d] - B[d] - u * xpc, (1.0 - u) * half_inv_p, tab)
                    g = f * rys_w[r] if d == 0 else 1.0
                    for i in range(la + 1):
                        for j in range(lb + 1):
                            rys1d[d, i, j, r] = g * tab[i, j]
            for ia in range(nca):
                ix, iy, iz = cart_xyz[la, ia, 0], cart_xyz[la, ia, 1], cart_xyz[la, ia, 2]
                for ib in range(ncb):
                    jx, jy, jz = cart_xyz[lb, ib, 0], cart_xyz[lb, ib, 1], cart_xyz[lb, ib, 2]
                    acc = 0.0
                    for r in range(nroots):
                        acc += rys1d[0, ix, jx, r] * rys1d[1, iy, jy, r] * rys1d[2, iz, jz, r]
                    block[0, ia, ib] += acc
        return

    # Overlap-type operators: 1-D tables with j up to lb + 2 (kinetic) or lb + 1 (dipole)
    jextra = 2 if op == OP_KINETIC else (1 if op == OP_DIPOLE else 0)
    for d in range(3):
        os_table_1d(la, lb + jextra, P[d] - A[d], P[d] - B[d], half_inv_p, s1d[d])
    pref = scale * (math.pi / p) ** 1.5 * kab

    if op == OP_KINETIC:
        # T_ij = b (2j+1) S_ij - 2 b^2 S_{i,j+2} - j (j-1)/2 S_{i,j-2}
        for d in range(3):
            for i in range(la + 1):
                for j in range(lb + 1):
                    v = b * (2 * j + 1) * s1d[d, i, j] - 2.0 * b * b * s1d[d, i, j + 2]
                    if j >= 2:
                        v -= 0.5 * j * (j - 1) * s1d[d, i, j - 2]
                    t1d[d, i, j] = v
    elif op == OP_DIPOLE:
        # <i| x - C |j> = S_{i,j+1} + (B - C) S_ij
        for d in range(3):
            xbc = B[d] - origin[d]
            for i in range(la + 1):
                for j in range(lb + 1):
                    t1d[d, i, j] = s1d[d, i, j + 1] + xbc * s1d[d, i, j]

    for ia in range(nca):
        ix, iy, iz = cart_xyz[la, ia, 0], cart_xyz[la, ia, 1], cart_xyz[la, ia, 2]
        for ib in range(ncb):
            jx, jy, jz = cart_xyz[lb, ib, 0], cart_xyz[lb, ib, 1], cart_xyz[lb, ib, 2]
            sx = s1d[0, ix, jx]
            sy = s1d[1, iy, jy]
            sz = s1d[2, iz, jz]
            if op == OP_OVERLAP:
                block[0, ia, ib] += pref * sx * sy * sz
            elif op == OP_KINETIC:
                block[0, ia, ib] += pref * (
                    t1d[0, ix, jx] * sy * sz + sx * t1d[1, iy, jy] * sz + sx * sy * t1d[2, iz, jz]
                )
            else:  # dipole
                block[0, ia, ib] += pref * t1d[0, ix, jx] * sy * sz
                block[1, ia, ib] += pref * sx * t1d[1, iy, jy] * sz
                block[2, ia, ib] += pref * sx * sy * t1d[2, iz, jz]


@numba.njit(cache=True)
def cart_to_final(block, la, lb, pure, c2s, out_block):
    """Transform a cartesian block (ncomp, ncart(la), ncart(lb)) to the final AO basis.

    ``c2s`` (lmax+1, ncart_max, 2 lmax+1) holds ``cart2sph(l)`` for every l (for l < 2
    the identity, since the cartesian s and p functions already carry f(l)).
    ``out_block`` (ncomp, nfa, nfb) receives ``C_a^T block C_b`` when ``pure`` else a copy.
    """
    ncomp = block.shape[0]
    nca = (la + 1) * (la + 2) // 2
    ncb = (lb + 1) * (lb + 2) // 2
    if not pure:
        for k in range(ncomp):
            for ia in range(nca):
                for ib in range(ncb):
                    out_block[k, ia, ib] = block[k, ia, ib]
        return
    nsa = 2 * la + 1
    nsb = 2 * lb + 1
    tmp = np.zeros((nca, nsb))
    for k in range(ncomp):
        # tmp = block C_b
        for ia in range(nca):
            for sb in range(nsb):
                acc = 0.0
                for ib in range(ncb):
                    acc += block[k, ia, ib] * c2s[lb, ib, sb]
                tmp[ia, sb] = acc
        # out = C_a^T tmp
        for sa in range(nsa):
            for sb in range(nsb):
                acc = 0.0
                for ia in range(nca):
                    acc += c2s[la, ia, sa] * tmp[ia, sb]
                out_block[k, sa, sb] = acc


@numba.njit(cache=True)
def shell_pair_cart_block(
    op,
    ish,
    jsh,
    shell_l,
    shell_nprim,
    shell_prim_start,
    shell_center,
    exponents,
    coefficients,
    cart_xyz,
    origin,
    charges,
    coords,
    rys_table,
):
    """Contracted cartesian block (ncomp, ncart(l_i), ncart(l_j)) of shells ish, jsh.

    Includes contraction coefficients and PySCF's f(l) factors.  Atomic units.
    """
    la = shell_l[ish]
    lb = shell_l[jsh]
    nca = (la + 1) * (la + 2) // 2
    ncb = (lb + 1) * (lb + 2) // 2
    ncomp = ncomp_of(op)
    block = np.zeros((ncomp, nca, ncb))
    lmax = max(la, lb)
    s1d = np.empty((3, lmax + 1, lmax + 3))
    t1d = np.empty((3, lmax + 1, lmax + 1))
    nroots_max = (la + lb) // 2 + 1
    rys_u = np.empty(nroots_max)
    rys_w = np.empty(nroots_max)
    rys1d = np.empty((3, la + 1, lb + 1, nroots_max))
    A = shell_center[ish]
    B = shell_center[jsh]
    rab2 = 0.0
    for d in range(3):
        rab2 += (A[d] - B[d]) ** 2
    norm = angular_factor(la) * angular_factor(lb)
    pa0 = shell_prim_start[ish]
    pb0 = shell_prim_start[jsh]
    for pa in range(pa0, pa0 + shell_nprim[ish]):
        a = exponents[pa]
        for pb in range(pb0, pb0 + shell_nprim[jsh]):
            b = exponents[pb]
            if product_exponent(a, b, rab2) > PRIM_CUTOFF:
                continue
            scale = norm * coefficients[pa] * coefficients[pb]
            prim_pair_accumulate(
                op,
                la,
                lb,
                a,
                b,
                A,
                B,
                scale,
                cart_xyz,
                origin,
                charges,
                coords,
                rys_table,
                s1d,
                t1d,
                rys_u,
                rys_w,
                rys1d,
                block,
            )
    return block


@numba.njit(cache=True, parallel=True)
def one_electron_matrix_kernel(
    op,
    shell_l,
    shell_nprim,
    shell_prim_start,
    shell_center,
    exponents,
    coefficients,
    ao_loc,
    pure,
    c2s,
    cart_xyz,
    origin,
    charges,
    coords,
    rys_table,
    out,
):
    """Fill ``out`` (ncomp, nao, nao) with a symmetric one-electron operator matrix.

    Loops over shell pairs i >= j (the operators here are real symmetric), computes the
    cartesian block, transforms it to the final basis and writes both triangles.  The
    pairs are shared among numba threads (each writes disjoint blocks of ``out``).
    """
    nshell = shell_l.shape[0]
    ncomp = ncomp_of(op)
    npair = nshell * (nshell + 1) // 2
    for ij in numba.prange(npair):
        # pair index ij = ish (ish + 1)/2 + jsh with jsh <= ish
        ish = int((math.sqrt(8.0 * ij + 1.0) - 1.0) / 2.0)
        while ish * (ish + 1) // 2 > ij:
            ish -= 1
        while (ish + 1) * (ish + 2) // 2 <= ij:
            ish += 1
        jsh = ij - ish * (ish + 1) // 2
        la = shell_l[ish]
        lb = shell_l[jsh]
        block = shell_pair_cart_block(
            op,
            ish,
            jsh,
            shell_l,
            shell_nprim,
            shell_prim_start,
            shell_center,
            exponents,
            coefficients,
            cart_xyz,
            origin,
            charges,
            coords,
            rys_table,
        )
        i0 = ao_loc[ish]
        j0 = ao_loc[jsh]
        nfa = ao_loc[ish + 1] - i0
        nfb = ao_loc[jsh + 1] - j0
        fin = np.empty((ncomp, nfa, nfb))
        cart_to_final(block, la, lb, pure, c2s, fin)
        for k in range(ncomp):
            for a in range(nfa):
                for b in range(nfb):
                    out[k, i0 + a, j0 + b] = fin[k, a, b]
                    out[k, j0 + b, i0 + a] = fin[k, a, b]
