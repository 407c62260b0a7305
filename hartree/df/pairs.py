"""The orbital pairs m >= n over which a density-fitted J/K keeps its 3-index tensor B (issue 19).

B^Q_mn = sum_P M_QP (mn|P) (eq. 1 of :mod:`hartree.df.jk`) vanishes with the product m(r) n(r):
for orbitals on distant atoms most of the triangle m >= n is zero (Taxol/def2-TZVP: 51 % of
the pairs), and storing it all is what made B too large for a GPU.  A shell pair (a, b) is
kept, all its functions together, when its Gaussian product overlap bound

    max_pq |c_p c_q| exp(-a_p a_q / (a_p + a_q) |A - B|^2)   (bounded per shell by the most
    diffuse exponent and the largest coefficient: three_center.significant_pairs)

exceeds ``threshold``.  The default, :data:`ENGINE_THRESHOLD`, is the bound below which the
engine contract's ``int3c2e`` leaves (mn|P) zero on both engines
(:meth:`hartree.engine.IntegralEngine.int3c2e`), so the pairs left out are exactly those whose
integrals are zero anyway: B over the kept pairs gives the J and K of B over all pairs, up to
the order of summation.  A larger threshold drops more pairs (an approximation); 0 keeps
every pair (the unscreened fit of the tests).

Measured with def2-TZVP and def2-universal-JKFIT (tests/gpu/data; counting only), the
default keeps 61 % of the pairs of Tamoxifen (B 6.4 GiB instead of 10.6), 49 % of Taxol's
(51.2 GiB instead of 103.6) and 40 % of Valinomycin's (99.0 GiB instead of 245).  A
Schwarz-type bound, sqrt(max (mn|mn)) max_P sqrt((P|P)), keeps more at every threshold from
1e-14 to 1e-10 (Taxol: 55 % to 46 %; against 49 % to 39 % for this bound) and needs the
diagonal ERIs of every shell pair, so it is not used.

Packed arrays over the kept pairs carry one more column, always zero, at the end: the
unpacking (:attr:`FittedPairs.unpack`) is then one gather, a left-out pair reading the zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hartree.basis import Basis

__all__ = ["ENGINE_THRESHOLD", "FittedPairs", "fitted_pairs"]

#: product-overlap bound below which the engines' int3c2e leaves a shell pair's (mn|P) zero
#: (hartree.integrals.three_center.int3c2e and hartree.gpu.eri3c: ``screening=1e-14``)
ENGINE_THRESHOLD = 1e-14


@dataclass(frozen=True)
class FittedPairs:
    """The kept orbital pairs of a basis (module docstring).

    rows, cols    int64 (npair + 1,): m >= n of each kept pair in the order of the packed
                  arrays (row-major over the triangle), then (0, 0) for the zero column
    weights       float64 (npair + 1,): 1 for m == n, 2 for m > n (a packed symmetric
                  matrix's sum over both triangles), 0 for the zero column
    unpack        int64 (nao * nao,): for (m, n) flattened, the packed column of its pair
                  (either triangle), npair (the zero column) for a left-out pair
    nao           orbital functions; total: nao (nao + 1) / 2
    shell_pairs   kept shell pairs (a >= b); total_shell_pairs: nshell (nshell + 1) / 2
    threshold     the product-overlap bound of the choice
    """

    rows: np.ndarray
    cols: np.ndarray
    weights: np.ndarray
    unpack: np.ndarray
    nao: int
    shell_pairs: int
    total_shell_pairs: int
    threshold: float

    @property
    def npair(self) -> int:
        """Kept pairs m >= n (the zero column not counted)."""
        return int(self.rows.size) - 1

    @property
    def total(self) -> int:
        """All pairs m >= n: nao (nao + 1) / 2."""
        return self.nao * (self.nao + 1) // 2

    @property
    def drops_computed_pairs(self) -> bool:
        """Whether some left-out pairs have integrals the engine computes (threshold above
        ENGINE_THRESHOLD): the direct path must then zero them itself."""
        return self.threshold > ENGINE_THRESHOLD and self.npair < self.total

    def mask(self) -> np.ndarray:
        """float64 (nao, nao): 1 on the kept pairs (both triangles), 0 elsewhere."""
        out = np.zeros(self.nao * self.nao)
        out[self.unpack < self.npair] = 1.0
        return out.reshape(self.nao, self.nao)

    def text(self) -> str:
        """'the fitted 3-index tensor B over 49% of the orbital pairs (1,226,504 of 2,483,106)'
        for the notes."""
        share = 100.0 * self.npair / max(self.total, 1)
        return f"the fitted 3-index tensor B over {share:.0f}% of the orbital pairs ({self.npair:,} of {self.total:,})"


def fitted_pairs(basis: Basis, threshold: float = ENGINE_THRESHOLD) -> FittedPairs:
    """The pairs m >= n of ``basis`` whose shell pair's product-overlap bound exceeds
    ``threshold`` (module docstring; 0 keeps all), host numpy."""
    from hartree.integrals.three_center import significant_pairs

    nao, nshell = int(basis.nao), int(basis.nshell)
    shells = significant_pairs(basis, float(threshold))  # (nkept, 2), a >= b
    keep = np.zeros((nshell, nshell), dtype=bool)
    keep[shells[:, 0], shells[:, 1]] = keep[shells[:, 1], shells[:, 0]] = True
    loc = np.asarray(basis.ao_loc, dtype=np.int64)
    shell_of = np.repeat(np.arange(nshell), np.diff(loc))  # the shell of each function
    rows, cols = np.tril_indices(nao)
    kept = keep[shell_of[rows], shell_of[cols]]
    rows, cols = rows[kept], cols[kept]
    npair = int(rows.size)
    unpack = np.full((nao, nao), npair, dtype=np.int64)
    unpack[rows, cols] = unpack[cols, rows] = np.arange(npair)
    weights = np.append(np.where(rows == cols, 1.0, 2.0), 0.0)
    return FittedPairs(
        rows=np.append(rows, 0).astype(np.int64),
        cols=np.append(cols, 0).astype(np.int64),
        weights=weights,
        unpack=unpack.ravel(),
        nao=nao,
        shell_pairs=int(shells.shape[0]),
        total_shell_pairs=nshell * (nshell + 1) // 2,
        threshold=float(threshold),
    )
