"""RI-MP2 on the GPU, step 4: (ia|jb) blocks and their energy sums (see rimp2_gpu.py).

For blocks of occupied orbitals i (and j <= i for one spin) the product (ia|jb) = B_i B_j^T
(seed eq. 20) is formed by mgemm's scheme for the requested precision, or for "mixed" by the
INT8 Ozaki split with an energy-calibrated slice count, and the sums

    E_direct   = sum_ij w_ij sum_ab (ia|jb)^2 / D_ijab,
    E_exchange = sum_ij w_ij sum_ab (ia|jb)(ib|ja) / D_ijab,   D_ijab = e_i + e_j - e_a - e_b,

(w = 2 for j < i, 1 for j = i within one spin, 1 between spins; seed eq. 14 split as in
rimp2.py) are accumulated by one fused CUDA kernel per block (_ENERGY_SOURCE), or by the
numba kernel of rimp2.py when the driver runs on numpy (emulation).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from hartree.linalg.mgemm import mgemm

__all__ = [
    "energies",
    "block_sizes",
    "gemm_nt",
    "Log",
    "sync",
    "calibration_note",
    "MIXED_TARGET_EH",
    "MIXED_SLICES",
    "MIXED_SAFETY",
]

_ENERGY_SOURCE = r"""
// hartree.mp2.rimp2_gpu: energy sums of one (ia|jb) block; the element (ia|jb) is
// V(ii*nv1 + a, jj*nv2 + b) of a row-major block matrix read through a loader:
//   mp2_block_energy_f64 / _f32: V stored (double / float), leading dimension ld;
//   mp2_block_energy_ozaki<S> (S = 1..8 slices): V formed on the fly from the INT32 diagonal
//   products of the Ozaki split (hartree/linalg/ozaki.py eq. 2):
//   V = (sum_{t<S} 2^(-7 (S+1-t)) P_t) sa_r sb_c, sa = 1/ia, sb = 1/ib (powers of two): every
//   product is exact, so the values are bit for bit those of mgemm_gpu's hartree_ozaki_sum
//   (ldexp, division); no FP64 block is written or read, the S INT32 loads of an element are
//   issued together (S is a template parameter: a run-time loop serialised them, 3x slower).
// Sums in double:
// out[0] += w (ia|jb)^2 / D,  out[1] += w (ia|jb)(ib|ja) / D  (same spin only),
// D = e_i + e_j - e_a - e_b, w = 2 (j < i), 1 (j = i or not same), 0 (j > i).
// grid (ni*nj, ceil(nv1/32), ceil(nv2/32)), block (32, 8); 32x32 tiles via shared memory,
// warp-shuffle reduction, one atomic per warp in shared memory and one per block in global.
template <typename T> struct Stored {
  const T* __restrict__ v; long long ld;
  __device__ __forceinline__ double operator()(long long r, long long c) const {
    return (double)v[r * ld + c];
  }
};
template <int S> struct Ozaki {          // S slices: S INT32 loads issued together
  const int* __restrict__ p; const double* __restrict__ sa; const double* __restrict__ sb;
  long long pstride, ld; double w0;                                  // w0 = 2^(-7 (S+1))
  __device__ __forceinline__ double operator()(long long r, long long c) const {
    const int* q = p + r * ld + c;
    int v[S];
#pragma unroll
    for (int t = 0; t < S; ++t) v[t] = q[t * pstride];
    double s = 0.0, w = w0;
#pragma unroll
    for (int t = 0; t < S; ++t, w *= 128.0) s += (double)v[t] * w;  // exact products
    return s * sa[r] * sb[c];                                        // exact: powers of two
  }
};

template <typename L>
__device__ void block_energy(const L val, int ni, int nv1, int nj, int nv2,
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
  const long long r0 = (long long)ii * nv1, c0 = (long long)jj * nv2;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (tx == 0 && ty == 0) { red[0] = 0.0; red[1] = 0.0; }
  for (int r = ty; r < 32; r += 8) {
    const int a = a0 + r, b = b0 + tx;
    ta[r][tx] = (a < nv1 && b < nv2) ? val(r0 + a, c0 + b) : 0.0;            // (ia|jb)
    if (same) {
      const int bb = b0 + r, aa = a0 + tx;
      tb[r][tx] = (bb < nv1 && aa < nv2) ? val(r0 + bb, c0 + aa) : 0.0;       // tb[b][a] = (ib|ja)
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
#define PASS ni, nv1, nj, nv2, eo1, ev1, eo2, ev2, i0, j0, same, out
extern "C" __global__ void __launch_bounds__(256)
mp2_block_energy_f64(const double* __restrict__ v, long long ld, ARGS)
{ block_energy(Stored<double>{v, ld}, PASS); }
extern "C" __global__ void __launch_bounds__(256)
mp2_block_energy_f32(const float* __restrict__ v, long long ld, ARGS)
{ block_energy(Stored<float>{v, ld}, PASS); }
#define OZAKI(S) extern "C" __global__ void __launch_bounds__(256) \
mp2_block_energy_ozaki##S(const int* __restrict__ p, long long pstride, long long ld, \
    double w0, const double* __restrict__ sa, const double* __restrict__ sb, ARGS) \
{ block_energy(Ozaki<S>{p, sa, sb, pstride, ld, w0}, PASS); }
OZAKI(1) OZAKI(2) OZAKI(3) OZAKI(4) OZAKI(5) OZAKI(6) OZAKI(7) OZAKI(8)
"""


# ----------------------------------------------------------------------------- GEMMs
def gemm_nt(a, b, precision, xp=np, memory_budget=None):
    """C = a b^T in float64, a (m, k), b (n, k), through ``hartree.linalg.mgemm``; returns
    (C, text naming the scheme that ran).  memory_budget: bytes for mgemm's working set (it
    cleaves the product into tiles above it; None on numpy)."""
    c, info = mgemm(
        a, b, transb=True, precision=precision, return_info=True, memory_budget=None if xp is np else memory_budget
    )
    ran = info.precision
    if getattr(info, "slices", None) and ran == "ozaki":
        ran += f" ({info.slices} slices)"
    return c, (ran if ran == precision else f"{precision} -> {ran}")


# ----------------------------------------------------------------------------- helpers
class Log:
    """Seconds and calls per (step, scheme); ``prefix`` tags the calibration's calls."""

    def __init__(self):
        self.steps = {}
        self.prefix = ""

    def add(self, step, scheme, seconds):
        step = self.prefix + step
        rec = self.steps.setdefault((step, scheme), {"step": step, "precision": scheme, "calls": 0, "seconds": 0.0})
        rec["calls"] += 1
        rec["seconds"] += seconds

    def seconds(self, step):
        return sum(r["seconds"] for r in self.steps.values() if r["step"] == step)

    def schemes(self, step):
        return [r["precision"] for r in self.steps.values() if r["step"] == step]


def sync(xp):
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


# ----------------------------------------------------------------------------- energies
def calibration_note(rec):
    """One line on a "mixed" calibration record (see _calibrate)."""
    tried = ", ".join(
        f"S={t['slices']}: {t['estimated_error_eh']:.1e} Eh"
        if "skipped" not in t
        else f"S={t['slices']}: {t['skipped']}"
        for t in rec["tried"]
    )
    chosen = (
        f"ozaki INT8 with {rec['slices']} slices"
        if rec["slices"]
        else "fp64 (no slice count met the target faster than DGEMM)"
    )
    return (
        f"mixed: (ia|jb) by {chosen}; calibrated on the energy of a "
        f"{rec['block'][0]}x{rec['block'][1]}x{rec['block'][2]} block against FP64, "
        f"extrapolated errors {tried} (target {rec['target_eh']:.1e} Eh / "
        f"{MIXED_SAFETY:g})"
    )


def block_sizes(no1, nv1, no2, nv2, naux, budget, out_bytes=16):
    """(ni, nj) occupied block sizes: the (ia|jb) block (``out_bytes`` per element: FP64
    block and temporaries 16; the Ozaki split's INT32 diagonals and calibration 28) plus
    operand copies and slices (up to 24 bytes per operand element) within a quarter of
    ``budget``."""

    def need(ni, nj):
        return out_bytes * ni * nv1 * nj * nv2 + 24 * naux * (ni * nv1 + nj * nv2)

    ni = nj = max(no1, no2)
    while (ni > 1 or nj > 1) and need(min(ni, no1), min(nj, no2)) > budget // 4:
        ni, nj = max(1, (ni + 1) // 2), max(1, (nj + 1) // 2)
    return min(ni, no1), min(nj, no2)


def energies(xp, backend, spaces, stores, precision, budget, log):
    """(E_OS, E_SS, nocc, nvir, calibration records) as rimp2._energies, on the device.
    With "mixed" each of the one (RHF) or three (UHF) pair sums gets an equal share of
    MIXED_TARGET_EH."""
    ctx = _Ctx(xp, backend, precision, budget, log)
    if len(spaces) == 1:
        _, _, eo, ev = spaces[0]
        d, x = _pair_sums(ctx, stores[0], stores[0], eo, ev, eo, ev, True, MIXED_TARGET_EH)
        return d, d - x, len(eo), len(ev), ctx.calibration
    e_ss = 0.0
    share = MIXED_TARGET_EH / 3.0
    for s in (0, 1):
        _, _, eo, ev = spaces[s]
        d, x = _pair_sums(ctx, stores[s], stores[s], eo, ev, eo, ev, True, share)
        e_ss += 0.5 * (d - x)
    (_, _, ao, av), (_, _, bo, bv) = spaces
    e_os, _ = _pair_sums(ctx, stores[0], stores[1], ao, av, bo, bv, False, share)
    return e_os, e_ss, (len(ao), len(bo)), (len(av), len(bv)), ctx.calibration


class _Ctx:
    """What the pair sums share: array module, energy kernels, budget, log, calibration."""

    def __init__(self, xp, backend, precision, budget, log):
        self.xp, self.precision, self.budget, self.log = xp, precision, budget, log
        self.kernels = None if xp is np else _energy_kernel(backend)
        self.calibration = []  # one record per pair sum ("mixed")


#: "mixed" RI-MP2: the goal for the energy error of the INT8 Ozaki (ia|jb), Eh (0.1 kcal/mol)
MIXED_TARGET_EH = 0.1 / 627.509474
#: slice counts tried by the calibration, fewest first
MIXED_SLICES = (2, 3, 4, 5)
#: the calibration accepts S when the extrapolated error is below the target / this factor
MIXED_SAFETY = 10.0


def _blocks(no1, no2, ni, nj, same):
    """[(i0, i1, [(j0, j1), ...]), ...]: occupied blocks, j <= i when ``same``."""
    out = []
    for i0 in range(0, no1, ni):
        i1 = min(no1, i0 + ni)
        jend = i1 if same else no2
        out.append((i0, i1, [(j0, min(jend, j0 + nj)) for j0 in range(0, jend, nj)]))
    return out


def _pair_sums(ctx, b1, b2, e1o, e1v, e2o, e2v, same, target):
    """(sum w (ia|jb)^2/D, sum w (ia|jb)(ib|ja)/D) over blocks of i and j (j <= i if same),
    b1 (no1*nv1, naux), b2 (no2*nv2, naux) B tensors (device or host).

    precision "mixed": (ia|jb) by the INT8 Ozaki split (hartree/linalg/ozaki.py) with the
    slice count S calibrated on the energy (_calibrate) and the diagonals consumed directly
    by the energy kernel; other precisions: mgemm's scheme and the stored-block kernel."""
    xp = ctx.xp
    no1, nv1, no2, nv2 = len(e1o), len(e1v), len(e2o), len(e2v)
    if min(no1, nv1, no2, nv2) == 0:
        return 0.0, 0.0
    naux = b1.shape[1]
    mixed = ctx.precision == "mixed"
    ni, nj = block_sizes(no1, nv1, no2, nv2, naux, ctx.budget, 28 if mixed else 16)
    if same:
        ni = nj = min(ni, nj)
    ev = [xp.asarray(np.ascontiguousarray(e, dtype=np.float64)) for e in (e1o, e1v, e2o, e2v)]
    blk = _Block(ctx, ev, (e1o, e1v, e2o, e2v), same)
    acc = xp.zeros(2)
    plan = _blocks(no1, no2, ni, nj, same)
    slices, done = None, None
    if mixed:  # the calibration block's sums (in the chosen scheme) are kept
        slices, first = _calibrate(ctx, blk, b1, b2, plan, nv1, nv2, (no1, no2), target)
        acc += xp.asarray(first)
        done = (plan[0][0], plan[0][2][0][0])
    # reverse-order slices of the j blocks are kept for reuse when they fit an eighth of the
    # budget (one slicing pass per j block instead of one per block pair)
    keep = slices is not None and xp is not np and (slices + 1) * no2 * nv2 * (naux + 16) <= ctx.budget // 8
    jslices = {}
    for i0, i1, js in plan:
        bi = xp.asarray(b1[i0 * nv1 : i1 * nv1])
        qa = None
        for j0, j1 in js:
            if (i0, j0) == done:
                continue
            diag = same and j0 == i0 and j1 == i1
            if slices:
                if qa is None:
                    qa = blk.slice(bi, slices, False)
                qb = jslices.get(j0)
                if qb is None:
                    bj = bi if diag else xp.asarray(b2[j0 * nv2 : j1 * nv2])
                    qb = blk.slice(bj, slices, True)
                    if keep:
                        jslices[j0] = qb
                blk.ozaki(qa, qb, slices, i0, i1, j0, j1, acc)
            else:
                bj = bi if diag else xp.asarray(b2[j0 * nv2 : j1 * nv2])
                p = "fp64" if mixed else ctx.precision
                blk.stored(bi, bj, p, i0, i1, j0, j1, acc)
    acc = acc.get() if xp is not np else acc
    return float(acc[0]), float(acc[1])


def _calibrate(ctx, blk, b1, b2, plan, nv1, nv2, nocc, target):
    """Slice count S of the Ozaki (ia|jb) for "mixed", calibrated on the energy: the first
    block pair (i, j in the first occupied blocks) is evaluated in FP64 and with S = 2, 3, ...
    slices; the error of the block's energy sums, 2 |dE_direct| + |dE_exchange|, is scaled
    by (all weighted pairs / the block's weighted pairs) -- the slicing error per pair does
    not decay with the i-j distance the way the pair energies do, so the absolute error per
    pair is extrapolated, not the relative one -- and the first S whose extrapolated error is
    below ``target`` / MIXED_SAFETY is taken, if the cost model predicts the split faster
    than DGEMM (mgemm.ozaki_seconds vs dgemm_seconds); else None (FP64).
    Returns (S or None, the block's (direct, exchange) sums in that scheme)."""
    from hartree.linalg.mgemm import GPU_SPLIT_GAIN, dgemm_seconds, ozaki_seconds

    xp = ctx.xp
    i0, i1, js = plan[0]
    j0, j1 = js[0]
    same = blk.same
    bi = xp.asarray(b1[i0 * nv1 : i1 * nv1])
    bj = bi if (same and j0 == i0 and j1 == i1) else xp.asarray(b2[j0 * nv2 : j1 * nv2])
    m, n, k = bi.shape[0], bj.shape[0], bi.shape[1]
    pairs_blk = float(
        sum((2.0 if (same and j < i) else 1.0) for i in range(i0, i1) for j in range(j0, j1) if not (same and j > i))
    )
    pairs_all = float(nocc[0] * nocc[1])
    ctx.log.prefix = "calibration "
    ref = xp.zeros(2)
    blk.stored(bi, bj, "fp64", i0, i1, j0, j1, ref)
    ref = ref.get() if xp is not np else ref
    rec = {
        "block": (m, n, k),
        "pairs_block": pairs_blk,
        "pairs_all": pairs_all,
        "target_eh": target,
        "fp64": [float(ref[0]), float(ref[1])],
        "tried": [],
    }
    ctx.calibration.append(rec)
    chosen = None
    t64 = dgemm_seconds(m, n, k)
    for s in MIXED_SLICES:
        if xp is not np and ozaki_seconds(m, n, k, s) * GPU_SPLIT_GAIN > t64:
            rec["tried"].append({"slices": s, "skipped": "predicted slower than DGEMM"})
            break
        out = xp.zeros(2)
        blk.ozaki(blk.slice(bi, s, False), blk.slice(bj, s, True), s, i0, i1, j0, j1, out)
        out = out.get() if xp is not np else out
        err = 2.0 * abs(float(out[0]) - float(ref[0])) + abs(float(out[1]) - float(ref[1]))
        est = err * pairs_all / max(pairs_blk, 1.0)
        rec["tried"].append({"slices": s, "block_error_eh": err, "estimated_error_eh": est})
        if est <= target / MIXED_SAFETY:
            chosen, ref = s, out
            break
    ctx.log.prefix = ""
    rec["slices"] = chosen
    return chosen, np.array([float(ref[0]), float(ref[1])])


class _Block:
    """One (ia|jb) block and its energy sums (device kernels, or numpy in emulation)."""

    def __init__(self, ctx, ev_dev, ev_host, same):
        self.ctx, self.ev, self.eh, self.same = ctx, ev_dev, ev_host, same

    def _grid(self, i0, i1, j0, j1):
        nv1, nv2 = len(self.eh[1]), len(self.eh[3])
        return ((i1 - i0) * (j1 - j0), (nv1 + 31) // 32, (nv2 + 31) // 32)

    def _tail(self, i0, i1, j0, j1, acc):
        nv1, nv2 = len(self.eh[1]), len(self.eh[3])
        return [
            np.int32(i1 - i0),
            np.int32(nv1),
            np.int32(j1 - j0),
            np.int32(nv2),
            *self.ev,
            np.int32(i0),
            np.int32(j0),
            np.int32(1 if self.same else 0),
            acc,
        ]

    def _cpu_energy(self, v, i0, i1, j0, j1, acc):
        from hartree.mp2.rimp2 import _block_energy

        e1o, e1v, e2o, e2v = self.eh
        d, x = _block_energy(
            np.ascontiguousarray(v).reshape(i1 - i0, len(e1v), j1 - j0, len(e2v)), e1o, e1v, e2o, e2v, i0, j0, self.same
        )
        acc += (d, x)

    def stored(self, bi, bj, precision, i0, i1, j0, j1, acc):
        """(ia|jb) = bi bj^T by mgemm (``precision``), then the stored-block kernel."""
        xp, log = self.ctx.xp, self.ctx.log
        t = time.perf_counter()
        v, scheme = gemm_nt(bi, bj, precision, xp, self.ctx.budget // 4)
        v = xp.ascontiguousarray(v)
        sync(xp)
        log.add("(ia|jb)", scheme, time.perf_counter() - t)
        t = time.perf_counter()
        if xp is np:
            self._cpu_energy(v, i0, i1, j0, j1, acc)
        else:
            kname = "mp2_block_energy_f32" if v.dtype == np.float32 else "mp2_block_energy_f64"
            self.ctx.kernels.launch(
                kname, self._grid(i0, i1, j0, j1), (32, 8), [v, np.int64(v.shape[1])] + self._tail(i0, i1, j0, j1, acc)
            )
        del v
        sync(xp)
        log.add("energy", "fp64 kernel", time.perf_counter() - t)

    def slice(self, b, nslice, reverse):
        """Ozaki slices of the rows of b (rows, naux): (slices, inv_scale (rows,))."""
        xp = self.ctx.xp
        t = time.perf_counter()
        if xp is np:
            from hartree.linalg import ozaki

            q, inv = ozaki.slice_rows(np, b, nslice, reverse=reverse)
        else:
            from hartree.linalg import mgemm_gpu

            q, inv = mgemm_gpu.slice_rows_int8(b, nslice, reverse=reverse)
        sync(xp)
        self.ctx.log.add("slices", f"ozaki {nslice} slices (INT8)", time.perf_counter() - t)
        return q, inv.reshape(-1)

    def ozaki(self, qa, qb, nslice, i0, i1, j0, j1, acc):
        """(ia|jb) by the INT8 Ozaki diagonals (S INT8 GEMMs) and the fused energy kernel."""
        xp, log = self.ctx.xp, self.ctx.log
        (sa, ia), (sb, ib) = qa, qb
        m, n = (i1 - i0) * len(self.eh[1]), (j1 - j0) * len(self.eh[3])
        t = time.perf_counter()
        scheme = f"ozaki INT8, {nslice} slices ({nslice} INT8 GEMMs, {nslice * (nslice + 1) // 2} slice products)"
        if xp is np:
            from hartree.linalg import ozaki

            v = ozaki.diagonal_products(np, sa, sb, nslice, lambda x, y: x @ y.T)
            v = v / ia[:, None] / ib[None, :]
            log.add("(ia|jb)", scheme, time.perf_counter() - t)
            t = time.perf_counter()
            self._cpu_energy(v[:m, :n], i0, i1, j0, j1, acc)
        else:
            from hartree.linalg import mgemm_gpu

            p = mgemm_gpu.ozaki_diagonals(sa, sb, nslice)
            sync(xp)
            log.add("(ia|jb)", scheme, time.perf_counter() - t)
            t = time.perf_counter()
            self.ctx.kernels.launch(
                f"mp2_block_energy_ozaki{nslice}",
                self._grid(i0, i1, j0, j1),
                (32, 8),
                [
                    p,
                    np.int64(p.shape[1] * p.shape[2]),
                    np.int64(p.shape[2]),
                    np.float64(2.0 ** (-7 * (nslice + 1))),
                    1.0 / ia,
                    1.0 / ib,
                ]  # exact: 2^e
                + self._tail(i0, i1, j0, j1, acc),
            )
            del p
        sync(xp)
        log.add("energy", "fp64 kernel on ozaki INT32 diagonals", time.perf_counter() - t)


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
