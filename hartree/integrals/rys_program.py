"""The Rys program of one angular-momentum class as data: one intermediate representation,
printed as CUDA C by :mod:`hartree.gpu.codegen` and as numba Python by
:mod:`hartree.integrals.eri_codegen`.

A program is a sequence of typed statements over *nodes* (named 2-D integrals of one
cartesian axis and one Rys root).  The rules below are the only place where the recurrences
are written; the printers only spell the statements in their language.  Equations (Rys,
Dupuis & King, J. Comput. Chem. 4, 154 (1983); Head-Gordon & Pople, J. Chem. Phys. 89,
5777 (1988) for the transfer equations; u = t² a Rys root, ζ = a+b, η = c+d):

    (ab|cd) = 2π^(5/2) / (ζη sqrt(ζ+η)) K_AB K_CD Σ_r w_r I_x(r) I_y(r) I_z(r)      (1)
    B00 = u / (2(ζ+η)),  B10 = (1 - η u/(ζ+η)) / (2ζ),  B01 = (1 - ζ u/(ζ+η)) / (2η)  (2)
    C00 = (P-A) - η u/(ζ+η) (P-Q),   C00' = (Q-C) + ζ u/(ζ+η) (P-Q)                 (3)
    G(n+1,0) = C00 G(n,0) + n B10 G(n-1,0)                                          (4)
    G(n,m+1) = C00' G(n,m) + m B01 G(n,m-1) + n B00 G(n-1,m)                        (5)
    I(i,j+1;m) = I(i+1,j;m) + (A-B) I(i,j;m)          (bra transfer)               (6)
    I(i,j;k,l+1) = I(i,j;k+1,l) + (C-D) I(i,j;k,l)    (ket transfer)               (7)

G(0,0) is the *seed*: 1 for x and y, w_r times the prefactor of (1) for z.

Nodes: ``g`` G(n, m) (VRR, eqs. (4)-(5)); ``h`` I(i, j; m) (bra HRR, eq. (6)); ``e``
I(i, j; k, l) (ket HRR, eq. (7)).  A node of ``h`` with j = 0 *is* G(i, m) and one of ``e``
with l = 0 *is* h(i, j, k): :func:`node` returns the canonical one, so that a value is
computed once.  The axis is 'x', 'y', 'z', or a name for an axis chosen at run time ('v').

Statements:

* :class:`Recurrence` -- node = Σ terms (coefficient × multiplicity × source node); no terms
  means the seed;
* :class:`Accumulate` -- cartesian component ``slot`` += Π_axes factor (eq. (1); summed over
  roots and primitive quartets: the printers write those loops);
* :class:`Store` -- a node's value written to a table slot (the cooperative kernels' shared
  tables);
* :class:`Transfer` -- the transfer equations applied to *contracted* cartesian
  intermediates (e0|f0), in closed form (eq. (6) iterated: binomials and powers of A-B),
  the schedule of the numba kernels;
* :class:`Loop`, :class:`Copy`, :class:`ComponentBlock` -- the rolled schedule only: a loop
  over an index range, an array element set to the canonical node of the same integral, the
  loops over the cartesian components (a, b) of a slice.  Node indices there may be
  :class:`Sym` (a loop variable plus a constant) or :class:`Exponent` (an exponent of the
  current component), and a multiplicity may be a :class:`Sym` (the term is absent when it
  is 0 at run time).

Three schedules of the same rules exist, and the printers print the ones their kernels use:

* :func:`quartet_program`: per root, every node that the requested cartesian components
  need, on demand (depth first, each node once) and the accumulation of the final
  components -- the CUDA kernels (transfer per root and primitive quartet, in registers);
* :func:`contracted_program`: per root, the full VRR table G(n, m), n <= la+lb, m <= lc+ld,
  the accumulation of (e0|f0) over roots and primitives, and the transfers once per
  contracted quartet -- the numba kernels (fewer transfers when the basis is contracted);
* :func:`rolled_program`: the same tables as loops over local arrays g, h, e (one recurrence
  statement per equation, indices known at run time) and the accumulation as loops over the
  (a, b) components -- the CUDA kernels of the largest classes (compile time).

:func:`table_program` (the cooperative kernels' shared tables) is the on-demand schedule
for one axis with a :class:`Store` per value.

Attenuated Coulomb operators (range-separated hybrids).  For erf(ω r12)/r12 the Boys
functions of a primitive quartet become θ^(m+1/2) F_m(θT) with θ = ω²/(ω² + ρ),
ρ = ζη/(ζ+η) (Gill & Adamson, Chem. Phys. Lett. 261, 105 (1996); Ahlrichs, Phys. Chem.
Chem. Phys. 8, 3072 (2006)): from erf(ωr)/r = 2/sqrt(π) ∫_0^ω exp(-s² r²) ds the s-type
integral is 2π^(5/2)/(ζη sqrt(ζ+η)) K_AB K_CD sqrt(θ) F_0(θT), and the recurrences of the
higher Boys functions follow with θ^m F_m(θT) = Σ_r w_r(θT) (θ u_r(θT))^m.  So the Rys rule
is taken at θT, each root u is replaced by θu in eqs. (2)-(3) and the prefactor of eq. (1)
is multiplied by sqrt(θ); eqs. (4)-(7) are unchanged.  This is :data:`ATTENUATION` (per
primitive quartet) and :data:`ATTENUATION_ROOT` (per root), statements of the quartet's
frame that both printers print into a separate variant of their kernels (``attenuated``),
so that the kernels of 1/r12 keep their text.  erfc(ω r12)/r12 = 1/r12 - erf(ω r12)/r12 is
the difference of the two (the engines' ``omega < 0``, PySCF's convention).

Cartesian → spherical is not part of a program: the numba J/K driver applies it per quartet
(``eri_kernel.spherical_``) and the GPU engine as matrix products on J/K.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from hartree.basis.angular import cart_components, ncart

AXES = "xyz"

#: the coefficients a term may carry: eqs. (2), (3), (6), (7)
COEFFICIENTS = ("c00", "c0p", "b10", "b01", "b00", "AB", "CD")


#: the erf attenuation in the frame of a primitive quartet (module docstring): (target,
#: expression) in the names omega2 (ω², bohr^-2), rho (ζη/(ζ+η)), theta (θ), T (the Boys
#: argument ρ|P-Q|²) and pref (the prefactor of eq. (1)); ``sqrt`` the square root.  The
#: printers spell the names in their language (:func:`spell`).
ATTENUATION = (
    ("theta", "omega2 / (omega2 + rho)"),
    ("T", "theta * T"),
    ("pref", "sqrt(theta) * pref"),
)
#: the same, for each Rys root u of the rule at θT
ATTENUATION_ROOT = ("u", "theta * u")


def spell(expression: str, names: dict[str, str]) -> str:
    """``expression`` of :data:`ATTENUATION` with each name replaced by its spelling."""
    return re.sub(r"[A-Za-z_][A-Za-z_0-9]*", lambda m: names.get(m.group(0), m.group(0)), expression)


def attenuation_theta(omega: float, rho):
    """θ = ω²/(ω² + ρ) of :data:`ATTENUATION` (numpy or float; for references and tests)."""
    return omega * omega / (omega * omega + rho)


def nroots(cls) -> int:
    """Rys roots needed for a quartet class: (la+lb+lc+ld)//2 + 1."""
    return sum(cls) // 2 + 1


@dataclass(frozen=True)
class Sym:
    """An index known only at run time: scale × var + offset, var a loop variable of the
    rolled schedule, scale ±1 (``n + 1``, ``m - 1``, ``4 - j``)."""

    var: str
    offset: int = 0
    scale: int = 1

    def __add__(self, k: int) -> Sym:
        return Sym(self.var, self.offset + k, self.scale)

    def __sub__(self, k: int) -> Sym:
        return Sym(self.var, self.offset - k, self.scale)

    def __rsub__(self, k: int) -> Sym:
        return Sym(self.var, k - self.offset, -self.scale)


class Exponent(NamedTuple):
    """Exponent along axis 0, 1, 2 of the cartesian component of shell ``shell`` ('a' or 'b')
    that the enclosing :class:`ComponentBlock` runs over."""

    shell: str
    axis: int


class Node(NamedTuple):
    """One 2-D integral of one axis (and one root): kind 'g' (n, m), 'h' (i, j, m) or 'e'
    (i, j, k, l)."""

    kind: str
    axis: str
    index: tuple[int | Sym | Exponent, ...]  #: Sym, Exponent: rolled schedule only


class Term(NamedTuple):
    """coefficient × multiplicity × source; coefficient None: the bare source; multiplicity
    None: no integer factor (the n of n B10 G(n-1, 0) is an int, printed even when 1)."""

    coefficient: str | None
    multiplicity: int | Sym | None  #: Sym: rolled schedule only
    source: Node


class Recurrence(NamedTuple):
    """target = Σ terms; no terms: the seed G(0, 0)."""

    target: Node
    terms: tuple[Term, ...]


class Accumulate(NamedTuple):
    """Component ``slot`` += factors[0] × factors[1] × factors[2] (x, y, z), eq. (1)."""

    slot: int | tuple[int, int]
    factors: tuple[Node, Node, Node]


class Store(NamedTuple):
    """Table entry ``offset`` = value of ``node``."""

    node: Node
    offset: int


class Loop(NamedTuple):
    """for var = start, start+1, ... while var < stop (var <= stop when ``inclusive``): body."""

    var: str
    start: int
    stop: int | Sym
    inclusive: bool
    body: tuple


class Copy(NamedTuple):
    """Array element ``target`` = ``source``, the canonical node of the same integral
    (h(i, 0, m) is g(i, m), e(i, j, k, 0) is h(i, j, k)): the rolled schedule keeps one
    array per kind, so the identities of :func:`node` become copies."""

    target: Node
    source: Node


class ComponentBlock(NamedTuple):
    """For every cartesian component a in [a0, a1) of shell la and b in [b0, b1) of shell lb
    (bounds: numbers, or names of run-time arguments): body, whose :class:`Accumulate` slots
    count c nd + d within the block of (a, b), at ((a - a0)(b1 - b0) + b - b0) nc nd."""

    a0: int | str
    a1: int | str
    b0: int | str
    b1: int | str
    body: tuple


class TransferTerm(NamedTuple):
    """binomial × Π_d (A-B)_d^powers[d] × source component."""

    binomial: int
    powers: tuple[int, int, int]
    source: tuple[int, int, int]


class Transfer(NamedTuple):
    """Closed form of eq. (6) (or (7)) for one pair of cartesian components (a, b):
    (a b| = Σ_t Π_d C(b_d, t_d) (A-B)_d^(b_d - t_d) (a + t, 0|."""

    a: tuple[int, int, int]
    b: tuple[int, int, int]
    terms: tuple[TransferTerm, ...]


def node(kind: str, axis: str, *index: int) -> Node:
    """The canonical node: h(i, 0, m) is g(i, m), e(i, j, k, 0) is h(i, j, k)."""
    if kind == "e" and index[3] == 0:
        return node("h", axis, *index[:3])
    if kind == "h" and index[1] == 0:
        return Node("g", axis, (index[0], index[2]))
    return Node(kind, axis, tuple(index))


def rule(target: Node) -> Recurrence:
    """The recurrence that defines ``target`` (canonical): eqs. (4)-(7); terms in the order
    their sources are evaluated.  Indices may be :class:`Sym` (rolled schedule): a Sym never
    equals 0, so such a target is never the seed and its terms all stay."""
    axis, idx = target.axis, target.index
    if target.kind == "g":
        n, m = idx
        if n == 0 and m == 0:
            return Recurrence(target, ())
        if m == 0:  # eq. (4)
            terms = (Term("c00", None, node("g", axis, n - 1, 0)), Term("b10", n - 1, node("g", axis, n - 2, 0)))
        else:  # eq. (5)
            terms = (
                Term("c0p", None, node("g", axis, n, m - 1)),
                Term("b01", m - 1, node("g", axis, n, m - 2)),
                Term("b00", n, node("g", axis, n - 1, m - 1)),
            )
        # a term of multiplicity 0 is absent; a run-time multiplicity (Sym) stays, guarded by the printers
        return Recurrence(target, tuple(t for t in terms if t.multiplicity != 0))
    if target.kind == "h":  # eq. (6)
        i, j, m = idx
        return Recurrence(
            target, (Term(None, None, node("h", axis, i + 1, j - 1, m)), Term("AB", None, node("h", axis, i, j - 1, m)))
        )
    i, j, k, l = idx  # eq. (7)
    return Recurrence(
        target,
        (Term(None, None, node("e", axis, i, j, k + 1, l - 1)), Term("CD", None, node("e", axis, i, j, k, l - 1))),
    )


class Schedule:
    """Statements in evaluation order: :meth:`request` appends the recurrences a node needs
    (depth first, terms in order, each node once) and returns the node.  With
    ``seed_given`` the seeds are inputs (defined by the caller's code), not statements.
    ``rules``: the function giving a node's :class:`Recurrence` (default :func:`rule`; the
    one-electron programs of :mod:`hartree.integrals.os_program` pass theirs)."""

    def __init__(self, seed_given: bool = False, rules=None):
        self.statements: list = []
        self.done: set[Node] = set()
        self.seed_given = seed_given
        self.rule = rule if rules is None else rules

    def request(self, target: Node) -> Node:
        if target in self.done:
            return target
        rec = self.rule(target)
        if not rec.terms and self.seed_given:
            return target
        for term in rec.terms:
            self.request(term.source)
        self.statements.append(rec)
        self.done.add(target)
        return target


class RysProgram(NamedTuple):
    """The statements of one class: ``root`` runs once per Rys root (and primitive quartet),
    the transfers once per contracted quartet after the primitive loops (bra (la, lb) on
    the accumulated (e0|f0), then ket (lc, ld) on the result)."""

    cls: tuple[int, int, int, int]
    nroots: int
    root: tuple  #: Recurrence / Accumulate / Store statements (rolled: also Loop, Copy, ComponentBlock)
    bra_transfers: tuple[Transfer, ...] = ()
    ket_transfers: tuple[Transfer, ...] = ()
    #: rolled schedule: (kind, shape) of the local arrays, axis first
    arrays: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def coefficients(self) -> set[str]:
        """The coefficients of eqs. (2)-(3), (6)-(7) that the root statements use."""
        return {t.coefficient for s in leaves(self.root) if isinstance(s, Recurrence) for t in s.terms} - {None}


def leaves(statements):
    """The statements, with the bodies of loops and component blocks in their place."""
    for s in statements:
        if isinstance(s, (Loop, ComponentBlock)):
            yield from leaves(s.body)
        else:
            yield s


def quartet_program(cls, arange=None, brange=None) -> RysProgram:
    """Per-root program of the components a in arange, b in brange (indices into
    :func:`hartree.basis.cart_components`; default all), every c and d: the nodes on demand, axes
    interleaved in the order the components ask for them, then one :class:`Accumulate` per
    component (slot = ((a - a0) nb' + b - b0) nc + c) nd + d)."""
    la, lb, lc, ld = cls
    arange = list(arange if arange is not None else range(ncart(la)))
    brange = list(brange if brange is not None else range(ncart(lb)))
    sched = Schedule()
    ca, cb, cc, cd = (cart_components(l) for l in cls)
    nbs, nc, nd = len(brange), len(cc), len(cd)
    acc = []
    for ia in arange:
        a = ca[ia]
        for ib in brange:
            b = cb[ib]
            for ic, c in enumerate(cc):
                for id_, d in enumerate(cd):
                    idx = (((ia - arange[0]) * nbs + ib - brange[0]) * nc + ic) * nd + id_
                    f = tuple(sched.request(node("e", ax, a[x], b[x], c[x], d[x])) for x, ax in enumerate(AXES))
                    acc.append(Accumulate(idx, f))
    return RysProgram(tuple(cls), nroots(cls), tuple(sched.statements + acc))


def table_program(cls, stride: int, axis: str = "v") -> RysProgram:
    """Per-root program of the whole table I[i][j][k][l] (i <= la, j <= lb, k <= lc, l <= ld)
    of one axis (default: chosen at run time, seed given), each value stored as soon as it
    exists at offset (i (lb+1) + j) stride + k (ld+1) + l; stride >= (lc+1)(ld+1)."""
    la, lb, lc, ld = cls
    sched = Schedule(seed_given=True)
    for i in range(la + 1):
        for j in range(lb + 1):
            for k in range(lc + 1):
                for l in range(ld + 1):
                    v = sched.request(node("e", axis, i, j, k, l))
                    sched.statements.append(Store(v, (i * (lb + 1) + j) * stride + k * (ld + 1) + l))
    return RysProgram(tuple(cls), nroots(cls), tuple(sched.statements))


def components_range(l0: int, l1: int) -> list[tuple[int, int, int]]:
    """Cartesian components of every shell l0 <= l <= l1, in order."""
    out = []
    for l in range(l0, l1 + 1):
        out += cart_components(l)
    return out


def transfers(la: int, lb: int) -> tuple[Transfer, ...]:
    """Eq. (6) in closed form for every (a, b) of shells (la, lb), b the inner index."""
    out = []
    for a in cart_components(la):
        for b in cart_components(lb):
            terms = []
            for tx in range(b[0] + 1):
                for ty in range(b[1] + 1):
                    for tz in range(b[2] + 1):
                        c = math.comb(b[0], tx) * math.comb(b[1], ty) * math.comb(b[2], tz)
                        pw = (b[0] - tx, b[1] - ty, b[2] - tz)
                        terms.append(TransferTerm(c, pw, (a[0] + tx, a[1] + ty, a[2] + tz)))
            out.append(Transfer(a, b, tuple(terms)))
    return tuple(out)


def contracted_program(cls) -> RysProgram:
    """Per root: the full tables G_d(n, m), n <= la+lb, m <= lc+ld (rows of eq. (4), then
    the columns of eq. (5)), and the accumulation of (e0|f0), la <= |e| <= la+lb,
    lc <= |f| <= lc+ld (slot (index of e, index of f) in :func:`components_range`);
    contracted: the bra transfers of (la, lb), then the ket transfers of (lc, ld)."""
    la, lb, lc, ld = cls
    n, m = la + lb, lc + ld
    sched = Schedule()
    for ax in AXES:
        sched.request(node("g", ax, 0, 0))
        for i in range(n):
            sched.request(node("g", ax, i + 1, 0))
        for j in range(m):
            for i in range(n + 1):
                sched.request(node("g", ax, i, j + 1))
    acc = [
        Accumulate((ie, jf), tuple(node("g", ax, e[x], f[x]) for x, ax in enumerate(AXES)))
        for ie, e in enumerate(components_range(la, n))
        for jf, f in enumerate(components_range(lc, m))
    ]
    return RysProgram(tuple(cls), nroots(cls), tuple(sched.statements + acc), transfers(la, lb), transfers(lc, ld))


def rolled_program(cls, bounds=None, axis: str = "d") -> RysProgram:
    """The rolled schedule: per root, for each axis (a run-time loop variable ``axis``), the
    arrays g[n][m] (eqs. (4)-(5); n <= la+lb, m <= lc+ld), h[i][j][m] (eq. (6)) and
    e[i][j][k][l] (eq. (7); i <= la, j <= lb) filled by loops whose bodies are the
    :func:`rule` of a node with run-time indices; then, for the components a in [a0, a1),
    b in [b0, b1) (``bounds``, default all; numbers or names of run-time arguments), one
    :class:`Accumulate` per (c, d), slot c nd + d of the block of (a, b)."""
    la, lb, lc, ld = cls
    lab, lcd = la + lb, lc + ld
    a0, a1, b0, b1 = bounds if bounds is not None else (0, ncart(la), 0, ncart(lb))
    n, m, i, j, k, l = (Sym(v) for v in "nmijkl")

    def rec(kind, *index):
        return rule(Node(kind, axis, index))

    def copy(kind, *index):
        return Copy(Node(kind, axis, index), node(kind, axis, *index))

    def loop(var, start, stop, *body, inclusive=True):
        return Loop(var, start, stop, inclusive, body)

    per_axis = (
        rule(node("g", axis, 0, 0)),
        loop("n", 0, lab, rec("g", n + 1, 0), inclusive=False),
        loop("m", 0, lcd, loop("n", 0, lab, rec("g", n, m + 1)), inclusive=False),
        loop(
            "m",
            0,
            lcd,
            loop("i", 0, lab, copy("h", i, 0, m)),
            loop("j", 1, lb, loop("i", 0, lab - j, rec("h", i, j, m))),
        ),
        loop(
            "i",
            0,
            la,
            loop(
                "j",
                0,
                lb,
                loop("k", 0, lcd, copy("e", i, j, k, 0)),
                loop("l", 1, ld, loop("k", 0, lcd - l, rec("e", i, j, k, l))),
            ),
        ),
    )
    cd = cart_components(ld)
    acc = tuple(
        Accumulate(
            ic * len(cd) + id_,
            tuple(Node("e", ax, (Exponent("a", x), Exponent("b", x), c[x], d[x])) for x, ax in enumerate(AXES)),
        )
        for ic, c in enumerate(cart_components(lc))
        for id_, d in enumerate(cd)
    )
    arrays = (
        ("g", (3, lab + 1, lcd + 1)),
        ("h", (3, lab + 1, lb + 1, lcd + 1)),
        ("e", (3, la + 1, lb + 1, lcd + 1, ld + 1)),
    )
    root = (loop(axis, 0, 3, *per_axis, inclusive=False), ComponentBlock(a0, a1, b0, b1, acc))
    return RysProgram(tuple(cls), nroots(cls), root, arrays=arrays)
