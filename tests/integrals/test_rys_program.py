"""The intermediate representation of the Rys program (hartree.integrals.rys_program).

The programs are interpreted here in plain Python with random values of the coefficients of
eqs. (2)-(3) and of A-B, C-D: the schedules (transfer per root on demand, as the CUDA
kernels; transfer after contraction in closed form, as the numba kernels; loops over local
arrays, as the CUDA kernels of the largest classes) and the table schedule of the
cooperative kernels must give the same cartesian integrals of one root.
The printers are checked against the sources of the start-of-session tree by
``tools/dump_generated.py --check`` (byte-identical CUDA and numba text).
"""

import math

import numpy as np
import pytest

from hartree.basis import cart_components
from hartree.gpu import codegen
from hartree.integrals import eri_codegen
from hartree.integrals.rys_program import (
    Accumulate,
    ComponentBlock,
    Copy,
    Exponent,
    Loop,
    Node,
    Recurrence,
    Store,
    Sym,
    components_range,
    contracted_program,
    leaves,
    node,
    quartet_program,
    rolled_program,
    rule,
    table_program,
    transfers,
)

CLASSES = [(0, 0, 0, 0), (1, 0, 0, 0), (1, 1, 1, 0), (2, 1, 1, 1), (2, 2, 2, 0), (3, 2, 2, 1), (2, 2, 2, 2)]


def _values(rng):
    """Random coefficients of one root: per axis c00, c0p, AB, CD; shared b10, b01, b00; seeds."""
    v = {name: rng.uniform(-1, 1) for name in ("b10", "b01", "b00")}
    for ax in "xyz":
        for name in ("c00", "c0p", "AB", "CD"):
            v[name, ax] = rng.uniform(-1, 1)
        v["seed", ax] = rng.uniform(0.5, 1.5)
    return v


def _run(statements, v, given=None):
    """Interpret Recurrence statements: {node: value} (``given``: the input nodes)."""
    val = dict(given or {})
    for s in statements:
        if not isinstance(s, Recurrence):
            continue
        if not s.terms:
            val[s.target] = v["seed", s.target.axis]
            continue
        total = 0.0
        for t in s.terms:
            x = val[t.source]
            if t.multiplicity is not None:
                x *= t.multiplicity
            if t.coefficient in ("b10", "b01", "b00"):
                x *= v[t.coefficient]
            elif t.coefficient is not None:
                x *= v[t.coefficient, s.target.axis]
            total += x
        val[s.target] = total
    return val


def _quartet_block(cls, v):
    prog = quartet_program(cls)
    val = _run(prog.root, v)
    size = math.prod((l + 1) * (l + 2) // 2 for l in cls)
    out = np.zeros(size)
    for s in prog.root:
        if isinstance(s, Accumulate):
            out[s.slot] += np.prod([val[n] for n in s.factors])
    return out


def _contracted_block(cls, v):
    prog = contracted_program(cls)
    la, lb, lc, ld = cls
    val = _run(prog.root, v)
    es, fs = components_range(la, la + lb), components_range(lc, lc + ld)
    acc = np.zeros((len(es), len(fs)))
    for s in prog.root:
        if isinstance(s, Accumulate):
            acc[s.slot] += np.prod([val[n] for n in s.factors])
    eidx = {e: i for i, e in enumerate(es)}
    fidx = {f: i for i, f in enumerate(fs)}

    def apply(tr, ab, source):
        pw = [v[ab, ax] for ax in "xyz"]
        return sum(t.binomial * math.prod(p**k for p, k in zip(pw, t.powers)) * source(t.source) for t in tr.terms)

    h = np.array(
        [[apply(tr, "AB", lambda e, j=jf: acc[eidx[e], j]) for jf in range(len(fs))] for tr in prog.bra_transfers]
    )
    out = np.array(
        [[apply(tr, "CD", lambda f, i=iab: h[i, fidx[f]]) for tr in prog.ket_transfers] for iab in range(len(h))]
    )
    return out.ravel()


@pytest.mark.parametrize("cls", CLASSES)
def test_schedules_agree(cls):
    """Transfer per root on demand (CUDA) == transfer after contraction in closed form (numba)."""
    v = _values(np.random.default_rng(sum(cls)))
    a, b = _quartet_block(cls, v), _contracted_block(cls, v)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(a).max())


@pytest.mark.parametrize("cls", CLASSES)
def test_table_program_stores_every_transfer_node(cls):
    """The cooperative table holds I_v(i, j; k, l) for every index, at its layout offset,
    with the values of the on-demand schedule."""
    la, lb, lc, ld = cls
    stride = (lc + 1) * (ld + 1) + 1
    prog = table_program(cls, stride, axis="x")
    rng = np.random.default_rng(1)
    v = _values(rng)
    val = _run(prog.root, v, given={node("g", "x", 0, 0): v["seed", "x"]})  # the seed is an input
    stores = {s.offset: val[s.node] for s in prog.root if isinstance(s, Store)}
    assert len(stores) == (la + 1) * (lb + 1) * (lc + 1) * (ld + 1)
    ref = _run(quartet_program(cls).root, v)
    for i in range(la + 1):
        for j in range(lb + 1):
            for k in range(lc + 1):
                for l in range(ld + 1):
                    want = ref.get(node("e", "x", i, j, k, l))
                    if want is None:  # not needed by any component of the quartet program
                        continue
                    assert stores[(i * (lb + 1) + j) * stride + k * (ld + 1) + l] == pytest.approx(want, rel=1e-14)


def test_nodes_are_canonical_and_computed_once():
    assert node("h", "x", 2, 0, 1) == Node("g", "x", (2, 1))
    assert node("e", "y", 1, 1, 2, 0) == Node("h", "y", (1, 1, 2))
    prog = quartet_program((2, 2, 2, 2))
    targets = [s.target for s in prog.root if isinstance(s, Recurrence)]
    assert len(targets) == len(set(targets))
    defined = set()
    for s in prog.root:  # every source is defined before it is used
        if isinstance(s, Recurrence):
            assert all(t.source in defined for t in s.terms)
            defined.add(s.target)


def test_rules_are_the_papers_equations():
    """Eqs. (4)-(7) of hartree.integrals.rys_program, term by term."""
    g = lambda n, m: node("g", "x", n, m)  # noqa: E731
    assert rule(g(0, 0)).terms == ()
    assert [(t.coefficient, t.multiplicity, t.source) for t in rule(g(3, 0)).terms] == [
        ("c00", None, g(2, 0)),
        ("b10", 2, g(1, 0)),
    ]
    assert [(t.coefficient, t.multiplicity, t.source) for t in rule(g(2, 3)).terms] == [
        ("c0p", None, g(2, 2)),
        ("b01", 2, g(2, 1)),
        ("b00", 2, g(1, 2)),
    ]
    h = rule(node("h", "x", 1, 2, 3))
    assert [(t.coefficient, t.source) for t in h.terms] == [
        (None, node("h", "x", 2, 1, 3)),
        ("AB", node("h", "x", 1, 1, 3)),
    ]
    e = rule(node("e", "x", 1, 1, 2, 1))
    assert [(t.coefficient, t.source) for t in e.terms] == [
        (None, node("h", "x", 1, 1, 3)),
        ("CD", node("h", "x", 1, 1, 2)),
    ]


def test_transfers_closed_form():
    """(a b| for b = (1, 1, 0): four terms with binomials 1 and powers of A-B."""
    (tr,) = [t for t in transfers(1, 2) if t.a == (1, 0, 0) and t.b == (1, 1, 0)]
    assert sorted((t.binomial, t.powers, t.source) for t in tr.terms) == [
        (1, (0, 0, 0), (2, 1, 0)),
        (1, (0, 1, 0), (2, 0, 0)),
        (1, (1, 0, 0), (1, 1, 0)),
        (1, (1, 1, 0), (1, 0, 0)),
    ]
    assert [(t.a, t.b) for t in transfers(2, 1)] == [(a, b) for a in cart_components(2) for b in cart_components(1)]


def test_printers_spell_the_same_program():
    """The CUDA and numba printers print one statement per recurrence of their program."""
    cls = (2, 1, 1, 0)
    cuda = codegen.program_lines(quartet_program(cls))
    prog = quartet_program(cls)
    assert len(cuda) == len(prog.root)
    assert sum(line.lstrip().startswith("eri[") for line in cuda) == sum(isinstance(s, Accumulate) for s in prog.root)
    src = eri_codegen.class_source(*cls)
    nrec = sum(isinstance(s, Recurrence) for s in contracted_program(cls).root)
    nroot = contracted_program(cls).nroots
    assert sum(line.lstrip().startswith(("gx", "gy", "gz")) for line in src.splitlines()) == nrec * nroot


def _rolled_run(prog, v):
    """Interpret a rolled program as the CUDA printing runs it: loops, arrays indexed at run
    time ({(kind, axis 0-2, index...): value}; reading an element never written fails), a
    term of run-time multiplicity 0 skipped, the component blocks.  Returns the eri slice,
    ((a - a0) nb' + b - b0) nc nd + c nd + d."""
    la, lb, lc, ld = prog.cls
    ca, cb = cart_components(la), cart_components(lb)
    ncd = len(cart_components(lc)) * len(cart_components(ld))
    arrays = {}
    out = {}

    def ev(x, env):
        if isinstance(x, Sym):
            return x.scale * env[x.var] + x.offset
        if isinstance(x, Exponent):
            return env[x.shell][x.axis]
        return x

    def key(n, env):
        axis = "xyz".index(n.axis) if n.axis in "xyz" else env[n.axis]
        idx = tuple(ev(i, env) for i in n.index)
        assert min(idx) >= 0, (n, env)
        return (n.kind, axis) + idx

    def run(statements, env):
        for s in statements:
            if isinstance(s, Loop):
                for x in range(s.start, ev(s.stop, env) + s.inclusive):
                    run(s.body, {**env, s.var: x})
            elif isinstance(s, Copy):
                arrays[key(s.target, env)] = arrays[key(s.source, env)]
            elif isinstance(s, Recurrence):
                k = key(s.target, env)
                ax = "xyz"[k[1]]
                total = 0.0 if s.terms else v["seed", ax]
                for t in s.terms:
                    mult = ev(t.multiplicity, env) if t.multiplicity is not None else 1
                    if mult == 0:  # the printers' guard (m ? ... : 0.0)
                        continue
                    x = arrays[key(t.source, env)] * mult
                    if t.coefficient in ("b10", "b01", "b00"):
                        x *= v[t.coefficient]
                    elif t.coefficient is not None:
                        x *= v[t.coefficient, ax]
                    total += x
                arrays[k] = total
            elif isinstance(s, ComponentBlock):
                for ia in range(s.a0, s.a1):
                    for ib in range(s.b0, s.b1):
                        base = ((ia - s.a0) * (s.b1 - s.b0) + ib - s.b0) * ncd
                        inner = {**env, "a": ca[ia], "b": cb[ib]}
                        for acc in s.body:
                            prod = np.prod([arrays[key(f, inner)] for f in acc.factors])
                            out[base + acc.slot] = out.get(base + acc.slot, 0.0) + prod
            else:
                raise TypeError(s)

    run(prog.root, {})
    return np.array([out[i] for i in range(len(out))])


@pytest.mark.parametrize("cls", [(1, 0, 0, 0), (2, 1, 1, 0), (2, 2, 2, 1), (3, 2, 2, 2), (4, 3, 2, 0)])
def test_rolled_schedule_agrees_with_quartet_program(cls):
    """Loops over local arrays (the CUDA loop version) == transfer per root on demand."""
    v = _values(np.random.default_rng(7 + sum(cls)))
    a, b = _rolled_run(rolled_program(cls), v), _quartet_block(cls, v)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_rolled_slice_agrees_with_quartet_slice():
    """A slice a in [1, 4), b in [2, 5) of (ddd|p): the component block and its slots."""
    cls = (2, 2, 2, 1)
    v = _values(np.random.default_rng(3))
    sliced = _rolled_run(rolled_program(cls, (1, 4, 2, 5)), v)
    prog = quartet_program(cls, range(1, 4), range(2, 5))
    val = _run(prog.root, v)
    ref = np.zeros(len(sliced))
    for s in prog.root:
        if isinstance(s, Accumulate):
            ref[s.slot] += np.prod([val[n] for n in s.factors])
    np.testing.assert_allclose(sliced, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_rolled_bodies_are_the_rules():
    """Every recurrence of the rolled schedule is :func:`rule` of its target (run-time
    indices), every copy is the canonical identity of :func:`node`."""
    prog = rolled_program((3, 2, 2, 1))
    stmts = list(leaves(prog.root))
    recs = [s for s in stmts if isinstance(s, Recurrence)]
    assert len(recs) == 5  # the seed and one statement per equation (4)-(7)
    assert all(rule(s.target) == s for s in recs)
    n, m = Sym("n"), Sym("m")
    (eq5,) = [s for s in recs if s.target == Node("g", "d", (n, m + 1))]
    assert [(t.coefficient, t.multiplicity, t.source) for t in eq5.terms] == [
        ("c0p", None, Node("g", "d", (n, m))),
        ("b01", m, Node("g", "d", (n, m - 1))),
        ("b00", n, Node("g", "d", (n - 1, m))),
    ]
    copies = [s for s in stmts if isinstance(s, Copy)]
    assert [c.source.kind for c in copies] == ["g", "h"]
    assert prog.coefficients() == {"c00", "c0p", "b10", "b01", "b00", "AB", "CD"}
    lines = codegen.rolled_lines(prog, "3221")  # one assignment per recurrence and copy
    assert sum(line.count("] = ") for line in lines) == len(recs) + len(copies)
    accs = [s for s in stmts if isinstance(s, Accumulate)]
    assert len(accs) == 6 * 3 and sum(line.lstrip().startswith("out[") for line in lines) == len(accs)
