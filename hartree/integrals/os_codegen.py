"""numba printer of the one-electron programs, and the generated module of the CPU
one-electron kernels (overlap, kinetic energy, nuclear attraction, dipole, and the first
derivatives an SCF gradient needs).

The recurrences are not written here.  Each operator of :data:`OPERATORS` is a list of
outputs (:class:`hartree.integrals.os_program.Output`), printed from its
:func:`~hartree.integrals.os_program.rolled_program`: loops over run-time index ranges, so
that one compiled function serves every l (a function per class would be compiled per
class, as the CUDA kernels of the same programs are).  The printing:

* the tables of the two bases (eqs. (1)-(2) and (8)) by one procedure, ``table_base``
  (:func:`base_procedure`), called per table (per root for base v); the tables of the
  operators (eqs. (3)-(5)) as their loops, written out (:func:`_table_lines`);
* the tables are padded (value (i, j) at [d, i + 1, j + 1], row and column 0 zero), so
  that a term of run-time multiplicity 0 needs no branch;
* ``prim_pair_accumulate(op, ...)`` (:func:`prim_source`): the frame's per-primitive-pair
  template with the operators' tables in an if-chain over the codes, then one loop over the
  cartesian pairs per group (without, with Rys roots) whose body is an if-chain of their
  accumulations;
* ``bra_derivative`` (:func:`derivative_source`): eq. (3) on the contracted blocks of the
  raised and lowered bra shell, which the gradient computes with the same kernels.

The module (:func:`module_source`) holds these, constants the frame reads (rows and Rys
raise per operator, sizes of the tables) and the frame: the shell-pair loops, the matrix
and the gradient drivers (template in :mod:`hartree.integrals.one_electron_frame`).  Like
the ERI module of :mod:`hartree.integrals.eri_codegen`, :func:`load_module` writes the text
as an entry of kind ``eri_gen`` of :mod:`hartree.cache`
(``<cache root>/eri_gen/one_electron_<digest>.py``), keyed by the generator version, the
text's SHA-256 and every hartree module the text imports, and imports it; numba caches its
compiled code beside it (``eri_gen/__pycache__``).  The generated file is a build product:
never committed, never edited.
"""

from hartree import cache
from hartree.integrals.os_program import (
    BASES,
    KINETIC,
    NUCLEAR,
    OVERLAP,
    ROOT_BASE,
    ComponentPairs,
    Define,
    Output,
    Table,
    dipole,
    node,
    rolled_program,
    rule,
    table_loops,
)
from hartree.integrals.rys_program import Exponent, Loop, Recurrence, Sym

#: Bump when the emitted code changes meaning.
GEN_VERSION = 1


def _rows(integrals):
    return tuple(Output("block", row, integral) for row, integral in enumerate(integrals))


#: The CPU kernels' operators, in the order of their codes: (name, outputs).  The block of
#: one shell pair is (rows, ncart(l_a), ncart(l_b)).  The gradient's derivatives are eq. (3)
#: of :mod:`~hartree.integrals.os_program` on the blocks of the raised and lowered bra shell
#: (:func:`derivative_source`), so that it reuses these kernels.
OPERATORS = (
    ("overlap", _rows([OVERLAP])),
    ("kinetic", _rows([KINETIC])),
    ("nuclear", _rows([NUCLEAR])),
    ("dipole", _rows([dipole(x) for x in range(3)])),
)
OP_OVERLAP, OP_KINETIC, OP_NUCLEAR, OP_DIPOLE = range(len(OPERATORS))

#: numba spelling of the coefficients in the loops over the axes d: expressions of the
#: frame's P, A, B, origin, exponents a, b, 1/(2p), the nucleus c and the root's u
_COEFFICIENTS = {
    "pa": "(P[d] - A[d])",
    "pb": "(P[d] - B[d])",
    "hp": "hp",
    "ua": "(P[d] - A[d] - u * (P[d] - coords[c, d]))",
    "ub": "(P[d] - B[d] - u * (P[d] - coords[c, d]))",
    "hu": "hu",
    "a2": "2.0 * a",
    "b2": "2.0 * b",
    "bc": "(B[d] - origin[d])",
}

#: statements of :class:`~hartree.integrals.os_program.Define`: u = u_r, 1/(2p) of eq. (8),
#: and the seed of z (the weight times the prefactor, which holds -Z)
_DEFINE = ("u = rys_u[r]", "hu = (1.0 - u) * hp", "wr = pref * rys_w[r]")

#: the seed of each base on axis d (the base procedure's last argument)
_SEEDS = {"s": "1.0", "v": "(wr if d == 2 else 1.0)"}


def _index(x):
    """Python spelling of an index: 3, i, i + 1, j - 1, -j, la + 2, ax (an exponent)."""
    if isinstance(x, Exponent):
        return x.shell + "xyz"[x.axis]
    if isinstance(x, Sym):
        head = x.var if x.scale > 0 else f"-{x.var}"
        return head if x.offset == 0 else f"{head} {'+' if x.offset > 0 else '-'} {abs(x.offset)}"
    return str(x)


def _element(n, tables=None):
    """Table element of a node: t_bs[d, i + 1, j + 2], t_v[r, 2, ax, bx] (root first).  The
    tables are padded: value (i, j) at [i + 1, j + 1], row and column 0 zero (never
    written), so that a term of run-time multiplicity 0 (i S_(i-1)j at i = 0) is 0 × 0 and
    needs no branch.  ``tables``: {kind: array name} where it is not t_<kind> (ending in
    "[d]": a view of one axis, indexed without it)."""
    axis = [n.axis if n.axis not in "xyz" else str("xyz".index(n.axis))]
    i, j, *root = n.index
    name = (tables or {}).get(n.kind, f"t_{n.kind}")
    if name.endswith("[d]"):  # a view of one axis
        name, axis = name[:-3], []
    return f"{name}[" + ", ".join([_index(r) for r in root] + axis + [_index(_plus1(i)), _index(_plus1(j))]) + "]"


def _plus1(x):
    """x + 1 of an index; an Exponent stays (its local, ax, holds the padded index)."""
    return x if isinstance(x, Exponent) else x + 1


def _rhs(rec, spelling):
    """Right-hand side of a Recurrence: [multiplicity *] [coefficient *] source per term, a
    negative multiplicity as a subtraction (a run-time one needs no guard: padded tables);
    the seed: ``spelling["seed"]``.  ``spelling``: {coefficient: text, "seed": text,
    "tables": {kind: array}}."""
    if not rec.terms:
        return spelling["seed"]
    out = ""
    for t in rec.terms:
        m = t.multiplicity
        negative = (m.scale < 0) if isinstance(m, Sym) else (m is not None and m < 0)
        size = (0 - m if negative else m) if m is not None else None
        f = [_index(size) if isinstance(size, Sym) else f"{size}.0"] if size is not None else []
        if t.coefficient is not None:
            f.append(spelling[t.coefficient])
        f.append(_element(t.source, spelling["tables"]))
        term = " * ".join(f)
        if not out:
            if negative:
                raise ValueError("a recurrence's first term is negative")
            out = term
        else:
            out += (" - " if negative else " + ") + term
    return out


def _accumulate(s, pad, local):
    """Lines of one Accumulate in the loops over the pairs: block[row, ia, ib] += scale ×
    pref × Σ products (factors: ``local`` names or table elements); summed over the roots,
    the prefactor is in the seeds."""
    total = " + ".join(" * ".join(local.get(f) or _element(f) for f in p) for p in s.products)
    scale = "" if s.scale == 1.0 else f"{s.scale!r} * "
    if s.weight is not None:
        raise ValueError("the CPU kernels contract after the primitive loops: no weights")
    if s.roots is None:
        return [f"{pad}block[{s.row}, ia, ib] += {scale}pref * ({total})"]
    return [
        f"{pad}acc = 0.0",
        f"{pad}for r in range({s.roots}):",
        f"{pad}    acc += {total}",
        f"{pad}block[{s.row}, ia, ib] += {scale}acc",
    ]


def _pair_body(body, pad):
    """The accumulations of one pair: the factors without a root read once into locals
    (s_x = t_s[0, ax, bx]), then one line per Accumulate."""
    local = {}
    for s in body:
        if s.roots is None:
            for f in (f for p in s.products for f in p):
                local.setdefault(f, f"{f.kind}_{f.axis}")
    lines = [f"{pad}{name} = {_element(f)}" for f, name in local.items()]
    return lines + [line for s in body for line in _accumulate(s, pad, local)]


def _pairs_header(pad):
    """The loops over the cartesian pairs (a, b) of shells la, lb with the padded exponents
    ax.. of a and bx.. of b; the body goes at ``pad`` + 8 spaces."""
    return (
        [f"{pad}for ia in range((la + 1) * (la + 2) // 2):"]
        + [f"{pad}    a{c} = cart_xyz[la, ia, {x}] + 1" for x, c in enumerate("xyz")]
        + [f"{pad}    for ib in range((lb + 1) * (lb + 2) // 2):"]
        + [f"{pad}        b{c} = cart_xyz[lb, ib, {x}] + 1" for x, c in enumerate("xyz")]
    )


def _statements(statements, pad, spelling=None):
    """Lines of rolled statements at indentation ``pad`` (``spelling``: see :func:`_rhs`)."""
    lines = []
    for s in statements:
        if isinstance(s, Loop):
            stop = s.stop + 1 if s.inclusive else s.stop
            lines.append(f"{pad}for {s.var} in range({s.start}, {_index(stop)}):")
            lines += _statements(s.body, pad + "    ", spelling)
        elif isinstance(s, Recurrence):
            lines.append(f"{pad}{_element(s.target, spelling['tables'])} = {_rhs(s, spelling)}")
        elif isinstance(s, Define):
            lines += [pad + x for x in _DEFINE]
        elif isinstance(s, Table):
            lines += _table_lines(s, pad)
        elif isinstance(s, ComponentPairs):
            lines += _pairs_header(pad) + _pair_body(s.body, pad + " " * 8)
        else:
            raise TypeError(f"no numba spelling of {type(s).__name__}")
    return lines


def base_procedure():
    """``table_base(t, ni, nj, ca, cb, h, seed)``: the table of a base on one axis (t a view
    (i, j)) for i <= ni, j <= nj, the printing of the body of the loop over the axes of
    :func:`~hartree.integrals.os_program.table_loops`; one procedure for both bases (the
    same eqs. (1)-(2): coefficients and seed are its parameters; the two printings are
    checked equal)."""
    texts = set()
    for kind, (ca, cb, h) in BASES.items():
        spelling = {ca: "ca", cb: "cb", h: "h", "seed": "seed", "tables": {kind: "t[d]"}}
        (axes,) = table_loops(kind, Sym("ni"), Sym("nj"))
        texts.add("\n".join(_statements(axes.body, "    ", spelling)))
    if len(texts) != 1:
        raise ValueError("the bases' recurrences differ: they need procedures of their own")
    head = [
        "@numba.njit(cache=True)",
        "def table_base(t, ni, nj, ca, cb, h, seed):",
        '    """A table of eqs. (1)-(2) for i <= ni, j <= nj, value (i, j) at t[i + 1, j + 1]."""',
    ]
    return "\n".join(head + [texts.pop()]) + "\n"


#: spelling of the rolled statements in the per-primitive function (tables t_<kind>)
_SPELLING = _COEFFICIENTS | {"tables": {}}


def _base_call(kind, last_i, last_j, pad):
    """The loop over the axes calling the base procedure for the table of ``kind`` (a
    root's for base v) up to (last_i, last_j) (texts)."""
    ca, cb, h = BASES[kind]
    view = f"t_{kind}[r, d]" if kind.endswith(ROOT_BASE) else f"t_{kind}[d]"
    args = f"{_COEFFICIENTS[ca]}, {_COEFFICIENTS[cb]}, {_COEFFICIENTS[h]}, {_SEEDS[kind]}"
    return [f"{pad}for d in range(3):", f"{pad}    table_base({view}, {last_i}, {last_j}, {args})"]


def _table_lines(s, pad):
    """The statements that fill the base Table ``s``: :func:`_base_call`."""
    return _base_call(s.kind, _index(Sym("la", s.extents[0])), _index(Sym("lb", s.extents[1])), pad)


def _expand_tables(statements):
    """The tables of a rolled program for printing: a Table of an operator (eqs. (3)-(5))
    becomes the loops of its rule (:func:`~hartree.integrals.os_program.table_loops`),
    consecutive loops over the axes merged into one; base Tables stay (procedure calls)."""
    out = []
    for s in statements:
        if isinstance(s, Table) and s.kind not in BASES:
            root = (Sym("r"),) if s.kind.endswith(ROOT_BASE) else ()
            out += table_loops(s.kind, Sym("la", s.extents[0]), Sym("lb", s.extents[1]), *root)
        elif isinstance(s, Loop):
            out.append(s._replace(body=_expand_tables(s.body)))
        else:
            out.append(s)
    return _merge_axis_loops(out)


def _merge_axis_loops(statements):
    """Consecutive loops over the axes d (the tables of the operators, eqs. (3)-(5)) as one
    loop whose body holds theirs, in order (each table still follows the one it reads)."""
    out = []
    for s in statements:
        if isinstance(s, Loop) and s.var == "d" and out and isinstance(out[-1], Loop) and out[-1].var == "d":
            out[-1] = out[-1]._replace(body=out[-1].body + s.body)
        else:
            out.append(s)
    return tuple(out)


def _slots(ops):
    """{kind: (array, slot)} for the tables of operators ``ops``: one slot per kind in ``tab``
    (no root) or ``rtab`` (base v), shared by the operators of one function."""
    kinds = []
    for code in ops:
        kinds += [k for k, _ in rolled_program(OPERATORS[code][1]).arrays if k not in kinds]
    plain = [k for k in kinds if not k.endswith(ROOT_BASE)]
    rooted = [k for k in kinds if k.endswith(ROOT_BASE)]
    return {k: ("tab", n) for n, k in enumerate(plain)} | {k: ("rtab", n) for n, k in enumerate(rooted)}


def _chain(parts, pad, alone=False):
    """if op == code: <lines> elif ... over ``parts`` [(code, lines at pad + 4)]; ``alone``:
    the one part of a group of one operator, without the test."""
    if alone and parts:
        return [line[4:] for line in parts[0][1]]
    lines = []
    for n, (code, body) in enumerate(parts):
        lines += [f"{pad}{'if' if n == 0 else 'elif'} op == {code}:"] + body
    return lines


def _group_lines(ops, pad):
    """The printed programs of operators ``ops`` (all with roots, or none): their tables in an
    if-chain over the codes, then one loop over the cartesian pairs whose body is an if-chain
    of their accumulations ("pass" when there are none).  A base table that every program
    fills first is filled before the chain, once, its extents per operator from a tuple (one
    call site of the base procedure, as numba inlines each)."""
    if not ops:
        return [f"{pad}pass"]
    programs = [(code, rolled_program(OPERATORS[code][1])) for code in ops]
    lines = []
    for code, program in programs:
        ext = ", ".join(f"{k} (la + {i}, lb + {j})" for k, (i, j) in program.arrays)
        lines.append(f"{pad}# {OPERATORS[code][0]}: tables {ext}")
    first = {p.tables[0].kind if isinstance(p.tables[0], Table) else None for _, p in programs}
    skip = 0
    if len(programs) > 1 and len(first) == 1 and first <= set(BASES):
        (kind,) = first
        ext = [(0, 0)] * len(OPERATORS)
        for code, p in programs:
            ext[code] = p.tables[0].extents
        ki, kj = (tuple(e[x] for e in ext) for x in (0, 1))
        lines += _base_call(kind, f"la + {ki!r}[op]", f"lb + {kj!r}[op]", pad)
        skip = 1
    tables, sums = [], []
    for code, program in programs:
        body = _statements(_expand_tables(program.tables[skip:]), pad + "    ", _SPELLING)
        if body:
            tables.append((code, body))
        (pairs,) = program.sums
        sums.append((code, _pair_body(pairs.body, pad + " " * 12)))
    alone = len(programs) == 1
    return lines + _chain(tables, pad, alone) + _pairs_header(pad) + _chain(sums, pad + " " * 8, alone)


def _constants():
    """Module constants the frame reads: operator codes, rows per operator (NCOMP), the raise
    of l_a + l_b of the Rys rule per operator (ROOTS; -1: no roots), the number of tables
    (NTAB, NRTAB: the slots of :func:`_slots`) and how far they reach beyond l_a, l_b
    (IEXTRA, JEXTRA)."""
    roots, iextra, jextra = [], 0, 0
    for _, outputs in OPERATORS:
        ext = dict(rolled_program(outputs).arrays)
        v = ext.get(ROOT_BASE)
        roots.append(-1 if v is None else v[0] + v[1])
        iextra = max([iextra] + [i for i, _ in ext.values()])
        jextra = max([jextra] + [j for _, j in ext.values()])
    slots = [where for where, _ in _slots(range(len(OPERATORS))).values()]
    return [
        *(f"OP_{name.upper()} = {code}" for code, (name, _) in enumerate(OPERATORS)),
        f"NCOMP = {tuple(len(outputs) for _, outputs in OPERATORS)!r}",
        f"ROOTS = {tuple(roots)!r}",
        f"NTAB = {max(1, slots.count('tab'))}",
        f"NRTAB = {max(1, slots.count('rtab'))}",
        f"IEXTRA = {iextra}",
        f"JEXTRA = {jextra}",
    ]


def prim_source(name, ops):
    """The per-primitive-pair function ``name`` of the operators ``ops``: the frame's template
    with the printed programs in place (views of the scratch tables, then the operators
    without roots and those with)."""
    from hartree.integrals.one_electron_frame import PRIM_TEMPLATE

    rooted = [c for c in ops if any(k.endswith(ROOT_BASE) for k, _ in rolled_program(OPERATORS[c][1]).arrays)]
    slots = _slots(ops)
    nrooted = sum(where == "rtab" for where, _ in slots.values())
    views = ["    nrmax = rtab.shape[0] // NRTAB"] if nrooted > 1 else []
    for k, (where, n) in slots.items():
        if where == "tab":
            views.append(f"    t_{k} = tab[{n}]")
        else:
            views.append(f"    t_{k} = rtab[{n} * nrmax : {n + 1} * nrmax]" if nrooted > 1 else f"    t_{k} = rtab")
    return PRIM_TEMPLATE.format(
        name=name,
        ops=", ".join(OPERATORS[c][0] for c in ops),
        views="\n".join(views),
        plain="\n".join(_group_lines([c for c in ops if c not in rooted], " " * 8)),
        rooted="\n".join(_group_lines(rooted, " " * 8)),
    )


def derivative_source():
    """``bra_derivative(la, ncb, up, down, cart_xyz, out)``: eq. (3) of
    :mod:`~hartree.integrals.os_program` on contracted cartesian blocks, the printing of its
    rule with the exponent of the component of shell la along d as the index i: the term of
    coefficient 2a from the block of the raised shell la + 1 (``up``: 2a is in its primitive
    weights) at a + 1_d, the term of multiplicity -i from the lowered shell's block (``down``)
    at a - 1_d, guarded at i = 0; out[d, a, b] (d/dA_d, b < ncb).  Component indices:
    (l - a_x)(l - a_x + 1)/2 + a_z in shell l (PySCF order)."""
    rhs = ""
    for t in rule(node("aX", "d", Sym("i"), Sym("j"))).terms:
        raised = t.source.index[0] == Sym("i", 1)
        element = "up[0, iu, ib]" if raised else "down[0, idn, ib]"
        if raised:
            if t.coefficient != "a2" or t.multiplicity is not None:
                raise ValueError("eq. (3): the raised term is expected as 2a X(i+1)")
            rhs = element
        else:
            if t.coefficient is not None or t.multiplicity != Sym("i", 0, -1):
                raise ValueError("eq. (3): the lowered term is expected as -i X(i-1)")
            rhs += f" - (i * {element} if i != 0 else 0.0)"
    lines = [
        "@numba.njit(cache=True)",
        "def bra_derivative(la, ncb, up, down, cart_xyz, out):",
        '    """d/dA_d of the block of shell la from the raised (up) and lowered (down) blocks."""',
        "    for ia in range((la + 1) * (la + 2) // 2):",
        "        ax = cart_xyz[la, ia, 0]",
        "        az = cart_xyz[la, ia, 2]",
        "        for d in range(3):",
        "            i = cart_xyz[la, ia, d]",
        "            iu = (la - ax + 1 - (d == 0)) * (la - ax + 2 - (d == 0)) // 2 + az + (d == 2)",
        "            idn = (la - ax - 1 + (d == 0)) * (la - ax + (d == 0)) // 2 + az - (d == 2)",
        "            for ib in range(ncb):",
        f"                out[d, ia, ib] = {rhs}",
    ]
    return "\n".join(lines) + "\n"


_HEADER = '''"""GENERATED by hartree.integrals.os_codegen (version {version}) -- do not edit.

The CPU one-electron kernels: the numba printing of hartree.integrals.os_program (rolled
schedule) and the frame of hartree.integrals.one_electron_frame.
"""
import math

import numba
import numpy as np

from hartree.integrals.gaussian_product import angular_factor, product_centre, product_exponent
from hartree.integrals.rys import rys_roots_weights

'''


def module_source():
    """Full text of the generated module (constants, per-primitive functions, frame)."""
    from hartree.integrals.one_electron_frame import FRAME_SOURCE

    parts = [_HEADER.format(version=GEN_VERSION) + "\n".join(_constants()) + "\n"]
    parts += ["\n" + base_procedure(), prim_source("prim_pair_accumulate", range(len(OPERATORS)))]
    parts += ["\n" + derivative_source()]
    parts += [FRAME_SOURCE]
    return "\n".join(parts)


def module_key(text):
    """Cache key of the generated module ``text``."""
    return {
        "generator": "hartree.integrals.os_codegen",
        "version": GEN_VERSION,
        "text_sha256": cache.sha256_bytes(text),
        "sources": cache.module_sources(text),
    }


_LOADED = []


def load_module():
    """Import (generating first if needed) the module of the CPU one-electron kernels."""
    if _LOADED:
        return _LOADED[0]
    text = module_source()
    key = module_key(text)
    mod = cache.import_generated(key, text, prefix="one_electron_")  # rewritten when unlike ``text``
    _LOADED.append(mod)
    return mod
