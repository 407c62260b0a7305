"""Generator of unrolled Rys ERI kernels, one numba function per angular-momentum class.

For a class (l_a l_b | l_c l_d) (pairs stored with l_a >= l_b, l_c >= l_d) the emitted
function ``cart_<la><lb><lc><ld>(P, Q, pair_start, pp, pair_ab, out, roots, weights,
rys_table)`` writes the contracted cartesian block (ab|cd) (C order a, b, c, d) into
``out``.  It follows the recurrence spec of eri_prim.py / eri_kernel.py (the generic
kernels stay the reference; tests compare the two and both against PySCF):

* per primitive quartet: T, the prefactor 2 pi^(5/2)/(zeta eta sqrt(zeta+eta)) K_ab K_cd,
  and the Rys roots/weights -- inline from the Boys functions for one or two roots
  (as eri_prim.rys_low: Boys functions from the Taylor table, the closed two-root rule;
  branch-free, see _boys_lines), from rys.rys_roots_weights for more;
* per root, the 2-D integrals G_d(n, m) of eri_kernel.py eq. (2) as scalar locals (the
  recurrence unrolled for this class), and the quadrature eq. (1) summed into scalar
  accumulators of (e0|f0), l_a <= |e| <= l_a + l_b, l_c <= |f| <= l_c + l_d;
* after the primitive loops, the horizontal transfer eq. (3) (binomial form) on the bra
  and the ket, as straight-line expressions in the powers of A - B and C - D.

The recurrences, accumulations and transfers are not written here: this module is the numba
printer of :func:`hartree.integrals.rys_program.contracted_program` (the intermediate
representation that :mod:`hartree.gpu.codegen` prints as CUDA); it adds the frame (primitive
loops, Boys functions and roots, the pair data reads, the dispatcher and the driver).

``module_source(classes)`` adds ``cart_block_gen``, an if-chain over class ids
(``class_id``), and the J/K driver that uses it (template in eri_codegen_driver.py);
``load_module()`` writes the text as an entry of kind ``eri_gen`` of :mod:`hartree.cache`
(``<cache root>/eri_gen/eri_classes_<digest>.py``) and imports it.  The key holds the
generator version, the SHA-256 of the text and of every hartree module the text imports,
recursively (:func:`hartree.cache.module_sources`: eri_prim, rys, eri_kernel, eri_pairs, jk,
hartree/basis, ...), so that numba's ``cache=True`` entries (in ``eri_gen/__pycache__``,
keyed by numba by the module file's mtime and size) never outlive their sources.  Before
the import the file's content is checked against the text just generated; a file that
differs is written anew (a new mtime, so numba compiles again).  The generated file is a
build product: never committed, never edited.  Cold compile of the default set (13 classes,
l <= 2, total l <= 4) plus the driver: ~40 s CPU; cached by numba afterwards.
"""

import math

from hartree import cache
from hartree.integrals.eri_prim import _BOYS_NTAYLOR as BOYS_NTAYLOR
from hartree.integrals.eri_prim import BOYS_GRID, BOYS_TMAX
from hartree.integrals.rys_program import (
    ATTENUATION,
    ATTENUATION_ROOT,
    Accumulate,
    Recurrence,
    components_range,
    contracted_program,
    spell,
)

#: Bump when the emitted code changes meaning.
GEN_VERSION = 2
#: Classes generated: every (l_a l_b | l_c l_d) with l <= GEN_LMAX and total l <= GEN_LTOT.
GEN_LMAX = 2
GEN_LTOT = 4


def pair_class(l1, l2):
    """Index of a shell-pair class (l1 >= l2): ss 0, ps 1, pp 2, ds 3, dp 4, dd 5, ..."""
    return l1 * (l1 + 1) // 2 + l2


def class_id(la, lb, lc, ld):
    """Id of the quartet class; the bra pair class is the larger (bra/ket swapped by the
    caller otherwise)."""
    return pair_class(la, lb) * 64 + pair_class(lc, ld)


def default_classes(lmax=GEN_LMAX, ltot=GEN_LTOT):
    """Classes (la, lb, lc, ld), pair_class(la, lb) >= pair_class(lc, ld), to generate."""
    pairs = [(a, b) for a in range(lmax + 1) for b in range(a + 1)]
    out = []
    for la, lb in pairs:
        for lc, ld in pairs:
            if pair_class(lc, ld) <= pair_class(la, lb) and la + lb + lc + ld <= ltot:
                out.append((la, lb, lc, ld))
    return out


def _boys_lines(mneed, ind):
    """F_0..F_mneed of T = t as locals f0.. (eri_prim.boys_low), without branches so that
    LLVM can vectorise the primitive loop: the Taylor table at min(T, BOYS_TMAX) and the
    asymptote F_0 = sqrt(pi/T)/2, F_(m+1) = (2m+1) F_m / (2T) are both evaluated and one
    is selected.  The asymptote drops the e^-T terms of the upward recursion, which
    change F_m (m <= 3) by less than 1e-14 relatively for T >= BOYS_TMAX = 40.
    """
    lines = [
        f"{ind}tt = min(t, {BOYS_TMAX_S})",
        f"{ind}it = int(tt * {BOYS_GRID_S} + 0.5)",
        f"{ind}dd = it * {1.0 / BOYS_GRID!r} - tt",
    ]
    n = BOYS_NTAYLOR - 1
    for m in range(mneed + 1):
        expr = f"BT[it, {m + n}] * {1.0 / math.factorial(n)!r}"
        for k in range(n - 1, -1, -1):
            expr = f"({expr}) * dd + BT[it, {m + k}] * {1.0 / math.factorial(k)!r}"
        lines.append(f"{ind}f{m}t = {expr}")
    lines += [
        f"{ind}big = t >= {BOYS_TMAX_S}",
        f"{ind}ts = t if big else 1.0",
        f"{ind}f0a = {0.5 * math.sqrt(math.pi)!r} / math.sqrt(ts)",
    ]
    if mneed > 0:
        lines.append(f"{ind}ht = 0.5 / ts")
        for m in range(mneed):
            lines.append(f"{ind}f{m + 1}a = {float(2 * m + 1)!r} * f{m}a * ht")
    for m in range(mneed + 1):
        lines.append(f"{ind}f{m} = f{m}a if big else f{m}t")
    return lines


def _roots_lines(nr, ltot, ind):
    """Roots u0.. and weights w0.. (without the prefactor)."""
    if ltot == 0:
        return _boys_lines(0, ind) + [f"{ind}w0 = f0"]
    if nr == 1:
        return _boys_lines(1, ind) + [f"{ind}w0 = f0", f"{ind}u0 = f1 / f0"]
    if nr == 2:
        return _boys_lines(3, ind) + [
            f"{ind}rden = 1.0 / (f0 * f2 - f1 * f1)",
            f"{ind}c1 = (f1 * f2 - f0 * f3) * rden",
            f"{ind}c0 = (f1 * f3 - f2 * f2) * rden",
            f"{ind}big = 0.5 * (-c1 + math.sqrt(c1 * c1 - 4.0 * c0))",
            f"{ind}u0 = c0 / big",
            f"{ind}u1 = big",
            f"{ind}w1 = (f1 - f0 * u0) / (big - u0)",
            f"{ind}w0 = f0 - w1",
        ]
    lines = [f"{ind}rys_roots_weights({nr}, t, roots, weights, rys_table)"]
    for r in range(nr):
        lines += [f"{ind}u{r} = roots[{r}]", f"{ind}w{r} = weights[{r}]"]
    return lines


#: numba spelling of the coefficients of :mod:`hartree.integrals.rys_program` ({a}: the axis)
_COEFFICIENT_NAMES = {"c00": "c00{a}", "c0p": "d00{a}", "b10": "b10", "b01": "b01", "b00": "b00"}


def _node_name(node, r):
    """Local of a VRR node G_d(n, m) of root r: g<d><r>_<n>_<m>."""
    return f"g{node.axis}{r}_" + "_".join(str(i) for i in node.index)


def _root_lines(program, r, ind):
    """Root r of a contracted program: the coefficients of eqs. (2)-(3) that it uses, then its
    recurrences (eqs. (4)-(5); the seed of z is w_r times the prefactor of eq. (1))."""
    used = program.coefficients()
    lines = [f"{ind}eo = eta_s * u{r}", f"{ind}zo = zeta_s * u{r}"]
    if "b00" in used:
        lines.append(f"{ind}b00 = 0.5 * u{r} * izpe")
    if "b10" in used:
        lines.append(f"{ind}b10 = hz * (1.0 - eo)")
    if "b01" in used:
        lines.append(f"{ind}b01 = he * (1.0 - zo)")
    for d in "xyz":
        if "c00" in used:
            lines.append(f"{ind}c00{d} = pa{d} - eo * pq{d}")
        if "c0p" in used:
            lines.append(f"{ind}d00{d} = qc{d} + zo * pq{d}")
    for s in program.root:
        if not isinstance(s, Recurrence):
            continue
        if not s.terms:
            rhs = "1.0" if s.target.axis != "z" else f"w{r} * pref"
        else:
            parts = []
            for t in s.terms:
                f = [f"{float(t.multiplicity)!r}"] if t.multiplicity is not None else []
                f += [_COEFFICIENT_NAMES[t.coefficient].format(a=s.target.axis), _node_name(t.source, r)]
                parts.append(" * ".join(f))
            rhs = " + ".join(parts)
        lines.append(f"{ind}{_node_name(s.target, r)} = {rhs}")
    return lines


def _transfer_factor(term, ab):
    """Coefficient of one term of a closed-form transfer: binomial (when not 1) times the
    powers ab<d><p> of A-B (or C-D); '' when it is 1."""
    fac = [f"{float(term.binomial)!r}"] if term.binomial != 1 else []
    fac += [f"{ab}{d}{p}" for d, p in zip("xyz", term.powers) if p > 0]
    return " * ".join(fac)


def class_source(la, lb, lc, ld, attenuated=False):
    """Source text of the unrolled kernel for class (la lb | lc ld): the numba printing of
    :func:`hartree.integrals.rys_program.contracted_program`.  attenuated: the variant of
    erf(omega r12)/r12, with ``omega`` (bohr^-1) as the last argument and the statements of
    :data:`~hartree.integrals.rys_program.ATTENUATION` printed into the quartet's frame."""
    program = contracted_program((la, lb, lc, ld))
    n, m = la + lb, lc + ld
    ltot = n + m
    nr = program.nroots
    es = components_range(la, n)
    fs = components_range(lc, m)
    eidx = {e: i for i, e in enumerate(es)}
    fidx = {f: i for i, f in enumerate(fs)}
    name = f"cart_{la}{lb}{lc}{ld}"
    # error_model="numpy": no ZeroDivisionError checks (branches) in the primitive loop
    L = [
        "@numba.njit(cache=True, fastmath=_FM, error_model='numpy')",
        f"def {name}(P, Q, pair_start, pp, pair_ab, out, roots, weights, rys_table{_omega_arg(attenuated)}):",
        f'    """Cartesian ({la}{lb}|{lc}{ld}) block into out; {nr} Rys root(s)."""',
    ]
    for ie in range(len(es)):
        for jf in range(len(fs)):
            L.append(f"    s{ie}_{jf} = 0.0")
    L += [
        "    for p in range(pair_start[P], pair_start[P + 1]):",
        "        zeta = pp[p, 0]",
        "        izeta = pp[p, 8]",
        f"        cab = {2.0 * math.pi**2.5!r} * pp[p, 7] * izeta",
        "        px = pp[p, 1]",
        "        py = pp[p, 2]",
        "        pz = pp[p, 3]",
    ]
    if attenuated:
        L.insert(3, "    om2 = omega * omega")
    if n > 0:
        L += ["        pax = pp[p, 4]", "        pay = pp[p, 5]", "        paz = pp[p, 6]", "        hz = 0.5 * izeta"]
    L += [
        "        for q in range(pair_start[Q], pair_start[Q + 1]):",
        "            eta = pp[q, 0]",
        "            izpe = 1.0 / (zeta + eta)",
        "            pqx = px - pp[q, 1]",
        "            pqy = py - pp[q, 2]",
        "            pqz = pz - pp[q, 3]",
        "            t = zeta * eta * izpe * (pqx * pqx + pqy * pqy + pqz * pqz)",
        "            pref = cab * pp[q, 7] * pp[q, 8] * math.sqrt(izpe)",
    ]
    ind = " " * 12
    if m > 0:
        L += [f"{ind}qcx = pp[q, 4]", f"{ind}qcy = pp[q, 5]", f"{ind}qcz = pp[q, 6]", f"{ind}he = 0.5 * pp[q, 8]"]
    if ltot > 0:
        L += [f"{ind}eta_s = eta * izpe", f"{ind}zeta_s = zeta * izpe"]
    if attenuated:
        L += [f"{ind}{spell(t, _NUMBA_NAMES)} = {spell(e, _NUMBA_NAMES)}" for t, e in ATTENUATION]
    L += _roots_lines(nr, ltot, ind)
    if attenuated and ltot > 0:
        t, e = ATTENUATION_ROOT
        L += [f"{ind}{t}{r} = {spell(e, {**_NUMBA_NAMES, 'u': f'u{r}'})}" for r in range(nr)]
    if ltot == 0:
        L.append(f"{ind}s0_0 += w0 * pref")
    else:
        for r in range(nr):
            L += _root_lines(program, r, ind)
        # eq. (1), the roots unrolled: (e0|f0) summed over roots and primitive quartets
        for s in program.root:
            if isinstance(s, Accumulate):
                prods = [" * ".join(_node_name(f, r) for f in s.factors) for r in range(nr)]
                L.append(f"{ind}s{s.slot[0]}_{s.slot[1]} += " + " + ".join(prods))
    # the transfers, eq. (6) in closed form: s (e, f) -> h (ab, f) -> out (ab, cd)
    for ab, l, P in (("ab", lb, "P"), ("cd", ld, "Q")):
        for d, k in zip("xyz", range(3)):
            if l > 0:
                L.append(f"    {ab}{d}1 = pair_ab[{P}, {k}]")
            for pw in range(2, l + 1):
                L.append(f"    {ab}{d}{pw} = {ab}{d}{pw - 1} * {ab}{d}1")
    nab = len(program.bra_transfers)
    for iab, tr in enumerate(program.bra_transfers):
        for jf in range(len(fs)):
            expr = " + ".join(
                (f"{c} * " if (c := _transfer_factor(t, "ab")) else "") + f"s{eidx[t.source]}_{jf}" for t in tr.terms
            )
            L.append(f"    h{iab}_{jf} = {expr}")
    ncd = len(program.ket_transfers)
    for iab in range(nab):
        for jcd, tr in enumerate(program.ket_transfers):
            expr = " + ".join(
                (f"{c} * " if (c := _transfer_factor(t, "cd")) else "") + f"h{iab}_{fidx[t.source]}" for t in tr.terms
            )
            L.append(f"    out[{iab * ncd + jcd}] = {expr}")
    return "\n".join(L) + "\n"


#: numba spelling of the names of rys_program.ATTENUATION in the frame above
_NUMBA_NAMES = {"omega2": "om2", "rho": "zeta * eta * izpe", "T": "t", "sqrt": "math.sqrt"}


def _omega_arg(attenuated):
    """', omega' after the last argument of the attenuated variant's functions, else ''."""
    return ", omega" if attenuated else ""


# constants of eri_prim's Boys table, spelled out in the emitted text
BOYS_TMAX_S = repr(float(BOYS_TMAX))
BOYS_GRID_S = repr(float(BOYS_GRID))

_HEADER = '''"""GENERATED by hartree.integrals.eri_codegen (version {version}) -- do not edit.

Unrolled Rys ERI kernels for classes {classes}.
"""
import math

import numba

from hartree.integrals.eri_prim import BOYS_TABLE as BT
from hartree.integrals.rys import rys_roots_weights

_FM = {{"contract", "reassoc", "nsz"}}
'''


def _dispatch_source(classes, attenuated=False):
    """cart_block_gen(cid, ...) -> True when class id ``cid`` has a generated kernel."""
    om = _omega_arg(attenuated)
    L = [
        '@numba.njit(cache=True, inline="always")',
        "def cart_block_gen(cid, P, Q, pair_start, pp, pair_ab, out, roots, weights,",
        f"                   rys_table{om}):",
        '    """Run the generated kernel of class id cid; False when there is none."""',
    ]
    kw = "if"
    for la, lb, lc, ld in classes:
        L += [
            f"    {kw} cid == {class_id(la, lb, lc, ld)}:",
            (f"        cart_{la}{lb}{lc}{ld}(P, Q, pair_start, pp, pair_ab, out, roots, weights, rys_table{om})"),
        ]
        kw = "elif"
    L += ["    else:", "        return False", "    return True"]
    return "\n".join(L) + "\n"


def module_source(classes=None, attenuated=False):
    """Full text of the generated module (kernels, dispatcher, J/K driver); attenuated: the
    variant of erf(omega r12)/r12, every function taking ``omega`` (bohr^-1) last."""
    from hartree.integrals.eri_codegen_driver import driver_source

    classes = default_classes() if classes is None else classes
    parts = [_HEADER.format(version=GEN_VERSION, classes=classes)]
    parts += ["\n" + class_source(*c, attenuated=attenuated) for c in classes]
    parts += ["\n" + _dispatch_source(classes, attenuated), "\n" + driver_source(attenuated)]
    return "\n".join(parts)


def module_key(text):
    """Cache key of the generated module ``text`` (see the module docstring)."""
    return {
        "generator": "hartree.integrals.eri_codegen",
        "version": GEN_VERSION,
        "text_sha256": cache.sha256_bytes(text),
        "sources": cache.module_sources(text),
    }


def cache_dir():
    """Directory of generated modules: ``<cache root>/eri_gen`` (created private)."""
    return cache.kind_dir("eri_gen")


_LOADED = {}


def load_module(classes=None, attenuated=False):
    """Import (generating first if needed) the module for ``classes`` (default set); with
    ``attenuated`` the variant of erf(omega r12)/r12 (a separate module, compiled only when
    asked for)."""
    classes = tuple(default_classes() if classes is None else classes)
    if (classes, attenuated) in _LOADED:
        return _LOADED[(classes, attenuated)]
    text = module_source(list(classes), attenuated)
    key = module_key(text)
    mod = cache.import_generated(key, text, prefix="eri_classes_")  # rewritten when unlike ``text``
    _LOADED[(classes, attenuated)] = mod
    return mod
