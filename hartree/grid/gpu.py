"""Orbitals, basis-function values and densities on lattices on CUDA GPUs (CuPy + NVRTC).

    from hartree.grid import gpu
    psi = gpu.orbitals(basis, mo_coeff[:, [homo]], lattice)            # (1, npoints) numpy
    rho = gpu.density(basis, [(c_occ.T, occupations)], lattice)          # (npoints,)

Work plan (after VMD, Stone et al. 2009):

1. The basis is flattened per atom (:func:`grid_basis`): shells of each atom together,
   per-shell radius (:func:`hartree.grid.cpu.shell_cutoffs`) and per-primitive radius
   beyond which the primitive adds less than threshold/nprim to any function
   (exponent screening), and atom kinds for the JIT kernel.
2. The lattice is cut into slabs of whole x planes (listed points: runs of points); slabs
   are handed to one host thread per GPU through a queue (:mod:`hartree.grid.multi`).
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

cupy is imported inside the functions only; ``backend`` lets the tests run the same code
through the g++ emulation (:mod:`hartree.grid.gpu_emulate`).
"""

from dataclasses import dataclass

import numpy as np

from ..errors import DeviceError, InputError
from . import gpu_codegen as cg
from .cpu import DEFAULT_THRESHOLD, prepare_basis
from .lattice import Lattice
from .multi import run_dynamic

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


@dataclass(frozen=True)
class ShellKind:
    """One shell of an atom kind: l, first AO relative to the atom's, primitive indices into
    the kind's unique exponents, coefficients c_p N f(l), squared radius (bohr^2)."""

    l: int
    ao_offset: int
    prims: tuple
    coefs: tuple
    rcut2: float


@dataclass(frozen=True)
class AtomKind:
    """Atoms with identical shells: unique exponents (bohr^-2) with their squared radii,
    the shells, and the atom's squared radius (largest shell radius)."""

    exponents: tuple
    exp_rcut2: tuple
    shells: tuple
    rcut2: float


@dataclass(frozen=True, eq=False)
class GridBasis:
    """Basis flattened per atom for the kernels (arrays described in gpu_codegen.EVAL_PARAMS).

    atom_xyz (natm, 3) bohr; atom_rcut2 (natm,) bohr^2; atom_shell (natm+1,) shell ranges
    in sorted order; atom_ao0, atom_kind (natm,); sh_* (nshell,); p_* (nprim,);
    kinds: list of AtomKind, or None when the shells of an atom do not share a centre or
    their AOs are not contiguous (then only the general kernel runs).
    """

    nao: int
    pure: bool
    ls: tuple
    atom_xyz: np.ndarray
    atom_rcut2: np.ndarray
    atom_shell: np.ndarray
    atom_ao0: np.ndarray
    atom_kind: np.ndarray
    kinds: object
    sh_l: np.ndarray
    sh_nprim: np.ndarray
    sh_p0: np.ndarray
    sh_ao0: np.ndarray
    sh_rcut2: np.ndarray
    p_exp: np.ndarray
    p_coef: np.ndarray
    p_rcut2: np.ndarray

    @property
    def natm(self):
        return int(self.atom_xyz.shape[0])


def primitive_cutoffs(l, exponents, coefs, nprim, threshold):
    """Squared radius (bohr^2) per primitive beyond which K_l |c| r^l exp(-a r^2) stays below
    threshold / nprim (K_l = 2^l (2l+1) bounds |spherical| by the cartesian monomials, as in
    :func:`hartree.grid.cpu.shell_cutoffs`).  Same 0.01-bohr radial grid, rounded outward."""
    r = np.linspace(0.0, 60.0, 6001)
    a = np.asarray(exponents, dtype=float)[:, None]
    c = np.abs(np.asarray(coefs, dtype=float))[:, None] * 2.0**l * (2 * l + 1)
    bound = c * r**l * np.exp(-a * r * r)
    out = np.empty(a.shape[0])
    for q in range(a.shape[0]):
        above = np.flatnonzero(bound[q] >= threshold / nprim)
        rmax = r[min(above[-1] + 1, r.size - 1)] if above.size else 0.0
        out[q] = rmax * rmax if rmax < r[-1] else np.inf
    return out


def grid_basis(basis, threshold=DEFAULT_THRESHOLD):
    """GridBasis of a Basis (pure function of the basis and the threshold)."""
    prepared = prepare_basis(basis, threshold)  # coefficients incl. f(l), shell radii
    order = np.argsort(basis.shell_atom, kind="stable")
    atoms, first = np.unique(basis.shell_atom[order], return_index=True)
    atom_shell = np.append(first, order.size).astype(np.int32)
    sh_l = prepared.shell_l[order]
    sh_nprim = prepared.shell_nprim[order]
    sh_ao0 = prepared.ao_loc[order]
    sh_rcut2 = prepared.rcut2[order]
    centres = basis.shell_center[order]
    p_exp, p_coef, p_rcut2, sh_p0 = [], [], [], []
    memo = {}  # identical shells on many atoms: once
    for s, shell in enumerate(order):
        p0 = int(prepared.shell_prim_start[shell])
        n = int(prepared.shell_nprim[shell])
        sh_p0.append(sum(len(x) for x in p_exp))
        exps = prepared.exponents[p0 : p0 + n]
        coefs = prepared.coefficients[p0 : p0 + n]
        p_exp.append(exps)
        p_coef.append(coefs)
        key = (int(sh_l[s]), exps.tobytes(), coefs.tobytes())
        if key not in memo:
            memo[key] = primitive_cutoffs(int(sh_l[s]), exps, coefs, n, threshold)
        p_rcut2.append(np.minimum(memo[key], sh_rcut2[s]))
    p_exp, p_coef, p_rcut2 = (np.concatenate(x) if x else np.zeros(0) for x in (p_exp, p_coef, p_rcut2))
    natm = atoms.size
    atom_xyz = np.array([centres[atom_shell[i]] for i in range(natm)]).reshape(natm, 3)
    atom_rcut2 = np.array([sh_rcut2[atom_shell[i] : atom_shell[i + 1]].max() for i in range(natm)])
    atom_ao0 = np.array([sh_ao0[atom_shell[i] : atom_shell[i + 1]].min() for i in range(natm)], dtype=np.int32)
    kinds, atom_kind = _atom_kinds(
        atom_shell,
        centres,
        atom_xyz,
        atom_ao0,
        sh_l,
        sh_nprim,
        sh_ao0,
        sh_rcut2,
        np.array(sh_p0),
        p_exp,
        p_coef,
        p_rcut2,
        basis.pure,
    )
    return GridBasis(
        nao=int(basis.nao),
        pure=bool(basis.pure),
        ls=tuple(sorted(set(int(v) for v in sh_l))),
        atom_xyz=np.ascontiguousarray(atom_xyz),
        atom_rcut2=atom_rcut2,
        atom_shell=atom_shell,
        atom_ao0=atom_ao0,
        atom_kind=atom_kind,
        kinds=kinds,
        sh_l=sh_l.astype(np.int32),
        sh_nprim=sh_nprim.astype(np.int32),
        sh_p0=np.array(sh_p0, dtype=np.int32),
        sh_ao0=sh_ao0.astype(np.int32),
        sh_rcut2=sh_rcut2,
        p_exp=p_exp,
        p_coef=p_coef,
        p_rcut2=p_rcut2,
    )


def _atom_kinds(
    atom_shell, centres, atom_xyz, atom_ao0, sh_l, sh_nprim, sh_ao0, sh_rcut2, sh_p0, p_exp, p_coef, p_rcut2, pure
):
    """(list of AtomKind, kind index per atom), or (None, zeros) when the JIT layout does not apply."""
    from ..basis import ncart, nsph

    natm = atom_xyz.shape[0]
    table, kinds, atom_kind = {}, [], np.zeros(natm, dtype=np.int32)
    for i in range(natm):
        s0, s1 = atom_shell[i], atom_shell[i + 1]
        if not np.all(centres[s0:s1] == atom_xyz[i]):
            return None, atom_kind
        size = sum((nsph if pure else ncart)(int(sh_l[s])) for s in range(s0, s1))
        offsets = sh_ao0[s0:s1] - atom_ao0[i]
        if sorted(offsets.tolist()) != sorted(set(offsets.tolist())) or offsets.max(initial=0) >= size:
            return None, atom_kind
        uniq, shells = {}, []
        for s in range(s0, s1):
            q0, n = int(sh_p0[s]), int(sh_nprim[s])
            prims = []
            for q in range(q0, q0 + n):
                a = float(p_exp[q])
                if a not in uniq:
                    uniq[a] = [len(uniq), float(p_rcut2[q])]
                uniq[a][1] = max(uniq[a][1], float(p_rcut2[q]))
                prims.append(uniq[a][0])
            shells.append(
                ShellKind(
                    l=int(sh_l[s]),
                    ao_offset=int(offsets[s - s0]),
                    prims=tuple(prims),
                    coefs=tuple(float(c) for c in p_coef[q0 : q0 + n]),
                    rcut2=float(sh_rcut2[s]),
                )
            )
        exps = sorted(uniq, key=lambda a: uniq[a][0])
        kind = AtomKind(
            exponents=tuple(exps),
            exp_rcut2=tuple(uniq[a][1] for a in exps),
            shells=tuple(shells),
            rcut2=float(sh_rcut2[s0:s1].max()),
        )
        atom_kind[i] = table.setdefault(kind, len(table))
        if atom_kind[i] == len(kinds):
            kinds.append(kind)
    return kinds, atom_kind


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


class CupyBackend:
    """Launches through cupy (hartree.gpu.compile: NVRTC, memory and disk cache)."""

    name = "cuda"

    def __init__(self):
        try:
            import cupy
        except Exception as exc:
            raise DeviceError(f"the GPU grid kernels need cupy ({type(exc).__name__}: {exc})") from None
        self.xp = cupy
        self._functions = {}  # (module, kernel, device) -> cupy Function

    def device_count(self):
        return self.xp.cuda.runtime.getDeviceCount()

    def device(self, index):
        return self.xp.cuda.Device(index)

    def module(self, source, key):
        from ..gpu.compile import compile_kernels

        return compile_kernels([(source, key)])[0]

    def launch(self, module, name, grid, block, args):
        key = (id(module), name, self.xp.cuda.Device().id)
        function = self._functions.get(key)
        if function is None:
            function = self._functions[key] = module.get_function(name)
        function((int(grid),), (int(block),), tuple(args))

    def to_host(self, array, out):
        if out.flags.c_contiguous:
            array.get(out=out)
        else:  # a block of rows of a larger host array
            out[...] = array.get()

    def synchronize(self):
        self.xp.cuda.Stream.null.synchronize()


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
        self.module = backend.module(source, key)
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
        xp, be = self.backend.xp, self.backend
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
        be.launch(
            self.module,
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
        xp, be = self.backend.xp, self.backend
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
        be.launch(
            self.module,
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
    return backend if backend is not None else CupyBackend()


def _devices(backend, devices):
    if devices is None:
        n = backend.device_count()
        if n < 1:
            raise DeviceError("no CUDA device is visible")
        return [0]
    return list(devices)


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
    devs = _devices(be, devices)
    out = np.empty((norb, geometry.npoints), dtype=np.float64 if real == "double" else np.float32)
    if method == "separable":
        if not rectilinear:
            raise InputError("the separable method needs a lattice with axes along x, y and z")
        _separable(be, devs, basis, coeff, geometry, real, out, slab_points)
        return out
    real, geometry, gb, flavour = _prepare(basis, where, dtype, threshold, kernel)
    if method == "direct":
        for m0 in range(0, norb, cg.MAX_NORB):
            chunk = coeff[:, m0 : m0 + cg.MAX_NORB]
            budget = slab_points or _slab_points(gb, real, chunk.shape[1])
            _run(
                be,
                devs,
                geometry,
                budget,
                lambda: (gb, real, flavour, "mo", chunk.shape[1], chunk.T),
                lambda runner, slab: be.to_host(
                    runner.run(slab), out[m0 : m0 + chunk.shape[1], slab[0] : slab[0] + slab[1]]
                ),
                ppt,
            )
        return out
    ct = coeff.T

    def finish(runner, slab):
        ao = runner.run(slab)
        be.to_host(runner.upload("ct", ct) @ ao, out[:, slab[0] : slab[0] + slab[1]])

    _run(
        be,
        devs,
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
    devs = _devices(be, devices)
    out = np.empty(geometry.npoints, dtype=np.float64 if real == "double" else np.float32)

    def finish(runner, slab):
        xp = runner.backend.xp
        ao = runner.run(slab)
        rho = xp.zeros(slab[1], dtype=runner.dtype)
        for k, (ct, n) in enumerate(sets):
            if len(n):
                psi = runner.upload(f"c{k}", ct) @ ao  # (nocc, npts)
                rho += runner.upload(f"n{k}", n) @ (psi * psi)
        be.to_host(rho, out[slab[0] : slab[0] + slab[1]])

    _run(
        be,
        devs,
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
    devs = _devices(be, devices)
    out = np.empty((gb.nao, geometry.npoints), dtype=np.float64 if real == "double" else np.float32)
    _run(
        be,
        devs,
        geometry,
        slab_points or _slab_points(gb, real, gb.nao),
        lambda: (gb, real, flavour, "ao", 1, None),
        lambda runner, slab: be.to_host(runner.run(slab), out[:, slab[0] : slab[0] + slab[1]]),
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


def _separable(backend, devices, basis, coeff, geometry, real, out, slab_points=None):
    """Orbitals by the separable expansion, slabs of x planes over the devices (out: host)."""
    from .gpu_separable import SeparableRunner, planes_per_slab
    from .separable import lattice_tables, make_plan

    lattice = geometry.lattice
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    dtype = np.float64 if real == "double" else np.float32
    n1n2 = lattice.shape[1] * lattice.shape[2]
    budget = planes_per_slab(plan.nterm, lattice.shape, dtype) * n1n2
    slabs = geometry.slabs(min(budget, slab_points or budget), pieces=4 * len(devices) if len(devices) > 1 else 1)
    for m in range(coeff.shape[1]):
        run_dynamic(
            slabs,
            devices,
            backend.device,
            lambda device: SeparableRunner(backend, basis, coeff[:, m], lattice, real, plan, tables),
            lambda runner, slab: backend.to_host(
                runner.run_slab(slab[2], slab[3]), out[m, slab[0] : slab[0] + slab[1]]
            ),
        )


def _slab_points(gb, real, rows):
    """Points per slab so that the lists (ntile * natm entries) and rows x points values fit SLAB_BYTES."""
    item = 8 if real == "double" else 4
    per_point = rows * item + cg.entry_bytes(real) * gb.natm / cg.TILE * 2
    return int(max(cg.TILE, min(SLAB_POINTS, SLAB_BYTES // max(per_point, 1))))


def _run(backend, devices, geometry, max_points, spec, finish, ppt=None):
    """Cut the geometry into slabs and feed them to one host thread per device."""
    slabs = geometry.slabs(max_points, pieces=4 * len(devices) if len(devices) > 1 else 1)

    def setup(device):
        gb, real, flavour, kind, norb, coef = spec()
        return _DeviceRunner(backend, gb, real, flavour, kind, norb, coef, geometry, ppt)

    return run_dynamic(slabs, devices, backend.device, setup, finish)


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
    props = be.xp.cuda.runtime.getDeviceProperties(be.xp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"{name} (cupy {be.xp.__version__})"
