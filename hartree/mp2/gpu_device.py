"""RI-MP2 on the GPU (CuPy): three-index integrals from generated kernels, GEMMs on the device.

The :class:`hartree.mp2.device.MP2Device` of the GPU; the method is that of
:mod:`hartree.mp2.rimp2`.  Steps and memory (every large array is bounded by the device
budget):

1. (P|Q) on the device (hartree.gpu.eri3c), M = L^-1 by cupy's Cholesky (eigen-decomposition
   V^-1/2 if V is not numerically positive definite; hartree.mp2.fitting).
2. (mu nu|P) in batches of aux shells (cartesian, ``ThreeCenterBuilder.int3c_cart``, layout
   g[mu, nu, P]), each batch transformed at once, per spin, with the orbital coefficients in
   the cartesian basis (C_cart = T C, T = cart->spherical): X[i, nu, P] = C_occ^T g,
   Y[i, a, P] = C_vir^T X[i], then the aux cart->spherical transform, giving columns P of
   the rows (i a) of (ia|P) (nocc nvir, naux).  The store lives on the device when it fits
   in half the budget, else in page-locked host memory (one upload per block).
3. B = (ia|P) M^T in row blocks, in place (at most 0.3 of the budget per block).
4. (ia|jb) for blocks of occupied orbitals (ni nvir x nj nvir, at most a quarter of the
   budget; j <= i for one spin) and the energy sums of each block in one fused kernel
   (hartree/mp2/block_energy.py: denominators formed in registers, no temporaries).  In
   FP64 this step is DGEMM-bound (valinomycin/cc-pVDZ: 4.3e14 FLOP, 49 of DGEMM's ~60
   TFLOP/s on an H200; the kernel ~3% of the step), so its blocks only need to be large.

Precision (``MP2Options.precision``): the mgemm scheme of both GEMM steps (3 and 4), as on the
CPU (on cupy operands fp64 is DGEMM, fp32 SGEMM, tf32 TF32 tensor cores, tf32x3 mgemm's split
on TF32 tensor cores), except "mixed": step 3 in FP64 and step 4 by the energy-calibrated
INT8 Ozaki split of :mod:`hartree.mp2.mixed_precision` (``calibrated_mixed``).  The schemes
that actually ran are named in ``MP2Result.precision`` and ``gemm``.

With ``backend=EmulatedBackend()`` (tests without a GPU) the same device runs on numpy with
the kernels compiled by g++ and the numba energy kernel.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from types import ModuleType

import numpy as np

from hartree.errors import DeviceError, InputError
from hartree.linalg.gemm_precision import PRECISIONS
from hartree.linalg.mgemm import MGEMMInfo

from .device import sync
from .options import MP2Options

__all__ = ["GPUDevice", "StepTimeLog", "pair_block_sizes", "GPU_PRECISIONS"]

#: the mgemm schemes (all of them run on cupy operands)
GPU_PRECISIONS = PRECISIONS

#: memory layout of the cartesian (mu nu|P) batches written by the kernels: "mnp" (P fastest:
#: each thread writes runs of consecutive P) or "pmn" (one (mu, nu) matrix per P)
THREE_INDEX_LAYOUT = "mnp"


class GPUDevice:
    """RI-MP2's device contract on a GPU (cupy) or on numpy with emulated kernels.

    xp: the array module (the backend's); budget: device memory for the run's arrays,
    bytes; backend: a hartree.device backend (needed for the integrals); basis, aux:
    hartree.basis.Basis; molecule: names the GPU in the description; host_store: keep
    (ia|P)/B in host memory; aux_batch: largest aux batch (cartesian functions).
    Only xp and budget are needed to run :func:`hartree.mp2.pair_energy.energies`."""

    calibrated_mixed = True

    def __init__(
        self,
        xp: ModuleType,
        budget: int,
        backend=None,
        *,
        basis=None,
        aux=None,
        molecule=None,
        host_store: bool = False,
        aux_batch: int | None = None,
    ):
        self.xp, self.budget, self.backend = xp, budget, backend
        self.basis, self.aux, self.molecule = basis, aux, molecule
        self.host_store, self.aux_batch = host_store, aux_batch
        self.builder = None
        self.on_device = True

    @classmethod
    def from_options(cls, options: MP2Options, molecule, basis, aux) -> GPUDevice:
        """The device of ``options`` (gpu_backend, or CUDA through cupy; gpu_memory_mb or 85%
        of the free device memory)."""
        backend = options.gpu_backend
        if backend is None:
            try:
                from hartree.device.backend import CudaBackend

                backend = CudaBackend()
            except ImportError as exc:
                raise DeviceError("GPU RI-MP2 needs cupy (pip install cupy-cuda13x)") from exc
        xp = backend.xp
        if options.precision not in GPU_PRECISIONS:
            raise InputError(
                f"GPU RI-MP2 precision must be one of {', '.join(GPU_PRECISIONS)}, got {options.precision!r}"
            )
        budget = int(options.gpu_memory_mb * 1e6) if options.gpu_memory_mb else int(0.85 * _free_bytes(xp))
        return cls(
            xp,
            budget,
            backend,
            basis=basis,
            aux=aux,
            molecule=molecule,
            host_store=options.gpu_host_store,
            aux_batch=options.aux_batch,
        )

    def new_log(self) -> StepTimeLog:
        return StepTimeLog()

    def prepare(self, timings: dict[str, float]) -> None:
        """Compile the three-index kernels (timed as "setup_compile")."""
        from hartree.gpu.eri3c import ThreeCenterBuilder

        t = time.perf_counter()
        self.builder = ThreeCenterBuilder(self.basis, self.aux, self.backend)
        self.builder.prepare()
        sync(self.xp)
        timings["setup_compile"] = time.perf_counter() - t

    def two_index(self):
        return self.builder.int2c()

    @contextlib.contextmanager
    def stores(self, rows: list[int], naux: int) -> Iterator[list]:
        """Per spin a (rows[s], naux) store on the device when all fit in half the budget
        (and host_store is off), else in page-locked host memory; the rest of the budget
        is left for the work arrays."""
        xp = self.xp
        store_bytes = 8 * naux * sum(rows)
        self.on_device = xp is np or (store_bytes <= self.budget // 2 and not self.host_store)
        alloc = xp.empty if self.on_device else _pinned_empty
        stores = [alloc((r, naux)) for r in rows]
        self.budget -= store_bytes if self.on_device and xp is not np else 0
        yield stores

    def three_index(self, spaces: list[tuple], stores: list) -> None:
        _three_index(self.xp, self.builder, spaces, stores, self.budget, self.aux_batch)

    def b_rows(self, naux: int) -> int:
        """Rows of B per block: three (rows, naux) float64 arrays within 0.3 of the budget."""
        return max(1, int(0.3 * self.budget) // (8 * 3 * naux))

    def gemm_budget(self, step: str) -> int | None:
        if self.xp is np:
            return None
        return int(0.3 * self.budget) if step == "B" else self.budget // 4

    def pair_blocks(self, no1, nv1, no2, nv2, naux, calibrated, same) -> tuple[int, int]:
        ni, nj = pair_block_sizes(no1, nv1, no2, nv2, naux, self.budget, 28 if calibrated else 16)
        if same:
            ni = nj = min(ni, nj)
        return ni, nj

    def keep_j_slices(self, nslice: int, rows: int, naux: int) -> bool:
        """Reverse-order slices of all j rows kept when they fit an eighth of the budget."""
        return self.xp is not np and (nslice + 1) * rows * (naux + 16) <= self.budget // 8

    def description(self) -> str:
        device = getattr(self.backend, "name", "cuda")
        if self.xp is not np:
            from hartree.device.selection import device_label

            device = device_label()
        where = "device memory" if self.on_device else "host memory"
        return f"gpu: {device}; (ia|P) in {where}"


def pair_block_sizes(no1, nv1, no2, nv2, naux, budget, out_bytes=16) -> tuple[int, int]:
    """(ni, nj) occupied block sizes: the (ia|jb) block (``out_bytes`` per element: FP64
    block and temporaries 16; the Ozaki split's INT32 diagonals and calibration 28) plus
    operand copies and slices (up to 24 bytes per operand element) within a quarter of
    ``budget`` (bytes)."""

    def need(ni, nj):
        return out_bytes * ni * nv1 * nj * nv2 + 24 * naux * (ni * nv1 + nj * nv2)

    ni = nj = max(no1, no2)
    while (ni > 1 or nj > 1) and need(min(ni, no1), min(nj, no2)) > budget // 4:
        ni, nj = max(1, (ni + 1) // 2), max(1, (nj + 1) // 2)
    return min(ni, no1), min(nj, no2)


class StepTimeLog:
    """MP2Result.gemm on the GPU: seconds and calls per (step, scheme), for the GEMMs and
    the kernels around them; ``prefix`` tags the calibration's calls."""

    def __init__(self):
        self.steps = {}
        self.prefix = ""

    def add(self, step: str, scheme: str, seconds: float) -> None:
        step = self.prefix + step
        rec = self.steps.setdefault((step, scheme), {"step": step, "precision": scheme, "calls": 0, "seconds": 0.0})
        rec["calls"] += 1
        rec["seconds"] += seconds

    def gemm(self, step: str, requested: str, info: MGEMMInfo, elements: int, seconds: float) -> None:
        """An mgemm call, named "requested" or "requested -> ran" (with the Ozaki slices)."""
        ran = info.precision
        if info.slices and ran == "ozaki":
            ran += f" ({info.slices} slices)"
        self.add(step, ran if ran == requested else f"{requested} -> {ran}", seconds)

    def seconds(self, step: str) -> float:
        return sum(r["seconds"] for r in self.steps.values() if r["step"] == step)

    def schemes(self, step: str) -> list[str]:
        return [r["precision"] for r in self.steps.values() if r["step"] == step]

    def records(self) -> list[dict]:
        return list(self.steps.values())

    def precision_label(self, requested: str) -> str:
        """``requested``, followed by the schemes of the GEMM steps where they differ."""
        ran = {step: " + ".join(self.schemes(step)) for step in ("B", "(ia|jb)") if self.schemes(step)}
        label = requested
        if any(v != requested for v in ran.values()):
            label += " (" + ", ".join(f"{k}: {v}" for k, v in ran.items()) + ")"
        return label

    def stage_timings(self) -> dict[str, float]:
        """Seconds of the energy step's parts: GEMMs, slicing, kernels, calibration."""
        out = {}
        for key, step in (("energy_gemm", "(ia|jb)"), ("energy_slices", "slices"), ("energy_kernel", "energy")):
            out[key] = self.seconds(step)
        out["energy_calibration"] = sum(self.seconds("calibration " + s) for s in ("(ia|jb)", "slices", "energy"))
        return out


def _free_bytes(xp) -> int:
    if xp is np:
        return 4 << 30
    pool = xp.get_default_memory_pool()
    free, _ = xp.cuda.Device().mem_info
    return int(free + pool.free_bytes())


def _pinned_empty(shape):
    """Host array in page-locked memory (fast uploads)."""
    import cupyx

    return cupyx.empty_pinned(shape, dtype=np.float64)


def _three_index(xp, tb, spaces, stores, budget, aux_batch):
    """Fill stores[s] (no*nv, naux) with (ia|P) per spin, aux-shell batch by batch."""
    basis, aux = tb.basis, tb.aux
    nc = basis.ncart
    cmo = [(tb.C @ xp.asarray(co), tb.C @ xp.asarray(cv)) for co, cv, _, _ in spaces]
    nomax = max(co.shape[1] for co, _, _, _ in spaces)
    nvmax = max(cv.shape[1] for _, cv, _, _ in spaces)
    per_fun = 8 * (nc * nc + nomax * nc + 3 * nomax * nvmax)  # bytes per aux cart fn
    cap = max(1, int(0.6 * budget) // per_fun)
    if aux_batch:
        cap = min(cap, int(aux_batch))
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
