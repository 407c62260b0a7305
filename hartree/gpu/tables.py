"""The Rys root/weight table as the GPU kernels see it (host side, numpy only).

One source of truth: the GPU kernels evaluate the *same* Chebyshev fits that the CPU
code uses, read from ``hartree/integrals/data/rys_tables.npz`` (written by
``tools/make_rys_tables.py``).  Layout of that file (per root count n = 1..max_nroots):

* ``coef[offsets[n]:offsets[n+1]]`` reshaped to ``(nint[n], 2n, degree+1)``: on interval k,
  T in [k·width, (k+1)·width), the Chebyshev coefficients of u_1..u_n then w_1..w_n in
  x = 2 (T/width - k) - 1 ∈ [-1, 1]; f(x) = Σ_j c_j T_j(x) (c_0 not halved).
* T ≥ tmax[n] = nint[n]·width: asymptote u_i = asym_u[n, i] / T,
  w_i = asym_w[n, i] / sqrt(T) (half-range Gauss-Hermite).

:func:`eval_roots_weights` is a numpy transcription of the in-kernel evaluation
(Clenshaw recurrence), used by the tests to check the generated code's algorithm.
"""

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DEFAULT_TABLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integrals", "data", "rys_tables.npz"
)


@dataclass(frozen=True, eq=False)
class RysTable:
    """Chebyshev fits of Rys roots u = t² and weights w versus T (see module docstring).

    width: interval width in T; degree: Chebyshev degree; nint: int64 (max_nroots+1,);
    offsets: int64 (max_nroots+2,); coef: float64 flat; asym_u, asym_w:
    float64 (max_nroots+1, max_nroots); sha256: digest of the table (cache key part).
    """

    path: str
    width: float
    degree: int
    max_nroots: int
    nint: np.ndarray
    offsets: np.ndarray
    coef: np.ndarray
    asym_u: np.ndarray
    asym_w: np.ndarray
    sha256: str

    @classmethod
    def load(cls, path=None):
        """The table in the .npz file `path` (default: the package data file), read once
        per path (the same object on later calls)."""
        return _read(os.path.abspath(path or DEFAULT_TABLE))

    def block(self, n):
        """Coefficients for n roots, float64 (nint[n], 2n, degree+1)."""
        self._check(n)
        flat = self.coef[self.offsets[n] : self.offsets[n + 1]]
        return flat.reshape(int(self.nint[n]), 2 * n, self.degree + 1)

    def tmax(self, n):
        """First T (hartree-free, dimensionless) at which the asymptote is used."""
        return float(self.nint[n]) * self.width

    def _check(self, n):
        if not 1 <= n <= self.max_nroots:
            raise ValueError(f"Rys table holds 1..{self.max_nroots} roots, not {n}")


@lru_cache(maxsize=4)
def _read(path):
    """RysTable of the .npz file at the absolute `path` (see :meth:`RysTable.load`)."""
    with np.load(path) as z:
        nint = np.array(z["nint"], dtype=np.int64)
        return RysTable(
            path=path,
            width=float(z["width"]),
            degree=int(z["degree"]),
            max_nroots=int(z["max_nroots"]),
            nint=nint,
            offsets=np.array(z["offsets"], dtype=np.int64),
            coef=np.ascontiguousarray(z["coef"], dtype=np.float64),
            asym_u=np.array(z["asym_u"], dtype=np.float64),
            asym_w=np.array(z["asym_w"], dtype=np.float64),
            sha256=str(z["sha256"]) if "sha256" in z.files else "unknown",
        )


def eval_roots_weights(table, n, T):
    """Roots and weights for n roots at one T, exactly as the CUDA code computes them.

    Returns (u, w), float64 (n,) each.  Clenshaw: b_k = c_k + 2x b_{k+1} - b_{k+2},
    f = c_0 + x b_1 - b_2.
    """
    T = float(T)
    if T >= table.tmax(n):
        return (table.asym_u[n, :n] / T, table.asym_w[n, :n] / np.sqrt(T))
    k = int(T / table.width)
    x = 2.0 * (T / table.width - k) - 1.0
    c = table.block(n)[k]  # (2n, degree+1)
    b1 = np.zeros(2 * n)
    b2 = np.zeros(2 * n)
    for j in range(table.degree, 0, -1):
        b1, b2 = c[:, j] + 2.0 * x * b1 - b2, b1
    f = c[:, 0] + x * b1 - b2
    return f[:n], f[n:]
