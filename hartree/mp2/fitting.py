"""Density fitting of RI-MP2: the metric factor and B = (ia|P) M^T, over numpy or cupy.

    V_PQ = (P|Q) = L L^T,   M = L^-1 (V^-1 = M^T M),   B_ia,Q = sum_P (ia|P) M_Q,P

(Watson et al., MGEMM, eq. 21, with the Cholesky factor in place of V^-1/2: B B^T is the
same; Weigend & Haeser, Theor. Chem. Acc. 97, 331 (1997)).
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np
import scipy.linalg

from .device import GemmLog, MP2Device, gemm_nt, sync

__all__ = ["metric_factor", "padded_metric_factor", "fitted_b_inplace"]


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
    that B keeps its width naux (B B^T unchanged)."""
    m = metric_factor(xp, v)
    naux = v.shape[0]
    if m.shape[0] != naux:
        m = xp.concatenate([m, xp.zeros((naux - m.shape[0], naux))], axis=0)
    return m


def fitted_b_inplace(device: MP2Device, store: Any, m: Any, precision: str, log: GemmLog) -> None:
    """B = (ia|P) M^T (eq. 21), overwriting ``store`` (nocc*nvir, naux): a device array, a
    numpy array (also host store of a GPU run: pinned) or an h5py dataset, row block by row
    block (device.b_rows), so that one three-index tensor is held; GEMMs by ``precision``."""
    xp = device.xp
    nrow, naux = store.shape
    if nrow == 0:
        return
    rows = device.b_rows(naux)
    for r0 in range(0, nrow, rows):
        r1 = min(nrow, r0 + rows)
        t = time.perf_counter()
        blk = xp.asarray(store[r0:r1])
        c, info = gemm_nt(blk, m, precision, device.gemm_budget("B"))
        if isinstance(store, np.ndarray) and xp is not np:
            store[r0:r1] = c.get()
        else:
            store[r0:r1] = c
        sync(xp)
        log.gemm("B", precision, info, blk.size + m.size, time.perf_counter() - t)
