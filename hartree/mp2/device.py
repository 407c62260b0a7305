"""What the RI-MP2 method asks of the machine it runs on: the :class:`MP2Device` contract.

The method (:mod:`hartree.mp2.rimp2`, :mod:`hartree.mp2.fitting`,
:mod:`hartree.mp2.pair_energy`, :mod:`hartree.mp2.mixed_precision`) is written once over
an array module ``xp`` (numpy or cupy).  A device supplies only what differs:

* the integrals: (P|Q) and the transformed three-index (ia|P) (CPU: the numba kernels of
  :mod:`hartree.integrals.three_center`; GPU: the generated kernels of
  :mod:`hartree.gpu.eri3c` and cuBLAS transforms);
* where (ia|P)/B lives (CPU: host memory or an HDF5 file; GPU: device memory or page-locked
  host memory) and the memory budgets that size the B row blocks, the occupied blocks of
  (ia|jb) and mgemm's tiles;
* whether precision="mixed" means the energy-calibrated INT8 Ozaki (ia|jb) of
  :mod:`hartree.mp2.mixed_precision` (GPU) or mgemm's own "mixed" policy (CPU: FP64);
* how the GEMM work is reported (:class:`GemmLog`).

Implementations: :class:`hartree.mp2.cpu_device.CPUDevice` and
:class:`hartree.mp2.gpu_device.GPUDevice` (cupy, or numpy with emulated kernels).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from hartree.linalg.mgemm import MGEMMInfo, mgemm

__all__ = ["MP2Device", "GemmLog", "gemm_nt", "sync"]


class GemmLog(Protocol):
    """Bookkeeping of the GEMM steps ("B", "(ia|jb)") and kernels of one RI-MP2 run; what
    lands in MP2Result.gemm, .precision and .timings.  ``prefix`` tags the calibration's
    calls (e.g. "calibration ")."""

    prefix: str

    def gemm(self, step: str, requested: str, info: MGEMMInfo, elements: int, seconds: float) -> None:
        """One mgemm call of ``step`` asked for ``requested`` (info: what ran; elements: of
        both operands; seconds: wall time of the call with its copies)."""

    def add(self, step: str, scheme: str, seconds: float) -> None:
        """One timed piece of work outside mgemm (Ozaki slicing and INT8 products, energy
        kernels) of ``step`` done by ``scheme``."""

    def records(self) -> list[dict]:
        """MP2Result.gemm: one dict per step (and scheme)."""

    def precision_label(self, requested: str) -> str:
        """MP2Result.precision for a run that asked for ``requested``."""

    def stage_timings(self) -> dict[str, float]:
        """Extra MP2Result.timings entries (seconds) derived from the log."""


class MP2Device(Protocol):
    """The device side of RI-MP2 (module docstring).  Array arguments and results are of
    ``xp``; stores are (rows, naux) arrays of ``xp``, numpy arrays or h5py datasets."""

    xp: ModuleType
    #: precision "mixed": B in FP64 and (ia|jb) by the energy-calibrated INT8 Ozaki split
    calibrated_mixed: bool

    def new_log(self) -> GemmLog: ...

    def prepare(self, timings: dict[str, float]) -> None:
        """Set-up before the first integral (e.g. kernel compilation, timed in ``timings``)."""

    def two_index(self) -> Any:
        """The Coulomb metric V = (P|Q) (naux, naux)."""

    def stores(self, rows: list[int], naux: int) -> AbstractContextManager[list]:
        """Context giving one (rows[s], naux) float64 store per spin for (ia|P), then B."""

    def three_index(self, spaces: list[tuple], stores: list) -> None:
        """Fill stores[s] (nocc_s nvir_s, naux) with (ia|P) of spin s; spaces as rimp2._spaces."""

    def b_rows(self, naux: int) -> int:
        """Rows of (ia|P) turned into B per GEMM (eq. 21)."""

    def gemm_budget(self, step: str) -> int | None:
        """mgemm's memory_budget (bytes) for ``step`` ("B" or "(ia|jb)"); None: no cleaving."""

    def pair_blocks(
        self, no1: int, nv1: int, no2: int, nv2: int, naux: int, calibrated: bool, same: bool
    ) -> tuple[int, int]:
        """(ni, nj): occupied block sizes of the (ia|jb) blocks (calibrated: by the INT8 Ozaki
        split; same: one spin, j <= i)."""

    def keep_j_slices(self, nslice: int, rows: int, naux: int) -> bool:
        """Whether the Ozaki slices of all ``rows`` rows of the j side fit to be reused."""

    def description(self) -> str:
        """MP2Result.device."""


def sync(xp: ModuleType) -> None:
    """Wait for the current CUDA stream (cupy); nothing for numpy."""
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def gemm_nt(a: Any, b: Any, precision: str, memory_budget: int | None) -> tuple[Any, MGEMMInfo]:
    """a (m, k) @ b (n, k)^T through :func:`hartree.linalg.mgemm` by ``precision``; returns
    (C (m, n) float64, MGEMMInfo).  memory_budget: bytes for mgemm's tiles (None: one tile)."""
    return mgemm(a, b, transb=True, precision=precision, return_info=True, memory_budget=memory_budget)
