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
4. (energy_gpu.py) (ia|jb) for blocks of occupied orbitals (ni nvir x nj nvir, at most a
   quarter of the budget; j <= i for one spin) and the energy sums of each block in one
   fused kernel (``_ENERGY_SOURCE``: denominators formed in registers, no temporaries).  In
   FP64 this step is DGEMM-bound (valinomycin/cc-pVDZ: 4.3e14 FLOP, 49 of DGEMM's ~60
   TFLOP/s on an H200; the kernel ~3% of the step), so its blocks only need to be large.

Precision (``MP2Options.precision``): the mgemm scheme of both GEMM steps (3 and 4), as on the
CPU (on cupy operands fp64 is DGEMM, fp32 SGEMM, tf32 TF32 tensor cores, tf32x3 mgemm's split
on TF32 tensor cores), except "mixed", which on the GPU is:

  mixed  step 3 in FP64 (L^-1 spans many orders of magnitude; the step is ~3% of the time),
         step 4 by mgemm's INT8 Ozaki split (hartree/linalg/ozaki.py; rows of B scaled by
         powers of two and cut into S 7-bit slices rounded to nearest; S INT8 tensor-core
         GEMMs per block, exact in INT32): the rows of each i block are sliced once and
         reused over the j blocks, and the energy kernel reads the S INT32 diagonal products
         directly (mp2_block_energy_ozaki: no FP64 block is written).  S is calibrated on
         the ENERGY (energy_gpu._calibrate): the first block pair in FP64 and with S = 2, 3,
         ... slices; the block's energy error extrapolated per occupied pair must stay below
         MIXED_TARGET_EH / MIXED_SAFETY (0.1 kcal/mol / 10), else FP64.  Measured on CPU
         butane/cc-pVDZ: relative MP2 energy errors 3e-5 (S = 2), 1.4e-8 (S = 3), fp32 1.4e-8.
         (The previous split-TF32 "mixed" was 0.62 kcal/mol off for valinomycin: TF32
         tensor-core truncation and FP32 accumulation bias the sums of squares.)

The schemes that actually ran are named in ``MP2Result.precision`` and ``gemm``.

With ``backend=EmulatedBackend()`` (tests without a GPU) the same driver runs on numpy with the
kernels compiled by g++ and the CPU energy kernel.
"""

from __future__ import annotations

import time

import numpy as np

from hartree.errors import DeviceError, InputError
from hartree.linalg.mgemm import PRECISIONS
from hartree.mp2.energy_gpu import Log, calibration_note, energies, gemm_nt
from hartree.mp2.energy_gpu import sync as _sync

__all__ = ["kernel_gpu", "GPU_PRECISIONS"]

#: the mgemm schemes (all of them run on cupy operands)
GPU_PRECISIONS = PRECISIONS

#: memory layout of the cartesian (mu nu|P) batches written by the kernels: "mnp" (P fastest:
#: each thread writes runs of consecutive P) or "pmn" (one (mu, nu) matrix per P)
THREE_INDEX_LAYOUT = "mnp"


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
        raise InputError(f"GPU RI-MP2 precision must be one of {', '.join(GPU_PRECISIONS)}, got {options.precision!r}")
    basis = scf_result.basis
    timings, log = {}, Log()
    budget = int(options.gpu_memory_mb * 1e6) if options.gpu_memory_mb else int(0.85 * _free_bytes(xp))

    t = time.perf_counter()
    tb = ThreeCenterBuilder(basis, aux, backend)
    tb.prepare()
    _sync(xp)
    timings["setup_compile"] = time.perf_counter() - t

    t = time.perf_counter()
    m = _metric_factor(xp, tb.int2c())
    naux = aux.nao
    if m.shape[0] != naux:  # singular metric: zero rows keep B's width
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
    e_os, e_ss, nocc, nvir, calibration = energies(xp, backend, spaces, stores, options.precision, rest, log)
    timings["energy"] = time.perf_counter() - t
    for key, step in (("energy_gemm", "(ia|jb)"), ("energy_slices", "slices"), ("energy_kernel", "energy")):
        timings[key] = log.seconds(step)
    timings["energy_calibration"] = sum(log.seconds("calibration " + s) for s in ("(ia|jb)", "slices", "energy"))
    device = getattr(backend, "name", "cuda")
    if xp is not np:
        from hartree.gpu.engine import GPUEngine

        device = GPUEngine(scf_result.molecule, basis).device
    where = "device memory" if on_device else "host memory"
    ran = {step: " + ".join(log.schemes(step)) for step in ("B", "(ia|jb)") if log.schemes(step)}
    label = options.precision
    if any(v != options.precision for v in ran.values()):
        label += " (" + ", ".join(f"{k}: {v}" for k, v in ran.items()) + ")"
    notes = [calibration_note(c) for c in calibration]
    return MP2Result(
        reference=scf_result.method.lower(),
        scf_energy=float(scf_result.energy),
        correlation_energy=e_os + e_ss,
        opposite_spin=e_os,
        same_spin=e_ss,
        frozen_core=nfrozen,
        nocc=nocc,
        nvir=nvir,
        aux_basis=aux.name,
        naux=naux,
        precision=label,
        device=f"gpu: {device}; (ia|P) in {where}",
        wall_time=time.perf_counter() - t_all,
        timings=timings,
        gemm=list(log.steps.values()),
        notes=notes,
        calibration=calibration,
    )


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
    per_fun = 8 * (nc * nc + nomax * nc + 3 * nomax * nvmax)  # bytes per aux cart fn
    cap = max(1, int(0.6 * budget) // per_fun)
    if options.aux_batch:
        cap = min(cap, int(options.aux_batch))
    cl, al = np.asarray(aux.cart_loc), np.asarray(aux.ao_loc)
    batches, s0 = [], 0
    for s in range(1, aux.nshell + 1):  # contiguous shell ranges <= cap
        if cl[s] - cl[s0] > cap and s - 1 > s0:
            batches.append((s0, s - 1))
            s0 = s - 1
    batches.append((s0, aux.nshell))
    buf = xp.empty(min(int(cl[-1]), max(int(cl[b1] - cl[b0]) for b0, b1 in batches)) * nc * nc)
    p_last = THREE_INDEX_LAYOUT == "mnp"
    for b0, b1 in batches:
        g = tb.int3c_cart((b0, b1), out=buf, p_last=p_last)
        npc = int(cl[b1] - cl[b0])
        caux = tb.C_aux[cl[b0] : cl[b1], al[b0] : al[b1]]  # (nPc, nPs)
        for (co, cv), st in zip(cmo, stores):
            no, nv = co.shape[1], cv.shape[1]
            if p_last:  # g (mu, nu, P)
                x = (co.T @ g.reshape(nc, nc * npc)).reshape(no, nc, npc)
                y = xp.matmul(cv.T, x)  # (no, nv, nPc)
                del x
                z = y.reshape(no * nv, npc) @ caux  # (no*nv, nPs)
            else:  # g (P, mu, nu)
                x = (g.reshape(npc * nc, nc) @ co).reshape(npc, nc, no)
                y = xp.matmul(x.transpose(0, 2, 1), cv)  # (nPc, no, nv)
                del x
                z = (caux.T @ y.reshape(npc, no * nv)).T  # (no*nv, nPs)
            del y
            st[:, al[b0] : al[b1]] = z.get() if isinstance(st, np.ndarray) and xp is not np else z
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
        p = "fp64" if precision == "mixed" else precision  # mixed: B in FP64
        c, scheme = gemm_nt(blk, m, p, xp, int(0.3 * budget))
        if isinstance(st, np.ndarray) and xp is not np:
            st[r0:r1] = c.get()
        else:
            st[r0:r1] = c
        _sync(xp)
        log.add("B", scheme, time.perf_counter() - t)
