"""3-D lattices of points: origin plus three step vectors and a shape (bohr).

A lattice point (i, j, k) sits at ``origin + i*axes[0] + j*axes[1] + k*axes[2]``
with 0 <= i < shape[0] etc., the layout of a Gaussian cube file: the first axis
is the slowest index, the last the fastest, so values of shape ``shape`` in C
order are exactly the cube's data order.

Constructors:

* :func:`lattice_around` -- a box around the molecule: bounding box of the nuclei
  plus ``margin`` on every side, cut into cubes of edge ``spacing`` (Angstrom or bohr).
* :func:`lattice_from_axes` -- given origin, step vectors and point counts.

Explicit point lists do not need a lattice: the evaluation functions take an
(npts, 3) array as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..constants import ANGSTROM_IN_BOHR
from ..errors import InputError

#: Largest lattice that can be described at all (points; int64 point indices stay exact
#: far beyond).  Whether a lattice fits the machine is checked where it is used, against
#: the memory and disk it needs (hartree.resources).
MAX_POINTS = 10**13

_UNITS = {"angstrom": ANGSTROM_IN_BOHR, "ang": ANGSTROM_IN_BOHR, "a": ANGSTROM_IN_BOHR, "bohr": 1.0, "au": 1.0}


@dataclass(frozen=True, eq=False)
class Lattice:
    """A parallelepiped lattice of points.

    origin  float64 (3,)    position of point (0, 0, 0), bohr
    axes    float64 (3, 3)  axes[d] = step vector along lattice direction d, bohr
    shape   tuple of 3 int  number of points along each direction
    """

    origin: np.ndarray
    axes: np.ndarray
    shape: tuple

    def __post_init__(self):
        origin = np.array(self.origin, dtype=np.float64).reshape(3)
        axes = np.array(self.axes, dtype=np.float64).reshape(3, 3)
        shape = tuple(int(n) for n in self.shape)
        if len(shape) != 3 or min(shape) < 1:
            raise InputError(f"a lattice needs three positive point counts, got {self.shape}")
        if not (np.all(np.isfinite(origin)) and np.all(np.isfinite(axes))):
            raise InputError("the lattice origin and axes must be finite numbers")
        norms = np.linalg.norm(axes, axis=1)
        if np.any(norms == 0) or abs(np.linalg.det(axes)) < 1e-10 * float(np.prod(norms)):
            raise InputError("the lattice axes are zero or linearly dependent")
        if math.prod(shape) > MAX_POINTS:
            raise InputError(
                f"a lattice of {shape[0]} x {shape[1]} x {shape[2]} points is "
                "beyond what any machine can store; use fewer points"
            )
        origin.flags.writeable = False
        axes.flags.writeable = False
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "shape", shape)

    @property
    def npoints(self) -> int:
        """Total number of points."""
        return math.prod(self.shape)

    def slab(self, start: int, stop: int) -> Lattice:
        """The sub-lattice of planes start..stop-1 along the first (slowest) axis."""
        return Lattice(
            origin=self.origin + start * self.axes[0], axes=self.axes, shape=(stop - start,) + tuple(self.shape[1:])
        )

    @property
    def is_rectilinear(self) -> bool:
        """True when every step vector lies along x, y, z in that order (diagonal ``axes``).

        Such lattices are products of three 1-D grids, which the fast separable
        evaluation in :mod:`hartree.grid.separable` uses.
        """
        return bool(np.all(self.axes[~np.eye(3, dtype=bool)] == 0.0) and np.all(np.diag(self.axes) > 0))

    @property
    def voxel_volume(self) -> float:
        """Volume of one lattice cell, bohr^3."""
        return float(abs(np.linalg.det(self.axes)))

    def coordinates_1d(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x, y, z) 1-D coordinate arrays (bohr) of a rectilinear lattice."""
        if not self.is_rectilinear:
            raise ValueError("coordinates_1d needs a rectilinear lattice")
        return tuple(self.origin[d] + self.axes[d, d] * np.arange(self.shape[d]) for d in range(3))

    def points(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Points start..stop-1 in C order (last index fastest), float64 (n, 3), bohr."""
        stop = self.npoints if stop is None else min(stop, self.npoints)
        flat = np.arange(start, stop, dtype=np.int64)
        i, rest = np.divmod(flat, self.shape[1] * self.shape[2])
        j, k = np.divmod(rest, self.shape[2])
        ijk = np.stack([i, j, k], axis=1).astype(np.float64)
        return self.origin + ijk @ self.axes


def _unit_factor(unit):
    try:
        return _UNITS[str(unit).lower()]
    except KeyError:
        raise InputError(f"unknown length unit {unit!r}; use 'angstrom' or 'bohr'") from None


def lattice_around(coords: np.ndarray, spacing: float, margin: float = 4.0, unit: str = "angstrom") -> Lattice:
    """Axis-aligned lattice covering the nuclei plus ``margin`` on every side.

    coords: (natm, 3) nuclear positions, bohr.  spacing, margin: lengths in
    ``unit`` ("angstrom" or "bohr").  The point count along each axis is
    ceil(extent / spacing) + 1, and the box is centred on the molecule, so the
    margin is at least the one asked for.  InputError (in the user's unit) for a
    spacing that is not a positive finite length, a negative or non-finite margin,
    or a lattice with more than MAX_POINTS points.
    """
    factor = _unit_factor(unit)
    name = "bohr" if factor == 1.0 else "Angstrom"
    given_spacing, given_margin = float(spacing), float(margin)
    if not (math.isfinite(given_spacing) and given_spacing > 0):
        raise InputError(f"the lattice spacing must be a positive length, got {spacing} {name}")
    if not (math.isfinite(given_margin) and given_margin >= 0):
        raise InputError(f"the lattice margin must be zero or a positive length, got {margin} {name}")
    spacing, margin = given_spacing * factor, given_margin * factor
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    low = coords.min(axis=0) - margin
    high = coords.max(axis=0) + margin
    extent = high - low
    estimate = [math.ceil(e / spacing - 1e-9) + 1 for e in extent.tolist()]
    if math.prod(estimate) > MAX_POINTS:
        raise InputError(
            f"a spacing of {given_spacing:g} {name} gives "
            f"{estimate[0]} x {estimate[1]} x {estimate[2]} = "
            f"{math.prod(estimate):.3g} lattice points, beyond what any machine "
            "can store; use a larger spacing"
        )
    counts = np.array(estimate, dtype=np.int64)
    centre = 0.5 * (low + high)
    origin = centre - 0.5 * (counts - 1) * spacing
    return Lattice(origin=origin, axes=np.eye(3) * spacing, shape=tuple(counts))


def lattice_from_axes(origin: np.ndarray, axes: np.ndarray, shape: tuple[int, int, int], unit: str = "bohr") -> Lattice:
    """Lattice from an origin (3,), step vectors (3, 3) in ``unit`` and point counts (3,)."""
    factor = _unit_factor(unit)
    return Lattice(
        origin=np.asarray(origin, dtype=float) * factor, axes=np.asarray(axes, dtype=float) * factor, shape=tuple(shape)
    )
