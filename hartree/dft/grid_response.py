"""Derivatives of the molecular grid's weights with respect to the nuclear positions.

    dw = partition_weight_gradient(grid.coords, grid.weights, grid.atoms, atom_coords, adjust)
    dw.shape                                   # (natm, 3, n): ∂w_p/∂R_B, bohr^2

The points of a :func:`hartree.dft.make_grid` grid move with their own atom (r_p = R_A + s_p,
A = ``grid.atoms[p]``) and their weights are w_p = W_p P_A(r_p) / Z(r_p), W_p the radial and
angular quadrature weight (fixed), P_k the cell function of atom k and Z = Σ_k P_k
(Becke, J. Chem. Phys. 88, 2547 (1988), eqs. 11, 13, 21, 22, A2):

    P_k(r) = Π_{j≠k} s(ν_kj),  ν_kj = μ_kj + a_kj (1 - μ_kj²),  μ_kj = (d_k - d_j) / R_kj,

with d_k = |r - R_k| and R_kj = |R_k - R_j|.  For an atom B other than the point's own atom A
only the nuclei move (the point stays), and with u_k = (r - R_k)/d_k, e_kj = (R_k - R_j)/R_kj,

    ∂μ_kj/∂R_k = -(u_k + μ_kj e_kj) / R_kj,   ∂μ_kj/∂R_j = (u_j + μ_kj e_kj) / R_kj,

    ∂ln P_k/∂R_B = Σ_{j≠k} t_kj ∂μ_kj/∂R_B,   t_kj = s'(ν_kj)/s(ν_kj) (1 - 2 a_kj μ_kj),

    ∂w_p/∂R_B = w_p [∂ln P_A/∂R_B - Σ_k (P_k/Z) ∂ln P_k/∂R_B]          (B ≠ A),     (1)

and, since the weights do not change when the molecule and its grid move as a whole,

    ∂w_p/∂R_A = -Σ_{B≠A} ∂w_p/∂R_B.                                                 (2)

This is the weight derivative of Johnson, Gill and Pople, J. Chem. Phys. 98, 5612 (1993),
appendix B, written with eq. (2) for the own atom (the route that paper takes too).  s is
Becke's (1 - f(f(f(ν))))/2, f(x) = 3x/2 - x³/2, so s' = -(27/16)(1-x0²)(1-x1²)(1-x2²) with
x0 = ν, x1 = f(x0), x2 = f(x1); or Stratmann, Scuseria and Frisch's (Chem. Phys. Lett. 257,
213 (1996), eq. 14), s' = -(35/32a)(1-(ν/a)²)³ inside |ν| < a = 0.64, 0 outside.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .grids import _STRATMANN_A

__all__ = ["partition_weight_gradient"]

#: Bytes of the (natm, natm, 3, chunk) work array.
_CHUNK_BYTES = 32 * 1024 * 1024


def _s_and_ratio(nu: np.ndarray, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """s(ν) and s'(ν)/s(ν) (0 where s is 0: there s' is 0 too) of the partition scheme."""
    if scheme == "becke":
        x0 = nu
        x1 = x0 * (1.5 - 0.5 * x0 * x0)
        x2 = x1 * (1.5 - 0.5 * x1 * x1)
        g = x2 * (1.5 - 0.5 * x2 * x2)
        ds = -0.5 * 3.375 * (1.0 - x0 * x0) * (1.0 - x1 * x1) * (1.0 - x2 * x2)
    elif scheme == "stratmann":
        t = np.clip(nu / _STRATMANN_A, -1.0, 1.0)
        t2 = t * t
        g = t * (35.0 + t2 * (-35.0 + t2 * (21.0 - 5.0 * t2))) / 16.0
        ds = -0.5 * 35.0 / (16.0 * _STRATMANN_A) * (1.0 - t2) ** 3
    else:
        raise InputError(f"unknown partition {scheme!r}; use 'becke' or 'stratmann'")
    s = 0.5 * (1.0 - g)
    ratio = np.zeros_like(s)
    np.divide(ds, s, out=ratio, where=s > 0.0)
    return s, ratio


def partition_weight_gradient(
    points: np.ndarray, weights: np.ndarray, owner: np.ndarray, atom_coords: np.ndarray, adjust: np.ndarray,
    scheme: str = "becke",
) -> np.ndarray:  # fmt: skip
    """∂w_p/∂R_B of every point (module docstring, eqs. 1-2): float64 (natm, 3, n), bohr^2.

    points (n, 3) bohr, weights (n,) bohr^3 and owner (n,) atom index: (part of) a grid of the
    molecule at ``atom_coords`` (natm, 3) bohr, e.g. a :class:`hartree.dft.Grid`'s coords,
    weights and atoms, made with the size adjustment ``adjust`` (natm, natm)
    (:func:`hartree.dft.grids.size_adjustment`) and the partition ``scheme`` ("becke" or
    "stratmann") given here: they must be those of :func:`hartree.dft.make_grid`'s call,
    which the grid does not record.
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    weights = np.asarray(weights, dtype=np.float64)
    owner = np.asarray(owner, dtype=np.int64)
    atom_coords = np.asarray(atom_coords, dtype=np.float64)
    natm = atom_coords.shape[0]
    n = points.shape[0]
    out = np.zeros((natm, 3, n))
    if natm == 1:
        return out
    rkj = atom_coords[:, None, :] - atom_coords[None, :, :]  # R_k - R_j, (natm, natm, 3)
    dist = np.linalg.norm(rkj, axis=-1)
    off = ~np.eye(natm, dtype=bool)
    inv_r = np.zeros((natm, natm))
    inv_r[off] = 1.0 / dist[off]
    e = rkj * inv_r[:, :, None]  # e_kj
    a = np.asarray(adjust, dtype=np.float64)
    chunk = max(64, _CHUNK_BYTES // (8 * 3 * natm * natm))
    diagonal = np.arange(natm)
    for p0 in range(0, n, chunk):
        pts = points[p0 : p0 + chunk]
        own = owner[p0 : p0 + chunk]
        m = pts.shape[0]
        cols = np.arange(m)
        vec = pts.T[None, :, :] - atom_coords[:, :, None]  # r - R_k, (natm, 3, m)
        d = np.linalg.norm(vec, axis=1)  # (natm, m)
        u = vec / np.maximum(d, 1e-300)[:, None, :]
        mu = (d[:, None, :] - d[None, :, :]) * inv_r[:, :, None]  # μ_kj, (natm, natm, m)
        nu = mu + a[:, :, None] * (1.0 - mu * mu)
        s, ratio = _s_and_ratio(nu, scheme)
        s[diagonal, diagonal] = 1.0
        t = ratio * (1.0 - 2.0 * a[:, :, None] * mu) * inv_r[:, :, None]  # t_kj / R_kj; 0 on the diagonal
        cell = s.prod(axis=1)  # P_k, (natm, m)
        share = cell / cell.sum(axis=0)  # P_k / Z
        # ∂ln P_k/∂R_j (j ≠ k) = t_kj (u_j + μ_kj e_kj) / R_kj; ∂ln P_k/∂R_k = -Σ_j t_kj (u_k + μ_kj e_kj) / R_kj
        tmu = t * mu
        dlog = t[:, :, None, :] * u[None, :, :, :] + tmu[:, :, None, :] * e[:, :, :, None]  # (k, j, 3, m)
        dlog[diagonal, diagonal] = -(t.sum(axis=1)[:, None, :] * u + np.einsum("kjm,kjx->kxm", tmu, e))
        mixed = np.einsum("km,kbxm->bxm", share, dlog)  # Σ_k (P_k/Z) ∂ln P_k/∂R_B
        mine = dlog[own, :, :, cols].transpose(1, 2, 0)  # ∂ln P_A/∂R_B, (natm, 3, m)
        dw = weights[p0 : p0 + chunk] * (mine - mixed)  # eq. (1)
        dw[own, :, cols] = 0.0
        dw[own, :, cols] = -dw.sum(axis=0).T  # eq. (2)
        out[:, :, p0 : p0 + chunk] = dw
    return out
