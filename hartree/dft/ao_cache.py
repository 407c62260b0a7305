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
values are computed once (:func:`hartree.dft.ao_kernels.block_values`) and kept, in block
order, as long as they fit in ``memory_budget`` bytes; the blocks past the budget are
computed again in every evaluation, a chunk of at most :data:`SCRATCH_BYTES` at a time.

Budget (:func:`default_budget`): the smaller of :data:`DEFAULT_BUDGET_BYTES` (2 GiB) and a
quarter of the memory available (:func:`hartree.resources.available_memory`); 0 keeps
nothing (every evaluation computes the values afresh, chunk by chunk).  The blocks and
their order depend only on the grid and the basis, never on the budget, so cached and
recomputed values are the same numbers.
"""

from __future__ import annotations

import numpy as np

from ..grid.cpu import prepare_basis
from ..resources import available_memory
from .ao_kernels import block_values

__all__ = ["AOCache", "DEFAULT_BUDGET_BYTES", "SCRATCH_BYTES", "default_budget", "spatial_blocks"]

#: Largest default memory budget of the cached AO values, bytes.
DEFAULT_BUDGET_BYTES = 2 * 1024**3
#: Fraction of the available memory the default budget may take.
BUDGET_FRACTION = 0.25
#: Values computed at once for the blocks past the budget, bytes (at least one block).
SCRATCH_BYTES = 64 * 1024**2
#: Default number of points per block.
BLOCK_POINTS = 512


def default_budget() -> int:
    """Bytes of AO values kept between SCF cycles: min(2 GiB, available memory / 4)."""
    have = available_memory()
    if have is None:
        return DEFAULT_BUDGET_BYTES
    return int(min(DEFAULT_BUDGET_BYTES, BUDGET_FRACTION * have))


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
    (values) or 1 (values and gradients); radii (nshell,) bohr: the screening radius of each
    shell (:func:`hartree.dft.numint.shell_radii` of the same deriv); memory_budget: bytes
    of values kept (None: :func:`default_budget`; 0: none); block_points: points per block;
    scratch_bytes: values computed at once for the blocks past the budget.

    Attributes (arrays read-only by convention):
      coords (n, 3), weights (n,)  the grid's points and weights in block order
      order (n,)                   grid index of each point in block order
      starts (nblock + 1,)         block b is points starts[b]:starts[b+1]
      shells, shell_start          block b's shells are shells[shell_start[b]:shell_start[b+1]]
      ao_index                     list of (k_b,) AO indices of block b (its functions, in order)
      ncached                      the first ncached blocks are kept; cached_bytes their size
    """

    def __init__(
        self,
        basis,
        grid,
        deriv: int,
        radii: np.ndarray,
        memory_budget: int | None = None,
        block_points: int = 0,
        scratch_bytes: int = SCRATCH_BYTES,
    ):
        if deriv not in (0, 1):
            raise ValueError(f"AOCache holds values (deriv 0) or gradients (deriv 1), not deriv {deriv!r}")
        self.basis, self.grid = basis, grid
        self.deriv = int(deriv)
        self.scratch_bytes = int(scratch_bytes)
        self.ncomp = 4 if deriv else 1
        self.nao = int(basis.nao)
        self.prepared = prepare_basis(basis)
        block_points = BLOCK_POINTS if block_points <= 0 else int(block_points)
        coords = np.asarray(grid.coords, dtype=np.float64)
        self.order, self.starts = spatial_blocks(coords, block_points)
        self.coords = np.ascontiguousarray(coords[self.order])
        self.weights = np.ascontiguousarray(np.asarray(grid.weights, dtype=np.float64)[self.order])
        self.npoints = int(self.coords.shape[0])
        self.nblock = int(self.starts.size - 1)
        self._screen(basis, np.asarray(radii, dtype=np.float64))
        sizes = self.ncomp * np.array([i.size for i in self.ao_index], dtype=np.int64) * np.diff(self.starts)
        self.block_bytes = 8 * sizes
        budget = default_budget() if memory_budget is None else max(int(memory_budget), 0)
        within = np.cumsum(self.block_bytes) <= budget
        self.ncached = int(np.argmin(within)) if not within.all() else self.nblock
        self.cached_bytes = int(self.block_bytes[: self.ncached].sum())
        self._cached = None
        if self.ncached:
            self._cached = self._compute(0, self.ncached)

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
        # flat indices into (nao, nao) of each block's (k, k) sub-matrix; None when the block
        # holds every function (then the whole matrix is used as it is)
        self.flat_index = [None if i.size == self.nao else (i[:, None] * self.nao + i).ravel() for i in self.ao_index]

    def _compute(self, b0: int, b1: int):
        """(buffer, offsets) of the values of blocks b0..b1-1 (points renumbered from b0's)."""
        p0 = self.starts[b0]
        s0, s1 = self.shell_start[b0], self.shell_start[b1]
        return block_values(
            self.prepared,
            self.coords[p0 : self.starts[b1]],
            self.starts[b0 : b1 + 1] - p0,
            self.shells[s0:s1],
            self.shell_start[b0 : b1 + 1] - s0,
            self.deriv,
        )

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
            yield range(b0, b1), self._arrays(b0, b1, self._compute(b0, b1))
            b0 = b1
