"""GPU side of mgemm (CuPy + cuBLAS): TF32 and INT8 tensor-core GEMMs, the Ozaki INT8 split,
device memory budget and the streamed cleaver for host-resident operands.

cupy is imported inside the functions only (never at import: no device query then).

cuBLAS is column-major; a row-major (r x c) array is a column-major (c x r) one, so the
row-major product C = A B is computed as C^T = B^T A^T (operands swapped).  Constants are
cuBLAS's enums (cublas_api.h / library_types.h).
"""

from __future__ import annotations

import numpy as np

from hartree.device import cuda_source
from hartree.errors import DeviceError

from . import ozaki

CUDA_R_32F, CUDA_R_8I, CUDA_R_32I = 0, 3, 10
CUBLAS_COMPUTE_32I, CUBLAS_COMPUTE_32F_FAST_TF32 = 72, 77
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_GEMM_DEFAULT = -1
#: INT8 operands padded to multiples of this (rows and k): aligned leading dimensions for
#: the IMMA (integer tensor-core) kernels; zero padding leaves the products unchanged
PAD = 16


def kernel_source() -> str:
    """CUDA text of hartree_ozaki_slice, hartree_row_absmax_sum and hartree_ozaki_sum
    (ozaki_kernels.cu)."""
    return cuda_source.read("hartree.linalg", "ozaki_kernels.cu")


_kernels = {}


def _cupy():
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - only without cupy
        raise DeviceError("mgemm on the GPU needs cupy") from exc
    return cupy


def _kernel(name):
    """RawKernel ``name`` from kernel_source() (compiled once per device; cupy caches on disk)."""
    cp = _cupy()
    key = (name, cp.cuda.Device().id)
    if key not in _kernels:
        _kernels[key] = cp.RawKernel(kernel_source(), name, options=("-std=c++17",))
    return _kernels[key]


def _cublas():
    cp = _cupy()
    from cupy_backends.cuda.libs import cublas

    return cublas, cp.cuda.device.get_cublas_handle()


def _gemm_ex(transa, transb, m, n, k, alpha, a_ptr, atype, lda, b_ptr, btype, ldb, beta, c_ptr, ctype, ldc, compute):
    """cublasGemmEx (column-major) with host scalars alpha, beta (numpy 0-d arrays)."""
    cublas, handle = _cublas()
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, 0)  # CUBLAS_POINTER_MODE_HOST
    try:
        cublas.gemmEx(
            handle,
            transa,
            transb,
            m,
            n,
            k,
            alpha.ctypes.data,
            a_ptr,
            atype,
            lda,
            b_ptr,
            btype,
            ldb,
            beta.ctypes.data,
            c_ptr,
            ctype,
            ldc,
            compute,
            CUBLAS_GEMM_DEFAULT,
        )
    finally:
        cublas.setPointerMode(handle, mode)


def tf32_matmul(a, b):
    """a (m, k) @ b (k, n) for cupy arrays on TF32 tensor cores (inputs rounded to TF32 by
    cuBLAS, FP32 accumulation: CUBLAS_COMPUTE_32F_FAST_TF32); float32 (m, n) result."""
    cp = _cupy()
    a = cp.ascontiguousarray(a, dtype=cp.float32)
    b = cp.ascontiguousarray(b, dtype=cp.float32)
    m, k = a.shape
    n = b.shape[1]
    c = cp.empty((m, n), dtype=cp.float32)
    if min(m, n, k) == 0:
        c.fill(0)
        return c
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    # C^T (n x m) = B^T (n x k) A^T (k x m), all column-major views of the row-major arrays
    _gemm_ex(
        CUBLAS_OP_N,
        CUBLAS_OP_N,
        n,
        m,
        k,
        one,
        b.data.ptr,
        CUDA_R_32F,
        n,
        a.data.ptr,
        CUDA_R_32F,
        k,
        zero,
        c.data.ptr,
        CUDA_R_32F,
        n,
        CUBLAS_COMPUTE_32F_FAST_TF32,
    )
    return c


def int8_gemm_nt(x, y, out):
    """out (mp, np_) int32 = x @ y.T exactly, for int8 row-major slice ranges x (mp, K) and
    y (np_, K) that share a row stride (leading dimension, elements) and whose rows are
    padded to multiples of PAD (INT8 tensor cores, INT32 accumulation)."""
    mp, kk = x.shape
    np_ = y.shape[0]
    ld = x.strides[0]
    if y.strides[0] != ld or x.strides[1] != 1 or y.strides[1] != 1:
        raise ValueError("int8_gemm_nt needs row ranges with unit column stride")
    one, zero = np.array(1, np.int32), np.array(0, np.int32)
    # C^T (np_ x mp, column-major = out row-major) = Y (np_ x K) X^T: "TN" form, Y and X
    # stored column-major as (K x np_) and (K x mp) with leading dimension ld
    _gemm_ex(
        CUBLAS_OP_T,
        CUBLAS_OP_N,
        np_,
        mp,
        kk,
        one,
        y.data.ptr,
        CUDA_R_8I,
        ld,
        x.data.ptr,
        CUDA_R_8I,
        ld,
        zero,
        out.data.ptr,
        CUDA_R_32I,
        np_,
        CUBLAS_COMPUTE_32I,
    )
    return out


def row_absmax_sum(x):
    """(max_p |x_ip|, sum_p |x_ip|) per row of x (rows, cols) cupy float64, one pass."""
    cp = _cupy()
    x = cp.ascontiguousarray(x, dtype=cp.float64)
    rows, cols = x.shape
    amax = cp.zeros(rows)
    asum = cp.zeros(rows)
    if rows and cols:
        _kernel("hartree_row_absmax_sum")((rows,), (256,), (x, np.int64(cols), amax, asum))
    return amax, asum


def dynamic_range(x):
    """GPU version of ozaki.dynamic_range (one pass over x)."""
    if x.size == 0:
        return 1.0
    cp = _cupy()
    amax, asum = row_absmax_sum(x)
    mean = float(asum.sum()) / x.size
    if mean == 0.0:
        return 1.0
    return max(1.0, float(cp.sqrt(cp.mean(amax * amax))) / mean)


def _padded(v):
    return -(-max(v, 1) // PAD) * PAD


def slice_rows_int8(x, nslice, reverse=False):
    """GPU version of ozaki.slice_rows (same values): x (rows, k) cupy float64 ->
    (slices int8 (rows_p, nslice, k_p) zero-padded, inv_scale (rows, 1))."""
    cp = _cupy()
    x = cp.ascontiguousarray(x, dtype=cp.float64)
    rows, cols = x.shape
    amax, _ = row_absmax_sum(x)  # same maxima as ozaki.row_exponents
    inv, _ = ozaki.exponents_from_max(cp, amax)
    kp = _padded(cols)
    out = cp.zeros((_padded(rows), nslice, kp), dtype=cp.int8)
    total = rows * cols
    if total:
        threads = 256
        _kernel("hartree_ozaki_slice")(
            ((total + threads - 1) // threads,),
            (threads,),
            (
                x,
                inv,
                out,
                np.int64(rows),
                np.int64(cols),
                np.int64(kp),
                np.int32(nslice),
                np.int32(1 if reverse else 0),
            ),
        )
    return out, inv[:, None]


def ozaki_int8(a, b, nslice):
    """A B (m, n) float64 by the INT8 Ozaki split (ozaki.py eqs. 1-2): S INT8 GEMM calls
    with INT32 accumulation, one per diagonal d = s + t, then one pass that sums the
    diagonals in FP64 and scales (hartree_ozaki_sum).  a (m, k), b (k, n) cupy float64;
    needs nslice * k <= ozaki.K_LIMIT_INT32 (the caller cleaves k)."""
    cp = _cupy()
    m, k = a.shape
    n = b.shape[1]
    if nslice * _padded(k) > ozaki.K_LIMIT_INT32:
        raise ValueError(f"ozaki_int8: {nslice} slices x k={k} overflow INT32; cleave k")
    qa, ia = slice_rows_int8(a, nslice)
    qb, ib = slice_rows_int8(b.T, nslice, reverse=True)
    p = ozaki_diagonals(qa, qb, nslice)
    mp, np_ = p.shape[1], p.shape[2]
    c = cp.empty((m, n))
    threads = 256
    _kernel("hartree_ozaki_sum")(
        ((m * n + threads - 1) // threads,),
        (threads,),
        (
            p,
            np.int64(mp * np_),
            np.int64(np_),
            np.int32(nslice),
            np.int32(nslice + 1),
            ia,
            cp.ascontiguousarray(ib[:, 0]),
            c,
            np.int64(m),
            np.int64(n),
        ),
    )
    return c


def ozaki_diagonals(qa, qb, nslice, out=None):
    """The INT32 diagonal products of eq. (2): P[t] = P_d for d = S + 1 - t (t = 0..S-1,
    smallest first), each ONE INT8 GEMM with inner dimension (d - 1) k_p.

    qa (m_p, S, k_p) int8 slices of A (order s = 1..S), qb (n_p, S, k_p) int8 slices of B^T
    in reverse order, both from slice_rows_int8; out: optional int32 (>= S, m_p, n_p)
    buffer.  Returns P (S, m_p, n_p) int32 (a view of out when given)."""
    cp = _cupy()
    mp, _, kp = qa.shape
    np_ = qb.shape[0]
    if nslice * kp > ozaki.K_LIMIT_INT32:
        raise ValueError(f"ozaki: {nslice} slices x k={kp} overflow INT32; cleave k")
    qa2 = qa.reshape(mp, nslice * kp)
    qb2 = qb.reshape(np_, nslice * kp)
    if out is None:
        p = cp.empty((nslice, mp, np_), dtype=cp.int32)
    else:
        p = out.reshape(-1)[: nslice * mp * np_].reshape(nslice, mp, np_)
    for t, d in enumerate(range(nslice + 1, 1, -1)):
        int8_gemm_nt(qa2[:, : (d - 1) * kp], qb2[:, (nslice - d + 1) * kp :], p[t])
    return p


def device_free_bytes():
    """Free device memory (bytes): the driver's free memory plus CuPy's pooled free blocks."""
    cp = _cupy()
    free, _ = cp.cuda.runtime.memGetInfo()
    return int(free + cp.get_default_memory_pool().free_bytes())


def streamed(a, b, tile_shape, tile_fn, info, nstreams=2):
    """C = a b (numpy float64 result) for host operands a (m, k), b (k, n) (numpy, any
    strides), staged through the device in tiles (m_t, n_t, k_t) = tile_shape.

    Each tile is copied into pinned host buffers, uploaded, multiplied by tile_fn(a_d, b_d)
    (cupy float64 tile) and downloaded on one of ``nstreams`` CUDA streams in turn, so that
    the transfers of one tile overlap the products of the other (the host prepares tile
    t + 1 while the device works on tile t); k-tiles are accumulated on the host in FP64."""
    cp = _cupy()
    import cupyx

    m, k = a.shape
    n = b.shape[1]
    mt, nt, kt = tile_shape
    c = np.zeros((m, n))
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(nstreams)]
    host_a = [cupyx.empty_pinned((mt * kt,)) for _ in range(nstreams)]
    host_b = [cupyx.empty_pinned((kt * nt,)) for _ in range(nstreams)]
    host_c = [cupyx.empty_pinned((mt * nt,)) for _ in range(nstreams)]
    pending = [None] * nstreams

    def flush(s):
        if pending[s] is not None:
            streams[s].synchronize()
            i0, j0, hc, _ = pending[s]
            c[i0 : i0 + hc.shape[0], j0 : j0 + hc.shape[1]] += hc
            pending[s] = None

    idx = 0
    for i0 in range(0, m, mt):
        for j0 in range(0, n, nt):
            for p0 in range(0, k, kt):
                s = idx % nstreams
                idx += 1
                flush(s)  # slot free again
                ma, na, ka = min(mt, m - i0), min(nt, n - j0), min(kt, k - p0)
                ha = host_a[s][: ma * ka].reshape(ma, ka)
                hb = host_b[s][: ka * na].reshape(ka, na)
                np.copyto(ha, a[i0 : i0 + ma, p0 : p0 + ka])
                np.copyto(hb, b[p0 : p0 + ka, j0 : j0 + na])
                with streams[s]:
                    da = cp.empty((ma, ka))
                    db = cp.empty((ka, na))
                    da.set(ha, stream=streams[s])
                    db.set(hb, stream=streams[s])
                    dc = tile_fn(da, db)
                    hc = host_c[s][: ma * na].reshape(ma, na)
                    dc.get(stream=streams[s], out=hc, blocking=False)
                pending[s] = (i0, j0, hc, idx)
                info.tiles += 1
                info.transfer_bytes += 8 * (ma * ka + ka * na + ma * na)
    for s in sorted(range(nstreams), key=lambda s: -1 if pending[s] is None else pending[s][3]):
        flush(s)  # in issue order (same sums as CPU)
    info.streams = nstreams
    return c


__all__ = [
    "row_absmax_sum",
    "dynamic_range",
    "tf32_matmul",
    "int8_gemm_nt",
    "slice_rows_int8",
    "ozaki_int8",
    "ozaki_diagonals",
    "streamed",
    "device_free_bytes",
]
