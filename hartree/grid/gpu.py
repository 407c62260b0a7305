"""Orbitals, basis-function values and densities on lattices on CUDA GPUs (CuPy + NVRTC).

    from hartree.grid import gpu
    psi = gpu.orbitals(basis, mo_coeff[:, [homo]], lattice)            # (1, npoints) numpy
    rho = gpu.density(basis, [(c_occ.T, occupations)], lattice)          # (npoints,)
    device = gpu.GPUGrid(devices=[0, 1])      # the GridDevice that the methods run on

The methods (choice of method, blocks, GEMM with the coefficients, the density sum, the
separable contraction, output assembly) are those of every device, written once in
:mod:`hartree.grid.evaluate`; this module is the GPU's :class:`GPUGrid`: its kernels,
block sizes, workers and policy.  Work plan (after VMD, Stone et al. 2009):

1. The basis is flattened per atom (:func:`hartree.grid.gpu_basis.grid_basis`): shells of each atom together,
   per-shell radius (:func:`hartree.grid.cpu.shell_cutoffs`) and per-primitive radius
   beyond which the primitive adds less than threshold/nprim to any function
   (exponent screening), and atom kinds for the JIT kernel.
2. The lattice is cut into slabs of whole x planes (listed points: runs of whole tiles);
   slabs are handed to one host thread per GPU through a queue
   (:mod:`hartree.device.work_queue`).
3. Per slab: ``orb_screen`` lists the atoms near each tile (128 threads x PPT points),
   then ``orb_mo`` (up to MAX_NORB orbitals fused: every basis-function value is used for
   all of them) or ``orb_ao`` (basis-function values of the slab, AO-major) followed by one
   GEMM with the orbital coefficients, and for densities rho = sum_i n_i psi_i^2
   (:mod:`gpu_codegen`).  Orbitals on rectilinear lattices take the separable expansion
   instead by default (:mod:`hartree.grid.gpu_separable`: B kernel, then the GEMM per slab).
4. The slab's values are copied into the host array.

Kernels: 'general' (basis in arrays; source depends only on precision, l values and
cartesian/spherical, so it is compiled once and cached on disk) or 'jit' (exponents,
coefficients and radii written into the source per molecule, compiled per molecule);
'auto' takes the JIT kernel for large lattices (npoints * natm >= JIT_WORK) when the
molecule has at most JIT_MAX_KINDS atom kinds.  FP64 by default; FP32 on request
(screening at FP32_THRESHOLD; values good to ~1e-6 of the largest, tested to 1e-5 in
tests/grid/test_gpu.py).

Kernels are compiled and launched through the device layer: ``backend`` is a
:class:`hartree.device.backend.CudaBackend` (default; one per device listed in ``devices``)
or, in the tests, :class:`hartree.device.emulator.EmulatedBackend` (the same code through
g++ on the CPU).  cupy is imported inside the functions only.
"""

from dataclasses import dataclass

import numpy as np

from ..device.work_queue import run_dynamic
from ..errors import DeviceError, InputError
from . import evaluate
from . import gpu_codegen as cg
from .cpu import DEFAULT_THRESHOLD
from .geometry import Geometry
from .gpu_basis import GridBasis, grid_basis
from .gpu_separable import B_BYTES, GPUSeparableKernels
from .separable import planes_per_slab, separable_terms_bound

#: Default screening threshold of FP32 runs (a.u.; far below FP32 rounding of the values).
FP32_THRESHOLD = 1e-10
#: JIT kernel when npoints * natm reaches this (NVRTC time is then small against the run).
JIT_WORK = 2e7
#: Most atom kinds (and literal numbers) a JIT kernel is generated for.
JIT_MAX_KINDS = 32
JIT_MAX_LITERALS = 20000
#: 'auto' takes the separable path on rectilinear lattices up to this many rank terms (an upper
#: bound: distinct (centre, exponent) pairs x (lmax + 1)); its cost grows with the terms (no
#: screening), the direct kernels' with the atoms near each tile.  C60/6-31G* (1020 terms) on an
#: H200: separable 0.76 ms vs JIT 1.40 ms in FP64, 0.65 ms vs 0.44 ms in FP32.
SEPARABLE_MAX_TERMS = {"double": 3000, "float": 800}
#: Device memory per slab for the point lists, orbital output and AO values (bytes).
SLAB_BYTES = 256 * 2**20
#: Most points per slab.
SLAB_POINTS = 1 << 23


def choose_kernel(gb, npoints, kernel="auto"):
    """'general' or 'jit' for a GridBasis and lattice size (see the module docstring)."""
    if kernel not in ("auto", "general", "jit"):
        raise InputError(f"unknown GPU kernel {kernel!r}; use auto, general or jit")
    jit_ok = (
        gb.kinds is not None and len(gb.kinds) <= JIT_MAX_KINDS and cg.jit_source_size(gb.kinds) <= JIT_MAX_LITERALS
    )
    if kernel == "jit" and not jit_ok:
        raise InputError("this basis has no per-atom layout (or too many atom kinds) for the JIT kernel")
    if kernel == "auto":
        return "jit" if jit_ok and npoints * gb.natm >= JIT_WORK else "general"
    return kernel


class GPUPointKernels:
    """One device's uploaded basis, compiled module and buffers; evaluates blocks of points
    (a :class:`hartree.grid.device.PointKernels`).

    kind 'ao': basis-function values (``orb_ao``); 'mo': norb <= MAX_NORB orbitals of the
    host coefficients coef (norb, nao) by the fused kernel (``orb_mo``).
    """

    def __init__(self, backend, gb, real, flavour, kind, norb, coef, geometry, ppt=None):
        xp = self.xp = backend.xp
        self.backend, self.gb, self.real, self.kind, self.norb = backend, gb, real, kind, norb
        self.ppt = ppt = ppt or cg.PPT_DEFAULT[real]
        self.geometry = geometry
        r = lambda a: xp.asarray(cg.as_real(a, real))  # noqa: E731
        i32 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        self.screen_atoms = (xp.asarray(gb.atom_xyz), xp.asarray(gb.atom_rcut2))
        self.basis_args = [
            i32(gb.atom_kind),
            i32(gb.atom_ao0),
            i32(gb.atom_shell),
            r(gb.atom_rcut2),
            i32(gb.sh_l),
            i32(gb.sh_nprim),
            i32(gb.sh_p0),
            i32(gb.sh_ao0),
            r(gb.sh_rcut2),
            r(gb.p_exp),
            r(gb.p_coef),
            r(gb.p_rcut2),
        ]
        self.coef = r(coef) if coef is not None else r(np.zeros(1))
        self.points = xp.asarray(geometry.points) if geometry.points is not None else xp.zeros(3)
        self.no_lattice = xp.zeros(12)
        self.cache = {}  # per-device copies: slab lattices, coefficient matrices
        kinds = gb.kinds if flavour == "jit" else None
        source = cg.generate(real, gb.pure, kind, norb=norb, ls=gb.ls, kinds=kinds, ppt=ppt)
        key = {
            "kind": f"grid_{kind}",
            "flavour": flavour,
            "real": real,
            "norb": norb,
            "ppt": ppt,
            "generator": cg.VERSION,
        }
        kernels = {"orb_screen": cg.SCREEN_PARAMS, "orb_mo" if kind == "mo" else "orb_ao": cg.EVAL_PARAMS}
        (self.module,) = backend.compile([(source, key, kernels)])
        self.source = source
        self.dtype = np.float64 if real == "double" else np.float32

    def upload(self, name, array):
        """Device copy of a host array in this runner's precision, made once per runner."""
        if name not in self.cache:
            self.cache[name] = self.backend.xp.asarray(np.ascontiguousarray(array, dtype=self.dtype))
        return self.cache[name]

    def to_host(self, values, out):
        """Copy device values into the host array out."""
        self.backend.to_host(values, out)

    def lat_args(self, slab):
        """(mode, n0, n1, n2, lat (12,) origin of the slab + axes, points of the slab)."""
        start, npts, ix0, planes = slab
        xp = self.backend.xp
        if ix0 is not None:
            lat = self.geometry.lattice
            if ("lat", ix0) not in self.cache:  # uploaded once per slab (no host sync when timing)
                origin = lat.origin + ix0 * lat.axes[0]
                self.cache[("lat", ix0)] = xp.asarray(np.concatenate([origin, lat.axes.ravel()]))
            return 0, planes, lat.shape[1], lat.shape[2], self.cache[("lat", ix0)], self.points
        return 1, npts, 1, 1, self.no_lattice, self.points[start : start + npts]

    def screen(self, slab):
        """Run orb_screen on a slab: (launch geometry, count (ntile,), entries) on the device;
        count[t] = atoms listed for tile t (those whose radius reaches the tile's box)."""
        xp = self.backend.xp
        mode, n0, n1, n2, lat, pts = self.lat_args(slab)
        if mode == 0:
            bx, by, bz = cg.tile_shape(self.ppt)
            nt0, nt1, nt2 = -(-n0 // bx), -(-n1 // by), -(-n2 // bz)
        else:
            nt0, nt1, nt2 = -(-n0 // (cg.TILE * self.ppt)), 1, 1
        ntile = nt0 * nt1 * nt2
        natm = self.gb.natm
        count = xp.empty(ntile, dtype=np.int32)
        entries = xp.empty(ntile * max(natm, 1) * cg.entry_bytes(self.real), dtype=np.uint8)
        self.module.launch(
            "orb_screen",
            -(-ntile // 128),
            128,
            [
                np.int32(mode),
                np.int32(ntile),
                np.int32(nt1),
                np.int32(nt2),
                np.int32(n0),
                np.int32(n1),
                np.int32(n2),
                lat,
                pts,
                np.int32(natm),
                *self.screen_atoms,
                count,
                entries,
            ],
        )
        return (mode, nt1, nt2, n0, n1, n2, lat, pts, ntile), count, entries

    def evaluate(self, slab, out=None):
        """Device array of a block (Block) of points: (norb, npts) for 'mo', (nao, npts) for 'ao'."""
        xp = self.backend.xp
        npts = slab[1]
        (mode, nt1, nt2, n0, n1, n2, lat, pts, ntile), count, entries = self.screen(slab)
        natm = self.gb.natm
        rows = self.norb if self.kind == "mo" else self.gb.nao
        if out is None:
            out = (
                xp.zeros((rows, npts), dtype=self.dtype)
                if self.kind == "ao"
                else xp.empty((rows, npts), dtype=self.dtype)
            )
        name = "orb_mo" if self.kind == "mo" else "orb_ao"
        self.module.launch(
            name,
            ntile,
            cg.TILE,
            [
                np.int32(mode),
                np.int32(nt1),
                np.int32(nt2),
                np.int32(n0),
                np.int32(n1),
                np.int32(n2),
                lat,
                pts,
                np.int32(natm),
                count,
                entries,
                *self.basis_args,
                np.int32(self.gb.nao),
                self.coef,
                np.int64(npts),
                out,
            ],
        )
        return out


def _backend(backend):
    """`backend`, or the CUDA backend of the current device."""
    if backend is not None:
        return backend
    from ..device.backend import CudaBackend

    return CudaBackend()


def _backends(backend, devices):
    """One backend per device of `devices` (GPU ordinals; default: GPU 0), of the kind of `backend`."""
    if devices is None:
        if backend.device_count() < 1:
            raise DeviceError("no CUDA device is visible")
        devices = [0]
    return [backend.for_device(d) for d in devices]


def _real(dtype):
    """'float' for float32, else 'double' (the REAL of the kernels)."""
    return "float" if np.dtype(dtype) == np.float32 else "double"


@dataclass(frozen=True, eq=False)
class GPUPrepared:
    """Host data of the point kernels: the basis flattened per atom, REAL, kernel flavour."""

    gb: GridBasis
    real: str
    flavour: str


def _prepare(basis, geometry, dtype, threshold, kernel):
    real = _real(dtype)
    if threshold is None:
        threshold = FP32_THRESHOLD if real == "float" else DEFAULT_THRESHOLD
    gb = grid_basis(basis, threshold)
    return GPUPrepared(gb, real, choose_kernel(gb, geometry.npoints, kernel))


class GPUGrid:
    """One or more CUDA GPUs as the device of the lattice methods (:class:`hartree.grid.device.GridDevice`).

    backend: :class:`hartree.device.backend.CudaBackend` (default: the current device's) or
    the emulator; devices: GPU ordinals sharing the blocks (default: GPU 0); kernel: point
    kernel flavour 'auto', 'general' or 'jit'; threshold: screening threshold (a.u.; None:
    FP32_THRESHOLD in FP32, hartree.grid.cpu.DEFAULT_THRESHOLD in FP64); slab_points: most
    points per slab (None: what fits SLAB_BYTES, or B_BYTES for the separable B table);
    ppt: points per thread (1, 2, 4; None: gpu_codegen.PPT_DEFAULT per precision).
    """

    methods = ("ao", "separable", "direct")
    fused_max_orbitals = cg.MAX_NORB

    def __init__(self, backend=None, devices=None, kernel="auto", threshold=None, slab_points=None, ppt=None):
        self.backends = _backends(_backend(backend), devices)
        self.workers = len(self.backends)
        self.kernel, self.threshold, self.slab_points, self.ppt = kernel, threshold, slab_points, ppt

    @staticmethod
    def value_dtype(dtype):
        return np.dtype(np.float32 if _real(dtype) == "float" else np.float64)

    @staticmethod
    def prefers_separable(basis, dtype):
        """Up to SEPARABLE_MAX_TERMS rank terms (bounded by :func:`separable_terms_bound`)."""
        return separable_terms_bound(basis) <= SEPARABLE_MAX_TERMS[_real(dtype)]

    def prepare(self, basis, geometry, dtype):
        return _prepare(basis, geometry, dtype, self.threshold, self.kernel)

    @staticmethod
    def block_layout(geometry):
        """Whole x planes of a lattice; runs of whole tiles of a point list."""
        return ("plane", 1) if geometry.lattice is not None else ("point", cg.TILE)

    @staticmethod
    def block_points(prepared, dtype, rows):
        """Points per slab so that the lists (ntile * natm entries) and rows x points values fit SLAB_BYTES."""
        item = 8 if prepared.real == "double" else 4
        per_point = rows * item + cg.entry_bytes(prepared.real) * prepared.gb.natm / cg.TILE * 2
        return int(max(cg.TILE, min(SLAB_POINTS, SLAB_BYTES // max(per_point, 1))))

    def point_kernels(self, worker, prepared, geometry, dtype, coeff=None):
        kind, norb, coef = ("ao", 1, None) if coeff is None else ("mo", coeff.shape[1], coeff.T)
        return GPUPointKernels(
            worker, prepared.gb, prepared.real, prepared.flavour, kind, norb, coef, geometry, self.ppt
        )

    @staticmethod
    def separable_planes(nterm, shape, dtype):
        return planes_per_slab(nterm, shape, dtype, B_BYTES)

    @staticmethod
    def separable_kernels(worker, plan, tables, weight, geometry, dtype):
        return GPUSeparableKernels(worker, plan, tables, weight, geometry.lattice, _real(dtype))

    def run(self, blocks, setup, work):
        """Blocks pulled by one host thread per device (:func:`hartree.device.work_queue.run_dynamic`)."""
        run_dynamic(blocks, self.backends, setup, work)


def orbitals(
    basis,
    mo_coeff,
    where,
    dtype=np.float64,
    kernel="auto",
    method="auto",
    devices=None,
    threshold=None,
    backend=None,
    slab_points=None,
    ppt=None,
):
    """Orbital values, numpy (norb, npoints) of dtype, at a Lattice (C order) or (n, 3) points (bohr).

    mo_coeff (nao, norb).  method: 'separable' (rectilinear lattices: 1-D tables, B kernel
    and one GEMM per slab), 'direct' (fused kernel, MAX_NORB orbitals per launch), 'ao' (AO
    values per slab + GEMM), 'auto' (separable on rectilinear lattices with at most
    SEPARABLE_MAX_TERMS rank terms, else direct up to MAX_NORB orbitals, else ao).  The
    other arguments are those of :class:`GPUGrid`; slabs go to the devices dynamically.
    """
    device = GPUGrid(backend, devices, kernel, threshold, slab_points, ppt)
    return evaluate.orbitals(device, basis, mo_coeff, where, dtype, method)


def density(
    basis,
    sets,
    where,
    dtype=np.float64,
    kernel="auto",
    devices=None,
    threshold=None,
    backend=None,
    slab_points=None,
    ppt=None,
):
    """sum over sets of sum_i n_i psi_i^2, numpy (npoints,): sets = [(C^T (nocc, nao), n (nocc,))]."""
    device = GPUGrid(backend, devices, kernel, threshold, slab_points, ppt)
    return evaluate.density(device, basis, sets, where, dtype)


def ao_values(
    basis,
    where,
    dtype=np.float64,
    kernel="auto",
    devices=None,
    threshold=None,
    backend=None,
    slab_points=None,
    ppt=None,
):
    """Basis-function values, numpy (nao, npoints) (AO-major), as the 'ao' kernel stores them."""
    device = GPUGrid(backend, devices, kernel, threshold, slab_points, ppt)
    return evaluate.ao_values(device, basis, where, dtype)


def make_runner(basis, coeff, where, dtype=np.float64, kernel="auto", threshold=None, backend=None, ppt=None):
    """(kernels, whole-geometry block, flavour) for timing: kernels.evaluate(block) evaluates
    the orbitals coeff (nao, norb <= MAX_NORB) at every point on the current device (device array)."""
    be = _backend(backend)
    coeff = np.asarray(coeff, dtype=np.float64).reshape(basis.nao, -1)
    geometry = Geometry.of(where)
    p = _prepare(basis, geometry, dtype, threshold, kernel)
    kernels = GPUPointKernels(be, p.gb, p.real, p.flavour, "mo", coeff.shape[1], coeff.T, geometry, ppt)
    block = geometry.blocks(
        max(geometry.npoints, 1), unit="plane" if geometry.lattice is not None else "point", align=cg.TILE
    )[0]
    return kernels, block, p.flavour


def device_text(backend=None):
    """'NVIDIA H100 80GB HBM3 (cupy 14.2.0)' for reports."""
    be = _backend(backend)
    return f"{be.device_name()} (cupy {be.xp.__version__})"
