"""mgemm: a GEMM with NumPy/CuPy semantics, matrix cleaving and mixed-precision schemes.

    c = mgemm(a, b, transa=False, transb=False, precision="fp64", memory_budget=None)
    c, info = mgemm(a, b, ..., return_info=True)      # info: MGEMMInfo (what was done)

C = op(A) op(B) with op(X) = X or X^T, returned in float64 (same array module as the inputs:
numpy now, cupy on the GPU path).  Schemes (``precision``):

  "fp64"     plain double-precision product.
  "fp32"     operands rounded to float32, float32 product (BLAS sgemm accumulation).
  "mixed"    the seed's heterogeneous scheme (Watson et al., MGEMM): elements with
             |x| > delta form sparse FP64 parts A_L, B_L, the rest A_S, B_S go to FP32:
                 C = A_S B_S (fp32)  +  A_L B + A_S B_L (fp64, sparse x dense)
             delta = ``cutoff`` (absolute); default per operand max(16 median|x|, 98th percentile
             of |x|): salt-like outliers go to FP64, at most ~2% of the elements.
  "bitwise"  the seed's bitwise split: x = x_hi + x_lo with x_hi the upper ``upper_bits``
             mantissa bits of x (exact in FP32) and x_lo = fp32(x - x_hi);
                 C = A_hi B_hi + A_hi B_lo + A_lo B_hi     (three FP32 products, summed in FP64)
  "ozaki"    split-precision (Ozaki, Ogita, Oishi, Rump, Numer. Algorithms 59, 95 (2012)):
             rows of A / columns of B are scaled by powers of two and sliced into
             ``slices`` pieces of ``slice_bits`` bits each, so that every slice product
             A_s B_t accumulates integers below 2^24 and is exact in FP32 (tiles in k keep
             k 2^(2 slice_bits) <= 2^24); products with s + t <= slices + 1 are summed in FP64.
             With slices x slice_bits >= 53 + log2(dynamic range within a row/column) the
             result is FP64-accurate (7 x 8 bits for uniform data; salted rows need ~9
             slices).  The tensor-core TF32/BF16/INT8 variant replaces the FP32 product on
             the GPU.
  "auto"     choose_precision(...) picks one of the above for an ``accuracy`` target.

Advertised accuracy, elementwise, with |A||B| the product of absolute values and
u32 = 2^-24, u64 = 2^-53, k = inner dimension:
  fp64:    |C - AB| <= 2 k u64 |A||B|
  fp32:    |C - AB| <= 2 (k + 2) u32 |A||B|
  mixed:   |C - AB| <= 2 (k + 2) u32 |A_S||B_S| + 2 k u64 |A||B|
  bitwise: |C - AB| <= (3 (k + 2) u32 + 2^(2 - 2 upper_bits)) |A||B| + 2 k u64 |A||B|
           (three FP32 products, and the dropped A_lo B_lo with |x_lo| <= 2^(1-upper_bits)|x|)
  ozaki:   |C - AB| <= 4 k (slices + 3) 2^(-slices slice_bits) rowmax|A| colmax|B|
                       + 4 k u64 |A||B|     (dropped slice products and remainders)
``error_bound(a, b, precision, ...)`` evaluates these bounds (float64 arrays).

Cleaving: with ``memory_budget`` (bytes) the product is cut into tiles
(m_t x k_t)(k_t x n_t) whose working set (operand tiles and their low-precision copies
plus the output tile, _BYTES per element) fits the budget; k-tiles are
accumulated in FP64.  On the GPU the budget is the device memory and tiles are what moves
to the device; here the budget only shapes the loop (tests force it with tiny budgets).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from hartree.errors import InputError
from hartree.xp import array_module, sparse_module

PRECISIONS = ("fp64", "fp32", "mixed", "bitwise", "ozaki")
U32 = 2.0 ** -24
U64 = 2.0 ** -53

# bytes of working set per element of operand tiles (A, B) and of the output tile, per scheme
_BYTES = {"fp64": (8, 8), "fp32": (12, 12), "mixed": (12, 12), "bitwise": (16, 12),
          "ozaki": (16, 12)}


@dataclass
class MGEMMInfo:
    """What one mgemm call did.

    precision         scheme used; shape (m, n, k) of op(A) op(B)
    tiles             number of tile products; tile (m_t, n_t, k_t)
    cutoff            (delta_A, delta_B) of the mixed scheme, None otherwise
    n_large           (nnz A_L, nnz B_L) of the mixed scheme
    upper_bits        bitwise scheme's upper bit count; slices, slice_bits for ozaki
    low_precision_gemms  number of FP32 GEMM calls; fp64_flops: FLOPs done in FP64
    device            "cpu (numpy)" or "gpu (cupy)"; wall_time seconds
    """

    precision: str
    shape: tuple
    tiles: int = 0
    tile: tuple = ()
    cutoff: tuple | None = None
    n_large: tuple = (0, 0)
    upper_bits: int | None = None
    slices: int | None = None
    slice_bits: int | None = None
    low_precision_gemms: int = 0
    fp64_flops: float = 0.0
    device: str = ""
    wall_time: float = 0.0
    notes: list = field(default_factory=list)


def _tile_shape(m, n, k, budget, precision, k_limit=None):
    """(m_t, n_t, k_t): halve the largest dimension until the working set fits ``budget``."""
    bop, bout = _BYTES[precision]
    mt, nt, kt = m, n, k if k_limit is None else min(k, k_limit)

    def size(mt, nt, kt):
        return bop * (mt * kt + kt * nt) + bout * mt * nt

    if budget is None:
        return mt, nt, kt
    while size(mt, nt, kt) > budget:
        if mt == nt == kt == 1:
            raise InputError(f"memory_budget={budget} bytes is too small for a 1x1x1 tile")
        dims = [mt, nt, kt]
        i = int(np.argmax(dims))
        dims[i] = max(1, (dims[i] + 1) // 2)
        mt, nt, kt = dims
    return mt, nt, kt


#: default cutoff policy of the mixed scheme: delta = max(16 median|x|, quantile_q |x|)
CUTOFF_MEDIAN_FACTOR = 16.0
CUTOFF_QUANTILE = 0.98


def _default_cutoff(xp, x):
    """delta = max(16 x median |x|, 98th percentile of |x|): outliers (salt) go to FP64,
    but never more than ~2% of the elements (heavy-tailed operands such as RI-MP2's B).
    An all-zero operand gives 0, so nothing is split off."""
    if x.size == 0:
        return 0.0
    ax = xp.abs(x).ravel()
    med, q = xp.quantile(ax, xp.asarray([0.5, CUTOFF_QUANTILE]))
    return max(CUTOFF_MEDIAN_FACTOR * float(med), float(q))


def _split_large(xp, x, delta):
    """(small dense, large sparse CSR, nnz large) with |large| > delta."""
    sp = sparse_module(xp)
    mask = xp.abs(x) > delta
    large = xp.where(mask, x, 0.0)
    small = x - large
    return small, sp.csr_matrix(large), int(mask.sum())


def _mixed_tile(xp, a, b, da, db, info):
    """Heterogeneous scheme: C = A_S B_S (fp32) + A_L B + A_S B_L (fp64 sparse)."""
    a_s, a_l, na = _split_large(xp, a, da)
    b_s, b_l, nb = _split_large(xp, b, db)
    c = (a_s.astype(xp.float32) @ b_s.astype(xp.float32)).astype(xp.float64)
    info.low_precision_gemms += 1
    if na:
        c += a_l @ b                         # sparse (m x k) @ dense (k x n)
    if nb:
        c += (b_l.T @ a_s.T).T               # A_S B_L as (B_L^T A_S^T)^T
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
    hi = (x32.view(xp.uint32) & mask).view(xp.float32)
    return hi


def _bitwise_tile(xp, a, b, bits, info):
    """Seed's bitwise split: A_hi B_hi + A_hi B_lo + A_lo B_hi in FP32, summed in FP64."""
    a_hi = _upper(xp, a, bits)
    b_hi = _upper(xp, b, bits)
    a_lo = (a - a_hi.astype(xp.float64)).astype(xp.float32)
    b_lo = (b - b_hi.astype(xp.float64)).astype(xp.float32)
    c = (a_hi @ b_hi).astype(xp.float64)
    c += (a_hi @ b_lo).astype(xp.float64)
    c += (a_lo @ b_hi).astype(xp.float64)
    info.low_precision_gemms += 3
    return c


def _slices(xp, x, axis, nslice, bits):
    """Ozaki slicing of x along rows (axis=1 reduces over columns -> per-row scale) or columns.

    Returns (list of float32 integer-valued slices S_s, scale) with
    x ~= scale * sum_s S_s 2^(-(s+1) bits) and |S_s| < 2^bits.
    """
    amax = xp.max(xp.abs(x), axis=axis, keepdims=True)
    e = xp.where(amax > 0, xp.ceil(xp.log2(xp.where(amax > 0, amax, 1.0))), 0.0)
    scale = xp.exp2(e)                       # |x| / scale <= 1
    r = x / scale
    out = []
    for s in range(nslice):
        f = 2.0 ** ((s + 1) * bits)
        q = xp.trunc(r * f)                  # integer, |q| < 2^bits (first) ...
        out.append(q.astype(xp.float32))
        r = r - q / f
    return out, scale


def _ozaki_tile(xp, a, b, nslice, bits, info):
    """Sum over s + t <= nslice + 1 of exact FP32 slice products, in FP64 (Ozaki scheme)."""
    sa, scale_a = _slices(xp, a, 1, nslice, bits)
    sb, scale_b = _slices(xp, b, 0, nslice, bits)
    c = xp.zeros((a.shape[0], b.shape[1]))
    for s in range(nslice):
        for t in range(nslice - s):
            p = (sa[s] @ sb[t]).astype(xp.float64)           # exact: integers < 2^24
            c += p * 2.0 ** (-(s + t + 2) * bits)
            info.low_precision_gemms += 1
    return c * scale_a * scale_b


def choose_precision(m, n, k, accuracy, device="cpu"):
    """Scheme for an (m x k)(k x n) product that meets a relative ``accuracy`` target
    (|C - AB| <= accuracy |A||B| elementwise), and the reason, as (precision, reason).

    Policy (CPU, stated here, measured for the GPU in a later step): FP32 when its bound
    2 (k + 2) u32 meets the target, else FP64 -- on a CPU, DGEMM is at most 2x slower than
    SGEMM, so the emulated split schemes never pay.  On a GPU the split schemes ("ozaki" on
    tensor cores, "mixed") become candidates; until measured there, the GPU policy is the
    CPU one.
    """
    if accuracy <= 0:
        raise InputError("mgemm accuracy target must be positive")
    fp32_bound = 2.0 * (k + 2) * U32
    if accuracy >= fp32_bound:
        return "fp32", f"fp32 bound {fp32_bound:.1e} meets accuracy {accuracy:.1e} ({device})"
    return "fp64", f"fp32 bound {fp32_bound:.1e} misses accuracy {accuracy:.1e} ({device})"


def mgemm(a, b, *, transa=False, transb=False, precision="fp64", memory_budget=None,
          cutoff=None, upper_bits=12, slices=7, slice_bits=8, accuracy=None,
          return_info=False):
    """op(a) @ op(b) in float64 by the chosen scheme (see the module docstring).

    a, b: 2-D numpy (or cupy) arrays, any float dtype (converted to float64 first);
    transa/transb: use the transpose; memory_budget: bytes for one tile's working set
    (None: no cleaving); cutoff: delta of the mixed scheme (number, or (delta_A, delta_B));
    upper_bits: bits kept in the upper part of the bitwise scheme (1..24);
    slices, slice_bits: Ozaki slicing (slice_bits <= 11 so that FP32 products are exact);
    precision="auto" picks the scheme for the relative ``accuracy`` target by
    choose_precision (the reason goes to info.notes).
    Returns C (m, n) float64, or (C, MGEMMInfo) with return_info.
    """
    auto_note = None
    if precision == "auto":
        if accuracy is None:
            raise InputError('mgemm precision="auto" needs an accuracy target')
        if np.ndim(a) != 2 or np.ndim(b) != 2:
            raise InputError(f"mgemm needs 2-D operands, got {np.ndim(a)}-D and {np.ndim(b)}-D")
        m_, k_ = (a.shape[1], a.shape[0]) if transa else a.shape
        n_ = b.shape[0] if transb else b.shape[1]
        device = "gpu" if array_module(a, b) is not np else "cpu"
        precision, auto_note = choose_precision(m_, n_, k_, accuracy, device)
    if precision not in PRECISIONS:
        raise InputError(f"unknown mgemm precision {precision!r}; choose one of "
                         f"{', '.join(PRECISIONS)}")
    xp = array_module(a, b)
    t0 = time.perf_counter()
    a = xp.asarray(a, dtype=xp.float64)
    b = xp.asarray(b, dtype=xp.float64)
    if a.ndim != 2 or b.ndim != 2:
        raise InputError(f"mgemm needs 2-D operands, got {a.ndim}-D and {b.ndim}-D")
    a = a.T if transa else a
    b = b.T if transb else b
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise InputError(f"mgemm shapes do not match: op(a) is {m}x{k}, op(b) is {k2}x{n}")
    info = MGEMMInfo(precision=precision, shape=(m, n, k),
                     device="gpu (cupy)" if xp is not np else "cpu (numpy)")
    if auto_note:
        info.notes.append("auto: " + auto_note)
    k_limit = None
    if precision == "ozaki":
        if not 1 <= slice_bits <= 11 or slices < 1:
            raise InputError("ozaki slicing needs 1 <= slice_bits <= 11 and slices >= 1")
        k_limit = max(1, 2 ** (24 - 2 * slice_bits))   # keep FP32 accumulation exact
        info.slices, info.slice_bits = slices, slice_bits
    if precision == "bitwise":
        if not 1 <= upper_bits <= 24:
            raise InputError("bitwise split needs 1 <= upper_bits <= 24")
        info.upper_bits = upper_bits
    if precision == "mixed":
        if cutoff is None:
            da, db = _default_cutoff(xp, a), _default_cutoff(xp, b)
        elif np.ndim(cutoff) == 0:
            da = db = float(cutoff)
        else:
            da, db = (float(x) for x in cutoff)
        info.cutoff = (da, db)
    mt, nt, kt = _tile_shape(m, n, k, memory_budget, precision, k_limit)
    info.tile = (mt, nt, kt)
    if (mt, nt, kt) == (m, n, k):             # one tile: no copies, no accumulation pass
        c = _tile(xp, a, b, precision, info, upper_bits, slices, slice_bits)
        info.tiles = 1
        info.wall_time = time.perf_counter() - t0
        return (c, info) if return_info else c
    c = xp.zeros((m, n))
    for i0 in range(0, m, mt):
        for j0 in range(0, n, nt):
            for p0 in range(0, k, kt):
                at = xp.ascontiguousarray(a[i0:i0 + mt, p0:p0 + kt])
                bt = xp.ascontiguousarray(b[p0:p0 + kt, j0:j0 + nt])
                c[i0:i0 + mt, j0:j0 + nt] += _tile(xp, at, bt, precision, info, upper_bits,
                                                   slices, slice_bits)
                info.tiles += 1
    info.wall_time = time.perf_counter() - t0
    return (c, info) if return_info else c


def _tile(xp, a, b, precision, info, upper_bits, slices, slice_bits):
    if precision == "fp64":
        info.fp64_flops += 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        return a @ b
    if precision == "fp32":
        info.low_precision_gemms += 1
        return (a.astype(xp.float32) @ b.astype(xp.float32)).astype(xp.float64)
    if precision == "mixed":
        return _mixed_tile(xp, a, b, info.cutoff[0], info.cutoff[1], info)
    if precision == "bitwise":
        return _bitwise_tile(xp, a, b, upper_bits, info)
    return _ozaki_tile(xp, a, b, slices, slice_bits, info)


def error_bound(a, b, precision, *, transa=False, transb=False, cutoff=None, upper_bits=12,
                slices=7, slice_bits=8):
    """Elementwise bound (m, n) float64 on |mgemm(a, b) - a b| advertised for ``precision``
    (module docstring); computed in float64 from |A|, |B| (numpy only)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a.T if transa else a
    b = b.T if transb else b
    k = a.shape[1]
    absab = np.abs(a) @ np.abs(b)
    fp64 = 2.0 * k * U64 * absab
    if precision == "fp64":
        return fp64
    if precision == "fp32":
        return 2.0 * (k + 2) * U32 * absab + fp64
    if precision == "mixed":
        if cutoff is None:
            da, db = _default_cutoff(np, a), _default_cutoff(np, b)
        elif np.ndim(cutoff) == 0:
            da = db = float(cutoff)
        else:
            da, db = cutoff
        a_s = np.where(np.abs(a) > da, 0.0, a)
        b_s = np.where(np.abs(b) > db, 0.0, b)
        return 2.0 * (k + 2) * U32 * (np.abs(a_s) @ np.abs(b_s)) + fp64
    if precision == "bitwise":
        return (3.0 * (k + 2) * U32 + 2.0 ** (2 - 2 * upper_bits)) * absab + fp64
    if precision == "ozaki":
        ra = np.max(np.abs(a), axis=1, keepdims=True)
        cb = np.max(np.abs(b), axis=0, keepdims=True)
        trunc = 2.0 ** (-slices * slice_bits) * (slices + 3) * k * 4.0
        return trunc * (ra * cb) + 4.0 * k * U64 * absab
    raise InputError(f"unknown mgemm precision {precision!r}")


def gemm_flops(m, n, k):
    """2 m n k (FLOPs of one GEMM)."""
    return 2.0 * m * n * k


__all__ = ["mgemm", "MGEMMInfo", "PRECISIONS", "error_bound", "gemm_flops", "choose_precision"]
