"""The intermediate representation of the Rys program (hartree.integrals.rys_program).

The programs are interpreted here in plain Python with random values of the coefficients of
eqs. (2)-(3) and of A-B, C-D: the two schedules (transfer per root on demand, as the CUDA
kernels; transfer after contraction in closed form, as the numba kernels) and the table
schedule of the cooperative kernels must give the same cartesian integrals of one root.
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
    Node,
    Recurrence,
    Store,
    components_range,
    contracted_program,
    node,
    quartet_program,
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
