"""The grid response of the VV10 gradient: E_nlc's derivative by the nuclei through its grid.

    g = nlc_gradient(molecule, basis, grid, dm, (b, C), grid_response=True)   # (natm, 3) Eh/bohr

VV10 (Vydrov and Van Voorhis, J. Chem. Phys. 133, 244103 (2010); :mod:`hartree.dft.vv10`
for the kernel Φ, ω0, κ, β and the pair sums F, U, W) on a molecular grid whose point r_i
moves rigidly with its atom A(i) (r_i = R_A(i) + s_i) and whose weight w_i, a Becke (or
Stratmann) partition of the atomic quadrature, changes with every nucleus.  With a_i = w_i n_i
over the points with n_i ≥ THRESHOLD (:data:`hartree.dft.vv10.THRESHOLD`),

    E_nlc = β Σ_i a_i + ½ Σ_i Σ_j a_i a_j Φ_ij,   Φ_ij = Φ(r_i, r_j) = -3 / (2 g g' (g + g')),   (1)

g = ω0_i R_ij² + κ_i, g' = ω0_j R_ij² + κ_j, ω0_i and κ_i functions of n_i = n(r_i) and
σ_i = |∇n(r_i)|², n(r) = Σ_μν D_μν φ_μ(r - R_μ) φ_ν(r - R_ν) with each basis function on its
atom.  A nucleus B moves E_nlc along three routes, their sum the exact derivative of E_nlc
on the grid that moves with the molecule:

(i) The basis functions move with their atoms, the points and weights held fixed: the
fixed-grid gradient (:func:`hartree.dft.vv10.nlc_gradient`), the GGA basis-function term of
:mod:`hartree.dft.xc_gradient` (its eq. (1)) with VV10's v_n = ∂E/(w_i ∂n_i) and
v_σ = ∂E/(w_i ∂σ_i).

(ii) The weights (Johnson, Gill and Pople, J. Chem. Phys. 98, 5612 (1993), appendix B;
∂w_i/∂R_B from :func:`hartree.dft.grid_response.partition_weight_gradient`).  In (1) w_k
stands once in the β sum and twice in the symmetric double sum (as a_i and as a_j), so the
½ cancels:

    ∂E/∂w_k = n_k (β + Σ_j a_j Φ_kj) = n_k (β + F_k) = n_k (2 ε_k - β),
    Σ_k n_k (β + F_k) ∂w_k/∂R_B,                                                        (2)

with ε_k = β + F_k / 2 the energy per electron of :func:`hartree.dft.vv10.vv10_terms`
(E_nlc = Σ_k a_k ε_k): the weight carries β + F, not the energy density's β + F/2.

(iii) The points of atom B move with it, r_k → r_k + δ for A(k) = B.  First n_k and σ_k are
the density's values at the moved point: E changes by Σ_{k∈B} w_k (v_n,k ∇n_k + v_σ,k ∇σ_k)·δ.
n(r) depends on r and the nuclei only through r - R_μ, so ∇n(r_k) = -Σ_A ∂n(r_k)/∂R_A (the
point fixed) and likewise ∇σ_k: this part is minus the share of B's points in (i), summed
over all atoms A and put on B,

    -Σ_A [(i) of the points k ∈ B]_A   added to atom B,                                  (3)

which is the convention of the XC grid response (:mod:`hartree.dft.xc_gradient`, eq. (2)):
(i) stays the fixed-grid gradient, nothing counted twice.  Then Φ_kj depends on r_k
explicitly through R_kj² (route (i) has only n and σ): r_k stands in both orders of the
double sum, the ½ cancels again, and with ∂Φ/∂g = -Φ (1/g + 1/(g + g')) and
∂Φ/∂g' = -Φ (1/g' + 1/(g + g')),

    Σ_{k∈B} a_k Σ_j a_j ∂Φ_kj/∂r_k,                                                     (4)
    ∂Φ_kj/∂r_k = 2 (r_k - r_j) (ω0_k ∂Φ/∂g + ω0_j ∂Φ/∂g')
               = 3 (r_k - r_j) d_kj² [ω0_k g' (2g + g') + ω0_j g (g + 2g')],   d = 1/(g g' (g + g')),

with one division per pair (as the pair sums; :func:`motion_sums`).  A pair of points of the
same atom keeps its distance when that atom moves, and indeed its two terms in (4) cancel in
the sum over B's points (∂Φ_kj/∂r_k = -∂Φ_jk/∂r_j), so the inner sum runs over all points j
(PySCF's ``_vv10nlc_grad`` leaves out the own atom's; the same in exact arithmetic).

Translational invariance: Σ_B of (2) is 0 (Σ_B ∂w_k/∂R_B = 0, eq. (2) of
:mod:`hartree.dft.grid_response`), (3) cancels the sum over atoms of (i), and Σ over all k
of (4) is 0 by the antisymmetry, so the grid-response gradient sums to zero over atoms.
A point crossing the density threshold as the nuclei move changes E_nlc by about
THRESHOLD w (β + F), a step that is not differentiated (as in PySCF).

PySCF 2.15 has the same three terms (``pyscf.grad.rks.get_nlc_vxc_full_response``: weight
response 2 (ε - β/2) n ∂w, the own atom's block of the basis-function term, and
``_vv10nlc_grad``'s explicit term); the tests compare with it.  Computed on the host
(numpy, and numba for (4), O(N²) in the NLC points as the energy's pair sums), also when the
fixed-grid gradient runs on a GPU, as the XC grid response is.
"""

from __future__ import annotations

import numba
import numpy as np

from .grid_response import partition_weight_gradient
from .grids import size_adjustment
from .xc_gradient import point_ranges

__all__ = ["motion_sums", "weight_and_kernel_terms"]


@numba.njit(parallel=True, cache=True, fastmath={"reassoc", "contract"})
def _motion_kernel(outer, inner, out):  # pragma: no cover - compiled by numba
    """Σ_j a_j ∂Φ_ij/∂r_i (eq. (4)) of each outer point over all inner points, one thread per
    outer point; arrays as :func:`hartree.dft.vv10.pair_sums`'s."""
    n, m = outer.shape[1], inner.shape[1]
    ix, iy, iz, iw0, ikap, irw = inner[0], inner[1], inner[2], inner[3], inner[4], inner[5]
    for i in numba.prange(n):
        x, y, z, w0, kap = outer[0, i], outer[1, i], outer[2, i], outer[3, i], outer[4, i]
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for j in range(m):
            dx = x - ix[j]
            dy = y - iy[j]
            dz = z - iz[j]
            r2 = dx * dx + dy * dy + dz * dz
            gp = r2 * iw0[j] + ikap[j]
            g = r2 * w0 + kap
            gt = g + gp
            d = 1.0 / (g * gp * gt)
            s = irw[j] * d * d * (w0 * gp * (gt + g) + iw0[j] * g * (gt + gp))
            fx += s * dx
            fy += s * dy
            fz += s * dz
        out[0, i] = 3.0 * fx
        out[1, i] = 3.0 * fy
        out[2, i] = 3.0 * fz


def motion_sums(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Σ_j a_j ∂Φ_ij/∂r_i (eq. (4)), float64 (3, n), Eh/bohr per electron (a_i times it is
    point i's force), of the outer points (5, n: x, y, z bohr, ω0, κ) over the inner points (6, m: x, y,
    z, ω0, κ, a = w n) on the CPU (numba, parallel over the outer points)."""
    outer = np.ascontiguousarray(outer, dtype=np.float64)
    inner = np.ascontiguousarray(inner, dtype=np.float64)
    out = np.empty((3, outer.shape[1]))
    _motion_kernel(outer, inner, out)
    return out


def weight_and_kernel_terms(
    molecule, grid, kept: np.ndarray, inner: np.ndarray, de_dw: np.ndarray, partition: str = "becke",
    size_adjust: str | None = "treutler", block_points: int = 4096,
) -> np.ndarray:  # fmt: skip
    """The weight term (2) and the explicit kernel term (4) of the module docstring: float64
    (natm, 3), Eh/bohr.

    molecule: the grid's :class:`hartree.molecule.Molecule`; grid: the NLC grid
    (:func:`hartree.dft.make_grid` with ``partition`` and ``size_adjust``); kept (k,) the
    indices of its points with n ≥ THRESHOLD; inner (6, k) their x, y, z (bohr), ω0, κ and
    a = w n (the pair sums' inner array, :func:`hartree.dft.vv10.vv10_terms`); de_dw (n,)
    ∂E/∂w = n (β + F) on every point of the grid (Eh bohr^-3, 0 off ``kept``).  The term (3)
    of the density at the moved points is :func:`hartree.dft.vv10.nlc_gradient`'s, as is the
    assembling of these inputs.
    """
    grad = np.zeros((int(molecule.natm), 3))
    np.add.at(grad, grid.atoms[kept], (inner[5] * motion_sums(inner[:5], inner)).T)  # eq. (4)
    atom_coords = np.asarray(molecule.coords, dtype=np.float64)
    adjust = size_adjustment(np.asarray(molecule.numbers), size_adjust)
    for p0, p1 in point_ranges(grid, max(int(block_points), 1), False):
        if not de_dw[p0:p1].any():
            continue
        dw = partition_weight_gradient(
            grid.coords[p0:p1], grid.weights[p0:p1], grid.atoms[p0:p1], atom_coords, adjust, partition
        )
        grad += dw @ de_dw[p0:p1]  # eq. (2)
    return grad
