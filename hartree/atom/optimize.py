"""WTBS basis-set optimization with NEWUOA (thesis §3.5 $newuoa, jobtype='bsopt').

The energy E(α_g, β_g, δ_g, γ_g; g = 1..ngroup) of one element with fixed windows is
minimized by Powell's NEWUOA (nlopt's LN_NEWUOA).  NEWUOA works on
x = (ln α_1, ln β_1, δ_1, γ_1, ln α_2, ...) so that a trust region of size ρ means a
relative change of ρ in α and β; ``rhobeg``/``rhoend`` are the initial and final
trust-region radii in x and ``maxfun`` the largest number of energy evaluations — the
meaning of the thesis' $newuoa keys (NEWUOA's RHOBEG, RHOEND, MAXFUN).  Failed SCFs and
invalid parameters (β ≤ 1) count as +∞ energy for the optimizer (so that it steps back)
and are recorded in the history with energy None.  The result is the best evaluation.

:func:`optimize_exponents` does the same over free exponents (the thesis' bastype 'rdin'
sets): x = ln ζ of every exponent of chosen symmetries, the function counts fixed.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConvergenceError, InputError
from .angular import L_LETTERS, blocks_for
from .operators import block_exponents
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
        return {
            "groups": [[p.alpha, p.beta, p.delta, p.gamma] for p in self.groups],
            "energy": self.energy,
            "start_energy": self.start_energy,
            "evaluations": self.evaluations,
            "wall_time": self.wall_time,
            "stop_reason": self.stop_reason,
            "history": self.history,
        }


def _to_groups(x):
    return [
        WTBSParameters(
            alpha=math.exp(x[4 * g]), beta=math.exp(x[4 * g + 1]), delta=float(x[4 * g + 2]), gamma=float(x[4 * g + 3])
        )
        for g in range(len(x) // 4)
    ]


_STOP = {
    1: "success",
    2: "stopval reached",
    3: "ftol reached",
    4: "rhoend reached (xtol)",
    5: "maxfun reached",
    6: "maxtime reached",
}


def _nlopt():
    """The nlopt module (a dependency of hartree, imported on use so that plain SCF runs do not need it)."""
    try:
        import nlopt
    except ImportError:
        raise InputError(
            "basis-set optimization needs the nlopt package (NEWUOA), which is not installed; "
            "install it with pip install nlopt"
        ) from None
    return nlopt


def _energy_or_none(make_exponents, z, nucleus, scf_options, **shells):
    """SCF energy (Eh) for the exponents make_exponents() returns, or None when they are
    rejected (InputError) or the SCF fails: the optimizers count that as +inf."""
    try:
        return kernel(z, make_exponents(), nucleus, scf_options, **shells).energy
    except (ConvergenceError, InputError, np.linalg.LinAlgError, FloatingPointError):
        return None


class _EvaluationLog:
    """The optimizers' record of evaluations: ``history`` (one dict per evaluation:
    ``evaluation`` (1-based), the point under its own key, ``energy`` in Eh or None) and
    ``best`` (dict: lowest ``energy`` and its NEWUOA variables ``x``); callback(entry) after each."""

    def __init__(self, callback=None):
        self.history = []
        self.best = {"energy": math.inf, "x": None}
        self.callback = callback

    def add(self, x, key, point, energy):
        self.history.append({"evaluation": len(self.history) + 1, key: point, "energy": energy})
        if energy is not None and energy < self.best["energy"]:
            self.best.update(energy=energy, x=np.array(x, dtype=float))
        if self.callback is not None:
            self.callback(self.history[-1])


def _run_newuoa(objective, x0, newuoa):
    """Minimize objective(x, grad) from x0 (shape (n,), n ≥ 2) with NEWUOA; the start has been
    evaluated already (it counts as one of ``newuoa.maxfun``).  Returns the stop reason; the
    caller keeps the best point through its objective."""
    nlopt = _nlopt()
    opt = nlopt.opt(nlopt.LN_NEWUOA, len(x0))
    opt.set_min_objective(objective)
    opt.set_initial_step(newuoa.rhobeg)
    opt.set_xtol_abs(newuoa.rhoend)
    opt.set_maxeval(max(newuoa.maxfun - 1, 1))  # the start counts as one evaluation
    try:
        opt.optimize(np.asarray(x0, dtype=float))
        return _STOP.get(opt.last_optimize_result(), f"nlopt code {opt.last_optimize_result()}")
    except nlopt.RoundoffLimited:
        return "roundoff limited"
    except (RuntimeError, ValueError) as exc:  # nlopt failure: keep the best point
        return f"nlopt stopped: {exc}"


def optimize_wtbs(
    z,
    start,
    windows,
    nucleus,
    scf_options=None,
    newuoa=None,
    shells=None,
    block_shells=None,
    open_shells=None,
    pool_sizes=None,
    callback=None,
    active=None,
    configurations=None,
):
    """Minimize the SCF energy over the WTBS parameters with NEWUOA.

    z: atomic number; start: WTBSParameters or a list of them (one per group); windows:
    list of :class:`hartree.atom.wtbs.Window` (their ``group`` picks the parameters);
    nucleus, scf_options, shells/block_shells/open_shells/configurations: as for
    :func:`hartree.atom.kernel` (with configurations the weighted average energy is minimized);
    pool_sizes: optional N per group.  callback(entry) after each evaluation, with the
    history entry (dict: evaluation, parameters, energy).  active: indices of the groups to
    optimize (default: all); the others stay at their start values.  Returns an
    :class:`OptimizationResult` holding the best evaluation.
    """
    _nlopt()
    groups = [start] if isinstance(start, WTBSParameters) else list(start)
    if not groups:
        raise InputError("basis optimization needs starting WTBS parameters")
    used = {w.group for w in windows}
    if used != set(range(len(groups))):
        raise InputError(
            f"the windows use groups {sorted(g + 1 for g in used)} but {len(groups)} group(s) of "
            f"starting parameters are given"
        )
    scf_options = scf_options or AtomSCFOptions()
    newuoa = newuoa or NewuoaOptions()
    t0 = time.perf_counter()
    log = _EvaluationLog(callback)
    history, best = log.history, log.best

    def energy(params):
        return _energy_or_none(
            lambda: wtbs_exponents(params, windows, pool_sizes),
            z,
            nucleus,
            scf_options,
            shells=shells,
            block_shells=block_shells,
            open_shells=open_shells,
            configurations=configurations,
        )

    def record(x, params, e):
        log.add(x, "parameters", None if params is None else [[p.alpha, p.beta, p.delta, p.gamma] for p in params], e)

    def objective(x, grad):
        if any(x[4 * g + 1] <= 0.0 for g in range(len(active))):  # β ≤ 1
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

    x0 = np.array(
        [
            v
            for i in active
            for v in (math.log(groups[i].alpha), math.log(groups[i].beta), groups[i].delta, groups[i].gamma)
        ]
    )
    start_energy = energy(groups)
    if start_energy is None:
        raise InputError("the SCF fails at the starting WTBS parameters; give a better starting point")
    record(x0, groups, start_energy)
    reason = _run_newuoa(objective, x0, newuoa)
    return OptimizationResult(
        full(best["x"]),
        float(best["energy"]),
        float(start_energy),
        len(history),
        history,
        time.perf_counter() - t0,
        reason,
    )


# ---------------------------------------------------------------------------------------------
# Free exponents ("bastype rdin"): NEWUOA over ln ζ of chosen symmetries, function counts fixed


def symmetry_exponents(exponents, relativistic=True):
    """Exponents per symmetry block: dict label -> 1-D array (bohr^-2), in the κ order of
    :func:`hartree.atom.angular.blocks_for` ('s1/2', 'p1/2', 'p3/2', ... or 's', 'p', ...).

    exponents: per l as for :func:`hartree.atom.kernel` (a list, or a pair of lists for
    j = l-1/2 and j = l+1/2)."""
    blocks, arrays = block_exponents(exponents, relativistic)
    return {b.label: a.copy() for b, a in zip(blocks, arrays)}


def exponents_per_l(by_symmetry, relativistic=True):
    """The inverse of :func:`symmetry_exponents`: per l the kernel's entry (one list, or for
    Dirac-Fock and l ≥ 1 the pair (j = l-1/2, j = l+1/2)).  by_symmetry: dict label -> exponents
    (bohr^-2) holding every symmetry block up to the largest l."""
    lmax = max(_label_l(k) for k in by_symmetry)
    out = []
    for l in range(lmax + 1):
        names = [b.label for b in blocks_for(l, relativistic) if b.l == l]
        missing = [n for n in names if n not in by_symmetry]
        if missing:
            raise InputError(f"no exponents for symmetry {', '.join(missing)}")
        arrays = [np.array(by_symmetry[n], dtype=float) for n in names]
        out.append(arrays[0] if len(arrays) == 1 else tuple(arrays))
    unknown = set(by_symmetry) - {b.label for b in blocks_for(lmax, relativistic)}
    if unknown:
        raise InputError(
            f"unknown symmetries {sorted(unknown)} (Dirac-Fock: s1/2, p1/2, p3/2, ...; nonrelativistic: s, p, ...)"
        )
    return out


def _label_l(label):
    letter = str(label)[:1].lower()
    if letter not in L_LETTERS:
        raise InputError(f"unknown symmetry {label!r} (Dirac-Fock: s1/2, p1/2, p3/2, ...; nonrelativistic: s, p, ...)")
    return L_LETTERS.index(letter)


@dataclass
class FreeExponentResult:
    """Best exponents found, their energy (Eh) and every evaluation.

    exponents: dict symmetry label -> list of exponents (bohr^-2), every symmetry (the fixed
    ones as given), in the order of the start lists.  ``per_l`` gives them in the format of
    :func:`hartree.atom.kernel`.  history: one dict per evaluation, in order: ``evaluation``
    (1-based), ``exponents`` (dict label -> list of the *active* symmetries; None for a point
    that was rejected before the SCF) and ``energy`` (Eh, None when rejected or the SCF failed).
    """

    exponents: dict
    energy: float
    start_energy: float
    evaluations: int
    active: list
    relativistic: bool = True
    history: list = field(default_factory=list)
    wall_time: float = 0.0
    stop_reason: str = ""

    @property
    def per_l(self):
        return exponents_per_l(self.exponents, self.relativistic)

    def to_dict(self):
        """JSON-ready: exponents per symmetry, energies, history."""
        return {
            "exponents": {k: list(v) for k, v in self.exponents.items()},
            "energy": self.energy,
            "start_energy": self.start_energy,
            "evaluations": self.evaluations,
            "active": self.active,
            "wall_time": self.wall_time,
            "stop_reason": self.stop_reason,
            "history": self.history,
        }


def optimize_exponents(
    z,
    start,
    nucleus,
    scf_options=None,
    newuoa=None,
    active=None,
    shells=None,
    block_shells=None,
    open_shells=None,
    configurations=None,
    callback=None,
    min_ratio=1.05,
):
    """Minimize the SCF energy over free exponents of chosen symmetries with NEWUOA.

    The variables are x = ln ζ of every exponent of the ``active`` symmetries (so a trust
    region ρ is a relative change ρ of each exponent; ``newuoa`` as for :func:`optimize_wtbs`);
    the other symmetries keep their start exponents and no symmetry gains or loses a function.

    z: atomic number; start: exponents per l as for :func:`hartree.atom.kernel` (lists, or
    pairs (j = l-1/2, j = l+1/2)) or a dict symmetry label -> list (bohr^-2); for Dirac-Fock
    every l ≥ 1 is split into its two κ symmetries, which may then differ.  active: symmetry
    labels to optimize ('p1/2', 's1/2', ... or 's', 'p' nonrelativistically; default all).
    nucleus, scf_options, shells, block_shells, open_shells, configurations: as for kernel.
    callback(entry) after each evaluation with its history entry.  min_ratio: a point where two
    exponents of one active symmetry come closer than this ratio (near linear dependence) is
    rejected (+∞ for NEWUOA, energy None in the history), as is an SCF that fails.  Needs at
    least 2 variables.  Returns a :class:`FreeExponentResult` holding the best evaluation.
    """
    _nlopt()
    scf_options = scf_options or AtomSCFOptions()
    newuoa = newuoa or NewuoaOptions()
    rel = scf_options.relativistic
    if isinstance(start, dict):
        start = exponents_per_l(start, rel)
    fixed = symmetry_exponents(start, rel)
    for label, arr in fixed.items():
        if not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
            raise InputError(f"symmetry {label}: exponents must be positive finite numbers")
    labels = list(fixed)
    active = labels if active is None else list(dict.fromkeys(str(a) for a in active))
    if not active or not set(active) <= set(labels):
        raise InputError(f"active symmetries {active} must be among {labels}")
    if not min_ratio >= 1.0:
        raise InputError(f"min_ratio must be at least 1 (got {min_ratio})")
    sizes = [len(fixed[a]) for a in active]
    if sum(sizes) < 2:
        raise InputError("NEWUOA needs at least 2 free exponents; activate more symmetries")
    for a in active:
        if _too_close(fixed[a], min_ratio):
            raise InputError(f"symmetry {a}: two start exponents are closer than the ratio {min_ratio}")
    t0 = time.perf_counter()
    log = _EvaluationLog(callback)
    history, best = log.history, log.best

    def split(x):
        """dict label -> exponents (bohr^-2) of the active symmetries from x = ln ζ."""
        out, k = {}, 0
        for a, n in zip(active, sizes):
            out[a] = np.exp(np.asarray(x[k : k + n], dtype=float))
            k += n
        return out

    def energy(free):
        return _energy_or_none(
            lambda: exponents_per_l(dict(fixed, **free), rel),
            z,
            nucleus,
            scf_options,
            shells=shells,
            block_shells=block_shells,
            open_shells=open_shells,
            configurations=configurations,
        )

    def record(x, free, e):
        log.add(x, "exponents", None if free is None else {a: v.tolist() for a, v in free.items()}, e)

    def objective(x, grad):
        free = split(x)
        if any(not np.all(np.isfinite(v)) or _too_close(v, min_ratio) for v in free.values()):
            record(x, None, None)
            return float("inf")
        e = energy(free)
        record(x, free, e)
        return float("inf") if e is None else e

    x0 = np.concatenate([np.log(fixed[a]) for a in active])
    start_energy = energy(split(x0))
    if start_energy is None:
        raise InputError("the SCF fails at the starting exponents; give a better starting point")
    record(x0, split(x0), start_energy)
    reason = _run_newuoa(objective, x0, newuoa)
    out = dict(fixed, **split(best["x"]))
    return FreeExponentResult(
        {k: v.tolist() for k, v in out.items()},
        float(best["energy"]),
        float(start_energy),
        len(history),
        active,
        rel,
        history,
        time.perf_counter() - t0,
        reason,
    )


def _too_close(zeta, min_ratio):
    """True when two exponents (1-D array) lie closer than the ratio min_ratio."""
    s = np.sort(zeta)
    return len(s) > 1 and bool(np.any(s[1:] < s[:-1] * min_ratio))
