"""Electron configurations: closed shells and at most one open shell per symmetry block.

The default configuration fills subshells in Madelung (n+l, n) order (no exceptions such
as Cr 3d5 4s1: give those explicitly).  Relativistically an nl subshell splits into
l-1/2 (2l electrons) and l+1/2 (2l+2), filled in that order (jj aufbau), e.g. C = ...2p1/2^2
(closed), N = ...2p1/2^2 2p3/2^1.
"""

from ..errors import InputError
from .angular import L_LETTERS

SYMBOLS = (
    "X H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn "
    "Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr "
    "Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn"
).split()


def atomic_number(symbol):
    """Z for an element symbol (case-insensitive) or a number given as text."""
    text = str(symbol).strip()
    if text.isdigit():
        z = int(text)
        if 1 <= z < len(SYMBOLS):
            return z
    else:
        for z, s in enumerate(SYMBOLS):
            if z and s.lower() == text.lower():
                return z
    raise InputError(f"unknown element '{symbol}' (supported: H to Rn)")


def madelung_subshells(max_n=7):
    """(n, l) in the aufbau order."""
    shells = [(n, l) for n in range(1, max_n + 1) for l in range(0, min(n, 4))]
    return sorted(shells, key=lambda nl: (nl[0] + nl[1], nl[0]))


def configuration(z, charge=0, relativistic=False):
    """Per symmetry block (order of :func:`hartree.atom.angular.blocks_for`): (closed, open q).

    closed: number of full radial shells; q: electrons in the one open shell (0: none).
    """
    left = z - charge
    if left < 0:
        raise InputError(f"charge {charge} leaves fewer than zero electrons")
    filled = []  # (l, electrons) in aufbau order
    for _n, l in madelung_subshells():
        if left == 0:
            break
        m = min(left, 2 * (2 * l + 1))
        filled.append((l, m))
        left -= m
    lmax = max(l for l, _ in filled) if filled else 0
    if not relativistic:
        caps = [(l, 2 * (2 * l + 1)) for l in range(lmax + 1)]
        parts = [(l, l, m) for l, m in filled]
    else:
        caps = [(0, 2)]
        for l in range(1, lmax + 1):
            caps += [(l, 2 * l), (l, 2 * l + 2)]
        parts = []
        for l, m in filled:
            if l == 0:
                parts.append((0, 0, m))
            else:
                low = min(m, 2 * l)
                parts.append((l, "low", low))
                parts.append((l, "high", m - low))
    out = []
    for _ib, (l, cap) in enumerate(caps):
        if relativistic and l > 0:
            tag = "low" if cap == 2 * l else "high"
            ms = [m for ll, t, m in parts if ll == l and t == tag]
        else:
            ms = [m for ll, _, m in parts if ll == l]
        closed = sum(1 for m in ms if m == cap)
        open_q = [m for m in ms if 0 < m < cap]
        out.append((closed, float(open_q[0]) if open_q else 0.0))
    return out


def closed_shells(z, charge=0):
    """Number of closed radial shells per l, e.g. Ne -> [2, 1]; InputError if open-shell."""
    left = z - charge
    if left < 0:
        raise InputError(f"charge {charge} leaves fewer than zero electrons")
    count = {}
    for n, l in madelung_subshells():
        if left == 0:
            break
        cap = 2 * (2 * l + 1)
        if left < cap:
            raise InputError(
                f"Z={z} with charge {charge} has an open {n}{L_LETTERS[l]} subshell "
                f"({left} of {cap} electrons); open shells are not supported yet"
            )
        left -= cap
        count[l] = count.get(l, 0) + 1
    lmax = max(count) if count else 0
    return [count.get(l, 0) for l in range(lmax + 1)]


def parse_occupations(text, relativistic):
    """'s1/2:2,p1/2:1,p3/2:0+1' -> (closed per block, open q per block) in block order.

    Each entry is LABEL:NCLOSED or LABEL:NCLOSED+Q (Q electrons in one open shell above the
    closed ones); labels are s, p, d, f nonrelativistically and s1/2, p1/2, p3/2, ... for
    Dirac-Fock.  Blocks not listed are empty.
    """
    from .angular import blocks_for

    entries = {}
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        label, _, value = item.partition(":")
        label = label.strip().lower()
        try:
            closed_text, _, open_text = value.partition("+")
            closed, q = int(closed_text), float(open_text) if open_text else 0.0
        except ValueError:
            raise InputError(
                f"--occupations entry '{item}' must look like p3/2:0+1 (closed shells + open electrons)"
            ) from None
        if label in entries:
            raise InputError(f"--occupations lists {label} twice")
        entries[label] = (closed, q)
    if not entries:
        raise InputError("--occupations is empty")
    blocks = blocks_for(6, relativistic)
    labels = [b.label for b in blocks]
    for label in entries:
        if label not in labels:
            raise InputError(f"--occupations: unknown symmetry '{label}' (use " + ", ".join(labels[:7]) + ")")
    last = max(labels.index(label) for label in entries)
    pattern = [entries.get(label, (0, 0.0)) for label in labels[: last + 1]]
    return [n for n, _ in pattern], [q for _, q in pattern]


def jj_configurations(z, charge=0):
    """Dirac-Fock configurations of the ground nonrelativistic configuration (``autogen``).

    The open subshell nl^q (Madelung order) splits into nl_{l-1/2}^a nl_{l+1/2}^{q-a}
    (capacities 2l and 2l+2); every a allowed by the capacities is one configuration with
    the weight of its share of the nl^q determinants,

        w(a) = C(2l, a) C(2l+2, q-a) / C(4l+2, q)          (Σ_a w(a) = 1, Vandermonde),

    the weights with which the average over jj configurations equals the nonrelativistic
    average of configuration.  Returns [(pattern, weight, label)], pattern as for
    :func:`configuration` (relativistic), label e.g. '2p1/2^1 2p3/2^2'.  A closed-shell
    atom, or an open s shell, gives one configuration of weight 1.
    """
    from math import comb

    base = configuration(z, charge, relativistic=True)
    left = z - charge
    open_nl = None
    for n, l in madelung_subshells():
        if left == 0:
            break
        cap = 2 * (2 * l + 1)
        if left < cap:
            open_nl = (n, l, left)
        left -= min(left, cap)
    if open_nl is None or open_nl[1] == 0:
        return [(base, 1.0, "closed shells" if open_nl is None else f"{open_nl[0]}s1/2^{open_nl[2]}")]
    n, l, q = open_nl
    low, high = 2 * l, 2 * l + 2
    # block indices of l in the relativistic order s1/2, p1/2, p3/2, d3/2, d5/2, ...
    ib_low, ib_high = 2 * l - 1, 2 * l
    # closed shells of l below the open subshell (the base pattern fills l-1/2 first)
    filled_low = base[ib_low][0] - (1 if min(q, low) == low else 0)
    filled_high = base[ib_high][0]
    out = []
    for a in range(max(0, q - high), min(q, low) + 1):
        b = q - a
        pattern = list(base)
        pattern[ib_low] = (filled_low + (a == low), float(a) if 0 < a < low else 0.0)
        pattern[ib_high] = (filled_high + (b == high), float(b) if 0 < b < high else 0.0)
        weight = comb(low, a) * comb(high, b) / comb(low + high, q)
        j = f"{2 * l - 1}/2", f"{2 * l + 1}/2"
        label = " ".join(f"{n}{L_LETTERS[l]}{jj}^{k}" for jj, k in zip(j, (a, b)) if k)
        out.append((pattern, weight, label))
    return out


def average_level(blocks, configurations):
    """Couplings of one set of orbitals for several configurations (extended average level).

    The energy minimized is Σ_K w_K E_K (weights normalized), E_K the average-of-configuration
    energy of configuration K (:mod:`hartree.atom.scf`, eq. AOC) evaluated with orbitals
    common to all K.  Per block b the configurations may differ only in the occupation o_b^K
    of one shell (the first above the closed shells common to all of them).  With
    q̄_b = Σ w o_b, m_bb = Σ w o_b (o_b − 1), m_ab = Σ w o_a o_b:

        E = E_closed(D_T with q̄) + Σ_b (λ_b/2) tr(G_bb[D_Ob] D_Ob) + Σ_{a<b} μ_ab tr(G[D_Ob] D_Oa)
        λ_b = g m_bb / ((g − 1) q̄_b²) − 1,    μ_ab = m_ab / (q̄_a q̄_b) − 1

    (for one configuration λ = (q − g)/(q (g − 1)) and μ = 0: eq. AOC).  configurations:
    [(block_shells, open_shells, weight, ...)] per block in κ order (shorter lists mean empty
    blocks).  Returns (pattern [(closed, q̄)] per block, λ (nblock,), μ (nblock, nblock),
    o (K, nblock) the open-shell occupation of each configuration).
    """
    import numpy as np

    nb = len(blocks)
    if not configurations:
        raise InputError("average_level needs at least one configuration")
    weights = np.array([float(c[2]) for c in configurations])
    if np.any(weights < 0) or not weights.sum() > 0:
        raise InputError("configuration weights must be non-negative with a positive sum")
    weights = weights / weights.sum()
    closed = np.zeros((len(configurations), nb), dtype=int)
    opened = np.zeros((len(configurations), nb))
    for k, conf in enumerate(configurations):
        shells, opens = list(conf[0]), list(conf[1])
        if any(shells[nb:]) or any(opens[nb:]):
            raise InputError("a configuration occupies symmetries beyond the largest l of the basis")
        closed[k, : min(nb, len(shells))] = shells[:nb]
        opened[k, : min(nb, len(opens))] = opens[:nb]
    base = closed.min(axis=0)
    g = np.array([b.degeneracy for b in blocks], dtype=float)
    occ = (closed - base) * g + opened
    for k in range(len(configurations)):
        for b in range(nb):
            extra = closed[k, b] - base[b]
            if extra > 1 or (extra == 1 and opened[k, b] > 0) or not 0 <= occ[k, b] <= g[b]:
                raise InputError(
                    f"configuration {k + 1} differs from the others in more than one "
                    f"{blocks[b].label} shell; one set of orbitals averages one open shell "
                    f"per symmetry"
                )
    qbar = weights @ occ
    lam, mu = np.zeros(nb), np.zeros((nb, nb))
    pattern = []
    for b in range(nb):
        if qbar[b] >= g[b] - 1e-12:
            pattern.append((int(base[b]) + 1, 0.0))
        elif qbar[b] <= 1e-12:
            pattern.append((int(base[b]), 0.0))
        else:
            pattern.append((int(base[b]), float(qbar[b])))
            m = weights @ (occ[:, b] * (occ[:, b] - 1.0))
            lam[b] = g[b] * m / ((g[b] - 1.0) * qbar[b] ** 2) - 1.0
    open_b = [b for b in range(nb) if pattern[b][1] > 0]
    for a in open_b:
        for b in open_b:
            if a != b:
                mu[a, b] = weights @ (occ[:, a] * occ[:, b]) / (qbar[a] * qbar[b]) - 1.0
    return pattern, lam, mu, occ
