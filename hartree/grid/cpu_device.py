"""The CPU as a :class:`hartree.grid.device.GridDevice`: numba kernels, numpy arrays, one worker.

    values = evaluate.orbitals(CPUGrid(), basis, coeff, lattice)

Kernels: basis-function values per block from the exp-free row kernel on rectilinear
lattices (:func:`hartree.grid.separable.ao_rows`, blocks of whole (x, y) rows) or the
general kernel elsewhere (:func:`hartree.grid.cpu.eval_ao`, runs of POINT_BLOCK points);
the B table of the separable expansion from :func:`hartree.grid.separable.build_b`.  The
parallelism is inside the kernels (numba threads) and the GEMMs (BLAS threads), so the
blocks run one after the other in the calling thread.  There is no fused orbital kernel:
methods "ao" and "separable".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cpu import DEFAULT_THRESHOLD, PreparedBasis, eval_ao, prepare_basis
from .geometry import Block, Geometry
from .separable import SeparablePlan, ao_rows, build_b, lattice_tables, make_plan, planes_per_slab

#: Points per block of the point kernels (block x nao values held at once).
POINT_BLOCK = 4096
#: Bytes of the B table of the separable expansion per slab (whole x planes).
SEPARABLE_B_BYTES = 32 * 2**20


@dataclass(frozen=True, eq=False)
class CPUPrepared:
    """Host data of the point kernels: the flattened basis, and on rectilinear lattices the
    separable plan and 1-D tables of the row kernel (None elsewhere)."""

    basis: PreparedBasis
    plan: SeparablePlan | None
    tables: tuple | None


class _HostArrays:
    """numpy arrays of the evaluation's precision: uploads are conversions, made once per name."""

    xp = np

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self._uploaded = {}

    def upload(self, name: str, host: np.ndarray) -> np.ndarray:
        """``host`` in the evaluation's precision, C-contiguous (converted once per name)."""
        if name not in self._uploaded:
            self._uploaded[name] = np.ascontiguousarray(host, dtype=self.dtype)
        return self._uploaded[name]

    @staticmethod
    def to_host(values: np.ndarray, out: np.ndarray) -> None:
        """Copy values into out (nothing when the values were computed in place)."""
        if values is not out:
            out[...] = values


class CPUPointKernels(_HostArrays):
    """AO values of blocks of points on the CPU (module docstring)."""

    def __init__(self, prepared: CPUPrepared, geometry: Geometry, dtype, threshold: float):
        super().__init__(dtype)
        self.prepared, self.geometry, self.threshold = prepared, geometry, threshold

    def evaluate(self, block: Block) -> np.ndarray:
        """AO values, AO-major (nao, block.count); a transposed view for the general kernel."""
        p = self.prepared
        if p.plan is not None:  # whole rows (ix, iy) of a rectilinear lattice
            nz = self.geometry.lattice.shape[2]
            return ao_rows(p.plan, p.basis, p.tables, block.start // nz, block.count // nz, self.dtype, self.threshold)
        return eval_ao(self.geometry.coordinates(block), p.basis, dtype=self.dtype).T


class CPUSeparableKernels(_HostArrays):
    """The B table of one orbital on the CPU (numba :func:`hartree.grid.separable.build_b`)."""

    def __init__(self, plan: SeparablePlan, tables: tuple, weight: np.ndarray, geometry: Geometry, dtype):
        super().__init__(dtype)
        self.geometry = geometry
        xtab, ytab = tables[:2]
        self.xtab = xtab
        self.ytab_t = np.ascontiguousarray(ytab.transpose(2, 0, 1))  # (ny, ng, lmax+1): one row per y
        self.entries = (plan.entry_term, plan.term_group[plan.entry_term], plan.entry_i, plan.entry_j, weight)
        self.nterm = plan.nterm

    def build_b(self, plane: int, planes: int, b: np.ndarray) -> None:
        slab = b.reshape(planes, self.geometry.lattice.shape[1], self.nterm)
        slab[...] = 0.0
        build_b(self.xtab, self.ytab_t, plane, *self.entries, slab)

    @staticmethod
    def staging(out: np.ndarray) -> np.ndarray:
        """The host output itself: the GEMM writes the slab's values in place."""
        return out


class CPUGrid:
    """The CPU device of the lattice methods (see :class:`hartree.grid.device.GridDevice`).

    threshold: screening threshold of the basis functions (a.u.), any precision.
    """

    methods = ("ao", "separable")
    fused_max_orbitals = 0
    workers = 1
    slab_points = None

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        self.threshold = threshold

    @staticmethod
    def value_dtype(dtype) -> np.dtype:
        return np.dtype(dtype)

    @staticmethod
    def prefers_separable(basis, dtype) -> bool:
        """Always: on a CPU the separable expansion beats AO values + GEMM on any rectilinear lattice."""
        return True

    def prepare(self, basis, geometry: Geometry, dtype) -> CPUPrepared:
        prepared = prepare_basis(basis, self.threshold)
        if not geometry.rectilinear:
            return CPUPrepared(prepared, None, None)
        plan = make_plan(basis)
        return CPUPrepared(prepared, plan, lattice_tables(plan, geometry.lattice))

    @staticmethod
    def block_layout(geometry: Geometry) -> tuple[str, int]:
        return ("row", 1) if geometry.rectilinear else ("point", 1)

    @staticmethod
    def block_points(prepared, dtype, rows) -> int:
        return POINT_BLOCK

    def point_kernels(self, worker, prepared, geometry, dtype, coeff=None) -> CPUPointKernels:
        if coeff is not None:
            raise ValueError("the CPU has no fused orbital kernel")
        return CPUPointKernels(prepared, geometry, dtype, self.threshold)

    @staticmethod
    def separable_planes(nterm, shape, dtype) -> int:
        return planes_per_slab(nterm, shape, dtype, SEPARABLE_B_BYTES)

    @staticmethod
    def separable_kernels(worker, plan, tables, weight, geometry, dtype) -> CPUSeparableKernels:
        return CPUSeparableKernels(plan, tables, weight, geometry, dtype)

    def run(self, blocks, setup, work) -> None:
        """The blocks in order in this thread (worker None)."""
        state = setup(None)
        for block in blocks:
            work(state, block)
