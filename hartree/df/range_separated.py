"""Density-fitted J and K of an attenuated Coulomb operator: the long-range exchange of the
range-separated hybrids (CAM-B3LYP, ωB97X, ωB97M-V, ...) with a fitted K.

The operator of ``omega`` (bohr^-1, PySCF's convention, as :meth:`hartree.engine.IntegralEngine.jk`)
is erf(ω r12)/r12 for omega > 0 and erfc(|ω| r12)/r12 for omega < 0.  Its integrals are fitted
with the same operator in the three-index integrals and in the metric (the Coulomb-metric fit
of Vahtras, Almlöf & Feyereisen, Chem. Phys. Lett. 213, 514 (1993), with the attenuated
operator in place of 1/r12; as PySCF's ``with_df.range_coulomb(omega)``):

    (mn|ls)_ω ~ sum_PQ (mn|P)_ω [(P|Q)_ω]^-1 (Q|ls)_ω                                     (1)

which is eq. (1) of :mod:`hartree.df.jk` with (mn|P)_ω and (P|Q)_ω: a
:class:`hartree.df.jk.FittedJK` with ``omega`` reads its integrals through
:class:`OperatorIntegrals` (the engines' ``int3c2e``/``int2c2e`` with ``omega``) and factors
its metric by :func:`truncated_metric_factor`; its B, its placement (stored, split, host,
direct; :mod:`hartree.df.storage`) and its J and K builds are the 1/r12 fit's.
:class:`hartree.df.engine.FittedEngine` makes one such fit per ω at the first request for it, a
second tensor beside the 1/r12 one: the fitted memory is twice B's (the notes say so).

The erf metric is singular in practice: erf(ωr)/r has the Fourier transform
4π/k² exp(-k²/4ω²), so the compact auxiliary functions, seen through it, are nearly point
charges (water/def2-universal-jkfit at ω = 0.3: 34 of 113 eigenvalues below 1e-7, the
smallest at the rounding level, 1e-15).  Its factor is therefore the eigen-decomposition
inverse square root over the eigenvalues above :data:`LINEAR_DEPENDENCE` (hartree), PySCF's
``df.incore`` rule where its Cholesky factorisation fails (``LINEAR_DEP_THR``, 1e-7): the fit
spans the kept eigenvectors, and B's rows of the others are zero (M padded as in
:func:`hartree.df.metric.padded_metric_factor`).  The eigen-decomposition is taken always,
never a Cholesky factor first as for 1/r12: on such a metric whether Cholesky goes through is
a rounding accident (there it fails on PySCF's symmetrised metric and passes on the
unsymmetrised one, with entries of L^-1 of 1e9), and the energy moves by 1e-9 Eh only between
thresholds 1e-7 and 1e-13 (ωB97X, water/def2-SVP).  The erfc metric is as well conditioned as the
1/r12 one (its smallest eigenvalue 1.1e-5 there): the same rule keeps every eigenvalue and
gives V^-1 as the Cholesky factor does.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.engine import IntegralEngine

__all__ = ["LINEAR_DEPENDENCE", "OperatorIntegrals", "operator_text", "truncated_metric_factor"]

#: eigenvalues of an attenuated metric at or below this, hartree, are left out of its factor
#: (PySCF's df.incore LINEAR_DEP_THR; module docstring)
LINEAR_DEPENDENCE = 1e-7


def operator_text(omega: float) -> str:
    """'1/r12' (omega = 0), 'erf(0.3 r12)/r12' (omega > 0) or 'erfc(0.3 r12)/r12' (omega < 0);
    omega in bohr^-1."""
    if omega == 0.0:
        return "1/r12"
    return f"{'erf' if omega > 0 else 'erfc'}({abs(omega):g} r12)/r12"


def truncated_metric_factor(xp: ModuleType, v: Any, threshold: float = LINEAR_DEPENDENCE) -> tuple[Any, int]:
    """(M, rank): M (naux, naux) in ``xp`` with M^T M the inverse of the metric v (naux, naux)
    on its eigenvectors of eigenvalue above ``threshold`` (hartree), rows u_k / sqrt(w_k), then
    naux - rank zero rows (module docstring)."""
    w, u = xp.linalg.eigh(v)
    keep = w > threshold
    rank = int(keep.sum())
    m = xp.zeros_like(v)
    m[:rank] = (u[:, keep] / xp.sqrt(w[keep])).T
    return m, rank


class OperatorIntegrals:
    """The members of an engine a :class:`hartree.df.jk.FittedJK` uses, with the three- and
    two-index integrals of the operator of ``omega`` (bohr^-1; module docstring): basis,
    array_module, use, and int3c2e/int2c2e, which call the engine's with ``omega``."""

    def __init__(self, engine: IntegralEngine, omega: float) -> None:
        self.engine, self.omega = engine, float(omega)
        self.basis = engine.basis

    def array_module(self) -> ModuleType:
        return self.engine.array_module()

    def use(self):
        return self.engine.use()

    def int3c2e(self, aux: Basis, aux_shells: tuple[int, int] | None = None) -> Any:
        """(mn|P)_ω, (nao, nao, nP), hartree, the engine's array module."""
        return self.engine.int3c2e(aux, aux_shells, omega=self.omega)

    def int2c2e(self, aux: Basis) -> Any:
        """(P|Q)_ω, (naux, naux), hartree, the engine's array module."""
        return self.engine.int2c2e(aux, omega=self.omega)
