"""Well-tempered exponents (Huzinaga and Klobukowski, recursive form) and windows.

A parameter group g has (α, β, δ, γ) — note the thesis' table column order α, β, δ, γ —
and a pool of N exponents

    ζ_1 = α,  ζ_2 = α β,  ζ_k = ζ_{k-1} β [1 + γ (k/N)^δ]   (k = 3..N)     (WTBS)

Each symmetry (one per l: the two κ of an l share their large-component exponents)
takes the window start..end (1-based, inclusive) of its group's pool.  N defaults to the
largest window end of the group.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .angular import L_LETTERS


@dataclass(frozen=True)
class WTBSParameters:
    """One parameter group: α (bohr^-2), β, δ, γ (dimensionless)."""

    alpha: float
    beta: float
    delta: float
    gamma: float

    def __post_init__(self):
        if not self.alpha > 0 or not self.beta > 1:
            raise InputError(f"WTBS parameters need alpha > 0 and beta > 1 (got alpha={self.alpha}, beta={self.beta})")


@dataclass(frozen=True)
class Window:
    """Symmetry window: l, 1-based start and end into the pool of group ``group`` (0-based)."""

    l: int
    start: int
    end: int
    group: int = 0

    def __post_init__(self):
        name = L_LETTERS[self.l] if self.l < len(L_LETTERS) else f"l={self.l}"
        if self.start < 1:
            raise InputError(f"window of {name}: start index {self.start} must be at least 1")
        if self.start > self.end:
            raise InputError(f"window of {name}: start index {self.start} is beyond the end index {self.end}")


def wtbs_pool(params, size):
    """The pool ζ_1..ζ_N of eq. (WTBS), shape (N,), bohr^-2."""
    if size < 1:
        raise InputError(f"the WTBS pool needs at least one exponent (got {size})")
    zeta = np.empty(size)
    zeta[0] = params.alpha
    if size > 1:
        zeta[1] = params.alpha * params.beta
    for k in range(3, size + 1):
        zeta[k - 1] = zeta[k - 2] * params.beta * (1.0 + params.gamma * (k / size) ** params.delta)
    return zeta


def wtbs_exponents(groups, windows, pool_sizes=None):
    """Exponents per l (list indexed by l = 0..lmax) from parameter groups and windows.

    groups: list of WTBSParameters; windows: list of Window (one per l, l = 0..lmax, in any
    order); pool_sizes: optional N per group (windows must then lie inside the pool).
    """
    by_l = {}
    for w in windows:
        if w.l in by_l:
            raise InputError(f"symmetry {L_LETTERS[w.l]} has two windows")
        if not 0 <= w.group < len(groups):
            raise InputError(f"symmetry {L_LETTERS[w.l]} uses group {w.group + 1} but only {len(groups)} "
                             f"group(s) of WTBS parameters are given")
        by_l[w.l] = w
    lmax = max(by_l)
    missing = [L_LETTERS[l] for l in range(lmax + 1) if l not in by_l]
    if missing:
        raise InputError(f"no basis window for symmetry {', '.join(missing)} "
                         f"(every l up to {L_LETTERS[lmax]} needs one)")
    sizes = []
    for g in range(len(groups)):
        ends = [w.end for w in windows if w.group == g]
        size = max(ends) if ends else 0
        if pool_sizes is not None:
            size = pool_sizes[g]
            for w in windows:
                if w.group == g and w.end > size:
                    raise InputError(f"window {w.start}:{w.end} of {L_LETTERS[w.l]} lies outside the pool "
                                     f"of group {g + 1} (N = {size})")
        sizes.append(size)
    pools = [wtbs_pool(p, n) if n else np.empty(0) for p, n in zip(groups, sizes)]
    return [pools[by_l[l].group][by_l[l].start - 1:by_l[l].end].copy() for l in range(lmax + 1)]


def parse_nbs(text):
    """'s:1:32,p:1:27,d:3:23' -> [Window(0,1,32), Window(1,1,27), Window(2,3,23)].

    An entry may also be 'p:27' (start 1) or carry a group: 's:1:32:2' (1-based group).
    """
    windows = []
    for item in str(text).split(","):
        parts = [x.strip() for x in item.strip().split(":")]
        if not parts or not parts[0]:
            continue
        letter = parts[0].lower()
        if letter not in L_LETTERS or len(parts) not in (2, 3, 4):
            raise InputError(f"--nbs entry '{item.strip()}' must look like s:1:32 (symmetry:start:end)")
        try:
            nums = [int(x) for x in parts[1:]]
        except ValueError:
            raise InputError(f"--nbs entry '{item.strip()}' must use integers for start and end") from None
        start, end = (1, nums[0]) if len(nums) == 1 else (nums[0], nums[1])
        group = nums[2] - 1 if len(nums) == 3 else 0
        windows.append(Window(L_LETTERS.index(letter), start, end, group))
    if not windows:
        raise InputError("--nbs gives no symmetry windows")
    return windows
