"""CUDA printer of the one-electron programs of :mod:`hartree.integrals.os_program` (the
intermediate representation that :mod:`hartree.integrals.os_codegen` prints for numba).

One pair class (la, lb) at a time, in one of two schedules of the same rules:

* unrolled (:func:`~hartree.integrals.os_program.unrolled_program`): every 1-D value a
  ``const double`` (registers), one accumulation statement per cartesian pair and integral;
* rolled (:func:`~hartree.integrals.os_program.rolled_program`, with the class's l): tables
  in local arrays filled by loops whose bodies are the rules, and loops over the cartesian
  pairs (PySCF order) -- for classes above :data:`UNROLL_PAIRS` cartesian pairs, whose
  unrolled text NVRTC compiles for minutes.

:class:`Printed` gives what a kernel frame (:mod:`hartree.gpu.one_electron_gpu`,
:mod:`hartree.gpu.one_electron_deriv_gpu`) places: declarations at the kernel's top, the
coefficients the statements use (names of os_program, spelled per axis by the frame as
PAx, PBx, UAx, UBx, BCx, hp, hu, a2, b2) and the statements of one primitive pair (or one
Rys root: the frame loops over primitives, nuclei and roots; the seed of z of base v is the
frame's ``wr``, the weight times the prefactor).
"""

from itertools import groupby

from hartree.basis.angular import ncart
from hartree.integrals.os_program import (
    BASES,
    ROOT_BASE,
    Define,
    Table,
    rolled_program,
    table_loops,
    unrolled_program,
)
from hartree.integrals.rys_program import Exponent, Loop, Recurrence, Sym, leaves

#: pair classes with more cartesian pairs than this print the rolled schedule.  NVRTC 13
#: (sm_90), CPU seconds of one gradient kernel's compile: unrolled (dp) 1.3, (dd) 2.6, (fp)
#: 2.6, (fd) 6.9; rolled with its loops kept rolled (``#pragma unroll 1``) (dp) 2.3, (fd)
#: 2.6, (ff) 3.3; the hand-written kernels this replaced (dp) 1.6, (dd) 4.1, (fp) 2.4, (fd)
#: 2.4, (ff) 3.0.  Above 36 pairs the rolled text is the faster to compile; either way a
#: one-electron call takes milliseconds (H100: S, T, V of Tamoxifen/def2-TZVP 5.6 ms).
UNROLL_PAIRS = 36

#: before every loop of the rolled schedule: NVRTC would otherwise unroll the loops with
#: constant bounds (la, lb are the class's) and compile (ff) 2.5 times longer
_ROLLED = "#pragma unroll 1"

#: CUDA spelling of the coefficients ({a}: the axis x, y, z; rolled: arrays indexed by d)
_COEFFICIENTS = {c: c.upper() + "{a}" if c in ("pa", "pb", "ua", "ub", "bc") else c for c in BASES["s"] + BASES["v"]}
_COEFFICIENTS |= {"a2": "a2", "b2": "b2", "bc": "BC{a}"}
_PER_AXIS = ("pa", "pb", "ua", "ub", "bc")


def is_unrolled(la, lb):
    """True when class (la, lb) prints the unrolled schedule."""
    return ncart(la) * ncart(lb) <= UNROLL_PAIRS


def value_name(n):
    """CUDA variable of a 1-D value (unrolled): sx_1_2, bbsy_0_1."""
    return f"{n.kind}{n.axis}_" + "_".join(str(i) for i in n.index)


def _index(x, env):
    """C spelling of an index of the rolled schedule: la, lb are the class's numbers."""
    if isinstance(x, Exponent):
        return x.shell + "xyz"[x.axis]
    if isinstance(x, Sym):
        if x.var in env:
            return str(x.scale * env[x.var] + x.offset)
        head = x.var if x.scale > 0 else f"-{x.var}"
        return head if x.offset == 0 else f"{head} {'+' if x.offset > 0 else '-'} {abs(x.offset)}"
    return str(x)


def _element(n, env):
    """Rolled table element, padded (value (i, j) at [i + 1][j + 1]; an exponent local holds
    the padded index); the root index is the frame's loop, dropped."""
    axis = n.axis if n.axis not in "xyz" else str("xyz".index(n.axis))
    i, j = (x if isinstance(x, Exponent) else x + 1 for x in n.index[:2])
    return f"t_{n.kind}[{axis}][{_index(i, env)}][{_index(j, env)}]"


def _rhs(rec, value, coefficient, index=str):
    """Right-hand side: [multiplicity *] [coefficient *] value per term, a negative
    multiplicity as a subtraction (a run-time one needs no guard: padded tables);
    ``value``, ``coefficient``, ``index``: spellings."""
    out = ""
    for t in rec.terms:
        m = t.multiplicity
        negative = (m.scale < 0) if isinstance(m, Sym) else (m is not None and m < 0)
        size = (0 - m if negative else m) if m is not None else None
        f = [f"{size}.0" if isinstance(size, int) else index(size)] if size is not None else []
        f += [coefficient(t.coefficient)] if t.coefficient is not None else []
        term = " * ".join(f + [value(t.source)])
        out += (" - " if negative else " + " if out else "") + term
    return out


def _seed(kind, axis):
    """The seed of a base: 1.0, and wr (weight × prefactor) on z of base v."""
    if kind != ROOT_BASE:
        return "1.0"
    return "wr" if axis == "z" else "1.0" if axis in "xy" else f"({axis} == 2 ? wr : 1.0)"


class Printed:
    """One program of class (la, lb) for ``outputs`` (:class:`~hartree.integrals.os_program.Output`),
    printed in the schedule of :func:`is_unrolled`.

    ``decls``: lines at the kernel's top (the rolled tables, zeroed); ``used``: the
    coefficients the statements read; :meth:`lines`: the tables and accumulations of one
    primitive pair (or root), ``targets`` {target: format with {row}, {pair}} (pair: the
    index a nb + b), ``prefactor`` a factor of every accumulation (None: none), ``weights``
    {name: format with {a}, {b}} of the densities read once per pair."""

    def __init__(self, la, lb, outputs):
        self.la, self.lb = la, lb
        self.unrolled = is_unrolled(la, lb)
        if self.unrolled:
            self.program = unrolled_program(la, lb, outputs)
            self.used = self.program.coefficients()
            self.decls = []
            return
        self.program = rolled_program(outputs)
        self.env = {"la": la, "lb": lb}
        self.tables = self._tables(self.program.tables)
        self.used = {t.coefficient for s in leaves(self.tables) if isinstance(s, Recurrence) for t in s.terms}
        self.used -= {None}
        self.decls = []
        for kind, (ki, kj) in self.program.arrays:
            n = 3 * (la + ki + 2) * (lb + kj + 2)
            self.decls += [
                f"  double t_{kind}[3][{la + ki + 2}][{lb + kj + 2}];  // padded: row and column 0 stay 0",
                _ROLLED,
                f"  for (int q = 0; q < {n}; ++q) (&t_{kind}[0][0][0])[q] = 0.0;",
            ]

    def _tables(self, statements):
        """The rolled tables as loops (a root's, without the loop over the roots)."""
        out = []
        for s in statements:
            if isinstance(s, Table):
                out += table_loops(s.kind, Sym("la", s.extents[0]), Sym("lb", s.extents[1]))
            elif isinstance(s, Loop) and s.var == "r":
                out += self._tables(s.body)
            elif not isinstance(s, Define):
                out.append(s)
        return out

    def lines(self, targets, prefactor=None, weights=None, pad="    "):
        if self.unrolled:
            return self._unrolled_tables(pad) + self._unrolled_sums(targets, prefactor, weights, pad)
        arrays = [c for c in _PER_AXIS if c in self.used]
        lines = [f"{pad}const double {c.upper()}_[3] = {{{c.upper()}x, {c.upper()}y, {c.upper()}z}};" for c in arrays]
        lines += self._loops(self.tables, pad)
        return lines + self._rolled_sums(targets, prefactor, weights, pad)

    # ------------------------------------------------------------------ unrolled
    def _unrolled_tables(self, pad):
        lines = []
        for rec in self.program.tables:
            axis = rec.target.axis
            rhs = _rhs(rec, value_name, lambda c, a=axis: _COEFFICIENTS[c].format(a=a)) or _seed(rec.target.kind, axis)
            lines.append(f"{pad}const double {value_name(rec.target)} = {rhs};")
        return lines

    def _unrolled_sums(self, targets, prefactor, weights, pad):
        nb = ncart(self.lb)
        lines = []
        for (ia, ib), sums in groupby(self.program.sums, key=lambda s: s.pair):
            sums = list(sums)
            lines.append(pad + "{")
            lines += self._weights(sums, weights, pad + "  ", a=ia, b=ib)
            for s in sums:
                total = " + ".join(" * ".join(value_name(f) for f in p) for p in s.products)
                target = targets[s.target].format(row=s.row, pair=ia * nb + ib)
                lines.append(f"{pad}  {target} += {_factors(s, prefactor, total)};")
            lines.append(pad + "}")
        return lines

    @staticmethod
    def _weights(sums, weights, pad, a, b):
        used = sorted({s.weight for s in sums if s.weight is not None})
        return [f"{pad}const double w_{w} = {weights[w].format(a=a, b=b)};" for w in used]

    # ------------------------------------------------------------------ rolled
    def _loops(self, statements, pad):
        lines = []
        for s in statements:
            if isinstance(s, Loop):
                stop = s.stop + 1 if s.inclusive else s.stop
                lines += [
                    _ROLLED,
                    f"{pad}for (int {s.var} = {s.start}; {s.var} < {_index(stop, self.env)}; ++{s.var}) {{",
                ]
                lines += self._loops(s.body, pad + "  ") + [pad + "}"]
            else:
                value = lambda n: _element(n, self.env)  # noqa: E731
                coefficient = lambda c: _COEFFICIENTS[c].format(a="_[d]") if c in _PER_AXIS else c  # noqa: E731
                rhs = _rhs(s, value, coefficient, lambda x: _index(x, self.env))
                lines.append(f"{pad}{value(s.target)} = {rhs or _seed(s.target.kind, s.target.axis)};")
        return lines

    def _rolled_sums(self, targets, prefactor, weights, pad):
        """The loops over the cartesian pairs (PySCF order), exponents padded by one."""
        (pairs,) = self.program.sums
        nb = ncart(self.lb)
        lines = [_ROLLED, f"{pad}for (int ax = {self.la + 1}, ai = 0; ax >= 1; --ax)"]
        lines += [f"{pad}for (int ay = {self.la + 2} - ax, az = 1; ay >= 1; --ay, ++az, ++ai)"]
        lines += [f"{pad}for (int bx = {self.lb + 1}, bi = 0; bx >= 1; --bx)"]
        lines += [f"{pad}for (int by = {self.lb + 2} - bx, bz = 1; by >= 1; --by, ++bz, ++bi) {{"]
        lines += self._weights(pairs.body, weights, pad + "  ", a="ai", b="bi")
        for s in pairs.body:
            total = " + ".join(" * ".join(_element(f, self.env) for f in p) for p in s.products)
            target = targets[s.target].format(row=s.row, pair=f"ai * {nb} + bi")
            lines.append(f"{pad}  {target} += {_factors(s, prefactor, total)};")
        return lines + [pad + "}"]


def _factors(s, prefactor, total):
    """[prefactor *] [scale *] [w_weight *] (total)."""
    f = [prefactor] if prefactor else []
    f += [repr(s.scale)] if s.scale != 1.0 else []
    f += [f"w_{s.weight}"] if s.weight is not None else []
    return " * ".join(f + [f"({total})"])
