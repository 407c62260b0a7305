"""Symmetry blocks of an atom and the angular coupling of closed/average shells.

Nonrelativistic blocks are l = 0, 1, 2, ... (s, p, d, f, g), each radial orbital holding
q = 2(2l+1) electrons.  Relativistic blocks are κ symmetries in the order
s1/2 (κ=-1), p1/2 (κ=1), p3/2 (κ=-2), d3/2 (2), d5/2 (-3), f5/2 (3), f7/2 (-4), ...,
j = |κ| - 1/2, l = κ if κ > 0 else -κ-1, a closed shell holds q = 2j+1 electrons.

Closed-shell (and, later, average-of-configuration) energy of the radial orbitals a, b
with occupations q_a:

    E = Σ_a q_a h_aa + ½ Σ_ab q_a q_b [F^0(ab) - Σ_k c_k(a, b) G^k(ab)]

with  c_k = ½ (l_a k l_b; 0 0 0)²  nonrelativistically and
      c_k = (j_a k j_b; ½ 0 -½)² · [l_a + l_b + k even]  for Dirac-Fock
(Grant, *Relativistic Quantum Theory of Atoms and Molecules*, eq. 6.5.x; the
same-shell terms fold into the same sum because (j 0 j; ½ 0 -½)² = 1/(2j+1)).
"""

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

L_LETTERS = "spdfghi"


@dataclass(frozen=True)
class Block:
    """One symmetry block: orbital angular momentum l, κ (0 for nonrelativistic), label."""

    l: int
    kappa: int = 0

    @property
    def relativistic(self):
        return self.kappa != 0

    @property
    def twoj(self):
        """2j (relativistic) or -1 (nonrelativistic)."""
        return 2 * abs(self.kappa) - 1 if self.kappa else -1

    @property
    def degeneracy(self):
        """Electrons in a closed shell of this block: 2j+1, or 2(2l+1) nonrelativistically."""
        return 2 * abs(self.kappa) if self.kappa else 2 * (2 * self.l + 1)

    @property
    def label(self):
        if not self.kappa:
            return L_LETTERS[self.l]
        return f"{L_LETTERS[self.l]}{self.twoj}/2"


def l_of_kappa(kappa):
    return kappa if kappa > 0 else -kappa - 1


def blocks_for(lmax, relativistic):
    """The symmetry blocks for l = 0..lmax in the canonical order (see module docstring)."""
    if not relativistic:
        return tuple(Block(l) for l in range(lmax + 1))
    out = [Block(0, -1)]
    for l in range(1, lmax + 1):
        out += [Block(l, l), Block(l, -(l + 1))]
    return tuple(out)


def _fact(n):
    return math.factorial(n)


@cache
def wigner3j(tj1, tj2, tj3, tm1, tm2, tm3):
    """Wigner 3j symbol with all arguments doubled (integers), exact Racah formula."""
    if tm1 + tm2 + tm3 != 0:
        return 0.0
    if (tj1 + tj2 + tj3) % 2 or tj3 > tj1 + tj2 or tj3 < abs(tj1 - tj2):
        return 0.0
    if abs(tm1) > tj1 or abs(tm2) > tj2 or abs(tm3) > tj3:
        return 0.0
    if (tj1 + tm1) % 2 or (tj2 + tm2) % 2 or (tj3 + tm3) % 2:
        return 0.0
    a = (tj1 + tj2 - tj3) // 2
    b = (tj1 - tj2 + tj3) // 2
    c = (-tj1 + tj2 + tj3) // 2
    tri = Fraction(_fact(a) * _fact(b) * _fact(c), _fact((tj1 + tj2 + tj3) // 2 + 1))
    pre = (
        tri
        * _fact((tj1 + tm1) // 2)
        * _fact((tj1 - tm1) // 2)
        * _fact((tj2 + tm2) // 2)
        * _fact((tj2 - tm2) // 2)
        * _fact((tj3 + tm3) // 2)
        * _fact((tj3 - tm3) // 2)
    )
    total = Fraction(0)
    for t in range(0, a + b + c + 1):
        d = [
            t,
            (tj3 - tj2 + tm1) // 2 + t,
            (tj3 - tj1 - tm2) // 2 + t,
            a - t,
            (tj1 - tm1) // 2 - t,
            (tj2 + tm2) // 2 - t,
        ]
        if min(d) < 0:
            continue
        den = 1
        for x in d:
            den *= _fact(x)
        total += Fraction((-1) ** t, den)
    sign = -1 if ((tj1 - tj2 - tm3) // 2) % 2 else 1
    return sign * math.sqrt(float(pre)) * float(total)


def exchange_coefficients(b1, b2):
    """[(k, c_k)] for the exchange between two blocks (module docstring), c_k > 0 only."""
    out = []
    if not b1.relativistic:
        for k in range(abs(b1.l - b2.l), b1.l + b2.l + 1, 2):
            c = 0.5 * wigner3j(2 * b1.l, 2 * k, 2 * b2.l, 0, 0, 0) ** 2
            if c > 0:
                out.append((k, c))
        return out
    for k in range(abs(b1.twoj - b2.twoj) // 2, (b1.twoj + b2.twoj) // 2 + 1):
        if (b1.l + b2.l + k) % 2:
            continue
        c = wigner3j(b1.twoj, 2 * k, b2.twoj, 1, 0, -1) ** 2
        if c > 0:
            out.append((k, c))
    return out
