"""Atom-centred molecular integration grids for the exchange-correlation energy.

    grid = make_grid(molecule, level=3)          # Grid: coords (n, 3) bohr, weights (n,) bohr^3
    n_electrons = grid.weights @ rho(grid.coords)

A molecular integral is split into atomic ones by a partition of unity, each atomic one is
done on spheres around the atom (Becke, J. Chem. Phys. 88, 2547 (1988), eqs. 3-5):

    ∫ F(r) d³r = Σ_A ∫ w_A(r) F(r) d³r ≈ Σ_A Σ_i Σ_k w_A(r_ik) W_i Ω_k F(R_A + r_i s_k),

with radial nodes r_i and weights W_i (which include r²), Lebedev directions s_k and
weights Ω_k on the unit sphere (sum 4π), and the cell function w_A of the partition.

* Radial: Treutler-Ahlrichs M4 (J. Chem. Phys. 102, 346 (1995), eq. 19 with α = 0.6 and
  their ξ per element, on Chebyshev nodes of the second kind) or Mura-Knowles
  (J. Chem. Phys. 104, 9848 (1996), eq. 9 with m = 3: r = -α ln(1 - x³)).
* Angular: Lebedev-Laikov rules (Doklady Mathematics 59, 477 (1999)) from
  ``scipy.integrate.lebedev_rule`` (SciPy 1.15 or later).
* Partition: Becke's cell functions (eqs. 11, 13, 19-22) with the atomic size adjustment of
  his appendix (eqs. A2-A6), the radii being Bragg-Slater radii ("becke") or their square
  roots ("treutler", Treutler and Ahlrichs 1995, the default as in PySCF); or Stratmann,
  Scuseria and Frisch's polynomial (Chem. Phys. Lett. 257, 213 (1996), eq. 14, a = 0.64)
  in place of Becke's iterated polynomial.
* Pruning: fewer angular points near the nucleus and far out, by regions of r / R_Bragg with
  the boundaries of SG-1 (Gill, Johnson and Pople, Chem. Phys. Lett. 209, 506 (1993)), as
  NWChem does and PySCF's ``nwchem_prune`` (the default there too).
* Levels 1..9 are PySCF's ``grids.level`` 1..9 (:mod:`hartree.dft.grid_data`): the same
  radial and angular sizes per period, so that the grids agree point for point.
* Points whose weight is below ``weight_threshold`` (bohr^3) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numba
import numpy as np

from ..constants import ANGSTROM_IN_BOHR
from ..errors import InputError
from . import grid_data
from .grid_data import per_element

__all__ = [
    "Grid",
    "make_grid",
    "treutler_ahlrichs",
    "mura_knowles",
    "lebedev",
    "lebedev_orders",
    "nwchem_orders",
    "becke_partition",
    "size_adjustment",
    "bragg_radius",
]

#: Weights below this (bohr^3) are dropped from a grid by default.
WEIGHT_THRESHOLD = 1e-15
#: Points per block of the partition kernel (its (natm, block) work arrays stay in cache).
_BLOCK = 128
#: Region boundaries in r / R_Bragg of the pruning (SG-1 values): H-He, Li-Ne, heavier.
_PRUNE_ALPHAS = ((0.25, 0.5, 1.0, 4.5), (0.1667, 0.5, 0.9, 3.5), (0.1, 0.4, 0.8, 2.5))
#: Stratmann's a (eq. 14)
_STRATMANN_A = 0.64


@dataclass(frozen=True, eq=False)
class Grid:
    """A molecular integration grid; arrays are read-only.

    coords   float64 (n, 3)  points, bohr
    weights  float64 (n,)    weights (quadrature times partition), bohr^3:
                             ∫ F d³r ≈ weights @ F(coords)
    atoms    int64 (n,)      the atom each point belongs to (its atomic grid)
    """

    coords: np.ndarray
    weights: np.ndarray
    atoms: np.ndarray

    def __post_init__(self):
        set_ = object.__setattr__
        coords = np.array(self.coords, dtype=np.float64).reshape(-1, 3)
        weights = np.array(self.weights, dtype=np.float64).ravel()
        atoms = np.array(self.atoms, dtype=np.int64).ravel()
        if weights.shape[0] != coords.shape[0] or atoms.shape[0] != coords.shape[0]:
            raise ValueError("Grid.coords, weights and atoms must describe the same points")
        for name, value in (("coords", coords), ("weights", weights), ("atoms", atoms)):
            value.flags.writeable = False
            set_(self, name, value)

    @property
    def npoints(self) -> int:
        """Number of points."""
        return int(self.weights.shape[0])


# ---------------------------------------------------------------- radial
def treutler_ahlrichs(n: int, z: int) -> tuple[np.ndarray, np.ndarray]:
    """Treutler-Ahlrichs M4 radial rule of n points for element z.

    x_i = cos(iπ/(n+1)) (Chebyshev nodes of the second kind, i = 1..n),
    r(x) = ξ/ln2 (1+x)^0.6 ln(2/(1-x))  (Treutler and Ahlrichs 1995, eq. 19),
    ∫_0^∞ f(r) r² dr ≈ Σ_i W_i f(r_i),  W_i = π/(n+1) sin(iπ/(n+1)) r'(x_i) r_i².
    Returns r (n,) bohr, ascending, and W (n,) bohr^3.
    """
    xi = per_element(grid_data.TREUTLER_XI, z)
    theta = np.arange(1, n + 1) * np.pi / (n + 1)
    x = np.cos(theta)
    c = xi / np.log(2.0)
    log_term = np.log(2.0 / (1.0 - x))
    r = c * (1.0 + x) ** 0.6 * log_term
    dr = c * ((1.0 + x) ** 0.6) * (0.6 / (1.0 + x) * log_term + 1.0 / (1.0 - x))
    w = np.pi / (n + 1) * np.sin(theta) * dr * r * r
    return r[::-1].copy(), w[::-1].copy()


def mura_knowles(n: int, z: int) -> tuple[np.ndarray, np.ndarray]:
    """Mura-Knowles "Log3" radial rule of n points for element z.

    r(x) = -α ln(1 - x³) on midpoints x_i = (i + 1/2)/n, i = 0..n-1, with α = 7 for the
    alkali and alkaline-earth metals Li-Ca and 5 otherwise (Mura and Knowles 1996).
    Returns r (n,) bohr, ascending, and W (n,) bohr^3 (∫ f r² dr ≈ Σ W_i f(r_i)).
    """
    alpha = 7.0 if z in (3, 4, 11, 12, 19, 20) else 5.0
    x = (np.arange(n) + 0.5) / n
    r = -alpha * np.log(1.0 - x**3)
    dr = alpha * 3.0 * x * x / (1.0 - x**3) / n
    return r, dr * r * r


_RADIAL = {"treutler": treutler_ahlrichs, "mura-knowles": mura_knowles}


# ---------------------------------------------------------------- angular
def lebedev_orders() -> tuple[int, ...]:
    """Lebedev orders SciPy offers (a rule of order L integrates spherical harmonics up to
    degree L exactly): 3, 5, ..., 31, 35, 41, ..., 131."""
    return (*range(3, 32, 2), *range(35, 132, 6))


@cache
def lebedev(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Lebedev rule of the given order: unit vectors (m, 3) and weights (m,) summing to 4π
    (read-only arrays).  InputError for an order SciPy lacks or a SciPy older than 1.15."""
    try:
        from scipy.integrate import lebedev_rule
    except ImportError:
        raise InputError(
            'DFT grids need SciPy 1.15 or later (scipy.integrate.lebedev_rule): pip install "hartree[dft]"'
        ) from None
    if order not in lebedev_orders():
        raise InputError(f"no Lebedev rule of order {order}; orders are {', '.join(map(str, lebedev_orders()))}")
    x, w = lebedev_rule(order)
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
    w = np.asarray(w, dtype=np.float64)
    x.flags.writeable = False
    w.flags.writeable = False
    return x, w


def nwchem_orders(z: int, r: np.ndarray, max_order: int) -> np.ndarray:
    """Lebedev order per radial shell, int64 (n,), for radii r (bohr) of element z.

    Five regions split at r / R_Bragg = α_1..α_4 (SG-1's boundaries for H-He, Li-Ne and the
    rest) get orders (11, 15, L-, L, L-), L = max_order and L- the next smaller order
    offered; below order 11 nothing is pruned, at 11 the orders are (11, 13, 13, 13, 11).
    """
    orders = [o for o in lebedev_orders() if o >= 9]
    if max_order < 11:
        return np.full(r.shape, max_order, dtype=np.int64)
    top = orders.index(max_order)
    by_region = [11, 13, 13, 13, 11] if max_order == 11 else [11, 15, orders[top - 1], max_order, orders[top - 1]]
    alphas = _PRUNE_ALPHAS[0 if z <= 2 else 1 if z <= 10 else 2]
    region = (r[:, None] / bragg_radius(z) > np.asarray(alphas)[None, :]).sum(axis=1)
    return np.asarray(by_region, dtype=np.int64)[region]


# ---------------------------------------------------------------- partition
def bragg_radius(z: int) -> float:
    """Bragg-Slater radius of element z, bohr (:data:`grid_data.BRAGG_SLATER_ANGSTROM`)."""
    return per_element(grid_data.BRAGG_SLATER_ANGSTROM, z) * ANGSTROM_IN_BOHR


def size_adjustment(numbers: np.ndarray, kind: str | None = "treutler") -> np.ndarray:
    """Becke's a_ij of the atomic size adjustment, float64 (natm, natm), antisymmetric.

    χ = R_i / R_j, a_ij = (1/χ - χ)/4, clipped to [-1/2, 1/2] (Becke 1988, eqs. A4-A6:
    u = (χ-1)/(χ+1), a = u/(u²-1)); R = Bragg-Slater radius ("becke") or its square root
    ("treutler", Treutler and Ahlrichs 1995); None gives zeros (no adjustment).
    """
    numbers = np.asarray(numbers, dtype=np.int64)
    if kind is None:
        return np.zeros((numbers.size, numbers.size))
    radii = np.array([bragg_radius(int(z)) for z in numbers])
    if kind == "treutler":
        radii = np.sqrt(radii)
    elif kind != "becke":
        raise InputError(f"unknown atomic size adjustment {kind!r}; use 'treutler', 'becke' or None")
    chi = radii[:, None] / radii[None, :]
    return np.clip(0.25 * (1.0 / chi - chi), -0.5, 0.5)


@numba.njit(parallel=True, cache=True)
def _partition_kernel(points, owner, atom_coords, inv_r, adjust, stratmann, out):
    """out[p] = P_owner[p](r_p) / Σ_k P_k(r_p) (see :func:`becke_partition`), blocks of
    _BLOCK points in parallel.  inv_r (natm, natm) 1/R_ij, adjust a_ij (natm, natm),
    stratmann: Stratmann's g (eq. 14) if true, else Becke's f(f(f(ν))) (eqs. 19-20).

    Within a block the loops run over its points (vectorised): for each pair i < j in
    lexicographic order P_i *= s(ν_ij) and P_j *= s(ν_ji) = 1 - s(ν_ij), so each P_i is the
    product over j in ascending order and Σ_k P_k the sum in ascending k, which are the
    operations (and rounding) of the former numpy version."""
    npts = points.shape[0]
    natm = atom_coords.shape[0]
    nblock = (npts + _BLOCK - 1) // _BLOCK
    for b in numba.prange(nblock):
        p0 = b * _BLOCK
        m = min(_BLOCK, npts - p0)
        dist = np.empty((natm, m))
        cell = np.ones((natm, m))
        for a in range(natm):
            for p in range(m):
                dx = points[p0 + p, 0] - atom_coords[a, 0]
                dy = points[p0 + p, 1] - atom_coords[a, 1]
                dz = points[p0 + p, 2] - atom_coords[a, 2]
                dist[a, p] = np.sqrt(dx * dx + dy * dy + dz * dz)
        for i in range(natm):
            di = dist[i]
            ci = cell[i]
            for j in range(i + 1, natm):
                dj = dist[j]
                cj = cell[j]
                rinv = inv_r[i, j]
                aij = adjust[i, j]
                if stratmann:
                    for p in range(m):
                        mu = (di[p] - dj[p]) * rinv
                        nu = mu + aij * (1.0 - mu * mu)
                        t = min(max(nu / _STRATMANN_A, -1.0), 1.0)
                        t2 = t * t
                        g = t * (35.0 + t2 * (-35.0 + t2 * (21.0 - 5.0 * t2))) / 16.0
                        ci[p] *= 0.5 * (1.0 - g)
                        cj[p] *= 0.5 * (1.0 + g)
                else:
                    for p in range(m):
                        mu = (di[p] - dj[p]) * rinv
                        g = mu + aij * (1.0 - mu * mu)
                        g = g * (1.5 - 0.5 * g * g)
                        g = g * (1.5 - 0.5 * g * g)
                        g = g * (1.5 - 0.5 * g * g)
                        ci[p] *= 0.5 * (1.0 - g)
                        cj[p] *= 0.5 * (1.0 + g)
        for p in range(m):
            total = 0.0
            for a in range(natm):
                total += cell[a, p]
            out[p0 + p] = cell[owner[p0 + p], p] / total


def becke_partition(
    points: np.ndarray, atom_coords: np.ndarray, adjust: np.ndarray, owner: np.ndarray, scheme: str = "becke"
) -> np.ndarray:
    """Cell function of each point's own atom, w_owner(r) = P_owner(r) / Σ_k P_k(r), (n,).

    P_i(r) = Π_{j≠i} s(ν_ij),  s = (1 - g(ν))/2,  ν_ij = μ_ij + a_ij (1 - μ_ij²),
    μ_ij = (r_i - r_j)/R_ij (Becke 1988, eqs. 11, 13, 21, 22, A2); g is Becke's f(f(f(ν))),
    f(ν) = 3ν/2 - ν³/2 (eqs. 19-20), or Stratmann, Scuseria and Frisch's
    (35t - 35t³ + 21t^5 - 5t^7)/16 with t = ν/a clipped to [-1, 1] (eq. 14, a = 0.64); both
    are odd, so s(ν_ji) = (1 + g(ν_ij))/2 and only pairs i < j are evaluated.  No pair is
    screened: O(natm² n) work, in the numba kernel :func:`_partition_kernel` (parallel over
    blocks of points; numba's thread count).  points (n, 3) and atom_coords (natm, 3) in
    bohr, adjust the a_ij (natm, natm) of :func:`size_adjustment`, owner int (n,) atom index
    of each point.
    """
    if scheme not in ("becke", "stratmann"):
        raise InputError(f"unknown partition {scheme!r}; use 'becke' or 'stratmann'")
    # writable C arrays, so that read-only inputs (Grid's, Molecule's) share one compiled kernel
    points = np.require(points, np.float64, ["C", "W"])
    atom_coords = np.require(atom_coords, np.float64, ["C", "W"])
    natm = atom_coords.shape[0]
    out = np.empty(points.shape[0])
    if natm == 1:
        out[:] = 1.0
        return out
    i, j = np.triu_indices(natm, k=1)
    inv_r = np.zeros((natm, natm))
    inv_r[i, j] = 1.0 / np.linalg.norm(atom_coords[i] - atom_coords[j], axis=-1)
    adjust = np.require(adjust, np.float64, ["C", "W"])
    owner = np.require(owner, np.int64, ["C", "W"])
    _partition_kernel(points, owner, atom_coords, inv_r, adjust, scheme == "stratmann", out)
    return out


# ---------------------------------------------------------------- molecule
def _atomic_grid(z: int, level: int, radial: str, prune: bool) -> tuple[np.ndarray, np.ndarray]:
    """Points (m, 3) bohr about the nucleus and quadrature weights (m,) bohr^3 of one atom,
    shell by shell from the nucleus outwards."""
    row = grid_data.period(z) - 1
    nrad = grid_data.RADIAL_POINTS[level - 1][row]
    max_order = grid_data.ANGULAR_ORDER[level - 1][row]
    r, w_rad = _RADIAL[radial](nrad, z)
    orders = nwchem_orders(z, r, max_order) if prune else np.full(nrad, max_order)
    coords, weights = [], []
    for ri, wi, order in zip(r, w_rad, orders):
        dirs, w_ang = lebedev(int(order))
        coords.append(ri * dirs)
        weights.append(wi * w_ang)
    return np.concatenate(coords), np.concatenate(weights)


def make_grid(
    molecule,
    level: int = 3,
    radial: str = "treutler",
    prune: bool = True,
    partition: str = "becke",
    size_adjust: str | None = "treutler",
    weight_threshold: float = WEIGHT_THRESHOLD,
) -> Grid:
    """The molecular grid of a :class:`hartree.molecule.Molecule` (module docstring).

    level 1..9 (PySCF's levels; 3 is the default of both); radial "treutler" or
    "mura-knowles"; prune: NWChem-style angular pruning; partition "becke" or "stratmann";
    size_adjust "treutler", "becke" or None; points with weight < weight_threshold (bohr^3)
    dropped.  Points come atom by atom, each atom's shell by shell from the nucleus out.
    """
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level not in grid_data.LEVELS:
        raise InputError(f"grid level must be an integer 1..{grid_data.LEVELS[-1]}, not {level!r}")
    if radial not in _RADIAL:
        raise InputError(f"unknown radial grid {radial!r}; use {' or '.join(map(repr, _RADIAL))}")
    numbers = np.asarray(molecule.numbers, dtype=np.int64)
    atom_coords = np.asarray(molecule.coords, dtype=np.float64)
    adjust = size_adjustment(numbers, size_adjust)
    per_atom = {}
    coords, weights, atoms = [], [], []
    for ia, z in enumerate(numbers):
        key = int(z)
        if key not in per_atom:
            per_atom[key] = _atomic_grid(key, int(level), radial, prune)
        local, w = per_atom[key]
        coords.append(local + atom_coords[ia])
        weights.append(w)
        atoms.append(np.full(w.shape[0], ia, dtype=np.int64))
    coords, weights, atoms = np.concatenate(coords), np.concatenate(weights), np.concatenate(atoms)
    weights = weights * becke_partition(coords, atom_coords, adjust, atoms, partition)
    keep = np.abs(weights) >= weight_threshold
    return Grid(coords=coords[keep], weights=weights[keep], atoms=atoms[keep])
