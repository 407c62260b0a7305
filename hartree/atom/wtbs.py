"""Well-tempered exponents (Huzinaga and Klobukowski, recursive form) and windows.

A parameter group g has (α, β, δ, γ) — note the thesis' table column order α, β, δ, γ —
and a pool of N exponents

    ζ_1 = α,  ζ_2 = α β,  ζ_k = ζ_{k-1} β [1 + γ (k/N)^δ]   (k = 3..N)     (WTBS)

Each symmetry takes the window start..end (1-based, inclusive) of its group's pool.  A
window belongs to one l and, by default, to both κ symmetries of that l (they then share
their large-component exponents); a window with ``kappa`` set belongs to that κ symmetry
only, so p1/2 and p3/2 (d3/2 and d5/2, ...) may take different windows or groups, as the
thesis' per-symmetry arrays nbs, start, groups allow.  N defaults to the largest window
end of the group.
"""

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .angular import L_LETTERS, Block, l_of_kappa

#: Largest well-tempered pool (exponents per parameter group): the thesis' sets stop
#: below 40; this bound only catches impossible requests (a mistyped count).
MAX_POOL = 500
#: Exponent range (bohr^-2) of a usable pool: the thesis' sets span ~1e-2..1e9 (point
#: nuclei of the heaviest atoms); outside this range integrals over- or underflow.
MIN_EXPONENT, MAX_EXPONENT = 1e-12, 1e16


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
    """Symmetry window: l, 1-based start and end into the pool of group ``group`` (0-based);
    kappa: 0 (both κ of l, the default) or the κ symmetry it belongs to (l = κ or -κ-1)."""

    l: int
    start: int
    end: int
    group: int = 0
    kappa: int = 0

    @property
    def label(self):
        if self.kappa:
            return Block(self.l, self.kappa).label
        return L_LETTERS[self.l] if self.l < len(L_LETTERS) else f"l={self.l}"

    def __post_init__(self):
        if self.kappa and l_of_kappa(self.kappa) != self.l:
            raise InputError(f"window: κ = {self.kappa} does not belong to l = {self.l}")
        name = self.label
        if self.start < 1:
            raise InputError(f"window of {name}: start index {self.start} must be at least 1")
        if self.start > self.end:
            raise InputError(f"window of {name}: start index {self.start} is beyond the end index {self.end}")
        if self.end > MAX_POOL:
            raise InputError(
                f"window of {name} reaches index {self.end}; well-tempered pools have at most {MAX_POOL} exponents"
            )


def wtbs_pool(params, size):
    """The pool ζ_1..ζ_N of eq. (WTBS), shape (N,), bohr^-2."""
    if size < 1:
        raise InputError(f"the WTBS pool needs at least one exponent (got {size})")
    zeta = np.empty(size)
    zeta[0] = params.alpha
    if size > 1:
        zeta[1] = params.alpha * params.beta
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        for k in range(3, size + 1):
            zeta[k - 1] = zeta[k - 2] * params.beta * (1.0 + params.gamma * (k / size) ** params.delta)
    if not (np.all(np.isfinite(zeta)) and np.all(zeta >= MIN_EXPONENT) and np.all(zeta <= MAX_EXPONENT)):
        raise InputError(
            f"WTBS parameters alpha={params.alpha:g}, beta={params.beta:g}, delta={params.delta:g}, "
            f"gamma={params.gamma:g} give exponents outside [{MIN_EXPONENT:g}, "
            f"{MAX_EXPONENT:g}] bohr^-2 (N = {size})"
        )
    return zeta


def wtbs_exponents(groups, windows, pool_sizes=None):
    """Exponents per l (list indexed by l = 0..lmax) from parameter groups and windows.

    groups: list of WTBSParameters; windows: list of Window (per l one window for both κ,
    or one per κ symmetry, in any order); pool_sizes: optional N per group (windows must
    then lie inside the pool).  Entry l is an array (shared by both κ of l) or, where the
    windows are per κ, a pair (exponents of j = l-1/2, of j = l+1/2); see
    :func:`hartree.atom.operators.block_exponents`.
    """
    by_l = {}
    for w in windows:
        if not 0 <= w.group < len(groups):
            raise InputError(
                f"symmetry {w.label} uses group {w.group + 1} but only {len(groups)} "
                f"group(s) of WTBS parameters are given"
            )
        slot = by_l.setdefault(w.l, {})
        if w.kappa in slot or (w.kappa and 0 in slot) or (not w.kappa and slot):
            raise InputError(f"symmetry {w.label} has two windows")
        slot[w.kappa] = w
    lmax = max(by_l)
    missing = [L_LETTERS[l] for l in range(lmax + 1) if l not in by_l]
    if missing:
        raise InputError(
            f"no basis window for symmetry {', '.join(missing)} (every l up to {L_LETTERS[lmax]} needs one)"
        )
    for l, slot in by_l.items():
        if 0 not in slot and (l == 0 and set(slot) != {-1} or l > 0 and set(slot) != {l, -l - 1}):
            need = "s1/2" if l == 0 else f"{Block(l, l).label} and {Block(l, -l - 1).label}"
            raise InputError(f"per-κ windows of l = {l} need both {need}")
    sizes = []
    for g in range(len(groups)):
        ends = [w.end for w in windows if w.group == g]
        size = max(ends) if ends else 0
        if pool_sizes is not None:
            size = pool_sizes[g]
            for w in windows:
                if w.group == g and w.end > size:
                    raise InputError(
                        f"window {w.start}:{w.end} of {w.label} lies outside the pool of group {g + 1} (N = {size})"
                    )
        sizes.append(size)
    pools = [wtbs_pool(p, n) if n else np.empty(0) for p, n in zip(groups, sizes)]

    def take(w):
        return pools[w.group][w.start - 1 : w.end].copy()

    out = []
    for l in range(lmax + 1):
        slot = by_l[l]
        if 0 in slot:
            out.append(take(slot[0]))
        elif l == 0:
            out.append(take(slot[-1]))
        else:
            out.append((take(slot[l]), take(slot[-l - 1])))
    return out


def group_windows(windows, how):
    """Windows with one WTBS group per l ('per-l') or per κ symmetry ('per-kappa': s1/2,
    p1/2, p3/2, d3/2, ... each its own window copy and group), in that order; 'one' returns
    them unchanged.  The windows must not carry groups of their own."""
    if how == "one":
        return list(windows)
    if any(w.group for w in windows):
        raise InputError(f"one group {how} replaces the groups of the windows; give windows without groups")
    out = []
    for w in sorted(windows, key=lambda w: (w.l, -w.kappa if w.kappa else 0)):
        if how == "per-l":
            if w.kappa:
                raise InputError(f"one group per l needs one window per l (got {w.label})")
            out.append(Window(w.l, w.start, w.end, w.l))
        elif how == "per-kappa":
            kappas = [w.kappa] if w.kappa else ([-1] if w.l == 0 else [w.l, -(w.l + 1)])
            out += [Window(w.l, w.start, w.end, len(out) + i, k) for i, k in enumerate(kappas)]
        else:
            raise InputError(f"unknown grouping {how!r}: one, per-l or per-kappa")
    return out


def parse_nbs(text):
    """'s:1:32,p:1:27,d:3:23' -> [Window(0,1,32), Window(1,1,27), Window(2,3,23)].

    An entry may also be 'p:27' (start 1) or carry a group: 's:1:32:2' (1-based group).
    A κ symmetry label instead of l gives a window for that symmetry only:
    'p1/2:3:27,p3/2:1:25' (both κ of the l must then be given).
    """
    windows = []
    for item in str(text).split(","):
        parts = [x.strip() for x in item.strip().split(":")]
        if not parts or not parts[0]:
            continue
        letter = parts[0].lower()
        kappa = 0
        match = re.fullmatch(r"([a-z])(\d+)/2", letter)
        if match and match.group(1) in L_LETTERS:
            l, twoj = L_LETTERS.index(match.group(1)), int(match.group(2))
            if twoj not in (2 * l - 1, 2 * l + 1) or twoj < 1:
                raise InputError(f"--nbs entry '{item.strip()}': {letter} is not a symmetry (j = l ± 1/2)")
            kappa = l if twoj == 2 * l - 1 else -(l + 1)
            letter = match.group(1)
        if letter not in L_LETTERS or len(parts) not in (2, 3, 4):
            raise InputError(f"--nbs entry '{item.strip()}' must look like s:1:32 or p1/2:1:27 (symmetry:start:end)")
        try:
            nums = [int(x) for x in parts[1:]]
        except ValueError:
            raise InputError(f"--nbs entry '{item.strip()}' must use integers for start and end") from None
        start, end = (1, nums[0]) if len(nums) == 1 else (nums[0], nums[1])
        group = nums[2] - 1 if len(nums) == 3 else 0
        windows.append(Window(L_LETTERS.index(letter), start, end, group, kappa))
    if not windows:
        raise InputError("--nbs gives no symmetry windows")
    return windows


def thesis_basis(element):
    """(WTBSParameters, windows) of Table 2.1 of the thesis for an element (symbol or Z)."""
    from .config import SYMBOLS, atomic_number

    symbol = SYMBOLS[atomic_number(element)]
    if symbol not in THESIS_TABLE_2_1:
        raise InputError(
            f"Table 2.1 of the thesis has no basis set for {symbol} "
            f"(it lists {len(THESIS_TABLE_2_1)} elements from He to Rn)"
        )
    _, params, nbs, _ = THESIS_TABLE_2_1[symbol]
    return WTBSParameters(*params), parse_nbs(nbs)


#: Thesis Table 2.1 (seed 000): symbol -> (Z, (alpha, beta, delta, gamma), windows, term).
#: Transcribed as printed (La is marked 'missing' there; Nd's f window '(4.19)' read as 4:19).
THESIS_TABLE_2_1 = {
    "He": (2, (0.0814, 1.953, 4.504, 1.515), "s:1:18", "1S"),
    "Li": (3, (0.01596, 1.933, 5.701, 1.573), "s:1:22", "2S"),
    "Be": (4, (0.02647, 1.938, 5.841, 1.594), "s:1:22", "1S"),
    "B": (5, (0.03238, 1.948, 5.573, 1.523), "s:1:22,p:1:15", "2P"),
    "C": (6, (0.04613, 1.941, 4.717, 1.317), "s:1:23,p:1:15", "3P"),
    "N": (7, (0.05976, 1.923, 5.183, 1.442), "s:1:23,p:1:16", "4S"),
    "O": (8, (0.06967, 1.936, 5.17, 1.426), "s:1:23,p:1:16", "3P"),
    "F": (9, (0.08321, 1.942, 5.084, 1.408), "s:1:23,p:1:16", "2P"),
    "Ne": (10, (0.09943, 1.945, 4.988, 1.392), "s:1:23,p:1:16", "1S"),
    "Na": (11, (0.01696, 1.95, 6.056, 1.469), "s:1:26,p:3:19", "2S"),
    "Mg": (12, (0.02375, 1.932, 5.686, 1.43), "s:1:26,p:3:19", "1S"),
    "Al": (13, (0.02239, 1.898, 5.555, 1.413), "s:1:27,p:1:20", "2P"),
    "Si": (14, (0.03352, 1.921, 5.419, 1.41), "s:1:26,p:1:19", "3P"),
    "P": (15, (0.0441, 1.907, 5.196, 1.39), "s:1:26,p:1:19", "4S"),
    "S": (16, (0.05004, 1.896, 4.962, 1.362), "s:1:26,p:1:19", "3P"),
    "Cl": (17, (0.05831, 1.886, 4.784, 1.344), "s:1:26,p:1:19", "2P"),
    "Ar": (18, (0.06834, 1.878, 4.654, 1.331), "s:1:26,p:1:19", "1S"),
    "K": (19, (0.01392, 1.889, 6.354, 1.523), "s:1:28,p:3:22", "2S"),
    "Ca": (20, (0.01837, 1.874, 6.109, 1.504), "s:1:28,p:3:22", "1S"),
    "Sc": (21, (0.0204, 1.878, 6.16, 1.505), "s:1:28,p:3:22,d:2:16", "2D"),
    "Ti": (22, (0.02218, 1.886, 6.247, 1.508), "s:1:28,p:3:22,d:2:16", "3F"),
    "V": (23, (0.02361, 1.887, 6.573, 1.507), "s:1:29,p:3:23,d:2:16", "4F"),
    "Cr": (24, (0.02345, 1.865, 5.348, 1.407), "s:1:29,p:3:22,d:2:17", "7S"),
    "Mn": (25, (0.02572, 1.865, 5.336, 1.407), "s:1:29,p:3:22,d:2:17", "6S"),
    "Fe": (26, (0.02621, 1.869, 5.301, 1.395), "s:1:29,p:3:22,d:3:17", "5D"),
    "Co": (27, (0.02643, 1.871, 5.905, 1.413), "s:1:29,p:4:23,d:3:17", "4F"),
    "Ni": (28, (0.02882, 1.875, 5.935, 1.413), "s:1:29,p:3:23,d:3:17", "3F"),
    "Cu": (29, (0.02283, 1.857, 5.485, 1.413), "s:1:30,p:4:23,d:3:18", "2S"),
    "Zn": (30, (0.03297, 1.881, 5.817, 1.339), "s:1:30,p:3:24,d:2:17", "1S"),
    "Ga": (31, (0.02742, 1.863, 5.703, 1.462), "s:1:30,p:1:23,d:3:18", "2P"),
    "Ge": (32, (0.03143, 1.848, 5.29, 1.386), "s:1:30,p:1:23,d:4:18", "3P"),
    "As": (33, (0.04728, 1.869, 5.325, 1.34), "s:1:30,p:1:23,d:3:17", "4S"),
    "Se": (34, (0.05087, 1.847, 4.949, 1.533), "s:1:30,p:1:22,d:3:18", "3P"),
    "Br": (35, (0.05927, 1.861, 5.192, 1.333), "s:1:30,p:1:23,d:3:17", "2P"),
    "Kr": (36, (0.06804, 1.859, 5.51, 1.37), "s:1:29,p:1:23,d:3:17", "1S"),
    "Rb": (37, (0.01421, 1.856, 7.181, 1.626), "s:1:30,p:3:25,d:6:21", "2S"),
    "Sr": (38, (0.01808, 1.846, 6.674, 1.553), "s:1:30,p:3:25,d:6:20", "1S"),
    "Y": (39, (0.01997, 1.841, 6.569, 1.543), "s:1:30,p:3:25,d:2:20", "2D"),
    "Zr": (40, (0.02184, 1.837, 6.485, 1.535), "s:1:30,p:3:25,d:2:20", "5F"),
    "Nb": (41, (0.0234, 1.835, 6.434, 1.53), "s:1:30,p:3:25,d:2:20", "6D"),
    "Mo": (42, (0.02537, 1.832, 6.372, 1.524), "s:1:30,p:3:25,d:2:20", "7S"),
    "Tc": (43, (0.02597, 1.836, 6.453, 1.534), "s:1:30,p:3:25,d:2:20", "6S"),
    "Ru": (44, (0.02682, 1.833, 6.788, 1.606), "s:1:30,p:3:25,d:2:21", "5F"),
    "Rh": (45, (0.02751, 1.835, 6.883, 1.62), "s:1:30,p:3:25,d:2:21", "4F"),
    "Pd": (46, (0.05944, 1.827, 5.98, 1.504), "s:1:29,p:2:24,d:1:19", "1S"),
    "Ag": (47, (0.02438, 1.8, 5.521, 1.423), "s:1:31,p:4:25,d:3:21", "2S"),
    "Cd": (48, (0.02911, 1.786, 5.334, 1.408), "s:1:31,p:4:25,d:3:21", "1S"),
    "In": (49, (0.02714, 1.799, 5.54, 1.431), "s:1:31,p:1:25,d:3:21", "2P"),
    "Sn": (50, (0.02884, 1.794, 5.422, 1.415), "s:1:31,p:1:25,d:4:21", "3P"),
    "Sb": (51, (0.04481, 1.815, 6.567, 1.605), "s:1:30,p:1:25,d:3:21", "4S"),
    "Te": (52, (0.04846, 1.817, 6.247, 1.528), "s:1:30,p:1:26,d:3:20", "3P"),
    "I": (53, (0.05369, 1.81, 6.016, 1.505), "s:1:30,p:1:25,d:3:20", "2P"),
    "Xe": (54, (0.05981, 1.802, 5.862, 1.49), "s:1:30,p:1:25,d:3:20", "1S"),
    "Cs": (55, (0.01177, 1.792, 6.485, 1.51), "s:1:33,p:4:28,d:5:23", "2S"),
    "Ba": (56, (0.0156, 1.77, 6.152, 1.518), "s:1:32,p:3:28,d:6:23", "1S"),
    "La": (57, (0.01716, 1.764, 6.067, 1.513), "s:1:32,p:3:28,d:2:23,f:5:14", "2D"),
    "Pr": (59, (0.01696, 1.776, 6.297, 1.533), "s:1:32,p:3:28,d:6:23,f:4:19", "4I"),
    "Nd": (60, (0.01737, 1.778, 6.563, 1.579), "s:1:32,p:3:28,d:6:24,f:4:19", "5I"),
    "Pm": (61, (0.01784, 1.78, 6.615, 1.585), "s:1:32,p:3:28,d:6:24,f:4:19", "6H"),
    "Sm": (62, (0.01857, 1.778, 5.842, 1.464), "s:1:33,p:3:27,d:6:23,f:4:19", "7F"),
    "Eu": (63, (0.01876, 1.784, 6.718, 1.596), "s:1:32,p:3:28,d:6:24,f:4:19", "8S"),
    "Dy": (66, (0.0202, 1.788, 6.543, 1.54), "s:1:33,p:3:28,d:6:23,f:4:19", "5I"),
    "Er": (68, (0.02106, 1.792, 7.029, 1.638), "s:1:32,p:3:28,d:6:24,f:4:20", "3H"),
    "Tm": (69, (0.02152, 1.794, 7.075, 1.643), "s:1:32,p:3:28,d:6:24,f:4:20", "2F"),
    "Lu": (71, (0.02373, 1.79, 7.018, 1.64), "s:1:32,p:3:28,d:2:24,f:4:20", "2D"),
    "Hf": (72, (0.02511, 1.788, 6.963, 1.636), "s:1:32,p:3:28,d:2:24,f:5:20", "3F"),
    "Ta": (73, (0.02684, 1.784, 6.907, 1.633), "s:1:32,p:2:28,d:2:24,f:5:20", "4F"),
    "W": (74, (0.02814, 1.783, 6.889, 1.633), "s:1:32,p:3:28,d:2:24,f:5:20", "5D"),
    "Re": (75, (0.02931, 1.782, 6.886, 1.634), "s:1:32,p:3:28,d:2:24,f:5:20", "6S"),
    "Os": (76, (0.03075, 1.781, 6.896, 1.637), "s:1:32,p:2:29,d:2:24,f:4:20", "5D"),
    "Ir": (77, (0.03195, 1.78, 6.867, 1.635), "s:1:32,p:3:28,d:2:24,f:5:20", "4F"),
    "Pt": (78, (0.03173, 1.785, 7.02, 1.654), "s:1:32,p:3:28,d:2:24,f:5:20", "3D"),
    "Au": (79, (0.0319, 1.791, 6.702, 1.569), "s:1:33,p:4:28,d:2:23,f:5:19", "2S"),
    "Hg": (80, (0.03546, 1.781, 6.691, 1.604), "s:1:32,p:3:28,d:2:23,f:5:20", "1S"),
    "Tl": (81, (0.03241, 1.794, 6.826, 1.561), "s:1:34,p:1:29,d:3:23,f:6:20", "2P"),
    "Pb": (82, (0.03867, 1.778, 6.948, 1.656), "s:1:32,p:1:28,d:3:25,f:6:21", "3P"),
    "Bi": (83, (0.04514, 1.766, 6.158, 1.545), "s:1:32,p:1:27,d:2:24,f:6:19", "4S"),
    "Po": (84, (0.04783, 1.763, 5.977, 1.516), "s:1:32,p:1:27,d:3:23,f:6:19", "3P"),
    "At": (85, (0.0521, 1.757, 5.846, 1.502), "s:1:32,p:1:27,d:3:23,f:6:19", "2P"),
    "Rn": (86, (0.05716, 1.749, 5.695, 1.486), "s:1:32,p:1:27,d:3:23,f:6:19", "1S"),
}
