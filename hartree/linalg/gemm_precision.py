"""mgemm's precision choice: advertised error bounds, a-priori estimates, the GPU cost model,
and the policies behind precision="mixed" and precision="auto".

Advertised accuracy, elementwise, with |A||B| the product of absolute values, u32 = 2^-24,
u64 = 2^-53, k = inner dimension, rA_i = max_p |A_ip|, cB_j = max_p |B_pj| (schemes as in
:mod:`hartree.linalg.gemm_schemes`):
  fp64:    |C - AB| <= 2 k u64 |A||B|
  fp32:    |C - AB| <= 2 (k + 2) u32 |A||B|
  tf32:    |C - AB| <= (2.1 2^-10 + 2 (k + 2) u32) |A||B|   (inputs rounded or truncated)
  tf32x3:  |C - AB| <= (2^-18 + 3 (k + 2) u32) |A||B|
  heterogeneous: |C - AB| <= 2 (k + 2) u32 |A_S||B_S| + 2 k u64 |A||B|
  bitwise: |C - AB| <= (3 (k + 2) + 2^(4 - upper_bits)) u32 |A||B| + 2 k u64 |A||B|
  ozaki:   |C - AB| <= 4 k (S + 3) 2^(-7 S) rA_i cB_j + (2 S + 2 + 4 k) u64 |A||B|
``error_bound(a, b, precision, ...)`` evaluates these bounds (float64 arrays);
``bound_coefficients`` gives their scalar factors, for bounds from operand norms.
``estimated_error`` is an a-priori RMS estimate relative to a typical element of |A||B|
(rounding errors as a random walk: bound / sqrt(k); for ozaki ozaki.estimate_factor times
the operands' dynamic ranges over k).

Policies: ``choose_mixed`` (precision="mixed": FP32-level accuracy as fast as the device
allows, aimed at ~0.1 kcal/mol RI-MP2 energies; Watson et al., MGEMM) and
``choose_precision`` (precision="auto": a relative accuracy target), both from the bounds
above and, on the GPU, the measured cost model ``GPU_RATES`` (ozaki_seconds,
tf32x3_seconds, dgemm_seconds).
"""

from __future__ import annotations

import math

import numpy as np

from hartree.errors import InputError

from . import ozaki
from .gemm_schemes import default_cutoff

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


def bound_coefficients(precision, k, *, slices=None, upper_bits=12):
    """(phi, psi): the scalars of the elementwise bounds of the module docstring written as
    |C - AB|_ij <= phi rA_i cB_j + psi (|A||B|)_ij for an inner dimension ``k`` (phi = 0 but
    for ozaki, which needs ``slices``; psi includes the FP64 term 2 k u64 of the schemes that
    sum in FP64); heterogeneous is not covered (its bound needs the split operands)."""
    if precision == "ozaki":
        if slices is None:
            raise InputError("bound_coefficients for ozaki needs slices")
        return ozaki.bound_factor(slices, k), (2.0 * slices + 2.0 + 4.0 * k) * U64
    if precision == "fp64":
        return 0.0, 2.0 * k * U64
    if precision in ("fp32", "tf32", "tf32x3", "bitwise"):
        return 0.0, _bound_coefficient(precision, k, upper_bits) + 2.0 * k * U64
    raise InputError(f"no scalar bound for mgemm precision {precision!r}")


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
            da, db = default_cutoff(np, a), default_cutoff(np, b)
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
    "PRECISIONS",
    "error_bound",
    "bound_coefficients",
    "estimated_error",
    "choose_precision",
    "choose_mixed",
    "gemm_flops",
    "ozaki_seconds",
    "dgemm_seconds",
    "tf32x3_seconds",
    "GPU_RATES",
    "GPU_SPLIT_GAIN",
    "OZAKI_ACCURACY",
]
