"""Two-electron part of the atomic (Dirac-)HF Fock supermatrices on a GPU (CuPy).

The same contraction as :func:`hartree.atom.operators.two_electron`, stored differently
(the thesis' X matrices, eqs. 3.8-3.9, one dense matrix per component class):

    Coulomb   J = Sᵀ R⁰ S d            S: (U, N) sparse expansion of the pair densities of
                                       the flattened densities d (N = Σ_b dim_b²) in the
                                       unique primitives r^n e^{-p r²}; R⁰: (U, U)
    exchange  K^LL = A_L w d_LL,  K^SS = A_S w d_SS    (pairs p ≥ q of every block;
              K^LS = B d_LS, K^SL = (K^LS)ᵀ              w = 2 - δ_rs), B over all (p, q)

with A, B from :mod:`hartree.atom.gpu_kernels` (one thread per element).  Each Fock build
is then three GEMVs and two sparse products on the device; the densities go up and J, K
come down as flat vectors (≈ 0.9 MB for Rn with 45 functions per symmetry).

Memory: A_X is T² doubles (T = Σ_b n_b(n_b+1)/2), B is (Σ_b n_b²)²; Rn n=45 needs
2·7245² + 14175² doubles = 2.45 GB.  Backends: :class:`hartree.device.backend.CudaBackend`
(NVRTC, disk cache); the tests pass :class:`hartree.device.emulator.EmulatedBackend`, which
runs the same CUDA source on the CPU.
"""

import time

import numpy as np

from ..errors import DeviceError, InputError
from . import gpu_kernels
from .angular import exchange_coefficients
from .operators import coulomb_primitives

KERNELS = (
    "atom_coulomb_prim",
    "atom_exchange_tri",
    "atom_exchange_ls",
    "atom_coulomb_prim_1d",
    "atom_exchange_tri_1d",
    "atom_exchange_ls_1d",
)
MAPPINGS = ("2d", "1d")


def launch_shape(n, mapping, max_blocks):
    """(kernel suffix, grid, block) for an n x n symmetric matrix (upper triangle computed).

    '2d': tiles of gpu_kernels.BLOCK over the square; '1d': gpu_kernels.BLOCK_1D threads per
    block, grid-stride over the n(n+1)/2 packed elements, at most ``max_blocks`` blocks.
    """
    if mapping == "2d":
        bx, by = gpu_kernels.BLOCK
        return "", ((n + bx - 1) // bx, (n + by - 1) // by), (bx, by)
    total = n * (n + 1) // 2
    nb = max(1, min((total + gpu_kernels.BLOCK_1D - 1) // gpu_kernels.BLOCK_1D, max_blocks))
    return "_1d", (nb, 1), (gpu_kernels.BLOCK_1D, 1)


def load_kernels(backend):
    """(module, resources) of the kernels on a backend: compiled (or read from the disk
    cache) and loaded; resources {kernel: {num_regs, local_size_bytes, shared_size_bytes}}
    on a GPU, {} on the emulator."""
    key = {"kind": "atom_two_electron", "generator": gpu_kernels.GENERATOR_VERSION}
    (module,) = backend.compile([(gpu_kernels.source(), key, None)])
    resources = module.resources(KERNELS) if hasattr(module, "resources") else {}
    return module, resources


def default_backend():
    """The CUDA backend of the current device; DeviceError without a usable GPU."""
    from ..device.backend import CudaBackend
    from ..device.selection import gpu_status

    ok, text = gpu_status()
    if not ok:
        raise DeviceError(f"no usable GPU for the atomic SCF: {text}")
    return CudaBackend()


def _function_table(ops):
    """Flat list of every radial function: (ζ, n, c0, c1) meaning (c0 r^n + c1 r^{n+2}) e^{-ζr²}.

    Returns (fz, fn, f0, f1) and {(b, X): first index}; large functions of all blocks first.
    """
    fz, fn, f0, f1, start = [], [], [], [], {}
    pos = 0
    for x in ops.components:
        for b, sets in enumerate(ops.sets):
            st = sets[x]
            start[(b, x)] = pos
            pos += st.n
            fz.append(st.zeta)
            if st.powers.size == 1:
                fn.append(np.full(st.n, st.powers[0]))
                f0.append(st.coef[:, 0])
                f1.append(np.zeros(st.n))
            else:  # κ > 0 small: powers (l, l+2)
                assert st.powers[1] == st.powers[0] + 2
                fn.append(np.full(st.n, st.powers[0]))
                f0.append(st.coef[:, 0])
                f1.append(st.coef[:, 1])
    cat = np.concatenate
    return (cat(fz), cat(fn).astype(np.int32), cat(f0), cat(f1)), start


class DeviceTwoElectron:
    """Stored two-electron matrices on a device; ``two_electron(dms)`` -> (js, ks) numpy.

    ops: :class:`hartree.atom.operators.Operators` with ``sets`` (one-electron part only
    is needed).  backend: :func:`default_backend` (default, CUDA) or the emulator.
    mapping: '2d' (tiles, default) or '1d' (the thesis' grid-stride loop), see gpu_kernels.
    ``timings``: seconds for 'integrals' (tables, uploads and kernels, synchronized), the
    'kernels' alone, and the last 'fock' (one two_electron call, transfers included).
    """

    def __init__(self, ops, backend=None, mapping="2d"):
        if mapping not in MAPPINGS:
            raise ValueError(f"mapping must be one of {MAPPINGS}")
        self.ops = ops
        self.mapping = mapping
        self.be = be = backend or default_backend()
        self.device = be.device_name()
        self.module, self.resources = load_kernels(be)
        self.timings = {}
        t0 = time.perf_counter()
        nb = len(ops.blocks)
        dims = ops.dims
        self.offsets = np.concatenate([[0], np.cumsum([d * d for d in dims])]).astype(np.int64)
        self.nflat = int(self.offsets[-1])
        (fz, fn, f0, f1), fstart = _function_table(ops)
        ck = np.zeros((nb, nb, gpu_kernels.KMAX))
        for b1 in range(nb):
            for b2 in range(nb):
                for k, c in exchange_coefficients(ops.blocks[b1], ops.blocks[b2]):
                    if k >= gpu_kernels.KMAX:
                        raise InputError(
                            f"the GPU kernels handle exchange up to k = {gpu_kernels.KMAX - 1} "
                            f"(l <= {(gpu_kernels.KMAX - 1) // 2}); use device='cpu'"
                        )
                    ck[b1, b2, k] = c
        dev = {name: be.asarray(a) for name, a in (("fz", fz), ("fn", fn), ("f0", f0), ("f1", f1), ("ck", ck.ravel()))}
        fargs = (dev["fz"], dev["fn"], dev["f0"], dev["f1"])

        # exchange over pair rows p >= q, per component (kernel atom_exchange_tri)
        launches = []
        self.tri = {}
        for x in ops.components:
            f1r, f2r, blk, idx, idxt, w = [], [], [], [], [], []
            for b in range(nb):
                n, d, xo = ops.sizes[b], dims[b], (0 if x == "L" else ops.sizes[b])
                p, q = np.tril_indices(n)
                f1r.append(fstart[(b, x)] + p)
                f2r.append(fstart[(b, x)] + q)
                blk.append(np.full(p.size, b))
                idx.append(self.offsets[b] + (xo + p) * d + xo + q)
                idxt.append(self.offsets[b] + (xo + q) * d + xo + p)
                w.append(np.where(p == q, 1.0, 2.0))
            rows = [np.concatenate(a) for a in (f1r, f2r, blk)]
            nrow = rows[0].size
            mat = be.empty((nrow, nrow))
            launches.append(
                (
                    "atom_exchange_tri",
                    nrow,
                    (
                        np.int32(nrow),
                        *(be.asarray(r.astype(np.int32)) for r in rows),
                        np.int32(nb),
                        dev["ck"],
                        *fargs,
                        mat,
                    ),
                )
            )
            self.tri[x] = (mat, *(be.asarray(np.concatenate(a)) for a in (idx, idxt, w)))
        self.pair_rows = {x: v[0].shape[0] for x, v in self.tri.items()}

        # L-S exchange over all (p, q) (kernel atom_exchange_ls)
        self.ls = None
        if ops.relativistic:
            rl, rs, blk, idx, idxt = [], [], [], [], []
            for b in range(nb):
                n, d = ops.sizes[b], dims[b]
                p, q = (a.ravel() for a in np.indices((n, n)))
                rl.append(fstart[(b, "L")] + p)
                rs.append(fstart[(b, "S")] + q)
                blk.append(np.full(p.size, b))
                idx.append(self.offsets[b] + p * d + n + q)
                idxt.append(self.offsets[b] + (n + q) * d + p)
            rows = [np.concatenate(a) for a in (rl, rs, blk)]
            nrow = rows[0].size
            mat = be.empty((nrow, nrow))
            launches.append(
                (
                    "atom_exchange_ls",
                    nrow,
                    (
                        np.int32(nrow),
                        *(be.asarray(r.astype(np.int32)) for r in rows),
                        np.int32(nb),
                        dev["ck"],
                        *fargs,
                        mat,
                    ),
                )
            )
            self.ls = (mat, be.asarray(np.concatenate(idx)), be.asarray(np.concatenate(idxt)))

        # Coulomb through the unique primitives (kernel atom_coulomb_prim)
        unique, cmap = coulomb_primitives(ops)
        nprim = unique.shape[0]
        self.coulomb = be.empty((nprim, nprim))
        launches.append(
            (
                "atom_coulomb_prim",
                nprim,
                (
                    np.int32(nprim),
                    be.asarray(unique[:, 0].astype(np.int32)),
                    be.asarray(unique[:, 1].copy()),
                    self.coulomb,
                ),
            )
        )
        rows, cols, vals = [], [], []
        for (b, x), (uidx, coef) in cmap.items():
            n, d = ops.sizes[b], dims[b]
            xo = 0 if x == "L" else n
            p, q = (a.ravel() for a in np.indices((n, n)))
            flat = self.offsets[b] + (xo + p) * d + xo + q
            rows.append(uidx.ravel())
            cols.append(np.repeat(flat, uidx.shape[1]))
            vals.append(coef.ravel())
        rows, cols, vals = (np.concatenate(a) for a in (rows, cols, vals))
        keep = vals != 0.0
        self.scatter = self._csr(rows[keep], cols[keep], vals[keep], (nprim, self.nflat))
        self.gather = self._csr(cols[keep], rows[keep], vals[keep], (self.nflat, nprim))
        self.nprim = nprim
        be.synchronize()
        t1 = time.perf_counter()
        max_blocks = 16 * be.multiprocessor_count()
        for name, n, args in launches:  # the thesis' eint2: every stored integral
            suffix, grid, block = launch_shape(n, mapping, max_blocks)
            self.module.launch(name + suffix, grid, block, args)
        be.synchronize()
        t2 = time.perf_counter()
        self.timings["kernels"] = t2 - t1
        self.timings["integrals"] = t2 - t0

    def _csr(self, rows, cols, vals, shape):
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order], cols[order], vals[order]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
        be = self.be
        data = (be.asarray(vals), be.asarray(cols.astype(np.int32)), be.asarray(indptr.astype(np.int32)))
        return be.sparse.csr_matrix(data, shape=shape)

    @property
    def integral_count(self):
        """Unique elements per exchange matrix (upper triangles): {'L': .., 'S': .., 'LS': ..}."""
        out = {x: n * (n + 1) // 2 for x, n in self.pair_rows.items()}
        if self.ls is not None:
            n = self.ls[0].shape[0]
            out["LS"] = n * (n + 1) // 2
        return out

    def _flat(self, dms):
        d = np.zeros(self.nflat)
        for b, dm in enumerate(dms):
            if dm is not None:
                d[self.offsets[b] : self.offsets[b + 1]] = dm.ravel()
        return d

    def two_electron(self, dms):
        """(js, ks): per-block (dim, dim) numpy Coulomb and exchange supermatrices of dms."""
        t0 = time.perf_counter()
        be = self.be
        xp_d = be.asarray(self._flat(dms))
        jflat = self.gather @ (self.coulomb @ (self.scatter @ xp_d))  # J = Sᵀ R⁰ S d
        kflat = be.zeros(self.nflat)
        for mat, idx, idxt, w in self.tri.values():  # K^XX = A_X (w d_XX), eq. 3.9
            k = mat @ (xp_d[idx] * w)
            kflat[idx] = k
            kflat[idxt] = k
        if self.ls is not None:  # K^LS = B d_LS, K^SL = (K^LS)^T
            mat, idx, idxt = self.ls
            k = mat @ xp_d[idx]
            kflat[idx] = k
            kflat[idxt] = k
        j = be.to_numpy(jflat)
        kk = be.to_numpy(kflat)
        js, ks = [], []
        for b, d in enumerate(self.ops.dims):
            sl = slice(self.offsets[b], self.offsets[b + 1])
            js.append(j[sl].reshape(d, d))
            ks.append(kk[sl].reshape(d, d))
        self.timings["fock"] = time.perf_counter() - t0
        return js, ks

    def two_electron_block(self, b, dm):
        """(J, K) of block b from a density of block b only (open-shell correction)."""
        dms = [None] * len(self.ops.dims)
        dms[b] = dm
        js, ks = self.two_electron(dms)
        return js[b], ks[b]
