"""Density fitting of RI-MP2: the metric factor and B = (ia|P) M^T, over numpy or cupy.

    V_PQ = (P|Q) = L L^T,   M = L^-1 (V^-1 = M^T M),   B_ia,Q = sum_P (ia|P) M_Q,P

(Watson et al., MGEMM, eq. 21, with the Cholesky factor in place of V^-1/2: B B^T is the
same; Weigend & Haeser, Theor. Chem. Acc. 97, 331 (1997)).  The metric factor is
:mod:`hartree.df.metric`'s, shared with the density-fitted SCF.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from hartree.df.metric import metric_factor, padded_metric_factor

from .device import GemmLog, MP2Device, gemm_nt, sync

__all__ = ["metric_factor", "padded_metric_factor", "fitted_b_inplace"]


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
