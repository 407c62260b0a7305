"""WTBS basis-set optimization with NEWUOA (thesis §3.2 step 7, jobtype='bsopt').

The energy E(α, β, δ, γ) of one element with fixed windows is minimized by Powell's NEWUOA
(nlopt's LN_NEWUOA).  NEWUOA works on x = (ln α, ln β, δ, γ) so that a trust region of
size ρ means a relative change of ρ in α and β; ``rhobeg``/``rhoend`` are the initial and
final trust-region radii in x, ``maxfun`` the largest number of energy evaluations (the
thesis' $newuoa meaning).  Failed SCFs and invalid parameters (β ≤ 1) count as +∞ energy
for the optimizer (so it steps back) and are recorded in the history.
"""

from dataclasses import dataclass, field
import math
import time

import numpy as np

from ..errors import ConvergenceError, InputError
from .options import AtomSCFOptions
from .scf import kernel
from .wtbs import WTBSParameters, wtbs_exponents


@dataclass(frozen=True)
class NewuoaOptions:
    """rhobeg, rhoend: trust-region radii in (ln α, ln β, δ, γ); maxfun: energy evaluations."""

    rhobeg: float = 0.1
    rhoend: float = 1e-4
    maxfun: int = 500

    def __post_init__(self):
        if not 0 < self.rhoend < self.rhobeg:
            raise InputError(f"NEWUOA needs 0 < rhoend < rhobeg (got rhobeg={self.rhobeg}, rhoend={self.rhoend})")
        if self.maxfun < 6:
            raise InputError(f"maxfun must be at least 6 for 4 parameters (got {self.maxfun})")


@dataclass
class OptimizationResult:
    """Optimized parameters, their energy (Eh), and the energy of every evaluation."""

    parameters: WTBSParameters
    energy: float
    start_energy: float
    evaluations: int
    history: list = field(default_factory=list)     # dicts: parameters and energy (None: failed)
    wall_time: float = 0.0


def _to_params(x):
    return WTBSParameters(alpha=math.exp(x[0]), beta=math.exp(x[1]), delta=float(x[2]), gamma=float(x[3]))


def optimize_wtbs(z, start, windows, nucleus, scf_options=None, newuoa=None, shells=None, block_shells=None,
                  open_shells=None):
    """Minimize the SCF energy over the WTBS parameters (one group) with NEWUOA."""
    import nlopt   # optional dependency: only basis optimization needs it

    scf_options = scf_options or AtomSCFOptions()
    newuoa = newuoa or NewuoaOptions()
    t0 = time.perf_counter()
    history = []

    def energy(params):
        try:
            exps = wtbs_exponents([params], windows)
            return kernel(z, exps, nucleus, scf_options, shells=shells, block_shells=block_shells,
                          open_shells=open_shells).energy
        except (ConvergenceError, InputError, np.linalg.LinAlgError):
            return None

    def objective(x, grad):
        if x[1] <= 0.0:                       # β ≤ 1
            history.append({"parameters": None, "energy": None})
            return float("inf")
        params = _to_params(x)
        e = energy(params)
        history.append({"parameters": [params.alpha, params.beta, params.delta, params.gamma], "energy": e})
        return float("inf") if e is None else e

    x0 = np.array([math.log(start.alpha), math.log(start.beta), start.delta, start.gamma])
    start_energy = energy(start)
    if start_energy is None:
        raise InputError("the SCF fails at the starting WTBS parameters; give a better starting point")
    opt = nlopt.opt(nlopt.LN_NEWUOA, 4)
    opt.set_min_objective(objective)
    opt.set_initial_step(newuoa.rhobeg)
    opt.set_xtol_abs(newuoa.rhoend)
    opt.set_maxeval(newuoa.maxfun)
    x = opt.optimize(x0)
    best = opt.last_optimum_value()
    return OptimizationResult(_to_params(x), float(best), float(start_energy), len(history), history,
                              time.perf_counter() - t0)
