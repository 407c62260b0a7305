"""The factor of the Coulomb metric of an auxiliary basis, over numpy or cupy (RI-J, RI-JK and
RI-MP2 share it).

    V_PQ = (P|Q) = L L^T,   M = L^-1,   V^-1 = M^T M

(Vahtras, Almlöf & Feyereisen, Chem. Phys. Lett. 213, 514 (1993), eq. 8 with the Cholesky
factor in place of V^-1/2: every fitted quantity depends on M^T M only.)
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import scipy.linalg

__all__ = ["RANK_TOLERANCE", "density_factors", "metric_factor", "padded_metric_factor"]

#: eigenvalues of a density below this fraction of its largest one are left out of its factors
RANK_TOLERANCE = 1e-13


def density_factors(xp: ModuleType, dms: Any) -> list[tuple[Any, Any]]:
    """[(U (nao, k), w (k,))] with D = U w U^T for each density of dms (nset, nao, nao) in
    ``xp`` (w of any sign, so difference densities work too), eigenvalues below
    RANK_TOLERANCE max|w| left out: the fitted exchange and its gradient contract B with U."""
    out = []
    for d in dms:
        w, u = xp.linalg.eigh(d)
        keep = xp.abs(w) > RANK_TOLERANCE * max(float(xp.abs(w).max()), 1e-300)
        out.append((u[:, keep], w[keep]))
    return out


def metric_factor(xp: ModuleType, v: Any) -> Any:
    """M (naux, naux) with V^-1 = M^T M: the inverse Cholesky factor L^-1 of V = L L^T; when V
    is numerically singular, the eigen-decomposition inverse square root keeping eigenvalues
    above 1e-12 max (rows of M then number fewer than naux).  v (naux, naux) of ``xp``
    (numpy: scipy's Cholesky, which raises on a singular V; cupy: cupy's, which returns
    NaNs there)."""
    if xp is np:
        try:
            low = scipy.linalg.cholesky(v, lower=True)
            return scipy.linalg.solve_triangular(low, np.eye(v.shape[0]), lower=True)
        except np.linalg.LinAlgError:
            w, u = np.linalg.eigh(v)
            keep = w > 1e-12 * w.max()
            return (u[:, keep] / np.sqrt(w[keep])).T
    import cupyx.scipy.linalg as cla

    try:
        low = xp.linalg.cholesky(v)
        ok = bool(xp.isfinite(low).all())
    except np.linalg.LinAlgError:
        ok = False
    if not ok:
        w, u = xp.linalg.eigh(v)
        keep = w > 1e-12 * w.max()
        return (u[:, keep] / xp.sqrt(w[keep])).T
    return cla.solve_triangular(low, xp.eye(v.shape[0]), lower=True)


def padded_metric_factor(xp: ModuleType, v: Any) -> Any:
    """metric_factor with zero rows appended up to (naux, naux) for a singular metric, so
    that a fitted tensor keeps its width naux (M^T M unchanged) and M can be applied in
    place."""
    m = metric_factor(xp, v)
    naux = v.shape[0]
    if m.shape[0] != naux:
        m = xp.concatenate([m, xp.zeros((naux - m.shape[0], naux))], axis=0)
    return m
