"""mgemm: a GEMM with NumPy/CuPy semantics, matrix cleaving and mixed-precision schemes.

    c = mgemm(a, b, transa=False, transb=False, precision="fp64", memory_budget=None)
    c, info = mgemm(a, b, ..., return_info=True)      # info: MGEMMInfo (what was done)

C = op(A) op(B) with op(X) = X or X^T, returned in float64 in the array module of the inputs
(numpy -> numpy, cupy -> cupy; numpy inputs with device="gpu" -> numpy, computed on the GPU
through the streamed cleaver).  Schemes (``precision``):

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
             percentile of |x|) estimated from a sample of at most 2^16 elements.
  "bitwise"  the seed's bitwise split (eqs. 29-30): x = x_hi + x_lo with x_hi the upper
             ``upper_bits`` mantissa bits of x (exact in FP32) and x_lo = fp32(x - x_hi);
                 C = A_hi B_hi + A_hi B_lo + A_lo fp32(B)   (three FP32 products, FP64 sum)
             exact products A_hi B_hi for upper_bits <= 12, so the error falls far below
             SGEMM's when the sums also fit in 24 bits (small k, narrow ranges: seed fig. 2)
  "ozaki"    split precision with 7-bit integer slices (hartree/linalg/ozaki.py): S slices
             per row of A / column of B, S integer GEMMs (INT8 tensor cores with exact INT32
             accumulation through cublasGemmEx on the GPU, exact FP64 products of the integer
             slices on the CPU -- the same numbers bit for bit) summed in FP64.  S =
             ``slices``, or the fewest that meet ``accuracy`` (default OZAKI_ACCURACY, FP64
             level) by ozaki.slices_for.
  "mixed"    the policy's choice for ~0.1 kcal/mol in RI-MP2 (choose_mixed): FP32-level
             accuracy as fast as possible; on the GPU the faster (measured cost model) of
             tf32x3 and the INT8 Ozaki split with the fewest slices that reach FP32's
             estimated error, when faster than DGEMM; else fp64; on the CPU fp64.
  "auto"     choose_precision(...) for the relative ``accuracy`` target.

Advertised accuracy, elementwise, with |A||B| the product of absolute values, u32 = 2^-24,
u64 = 2^-53, k = inner dimension, rA_i = max_p |A_ip|, cB_j = max_p |B_pj|:
  fp64:    |C - AB| <= 2 k u64 |A||B|
  fp32:    |C - AB| <= 2 (k + 2) u32 |A||B|
  tf32:    |C - AB| <= (2.1 2^-10 + 2 (k + 2) u32) |A||B|   (inputs rounded or truncated)
  tf32x3:  |C - AB| <= (2^-18 + 3 (k + 2) u32) |A||B|
  heterogeneous: |C - AB| <= 2 (k + 2) u32 |A_S||B_S| + 2 k u64 |A||B|
  bitwise: |C - AB| <= (3 (k + 2) + 2^(4 - upper_bits)) u32 |A||B| + 2 k u64 |A||B|
  ozaki:   |C - AB| <= 4 k (S + 3) 2^(-7 S) rA_i cB_j + (2 S + 2 + 4 k) u64 |A||B|
``error_bound(a, b, precision, ...)`` evaluates these bounds (float64 arrays).
info.estimated_error is an a-priori RMS estimate relative to a typical element of |A||B|
(rounding errors as a random walk: bound / sqrt(k); for ozaki ozaki.estimate_factor times
the operands' dynamic ranges over k).

Cleaving: with ``memory_budget`` (bytes) the product is cut into tiles
(m_t x k_t)(k_t x n_t) whose working set (operand tiles, their low-precision copies and the
output tile, _bytes() per element) fits the budget; k-tiles are accumulated in FP64.  For
host (numpy) operands on the GPU the default budget is 60% of the free device memory split
over two streams, and tiles are staged through pinned buffers with transfers overlapping the
products (mgemm_gpu.streamed).  For cupy operands the default budget (60% of the free
device memory plus the operands themselves) tiles only products whose workspace (slices,
copies) would not fit; the tiles then run one after the other on the device.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from hartree.errors import DeviceError, InputError
from hartree.xp import array_module, sparse_module

from . import ozaki

PRECISIONS = ("fp64", "fp32", "tf32", "tf32x3", "heterogeneous", "bitwise", "ozaki", "mixed")
U32 = 2.0**-24
U64 = 2.0**-53
TF32_INPUT = 2.1 * 2.0**-10  # relative error of one FP32 -> TF32 input conversion x2
#: "mixed" asks for FP32-level accuracy, delivered as fast as the device allows: RI-MP2 with
#: FP32 (ia|jb) GEMMs is off by 4e-7 Eh for taxol/cc-pVDZ (mp2 helper, H200, batch 1), 400x
#: below 0.1 kcal/mol.  (The seed's 10 kcal/mol SGEMM error for valinomycin came from a
#: C1060 without FMA and single precision throughout; its MGEMM cut that 10x.)
#: default target of "ozaki" without slices or accuracy: FP64 level
OZAKI_ACCURACY = 4.0 * U64
#: GPU cost model of the policy, measured on an NVIDIA H200 with cupy 14.2 / CUDA 13
#: (benchmarks/results/mgemm.md, N = 8192): DGEMM 60.7 TFLOP/s, INT8 gemmEx 1.5 POP/s,
#: effective memory bandwidth of the slicing and summation passes ~2.5 TB/s, and a fixed
#: ~0.3 ms of launches per Ozaki call.  The INT8 split is chosen only when predicted
#: GPU_SPLIT_GAIN times faster than DGEMM (TF32 ~6x DGEMM; tf32x3, one TF32 GEMM with
#: inner dimension 3k, ~2x DGEMM where the splitting passes are small next to the GEMM).
GPU_RATES = {"fp64": 6.0e13, "tf32": 3.7e14, "int8": 1.5e15, "bandwidth": 2.5e12, "fixed_s": 3.0e-4}
GPU_SPLIT_GAIN = 1.1


def ozaki_seconds(m, n, k, slices, rates=GPU_RATES):
    """Predicted device seconds of the INT8 Ozaki split: fixed launches + memory passes
    (operands read ~3x, slices written, INT32 diagonals and the FP64 result) + the
    S (S + 1) / 2 INT8 GEMM-equivalents."""
    traffic = (24 + slices) * (m * k + n * k) + (4 * slices + 8) * m * n
    return rates["fixed_s"] + traffic / rates["bandwidth"] + ozaki.gemm_count(slices) * 2.0 * m * n * k / rates["int8"]


def tf32x3_seconds(m, n, k, rates=GPU_RATES):
    """Predicted device seconds of tf32x3: splitting and concatenation passes over the
    operands (~56 bytes per element), one TF32 GEMM with inner dimension 3k, and the
    FP32 -> FP64 conversion of the output."""
    traffic = 56 * (m * k + n * k) + 16 * m * n
    return rates["fixed_s"] + traffic / rates["bandwidth"] + 3 * 2.0 * m * n * k / rates["tf32"]


def dgemm_seconds(m, n, k, rates=GPU_RATES):
    """Predicted device seconds of cuBLAS DGEMM (FP64 tensor cores)."""
    return 2.0 * m * n * k / rates["fp64"] + 1e-5


def _bytes(precision, slices=None):
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


@dataclass
class MGEMMInfo:
    """What one mgemm call did.

    precision         scheme run (after "mixed"/"auto" resolution); requested: as asked
    shape             (m, n, k) of op(A) op(B)
    tiles             number of tile products; tile (m_t, n_t, k_t)
    cutoff            (delta_A, delta_B) of the heterogeneous scheme, None otherwise
    n_large           (nnz A_L, nnz B_L) of the heterogeneous scheme
    upper_bits        bitwise scheme's upper bit count; slices: ozaki slice count S
    low_precision_gemms  number of FP32/TF32/INT8 GEMM calls; fp64_flops: FLOPs done in FP64
    estimated_error   a-priori RMS error relative to |A||B| (module docstring)
    transfer_bytes    host<->device bytes moved (streamed cleaver); streams used
    device            "cpu (numpy)" or "gpu (cupy)"; wall_time seconds; notes: reasons
    """

    precision: str
    shape: tuple
    requested: str = ""
    tiles: int = 0
    tile: tuple = ()
    cutoff: tuple | None = None
    n_large: tuple = (0, 0)
    upper_bits: int | None = None
    slices: int | None = None
    low_precision_gemms: int = 0
    fp64_flops: float = 0.0
    estimated_error: float = 0.0
    transfer_bytes: int = 0
    streams: int = 0
    device: str = ""
    wall_time: float = 0.0
    notes: list = field(default_factory=list)


def _tile_shape(m, n, k, budget, precision, k_limit=None, slices=None):
    """(m_t, n_t, k_t): halve the largest dimension until the working set fits ``budget``."""
    bop, bout = _bytes(precision, slices)
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


#: default cutoff policy of the heterogeneous scheme: delta = max(16 median|x|, quantile_q |x|)
CUTOFF_MEDIAN_FACTOR = 16.0
CUTOFF_QUANTILE = 0.98
CUTOFF_SAMPLE = 1 << 16


def _default_cutoff(xp, x):
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


def _round_tf32(x32):
    """float32 array (numpy or cupy) rounded to TF32 (10 explicit mantissa bits, round to
    nearest even); a new array."""
    u = x32.view(np.uint32)
    lsb = (u >> np.uint32(13)) & np.uint32(1)
    u = (u + np.uint32(0xFFF) + lsb) & np.uint32(0xFFFFE000)
    return u.view(np.float32)


def _tf32_tile(xp, a, b):
    if xp is np:
        a32 = _round_tf32(np.ascontiguousarray(a, dtype=np.float32))
        b32 = _round_tf32(np.ascontiguousarray(b, dtype=np.float32))
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
    a_hi, b_hi = _round_tf32(a32), _round_tf32(b32)
    a_lo, b_lo = _round_tf32(a32 - a_hi), _round_tf32(b32 - b_hi)
    return _tf32_tile(xp, xp.concatenate([a_hi, a_hi, a_lo], axis=1), xp.concatenate([b_hi, b_lo, b_hi], axis=0))


def _tile(xp, a, b, precision, info, upper_bits, slices):
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


def _bound_coefficient(precision, k, upper_bits=12):
    """Relative (to |A||B|) worst-case bound of the floating-point schemes (docstring)."""
    return {
        "fp64": 2.0 * k * U64,
        "fp32": 2.0 * (k + 2) * U32,
        "tf32": TF32_INPUT + 2.0 * (k + 2) * U32,
        "tf32x3": 2.0**-18 + 3.0 * (k + 2) * U32,
        "heterogeneous": 2.0 * (k + 2) * U32,
        "bitwise": (3.0 * (k + 2) + 2.0 ** (4 - upper_bits)) * U32,
    }[precision]


def estimated_error(precision, k, *, slices=None, upper_bits=12, ranges=(2.0, 2.0)):
    """A-priori RMS error of ``precision`` relative to a typical element of |A||B|:
    bound / sqrt(k) for the floating-point schemes, ozaki.estimate_factor * ranges / k."""
    if precision == "ozaki":
        return ozaki.estimate_factor(slices, k) * ranges[0] * ranges[1] / max(k, 1)
    return _bound_coefficient(precision, k, upper_bits) / math.sqrt(max(k, 1))


def choose_precision(m, n, k, accuracy, device="cpu", ranges=(2.0, 2.0)):
    """Scheme for an (m x k)(k x n) product that meets a relative ``accuracy`` target, and
    the reason, as (precision, reason).

    CPU: FP32 when its worst-case bound 2 (k + 2) u32 meets the target, else FP64 (DGEMM is
    at most 2x slower than SGEMM there, so no split scheme pays).
    GPU (H200/H100: FP64 tensor cores ~60 TFLOP/s, SGEMM no faster, TF32 ~6x, INT8 ~25x):
    TF32 when its bound meets the target; else tf32x3 when its bound does and three TF32
    GEMMs beat DGEMM; else the INT8 Ozaki split with the slices that meet the target
    (estimated error with the operands' dynamic ``ranges``) when the cost model
    (ozaki_seconds vs dgemm_seconds, GPU_RATES) predicts it GPU_SPLIT_GAIN times faster;
    else FP64.
    """
    if not accuracy > 0:
        raise InputError("mgemm accuracy target must be positive")
    fp32_bound = _bound_coefficient("fp32", k)
    if device == "cpu":
        if accuracy >= fp32_bound:
            return "fp32", f"fp32 bound {fp32_bound:.1e} meets accuracy {accuracy:.1e} (cpu)"
        return "fp64", f"fp32 bound {fp32_bound:.1e} misses accuracy {accuracy:.1e} (cpu)"
    tf32_bound = _bound_coefficient("tf32", k)
    if accuracy >= tf32_bound:
        return "tf32", f"tf32 bound {tf32_bound:.1e} meets accuracy {accuracy:.1e} (gpu)"
    x3_bound = _bound_coefficient("tf32x3", k)
    t64 = dgemm_seconds(m, n, k)
    if accuracy >= x3_bound and tf32x3_seconds(m, n, k) * GPU_SPLIT_GAIN <= t64:
        return "tf32x3", f"tf32x3 bound {x3_bound:.1e} meets accuracy {accuracy:.1e} (gpu)"
    s = ozaki.slices_for(accuracy, k, *ranges)
    t8 = ozaki_seconds(m, n, k, s)
    why = (
        f"ozaki {s} slices meet accuracy {accuracy:.1e}: predicted {t8 * 1e3:.3g} ms vs DGEMM {t64 * 1e3:.3g} ms (gpu)"
    )
    if t8 * GPU_SPLIT_GAIN <= t64:
        return "ozaki", why
    return "fp64", why


def choose_mixed(m, n, k, device="cpu", ranges=(2.0, 2.0)):
    """The scheme of precision="mixed" as (precision, slices, reason): FP32-level accuracy
    (estimated_error of "fp32") as fast as the device allows.  CPU: fp64 (no scheme beats
    DGEMM by enough there).  GPU: the faster by the cost model of tf32x3 and the INT8 Ozaki
    split with the fewest slices whose estimate (with the operands' dynamic ``ranges``)
    reaches FP32's, if GPU_SPLIT_GAIN times faster than DGEMM; else fp64."""
    if device == "cpu":
        return "fp64", None, "FP32-level accuracy on the CPU: fp64 (DGEMM <= 2x SGEMM time)"
    # estimated_error("fp32") is bound / sqrt(k); measured SGEMM RMS errors are ~200x below
    # it (H200, 8192 x 2048 x 8192: 2.4e-8 vs 5.4e-6), the Ozaki estimate only ~5x above
    target = estimated_error("fp32", k) / 256.0
    s = ozaki.slices_for(target, k, *ranges)
    t64 = dgemm_seconds(m, n, k)
    t8, tx3 = ozaki_seconds(m, n, k, s), tf32x3_seconds(m, n, k)
    # tf32x3 measured 2e-6 RMS on the RI-MP2 shape (FP32: 7.6e-8) and slower than DGEMM
    # (batch 2): reported in the reason, not chosen
    precision, t = "ozaki", t8
    why = (
        f"FP32-level target {target:.1e}: predicted ozaki S={s} {t8 * 1e3:.3g} ms, "
        f"tf32x3 {tx3 * 1e3:.3g} ms, DGEMM {t64 * 1e3:.3g} ms (gpu)"
    )
    if t * GPU_SPLIT_GAIN > t64:
        return "fp64", None, why
    return precision, (s if precision == "ozaki" else None), why


def _ranges(xp, a, b):
    """(dynamic range of A's rows, of B's columns) over k (ozaki.dynamic_range)."""
    if xp is np:
        return ozaki.dynamic_range(np, a), ozaki.dynamic_range(np, b.T)
    from . import mgemm_gpu  # one fused pass per operand on the device

    return mgemm_gpu.dynamic_range(a), mgemm_gpu.dynamic_range(b.T)


def mgemm(
    a,
    b,
    *,
    transa=False,
    transb=False,
    precision="fp64",
    memory_budget=None,
    device=None,
    cutoff=None,
    upper_bits=12,
    slices=None,
    accuracy=None,
    return_info=False,
):
    """op(a) @ op(b) in float64 by the chosen scheme (see the module docstring).

    a, b: 2-D numpy or cupy arrays (any float dtype; float32 operands are used as they are
    by "fp32"/"tf32"/"tf32x3"); transa/transb: use the transpose (a view, no copy);
    precision: "fp64", "fp32", "tf32", "tf32x3", "heterogeneous", "bitwise", "ozaki",
    "mixed" (policy for ~0.1 kcal/mol RI-MP2 energies), "auto" (policy for ``accuracy``);
    device: None (where the operands are), "cpu", or "gpu" (numpy operands are streamed
    through the GPU and the result comes back as numpy);
    memory_budget: bytes for one tile's working set (None: no cleaving on the CPU; on the
    GPU 60% of the free device memory, over two streams for numpy operands);
    cutoff: delta of the heterogeneous scheme (number, or (delta_A, delta_B));
    upper_bits: bits kept in the upper part of the bitwise scheme (1..24);
    slices: Ozaki slice count S (1..12; None: from ``accuracy``, default FP64 level);
    accuracy: relative target for "auto" (and for the ozaki slice count).
    Returns C (m, n) float64, or (C, MGEMMInfo) with return_info.

    RI-MP2 on the GPU calls ``mgemm(a, b, transb=True, precision=p, return_info=True)``
    with cupy operands and p in {"fp64", "fp32", "tf32", "tf32x3", "mixed"}.
    """
    requested = precision
    if precision not in PRECISIONS + ("auto",):
        raise InputError(f"unknown mgemm precision {precision!r}; choose one of {', '.join(PRECISIONS + ('auto',))}")
    if np.ndim(a) != 2 or np.ndim(b) != 2:
        raise InputError(f"mgemm needs 2-D operands, got {np.ndim(a)}-D and {np.ndim(b)}-D")
    xp = array_module(a, b)
    if device not in (None, "cpu", "gpu"):
        raise InputError(f"mgemm device must be 'cpu' or 'gpu', got {device!r}")
    on_gpu = device == "gpu" or (device is None and xp is not np)
    if xp is not np and device == "cpu":
        raise InputError("mgemm device='cpu' with cupy operands; pass numpy arrays")
    host_streamed = on_gpu and xp is np
    if host_streamed:
        from hartree.gpu.device import gpu_status

        ok, why = gpu_status()
        if not ok:
            raise DeviceError(f"mgemm device='gpu' needs a usable GPU: {why}")
    t0 = time.perf_counter()
    if xp is not np and (a.__class__ is not b.__class__):
        a, b = xp.asarray(a), xp.asarray(b)
    keep32 = precision in ("fp32", "tf32", "tf32x3")
    a, b = (x if (keep32 and x.dtype == np.float32) or x.dtype == np.float64 else x.astype(np.float64) for x in (a, b))
    a = a.T if transa else a
    b = b.T if transb else b
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise InputError(f"mgemm shapes do not match: op(a) is {m}x{k}, op(b) is {k2}x{n}")
    info = MGEMMInfo(
        precision=precision, shape=(m, n, k), requested=requested, device="gpu (cupy)" if on_gpu else "cpu (numpy)"
    )
    dev = "gpu" if on_gpu else "cpu"
    ranges = (2.0, 2.0)
    if precision in ("mixed", "auto"):
        if precision == "auto" and accuracy is None:
            raise InputError('mgemm precision="auto" needs an accuracy target')
        if on_gpu and dgemm_seconds(m, n, k) > GPU_RATES["fixed_s"]:
            ranges = _ranges(xp, a, b)  # only where the split could pay
        if precision == "mixed":
            precision, s_mixed, why = choose_mixed(m, n, k, dev, ranges)
            slices = s_mixed if slices is None else slices
        else:
            precision, why = choose_precision(m, n, k, accuracy, dev, ranges)
            if precision == "ozaki" and slices is None:
                slices = ozaki.slices_for(accuracy, k, *ranges)
        info.precision = precision
        info.notes.append(f"{requested}: {why}")
    if precision == "ozaki":
        if slices is None:
            ranges = _ranges(xp, a, b) if min(m, n, k) else ranges
            slices = ozaki.slices_for(accuracy or OZAKI_ACCURACY, k, *ranges)
        if not 1 <= int(slices) <= ozaki.MAX_SLICES:
            raise InputError(f"ozaki slices must be 1..{ozaki.MAX_SLICES}, got {slices}")
        slices = info.slices = int(slices)
    if precision == "bitwise":
        if not 1 <= upper_bits <= 24:
            raise InputError("bitwise split needs 1 <= upper_bits <= 24")
        info.upper_bits = upper_bits
    if precision == "heterogeneous":
        if cutoff is None:
            da, db = _default_cutoff(xp, a), _default_cutoff(xp, b)
        elif np.ndim(cutoff) == 0:
            da = db = float(cutoff)
        else:
            da, db = (float(x) for x in cutoff)
        info.cutoff = (da, db)
    info.estimated_error = estimated_error(precision, k, slices=slices, upper_bits=upper_bits, ranges=ranges)
    k_limit = None
    if precision == "ozaki":  # keep every INT32 diagonal product exact (ozaki.py)
        k_limit = max(16, (ozaki.K_LIMIT_INT32 // slices) // 16 * 16 - 16)
    if min(m, n, k) == 0:
        c = xp.zeros((m, n))
        info.wall_time = time.perf_counter() - t0
        return (c, info) if return_info else c
    if host_streamed:
        from . import mgemm_gpu

        budget = memory_budget or int(0.6 * mgemm_gpu.device_free_bytes() / 2)
        tile = _tile_shape(m, n, k, budget, precision, k_limit, slices)
        info.tile = tile

        def tile_fn(at, bt):
            return _tile(array_module(at), at, bt, precision, info, upper_bits, slices)

        c = mgemm_gpu.streamed(a, b, tile, tile_fn, info)
        info.wall_time = time.perf_counter() - t0
        return (c, info) if return_info else c
    if memory_budget is None and on_gpu and precision != "fp64":
        # cupy operands: the schemes' workspace (copies, slices, INT32 diagonals) must fit
        # in 60% of the free device memory; the operands themselves are already there
        from . import mgemm_gpu

        memory_budget = int(0.6 * mgemm_gpu.device_free_bytes()) + 8 * (m * k + k * n)
    mt, nt, kt = _tile_shape(m, n, k, memory_budget, precision, k_limit, slices)
    info.tile = (mt, nt, kt)
    if (mt, nt, kt) == (m, n, k):  # one tile: no copies, no accumulation pass
        c = _tile(xp, a, b, precision, info, upper_bits, slices)
        info.tiles = 1
        info.wall_time = time.perf_counter() - t0
        return (c, info) if return_info else c
    c = xp.zeros((m, n))
    for i0 in range(0, m, mt):
        for j0 in range(0, n, nt):
            for p0 in range(0, k, kt):
                at = xp.ascontiguousarray(a[i0 : i0 + mt, p0 : p0 + kt])
                bt = xp.ascontiguousarray(b[p0 : p0 + kt, j0 : j0 + nt])
                c[i0 : i0 + mt, j0 : j0 + nt] += _tile(xp, at, bt, precision, info, upper_bits, slices)
                info.tiles += 1
    info.wall_time = time.perf_counter() - t0
    return (c, info) if return_info else c


def error_bound(a, b, precision, *, transa=False, transb=False, cutoff=None, upper_bits=12, slices=None):
    """Elementwise bound (m, n) float64 on |mgemm(a, b) - a b| advertised for ``precision``
    (module docstring; ozaki needs ``slices``); computed in float64 from |A|, |B| (numpy
    only)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a.T if transa else a
    b = b.T if transb else b
    k = a.shape[1]
    absab = np.abs(a) @ np.abs(b)
    fp64 = 2.0 * k * U64 * absab
    if precision == "fp64":
        return fp64
    if precision in ("fp32", "tf32", "tf32x3", "bitwise"):
        return _bound_coefficient(precision, k, upper_bits) * absab + fp64
    if precision == "heterogeneous":
        if cutoff is None:
            da, db = _default_cutoff(np, a), _default_cutoff(np, b)
        elif np.ndim(cutoff) == 0:
            da = db = float(cutoff)
        else:
            da, db = cutoff
        a_s = np.where(np.abs(a) > da, 0.0, a)
        b_s = np.where(np.abs(b) > db, 0.0, b)
        return 2.0 * (k + 2) * U32 * (np.abs(a_s) @ np.abs(b_s)) + fp64
    if precision == "ozaki":
        if slices is None:
            raise InputError("error_bound for ozaki needs slices")
        ra = np.max(np.abs(a), axis=1, keepdims=True) if k else np.zeros((a.shape[0], 1))
        cb = np.max(np.abs(b), axis=0, keepdims=True) if k else np.zeros((1, b.shape[1]))
        return ozaki.bound_factor(slices, k) * (ra * cb) + (2.0 * slices + 2.0 + 4.0 * k) * U64 * absab
    raise InputError(f"unknown mgemm precision {precision!r}")


def gemm_flops(m, n, k):
    """2 m n k (FLOPs of one GEMM)."""
    return 2.0 * m * n * k


__all__ = [
    "mgemm",
    "MGEMMInfo",
    "PRECISIONS",
    "error_bound",
    "gemm_flops",
    "choose_precision",
    "estimated_error",
    "choose_mixed",
    "ozaki_seconds",
    "dgemm_seconds",
    "tf32x3_seconds",
]
