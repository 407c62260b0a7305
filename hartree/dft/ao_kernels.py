"""numba kernels of the XC integration: AO values on blocks of points, and the pointwise
contractions around the GEMMs (CPU).

Layout.  A block of m points and k screened AOs is stored AO-major, float64 (ncomp, k, m):
row 0 the values φ_μ(r_p) (bohr^-3/2), rows 1-3 ∂φ/∂x, ∂y, ∂z (bohr^-5/2), so that every
pointwise loop runs over contiguous points and both GEMMs of :mod:`hartree.dft.numint`
(D φ and φ (wφ)^T) take the arrays as they are.  Blocks lie one after the other in one
flat buffer (:func:`block_values`); :mod:`hartree.dft.ao_cache` keeps that buffer.

The values are those of :func:`hartree.dft.numint.ao_values` (deriv 0, 1 and 2; same
equations, PySCF's AO order and normalisation), evaluated per (shell, point) without
temporaries: with P = x^i y^j z^k, R = Σ_p c_p e^{-a_p r²}, R1 = Σ_p (-2a_p) c_p e^{-a_p r²},
R2 = Σ_p 4a_p² c_p e^{-a_p r²} and n = (i, j, k),

    φ = P R,   ∂_x φ = i x^(i-1) y^j z^k R + x P R1,
    ∂_a∂_b φ = x_a x_b P R2 + [δ_ab P + n_a P x_b/x_a + n_b P x_a/x_b] R1
               + n_a (n_b - δ_ab) P/(x_a x_b) R,

then C_l^T (cartesian to spherical) for pure shells of l >= 2.  deriv 2 gives ncomp 10:
rows 4-9 ∂xx, ∂xy, ∂xz, ∂yy, ∂yz, ∂zz (bohr^-7/2), for the XC gradient
(:mod:`hartree.dft.xc_grad_integrate`).  ``xc_gpu.cu`` does the same arithmetic in the same
order, so that its values equal these to rounding.  The contracted coefficients
c_p carry libcint's f(l), as :func:`hartree.grid.cpu.prepare_basis` stores them.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["block_values", "contract_gradient", "contract_rows", "contract_tau", "ncomp", "scale_rows"]

#: (a, b) of the second-derivative rows 4..9: xx, xy, xz, yy, yz, zz
_SECOND_A = (0, 0, 0, 1, 1, 2)
_SECOND_B = (0, 1, 2, 1, 2, 2)


def ncomp(deriv: int) -> int:
    """Rows of a block's values for derivatives up to order deriv (0, 1, 2): 1, 4 or 10."""
    return (1, 4, 10)[int(deriv)]


@numba.njit(cache=True)
def _second(pw, i, j, kk, r0, r1, s2, tmp, cart, c, m):  # pragma: no cover - compiled by numba
    """Rows 4..9 of cart[:, c] (module docstring): ∂_a∂_b of x^i y^j z^kk times the radial
    sums, in xc_gpu.cu's order of operations."""
    n = (i, j, kk)
    for t in range(6):
        xa = _SECOND_A[t]
        xb = _SECOND_B[t]
        na = n[xa]
        nb = n[xb]
        u0 = i + (xa == 0) + (xb == 0)  # x_a x_b P
        u1 = j + (xa == 1) + (xb == 1)
        u2 = kk + (xa == 2) + (xb == 2)
        for p in range(m):
            tmp[p] = pw[0, i, p] * pw[1, j, p] * pw[2, kk, p] if xa == xb else 0.0
        if na:  # n_a P x_b / x_a
            v0 = i - (xa == 0) + (xb == 0)
            v1 = j - (xa == 1) + (xb == 1)
            v2 = kk - (xa == 2) + (xb == 2)
            for p in range(m):
                tmp[p] += na * pw[0, v0, p] * pw[1, v1, p] * pw[2, v2, p]
        if nb:  # n_b P x_a / x_b
            v0 = i + (xa == 0) - (xb == 0)
            v1 = j + (xa == 1) - (xb == 1)
            v2 = kk + (xa == 2) - (xb == 2)
            for p in range(m):
                tmp[p] += nb * pw[0, v0, p] * pw[1, v1, p] * pw[2, v2, p]
        for p in range(m):
            cart[4 + t, c, p] = pw[0, u0, p] * pw[1, u1, p] * pw[2, u2, p] * s2[p] + tmp[p] * r1[p]
        sec = na * (nb - (xa == xb))
        if sec:  # n_a (n_b - δ_ab) P / (x_a x_b)
            w0 = i - (xa == 0) - (xb == 0)
            w1 = j - (xa == 1) - (xb == 1)
            w2 = kk - (xa == 2) - (xb == 2)
            for p in range(m):
                cart[4 + t, c, p] += sec * pw[0, w0, p] * pw[1, w1, p] * pw[2, w2, p] * r0[p]


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
    in that order; ncomp 1 (deriv 0), 4 (deriv 1) or 10 (deriv 2).  Blocks run in parallel;
    within a block, shell by shell, every loop runs over the block's points (vectorised)."""
    nblock = block_start.shape[0] - 1
    ncomp = 10 if deriv == 2 else (4 if deriv else 1)
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
        s2 = np.empty(m)
        tmp = np.empty(m)
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
                for n in range(2, l + 3):
                    for p in range(m):
                        pw[x, n, p] = pw[x, n - 1, p] * pw[x, 1, p]
            for p in range(m):
                r2[p] = pw[0, 2, p] + pw[1, 2, p] + pw[2, 2, p]
                r0[p] = 0.0
                r1[p] = 0.0
                s2[p] = 0.0
            for q in range(q0, q1):
                a = exponents[q]
                cq = coefficients[q]
                for p in range(m):
                    e = cq * np.exp(-a * r2[p])
                    r0[p] += e
                    r1[p] += -2.0 * a * e
                    if deriv == 2:
                        s2[p] += 4.0 * a * a * e
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
                if deriv == 2:
                    _second(pw, i, j, kk, r0, r1, s2, tmp, cart, c, m)
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
    that order).  deriv 0, 1 or 2.  Returns (flat float64 buffer, offsets (nblock + 1,)): block
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
    offsets = np.concatenate([[0], np.cumsum(ncomp(deriv) * block_nao * np.diff(block_start))]).astype(np.int64)
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


@numba.njit(cache=True)
def contract_gradient(ao, c, coef, p0, index, out):
    """out[x, index[i]] += Σ_p [∂_xφ_ip u_ip + Σ_y ∂_xyφ_ip v_y,ip] (the per-AO sum of eq. (1)
    of :mod:`hartree.dft.xc_gradient` before its factor -2), with

        u = w_ρ c_0 + Σ_y w_∇y c_y,   v_y = w_∇y c_0 + w_τ c_y,

    c_0 = D φ, c_y = D ∂_yφ.  ao (4 | 10, k, m) a block's values; c (1 | 4, k, m); coef
    (ncoef, n) the weighted rows w_ρ (, w_∇x, w_∇y, w_∇z (, w_τ)) of the chunk, the block's
    points at columns p0..p0+m-1; ncoef 1 (LDA: no ∇ terms), 4 (GGA) or 5 (meta-GGA);
    index (k,) int64 the block's AOs; out (3, nao) accumulated."""
    k = c.shape[1]
    m = c.shape[2]
    ncoef = coef.shape[0]
    for i in range(k):
        g0 = 0.0
        g1 = 0.0
        g2 = 0.0
        if ncoef == 1:
            for p in range(m):
                u = coef[0, p0 + p] * c[0, i, p]
                g0 += ao[1, i, p] * u
                g1 += ao[2, i, p] * u
                g2 += ao[3, i, p] * u
        else:
            for p in range(m):
                q = p0 + p
                c0, cx, cy, cz = c[0, i, p], c[1, i, p], c[2, i, p], c[3, i, p]
                wx, wy, wz = coef[1, q], coef[2, q], coef[3, q]
                u = coef[0, q] * c0 + wx * cx + wy * cy + wz * cz
                v0 = wx * c0
                v1 = wy * c0
                v2 = wz * c0
                if ncoef > 4:
                    v0 += coef[4, q] * cx
                    v1 += coef[4, q] * cy
                    v2 += coef[4, q] * cz
                g0 += ao[1, i, p] * u + ao[4, i, p] * v0 + ao[5, i, p] * v1 + ao[6, i, p] * v2
                g1 += ao[2, i, p] * u + ao[5, i, p] * v0 + ao[7, i, p] * v1 + ao[8, i, p] * v2
                g2 += ao[3, i, p] * u + ao[6, i, p] * v0 + ao[8, i, p] * v1 + ao[9, i, p] * v2
        out[0, index[i]] += g0
        out[1, index[i]] += g1
        out[2, index[i]] += g2
