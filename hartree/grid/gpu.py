"""Orbitals, basis-function values and densities on lattices on CUDA GPUs (CuPy + NVRTC).

    from hartree.grid import gpu
    psi = gpu.orbitals(basis, mo_coeff[:, [homo]], lattice)            # (1, npoints) numpy
    rho = gpu.density(basis, [(c_occ.T, occupations)], lattice)          # (npoints,)

Work plan (after VMD, Stone et al. 2009):

1. The basis is flattened per atom (:func:`hartree.grid.gpu_basis.grid_basis`): shells of each atom together,
   per-shell radius (:func:`hartree.grid.cpu.shell_cutoffs`) and per-primitive radius
   beyond which the primitive adds less than threshold/nprim to any function
   (exponent screening), and atom kinds for the JIT kernel.
2. The lattice is cut into slabs of whole x planes (listed points: runs of points); slabs
   are handed to one host thread per GPU through a queue (:mod:`hartree.device.work_queue`).
3. Per slab: ``orb_screen`` lists the atoms near each tile (128 threads x PPT points),
   then ``orb_mo`` (up to MAX_NORB orbitals fused: every basis-function value is used for
   all of them) or ``orb_ao`` (basis-function values of the slab, AO-major) followed by one
   GEMM with the orbital coefficients, and for densities rho = sum_i n_i psi_i^2
   (:mod:`gpu_codegen`).  Orbitals on rectilinear lattices take the separable expansion
   instead by default (:mod:`hartree.grid.gpu_separable`: B kernel + GEMM per slab).
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

import numpy as np

from ..device.work_queue import run_dynamic
from ..errors import DeviceError, InputError
from . import gpu_codegen as cg
from .cpu import DEFAULT_THRESHOLD
from .gpu_basis import grid_basis
from .lattice import Lattice

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


class _Geometry:
    """Where the points are: a lattice cut into x-plane slabs, or a point list cut into runs."""

    def __init__(self, where):
        if isinstance(where, Lattice):
            self.lattice, self.points = where, None
            self.npoints = where.npoints
        else:
            pts = np.ascontiguousarray(where, dtype=np.float64)
            if pts.ndim != 2 or pts.shape[1] != 3:
                raise InputError(f"points must have shape (n, 3), got {pts.shape}")
            self.lattice, self.points = None, pts
            self.npoints = pts.shape[0]

    def slabs(self, max_points, pieces=1):
        """[(first point, number of points, first x plane or None, planes)] in C order."""
        if self.lattice is not None:
            n0, n1, n2 = self.lattice.shape
            planes = max(1, min(n0, max_points // (n1 * n2), -(-n0 // pieces)))
            return [(i * n1 * n2, min(planes, n0 - i) * n1 * n2, i, min(planes, n0 - i)) for i in range(0, n0, planes)]
        size = max(cg.TILE, (min(max_points, -(-self.npoints // pieces)) // cg.TILE) * cg.TILE)
        return [(p, min(size, self.npoints - p), None, 0) for p in range(0, self.npoints, size)]


class _DeviceRunner:
    """One device's uploaded basis, compiled module and buffers; runs slabs."""

    def __init__(self, backend, gb, real, flavour, kind, norb, coef, geometry, ppt=None):
        xp = backend.xp
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

    def run(self, slab, out=None):
        """Device array of the slab: (norb, npts) for 'mo', (nao, npts) for 'ao'."""
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


def _prepare(basis, where, dtype, threshold, kernel):
    real = "float" if np.dtype(dtype) == np.float32 else "double"
    if threshold is None:
        threshold = FP32_THRESHOLD if real == "float" else DEFAULT_THRESHOLD
    geometry = _Geometry(where)
    gb = grid_basis(basis, threshold)
    flavour = choose_kernel(gb, geometry.npoints, kernel)
    return real, geometry, gb, flavour


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
    and one GEMM per slab, :mod:`hartree.grid.gpu_separable`), 'direct' (fused kernel,
    MAX_NORB orbitals per launch), 'ao' (AO values per slab + GEMM), 'auto' (separable on
    rectilinear lattices with at most SEPARABLE_MAX_TERMS rank terms, else direct up to
    MAX_NORB orbitals, else ao).  devices: GPU indices (default: the current one); slabs go
    to them dynamically.  slab_points: most points per slab (default: what fits SLAB_BYTES);
    ppt: points per thread (1, 2, 4; default per precision, gpu_codegen.PPT_DEFAULT).
    """
    be = _backend(backend)
    coeff = np.asarray(mo_coeff, dtype=np.float64)
    if coeff.ndim == 1:
        coeff = coeff[:, None]
    if coeff.shape[0] != basis.nao:
        raise InputError(f"orbital coefficients have {coeff.shape[0]} rows; the basis has {basis.nao} functions")
    real = "float" if np.dtype(dtype) == np.float32 else "double"
    geometry = _Geometry(where)
    norb = coeff.shape[1]
    rectilinear = geometry.lattice is not None and geometry.lattice.is_rectilinear
    if method == "auto":
        if rectilinear and separable_terms_bound(basis) <= SEPARABLE_MAX_TERMS[real]:
            method = "separable"
        else:
            method = "direct" if norb <= cg.MAX_NORB else "ao"
    if method not in ("direct", "ao", "separable"):
        raise InputError(f"unknown GPU method {method!r}; use auto, separable, direct or ao")
    backends = _backends(be, devices)
    out = np.empty((norb, geometry.npoints), dtype=np.float64 if real == "double" else np.float32)
    if method == "separable":
        if not rectilinear:
            raise InputError("the separable method needs a lattice with axes along x, y and z")
        _separable(backends, basis, coeff, geometry, real, out, slab_points)
        return out
    real, geometry, gb, flavour = _prepare(basis, where, dtype, threshold, kernel)
    if method == "direct":
        for m0 in range(0, norb, cg.MAX_NORB):
            chunk = coeff[:, m0 : m0 + cg.MAX_NORB]
            budget = slab_points or _slab_points(gb, real, chunk.shape[1])
            _run(
                backends,
                geometry,
                budget,
                lambda: (gb, real, flavour, "mo", chunk.shape[1], chunk.T),
                lambda runner, slab: runner.backend.to_host(
                    runner.run(slab), out[m0 : m0 + chunk.shape[1], slab[0] : slab[0] + slab[1]]
                ),
                ppt,
            )
        return out
    ct = coeff.T

    def finish(runner, slab):
        ao = runner.run(slab)
        runner.backend.to_host(runner.upload("ct", ct) @ ao, out[:, slab[0] : slab[0] + slab[1]])

    _run(
        backends,
        geometry,
        slab_points or _slab_points(gb, real, gb.nao),
        lambda: (gb, real, flavour, "ao", 1, None),
        finish,
        ppt,
    )
    return out


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
    be = _backend(backend)
    real, geometry, gb, flavour = _prepare(basis, where, dtype, threshold, kernel)
    backends = _backends(be, devices)
    out = np.empty(geometry.npoints, dtype=np.float64 if real == "double" else np.float32)

    def finish(runner, slab):
        xp = runner.backend.xp
        ao = runner.run(slab)
        rho = xp.zeros(slab[1], dtype=runner.dtype)
        for k, (ct, n) in enumerate(sets):
            if len(n):
                psi = runner.upload(f"c{k}", ct) @ ao  # (nocc, npts)
                rho += runner.upload(f"n{k}", n) @ (psi * psi)
        runner.backend.to_host(rho, out[slab[0] : slab[0] + slab[1]])

    _run(
        backends,
        geometry,
        slab_points or _slab_points(gb, real, gb.nao),
        lambda: (gb, real, flavour, "ao", 1, None),
        finish,
        ppt,
    )
    return out


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
    be = _backend(backend)
    real, geometry, gb, flavour = _prepare(basis, where, dtype, threshold, kernel)
    backends = _backends(be, devices)
    out = np.empty((gb.nao, geometry.npoints), dtype=np.float64 if real == "double" else np.float32)
    _run(
        backends,
        geometry,
        slab_points or _slab_points(gb, real, gb.nao),
        lambda: (gb, real, flavour, "ao", 1, None),
        lambda runner, slab: runner.backend.to_host(runner.run(slab), out[:, slab[0] : slab[0] + slab[1]]),
        ppt,
    )
    return out


def separable_terms_bound(basis):
    """Upper bound of the separable expansion's rank terms: distinct (centre, exponent) x (lmax+1)."""
    rows = np.column_stack(
        [
            np.repeat(basis.shell_center, basis.shell_nprim, axis=0),
            np.concatenate([basis.shell_exponents(s) for s in range(basis.nshell)]),
        ]
    )
    return len(np.unique(rows, axis=0)) * (int(basis.max_l) + 1)


def _separable(backends, basis, coeff, geometry, real, out, slab_points=None):
    """Orbitals by the separable expansion, slabs of x planes over the devices (out: host)."""
    from .gpu_separable import SeparableRunner, planes_per_slab
    from .separable import lattice_tables, make_plan

    lattice = geometry.lattice
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    dtype = np.float64 if real == "double" else np.float32
    n1n2 = lattice.shape[1] * lattice.shape[2]
    budget = planes_per_slab(plan.nterm, lattice.shape, dtype) * n1n2
    slabs = geometry.slabs(min(budget, slab_points or budget), pieces=4 * len(backends) if len(backends) > 1 else 1)
    for m in range(coeff.shape[1]):
        run_dynamic(
            slabs,
            backends,
            lambda backend: SeparableRunner(backend, basis, coeff[:, m], lattice, real, plan, tables),
            lambda runner, slab: runner.backend.to_host(
                runner.run_slab(slab[2], slab[3]), out[m, slab[0] : slab[0] + slab[1]]
            ),
        )


def _slab_points(gb, real, rows):
    """Points per slab so that the lists (ntile * natm entries) and rows x points values fit SLAB_BYTES."""
    item = 8 if real == "double" else 4
    per_point = rows * item + cg.entry_bytes(real) * gb.natm / cg.TILE * 2
    return int(max(cg.TILE, min(SLAB_POINTS, SLAB_BYTES // max(per_point, 1))))


def _run(backends, geometry, max_points, spec, finish, ppt=None):
    """Cut the geometry into slabs and feed them to one host thread per device (backend)."""
    slabs = geometry.slabs(max_points, pieces=4 * len(backends) if len(backends) > 1 else 1)

    def setup(backend):
        gb, real, flavour, kind, norb, coef = spec()
        return _DeviceRunner(backend, gb, real, flavour, kind, norb, coef, geometry, ppt)

    return run_dynamic(slabs, backends, setup, finish)


def make_runner(basis, coeff, where, dtype=np.float64, kernel="auto", threshold=None, backend=None, ppt=None):
    """(runner, whole-geometry slab) for timing: runner.run(slab) evaluates the orbitals
    coeff (nao, norb <= MAX_NORB) at every point on the current device (device array)."""
    be = _backend(backend)
    coeff = np.asarray(coeff, dtype=np.float64).reshape(basis.nao, -1)
    real, geometry, gb, flavour = _prepare(basis, where, dtype, threshold, kernel)
    runner = _DeviceRunner(be, gb, real, flavour, "mo", coeff.shape[1], coeff.T, geometry, ppt)
    slab = geometry.slabs(max(geometry.npoints, 1))[0]
    return runner, slab, flavour


def device_text(backend=None):
    """'NVIDIA H100 80GB HBM3 (cupy 14.2.0)' for reports."""
    be = _backend(backend)
    return f"{be.device_name()} (cupy {be.xp.__version__})"
