"""numba kernels of the XC integration: AO values on blocks of points, and the pointwise
contractions around the GEMMs (CPU).

Layout.  A block of m points and k screened AOs is stored AO-major, float64 (ncomp, k, m):
row 0 the values φ_μ(r_p) (bohr^-3/2), rows 1-3 ∂φ/∂x, ∂y, ∂z (bohr^-5/2), so that every
pointwise loop runs over contiguous points and both GEMMs of :mod:`hartree.dft.numint`
(D φ and φ (wφ)^T) take the arrays as they are.  Blocks lie one after the other in one
flat buffer (:func:`block_values`); :mod:`hartree.dft.ao_cache` keeps that buffer.

The values are those of :func:`hartree.dft.numint.ao_values` (deriv 0 and 1; same
equations, PySCF's AO order and normalisation), evaluated per (shell, point) without
temporaries: with P = x^i y^j z^k, R = Σ_p c_p e^{-a_p r²}, R1 = Σ_p (-2a_p) c_p e^{-a_p r²},

    φ = P R,   ∂_x φ = i x^(i-1) y^j z^k R + x P R1,

then C_l^T (cartesian to spherical) for pure shells of l >= 2.  The contracted coefficients
c_p carry libcint's f(l), as :func:`hartree.grid.cpu.prepare_basis` stores them.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["block_values", "contract_rows", "contract_tau", "scale_rows"]


@numba.njit(parallel=True, cache=True)
def _ao_blocks_kernel(
    points,
    block_start,
    shells,
    shell_start,
    block_nao,
    out_start,
    deriv,
    shell_l,
    shell_nprim,
    shell_prim_start,
    shell_center,
    exponents,
    coefficients,
    ao_loc,
    pure,
    c2s,
    c2s_loc,
    comp,
    comp_loc,
    out,
):
    """out[out_start[b]:] = block b's AO values (ncomp, block_nao[b], m) flat, for the
    points block_start[b]:block_start[b+1] and shells shells[shell_start[b]:shell_start[b+1]]
    in that order; ncomp 1 (deriv 0) or 4 (deriv 1).  Blocks run in parallel; within a
    block, shell by shell, every loop runs over the block's points (vectorised)."""
    nblock = block_start.shape[0] - 1
    ncomp = 4 if deriv else 1
    maxc = 1
    maxl = 1
    for l in range(comp_loc.shape[0] - 1):
        maxc = max(maxc, comp_loc[l + 1] - comp_loc[l])
        maxl = l
    for b in numba.prange(nblock):
        p0 = block_start[b]
        m = block_start[b + 1] - p0
        k = block_nao[b]
        blk = out[out_start[b] : out_start[b] + ncomp * k * m].reshape((ncomp, k, m))
        r0 = np.empty(m)
        r1 = np.empty(m)
        r2 = np.empty(m)
        pw = np.empty((3, maxl + 3, m))  # x^n, y^n, z^n relative to the shell's centre
        cart = np.empty((ncomp, maxc, m))
        col = 0
        for js in range(shell_start[b], shell_start[b + 1]):
            sh = shells[js]
            l = shell_l[sh]
            c0 = comp_loc[l]
            nc = comp_loc[l + 1] - c0
            nf = ao_loc[sh + 1] - ao_loc[sh]
            q0 = shell_prim_start[sh]
            q1 = q0 + shell_nprim[sh]
            for x in range(3):
                for p in range(m):
                    pw[x, 0, p] = 1.0
                    pw[x, 1, p] = points[p0 + p, x] - shell_center[sh, x]
                for n in range(2, max(l + 2, 3)):
                    for p in range(m):
                        pw[x, n, p] = pw[x, n - 1, p] * pw[x, 1, p]
            for p in range(m):
                r2[p] = pw[0, 2, p] + pw[1, 2, p] + pw[2, 2, p]
                r0[p] = 0.0
                r1[p] = 0.0
            for q in range(q0, q1):
                a = exponents[q]
                cq = coefficients[q]
                for p in range(m):
                    e = cq * np.exp(-a * r2[p])
                    r0[p] += e
                    r1[p] += -2.0 * a * e
            for c in range(nc):
                i = comp[c0 + c, 0]
                j = comp[c0 + c, 1]
                kk = comp[c0 + c, 2]
                for p in range(m):
                    cart[0, c, p] = pw[0, i, p] * pw[1, j, p] * pw[2, kk, p] * r0[p]
                if deriv:
                    for p in range(m):
                        cart[1, c, p] = pw[0, i + 1, p] * pw[1, j, p] * pw[2, kk, p] * r1[p]
                        cart[2, c, p] = pw[0, i, p] * pw[1, j + 1, p] * pw[2, kk, p] * r1[p]
                        cart[3, c, p] = pw[0, i, p] * pw[1, j, p] * pw[2, kk + 1, p] * r1[p]
                    if i:
                        for p in range(m):
                            cart[1, c, p] += i * pw[0, i - 1, p] * pw[1, j, p] * pw[2, kk, p] * r0[p]
                    if j:
                        for p in range(m):
                            cart[2, c, p] += j * pw[0, i, p] * pw[1, j - 1, p] * pw[2, kk, p] * r0[p]
                    if kk:
                        for p in range(m):
                            cart[3, c, p] += kk * pw[0, i, p] * pw[1, j, p] * pw[2, kk - 1, p] * r0[p]
            if pure and l >= 2:  # C_l^T: spherical = Σ_c c2s[c, f] cartesian_c
                s0 = c2s_loc[l]
                for t in range(ncomp):
                    for f in range(nf):
                        for p in range(m):
                            blk[t, col + f, p] = 0.0
                        for c in range(nc):
                            w = c2s[s0 + c * nf + f]
                            if w != 0.0:
                                for p in range(m):
                                    blk[t, col + f, p] += w * cart[t, c, p]
            else:
                for t in range(ncomp):
                    for c in range(nc):
                        for p in range(m):
                            blk[t, col + c, p] = cart[t, c, p]
            col += nf


def block_values(prepared, points, block_start, shells, shell_start, deriv, out=None):
    """AO values of several blocks of points, each on its own screened shells.

    prepared: :func:`hartree.grid.cpu.prepare_basis` of the basis; points float64 (n, 3)
    bohr; block b is points[block_start[b]:block_start[b+1]] with the shells
    shells[shell_start[b]:shell_start[b+1]] (int64, any order; their functions appear in
    that order).  deriv 0 or 1.  Returns (flat float64 buffer, offsets (nblock + 1,)): block
    b is ``buffer[offsets[b]:offsets[b+1]].reshape(ncomp, k_b, m_b)`` (module docstring).
    ``out``: a buffer of at least offsets[-1] elements to fill instead of a new one.
    """
    pb = prepared
    block_start = np.ascontiguousarray(block_start, dtype=np.int64)
    shells = np.ascontiguousarray(shells, dtype=np.int64)
    shell_start = np.ascontiguousarray(shell_start, dtype=np.int64)
    sizes = (pb.ao_loc[shells + 1] - pb.ao_loc[shells]) if shells.size else np.zeros(0, np.int64)
    cum = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    block_nao = cum[shell_start[1:]] - cum[shell_start[:-1]]
    ncomp = 4 if deriv else 1
    offsets = np.concatenate([[0], np.cumsum(ncomp * block_nao * np.diff(block_start))]).astype(np.int64)
    if out is None:
        out = np.empty(int(offsets[-1]))
    _ao_blocks_kernel(
        np.ascontiguousarray(points, dtype=np.float64),
        block_start,
        shells,
        shell_start,
        block_nao,
        offsets,
        int(deriv),
        pb.shell_l,
        pb.shell_nprim,
        pb.shell_prim_start,
        pb.shell_center,
        pb.exponents,
        pb.coefficients,
        pb.ao_loc,
        pb.pure,
        pb.c2s,
        pb.c2s_loc,
        pb.comp,
        pb.comp_loc,
        out,
    )
    return out, offsets


@numba.njit(cache=True)
def contract_rows(ao, c, nrow, out):
    """out[x, p] = Σ_i ao[x, i, p] c[i, p] for x < nrow: ao (>= nrow, k, m), c (k, m), out
    (>= nrow, m).  ρ = Σ_μ (Dφ)_μ φ_μ and the ∇ρ rows (times 1/2)."""
    k = c.shape[0]
    m = c.shape[1]
    for x in range(nrow):
        for p in range(m):
            out[x, p] = 0.0
        for i in range(k):
            for p in range(m):
                out[x, p] += ao[x, i, p] * c[i, p]


@numba.njit(cache=True)
def contract_tau(ao, c1, out):
    """out[p] = ½ Σ_x Σ_i ao[1 + x, i, p] c1[x, i, p]: τ = ½ Σ_μν D_μν ∇φ_μ·∇φ_ν with
    c1 = D ∇φ (3, k, m)."""
    k = c1.shape[1]
    m = c1.shape[2]
    for p in range(m):
        out[p] = 0.0
    for x in range(3):
        for i in range(k):
            for p in range(m):
                out[p] += ao[1 + x, i, p] * c1[x, i, p]
    for p in range(m):
        out[p] *= 0.5


@numba.njit(cache=True)
def scale_rows(ao, coef, nrow, out):
    """out[i, p] = Σ_{x<nrow} coef[x, p] ao[x, i, p]: the weighted functions w_ρ φ/2 +
    Σ_x w_∇x ∂_xφ whose product with φ^T is half of V_xc (:mod:`hartree.dft.numint`)."""
    k = ao.shape[1]
    m = ao.shape[2]
    for i in range(k):
        for p in range(m):
            out[i, p] = coef[0, p] * ao[0, i, p]
        for x in range(1, nrow):
            for p in range(m):
                out[i, p] += coef[x, p] * ao[x, i, p]
