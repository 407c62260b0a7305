"""AO values of a grid, in screened blocks, kept between the SCF cycles within a memory budget.

    cache = AOCache(basis, grid, deriv=1, radii=shell_radii(basis))   # once per SCF
    for blocks, arrays in cache.chunks():                              # every cycle
        ...   # arrays[j]: (ncomp, k_j, m_j) of block blocks[j] (ao_kernels' layout)

The grid and the geometry stay fixed during an SCF, so the values φ_μ(r_p) and gradients of
the basis functions are the same in every cycle; only the density changes.  The points are
split into compact blocks by recursive bisection (a k-d tree: the box of a set of points is
cut at the median of its longest side until at most ``block_points`` remain), and each block
keeps only the shells that reach it (:func:`hartree.dft.numint.shell_radii`: every value
and gradient of a dropped shell is below the threshold on the whole block).  The blocks'
values are computed once by the cache's kernels (:class:`hartree.dft.xc_integrate.XCKernels`:
numba's :func:`hartree.dft.ao_kernels.block_values` on the CPU, a CUDA kernel on the GPU, where
the values stay in device memory) and kept, in block order, as long as they fit in
``memory_budget`` bytes; the blocks past the budget are computed again in every evaluation, a
chunk of at most :data:`SCRATCH_BYTES` (the kernels' ``scratch_bytes``) at a time.

Budget on the CPU (:func:`default_budget`): the smaller of :data:`DEFAULT_BUDGET_BYTES` (2 GiB) and a
quarter of the memory available (:func:`hartree.resources.available_memory`); 0 keeps
nothing (every evaluation computes the values afresh, chunk by chunk).  The blocks and
their order depend only on the grid and the basis, never on the budget, so cached and
recomputed values are the same numbers.
"""

from __future__ import annotations

import numpy as np

from ..grid.cpu import prepare_basis
from .ao_kernels import ncomp
from .xc_kernels import BLOCK_POINTS, DEFAULT_BUDGET_BYTES, SCRATCH_BYTES, CPUKernels, default_budget

__all__ = ["AOCache", "BLOCK_POINTS", "DEFAULT_BUDGET_BYTES", "SCRATCH_BYTES", "default_budget", "spatial_blocks"]


def spatial_blocks(coords: np.ndarray, block_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Compact blocks of points by recursive bisection.

    coords float64 (n, 3) bohr.  Returns (order (n,) int64, starts (nblock + 1,) int64): block
    b holds the points order[starts[b]:starts[b+1]], between block_points/2 and
    block_points of them (fewer only when n is smaller).  Deterministic.
    """
    n = coords.shape[0]
    block_points = max(int(block_points), 1)
    pieces = []
    stack = [np.arange(n, dtype=np.int64)]
    while stack:
        idx = stack.pop()
        if idx.size <= block_points:
            if idx.size:
                pieces.append(idx)
            continue
        pts = coords[idx]
        axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
        half = idx.size // 2
        part = np.argpartition(pts[:, axis], half, kind="introselect")
        stack.append(idx[part[half:]])  # popped second: the lower half comes first
        stack.append(idx[part[:half]])
    order = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum([p.size for p in pieces])]).astype(np.int64)
    return order, starts


class AOCache:
    """Screened blocks of a grid with their AO values, cached within a memory budget.

    basis: the :class:`hartree.basis.Basis`; grid: a :class:`hartree.dft.Grid`; deriv 0
    (values), 1 (values and gradients) or 2 (and second derivatives: the XC gradient's,
    :mod:`hartree.dft.xc_grad_integrate`); radii (nshell,) bohr: the screening radius of each
    shell (:func:`hartree.dft.numint.shell_radii` of the same deriv); memory_budget: bytes
    of values kept (None: the kernels' default, on the CPU :func:`default_budget`; 0:
    none); block_points: points per block (0: the kernels'); scratch_bytes: values computed
    at once for the blocks past the budget (None: the kernels'); kernels: the
    :class:`hartree.dft.xc_integrate.XCKernels` that compute the values and whose array
    module holds them (None: :class:`hartree.dft.xc_kernels.CPUKernels`).

    Attributes (arrays read-only by convention; host numpy unless said otherwise):
      coords (n, 3)                the grid's points in block order
      weights (n,)                 their weights, in the kernels' array module
      order (n,)                   grid index of each point in block order
      starts (nblock + 1,)         block b is points starts[b]:starts[b+1]
      shells, shell_start          block b's shells are shells[shell_start[b]:shell_start[b+1]]
      ao_index                     list of (k_b,) AO indices of block b (its functions, in order)
      flat_index                   [b]: flat indices of block b's sub-matrix of (nao, nao), or None
      ncached                      the first ncached blocks are kept; cached_bytes their size
      notes                        sentences for SCFResult.notes (a budget cut by the device)
    """

    def __init__(
        self,
        basis,
        grid,
        deriv: int,
        radii: np.ndarray,
        memory_budget: int | None = None,
        block_points: int = 0,
        scratch_bytes: int | None = None,
        kernels=None,
    ):
        if deriv not in (0, 1, 2):
            raise ValueError(f"AOCache holds values (deriv 0), gradients (1) or second derivatives (2), not {deriv!r}")
        if kernels is None:
            kernels = CPUKernels()
        self.kernels = kernels
        xp = kernels.xp
        self.basis, self.grid = basis, grid
        self.deriv = int(deriv)
        self.scratch_bytes = int(kernels.scratch_bytes if scratch_bytes is None else scratch_bytes)
        self.ncomp = ncomp(deriv)
        self.nao = int(basis.nao)
        self.notes = []
        self.prepared = prepare_basis(basis)
        block_points = kernels.block_points if block_points <= 0 else int(block_points)
        coords = np.asarray(grid.coords, dtype=np.float64)
        self.order, self.starts = spatial_blocks(coords, block_points)
        self.coords = np.ascontiguousarray(coords[self.order])
        self.weights = xp.asarray(np.ascontiguousarray(np.asarray(grid.weights, dtype=np.float64)[self.order]))
        self.npoints = int(self.coords.shape[0])
        self.nblock = int(self.starts.size - 1)
        self._screen(basis, np.asarray(radii, dtype=np.float64))
        sizes = self.ncomp * np.array([i.size for i in self.ao_index], dtype=np.int64) * np.diff(self.starts)
        self.block_bytes = 8 * sizes
        kernels.prepare(self)
        budget = kernels.default_budget(basis) if memory_budget is None else max(int(memory_budget), 0)
        self._cached = None
        self._keep(budget)

    def _keep(self, budget: int) -> None:
        """Compute and keep the blocks that fit ``budget`` bytes; when the device runs out
        of memory on the way, keep half as many (recomputing the rest), and say so."""
        from ..device.memory import is_out_of_memory

        within = np.cumsum(self.block_bytes) <= budget
        ncached = int(np.argmin(within)) if not within.all() else self.nblock
        while True:
            self.ncached = ncached
            self.cached_bytes = int(self.block_bytes[:ncached].sum())
            if not ncached:
                return
            try:
                self._cached = self.kernels.block_values(self, 0, ncached)
                return
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                free = getattr(self.kernels, "free_cached", None)
                if free is not None:
                    free()
                ncached //= 2
                self.notes.append(
                    f"out of device memory keeping the grid's AO values: {ncached} of {self.nblock} blocks kept, "
                    "the rest recomputed in every cycle"
                )

    def _screen(self, basis, radii):
        """Per block, the shells whose radius reaches its nearest point (by unique centre)."""
        centres, centre_of = np.unique(np.asarray(basis.shell_center, dtype=np.float64), axis=0, return_inverse=True)
        centre_of = np.asarray(centre_of).reshape(-1)
        ao_loc = np.asarray(basis.ao_loc)
        ao_shell = np.repeat(np.arange(basis.nshell), np.diff(ao_loc))  # shell of each AO
        # nearest approach of each block to each centre, (nblock, ncentre)
        nearest = np.empty((self.nblock, centres.shape[0]))
        for c, centre in enumerate(centres):
            d2 = ((self.coords - centre) ** 2).sum(axis=1)
            nearest[:, c] = np.sqrt(np.minimum.reduceat(d2, self.starts[:-1])) if self.nblock else 0.0
        reach = nearest[:, centre_of] <= radii  # (nblock, nshell)
        self.shells = np.flatnonzero(reach.ravel()) % max(basis.nshell, 1)
        self.shell_start = np.concatenate([[0], np.cumsum(reach.sum(axis=1))]).astype(np.int64)
        self.ao_index = [np.flatnonzero(row[ao_shell]) for row in reach]  # shells in increasing order
        # flat_index[b]: flat indices into (nao, nao) of block b's (k, k) sub-matrix (int64, in
        # the kernels' array module), None when the block holds every function (then the whole
        # matrix is used as it is).  Kept on the host; a device keeps the (k,) AO indices and
        # forms them when asked (k² indices per block would take as much memory as a fifth of
        # the values).
        nao = self.nao
        if self.kernels.xp is np:
            self.flat_index = [None if i.size == nao else (i[:, None] * nao + i).ravel() for i in self.ao_index]
        else:
            xp = self.kernels.xp
            self.flat_index = _FlatIndex([None if i.size == nao else xp.asarray(i) for i in self.ao_index], nao)

    def _arrays(self, b0: int, b1: int, data):
        buffer, offsets = data
        return [
            buffer[offsets[j] : offsets[j + 1]].reshape(
                self.ncomp, self.ao_index[b].size, self.starts[b + 1] - self.starts[b]
            )
            for j, b in enumerate(range(b0, b1))
        ]

    def chunks(self):
        """Yield (range of blocks, list of their (ncomp, k, m) arrays): the cached blocks as
        one chunk, then the rest in chunks of at most scratch_bytes (values computed now)."""
        if self.ncached:
            yield range(0, self.ncached), self._arrays(0, self.ncached, self._cached)
        b0 = self.ncached
        while b0 < self.nblock:
            b1, size = b0 + 1, self.block_bytes[b0]
            while b1 < self.nblock and size + self.block_bytes[b1] <= self.scratch_bytes:
                size += self.block_bytes[b1]
                b1 += 1
            yield range(b0, b1), self._arrays(b0, b1, self.kernels.block_values(self, b0, b1))
            b0 = b1


class _FlatIndex:
    """flat_index of a device cache: item b is (i[:, None] * nao + i).ravel() of the block's
    AO indices i (on the device), formed when asked; None for a block of every function."""

    def __init__(self, indices, nao: int):
        self.indices, self.nao = indices, int(nao)

    def __getitem__(self, b: int):
        i = self.indices[b]
        return None if i is None else (i[:, None] * self.nao + i).ravel()

    def __len__(self):
        return len(self.indices)
