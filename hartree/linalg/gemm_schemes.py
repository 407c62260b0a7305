"""The GEMM schemes of mgemm, one tile product each: op(A) op(B) -> float64 for a tile.

  "fp64"     double-precision product (cuBLAS DGEMM on FP64 tensor cores on the GPU).
  "fp32"     operands rounded to float32, float32 product (SGEMM accumulation).
  "tf32"     float32 operands on TF32 tensor cores (cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32,
             10-bit mantissa inputs, FP32 accumulation; the bound covers rounding or
             truncation of the inputs); on the CPU emulated by rounding the inputs to TF32
             (round to nearest even) and an FP32 product.
  "tf32x3"   split TF32 on tensor cores: x_hi = tf32(x), x_lo = tf32(x - x_hi) (round to
             nearest); C = A_hi B_hi + A_hi B_lo + A_lo B_hi as one TF32 GEMM over the
             concatenated inner index (3k), FP32 accumulation: ~FP32 accuracy, 3 TF32 GEMMs'
             time.
  "heterogeneous"  the seed's heterogeneous scheme (Watson et al., MGEMM, eq. 32): elements
             with |x| > delta form sparse FP64 parts A_L, B_L, the rest A_S, B_S go to FP32:
                 C = A_S B_S (fp32)  +  A_L B + A_S B_L (fp64, sparse x dense)
             delta = ``cutoff`` (absolute); default per operand max(16 median|x|, 98th
             percentile of |x|) estimated from a sample of at most 2^16 elements
             (default_cutoff).
  "bitwise"  the seed's bitwise split (eqs. 29-30): x = x_hi + x_lo with x_hi the upper
             ``upper_bits`` mantissa bits of x (exact in FP32) and x_lo = fp32(x - x_hi);
                 C = A_hi B_hi + A_hi B_lo + A_lo fp32(B)   (three FP32 products, FP64 sum)
             exact products A_hi B_hi for upper_bits <= 12, so the error falls far below
             SGEMM's when the sums also fit in 24 bits (small k, narrow ranges: seed fig. 2)
  "ozaki"    split precision with 7-bit integer slices (hartree/linalg/ozaki.py): S slices
             per row of A / column of B, S integer GEMMs (INT8 tensor cores with exact INT32
             accumulation through cublasGemmEx on the GPU, exact FP64 products of the integer
             slices on the CPU -- the same numbers bit for bit) summed in FP64.

Their error bounds and the choice among them are in :mod:`hartree.linalg.gemm_precision`;
cleaving into tiles and the front end in :mod:`hartree.linalg.mgemm`.  Tile products take
the array module ``xp`` of their operands (numpy or cupy); the cupy-only pieces (TF32 and
INT8 cuBLAS calls) are in :mod:`hartree.linalg.mgemm_gpu`, imported when a cupy tile runs.
"""

from __future__ import annotations

import numpy as np

from hartree.arrays import sparse_module

from . import ozaki


def working_set_bytes(precision, slices=None):
    """(bytes per operand element, bytes per output element) of a tile's working set."""
    if precision == "ozaki":  # + INT8 slices; output + INT32 diagonals P_d
        s = slices or ozaki.MAX_SLICES
        return 16 + s, 8 + 4 * s
    return {
        "fp64": (8, 8),
        "fp32": (12, 12),
        "tf32": (12, 12),
        "tf32x3": (40, 12),
        "heterogeneous": (12, 12),
        "bitwise": (16, 12),
    }[precision]


#: default cutoff policy of the heterogeneous scheme: delta = max(16 median|x|, quantile_q |x|)
CUTOFF_MEDIAN_FACTOR = 16.0
CUTOFF_QUANTILE = 0.98
CUTOFF_SAMPLE = 1 << 16


def default_cutoff(xp, x):
    """delta = max(16 x median |x|, 98th percentile of |x|): outliers (salt) go to FP64,
    but never more than ~2% of the elements (heavy-tailed operands such as RI-MP2's B).
    Quantiles of a strided sample of at most CUTOFF_SAMPLE elements (no full sort).
    An all-zero operand gives 0, so nothing is split off."""
    if x.size == 0:
        return 0.0
    flat = x.ravel()
    step = max(1, flat.size // CUTOFF_SAMPLE)
    ax = xp.abs(flat[::step])
    med, q = (float(v) for v in xp.quantile(ax, xp.asarray([0.5, CUTOFF_QUANTILE])))
    return max(CUTOFF_MEDIAN_FACTOR * med, q)


def _split_large(xp, x, delta):
    """(small dense, large sparse CSR, nnz large) with |large| > delta."""
    sp = sparse_module(xp)
    mask = xp.abs(x) > delta
    large = xp.where(mask, x, 0.0)
    small = x - large
    return small, sp.csr_matrix(large), int(mask.sum())


def _heterogeneous_tile(xp, a, b, da, db, info):
    """Seed eq. 32: C = A_S B_S (fp32) + A_L B + A_S B_L (fp64 sparse x dense)."""
    a_s, a_l, na = _split_large(xp, a, da)
    b_s, b_l, nb = _split_large(xp, b, db)
    c = (a_s.astype(xp.float32) @ b_s.astype(xp.float32)).astype(xp.float64)
    info.low_precision_gemms += 1
    if na:
        c += a_l @ b  # sparse (m x k) @ dense (k x n)
    if nb:
        c += (b_l.T @ a_s.T).T  # A_S B_L as (B_L^T A_S^T)^T
    info.n_large = (info.n_large[0] + na, info.n_large[1] + nb)
    info.fp64_flops += 2.0 * (na * b.shape[1] + nb * a.shape[0])
    return c


def _upper(xp, x, bits):
    """x with its mantissa truncated to its upper ``bits`` bits (exactly representable in FP32
    for bits <= 24; exponent range as float32)."""
    x32 = x.astype(xp.float32)
    drop = 24 - bits
    if drop <= 0:
        return x32
    mask = xp.uint32((0xFFFFFFFF << drop) & 0xFFFFFFFF)
    return (x32.view(xp.uint32) & mask).view(xp.float32)


def _bitwise_tile(xp, a, b, bits, info):
    """Seed's bitwise split, eq. 29/30: A^u B^u + A^u B^l + A^l (B^u + B^l) with the last
    factor the FP32 cast of B; three FP32 products, summed in FP64."""
    a_hi = _upper(xp, a, bits)
    b_hi = _upper(xp, b, bits)
    a_lo = (a - a_hi.astype(xp.float64)).astype(xp.float32)
    b_lo = (b - b_hi.astype(xp.float64)).astype(xp.float32)
    c = (a_hi @ b_hi).astype(xp.float64)
    c += (a_hi @ b_lo).astype(xp.float64)
    c += (a_lo @ b.astype(xp.float32)).astype(xp.float64)
    info.low_precision_gemms += 3
    return c


def round_tf32(x32):
    """float32 array (numpy or cupy) rounded to TF32 (10 explicit mantissa bits, round to
    nearest even); a new array."""
    u = x32.view(np.uint32)
    lsb = (u >> np.uint32(13)) & np.uint32(1)
    u = (u + np.uint32(0xFFF) + lsb) & np.uint32(0xFFFFE000)
    return u.view(np.float32)


def _tf32_tile(xp, a, b):
    if xp is np:
        a32 = round_tf32(np.ascontiguousarray(a, dtype=np.float32))
        b32 = round_tf32(np.ascontiguousarray(b, dtype=np.float32))
        return (a32 @ b32).astype(np.float64)
    from . import mgemm_gpu

    return mgemm_gpu.tf32_matmul(a, b).astype(xp.float64)


def _tf32x3_tile(xp, a, b):
    """Split TF32: x32 = x_hi + x_lo + O(2^-24 |x|) with x_hi = tf32(x32), x_lo =
    tf32(x32 - x_hi) (round to nearest, so the dropped parts carry no sign bias), and
    A_hi B_hi + A_hi B_lo + A_lo B_hi as ONE TF32 GEMM over the concatenated inner index:
    [A_hi A_hi A_lo] (m x 3k) times [B_hi; B_lo; B_hi] (3k x n), FP32 accumulation."""
    a32 = a.astype(xp.float32, copy=False)
    b32 = b.astype(xp.float32, copy=False)
    a_hi, b_hi = round_tf32(a32), round_tf32(b32)
    a_lo, b_lo = round_tf32(a32 - a_hi), round_tf32(b32 - b_hi)
    return _tf32_tile(xp, xp.concatenate([a_hi, a_hi, a_lo], axis=1), xp.concatenate([b_hi, b_lo, b_hi], axis=0))


def tile_product(xp, a, b, precision, info, upper_bits, slices):
    """One tile product a (m_t, k_t) @ b (k_t, n_t) -> float64 by ``precision``."""
    if precision == "fp64":
        info.fp64_flops += 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        return a.astype(xp.float64, copy=False) @ b.astype(xp.float64, copy=False)
    info.low_precision_gemms += {"fp32": 1, "tf32": 1, "tf32x3": 1, "ozaki": slices}.get(precision, 0)
    if precision == "fp32":
        return (a.astype(xp.float32, copy=False) @ b.astype(xp.float32, copy=False)).astype(xp.float64)
    if precision == "tf32":
        return _tf32_tile(xp, a, b)
    if precision == "tf32x3":
        return _tf32x3_tile(xp, a, b)
    a, b = a.astype(xp.float64, copy=False), b.astype(xp.float64, copy=False)
    if precision == "heterogeneous":
        return _heterogeneous_tile(xp, a, b, info.cutoff[0], info.cutoff[1], info)
    if precision == "bitwise":
        return _bitwise_tile(xp, a, b, upper_bits, info)
    if xp is np:
        return ozaki.ozaki_product(np, a, b, slices)
    from . import mgemm_gpu

    return mgemm_gpu.ozaki_int8(a, b, slices)


__all__ = ["tile_product", "working_set_bytes", "default_cutoff", "round_tf32"]
