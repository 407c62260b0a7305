"""Orbitals on rectilinear lattices on the GPU through the separable expansion.

The GPU counterpart of :mod:`hartree.grid.separable` (same plan, same 1-D tables, same
equations): on a lattice whose steps lie along x, y, z,

    psi(x_a, y_b, z_c) = sum_t B_t(x_a, y_b) Z_t(z_c),
    B_t(x_a, y_b)      = sum_{e in t} w_e X_{g_e, i_e}(x_a) Y_{g_e, j_e}(y_b),

so one small kernel (``sep_b``, one thread per (x_a, y_b, t)) builds B for a slab of x
planes and one GEMM, (na ny, nterm) @ (nterm, nz), writes the slab's values in the
lattice's C order.  The GEMM runs on cuBLAS (FP64 on the tensor cores of an H100/H200).
No exponentials are evaluated on the GPU: the 1-D tables (ng x (lmax+1) x n per axis) are
made on the host and uploaded once.

This path needs a rectilinear lattice and serves orbitals (a few at a time); densities,
tilted lattices and point lists use the direct kernels of :mod:`hartree.grid.gpu`.
"""

import numpy as np

from ..device import cuda_source
from . import gpu_codegen as cg
from .separable import cartesian_coefficients, lattice_tables, make_plan

#: Generator version of the sep_b source (part of the compile cache key).
VERSION = 1
#: Bytes of B per slab.
B_BYTES = 512 * 2**20

SEP_PARAMS = [
    ("int", "ix0"),
    ("int", "na"),
    ("int", "nx"),
    ("int", "ny"),
    ("int", "nterm"),
    ("int", "lmax1"),
    ("const REAL*", "xtab"),
    ("const REAL*", "ytab"),
    ("const int*", "term_start"),
    ("const int*", "e_group"),
    ("const int*", "e_i"),
    ("const int*", "e_j"),
    ("const REAL*", "e_w"),
    ("REAL*", "b"),
]


def source(real):
    """CUDA source of the B-building kernel for REAL = real."""
    template = cuda_source.read("hartree.grid", "separable_b.cu")
    return template.format(version=VERSION, real=real, params=cg.decl(SEP_PARAMS))


class SeparableRunner:
    """One orbital on a rectilinear lattice, on the current device.

    runner = SeparableRunner(backend, basis, coeff (nao,), lattice, real)
    values = runner.run()          # device array lattice.shape (C order)
    """

    def __init__(self, backend, basis, coeff, lattice, real="double", plan=None, tables=None):
        if not lattice.is_rectilinear:
            raise ValueError("the separable GPU path needs a rectilinear lattice")
        xp = backend.xp
        self.backend, self.lattice, self.real = backend, lattice, real
        self.dtype = np.float64 if real == "double" else np.float32
        plan = plan or make_plan(basis)
        xtab, ytab, ztab = (tables or lattice_tables(plan, lattice))[:3]
        cart = cartesian_coefficients(basis, np.asarray(coeff, dtype=np.float64).reshape(-1, 1))[:, 0]
        # weight of each entry (t, i, j): sum over its sources of c_p f(l) C_cart
        weight = np.bincount(plan.src_entry, weights=plan.src_coef * cart[plan.src_row], minlength=plan.entry_term.size)
        order = np.argsort(plan.entry_term, kind="stable")
        term_start = np.concatenate([[0], np.cumsum(np.bincount(plan.entry_term, minlength=plan.nterm))])
        i32 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        r = lambda a: xp.asarray(cg.as_real(a, real))  # noqa: E731
        self.nterm, self.lmax1 = plan.nterm, xtab.shape[1]
        self.args = [
            r(xtab),
            r(ytab),
            i32(term_start),
            i32(plan.term_group[plan.entry_term[order]]),
            i32(plan.entry_i[order]),
            i32(plan.entry_j[order]),
            r(weight[order]),
        ]
        self.zmat = r(ztab[plan.term_group, plan.term_k, :])  # (nterm, nz)
        key = {"kind": "grid_sep_b", "real": real, "generator": VERSION}
        (self.module,) = backend.compile([(source(real), key, {"sep_b": SEP_PARAMS})])
        self.planes = planes_per_slab(plan.nterm, lattice.shape, self.dtype)
        self.b = xp.empty(self.planes * lattice.shape[1] * self.nterm, dtype=self.dtype)

    def run_slab(self, ix0, na, out=None):
        """Values of x planes ix0..ix0+na-1 (na <= self.planes): device array (na * ny * nz,)."""
        xp = self.backend.xp
        nx, ny, nz = self.lattice.shape
        if out is None:
            out = xp.empty(na * ny * nz, dtype=self.dtype)
        total = na * ny * self.nterm
        b = self.b[:total]
        self.module.launch(
            "sep_b",
            -(-total // 256),
            256,
            [
                np.int32(ix0),
                np.int32(na),
                np.int32(nx),
                np.int32(ny),
                np.int32(self.nterm),
                np.int32(self.lmax1),
                *self.args,
                b,
            ],
        )
        xp.matmul(b.reshape(na * ny, self.nterm), self.zmat, out=out.reshape(na * ny, nz))
        return out

    def run(self, out=None):
        """Device array of shape lattice.shape with the orbital's values (a.u.)."""
        nx, ny, nz = self.lattice.shape
        if out is None:
            out = self.backend.xp.empty((nx, ny, nz), dtype=self.dtype)
        flat = out.reshape(-1)
        for ix0 in range(0, nx, self.planes):
            na = min(self.planes, nx - ix0)
            self.run_slab(ix0, na, out=flat[ix0 * ny * nz : (ix0 + na) * ny * nz])
        return out


def planes_per_slab(nterm, shape, dtype):
    """x planes per slab so that B (planes x ny x nterm) stays within B_BYTES."""
    nx, ny, _ = shape
    return max(1, min(nx, B_BYTES // max(1, ny * nterm * np.dtype(dtype).itemsize)))
