"""WTBS basis-set optimization with NEWUOA (thesis §3.5 $newuoa, jobtype='bsopt').

The energy E(α_g, β_g, δ_g, γ_g; g = 1..ngroup) of one element with fixed windows is
minimized by Powell's NEWUOA (nlopt's LN_NEWUOA).  NEWUOA works on
x = (ln α_1, ln β_1, δ_1, γ_1, ln α_2, ...) so that a trust region of size ρ means a
relative change of ρ in α and β; ``rhobeg``/``rhoend`` are the initial and final
trust-region radii in x and ``maxfun`` the largest number of energy evaluations — the
meaning of the thesis' $newuoa keys (NEWUOA's RHOBEG, RHOEND, MAXFUN).  Failed SCFs and
invalid parameters (β ≤ 1) count as +∞ energy for the optimizer (so that it steps back)
and are recorded in the history with energy None.  The result is the best evaluation.
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
    """rhobeg, rhoend: trust-region radii in x = (ln α, ln β, δ, γ) per group; maxfun: evaluations."""

    rhobeg: float = 0.1
    rhoend: float = 1e-4
    maxfun: int = 500

    def __post_init__(self):
        if not 0 < self.rhoend < self.rhobeg:
            raise InputError(f"NEWUOA needs 0 < rhoend < rhobeg (got rhobeg={self.rhobeg}, rhoend={self.rhoend})")
        if self.maxfun < 6:
            raise InputError(f"maxfun must be at least 6 (got {self.maxfun})")


@dataclass
class OptimizationResult:
    """Optimized parameters (per group), their energy (Eh) and every evaluation.

    history: one dict per energy evaluation, in order: ``evaluation`` (1-based),
    ``parameters`` (list per group of [α, β, δ, γ], None for β ≤ 1) and ``energy``
    (Eh, None when the SCF failed).  ``parameters`` is the first group (ngroup = 1).
    """

    groups: list
    energy: float
    start_energy: float
    evaluations: int
    history: list = field(default_factory=list)
    wall_time: float = 0.0
    stop_reason: str = ""

    @property
    def parameters(self):
        return self.groups[0]

    def best_so_far(self):
        """Lowest energy after each evaluation, shape (evaluations,) (NaN before the first success)."""
        out, best = [], math.inf
        for h in self.history:
            if h["energy"] is not None:
                best = min(best, h["energy"])
            out.append(best if best < math.inf else math.nan)
        return np.array(out)

    def to_dict(self):
        """JSON-ready: parameters per group, energies, history."""
        return {"groups": [[p.alpha, p.beta, p.delta, p.gamma] for p in self.groups],
                "energy": self.energy, "start_energy": self.start_energy, "evaluations": self.evaluations,
                "wall_time": self.wall_time, "stop_reason": self.stop_reason, "history": self.history}


def _to_groups(x):
    return [WTBSParameters(alpha=math.exp(x[4 * g]), beta=math.exp(x[4 * g + 1]), delta=float(x[4 * g + 2]),
                           gamma=float(x[4 * g + 3])) for g in range(len(x) // 4)]


_STOP = {1: "success", 2: "stopval reached", 3: "ftol reached", 4: "rhoend reached (xtol)",
         5: "maxfun reached", 6: "maxtime reached"}


def optimize_wtbs(z, start, windows, nucleus, scf_options=None, newuoa=None, shells=None, block_shells=None,
                  open_shells=None, pool_sizes=None, callback=None, active=None, configurations=None):
    """Minimize the SCF energy over the WTBS parameters with NEWUOA.

    z: atomic number; start: WTBSParameters or a list of them (one per group); windows:
    list of :class:`hartree.atom.wtbs.Window` (their ``group`` picks the parameters);
    nucleus, scf_options, shells/block_shells/open_shells/configurations: as for
    :func:`hartree.atom.kernel` (with configurations the weighted average energy is minimized);
    pool_sizes: optional N per group.  callback(entry) after each evaluation, with the
    history entry (dict: evaluation, parameters, energy).  active: indices of the groups to
    optimize (default: all); the others stay at their start values.  Returns an :class:`OptimizationResult` holding the best evaluation.
    """
    try:
        import nlopt   # a dependency of hartree, imported here so that plain SCF runs do not need it
    except ImportError:
        raise InputError("basis-set optimization needs the nlopt package (NEWUOA), which is not installed; "
                         "install it with pip install nlopt") from None

    groups = [start] if isinstance(start, WTBSParameters) else list(start)
    if not groups:
        raise InputError("basis optimization needs starting WTBS parameters")
    used = {w.group for w in windows}
    if used != set(range(len(groups))):
        raise InputError(f"the windows use groups {sorted(g + 1 for g in used)} but {len(groups)} group(s) of "
                         f"starting parameters are given")
    scf_options = scf_options or AtomSCFOptions()
    newuoa = newuoa or NewuoaOptions()
    t0 = time.perf_counter()
    history = []
    best = {"energy": math.inf, "x": None}

    def energy(params):
        try:
            exps = wtbs_exponents(params, windows, pool_sizes)
            return kernel(z, exps, nucleus, scf_options, shells=shells, block_shells=block_shells,
                          open_shells=open_shells, configurations=configurations).energy
        except (ConvergenceError, InputError, np.linalg.LinAlgError, FloatingPointError):
            return None

    def record(x, params, e):
        history.append({"evaluation": len(history) + 1,
                        "parameters": None if params is None else [[p.alpha, p.beta, p.delta, p.gamma]
                                                                   for p in params],
                        "energy": e})
        if e is not None and e < best["energy"]:
            best.update(energy=e, x=np.array(x, dtype=float))
        if callback is not None:
            callback(history[-1])

    def objective(x, grad):
        if any(x[4 * g + 1] <= 0.0 for g in range(len(active))):       # β ≤ 1
            record(x, None, None)
            return float("inf")
        params = full(x)
        e = energy(params)
        record(x, params, e)
        return float("inf") if e is None else e

    active = list(range(len(groups))) if active is None else sorted(set(active))
    if not active or not set(active) <= set(range(len(groups))):
        raise InputError(f"active groups {[g + 1 for g in active]} must be among 1..{len(groups)}")

    def full(x):
        """All groups from the active groups' x (fixed groups keep their start values)."""
        out = list(groups)
        for i, p in zip(active, _to_groups(x)):
            out[i] = p
        return out

    x0 = np.array([v for i in active for v in (math.log(groups[i].alpha), math.log(groups[i].beta),
                                               groups[i].delta, groups[i].gamma)])
    start_energy = energy(groups)
    if start_energy is None:
        raise InputError("the SCF fails at the starting WTBS parameters; give a better starting point")
    record(x0, groups, start_energy)
    opt = nlopt.opt(nlopt.LN_NEWUOA, len(x0))
    opt.set_min_objective(objective)
    opt.set_initial_step(newuoa.rhobeg)
    opt.set_xtol_abs(newuoa.rhoend)
    opt.set_maxeval(max(newuoa.maxfun - 1, 1))      # the start counts as one evaluation
    try:
        opt.optimize(x0)
        reason = _STOP.get(opt.last_optimize_result(), f"nlopt code {opt.last_optimize_result()}")
    except nlopt.RoundoffLimited:
        reason = "roundoff limited"
    except (RuntimeError, ValueError) as exc:                     # nlopt failure: keep the best point
        reason = f"nlopt stopped: {exc}"
    return OptimizationResult(full(best["x"]), float(best["energy"]), float(start_energy), len(history),
                              history, time.perf_counter() - t0, reason)
