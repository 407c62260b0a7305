"""The Obara-Saika one-electron programs as data: one intermediate representation of the
overlap, kinetic-energy, dipole and nuclear-attraction integrals of a shell pair and of their
first derivatives, printed as numba Python by :mod:`hartree.integrals.os_codegen` (the CPU
kernels: one rolled schedule for every l) and as CUDA C by :mod:`hartree.gpu.one_electron_gpu`
and :mod:`hartree.gpu.one_electron_deriv_gpu` (one unrolled schedule per pair class).  The
statements are those of :mod:`hartree.integrals.rys_program` (:class:`Node`, :class:`Term`,
:class:`Recurrence`, :class:`Loop`, :class:`Sym`, :class:`Exponent`) plus
:class:`Accumulate`, :class:`Table`, :class:`Define` and :class:`ComponentPairs`.

Equations, one cartesian direction (a, b the exponents of the primitives on A and B, p = a + b,
P = (aA + bB)/p, X_PA = P_x - A_x; Obara & Saika, J. Chem. Phys. 84, 3963 (1986)):

    S_{i+1,0} = X_PA S_i0 + i/(2p) S_{i-1,0}                                            (1)
    S_{i,j+1} = X_PB S_ij + (i S_{i-1,j} + j S_{i,j-1}) / (2p),     S_00 = 1              (2)
    d/dA_x:  (aX)_ij = 2a X_{i+1,j} - i X_{i-1,j}          (O&S eq. 20)                  (3)
    d/dB_x:  (bX)_ij = 2b X_{i,j+1} - j X_{i,j-1}                                        (4)
    x - C_x = (x - B_x) + (B_x - C_x):   (rX)_ij = X_{i,j+1} + (B_x - C_x) X_ij           (5)
    T_ij = <i| -1/2 d²/dx² |j> = -1/2 (bbS)_ij    (the ket differentiated twice: the
           derivative of the ket by x is minus the one by B_x)                          (6)
    <a| 1/|r - C| |b> = 2π/p K_AB Σ_r w_r I_x(u_r) I_y(u_r) I_z(u_r),   T = p |P - C|²,
           (l_a + l_b)//2 + 1 Rys roots u_r = t_r² and weights w_r (Dupuis, Rys & King,
           J. Chem. Phys. 65, 111 (1976))                                               (7)
    I_ij: eqs. (1)-(2) with X_PA - u X_PC, X_PB - u X_PC and (1 - u)/(2p) in place of X_PA,
           X_PB and 1/(2p) (the Rys form of O&S's nuclear-attraction recurrence); I_00 = 1
           on x and y, w_r times the prefactor of eq. (7) (with -Z) on z                 (8)

and for a cartesian pair a = (a_x, a_y, a_z), b = (b_x, b_y, b_z) the 3-D integrals are
sums of products of 1-D factors (the common factor (π/p)^(3/2) K_AB of S, T and μ is the
printers'; K_AB = exp(-ab/p |A - B|²)):

    S = S^x S^y S^z,     T = -1/2 [(bbS)^x S^y S^z + S^x (bbS)^y S^z + S^x S^y (bbS)^z],
    μ_x = (rS)^x S^y S^z,     V = Σ_r I^x I^y I^z,
    d/dA_x of a product: operator (3) on its x factor, the only one that depends on A_x.

*Kinds* of 1-D values: a base, ``s`` (eqs. (1)-(2)) or ``v`` (eq. (8), one root), after
the operator letters applied to it, the innermost last: ``bs``, ``bbs`` (eq. (6)), ``rs``
(eq. (5)), ``as``, ``abbs``, ``av``...  A :class:`Node` of kind k, axis 'x', 'y', 'z' (or
'd', an axis chosen at run time) and index (i, j) -- in the rolled schedule (i, j, r) for
the kinds of base v, r the root.  :func:`rule` is the only place where eqs. (1)-(5) and (8)
are written; :data:`OVERLAP`, :data:`KINETIC`, :func:`dipole`, :data:`NUCLEAR` and
:func:`derivative` the only place where the 3-D integrals are.

Coefficients the terms carry (the printers define them): ``pa``, ``pb``, ``hp`` (X_PA,
X_PB, 1/(2p)); ``ua``, ``ub``, ``hu`` (their eq. (8) forms, per root); ``a2``, ``b2`` (2a,
2b); ``bc`` (B - C of eq. (5)).

Two schedules of the same rules:

* :func:`unrolled_program` -- one pair class (l_a, l_b): every 1-D value the integrals of its
  cartesian pairs need, on demand (depth first, each once), then one :class:`Accumulate` per
  pair and integral -- the CUDA kernels (scalars in registers; the printer puts the
  primitive, nucleus and root loops around it);
* :func:`rolled_program` -- l_a, l_b known at run time (``la``, ``lb``): one table per kind
  (:class:`Table`, in a loop over the roots for base v), each filled by loops over the axes
  and run-time index ranges whose body is the kind's rule (:func:`table_loops`: the same
  loops for every kind made by one operator), then the loops over the cartesian pairs
  (:class:`ComponentPairs`) accumulate -- the numba kernels, compiled once for every l.
"""

from __future__ import annotations

from typing import NamedTuple

from hartree.basis.angular import cart_components
from hartree.integrals.rys_program import AXES, Exponent, Loop, Node, Recurrence, Schedule, Sym, Term, leaves

#: coefficients of eqs. (1)-(2) per base: the bra's displacement, the ket's, 1/(2p)
BASES = {"s": ("pa", "pb", "hp"), "v": ("ua", "ub", "hu")}

#: the base whose values depend on the Rys root (eq. (8))
ROOT_BASE = "v"


def node(kind: str, axis: str, i, j, *extra) -> Node:
    """The 1-D value of ``kind`` at (i, j) (``extra``: the root index of the rolled schedule)."""
    return Node(kind, axis, (i, j, *extra))


def _neg(x):
    """-x of an int or a :class:`Sym` (0 - x: ``Sym.__rsub__``)."""
    return 0 - x


def rule(target: Node) -> Recurrence:
    """The recurrence that defines ``target``: eqs. (1)-(2) (the seed, no terms, at (0, 0))
    for a base, else the operator of its first letter, eqs. (3)-(5).  Terms of multiplicity
    0 are absent; a run-time multiplicity (:class:`Sym`, never 0 here) stays, guarded by the
    printers (its source index is then -1, never read)."""
    kind, axis = target.kind, target.axis
    i, j, *extra = target.index
    op, inner = kind[0], kind[1:]
    if kind in BASES:
        ca, cb, h = BASES[kind]
        if i == 0 and j == 0:
            return Recurrence(target, ())
        if j == 0:  # eq. (1)
            i = i - 1
            terms = (Term(ca, None, node(kind, axis, i, 0, *extra)), Term(h, i, node(kind, axis, i - 1, 0, *extra)))
        else:  # eq. (2)
            j = j - 1
            terms = (
                Term(cb, None, node(kind, axis, i, j, *extra)),
                Term(h, i, node(kind, axis, i - 1, j, *extra)),
                Term(h, j, node(kind, axis, i, j - 1, *extra)),
            )
    elif op == "a" and inner:  # eq. (3)
        terms = (
            Term("a2", None, node(inner, axis, i + 1, j, *extra)),
            Term(None, _neg(i), node(inner, axis, i - 1, j, *extra)),
        )
    elif op == "b" and inner:  # eq. (4)
        terms = (
            Term("b2", None, node(inner, axis, i, j + 1, *extra)),
            Term(None, _neg(j), node(inner, axis, i, j - 1, *extra)),
        )
    elif op == "r" and inner:  # eq. (5)
        terms = (
            Term(None, None, node(inner, axis, i, j + 1, *extra)),
            Term("bc", None, node(inner, axis, i, j, *extra)),
        )
    else:
        raise ValueError(f"unknown kind of one-electron value: {kind!r}")
    return Recurrence(target, tuple(t for t in terms if t.multiplicity != 0))


class Integral(NamedTuple):
    """One 3-D integral of a cartesian pair: scale × Σ_k X_k^x Y_k^y Z_k^z, ``products`` the
    kinds (X_k, Y_k, Z_k) of the x, y and z factors."""

    scale: float
    products: tuple[tuple[str, str, str], ...]


OVERLAP = Integral(1.0, (("s", "s", "s"),))
KINETIC = Integral(-0.5, (("bbs", "s", "s"), ("s", "bbs", "s"), ("s", "s", "bbs")))
NUCLEAR = Integral(1.0, (("v", "v", "v"),))


def dipole(axis: int) -> Integral:
    """<a| (r - C)_axis |b> (0, 1, 2: x, y, z), eq. (5) on that axis."""
    return Integral(1.0, (tuple("rs" if x == axis else "s" for x in range(3)),))


def derivative(integral: Integral, centre: str, axis: int) -> Integral:
    """d/dA_axis (``centre`` 'a', eq. (3)) or d/dB_axis ('b', eq. (4)) of ``integral``: the
    operator on the factor of that axis in every product."""
    return Integral(
        integral.scale,
        tuple(tuple(centre + k if x == axis else k for x, k in enumerate(p)) for p in integral.products),
    )


def scaled(integral: Integral, factor: float) -> Integral:
    """``factor`` × ``integral``."""
    return Integral(integral.scale * factor, integral.products)


class Output(NamedTuple):
    """What a kernel accumulates: ``target``[``row``] += ``integral`` of each cartesian pair,
    times ``weight``(a, b) when a weight is named (a density contracted with the integrals:
    the gradient kernels)."""

    target: str
    row: int
    integral: Integral
    weight: str | None = None


class Accumulate(NamedTuple):
    """``target``[``row``] (at the pair) += scale × [``weight``(a, b) ×] Σ_k Π ``products``[k]
    (times the printer's primitive prefactor); ``pair``: the indices of a and b among the
    cartesian components (unrolled), or None for the run-time pair of the enclosing
    :class:`ComponentPairs` (rolled); ``roots``: None, or the run-time count of roots the
    products are summed over (their last index, r; the prefactor is then in the seeds)."""

    target: str
    row: int
    pair: tuple[int, int] | None
    scale: float
    weight: str | None
    products: tuple[tuple[Node, Node, Node], ...]
    roots: str | None = None


class Define(NamedTuple):
    """The per-root values take their values here (rolled schedule, in the loop over the
    roots r): the coefficients ``names`` of eq. (8) at u = u_r and the seed of z."""

    names: tuple[str, ...]


class ComponentPairs(NamedTuple):
    """For every cartesian component a of shell l_a and b of l_b (run-time; their exponents
    are the :class:`Exponent` ('a', axis), ('b', axis) of the factors): body."""

    body: tuple


class OSProgram(NamedTuple):
    """The statements of one kernel: ``tables`` (the 1-D values: recurrences; rolled: loops
    of them) then ``sums`` (accumulations; rolled: one :class:`ComponentPairs`)."""

    pair: tuple[int, int] | None  #: (l_a, l_b) of an unrolled program; None: rolled
    tables: tuple
    sums: tuple
    #: rolled: (kind, (ki, kj)) of each table, i <= l_a + ki, j <= l_b + kj, in evaluation order
    arrays: tuple[tuple[str, tuple[int, int]], ...] = ()

    def coefficients(self) -> set[str]:
        """The coefficients (module docstring) that the recurrences use (unrolled)."""
        return {t.coefficient for s in leaves(self.tables) if isinstance(s, Recurrence) for t in s.terms} - {None}


def unrolled_program(la: int, lb: int, outputs) -> OSProgram:
    """The program of pair class (la, lb) for ``outputs`` (:class:`Output`): the 1-D values on
    demand, axes interleaved in the order the pairs ask for them, then per cartesian pair
    (a the outer index, PySCF order) one :class:`Accumulate` per output.  A program of
    base-v kinds is the part of one Rys root."""
    sched = Schedule(rules=rule)
    sums = []
    for ia, a in enumerate(cart_components(la)):
        for ib, b in enumerate(cart_components(lb)):
            for out in outputs:
                products = tuple(
                    tuple(sched.request(node(k, ax, a[x], b[x])) for x, (k, ax) in enumerate(zip(kinds, AXES)))
                    for kinds in out.integral.products
                )
                sums.append(Accumulate(out.target, out.row, (ia, ib), out.integral.scale, out.weight, products))
    return OSProgram((la, lb), tuple(sched.statements), tuple(sums))


def extents(outputs) -> dict[str, tuple[int, int]]:
    """{kind: (ki, kj)}: the table of each kind that ``outputs`` need, i <= l_a + ki,
    j <= l_b + kj (eq. (3) raises i by one, eqs. (4)-(5) raise j)."""
    need: dict[str, tuple[int, int]] = {}
    todo = [(k, 0, 0) for out in outputs for p in out.integral.products for k in p]
    while todo:
        kind, ki, kj = todo.pop()
        old = need.get(kind)
        if old is not None and ki <= old[0] and kj <= old[1]:
            continue
        if old is not None:
            ki, kj = max(ki, old[0]), max(kj, old[1])
        need[kind] = (ki, kj)
        if kind not in BASES:
            todo.append((kind[1:], ki + (kind[0] == "a"), kj + (kind[0] in "br")))
    return need


class Table(NamedTuple):
    """Fill the table of ``kind`` for i <= l_a + ki, j <= l_b + kj (``extents`` (ki, kj)) on
    the three axes: the loops of :func:`table_loops` (rolled schedule; in the loop over the
    roots, the table of that root)."""

    kind: str
    extents: tuple[int, int]


def table_loops(kind: str, last_i, last_j, *extra) -> tuple:
    """Loops over the axes d and the indices filling the table of ``kind`` for i <= last_i,
    j <= last_j (ints or :class:`Sym`, e.g. run-time arguments; ``extra``: the root index):
    for a base the seed, eq. (1) along i, then eq. (2) column by column; else one double
    loop of the rule of its first letter."""
    i, j = Sym("i"), Sym("j")
    if kind in BASES:
        body = (
            rule(node(kind, "d", 0, 0, *extra)),
            Loop("i", 0, last_i, False, (rule(node(kind, "d", i + 1, 0, *extra)),)),
            Loop("j", 0, last_j, False, (Loop("i", 0, last_i, True, (rule(node(kind, "d", i, j + 1, *extra)),)),)),
        )
    else:
        body = (Loop("i", 0, last_i, True, (Loop("j", 0, last_j, True, (rule(node(kind, "d", i, j, *extra)),)),)),)
    return (Loop("d", 0, 3, False, body),)


def rolled_program(outputs) -> OSProgram:
    """The rolled program of ``outputs`` for l_a = ``la``, l_b = ``lb`` known at run time:
    a :class:`Table` per kind without a root, then in a loop over the roots r < ``nroots``
    (:class:`Define` first) one per kind of base v, each kind after the kind it is made from;
    then :class:`ComponentPairs` with one :class:`Accumulate` per output (base v: summed over
    the roots)."""
    need = extents(outputs)
    order = sorted(need, key=lambda k: (len(k), k))
    rooted = [k for k in order if k.endswith(ROOT_BASE)]
    tables = [Table(k, need[k]) for k in order if k not in rooted]
    r = Sym("r")
    if rooted:
        tables.append(
            Loop("r", 0, Sym("nroots"), False, (Define(BASES[ROOT_BASE]), *(Table(k, need[k]) for k in rooted)))
        )
    sums = []
    for out in outputs:
        roots = {k.endswith(ROOT_BASE) for p in out.integral.products for k in p}
        if len(roots) != 1:
            raise ValueError("an integral mixes factors with and without a Rys root")
        extra = (r,) if roots.pop() else ()
        products = tuple(
            tuple(node(k, ax, Exponent("a", x), Exponent("b", x), *extra) for x, (k, ax) in enumerate(zip(kinds, AXES)))
            for kinds in out.integral.products
        )
        sums.append(
            Accumulate(out.target, out.row, None, out.integral.scale, out.weight, products, "nroots" if extra else None)
        )
    arrays = tuple((k, need[k]) for k in order)
    return OSProgram(None, tuple(tables), (ComponentPairs(tuple(sums)),), arrays)
