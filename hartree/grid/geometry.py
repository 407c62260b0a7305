"""Where values are wanted: a lattice or a point list, and its cutting into blocks of points.

    geometry = Geometry.of(where)                     # a Lattice or an (n, 3) array, bohr
    blocks = geometry.blocks(4096, unit="row")        # [Block(start, count, plane, planes)]

Every evaluation path (:mod:`hartree.grid.evaluate`) works block by block: a block is a run
of points in C order (the order of the output array), so its values are the columns
``start:start + count`` of the result.  Devices differ only in the size and the unit of the
blocks (:class:`hartree.grid.device.GridDevice`): whole x planes of a lattice (the GPU
kernels tile planes; the separable expansion works on planes on every device), whole
(x, y) rows of a rectilinear lattice (the CPU's exp-free row kernel), or runs of points
(point lists, tilted lattices on the CPU; on the GPU aligned to its tile of points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from .lattice import Lattice


class Block(NamedTuple):
    """Points start..start+count-1 (C order).  plane: first x plane when the block is whole
    x planes of a lattice (``planes`` of them), else None (and planes 0)."""

    start: int
    count: int
    plane: int | None
    planes: int


@dataclass(frozen=True, eq=False)
class Geometry:
    """A Lattice, or points (npoints, 3) float64 in bohr; ``shape`` of the values per
    quantity: lattice.shape, or (npoints,)."""

    lattice: Lattice | None
    points: np.ndarray | None
    npoints: int
    shape: tuple

    @classmethod
    def of(cls, where: Lattice | np.ndarray | Geometry) -> Geometry:
        """Geometry of a Lattice or of an (n, 3) array of points (bohr), or ``where`` itself
        when it is one; InputError for other shapes."""
        if isinstance(where, Geometry):
            return where
        if isinstance(where, Lattice):
            return cls(where, None, where.npoints, where.shape)
        points = np.ascontiguousarray(where, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3:
            raise InputError(f"points must have shape (n, 3), got {points.shape}")
        return cls(None, points, points.shape[0], (points.shape[0],))

    @property
    def rectilinear(self) -> bool:
        """True for a lattice whose steps lie along x, y and z (the separable expansion applies)."""
        return self.lattice is not None and self.lattice.is_rectilinear

    def coordinates(self, block: Block) -> np.ndarray:
        """Points of a block, float64 (count, 3), bohr."""
        if self.lattice is not None:
            return self.lattice.points(block.start, block.start + block.count)
        return self.points[block.start : block.start + block.count]

    def blocks(self, max_points: int, pieces: int = 1, unit: str = "point", align: int = 1) -> list[Block]:
        """The points cut into blocks of at most ``max_points`` (at least one unit each).

        unit: "plane" (whole x planes of a lattice, Block.plane set), "row" (whole (x, y)
        rows of a lattice) or "point" (runs of points; their length a multiple of
        ``align`` points, at least ``align``).  pieces: cut into at least this many blocks
        where the points allow (several workers share the blocks).
        """
        if unit in ("plane", "row"):
            n0, n1, n2 = self.lattice.shape
            size = n1 * n2 if unit == "plane" else n2  # points per unit
            nunit = self.npoints // size
            per = max(1, min(nunit, max_points // size, -(-nunit // pieces)))
            out = []
            for u in range(0, nunit, per):
                k = min(per, nunit - u)
                out.append(Block(u * size, k * size, u, k) if unit == "plane" else Block(u * size, k * size, None, 0))
            return out
        if unit != "point":
            raise ValueError(f"unit must be 'plane', 'row' or 'point', not {unit!r}")
        size = max(align, (min(max_points, -(-self.npoints // pieces)) // align) * align)
        return [Block(p, min(size, self.npoints - p), None, 0) for p in range(0, self.npoints, size)]
