"""The intermediate representation of the one-electron programs (hartree.integrals.os_program).

The rules are checked against the integrals they stand for, in one dimension, by numerical
quadrature: the overlap tables (eqs. (1)-(2)), the dipole shift (5), the kinetic energy as
the ket differentiated twice (6), and the derivatives (3)-(4) against finite differences in
A and B.  The unrolled schedule (the CUDA kernels) and the rolled one (the numba kernels)
are interpreted here in plain Python with the same coefficients and must give the same 3-D
integrals of every cartesian pair.  The printers are checked through the kernels they make
(tests/integrals/test_one_electron.py against PySCF, tests/gpu against the CPU).
"""

import math

import numpy as np
import pytest

from hartree.basis import cart_components
from hartree.integrals import os_codegen
from hartree.integrals.os_program import (
    KINETIC,
    NUCLEAR,
    OVERLAP,
    Accumulate,
    ComponentPairs,
    Define,
    Output,
    Table,
    derivative,
    dipole,
    node,
    rolled_program,
    rule,
    scaled,
    table_loops,
    unrolled_program,
)
from hartree.integrals.rys_program import Exponent, Loop, Recurrence, Sym

#: one dimension: exponents, centres A, B, C (bohr)
A_EXP, B_EXP, XA, XB, XC = 0.8, 1.3, 0.3, -0.45, 0.2


def _coefficients(a=A_EXP, b=B_EXP, xa=XA, xb=XB, xc=XC):
    p = a + b
    xp = (a * xa + b * xb) / p
    return {"pa": xp - xa, "pb": xp - xb, "hp": 0.5 / p, "a2": 2 * a, "b2": 2 * b, "bc": xb - xc}


def _prefactor(a=A_EXP, b=B_EXP, xa=XA, xb=XB):
    """sqrt(π/p) K_AB of one dimension: the integral of S_00."""
    p = a + b
    return math.sqrt(math.pi / p) * math.exp(-a * b / p * (xa - xb) ** 2)


def _quadrature(f, a=A_EXP, b=B_EXP, xa=XA, xb=XB):
    """∫ f(x) exp(-a (x-A)² - b (x-B)²) dx on a fine grid (the integrands are smooth)."""
    x = np.linspace(-12.0, 12.0, 48001)
    g = np.exp(-a * (x - xa) ** 2 - b * (x - xb) ** 2)
    return float(np.trapezoid(f(x) * g, x))


def _interpret(statements, coefficients, values=None):
    """{node: value} of the Recurrence statements (unrolled: int indices), one axis; seed 1."""
    val = dict(values or {})
    for s in statements:
        if not s.terms:
            val[s.target] = 1.0
            continue
        total = 0.0
        for t in s.terms:
            x = val[t.source] * (1.0 if t.multiplicity is None else t.multiplicity)
            total += x * (1.0 if t.coefficient is None else coefficients[t.coefficient])
        val[s.target] = total
    return val


def _table(kind, imax, jmax, coefficients):
    """{(i, j): value} of ``kind`` on axis x by the rules, requested node by node."""
    from hartree.integrals.rys_program import Schedule

    sched = Schedule(rules=rule)
    for i in range(imax + 1):
        for j in range(jmax + 1):
            sched.request(node(kind, "x", i, j))
    val = _interpret(sched.statements, coefficients)
    return {(i, j): val[node(kind, "x", i, j)] for i in range(imax + 1) for j in range(jmax + 1)}


def test_overlap_dipole_and_kinetic_rules_equal_their_integrals():
    c = _coefficients()
    pre = _prefactor()
    s, rs, bbs = (_table(k, 3, 3, c) for k in ("s", "rs", "bbs"))
    for (i, j), value in s.items():
        ref = _quadrature(lambda x, i=i, j=j: (x - XA) ** i * (x - XB) ** j)
        assert abs(value * pre - ref) < 1e-10 * max(1.0, abs(ref)), (i, j)
        ref = _quadrature(lambda x, i=i, j=j: (x - XA) ** i * (x - XB) ** j * (x - XC))
        assert abs(rs[i, j] * pre - ref) < 1e-10 * max(1.0, abs(ref)), (i, j)
        # -1/2 d²/dx² of the ket (x-B)^j e^(-b(x-B)²) over it: -1/2 (bbS) is the kinetic factor
        d2 = lambda x, j=j: (  # noqa: E731
            j * (j - 1) * (x - XB) ** (j - 2 if j >= 2 else 0) * (j >= 2)
            - 2 * B_EXP * (2 * j + 1) * (x - XB) ** j
            + 4 * B_EXP**2 * (x - XB) ** (j + 2)
        )
        ref = _quadrature(lambda x, i=i, d2=d2: -0.5 * (x - XA) ** i * d2(x))
        assert abs(-0.5 * bbs[i, j] * pre - ref) < 1e-10 * max(1.0, abs(ref)), (i, j)


@pytest.mark.parametrize("kind", ["s", "bbs"])
def test_derivative_rules_equal_finite_differences(kind):
    """(aX) and (bX), eqs. (3)-(4), are d/dA and d/dB of the integrals (prefactor included)."""
    h = 1e-5
    ca, cb = (_table(letter + kind, 2, 2, _coefficients()) for letter in "ab")
    pre = _prefactor()
    for (i, j), value in ca.items():

        def integral(xa=XA, xb=XB, i=i, j=j):
            return _table(kind, i + 1, j + 1, _coefficients(xa=xa, xb=xb))[i, j] * _prefactor(xa=xa, xb=xb)

        fd_a = (integral(xa=XA + h) - integral(xa=XA - h)) / (2 * h)
        fd_b = (integral(xb=XB + h) - integral(xb=XB - h)) / (2 * h)
        assert abs(value * pre - fd_a) < 1e-7 * max(1.0, abs(fd_a)), (i, j)
        assert abs(cb[i, j] * pre - fd_b) < 1e-7 * max(1.0, abs(fd_b)), (i, j)


def _random_coefficients(rng):
    """Per axis: every coefficient of the module docstring (base v's too), random."""
    v = {}
    for ax in "xyz":
        for name in ("pa", "pb", "ua", "ub", "bc"):
            v[name, ax] = rng.uniform(-1, 1)
    for name in ("hp", "hu", "a2", "b2"):
        for ax in "xyz":
            v[name, ax] = v.get((name, "x"), rng.uniform(0.2, 1.5))
    return v


def _unrolled_values(la, lb, outputs, v):
    """{(target, row, ia, ib): value} of the unrolled program, interpreted."""
    prog = unrolled_program(la, lb, outputs)
    val = {}
    for s in prog.tables:
        if not s.terms:
            val[s.target] = 1.0
            continue
        val[s.target] = sum(
            val[t.source]
            * (1.0 if t.multiplicity is None else t.multiplicity)
            * (1.0 if t.coefficient is None else v[t.coefficient, s.target.axis])
            for t in s.terms
        )
    out = {}
    for s in prog.sums:
        assert isinstance(s, Accumulate)
        total = sum(math.prod(val[f] for f in p) for p in s.products)
        key = (s.target, s.row) + s.pair
        out[key] = out.get(key, 0.0) + s.scale * total
    return out


def _sym(x, env):
    if isinstance(x, Sym):
        return x.scale * env[x.var] + x.offset
    if isinstance(x, Exponent):
        return env["exp"][x.shell][x.axis]
    return x


def _rolled_values(la, lb, outputs, v):
    """The same from the rolled program, its loops run with la, lb (one root: nroots = 1)."""
    prog = rolled_program(outputs)
    tables = {}

    def element(n, env):
        axis = "xyz"[env["d"]] if n.axis == "d" else n.axis
        return (n.kind, axis, _sym(n.index[0], env), _sym(n.index[1], env))

    def run(statements, env):
        for s in statements:
            if isinstance(s, Loop):
                stop = _sym(s.stop, env) + (1 if s.inclusive else 0)
                for k in range(s.start, stop):
                    run(s.body, env | {s.var: k})
            elif isinstance(s, Table):
                run(table_loops(s.kind, Sym("la", s.extents[0]), Sym("lb", s.extents[1])), env)
            elif isinstance(s, Recurrence):
                axis = "xyz"[env["d"]]
                total = 0.0 if s.terms else 1.0
                for t in s.terms:
                    m = _sym(t.multiplicity, env) if t.multiplicity is not None else 1
                    if m == 0:
                        continue  # the printers' guard (or padding)
                    c = 1.0 if t.coefficient is None else v[t.coefficient, axis]
                    total += m * c * tables[element(t.source, env)]
                tables[element(s.target, env)] = total
            elif isinstance(s, Define):
                pass
            else:
                raise TypeError(type(s))

    env = {"la": la, "lb": lb, "nroots": 1}
    run(prog.tables, env)
    out = {}
    (pairs,) = prog.sums
    assert isinstance(pairs, ComponentPairs)
    for ia, ea in enumerate(cart_components(la)):
        for ib, eb in enumerate(cart_components(lb)):
            e = env | {"exp": {"a": ea, "b": eb}, "r": 0}
            for s in pairs.body:
                total = sum(math.prod(tables[element(f, e | {"d": 0})] for f in p) for p in s.products)
                key = (s.target, s.row, ia, ib)
                out[key] = out.get(key, 0.0) + s.scale * total
    return out


OUTPUTS = (
    Output("m", 0, OVERLAP),
    Output("m", 1, KINETIC),
    *(Output("m", 2 + x, dipole(x)) for x in range(3)),
    *(Output("g" + c, x, derivative(KINETIC, c, x), "dm") for c in "ab" for x in range(3)),
    *(Output("w" + c, x, scaled(derivative(OVERLAP, c, x), -1.0), "wdm") for c in "ab" for x in range(3)),
)
NUC_OUTPUTS = (Output("v", 0, NUCLEAR), *(Output("dv", x, derivative(NUCLEAR, "a", x)) for x in range(3)))


@pytest.mark.parametrize("la,lb", [(0, 0), (1, 0), (1, 1), (2, 1), (3, 2), (4, 4)])
def test_unrolled_and_rolled_schedules_agree(la, lb):
    v = _random_coefficients(np.random.default_rng(la * 7 + lb))
    for outputs in (OUTPUTS, NUC_OUTPUTS):
        un = _unrolled_values(la, lb, outputs, v)
        ro = _rolled_values(la, lb, outputs, v)
        assert un.keys() == ro.keys()
        for k in un:
            assert abs(un[k] - ro[k]) <= 1e-12 * max(1.0, abs(un[k])), k


def test_numba_module_text_is_deterministic():
    text = os_codegen.module_source()
    assert text == os_codegen.module_source()
    assert "def table_base(" in text and "def prim_pair_accumulate(" in text and "def bra_derivative(" in text
