"""The B kernel of the separable expansion on the GPU (``sep_b``), and its launcher.

The separable expansion (:mod:`hartree.grid.separable`; the slab loop and GEMM, written once
for every device, in :mod:`hartree.grid.evaluate`) writes an orbital on a rectilinear
lattice as

    psi(x_a, y_b, z_c) = sum_t B_t(x_a, y_b) Z_t(z_c),
    B_t(x_a, y_b)      = sum_{e in t} w_e X_{g_e, i_e}(x_a) Y_{g_e, j_e}(y_b).

Here one small kernel (``sep_b``, template ``separable_b.cu``, one thread per (x_a, y_b, t))
builds B for a slab of x planes, reading the entries sorted by term; the GEMM that follows
runs on cuBLAS (FP64 on the tensor cores of an H100/H200).  No exponentials are evaluated
on the GPU: the 1-D tables (ng x (lmax+1) x n per axis) are made on the host and uploaded
once per orbital and device.

This path needs a rectilinear lattice and serves orbitals (a few at a time); densities,
tilted lattices and point lists use the point kernels of :mod:`hartree.grid.gpu`.
"""

import numpy as np

from ..device import cuda_source
from . import gpu_codegen as cg
from .evaluate import SeparableRunner, separable_weights
from .separable import cartesian_coefficients, lattice_tables, make_plan, planes_per_slab

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


class GPUSeparableKernels:
    """The B table of one orbital on one device (a :class:`hartree.grid.device.SeparableKernels`).

    backend: :class:`hartree.device.backend.CudaBackend` or the emulator; tables: host
    tables of :func:`hartree.grid.separable.lattice_tables`; weight (nentry,) float64 host
    weights of the entries; real: 'double' or 'float'.
    """

    def __init__(self, backend, plan, tables, weight, lattice, real="double"):
        xp = self.xp = backend.xp
        self.backend, self.lattice, self.real = backend, lattice, real
        xtab, ytab = tables[:2]
        order = np.argsort(plan.entry_term, kind="stable")
        term_start = np.concatenate([[0], np.cumsum(np.bincount(plan.entry_term, minlength=plan.nterm))])
        i32 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        self.nterm, self.lmax1 = plan.nterm, xtab.shape[1]
        self.args = [
            self.upload("xtab", xtab),
            self.upload("ytab", ytab),
            i32(term_start),
            i32(plan.term_group[plan.entry_term[order]]),
            i32(plan.entry_i[order]),
            i32(plan.entry_j[order]),
            self.upload("weight", weight[order]),
        ]
        key = {"kind": "grid_sep_b", "real": real, "generator": VERSION}
        (self.module,) = backend.compile([(source(real), key, {"sep_b": SEP_PARAMS})])

    def upload(self, name, host):
        """Device copy of a host array in the precision of REAL."""
        return self.xp.asarray(cg.as_real(host, self.real))

    def build_b(self, plane, planes, b):
        """Launch sep_b: b (planes * ny * nterm,) = B of x planes plane..plane+planes-1."""
        nx, ny, _ = self.lattice.shape
        total = planes * ny * self.nterm
        self.module.launch(
            "sep_b",
            -(-total // 256),
            256,
            [
                np.int32(plane),
                np.int32(planes),
                np.int32(nx),
                np.int32(ny),
                np.int32(self.nterm),
                np.int32(self.lmax1),
                *self.args,
                b,
            ],
        )

    @staticmethod
    def staging(out):
        """None: each slab's values go to a new device array, then to the host."""
        return None

    def to_host(self, values, out):
        self.backend.to_host(values, out)


def runner(backend, basis, coeff, lattice, real="double"):
    """A :class:`hartree.grid.evaluate.SeparableRunner` of one orbital (coeff (nao,)) on the
    device of ``backend`` (for timing: runner.run() is the whole lattice, slab by slab)."""
    if not lattice.is_rectilinear:
        raise ValueError("the separable GPU path needs a rectilinear lattice")
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    cart = cartesian_coefficients(basis, np.asarray(coeff, dtype=np.float64).reshape(-1, 1))[:, 0]
    kernels = GPUSeparableKernels(backend, plan, tables, separable_weights(plan, cart), lattice, real)
    dtype = np.float64 if real == "double" else np.float32
    return SeparableRunner(
        kernels, plan, tables, lattice, dtype, planes_per_slab(plan.nterm, lattice.shape, dtype, B_BYTES)
    )
