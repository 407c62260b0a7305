"""RI-MP2 on the GPU (CuPy): three-index integrals from generated kernels, GEMMs on the device.

Same equations as :mod:`hartree.mp2.rimp2` (seed eqs. 14, 18, 20, 21):

    (ia|P)  = sum_mu,nu C_mu,i C_nu,a (mu nu|P)        (mu nu|P) from hartree.gpu.eri3c
    V = (P|Q) = L L^T,     B = (ia|P) L^-T                                     (eq. 21)
    (ia|jb) = sum_Q B_ia,Q B_jb,Q                                              (eq. 20)
    E_OS, E_SS as in rimp2.py (RHF: j <= i only, pairs j < i weighted 2).

Steps and memory (every large array is bounded by the device budget):

1. (P|Q) and L^-1 on the device (Cholesky; eigen-decomposition V^-1/2 if V is not
   numerically positive definite).
2. (mu nu|P) in batches of aux shells (cartesian, ``ThreeCenterBuilder.int3c_cart``, layout
   g[mu, nu, P]), each batch transformed at once, per spin, with the orbital coefficients in
   the cartesian basis (C_cart = T C, T = cart->spherical): X[i, nu, P] = C_occ^T g,
   Y[i, a, P] = C_vir^T X[i], then the aux cart->spherical transform, giving columns P of
   the rows (i a) of (ia|P) (nocc nvir, naux).  The store lives on the device when it fits
   in half the budget, else in page-locked host memory (one upload per block).
3. B = (ia|P) M^T (M = L^-1) in row blocks, in place.
4. (ia|jb) for blocks of occupied orbitals (ni nvir x nj nvir, at most a quarter of the
   budget) and the energy sums of the block in one kernel (``_ENERGY_SOURCE``).

Precision (``MP2Options.precision``): the mgemm scheme of both GEMM steps (3 and 4), as on the
CPU (on cupy operands fp64 is DGEMM, fp32 SGEMM, tf32 TF32 tensor cores, tf32x3 mgemm's split
on TF32 tensor cores), except "mixed", which on the GPU is this module's mixed-precision
scheme (measured on an H200, batch 1: mgemm's accuracy policy chose FP64 for these shapes):

  mixed  step 3 in FP64 (L^-1 spans many orders of magnitude: TF32 there costs kcal/mol), and
         step 4 by a split-TF32 product on tensor cores: B = B_hi + B_lo, B_hi = tf32(B),
         (ia|jb) = B_hi,i B_hi,j^T + B_hi,i B_lo,j^T + B_lo,i B_hi,j^T, computed as ONE TF32
         GEMM over the concatenated inner index (3 naux), FP32 accumulation, result kept in
         FP32 for the energy kernel (sums in FP64).  FP32-like accuracy (~2^-22 relative per
         product) at tensor-core speed.

The schemes that actually ran are named in ``MP2Result.precision`` and ``gemm``.

With ``backend=EmulatedBackend()`` (tests without a GPU) the same driver runs on numpy with the
kernels compiled by g++ and the CPU energy kernel.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from hartree.errors import DeviceError, InputError
from hartree.linalg.mgemm import PRECISIONS, mgemm

__all__ = ["kernel_gpu", "GPU_PRECISIONS"]

#: the mgemm schemes (all of them run on cupy operands)
GPU_PRECISIONS = PRECISIONS

#: memory layout of the cartesian (mu nu|P) batches written by the kernels: "mnp" (P fastest:
#: each thread writes runs of consecutive P) or "pmn" (one (mu, nu) matrix per P)
THREE_INDEX_LAYOUT = "mnp"

_ENERGY_SOURCE = r"""
// hartree.mp2.rimp2_gpu: energy sums of one (ia|jb) block, v[(ii*nv1 + a)*nj*nv2 + jj*nv2 + b]
// (float or double: mp2_block_energy_f32 / _f64), sums in double:
// out[0] += w (ia|jb)^2 / D,  out[1] += w (ia|jb)(ib|ja) / D  (same spin only),
// D = e_i + e_j - e_a - e_b, w = 2 (j < i), 1 (j = i or not same), 0 (j > i).
// grid (ni*nj, ceil(nv1/32), ceil(nv2/32)), block (32, 8); 32x32 tiles via shared memory,
// warp-shuffle reduction, one atomic per warp in shared memory and one per block in global.
template <typename T>
__device__ void block_energy(const T* __restrict__ v, int ni, int nv1, int nj, int nv2,
    const double* __restrict__ eo1, const double* __restrict__ ev1,
    const double* __restrict__ eo2, const double* __restrict__ ev2, int i0, int j0, int same,
    double* __restrict__ out)
{
  __shared__ double ta[32][33];
  __shared__ double tb[32][33];
  __shared__ double red[2];
  const int ii = blockIdx.x / nj, jj = blockIdx.x % nj;
  const int i = i0 + ii, j = j0 + jj;
  if (same && j > i) return;
  const double w = (same && j < i) ? 2.0 : 1.0;
  const int a0 = blockIdx.y * 32, b0 = blockIdx.z * 32;
  const long long rs = (long long)nj * nv2;
  const T* blk = v + (long long)ii * nv1 * rs + (long long)jj * nv2;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (tx == 0 && ty == 0) { red[0] = 0.0; red[1] = 0.0; }
  for (int r = ty; r < 32; r += 8) {
    const int a = a0 + r, b = b0 + tx;
    ta[r][tx] = (a < nv1 && b < nv2) ? (double)blk[a * rs + b] : 0.0;          // (ia|jb)
    if (same) {
      const int bb = b0 + r, aa = a0 + tx;
      tb[r][tx] = (bb < nv1 && aa < nv2) ? (double)blk[bb * rs + aa] : 0.0;    // tb[b][a] = (ib|ja)
    }
  }
  __syncthreads();
  const double eij = eo1[i] + eo2[j];
  double sd = 0.0, sx = 0.0;
  const int b = b0 + tx;
  for (int r = ty; r < 32; r += 8) {
    const int a = a0 + r;
    if (a < nv1 && b < nv2) {
      const double x = ta[r][tx];
      const double t = x / (eij - ev1[a] - ev2[b]);
      sd += t * x;
      if (same) sx += t * tb[tx][r];
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    sd += __shfl_down_sync(0xffffffffu, sd, o);
    sx += __shfl_down_sync(0xffffffffu, sx, o);
  }
  if (tx == 0) {
    atomicAdd(&red[0], sd);
    if (same) atomicAdd(&red[1], sx);
  }
  __syncthreads();
  if (tx == 0 && ty == 0) {
    atomicAdd(out, w * red[0]);
    if (same) atomicAdd(out + 1, w * red[1]);
  }
}

#define ARGS int ni, int nv1, int nj, int nv2, const double* __restrict__ eo1, \
    const double* __restrict__ ev1, const double* __restrict__ eo2, \
    const double* __restrict__ ev2, int i0, int j0, int same, double* __restrict__ out
extern "C" __global__ void __launch_bounds__(256) mp2_block_energy_f64(const double* __restrict__ v, ARGS)
{ block_energy<double>(v, ni, nv1, nj, nv2, eo1, ev1, eo2, ev2, i0, j0, same, out); }
extern "C" __global__ void __launch_bounds__(256) mp2_block_energy_f32(const float* __restrict__ v, ARGS)
{ block_energy<float>(v, ni, nv1, nj, nv2, eo1, ev1, eo2, ev2, i0, j0, same, out); }
"""


# ----------------------------------------------------------------------------- GEMMs
def gemm_nt(a, b, precision, xp=np, memory_budget=None):
    """C = a b^T in float64, a (m, k), b (n, k), through ``hartree.linalg.mgemm``; returns
    (C, text naming the scheme that ran).  memory_budget: bytes for mgemm's working set (it
    cleaves the product into tiles above it; None on numpy)."""
    c, info = mgemm(a, b, transb=True, precision=precision, return_info=True,
                    memory_budget=None if xp is np else memory_budget)
    ran = info.precision
    if getattr(info, "slices", None) and ran == "ozaki":
        ran += f" ({info.slices} slices)"
    return c, (ran if ran == precision else f"{precision} -> {ran}")


def _tf32_split(xp, x):
    """(hi, lo) float32: hi = x rounded to nearest TF32 (10 explicit mantissa bits),
    lo = fp32(x - hi); x = hi + lo to ~2^-22 relative after TF32 truncation of lo."""
    bits = x.astype(xp.float32).view(xp.uint32)
    hi = ((bits + xp.uint32(0x1000)) & xp.uint32(0xFFFFE000)).view(xp.float32)
    lo = (x - hi).astype(xp.float32)
    return hi, lo


def split_tf32_nt(a, b, xp=np):
    """a b^T (float32 result) by the split-TF32 product of the GPU "mixed" scheme: one TF32
    GEMM of [a_hi a_hi a_lo] and [b_hi b_lo b_hi] over the concatenated inner index (3k),
    i.e. a_hi b_hi^T + a_hi b_lo^T + a_lo b_hi^T with FP32 accumulation (the dropped
    a_lo b_lo^T is ~2^-22 relative).  On numpy (emulation) an FP32 product."""
    ah, al = _tf32_split(xp, a)
    a3 = xp.concatenate([ah, ah, al], axis=1)
    del ah, al
    bh, bl = _tf32_split(xp, b)
    b3 = xp.concatenate([bh, bl, bh], axis=1)
    del bh, bl
    if xp is np:
        return a3 @ b3.T
    from hartree.linalg import mgemm_gpu
    return mgemm_gpu.tf32_matmul(a3, b3.T)


# ----------------------------------------------------------------------------- helpers
def _metric_factor(xp, v):
    """M with V^-1 = M^T M (see rimp2.metric_factor), on the device."""
    if xp is np:
        from hartree.mp2.rimp2 import metric_factor
        return metric_factor(v)
    import cupyx.scipy.linalg as cla

    try:
        low = xp.linalg.cholesky(v)
        ok = bool(xp.isfinite(low).all())
    except np.linalg.LinAlgError:
        ok = False
    if not ok:
        w, u = xp.linalg.eigh(v)
        keep = w > 1e-12 * w.max()
        return (u[:, keep] / xp.sqrt(w[keep])).T
    return cla.solve_triangular(low, xp.eye(v.shape[0]), lower=True)


def _free_bytes(xp):
    if xp is np:
        return 4 << 30
    pool = xp.get_default_memory_pool()
    free, _ = xp.cuda.Device().mem_info
    return int(free + pool.free_bytes())


class _Log:
    def __init__(self):
        self.steps = {}

    def add(self, step, scheme, seconds):
        rec = self.steps.setdefault(step, {"step": step, "precision": scheme, "calls": 0,
                                           "seconds": 0.0})
        rec["calls"] += 1
        rec["seconds"] += seconds


def _sync(xp):
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


# ----------------------------------------------------------------------------- driver
def kernel_gpu(scf_result, options, spaces, aux, nfrozen, backend=None):
    """RI-MP2 energy on the GPU; arguments prepared by :func:`hartree.mp2.rimp2.kernel`.

    spaces: per spin (C_occ (nao, no), C_vir (nao, nv), e_occ, e_vir) numpy arrays.
    backend: None (CUDA through cupy) or a hartree.gpu backend (emulated: numpy).
    Returns an MP2Result.
    """
    from hartree.gpu.eri3c import ThreeCenterBuilder
    from hartree.mp2.result import MP2Result

    t_all = time.perf_counter()
    if backend is None:
        try:
            from hartree.gpu.jk import CudaBackend
            backend = CudaBackend()
        except ImportError as exc:
            raise DeviceError("GPU RI-MP2 needs cupy (pip install cupy-cuda13x)") from exc
    xp = backend.xp
    if options.precision not in GPU_PRECISIONS:
        raise InputError(f"GPU RI-MP2 precision must be one of {', '.join(GPU_PRECISIONS)}, "
                         f"got {options.precision!r}")
    basis = scf_result.basis
    timings, log = {}, _Log()
    budget = (int(options.gpu_memory_mb * 1e6) if options.gpu_memory_mb
              else int(0.85 * _free_bytes(xp)))

    t = time.perf_counter()
    tb = ThreeCenterBuilder(basis, aux, backend)
    tb.prepare()
    _sync(xp)
    timings["setup_compile"] = time.perf_counter() - t

    t = time.perf_counter()
    m = _metric_factor(xp, tb.int2c())
    naux = aux.nao
    if m.shape[0] != naux:      # singular metric: zero rows keep B's width
        m = xp.concatenate([m, xp.zeros((naux - m.shape[0], naux))], axis=0)
    _sync(xp)
    timings["metric"] = time.perf_counter() - t

    # ---- (ia|P) store
    sizes = [co.shape[1] * cv.shape[1] for co, cv, _, _ in spaces]
    store_bytes = 8 * naux * sum(sizes)
    on_device = xp is np or (store_bytes <= budget // 2 and not options.gpu_host_store)
    alloc = xp.empty if on_device else _pinned_empty
    stores = [alloc((r, naux)) for r in sizes]
    rest = budget - (store_bytes if on_device and xp is not np else 0)

    t = time.perf_counter()
    _three_index(xp, tb, spaces, stores, rest, options)
    _sync(xp)
    timings["three_index"] = time.perf_counter() - t

    t = time.perf_counter()
    for st in stores:
        _to_b(xp, st, m, options.precision, rest, log)
    del m
    _sync(xp)
    timings["B"] = time.perf_counter() - t

    t = time.perf_counter()
    e_os, e_ss, nocc, nvir = _energies(xp, backend, spaces, stores, options.precision, rest,
                                       log)
    timings["energy"] = time.perf_counter() - t
    device = getattr(backend, "name", "cuda")
    if xp is not np:
        from hartree.gpu.engine import GPUEngine
        device = GPUEngine(scf_result.molecule, basis).device
    where = "device memory" if on_device else "host memory"
    ran = {st["step"]: st["precision"] for st in log.steps.values() if st["step"] != "energy"}
    label = options.precision
    if any(v != options.precision for v in ran.values()):
        label += " (" + ", ".join(f"{k}: {v}" for k, v in ran.items()) + ")"
    return MP2Result(reference=scf_result.method.lower(), scf_energy=float(scf_result.energy),
                     correlation_energy=e_os + e_ss, opposite_spin=e_os, same_spin=e_ss,
                     frozen_core=nfrozen, nocc=nocc, nvir=nvir, aux_basis=aux.name, naux=naux,
                     precision=label, device=f"gpu: {device}; (ia|P) in {where}",
                     wall_time=time.perf_counter() - t_all, timings=timings,
                     gemm=list(log.steps.values()))


def _pinned_empty(shape):
    """Host array in page-locked memory (fast uploads)."""
    import cupyx
    return cupyx.empty_pinned(shape, dtype=np.float64)


def _three_index(xp, tb, spaces, stores, budget, options):
    """Fill stores[s] (no*nv, naux) with (ia|P) per spin, aux-shell batch by batch."""
    basis, aux = tb.basis, tb.aux
    nc = basis.ncart
    cmo = [(tb.C @ xp.asarray(co), tb.C @ xp.asarray(cv)) for co, cv, _, _ in spaces]
    nomax = max(co.shape[1] for co, _, _, _ in spaces)
    nvmax = max(cv.shape[1] for _, cv, _, _ in spaces)
    per_fun = 8 * (nc * nc + nomax * nc + 3 * nomax * nvmax)      # bytes per aux cart fn
    cap = max(1, int(0.6 * budget) // per_fun)
    if options.aux_batch:
        cap = min(cap, int(options.aux_batch))
    cl, al = np.asarray(aux.cart_loc), np.asarray(aux.ao_loc)
    batches, s0 = [], 0
    for s in range(1, aux.nshell + 1):                 # contiguous shell ranges <= cap
        if cl[s] - cl[s0] > cap and s - 1 > s0:
            batches.append((s0, s - 1))
            s0 = s - 1
    batches.append((s0, aux.nshell))
    buf = xp.empty(min(int(cl[-1]), max(int(cl[b1] - cl[b0]) for b0, b1 in batches)) * nc * nc)
    p_last = THREE_INDEX_LAYOUT == "mnp"
    for b0, b1 in batches:
        g = tb.int3c_cart((b0, b1), out=buf, p_last=p_last)
        npc = int(cl[b1] - cl[b0])
        caux = tb.C_aux[cl[b0]:cl[b1], al[b0]:al[b1]]             # (nPc, nPs)
        for (co, cv), st in zip(cmo, stores):
            no, nv = co.shape[1], cv.shape[1]
            if p_last:                                                # g (mu, nu, P)
                x = (co.T @ g.reshape(nc, nc * npc)).reshape(no, nc, npc)
                y = xp.matmul(cv.T, x)                                # (no, nv, nPc)
                del x
                z = y.reshape(no * nv, npc) @ caux                    # (no*nv, nPs)
            else:                                                     # g (P, mu, nu)
                x = (g.reshape(npc * nc, nc) @ co).reshape(npc, nc, no)
                y = xp.matmul(x.transpose(0, 2, 1), cv)               # (nPc, no, nv)
                del x
                z = (caux.T @ y.reshape(npc, no * nv)).T              # (no*nv, nPs)
            del y
            st[:, al[b0]:al[b1]] = z.get() if isinstance(st, np.ndarray) and xp is not np else z
            del z


def _to_b(xp, st, m, precision, budget, log):
    """B = (ia|P) M^T in place, row block by row block (eq. 21), by ``precision`` (FP64 for
    "mixed", see the module docstring)."""
    nrow, naux = st.shape
    if nrow == 0:
        return
    rows = max(1, int(0.3 * budget) // (8 * 3 * naux))
    for r0 in range(0, nrow, rows):
        r1 = min(nrow, r0 + rows)
        t = time.perf_counter()
        blk = xp.asarray(st[r0:r1])
        p = "fp64" if precision == "mixed" else precision        # mixed: B in FP64
        c, scheme = gemm_nt(blk, m, p, xp, int(0.3 * budget))
        if isinstance(st, np.ndarray) and xp is not np:
            st[r0:r1] = c.get()
        else:
            st[r0:r1] = c
        _sync(xp)
        log.add("B", scheme, time.perf_counter() - t)


def _block_sizes(no1, nv1, no2, nv2, naux, budget):
    """(ni, nj) occupied block sizes: the (ia|jb) block (8 bytes) plus operand copies (up to
    3 x 8 bytes per element for the split schemes) within a quarter of ``budget``."""
    def need(ni, nj):
        return 8 * ni * nv1 * nj * nv2 * 2 + 24 * naux * (ni * nv1 + nj * nv2)

    ni = nj = max(no1, no2)
    while (ni > 1 or nj > 1) and need(min(ni, no1), min(nj, no2)) > budget // 4:
        ni, nj = max(1, (ni + 1) // 2), max(1, (nj + 1) // 2)
    return min(ni, no1), min(nj, no2)


def _energies(xp, backend, spaces, stores, precision, budget, log):
    """(E_OS, E_SS, nocc, nvir) as rimp2._energies, on the device."""
    if len(spaces) == 1:
        _, _, eo, ev = spaces[0]
        d, x = _pair_sums(xp, backend, stores[0], stores[0], eo, ev, eo, ev, True, precision,
                          budget, log)
        return d, d - x, len(eo), len(ev)
    e_ss = 0.0
    for s in (0, 1):
        _, _, eo, ev = spaces[s]
        d, x = _pair_sums(xp, backend, stores[s], stores[s], eo, ev, eo, ev, True, precision,
                          budget, log)
        e_ss += 0.5 * (d - x)
    (_, _, ao, av), (_, _, bo, bv) = spaces
    e_os, _ = _pair_sums(xp, backend, stores[0], stores[1], ao, av, bo, bv, False, precision,
                         budget, log)
    return e_os, e_ss, (len(ao), len(bo)), (len(av), len(bv))


def _pair_sums(xp, backend, b1, b2, e1o, e1v, e2o, e2v, same, precision, budget, log):
    """(sum w (ia|jb)^2/D, sum w (ia|jb)(ib|ja)/D) over blocks of i and j (j <= i if same)."""
    no1, nv1, no2, nv2 = len(e1o), len(e1v), len(e2o), len(e2v)
    if min(no1, nv1, no2, nv2) == 0:
        return 0.0, 0.0
    naux = b1.shape[1]
    ni, nj = _block_sizes(no1, nv1, no2, nv2, naux, budget)
    if same:
        ni = nj = min(ni, nj)
    dev = [xp.asarray(np.ascontiguousarray(e, dtype=np.float64)) for e in (e1o, e1v, e2o, e2v)]
    acc = xp.zeros(2)
    energy = None if xp is np else _energy_kernel(backend)
    for i0 in range(0, no1, ni):
        i1 = min(no1, i0 + ni)
        bi = xp.asarray(b1[i0 * nv1:i1 * nv1])
        jend = i1 if same else no2
        for j0 in range(0, jend, nj):
            j1 = min(jend, j0 + nj)
            t = time.perf_counter()
            bj = bi if (same and j0 == i0 and j1 == i1) else xp.asarray(b2[j0 * nv2:j1 * nv2])
            if precision == "mixed":              # split-TF32 on tensor cores (docstring)
                v, scheme = split_tf32_nt(bi, bj, xp), "split-TF32 (3 products, 1 TF32 GEMM)"
            else:
                v, scheme = gemm_nt(bi, bj, precision, xp, budget // 4)
            v = xp.ascontiguousarray(v)
            _sync(xp)
            log.add("(ia|jb)", scheme, time.perf_counter() - t)
            t = time.perf_counter()
            if energy is None:
                from hartree.mp2.rimp2 import _block_energy
                d, x = _block_energy(v.reshape(i1 - i0, nv1, j1 - j0, nv2), e1o, e1v, e2o,
                                     e2v, i0, j0, same)
                acc += (d, x)
            else:
                grid = ((i1 - i0) * (j1 - j0), (nv1 + 31) // 32, (nv2 + 31) // 32)
                kname = "mp2_block_energy_f32" if v.dtype == np.float32 else "mp2_block_energy_f64"
                energy.launch(kname, grid, (32, 8), [
                    v, np.int32(i1 - i0), np.int32(nv1), np.int32(j1 - j0), np.int32(nv2),
                    *dev, np.int32(i0), np.int32(j0), np.int32(same), acc])
            del v
            _sync(xp)
            log.add("energy", "fp64 kernel", time.perf_counter() - t)
    acc = acc.get() if xp is not np else acc
    return float(acc[0]), float(acc[1])


@functools.lru_cache(maxsize=8)
def _energy_module(device_id):
    import cupy

    return _RawLauncher(cupy.RawModule(code=_ENERGY_SOURCE, options=("-std=c++17",)))


def _energy_kernel(backend):
    """The energy kernel (compiled once per device and process; cupy caches it on disk)."""
    return _energy_module(backend.xp.cuda.Device().id)


class _RawLauncher:
    def __init__(self, module):
        self.module = module

    def launch(self, name, grid, block, args):
        f = self.module.get_function(name)
        f(tuple(grid), tuple(block) + (1,) * (3 - len(block)), tuple(args))
