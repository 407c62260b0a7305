"""What the lattice methods ask of the machine they run on: the :class:`GridDevice` contract.

The methods (:mod:`hartree.grid.evaluate`: the choice of method, the blocks, the GEMM with
the orbital coefficients, the density rho = sum_i n_i psi_i^2, the separable contraction
psi = B Z and the assembly of the output) are written once over an array module ``xp``
(numpy or cupy).  A device supplies only what differs:

* the kernels: basis-function values of a block of points (CPU: the numba kernels of
  :mod:`hartree.grid.cpu` and :func:`hartree.grid.separable.ao_rows`; GPU: the generated
  ``orb_screen`` + ``orb_ao`` of :mod:`hartree.grid.gpu_codegen`), the fused orbital kernel
  (GPU only, ``orb_mo``), and the B table of the separable expansion (CPU: the numba
  ``_build_b``; GPU: the ``sep_b`` kernel of :mod:`hartree.grid.gpu_separable`);
* the sizes and units of the blocks, and the memory budget of B;
* the workers (CPU: one, with numba threads inside the kernels; GPU: one host thread per
  device pulling blocks from :mod:`hartree.device.work_queue`);
* its policy: screening threshold, which methods it has, when "auto" takes the separable
  expansion.

Implementations: :class:`hartree.grid.cpu_device.CPUGrid` and
:class:`hartree.grid.gpu.GPUGrid` (cupy, or numpy with the emulated kernels).  Arrays
named "host" are numpy; the others are arrays of the worker's ``xp``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from .geometry import Block, Geometry
from .separable import SeparablePlan

__all__ = ["GridDevice", "PointKernels", "SeparableKernels"]


class PointKernels(Protocol):
    """One worker's kernels for one evaluation on blocks of points: basis-function values,
    or (fused kernel) the values of a few orbitals."""

    xp: ModuleType

    def evaluate(self, block: Block) -> Any:
        """(rows, block.count) values at the block's points: AO values, AO-major (nao rows),
        or the orbitals of the fused kernel (norb rows); in the evaluation's precision."""

    def upload(self, name: str, host: np.ndarray) -> Any:
        """This worker's copy of a host array in the evaluation's precision (C-contiguous),
        made once per ``name``."""

    def to_host(self, values: Any, out: np.ndarray) -> None:
        """Copy ``values`` into the host array ``out`` (a block of a larger array)."""


class SeparableKernels(Protocol):
    """One worker's kernel for one orbital by the separable expansion: the table
    B_t(x_a, y_b) = sum_e w_e X_(g_e, i_e)(x_a) Y_(g_e, j_e)(y_b) of a slab of x planes."""

    xp: ModuleType

    def build_b(self, plane: int, planes: int, b: Any) -> None:
        """Fill b, (planes * ny * nterm,) flat = (planes, ny, nterm) in C order, with B of the
        x planes plane..plane+planes-1 (every element written)."""

    def upload(self, name: str, host: np.ndarray) -> Any:
        """As :meth:`PointKernels.upload`."""

    def staging(self, out: np.ndarray) -> Any | None:
        """Where the slab's values are computed before :meth:`to_host`: ``out`` itself
        (host memory, values written in place) or None (a new array of ``xp``)."""

    def to_host(self, values: Any, out: np.ndarray) -> None:
        """As :meth:`PointKernels.to_host` (nothing when ``values`` is ``out``)."""


class GridDevice(Protocol):
    """The device side of the lattice methods (module docstring)."""

    #: methods this device has, of "ao", "separable", "direct" (the fused orbital kernel)
    methods: tuple[str, ...]
    #: most orbitals of one fused-kernel launch (0: no fused kernel)
    fused_max_orbitals: int
    #: number of workers that share the blocks (GPUs; 1 on the CPU)
    workers: int
    #: most points per block, when the user set it (None: the device's own sizes)
    slab_points: int | None

    def value_dtype(self, dtype: Any) -> np.dtype:
        """The precision of the values for a requested dtype (float64 or float32)."""

    def prefers_separable(self, basis: Any, dtype: np.dtype) -> bool:
        """Whether method "auto" takes the separable expansion on a rectilinear lattice."""

    def prepare(self, basis: Any, geometry: Geometry, dtype: np.dtype) -> Any:
        """Host data shared by the workers' point kernels (flattened basis, tables, kernel
        flavour)."""

    def block_layout(self, geometry: Geometry) -> tuple[str, int]:
        """(unit, align) of the point kernels' blocks (see :meth:`Geometry.blocks`)."""

    def block_points(self, prepared: Any, dtype: np.dtype, rows: int) -> int:
        """Most points per block when each point holds ``rows`` values (AO or orbital values)."""

    def point_kernels(
        self, worker: Any, prepared: Any, geometry: Geometry, dtype: np.dtype, coeff: np.ndarray | None = None
    ) -> PointKernels:
        """A worker's point kernels: AO values (coeff None) or the fused orbitals of host
        coefficients coeff (nao, norb <= fused_max_orbitals)."""

    def separable_planes(self, nterm: int, shape: tuple, dtype: np.dtype) -> int:
        """x planes per slab of the separable expansion (B of planes x ny x nterm fits the budget)."""

    def separable_kernels(
        self, worker: Any, plan: SeparablePlan, tables: tuple, weight: np.ndarray, geometry: Geometry, dtype: np.dtype
    ) -> SeparableKernels:
        """A worker's B kernel for one orbital: host tables of
        :func:`hartree.grid.separable.lattice_tables` and entry weights (nentry,) float64."""

    def run(self, blocks: list[Block], setup: Callable[[Any], Any], work: Callable[[Any, Block], None]) -> None:
        """Call work(state, block) for every block, spread over the workers; state =
        setup(worker) is made once per worker."""
