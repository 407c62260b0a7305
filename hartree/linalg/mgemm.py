"""mgemm: a GEMM with NumPy/CuPy semantics, matrix cleaving and mixed-precision schemes.

    c = mgemm(a, b, transa=False, transb=False, precision="fp64", memory_budget=None)
    c, info = mgemm(a, b, ..., return_info=True)      # info: MGEMMInfo (what was done)

C = op(A) op(B) with op(X) = X or X^T, returned in float64 in the array module of the inputs
(numpy -> numpy, cupy -> cupy; numpy inputs with device="gpu" -> numpy, computed on the GPU
through the streamed cleaver).  Schemes (``precision``; each described with its tile
product in :mod:`hartree.linalg.gemm_schemes`, its error bound in
:mod:`hartree.linalg.gemm_precision`):

  "fp64", "fp32", "tf32", "tf32x3"   IEEE / tensor-core products
  "heterogeneous", "bitwise"          the seed's splits (Watson et al., MGEMM, eqs. 29-32)
  "ozaki"    7-bit integer slices (hartree/linalg/ozaki.py); S = ``slices``, or the fewest
             that meet ``accuracy`` (default OZAKI_ACCURACY, FP64 level) by ozaki.slices_for.
  "mixed"    the policy's choice for ~0.1 kcal/mol in RI-MP2 (choose_mixed): FP32-level
             accuracy as fast as possible; on the GPU the faster (measured cost model) of
             tf32x3 and the INT8 Ozaki split with the fewest slices that reach FP32's
             estimated error, when faster than DGEMM; else fp64; on the CPU fp64.
  "auto"     choose_precision(...) for the relative ``accuracy`` target.

info.estimated_error is gemm_precision.estimated_error for the scheme that ran.

Cleaving: with ``memory_budget`` (bytes) the product is cut into tiles
(m_t x k_t)(k_t x n_t) whose working set (operand tiles, their low-precision copies and the
output tile, gemm_schemes.working_set_bytes() per element) fits the budget; k-tiles are
accumulated in FP64.  For host (numpy) operands on the GPU the default budget is 60% of the
free device memory split over two streams, and tiles are staged through pinned buffers with
transfers overlapping the products (mgemm_gpu.streamed).  For cupy operands the default
budget (60% of the free device memory plus the operands themselves) tiles only products
whose workspace (slices, copies) would not fit; the tiles then run one after the other on
the device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from hartree.arrays import array_module
from hartree.errors import DeviceError, InputError

from . import ozaki
from .gemm_precision import (
    GPU_RATES,
    OZAKI_ACCURACY,
    PRECISIONS,
    choose_mixed,
    choose_precision,
    dgemm_seconds,
    estimated_error,
)
from .gemm_schemes import default_cutoff, tile_product, working_set_bytes


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
    bop, bout = working_set_bytes(precision, slices)
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
        from hartree.device.selection import gpu_status

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
            da, db = default_cutoff(xp, a), default_cutoff(xp, b)
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
            return tile_product(array_module(at), at, bt, precision, info, upper_bits, slices)

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
        c = tile_product(xp, a, b, precision, info, upper_bits, slices)
        info.tiles = 1
        info.wall_time = time.perf_counter() - t0
        return (c, info) if return_info else c
    c = xp.zeros((m, n))
    for i0 in range(0, m, mt):
        for j0 in range(0, n, nt):
            for p0 in range(0, k, kt):
                at = xp.ascontiguousarray(a[i0 : i0 + mt, p0 : p0 + kt])
                bt = xp.ascontiguousarray(b[p0 : p0 + kt, j0 : j0 + nt])
                c[i0 : i0 + mt, j0 : j0 + nt] += tile_product(xp, at, bt, precision, info, upper_bits, slices)
                info.tiles += 1
    info.wall_time = time.perf_counter() - t0
    return (c, info) if return_info else c


__all__ = ["mgemm", "MGEMMInfo"]
