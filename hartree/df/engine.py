"""The density-fitted J/K served behind the engine contract: :class:`FittedEngine` wraps any
integral engine, so that the SCF kernel, its guess, the Kohn-Sham code and the gradient run
unchanged on fitted J and K (:mod:`hartree.df.jk`), the long-range K of range-separated
hybrids (:mod:`hartree.df.range_separated`) and the fitted gradient (:mod:`hartree.df.gradient`);
everything else is the wrapped engine's.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from hartree.arrays import to_numpy
from hartree.errors import InputError

from .auxiliary import result_aux_basis
from .jk import BLOCK_BYTES, FittedJK
from .mixed_k import K_TARGET_EH, MixedK
from .pairs import ENGINE_THRESHOLD

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hartree.basis import Basis
    from hartree.engine import IntegralEngine
    from hartree.molecule import Molecule

__all__ = ["FittedEngine", "as_fitted_engine"]


class FittedEngine:
    """An :class:`hartree.engine.IntegralEngine` whose ``jk`` is density fitted: J always, K
    too unless ``exact_k`` (then K is the wrapped engine's exact one, every omega).  Every
    other member is the wrapped ``engine``'s, except :meth:`two_electron_gradient`: the
    gradient of the fitted energy (:mod:`hartree.df.gradient`).

    aux: the auxiliary Basis (:func:`hartree.df.auxiliary.load_jk_aux`); memory_bytes,
    pair_threshold, host_memory_bytes, block_bytes: see :class:`FittedJK` (each fitted tensor's
    own).  An attenuated operator (omega != 0: the long-range exchange of range-separated
    hybrids) is fitted with its own integrals and metric, a second tensor built at its first
    request (a :class:`FittedJK` with ``omega``, in ``range_separated``); the 1/r12 J and K
    stay ``fitted``'s.

    Mixed precision (``jk(..., precision='mixed')``, the SCF's early cycles with its option
    ``precision='mixed'``): the fitted K by :mod:`hartree.df.mixed_k`; mixed_scheme (None: the
    device's policy, FP64 on the CPU; or 'ozaki', 'fp32', 'tf32', 'tf32x3', forced),
    mixed_slices (a forced Ozaki slice count) and mixed_target_eh (the most the bound on a
    build's exchange-energy error may be, Eh) make its :class:`~hartree.df.mixed_k.MixedK`
    (the 1/r12 fit's; an attenuated fit follows the device's policy).
    """

    def __init__(
        self,
        engine: IntegralEngine,
        aux: Basis,
        exact_k: bool = False,
        memory_bytes: int | None = None,
        pair_threshold: float = ENGINE_THRESHOLD,
        host_memory_bytes: int | None = None,
        block_bytes: int = BLOCK_BYTES,
        mixed_scheme: str | None = None,
        mixed_slices: int | None = None,
        mixed_target_eh: float = K_TARGET_EH,
    ):
        self.inner = engine
        self.molecule, self.basis = engine.molecule, engine.basis
        self.screening_threshold = engine.screening_threshold
        self.aux, self.exact_k = aux, bool(exact_k)
        mixed = MixedK(mixed_scheme, mixed_slices, mixed_target_eh)
        self._options = (memory_bytes, pair_threshold, host_memory_bytes, block_bytes)
        self.fitted = FittedJK(engine, aux, *self._options, mixed)
        #: {omega: FittedJK} of the attenuated operators fitted so far (bohr^-1)
        self.range_separated: dict[float, FittedJK] = {}

    def _fit(self, omega: float) -> FittedJK:
        """The fit of the operator of omega: ``fitted`` for 1/r12, else that of
        ``range_separated`` (made at the first request)."""
        if omega == 0.0:
            return self.fitted
        if omega not in self.range_separated:
            self.range_separated[omega] = FittedJK(self.inner, self.aux, *self._options, omega=omega)
        return self.range_separated[omega]

    # ------------------------------------------------------------------ host side
    @property
    def notes(self) -> list[str]:
        """The fitting's sentences, then the wrapped engine's."""
        what = "J fitted, K exact (exact_k)" if self.exact_k else "J and K fitted"
        own = [f"{n} ({what})" for n in self.fitted.notes]
        mixed = self.fitted.mixed.note()
        own += [mixed] if mixed else []
        own += [n for fit in self.range_separated.values() for n in fit.notes]
        return own + [n for n in self.inner.notes if n not in own]

    @property
    def device(self) -> str:
        """The wrapped engine's device text."""
        return self.inner.device

    @property
    def scf_note(self) -> str | None:
        """The wrapped engine's note."""
        return self.inner.scf_note

    def summary(self) -> dict:
        """What was fitted, for ``SCFResult.density_fitting``: aux_basis (name), naux,
        exact_k, storage ('stored' | 'split' | 'host' | 'direct' | None before a build:
        :mod:`hartree.df.storage`), tensor_bytes (B's size over the kept pairs, kept or not),
        device_bytes and host_bytes (how much of it is kept in the engine's memory and in
        host memory), pairs_kept and pairs_total (orbital pairs m >= n B keeps, of
        nao (nao + 1) / 2: :mod:`hartree.df.pairs`), precision (None, or the record of the
        builds asked for in mixed precision: :meth:`hartree.df.mixed_k.MixedK.summary`);
        range_separated: one dict per attenuated operator fitted (omega in bohr^-1,
        metric_rank: the eigenvectors of its metric kept, storage, tensor_bytes,
        device_bytes, host_bytes of its tensor), [] for none."""

        def where(fit: FittedJK) -> dict:
            p = fit.placement
            return {
                "storage": fit.storage,
                "tensor_bytes": fit.tensor_bytes,
                "device_bytes": None if p is None else p.device_bytes,
                "host_bytes": None if p is None else p.host_bytes,
            }

        f = self.fitted
        return {
            "aux_basis": str(self.aux.name),
            "naux": f.naux,
            "exact_k": self.exact_k,
            **where(f),
            "pairs_kept": f.pairs.npair,
            "pairs_total": f.pairs.total,
            "precision": f.mixed.summary(),
            "range_separated": [
                {"omega": w, "metric_rank": fit.metric_rank, **where(fit)} for w, fit in self.range_separated.items()
            ],
        }

    def array_module(self) -> ModuleType:
        return self.inner.array_module()

    def use(self):
        return self.inner.use()

    def for_molecule(self, molecule: Molecule, basis: Basis) -> IntegralEngine:
        """The wrapped engine's (exact) engine for another molecule: the SAD guess's atoms."""
        return self.inner.for_molecule(molecule, basis)

    # ------------------------------------------------------------------ one-electron, 3-index
    def overlap(self) -> Any:
        return self.inner.overlap()

    def kinetic(self) -> Any:
        return self.inner.kinetic()

    def nuclear(self, charges: Sequence[float] | None = None, coords: Any = None) -> Any:
        return self.inner.nuclear(charges, coords)

    def hcore(self) -> Any:
        return self.inner.hcore()

    def dipole(self, origin: Sequence[float] = (0.0, 0.0, 0.0)) -> Any:
        return self.inner.dipole(origin)

    def int2c2e(self, aux: Basis, omega: float = 0.0) -> Any:
        return self.inner.int2c2e(aux, omega)

    def int3c2e(self, aux: Basis, aux_shells: tuple[int, int] | None = None, omega: float = 0.0) -> Any:
        return self.inner.int3c2e(aux, aux_shells, omega)

    # ------------------------------------------------------------------ two-electron
    def jk(
        self,
        dms: Any,
        with_j: bool = True,
        with_k: bool = True,
        threshold: float | None = None,
        omega: float = 0.0,
        precision: str = "fp64",
    ) -> tuple[Any, Any]:
        """Fitted J (and K) of dms (nao, nao) or (nset, nao, nao), the contract's shapes and
        modules, of the operator of omega (bohr^-1; the contract's): 1/r12 from ``fitted``,
        an attenuated one from its own fit (:meth:`_fit`); with ``exact_k`` K comes from the
        wrapped engine (threshold and omega go there).  threshold does not apply to the
        fitted matrices (their pairs are chosen once: ``pair_threshold``).  precision
        'mixed': the fitted K by the scheme of the class docstring (the exact K of exact_k
        and J stay FP64)."""
        if precision not in ("fp64", "mixed"):
            raise InputError(f"precision must be 'fp64' or 'mixed', got {precision!r}")
        omega = float(omega)
        fit_k = with_k and not self.exact_k
        vj = vk = None
        if with_j or fit_k:
            vj, vk = self._fit(omega).jk(dms, with_j=with_j, with_k=fit_k, mixed=precision == "mixed")
        if with_k and self.exact_k:
            _, vk = self.inner.jk(dms, with_j=False, with_k=True, threshold=threshold, omega=omega)
        return vj, vk

    # ------------------------------------------------------------------ first derivatives
    def int3c2e_gradient(
        self, aux: Basis, gamma: Any, aux_shells: tuple[int, int] | None = None, omega: float = 0.0
    ) -> Any:
        return self.inner.int3c2e_gradient(aux, gamma, aux_shells, omega)

    def int2c2e_gradient(self, aux: Basis, gamma: Any, omega: float = 0.0) -> Any:
        return self.inner.int2c2e_gradient(aux, gamma, omega)

    def one_electron_gradient(self, density: Any, energy_weighted_density: Any) -> Any:
        return self.inner.one_electron_gradient(density, energy_weighted_density)

    def two_electron_gradient(
        self, coulomb_density: Any, exchange_densities: Any, exchange_factor: float, omega: float = 0.0
    ) -> Any:
        """The contract's 1/2 sum Gamma d(mn|ls)/dR of the fitted integrals, numpy (natm, 3),
        hartree/bohr (:func:`hartree.df.gradient.fitted_two_electron_gradient`, auxiliary-basis
        terms included); with exact_k J fitted and the exchange the wrapped engine's exact one.
        omega != 0 (bohr^-1; the attenuated operator, exchange only in an SCF): with a fitted K
        the gradient of that operator's fit (eqs. (4)-(5) there, as :meth:`jk` fits it), with
        exact_k the wrapped engine's exact gradient."""
        from .gradient import fitted_two_electron_gradient

        omega = float(omega)
        if omega != 0.0:
            if not self.exact_k:
                return fitted_two_electron_gradient(
                    self.inner, self.aux, coulomb_density, exchange_densities, exchange_factor, omega=omega
                )
            return self.inner.two_electron_gradient(coulomb_density, exchange_densities, exchange_factor, omega)
        if not self.exact_k:
            return fitted_two_electron_gradient(
                self.inner, self.aux, coulomb_density, exchange_densities, exchange_factor
            )
        two = fitted_two_electron_gradient(self.inner, self.aux, coulomb_density, exchange_densities, 0.0)
        if exchange_factor == 0.0:  # no exact exchange to add (pure functionals, RSH without 1/r12 K)
            return two
        zeros = np.zeros_like(to_numpy(coulomb_density))
        return two + np.asarray(self.inner.two_electron_gradient(zeros, exchange_densities, exchange_factor))


def as_fitted_engine(result, engine: Any) -> Any:
    """A :class:`hartree.df.engine.FittedEngine` for the gradient of a density-fitted ``result``:
    ``engine`` itself when it is one, else ``engine`` wrapped with the result's auxiliary
    basis and exact_k (so that ROHF's energy-weighted density uses the fitted Fock matrices
    of the energy)."""
    if isinstance(engine, FittedEngine):
        return engine
    return FittedEngine(engine, result_aux_basis(result, engine), exact_k=bool(result.density_fitting.get("exact_k")))
