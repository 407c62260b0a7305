"""Orthogonalisation and the generalised eigenproblem F C = S C e.

The AO overlap S is diagonalised, S = U s U^T.  Eigenvectors with s below
``threshold`` (default 1e-8) span near-linear dependencies and are dropped
(canonical orthogonalisation, Löwdin 1970); when nothing is dropped the
symmetric choice X = U s^-1/2 U^T is used.  Either way X^T S X = 1 and the
number of molecular orbitals nmo equals the number of kept eigenvectors.
"""

from __future__ import annotations

import numpy as np

from ..arrays import array_module, to_numpy


def orthogonalizer(s, threshold=1e-8):
    """X (nao, nmo) with X^T S X = 1, and how many directions were dropped.

    s: (nao, nao) AO overlap.  Returns (X, ndropped).
    """
    xp = array_module(s)
    w, u = xp.linalg.eigh(s)
    # the nao eigenvalues are judged on the host: a device reduction here would compile a
    # new CuPy kernel for each array size class (seconds of NVRTC inside the first SCF)
    keep = to_numpy(w) >= threshold
    ndropped = int(keep.size - np.count_nonzero(keep))
    if ndropped == 0:
        x = (u / xp.sqrt(w)) @ u.T  # symmetric (Löwdin) orthogonalisation
    else:
        idx = xp.asarray(np.flatnonzero(keep))
        x = u[:, idx] / xp.sqrt(w[idx])  # canonical orthogonalisation
    return x, ndropped


def eigh_orth(f, x):
    """Solve F C = S C e through the orthonormal basis X.

    f: (nao, nao) symmetric; x: (nao, nmo).  Returns (e (nmo,), C (nao, nmo)),
    eigenvalues ascending, C^T S C = 1.
    """
    xp = array_module(f)
    fo = x.T @ f @ x
    e, v = xp.linalg.eigh(0.5 * (fo + fo.T))
    return e, x @ v


def inv_sqrt_sym(m):
    """M^-1/2 of a symmetric positive definite matrix (small, e.g. an orbital overlap)."""
    xp = array_module(m)
    w, u = xp.linalg.eigh(0.5 * (m + m.T))
    return (u / xp.sqrt(w)) @ u.T
