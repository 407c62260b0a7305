"""RI-MP2 on the CPU: numba integrals, numpy GEMMs through mgemm, (ia|P) in memory or on disk.

The :class:`hartree.mp2.device.MP2Device` of the CPU.  Memory: (mu nu|P) is built in
aux-shell batches of at most ``memory_mb`` and transformed at once to (ia|P) (nocc nvir naux
floats per spin, in host memory or, with storage="disk", in a temporary HDF5 file), which
is turned into B in place, in row blocks of at most ``memory_mb``; (ia|jb) is formed for
blocks of occupied i and j so that one block stays within ``memory_mb``.  precision="mixed"
is mgemm's own policy (FP64 on the CPU: hartree.linalg.gemm_precision.choose_mixed).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import numpy as np

from hartree.integrals.three_center import int2c2e, mo_int3c2e
from hartree.linalg.mgemm import MGEMMInfo

from .options import MP2Options

__all__ = ["CPUDevice", "GemmCounterLog", "pair_block_sizes"]


class CPUDevice:
    """RI-MP2's device contract on the CPU for orbital basis ``basis`` and auxiliary basis
    ``aux`` (hartree.basis.Basis) under ``options``."""

    xp = np
    calibrated_mixed = False

    def __init__(self, basis, aux, options: MP2Options):
        self.basis, self.aux, self.options = basis, aux, options

    def new_log(self) -> GemmCounterLog:
        return GemmCounterLog()

    def prepare(self, timings: dict[str, float]) -> None:
        pass

    def two_index(self) -> np.ndarray:
        return int2c2e(self.aux)

    @contextlib.contextmanager
    def stores(self, rows: list[int], naux: int) -> Iterator[list]:
        """One (rows[s], naux) float64 store per spin: numpy arrays, or datasets of a
        temporary HDF5 file (chunked by row blocks) that is deleted on exit."""
        options = self.options
        if options.storage == "memory":
            yield [np.empty((r, naux)) for r in rows]
            return
        import h5py

        with tempfile.TemporaryDirectory(prefix="hartree-mp2-", dir=options.scratch_dir) as tmp:
            with h5py.File(os.path.join(tmp, "ia_P.h5"), "w") as f:
                yield [
                    f.create_dataset(
                        f"spin{s}",
                        shape=(r, naux),
                        dtype="f8",
                        chunks=(max(1, min(r, max(1, (1 << 20) // naux))), naux) if r else None,
                    )
                    for s, r in enumerate(rows)
                ]

    def three_index(self, spaces: list[tuple], stores: list) -> None:
        mo_int3c2e(self.basis, self.aux, [(co, cv) for co, cv, _, _ in spaces], self.options.memory_mb, out=stores)

    def b_rows(self, naux: int) -> int:
        """Rows of B per block: two (rows, naux) float64 blocks within ``memory_mb``."""
        return max(1, int(self.options.memory_mb * 1e6 / (8 * 2 * naux)))

    def gemm_budget(self, step: str) -> int | None:
        return self.options.gemm_memory_budget

    def pair_blocks(self, no1, nv1, no2, nv2, naux, calibrated, same) -> tuple[int, int]:
        return pair_block_sizes(no1, nv1, no2, nv2, self.options.memory_mb)

    def keep_j_slices(self, nslice: int, rows: int, naux: int) -> bool:
        return False

    def description(self) -> str:
        return f"cpu (numba + numpy; three-index tensors in {self.options.storage})"


def pair_block_sizes(no1: int, nv1: int, no2: int, nv2: int, memory_mb: float) -> tuple[int, int]:
    """(ni, nj): occupied block sizes so that one (ia|jb) block, ni nv1 nj nv2 floats, takes at
    most half of ``memory_mb`` (the rest: GEMM temporaries, B rows read from the store)."""
    elems = max(1, int(memory_mb * 1e6 / 8 / 2))
    if nv1 * no2 * nv2 <= elems:
        return max(1, elems // max(1, nv1 * no2 * nv2)), no2
    return 1, max(1, elems // max(1, nv1 * nv2))


class GemmCounterLog:
    """MP2Result.gemm on the CPU: per GEMM step, mgemm's counters summed over its calls
    (scheme that ran, calls, tiles, low-precision GEMMs, mgemm's own seconds, elements
    split off to FP64 by the heterogeneous scheme, operand elements).  Work outside mgemm
    is not recorded; the precision is reported as asked."""

    def __init__(self):
        self.steps = {}
        self.prefix = ""

    def gemm(self, step: str, requested: str, info: MGEMMInfo, elements: int, seconds: float) -> None:
        step = self.prefix + step
        rec = self.steps.setdefault(
            step,
            {
                "step": step,
                "precision": info.precision,
                "calls": 0,
                "tiles": 0,
                "low_precision_gemms": 0,
                "seconds": 0.0,
                "large_elements": 0,
                "elements": 0,
            },
        )
        rec["calls"] += 1
        rec["large_elements"] += sum(info.n_large)
        rec["elements"] += elements
        rec["tiles"] += info.tiles
        rec["low_precision_gemms"] += info.low_precision_gemms
        rec["seconds"] += info.wall_time

    def add(self, step: str, scheme: str, seconds: float) -> None:
        pass

    def records(self) -> list[dict]:
        return list(self.steps.values())

    def precision_label(self, requested: str) -> str:
        return requested

    def stage_timings(self) -> dict[str, float]:
        return {}
