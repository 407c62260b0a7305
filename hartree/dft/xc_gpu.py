"""The GPU kernels of the XC integration (:class:`hartree.dft.xc_integrate.XCKernels`):
hand-written CUDA for the AO values and the pointwise sums (``xc_gpu.cu``), cuBLAS GEMMs
through cupy, libxc built for CUDA for the functional (:mod:`hartree.dft.libxc_gpu`).

    kernels = GPUKernels(CudaBackend(), nset=1)                 # or EmulatedBackend()
    cache = make_xc_cache(basis, grid, "pbe", kernels=kernels)  # AO values kept on the GPU
    exc, vxc, nelec = xc_energy_potential(basis, grid, dm_gpu, "pbe", cache=cache)

Everything an evaluation reads is put on the device once, when the cache is built
(:meth:`GPUKernels.prepare`): the basis, the points in block order, the weights, the
blocks' shell lists and AO indices; then, per SCF cycle, only the density matrix (already
there in a GPU SCF) is read and V_xc (on the device) and E_xc (a scalar) come out.  The
blocks past the memory budget have their values recomputed on the device in every cycle,
never copied.

AO values.  ``ao_blocks`` takes one CUDA block per grid block (and gridDim.y groups of its
shells), one thread per point, and writes the (ncomp, k, m) layout of
:mod:`hartree.dft.ao_kernels` with the same arithmetic (primitive sums R0, R1, monomials,
C_l^T), so that the emulated kernel equals the numba one to rounding.  ``ao_blocks2`` is the
same with the second derivatives (R2, 10 rows; an AO cache of deriv 2, for the nuclear
gradient of :mod:`hartree.dft.xc_grad_integrate`), a kernel of its own so that the SCF's
kernel keeps its registers.

Gradient.  ``contract_gradient`` forms the per-AO sums of the XC gradient's eq. (1) on a
block (:meth:`GPUKernels.contract_gradient`): one warp per function and segment of
:data:`SEGMENT_POINTS` points, its lanes striding over them, a shuffle sum, then
``add_partials`` sums the segments in order (no atomics: the same sum in every run); under the
serial emulator a "warp" is one thread (``HT_EMULATION``, so the launch asks for one thread
per group there).

Functional.  With a GPU build of libxc (:func:`hartree.dft.libxc_gpu.find_library`) the
functional is evaluated on the device (``XC_FLAGS_ON_DEVICE``; on the emulated backend the
same library runs on the host, ``XC_FLAGS_ON_HOST``).  Without one, or for a component the
build lacks, ρ comes to the host for PySCF's libxc and v back, once per chunk and cycle (the
only per-cycle copy), and :attr:`GPUKernels.notes` says so.

Memory (:meth:`GPUKernels.default_budget`): the AO values may take
:data:`GPU_BUDGET_FRACTION` of the device budget (:func:`hartree.device.memory.budget_bytes`)
left after what J/K and the SCF loop hold (:func:`hartree.gpu.memory.jk_bytes`,
:func:`hartree.gpu.memory.scf_bytes`) and :data:`GPU_SCRATCH_BYTES` of scratch; the blocks past
it are recomputed chunk by chunk; an out-of-memory while keeping them halves what is kept
(:class:`hartree.dft.ao_cache.AOCache`).
"""

from __future__ import annotations

import numpy as np

from ..arrays import to_numpy
from ..basis.angular import MAX_L
from ..device import cuda_source
from ..errors import DeviceError
from .functionals import libxc

__all__ = ["GPUKernels", "GPU_BLOCK_POINTS", "GPU_BUDGET_FRACTION", "GPU_SCRATCH_BYTES"]

#: Points per block on the GPU (far larger than the CPU's: fewer, larger GEMMs and launches).
#: Measured on an H200 (B3LYP/def2-TZVP, level 3, one warm evaluation): Vitamin C 0.093 s at
#: 1024 points, 0.023 at 4096, 0.011 at 16384, 0.010 at 65536; Tamoxifen 0.401, 0.096, 0.044,
#: 0.044 s.  Below ~16k points a block the launches dominate; above it screening loses.
GPU_BLOCK_POINTS = 16384
#: Fraction of the device memory left after J/K and the SCF that the AO values may keep.
GPU_BUDGET_FRACTION = 0.5
#: Values computed at once for the blocks past the budget, bytes.
GPU_SCRATCH_BYTES = 256 * 1024**2
#: Threads per CUDA block; groups of shells per grid block (gridDim.y) of ao_blocks.
THREADS = 128
SHELL_GROUPS = 8
#: Points per warp of contract_gradient (blocks of many points and few functions still give
#: the GPU many warps).
SEGMENT_POINTS = 512
#: Version of xc_gpu.cu's interface (part of the compile key).
KERNEL_VERSION = "3"

_AO_PARAMS = [
    ("const double*", "points"),
    ("const long long*", "block_start"),
    ("const long long*", "shells"),
    ("const long long*", "shell_start"),
    ("const long long*", "shell_col"),
    ("const long long*", "block_nao"),
    ("const long long*", "out_start"),
    ("int", "deriv"),
    ("const int*", "shell_l"),
    ("const int*", "shell_nprim"),
    ("const int*", "shell_prim_start"),
    ("const double*", "shell_center"),
    ("const double*", "exponents"),
    ("const double*", "coefficients"),
    ("int", "pure"),
    ("const double*", "c2s"),
    ("const int*", "c2s_loc"),
    ("double*", "out"),
]
_ROWS_PARAMS = [
    ("const double*", "ao"),
    ("const double*", "c"),
    ("int", "k"),
    ("int", "m"),
    ("int", "nrow"),
    ("double*", "out"),
]
_TAU_PARAMS = [("const double*", "ao"), ("const double*", "c1"), ("int", "k"), ("int", "m"), ("double*", "out")]
_GRAD_PARAMS = [
    ("const double*", "ao"),
    ("const double*", "c"),
    ("const double*", "coef"),
    ("int", "k"),
    ("int", "m"),
    ("int", "ncoef"),
    ("int", "p0"),
    ("int", "mc"),
    ("int", "seg_points"),
    ("double*", "partial"),
]
_PARTIALS_PARAMS = [
    ("const double*", "partial"),
    ("int", "nseg"),
    ("int", "k"),
    ("const long long*", "index"),
    ("int", "nao"),
    ("double*", "out"),
]
_SCALE_PARAMS = [
    ("const double*", "ao"),
    ("const double*", "coef"),
    ("int", "k"),
    ("int", "m"),
    ("int", "nrow"),
    ("double*", "out"),
]


def source(maxl: int) -> str:
    """The text of xc_gpu.cu for shells up to l = maxl (at most :data:`hartree.basis.angular.MAX_L`)."""
    if not 0 <= int(maxl) <= MAX_L:
        raise DeviceError(f"the GPU AO kernel has shells up to l = {MAX_L}, not {maxl}")
    return cuda_source.read("hartree.dft", "xc_gpu.cu").format(maxl=int(maxl))


class GPUKernels:
    """CUDA kernels and libxc for CUDA behind the XC integration (module docstring).

    backend: :class:`hartree.device.backend.CudaBackend` (cupy arrays) or
    :class:`hartree.device.emulator.EmulatedBackend` (numpy arrays, the same CUDA run by
    g++); nset: densities per evaluation (1 RKS, 2 UKS; for the memory budget);
    block_points: points per block.
    """

    scratch_bytes = GPU_SCRATCH_BYTES

    def __init__(self, backend, nset: int = 1, block_points: int = GPU_BLOCK_POINTS):
        self.backend = backend
        self.xp = backend.xp
        self.name = backend.name
        self.nset = int(nset)
        self.block_points = int(block_points)
        self.notes = []
        self._module = None
        self._maxl = -1
        self._functionals = {}

    # ------------------------------------------------------------------ memory
    def default_budget(self, basis, nset: int | None = None) -> int:
        """Bytes of AO values to keep on the device (module docstring); on the emulated
        backend without ``HARTREE_GPU_MEMORY``, the CPU's default."""
        from ..device.memory import budget_bytes
        from ..gpu.memory import jk_bytes, scf_bytes
        from .xc_kernels import default_budget

        nset = self.nset if nset is None else int(nset)
        usable = budget_bytes(self.backend)
        if usable == float("inf"):
            return default_budget()
        left = usable - jk_bytes(basis, nset) - scf_bytes(basis, nset) - 2 * self.scratch_bytes
        return int(max(0.0, GPU_BUDGET_FRACTION * left))

    def free_cached(self) -> None:
        """Give cupy's cached blocks back to the driver (after an out-of-memory)."""
        free = getattr(self.backend, "free_cached", None)
        if free is not None:
            free()

    # ------------------------------------------------------------------ set-up
    def _compiled(self, maxl: int):
        if self._module is None or maxl > self._maxl:
            text = source(maxl)
            key = {"kind": "xc_gpu", "maxl": int(maxl), "version": KERNEL_VERSION}
            params = {
                "ao_blocks": _AO_PARAMS,
                "ao_blocks2": _AO_PARAMS,
                "contract_rows": _ROWS_PARAMS,
                "contract_tau": _TAU_PARAMS,
                "scale_rows": _SCALE_PARAMS,
                "contract_gradient": _GRAD_PARAMS,
                "add_partials": _PARTIALS_PARAMS,
            }
            with self.backend.use():
                (self._module,) = self.backend.compile([(text, key, params)])
            self._maxl = int(maxl)
        return self._module

    def prepare(self, cache) -> None:
        """Put the basis, the points and the blocks' shell lists of ``cache`` on the device
        (``cache.device``, a dict) and compile the kernels for its largest l."""
        xp = self.xp
        pb = cache.prepared
        i32 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        i64 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int64))  # noqa: E731
        f64 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.float64))  # noqa: E731
        sizes = (pb.ao_loc[cache.shells + 1] - pb.ao_loc[cache.shells]) if cache.shells.size else np.zeros(0, np.int64)
        cum = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        block_nao = cum[cache.shell_start[1:]] - cum[cache.shell_start[:-1]]
        owner = np.repeat(np.arange(cache.nblock), np.diff(cache.shell_start))
        shell_col = cum[:-1] - cum[cache.shell_start[:-1]][owner]  # column of each listed shell in its block
        words = cache.ncomp * block_nao * np.diff(cache.starts)
        cache.value_offsets = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)
        cache.device = {
            "points": f64(cache.coords),
            "block_start": i64(cache.starts),
            "shells": i64(cache.shells),
            "shell_start": i64(cache.shell_start),
            "shell_col": i64(shell_col),
            "block_nao": i64(block_nao),
            "value_offsets": i64(cache.value_offsets),
            "shell_l": i32(pb.shell_l),
            "shell_nprim": i32(pb.shell_nprim),
            "shell_prim_start": i32(pb.shell_prim_start),
            "shell_center": f64(pb.shell_center),
            "exponents": f64(pb.exponents),
            "coefficients": f64(pb.coefficients),
            "c2s": f64(pb.c2s),
            "c2s_loc": i32(pb.c2s_loc),
        }
        self._compiled(int(pb.shell_l.max()) if pb.shell_l.size else 0)

    # ------------------------------------------------------------------ kernels
    def block_values(self, cache, b0: int, b1: int):
        """AO values of blocks b0..b1-1 on the device: (flat buffer, host offsets)."""
        xp = self.xp
        d = cache.device
        offsets = cache.value_offsets[b0 : b1 + 1] - cache.value_offsets[b0]
        out = xp.empty(int(offsets[-1]))
        if b1 <= b0 or out.size == 0:
            return out, offsets
        out_start = xp.ascontiguousarray(d["value_offsets"][b0:b1] - cache.value_offsets[b0])
        groups = int(min(SHELL_GROUPS, max(1, np.diff(cache.shell_start[b0 : b1 + 1]).max())))
        args = [
            d["points"],
            d["block_start"][b0 : b1 + 1],
            d["shells"],
            d["shell_start"][b0 : b1 + 1],
            d["shell_col"],
            d["block_nao"][b0:b1],
            out_start,
            np.int32(cache.deriv),
            d["shell_l"],
            d["shell_nprim"],
            d["shell_prim_start"],
            d["shell_center"],
            d["exponents"],
            d["coefficients"],
            np.int32(cache.prepared.pure),
            d["c2s"],
            d["c2s_loc"],
            out,
        ]
        with self.backend.use():
            self._module.launch("ao_blocks2" if cache.deriv == 2 else "ao_blocks", (b1 - b0, groups), THREADS, args)
        return out, offsets

    def contract_rows(self, ao, c, nrow: int, out) -> None:
        """out[x, p] = Σ_i ao[x, i, p] c[i, p], x < nrow (ρ and ½∇ρ)."""
        k, m = int(ao.shape[1]), int(ao.shape[2])
        grid = ((m + THREADS - 1) // THREADS, int(nrow))
        args = [ao, self.xp.ascontiguousarray(c), np.int32(k), np.int32(m), np.int32(nrow), out]
        self._module.launch("contract_rows", grid, THREADS, args)

    def contract_tau(self, ao, c1, out) -> None:
        """out[p] = ½ Σ_x Σ_i ao[1 + x, i, p] c1[x, i, p] (τ)."""
        k, m = int(ao.shape[1]), int(ao.shape[2])
        grid = ((m + THREADS - 1) // THREADS,)
        args = [ao, self.xp.ascontiguousarray(c1), np.int32(k), np.int32(m), out]
        self._module.launch("contract_tau", grid, THREADS, args)

    def scale_rows(self, ao, coef, nrow: int, out) -> None:
        """out[i, p] = Σ_{x<nrow} coef[x, p] ao[x, i, p] (the weighted functions)."""
        k, m = int(ao.shape[1]), int(ao.shape[2])
        grid = ((m + THREADS - 1) // THREADS, min(k, 65535))
        self._module.launch("scale_rows", grid, THREADS, [ao, coef, np.int32(k), np.int32(m), np.int32(nrow), out])

    def contract_gradient(self, ao, c, coef, p0: int, index, out) -> None:
        """out[x, index[i]] += the per-AO sums of the XC gradient's eq. (1) (as
        :func:`hartree.dft.ao_kernels.contract_gradient`): one warp per AO and segment of
        :data:`SEGMENT_POINTS` points (one thread on the emulator), a shuffle sum, then the
        segments summed in order (``add_partials``)."""
        xp = self.xp
        k, m = int(c.shape[1]), int(c.shape[2])
        if k == 0 or m == 0:
            return
        lanes = 1 if self.name == "emulated" else 32
        nseg = (m + SEGMENT_POINTS - 1) // SEGMENT_POINTS
        partial = xp.empty((nseg, 3, k))
        grid = ((k * nseg * lanes + THREADS - 1) // THREADS,)
        args = [ao, xp.ascontiguousarray(c), coef, np.int32(k), np.int32(m), np.int32(coef.shape[0])]
        args += [np.int32(p0), np.int32(coef.shape[1]), np.int32(SEGMENT_POINTS), partial]
        self._module.launch("contract_gradient", grid, THREADS, args)
        args = [partial, np.int32(nseg), np.int32(k), index, np.int32(out.shape[1]), out]
        self._module.launch("add_partials", ((3 * k + THREADS - 1) // THREADS,), THREADS, args)

    # ------------------------------------------------------------------ functional
    def eval_xc(self, functional, rho, spin: int):
        """libxc's ε and v of rho (PySCF's layout, arrays of xp): on the device with a GPU
        libxc, else on the host (module docstring)."""
        key = (functional.xc_code, functional.omega, int(spin))
        evaluator = self._functionals.get(key)
        if evaluator is None:
            evaluator = self._functionals[key] = self._evaluator(functional, int(spin))
        if evaluator is not None:
            return evaluator.eval_xc(rho)
        xp = self.xp  # host fallback: ρ to the host, v back (the one per-cycle copy)
        host = tuple(to_numpy(r) for r in rho) if spin else to_numpy(rho)
        eps, v = libxc().eval_xc(functional.xc_code, host, spin=spin, deriv=1)[:2]
        return xp.asarray(eps), tuple(None if a is None else xp.asarray(a) for a in v)

    def libxc_description(self) -> str:
        """Which libxc evaluated the functional: the CUDA build (version, device or host,
        path), or PySCF's on the host (the fallback)."""
        found = [e for e in self._functionals.values() if e is not None]
        if not found:
            return "PySCF's libxc on the host"
        e = found[0]
        return f"{e.version} (CUDA build, evaluated on the {'device' if e.on_device else 'host'}; {e.lib.path})"

    def _evaluator(self, functional, spin: int):
        """The :class:`hartree.dft.libxc_gpu.LibxcFunctional` of this functional, or None
        (with a note) when no GPU libxc has it."""
        from .libxc_gpu import LibxcFunctional

        try:
            return LibxcFunctional(functional, spin, self.xp)
        except DeviceError as exc:
            self.notes.append(
                f"XC values from PySCF's libxc on the host ({exc}); the densities go to the host and the "
                "potentials back in every cycle"
            )
            return None
