"""Typed options and per-iteration records of the SCF layer.

:class:`SCFOptions` is a frozen dataclass: an unknown keyword (a typo) raises
``TypeError`` at construction and bad values raise :class:`hartree.InputError`
in ``__post_init__``, so nothing is silently ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

METHODS = ("rhf", "uhf", "rohf", "rks", "uks")
#: the Hartree-Fock scheme (density and Fock layout, occupations) of each method: Kohn-Sham
#: methods are RHF/UHF with a scaled exchange and an XC potential added to the Fock matrix
SCHEMES = {"rhf": "rhf", "uhf": "uhf", "rohf": "rohf", "rks": "rhf", "uks": "uhf"}
GUESSES = ("sad", "core", "checkpoint")
FALLBACK_KINDS = ("adiis", "ediis")
#: dispersion corrections added after the SCF (:mod:`hartree.dft.dispersion`)
DISPERSION_MODELS = ("d3bj", "d3zero", "d4")
#: precision='mixed' ends (FP64 builds from then on) after a cycle whose energy changed by
#: less than this, Eh: the default bound on one mixed build's exchange-energy error
#: (hartree.df.mixed_k.K_TARGET_EH), so further cycles could not be told apart in that precision
PRECISION_SWITCH_ENERGY = 1e-6
#: ... or when the orbital gradient has not halved in this many cycles (the precision's floor:
#: a scheme whose rounding is noise on the Fock matrix stalls there)
PRECISION_STALL_CYCLES = 5


@dataclass(frozen=True)
class SCFOptions:
    """Settings of one SCF run.

    Convergence needs both ``|E_n - E_(n-1)| < conv_tol`` (hartree) and
    ``||X^T (F D S - S D F) X||_F < conv_tol_grad``: the Frobenius norm of the
    orbital-gradient commutator in the orthonormal basis X (for UHF the square
    root of the sum of squares over both spins; for ROHF F is the effective
    Roothaan Fock matrix and D the total density).  The reported energy always
    comes from a full (non-incremental) Fock build.

    Kohn-Sham DFT: method 'rks' (closed shells) or 'uks' with ``xc`` a functional name
    (:func:`hartree.dft.parse_functional`: 'svwn', 'pbe', 'b3lyp', ...) on the grid of
    ``grid_level`` (1..9, PySCF's levels); 'rhf'/'uhf'/'rohf' are Hartree-Fock and take no
    ``xc``.  Functionals with VV10 integrate it on the coarser grid of ``nlc_grid_level``
    (1..9, default 1: :data:`hartree.dft.vv10.NLC_GRID_LEVEL`; unused by other functionals).
    ROKS and checkpoints of DFT runs are refused (InputError;
    docs/dft.md).

    Density fitting (:mod:`hartree.df`): ``density_fitting`` True (the default J/K fitting
    basis of the orbital basis, :func:`hartree.df.auxiliary.default_jk_aux_name`) or an
    auxiliary basis name or path fits J and K (RI-JK); with ``exact_k`` J only, K exact.
    Such runs build full J/K every cycle, unless ``exact_k`` (:func:`hartree.scf.run` turns
    ``incremental_fock`` off: a fitted build costs the same for a density change as for the
    density, and the change's eigen-decomposition (:mod:`hartree.df.jk`, eq. 3) has twice the
    rank); :func:`hartree.gradients.scf_gradient` differentiates the fitted energy.

    ``precision`` 'mixed' (a fitted K only; 'fp64' the default): the early cycles ask the engine
    for mixed-precision J/K builds (the fitted K's bounded scheme, :mod:`hartree.df.mixed_k`),
    until the orbital gradient falls below ``precision_switch_gradient``, a cycle changes the
    energy by less than PRECISION_SWITCH_ENERGY or the gradient stalls (:meth:`leaves_mixed`);
    from then on every build is FP64, DIIS starts afresh, and convergence is judged on FP64
    cycles only (so the energy is the FP64 one).

    ``dispersion`` ('d3bj' | 'd3zero' | 'd4' | None) does not change the SCF: :func:`hartree.scf.run`
    adds the correction of :mod:`hartree.dft.dispersion` to the converged energy (the kernel
    ignores it), and :func:`hartree.gradients.scf_gradient` its gradient.
    """

    method: str = "rhf"
    conv_tol: float = 1e-9  # Eh, energy change between cycles
    conv_tol_grad: float = 1e-5  # Frobenius norm of the orthonormal-basis commutator
    max_cycle: int = 100
    diis_space: int = 8
    guess: str = "sad"  # 'sad' | 'core' | 'checkpoint'
    level_shift: float = 0.0  # Eh added to the virtual (and half to open-shell) levels
    damping: float = 0.0  # fraction of the previous Fock mixed in, early cycles only
    fallback: bool = True  # ADIIS/EDIIS blended with DIIS; level shift when stalling
    fallback_kind: str = "adiis"  # 'adiis' (Hu & Yang 2010) | 'ediis' (Kudin et al. 2002)
    incremental_fock: bool = True  # J/K of the density change added to the previous J/K
    full_rebuild_every: int = 8  # cycles between full J/K rebuilds (<= 1: always full)
    screening_threshold: float = 1e-13
    # Early cycles build J/K with a looser screening threshold (TeraChem's and Q-Chem's
    # variable thresholds): until the orbital-gradient norm falls below
    # early_screening_gradient, then a full J/K rebuild at screening_threshold, after which
    # every build (and every convergence decision) uses screening_threshold.  None: off.
    # Off by default: on one H200, Valinomycin/6-31G** built its early J/K 40 % faster at
    # 1e-10 but took 19 cycles instead of 15, so the whole SCF was not faster (19.8 s vs
    # 19.3 s; benchmarks/results/gpu_jk_session4.md).  Probably because DIIS mixed loose and
    # tight Fock matrices: it now restarts at the switch (not yet measured on a GPU).
    early_screening: float | None = None
    early_screening_gradient: float = 1e-3
    lindep_threshold: float = 1e-8  # overlap eigenvalues below this are dropped
    checkpoint: str | None = None  # path of the HDF5 checkpoint (written every cycle)
    overwrite_checkpoint: bool = False  # replace a checkpoint of another job (scf.checkpoint.plan)
    guess_from: str | None = None  # another job's checkpoint to start from (read only)
    # (mo_coeff, mo_energy) of a previous run (a nearby geometry: optimization steps, finite
    # differences): its occupied orbitals, Löwdin-orthonormalised in the new overlap, start
    # the SCF instead of ``guess`` (a checkpoint restart still comes first)
    guess_orbitals: Any = None
    callback: Callable | None = None  # called with each IterationRecord
    cartesian: bool = False  # used by run() when it loads a basis by name
    xc: str | None = None  # exchange-correlation functional of 'rks'/'uks' (docs/dft.md)
    grid_level: int = 3  # integration grid of the XC part, 1..9 (hartree.dft.make_grid)
    nlc_grid_level: int = 1  # grid of VV10 functionals' non-local part, 1..9 (hartree.dft.vv10)
    dispersion: str | None = None  # 'd3bj' | 'd3zero' | 'd4': added by run() after the SCF
    density_fitting: str | bool | None = None  # True (default aux) or a J/K fitting basis: RI-J/K
    exact_k: bool = False  # with density_fitting: fit J only, exact K
    precision: str = "fp64"  # 'fp64' | 'mixed': mixed-precision fitted K in early cycles
    precision_switch_gradient: float = 1e-4  # 'mixed': FP64 builds once the gradient is below

    def __post_init__(self):
        method = str(self.method).lower()
        object.__setattr__(self, "method", method)
        if method == "roks":
            raise InputError("ROKS (restricted open-shell Kohn-Sham) is not implemented; use method 'uks'")
        if method not in METHODS:
            raise InputError(f"unknown SCF method {self.method!r}; choose one of {', '.join(METHODS)}")
        self._check_dft()
        if self.dispersion is not None:
            model = str(self.dispersion).lower()
            if model not in DISPERSION_MODELS:
                choices = ", ".join(DISPERSION_MODELS)
                raise InputError(f"unknown dispersion model {str(self.dispersion)[:40]!r}; choose one of {choices}")
            object.__setattr__(self, "dispersion", model)
        self._check_density_fitting()
        if self.guess not in GUESSES:
            raise InputError(f"unknown guess {self.guess!r}; choose one of {', '.join(GUESSES)}")
        if self.guess == "checkpoint" and not self.checkpoint:
            raise InputError("guess='checkpoint' needs a checkpoint path (option checkpoint=...)")
        if self.fallback_kind not in FALLBACK_KINDS:
            raise InputError(f"unknown fallback_kind {self.fallback_kind!r}; choose adiis or ediis")
        if not (self.conv_tol > 0 and self.conv_tol_grad > 0):
            raise InputError("conv_tol and conv_tol_grad must be positive")
        if int(self.max_cycle) < 1:
            raise InputError("max_cycle must be at least 1")
        if int(self.diis_space) < 2:
            raise InputError("diis_space must be at least 2")
        if not 0.0 <= self.damping < 1.0:
            raise InputError("damping must lie in [0, 1)")
        if self.level_shift < 0.0:
            raise InputError("level_shift must not be negative")
        if self.screening_threshold < 0.0:
            raise InputError("screening_threshold must not be negative")
        if self.early_screening is not None and not self.early_screening > 0.0:
            raise InputError("early_screening must be positive (or None to switch it off)")
        if not self.early_screening_gradient > 0.0:
            raise InputError("early_screening_gradient must be positive")
        if self.callback is not None and not callable(self.callback):
            raise InputError("callback must be callable")

    @property
    def scheme(self) -> str:
        """'rhf', 'uhf' or 'rohf': the Hartree-Fock layout the method uses (RKS -> RHF)."""
        return SCHEMES[self.method]

    def _check_dft(self):
        """InputError for an xc without a Kohn-Sham method (or the reverse), a bad grid level,
        or a checkpoint of a Kohn-Sham run."""
        if self.method in ("rks", "uks"):
            if not self.xc or not isinstance(self.xc, str):
                raise InputError(f"method {self.method!r} needs a functional: xc='b3lyp', 'pbe', ...")
        elif self.xc is not None:
            raise InputError(
                f"xc={self.xc!r} is for Kohn-Sham DFT: use method 'rks' (closed shells) or 'uks', not {self.method!r}"
            )
        if isinstance(self.grid_level, bool) or self.grid_level not in range(1, 10):
            raise InputError(f"grid_level must be an integer from 1 to 9, got {self.grid_level!r}")
        if isinstance(self.nlc_grid_level, bool) or self.nlc_grid_level not in range(1, 10):
            raise InputError(f"nlc_grid_level must be an integer from 1 to 9, got {self.nlc_grid_level!r}")
        if self.xc is not None and (self.checkpoint or self.guess_from):
            # a checkpoint records the method, not the functional or the grid: a restart
            # could cross functionals (or HF and DFT) unnoticed, so none is read or written
            raise InputError("checkpoints are not supported for Kohn-Sham DFT yet; run without checkpoint/guess_from")

    def _check_density_fitting(self):
        """density_fitting: False and '' mean None; InputError for another type, exact_k
        without density fitting, a precision other than fp64 and mixed, or mixed with exact_k
        (mixed without density fitting is refused by :func:`hartree.scf.run`, which knows
        whether the engine it is given fits)."""
        df = self.density_fitting
        if df is False or (isinstance(df, str) and not df.strip()):
            object.__setattr__(self, "density_fitting", None)
        elif df is not None and df is not True and not isinstance(df, str):
            raise InputError(f"density_fitting must be True, False or an auxiliary basis name, got {type(df).__name__}")
        if not isinstance(self.exact_k, bool):
            raise InputError(f"exact_k must be True or False, got {self.exact_k!r}")
        if self.exact_k and self.density_fitting is None:
            raise InputError("exact_k (--exact-k) applies only with density fitting (--density-fitting)")
        if self.precision not in ("fp64", "mixed"):
            raise InputError(f"precision must be 'fp64' or 'mixed', got {str(self.precision)[:40]!r}")
        if self.precision == "mixed" and self.exact_k:
            raise InputError(
                "precision 'mixed' (--precision mixed) applies to the fitted K, not with exact_k (--exact-k)"
            )
        if not self.precision_switch_gradient > 0.0:
            raise InputError("precision_switch_gradient must be positive")

    def leaves_mixed(self, history: list[IterationRecord]) -> bool:
        """Whether a ``precision='mixed'`` SCF builds in FP64 after the last cycle of
        ``history``: its orbital gradient below ``precision_switch_gradient``, its |dE| below
        PRECISION_SWITCH_ENERGY, or no halving of the gradient in PRECISION_STALL_CYCLES cycles."""
        last, n = history[-1], PRECISION_STALL_CYCLES
        if last.gradient_norm < self.precision_switch_gradient or abs(last.delta_energy) < PRECISION_SWITCH_ENERGY:
            return True
        before = [r.gradient_norm for r in history[:-n]]
        return bool(before) and min(r.gradient_norm for r in history[-n:]) > 0.5 * min(before)

    def replace(self, **changes) -> SCFOptions:
        """A copy with some fields changed (unknown names raise TypeError)."""
        return dataclasses.replace(self, **changes)


@dataclass
class IterationRecord:
    """What one SCF cycle did.

    cycle: 0 for the guess Fock build, then 1, 2, ...; energy and delta_energy
    in Eh (cycle 0: the energy expression evaluated on the guess density, which
    for SAD is not idempotent, so it is no variational bound); gradient_norm as defined in
    :class:`SCFOptions`; diis_error the
    largest absolute element of the commutator (the error the extrapolation
    sees); step names how the Fock matrix of this cycle was obtained
    ('guess', 'restart', 'diis', 'adiis', 'ediis', 'adiis+diis', 'damped',
    'plain', with '+shift' when a level shift was applied and '+full' /
    'full-rebuild' for full J/K builds); time in seconds since the start.
    """

    cycle: int
    energy: float
    delta_energy: float
    gradient_norm: float
    diis_error: float
    step: str
    time: float
