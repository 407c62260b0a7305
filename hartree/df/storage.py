"""Where the fitted 3-index tensor B of :mod:`hartree.df.jk` lives (issue 19): the placement,
chosen before any integral is computed, and the tensor itself, rows of Q in two parts.

B is (naux, ncol) float64 (ncol = kept pairs + the zero column, :mod:`hartree.df.pairs`),
8 ncol bytes a row Q.  Given the memory B may take where the engine's arrays live (``xp``:
GPU memory for cupy, host memory for numpy) and in host memory beside it, :func:`place`
chooses, in this order:

* stored: every row in ``xp`` memory (B fits in the device budget);
* split: as many rows as the device budget holds in ``xp`` memory, the rest in (pinned) host
  memory, when those fit in the host budget;
* host: the same with no row on the device (the device budget holds less than one row);
* direct: B is not kept; (mn|P) is computed again in every J/K build (host memory short too).

The host part of a GPU engine is page-locked (pinned) memory, so that its blocks of rows go
to the device by DMA at the bus's speed while the device works: :meth:`FittedTensor.chunks`
hands out the device part, then the host part streamed in blocks of rows through two device
buffers on a second CUDA stream (double buffering: the copy of block i + 1 overlaps the
GEMMs of block i; events order the copy after the GEMMs that last read its buffer).  For a
numpy engine the host part is plain numpy, handed out block by block as it is (no transfer),
so every placement runs, and is tested, on the CPU with the same blocks and arithmetic (a
host budget given explicitly: by default a numpy engine has none, its host memory being the
device's).

B is built once: the raw (mn|P) rows, aux-shell block by aux-shell block, go to the part that
holds them (:meth:`FittedTensor.put_rows`); then B = M (mn|P) is applied column block by
column block (:meth:`FittedTensor.left_multiply`), the host part's columns gathered onto the
device and scattered back by strided copies (cudaMemcpy2DAsync), since M mixes every row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from hartree.resources import available_memory, size_text

__all__ = ["FittedTensor", "Placement", "default_host_budget", "place"]

#: the placements, best first
STORAGES = ("stored", "split", "host", "direct")


@dataclass(frozen=True)
class Placement:
    """Where the rows of B (naux, ncol) go: the first ``device_rows`` in ``xp`` memory, the
    next ``host_rows`` in host memory (0 and 0 for direct); the budgets it was chosen with,
    bytes."""

    storage: str
    naux: int
    ncol: int
    device_rows: int
    host_rows: int
    device_budget: int
    host_budget: int

    @property
    def row_bytes(self) -> int:
        """Bytes of one row Q of B: 8 ncol."""
        return 8 * self.ncol

    @property
    def tensor_bytes(self) -> int:
        """Bytes of the whole of B: 8 naux ncol."""
        return self.naux * self.row_bytes

    @property
    def device_bytes(self) -> int:
        """Bytes of B kept in ``xp`` memory."""
        return self.device_rows * self.row_bytes

    @property
    def host_bytes(self) -> int:
        """Bytes of B kept in host memory (streamed in every build)."""
        return self.host_rows * self.row_bytes


def place(naux: int, ncol: int, device_budget: int, host_budget: int) -> Placement:
    """The placement of B (naux, ncol) float64 (module docstring) for the bytes it may take
    in ``xp`` memory (device_budget) and in host memory (host_budget)."""
    naux, ncol = int(naux), int(ncol)
    device_budget, host_budget = max(int(device_budget), 0), max(int(host_budget), 0)
    row = 8 * ncol
    rows = min(naux, device_budget // row)
    rest = naux - rows
    if rest == 0:
        storage = "stored"
    elif rest * row <= host_budget:
        storage = "split" if rows else "host"
    else:
        storage, rows, rest = "direct", 0, 0
    return Placement(storage, naux, ncol, rows, rest, device_budget, host_budget)


def default_host_budget(xp: ModuleType) -> int:
    """Bytes of host memory B may take beside a device: half of what is available
    (:func:`hartree.resources.available_memory`; 0 when unknown) for a GPU engine, 0 for a
    numpy one (its device memory is the host's: the stored placement's budget covers it)."""
    if xp is np:
        return 0
    have = available_memory()
    return 0 if have is None else int(have) // 2


def _pinned_empty(xp: ModuleType, shape: tuple[int, int]) -> np.ndarray:
    """float64 numpy array in page-locked host memory of its own (cudaHostAlloc, portable: pinned
    for every device's context; freed with the array, not kept by cupy's pinned-memory pool)."""
    nbytes = 8 * shape[0] * shape[1]
    mem = xp.cuda.PinnedMemory(nbytes, xp.cuda.runtime.hostAllocPortable)
    return np.ndarray(shape, dtype=np.float64, buffer=xp.cuda.PinnedMemoryPointer(mem, 0))


class FittedTensor:
    """B (naux, ncol) float64 as a :class:`Placement` puts it: ``device`` (device_rows, ncol)
    in ``xp`` (None without device rows) and ``host`` (host_rows, ncol) numpy, page-locked
    when ``xp`` is cupy (None without host rows).  Allocated at construction (nothing
    computed): a pinned allocation that fails raises MemoryError before any integral work.

    block_bytes: the size of one streamed block of host rows (at least one row); two such
    buffers are taken in ``xp`` memory while the host part is streamed.
    """

    def __init__(self, xp: ModuleType, placement: Placement, block_bytes: int) -> None:
        if placement.storage == "direct":
            raise ValueError("a direct placement keeps no tensor")
        self.xp, self.placement = xp, placement
        self.nd, self.nh, self.ncol = placement.device_rows, placement.host_rows, placement.ncol
        self.stream_rows = max(1, int(block_bytes) // placement.row_bytes)
        self.device = xp.empty((self.nd, self.ncol)) if self.nd else None
        self.host = None
        if self.nh:
            shape = (self.nh, self.ncol)
            if xp is np:
                self.host = np.empty(shape)
            else:
                try:
                    self.host = _pinned_empty(xp, shape)
                except (MemoryError, RuntimeError) as exc:  # cupy's CUDARuntimeError is a RuntimeError
                    raise MemoryError(
                        f"{size_text(8 * shape[0] * shape[1])} of pinned host memory could not be allocated ({exc})"
                    ) from None

    @property
    def naux(self) -> int:
        return self.nd + self.nh

    # ------------------------------------------------------------------ building
    def put_rows(self, q0: int, rows: Any) -> None:
        """Rows q0 .. q0 + n of B (n, ncol) in ``xp`` (any strides) to the part(s) that hold
        them; host rows are copied before this returns."""
        n = int(rows.shape[0])
        on_device = min(max(self.nd - q0, 0), n)
        if on_device:
            self.device[q0 : q0 + on_device] = rows[:on_device]
        if on_device < n:
            h0 = q0 + on_device - self.nd
            dst = self.host[h0 : h0 + n - on_device]
            if self.xp is np:
                dst[...] = rows[on_device:]
            else:
                rows[on_device:].get(out=dst)  # device-contiguous copy first where needed; blocking

    def zero_column(self, col: int) -> None:
        """Column ``col`` of every row set to 0."""
        for part in (self.device, self.host):
            if part is not None:
                part[:, col] = 0.0

    def left_multiply(self, m: Any, block_bytes: int) -> None:
        """B <- m B in place, m (naux, naux) in ``xp``, over blocks of columns of about
        block_bytes (all naux rows of a block on the device: the host part's columns are
        gathered there and scattered back)."""
        xp, nd, naux = self.xp, self.nd, self.naux
        step = max(1, int(block_bytes) // (8 * naux))
        for c0 in range(0, self.ncol, step):
            c1 = min(self.ncol, c0 + step)
            if self.nh == 0:
                self.device[:, c0:c1] = m @ self.device[:, c0:c1]
                continue
            x = xp.empty((naux, c1 - c0))
            if nd:
                x[:nd] = self.device[:, c0:c1]
            self._host_columns(c0, c1, x[nd:], to_host=False)
            y = xp.ascontiguousarray(m @ x)  # (already so: the strided copy needs it)
            if nd:
                self.device[:, c0:c1] = y[:nd]
            self._host_columns(c0, c1, y[nd:], to_host=True)
        if self.nh and xp is not np:
            xp.cuda.get_current_stream().synchronize()  # the host part complete before it is streamed

    def _host_columns(self, c0: int, c1: int, buf: Any, to_host: bool) -> None:
        """Columns c0 .. c1 of the host part to or from ``buf`` (host_rows, c1 - c0),
        C-contiguous in ``xp``; on a GPU one strided copy (cudaMemcpy2DAsync, rows of
        8 (c1 - c0) bytes, pitches 8 ncol on the host and 8 (c1 - c0) on the device) on the
        current stream."""
        if self.xp is np:
            if to_host:
                self.host[:, c0:c1] = buf
            else:
                buf[...] = self.host[:, c0:c1]
            return
        rt = self.xp.cuda.runtime
        width, pitch = 8 * (c1 - c0), 8 * self.ncol
        host_ptr = int(self.host.ctypes.data) + 8 * c0
        stream = self.xp.cuda.get_current_stream().ptr
        if to_host:
            rt.memcpy2DAsync(host_ptr, pitch, buf.data.ptr, width, width, self.nh, rt.memcpyDeviceToHost, stream)
        else:
            rt.memcpy2DAsync(buf.data.ptr, width, host_ptr, pitch, width, self.nh, rt.memcpyHostToDevice, stream)

    # ------------------------------------------------------------------ reading
    def chunks(self) -> Iterator[Any]:
        """The rows of B in order, as ``xp`` arrays (rows, ncol): the device part whole, then
        the host part block by block (module docstring).  A yielded block of the host part
        is valid until the next one is asked for: the caller enqueues its work on it (on the
        current stream) before it asks again."""
        if self.host is not None and self.xp is not np:
            yield from self._streamed()
            return
        if self.device is not None:
            yield self.device
        if self.host is not None:
            for r0 in range(0, self.nh, self.stream_rows):
                yield self.host[r0 : r0 + self.stream_rows]

    def _streamed(self) -> Iterator[Any]:
        """The device part, then the host part through two device buffers: block i + 1 is
        copied on a second (non-blocking) stream while the current stream works on block i
        (block 0 while it works on the device part); the copy into a buffer waits for the
        event recorded after the work on its previous block, the work on a block for the
        event recorded after its copy."""
        xp, step = self.xp, self.stream_rows
        starts = list(range(0, self.nh, step))
        compute = xp.cuda.get_current_stream()
        copy = xp.cuda.Stream(non_blocking=True)
        bufs = [xp.empty((min(step, self.nh), self.ncol)) for _ in range(min(2, len(starts)))]
        copied: list[Any] = [None, None]
        released: list[Any] = [None, None]
        # the buffers come from the current stream's memory pool, whose queued work may still
        # use that memory: the copy stream starts after it
        copy.wait_event(compute.record())

        def issue(i: int) -> None:
            slot, r0 = i % 2, starts[i]
            r1 = min(self.nh, r0 + step)
            if released[slot] is not None:
                copy.wait_event(released[slot])  # the work on block i - 2 is done with this buffer
            bufs[slot][: r1 - r0].set(self.host[r0:r1], stream=copy)  # pinned -> device, async
            copied[slot] = copy.record()

        issue(0)
        if self.device is not None:
            yield self.device
        for i, r0 in enumerate(starts):
            slot = i % 2
            if i + 1 < len(starts):
                issue(i + 1)
            compute.wait_event(copied[slot])
            yield bufs[slot][: min(self.nh, r0 + step) - r0]
            released[slot] = compute.record()
        compute.synchronize()  # nothing left in flight on the copy stream, its events or the buffers
