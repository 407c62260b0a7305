"""Ozaki split-precision GEMM with 7-bit integer slices (INT8 tensor cores on the GPU).

Scheme (Ozaki, Ogita, Oishi, Rump, Numer. Algorithms 59, 95 (2012); the INT8 form follows
Ootomo, Ozaki, Yokota, IJHPCA 38, 297 (2024)).  Each row i of A (m x k) is scaled by a power
of two, 2^-e_i, with e_i = floor(log2 max_p |a_ip|) + 1, raised by one more when
max_p |a_ip| 2^-e_i >= 255/256, so that 128 |a_ip| 2^-e_i < 127.5, and cut into S integer
slices of 7 bits, each ROUNDED TO NEAREST:

    a_ip 2^-e_i = sum_{s=1..S} Q^A_s[i,p] 2^(-7 s) + R_ip,
    |Q^A_1| <= 127, |Q^A_s| <= 64 (s > 1),  |R| <= 2^(-7 S - 1)                         (1)

(r_0 = a 2^-e, t = 128 r, q = rint(t), r <- t - q: every step is exact in FP64).  Rounding,
not truncation, leaves the remainders without a sign bias: truncated slices shrink every
element towards zero, which biases sums of squares such as RI-MP2's (ia|ia) (measured on
butane/cc-pVDZ: MP2 energy relative error 1.2e-5 truncated vs 1.4e-8 rounded, S = 3).
The rows of B^T (columns of B, n x k) are sliced the same way with exponents f_j.  Then

    (A B)_ij ~= 2^(e_i + f_j) sum_{d=2..S+1} 2^(-7 d) P_d[i,j],
    P_d = sum_{s+t=d} Q^A_s (Q^B_t)^T                                                 (2)

keeping the products with s + t <= S + 1 (the triangle of significant terms).  Each P_d is
ONE integer GEMM with inner dimension (d - 1) k: the slices of A are stored side by side as
(m, S, k) in order s = 1..S and those of B in reverse order t = S..1, so that for diagonal d
the columns [0, (d-1)k) of A's slices meet the columns [(S-d+1)k, S k) of B's with s + t = d.
P_d is exact in INT32 while (d - 1) k 127^2 < 2^31, i.e. S k <= ``K_LIMIT_INT32`` (longer k
is cleaved by the caller); on the CPU the same integer products are formed in FP64 (exact
below 2^53), so the CPU result is bit-for-bit the GPU result.  The sum (2) runs from the
smallest diagonal to the largest in FP64; multiplying by 2^(e_i + f_j) is exact.

Error (|A|, |B| elementwise absolute values, rA_i = max_p |a_ip|, cB_j = max_p |b_pj|):
dropped diagonals d >= S + 2 and the remainders R give

    |C - AB|_ij <= 4 k (S + 3) 2^(-7 S) rA_i cB_j  +  2 (S + 1) u64 (|A||B|)_ij        (3)

(per inner index the dropped diagonals are below 1.01 S 2^(-7 S) and the remainder terms
below 1.01 2^(-7 S), while 2^(e_i) <= 2.01 rA_i: 4.05 (1.01 S + 1.01) <= 4 (S + 3); the
second term is the FP64 summation of S terms).
"""

from __future__ import annotations

import math

SLICE_BITS = 7
#: largest S*k for which every diagonal product P_d is exact in INT32: S k 127^2 < 2^31
K_LIMIT_INT32 = (2**31 - 1) // (127 * 127)
#: most slices supported (9 x 7 = 63 bits covers FP64's 53 plus 10 bits of row dynamic range)
MAX_SLICES = 12
U64 = 2.0**-53


def exponents_from_max(xp, amax):
    """(inv_scale = 2^-e float64, e int) per row from its largest magnitude ``amax``:
    e = frexp exponent (amax = f 2^e, 0.5 <= f < 1), plus one where f >= 255/256, so that
    128 amax 2^-e < 127.5 and the first rounded slice fits INT8; amax = 0 gives e = 0."""
    f, e = xp.frexp(amax)
    e = e + (f >= 255.0 / 256.0)
    return xp.ldexp(xp.ones_like(amax), -e), e


def row_exponents(xp, x):
    """(inv_scale (rows, 1) float64 = 2^-e_i, e_i int) with 128 |x_ip| 2^-e_i < 127.5 for
    every row (exponents_from_max).  x: (rows, cols) float64; all-zero rows get e_i = 0."""
    amax = xp.max(xp.abs(x), axis=1) if x.shape[1] else xp.zeros(x.shape[0])
    inv, e = exponents_from_max(xp, amax)
    return inv[:, None], e


def slice_rows(xp, x, nslice, reverse=False, dtype=None):
    """Integer slices of the rows of x (rows, k) float64, eq. (1) (rounded to nearest).

    Returns (slices, inv_scale): slices (rows, nslice, k) of integer values (|q| <= 127, and
    <= 64 after the first) in ``dtype`` (default float64; int8 for the GPU), slice s
    (1-based) at position s - 1, or at nslice - s with ``reverse``; inv_scale (rows, 1) =
    2^-e_i."""
    inv, _ = row_exponents(xp, x)
    r = x * inv  # exact: power of two; |128 r| < 127.5
    out = xp.zeros((x.shape[0], nslice, x.shape[1]), dtype=dtype or xp.float64)
    for s in range(nslice):
        t = r * 128.0
        q = xp.rint(t)  # nearest (ties to even, as CUDA's rint)
        out[:, nslice - 1 - s if reverse else s, :] = q
        r = t - q  # exact; |r| <= 1/2
    return out, inv


def diagonal_products(xp, qa, qb, nslice, int_gemm):
    """C / 2^(e_i + f_j) of eq. (2): sum over d = S+1 .. 2 of 2^(-7 d) P_d in FP64.

    qa (m, S, k) slices of A in order s = 1..S; qb (n, S, k) slices of B^T in reverse order;
    int_gemm(x, y) returns x @ y.T exactly (x (m, K), y (n, K) column ranges of the slice
    stacks) as an array convertible to float64 (INT32 on the GPU, FP64 on the CPU)."""
    m, _, k = qa.shape
    n = qb.shape[0]
    qa2 = qa.reshape(m, nslice * k)
    qb2 = qb.reshape(n, nslice * k)
    c = xp.zeros((m, n))
    for d in range(nslice + 1, 1, -1):  # smallest contributions first
        p = int_gemm(qa2[:, : (d - 1) * k], qb2[:, (nslice - d + 1) * k :])
        c += p.astype(xp.float64) * 2.0 ** (-SLICE_BITS * d)
    return c


def ozaki_product(xp, a, b, nslice):
    """A B (m, n) float64 by eqs. (1)-(2) with FP64 products of the integer slices (exact);
    the reference for the INT8 GPU version in mgemm_gpu.  a (m, k), b (k, n) float64."""
    qa, ia = slice_rows(xp, a, nslice)
    qb, ib = slice_rows(xp, xp.ascontiguousarray(b.T), nslice, reverse=True)
    c = diagonal_products(xp, qa, qb, nslice, lambda x, y: x @ y.T)
    return c / ia / ib.T  # exact: powers of two


def gemm_count(nslice):
    """Slice products in the triangle s + t <= S + 1 (INT8 GEMM work in units of one m n k
    GEMM): S (S + 1) / 2, done as S integer GEMM calls."""
    return nslice * (nslice + 1) // 2


def bound_factor(nslice, k):
    """Coefficient of rA_i cB_j in eq. (3): 4 k (S + 3) 2^(-7 S)."""
    return 4.0 * k * (nslice + 3) * 2.0 ** (-SLICE_BITS * nslice)


def estimate_factor(nslice, k):
    """A-priori RMS error of eq. (2) relative to max|a_i.| max|b_.j|: the dropped terms
    behave like a random walk over k (Higham and Mary, SIAM J. Sci. Comput. 41, A2815
    (2019)): (S + 3) sqrt(k) 2^(-7 S)."""
    return (nslice + 3) * math.sqrt(max(k, 1)) * 2.0 ** (-SLICE_BITS * nslice)


def dynamic_range(xp, x):
    """How much smaller a typical element of x (rows, k) is than its row's scale, in the RMS
    sense of the error estimate: sqrt(mean_i max|x_i.|^2) / mean_i mean|x_i.| (>= 1; 2 for
    uniform [-1, 1] rows, large for salted ones).  The RMS error of eq. (2) relative to a
    typical element of |A||B| is estimate_factor / k times the two ranges."""
    if x.size == 0:
        return 1.0
    ax = xp.abs(x)
    mean = float(xp.mean(ax))
    if mean == 0.0:
        return 1.0
    rms_max = float(xp.sqrt(xp.mean(xp.max(ax, axis=1) ** 2)))
    return max(1.0, rms_max / mean)


def slices_for(accuracy, k, range_a=2.0, range_b=2.0):
    """Fewest slices S whose estimated RMS error (estimate_factor) relative to a typical
    element of |A||B| -- k rA cB / (range_a range_b) with the ranges from dynamic_range --
    is below ``accuracy``:  (S + 3) 2^(-7 S) range_a range_b / sqrt(k) <= accuracy.
    Capped at MAX_SLICES."""
    for s in range(1, MAX_SLICES + 1):
        if estimate_factor(s, k) * range_a * range_b / max(k, 1) <= accuracy:
            return s
    return MAX_SLICES


__all__ = [
    "exponents_from_max",
    "slice_rows",
    "diagonal_products",
    "ozaki_product",
    "row_exponents",
    "gemm_count",
    "bound_factor",
    "estimate_factor",
    "slices_for",
    "dynamic_range",
    "K_LIMIT_INT32",
    "SLICE_BITS",
    "MAX_SLICES",
]
