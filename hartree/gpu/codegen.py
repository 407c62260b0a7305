"""CUDA C generator, integral part: Rys quadrature for one shell-quartet class.

For a class (la lb|lc ld) (la >= lb, lc >= ld) this module writes, as plain text:

* ``rys_<n>`` (:func:`rys_function`): in-kernel evaluation of the n-root Rys rule from
  the shared Chebyshev table (:mod:`hartree.gpu.tables`; Clenshaw recurrence; asymptote
  u = v/T, w = λ/√T);
* ``eri_<cls><suffix>`` (:func:`eri_function`): the contracted cartesian block (ab|cd) of
  one shell quartet, or a slice of it (some a / b components), by Rys quadrature with the
  2-D recurrences written out as scalar statements for the class; classes above
  :data:`GENERIC_LIMIT` components use loops over local arrays instead (with the (c, d)
  components of each (a, b) written out, and optionally run-time slice bounds).

The recurrences are not written here: the scalar statements are the CUDA printing
(:func:`program_lines`) of the class's program in :mod:`hartree.integrals.rys_program`
(the intermediate representation that the numba generator prints too), and the loop
version (:func:`_root_body_loops`) is the printing (:func:`rolled_lines`) of its rolled
schedule (:func:`~hartree.integrals.rys_program.rolled_program`).  What this module adds is
the frame around them: primitive loops, Rys roots, the coefficients (2)-(3) and the
cartesian exponent tables of the loop version.

The J/K kernels that call these are written by :mod:`hartree.gpu.jk_kernels`.

Equations (Rys, Dupuis & King, J. Comput. Chem. 4, 154 (1983); u = t² a Rys root,
ζ = a+b, η = c+d, P, Q Gaussian product centres):

    (ab|cd) = 2π^(5/2) / (ζη sqrt(ζ+η)) K_AB K_CD Σ_r w_r I_x(r) I_y(r) I_z(r)      (1)
    B00 = u / (2(ζ+η)),  B10 = (1 - η u/(ζ+η)) / (2ζ),  B01 = (1 - ζ u/(ζ+η)) / (2η)  (2)
    C00 = (P-A) - η u/(ζ+η) (P-Q),   C00' = (Q-C) + ζ u/(ζ+η) (P-Q)                 (3)
    G(n+1,0) = C00 G(n,0) + n B10 G(n-1,0)                                          (4)
    G(n,m+1) = C00' G(n,m) + m B01 G(n,m-1) + n B00 G(n-1,m)                        (5)
    I(i,j+1;m) = I(i+1,j;m) + (A-B) I(i,j;m)          (bra transfer, HRR)          (6)
    I(i,j;k,l+1) = I(i,j;k+1,l) + (C-D) I(i,j;k,l)    (ket transfer)               (7)

with G(0,0) = 1 for x and y and G(0,0) = w_r × prefactor of (1) for z.  K_AB includes
the contraction coefficients and the angular factors f(l) (see ``pairs.py``).

The text is deterministic: the same arguments give byte-identical source, which is
hashed into the compile cache key together with :data:`GENERATOR_VERSION`.
"""

import re
from math import pi

from hartree.basis.angular import cart_components, ncart
from hartree.integrals.rys_program import (
    ATTENUATION,
    ATTENUATION_ROOT,
    Accumulate,
    ComponentBlock,
    Copy,
    Exponent,
    Loop,
    Recurrence,
    Sym,
    nroots,
    quartet_program,
    rolled_program,
    spell,
)

GENERATOR_VERSION = "5"

#: threads per block edge; a block is TILE x TILE (bra pair, ket pair) quartets
TILE = 16

#: second argument of __launch_bounds__: blocks of TILE² threads the compiler must fit on
#: one multiprocessor (1: up to 255 registers a thread; 2: at most 128).  Part of the
#: source, hence of the cache key.
MIN_BLOCKS = 1

_PREF = 2.0 * pi**2.5

#: slices (or classes) with more cartesian quartet components than this keep the root loop
#: and the digestion loops rolled (compile time: full unrolling of (ff|ff) makes ~10^5
#: statements)
UNROLL_LIMIT = 81

#: classes with more components than this keep the root loop rolled in every slice, even
#: small ones: NVRTC time of (dd|dd) 30 s -> 17 s, kernel time +2 % (H200, batch b1)
ROOT_UNROLL_CLASS_LIMIT = 1000

#: above this many components the recurrences are loops over local arrays, not statements,
#: for classes with a g (or higher) shell ...
GENERIC_LIMIT = 1296

#: ... and for classes up to f: their scalar version is 5-7x faster than the loop version
#: ((fd|fp) 0.050 s vs 0.261 s on Tamoxifen/def2-TZVP, H200) and compiles in ~10 s;
#: (ff|fp) and (fd|dd) (3000, 2160 components) stay loops: twice the NVRTC time, and
#: (ff|fp) spills 4.6 kB a thread as scalar code (not measured on the GPU yet).
#: eri_function and jk_kernels decide through :func:`is_generic`.
GENERIC_LIMIT_F = 2000


def is_generic(cls):
    """True when class `cls` uses the loop version: more than GENERIC_LIMIT_F components
    (all shells up to f) or GENERIC_LIMIT (a g or higher shell)."""
    size = 1
    for l in cls:
        size *= ncart(l)
    return size > (GENERIC_LIMIT_F if max(cls) <= 3 else GENERIC_LIMIT)


def _unroll(size):
    return "#pragma unroll" if size <= UNROLL_LIMIT else "#pragma unroll 1"


def class_name(cls):
    """'2110' for (la lb|lc ld) = (2 1|1 0)."""
    return "".join(str(int(l)) for l in cls)


def check_class(cls):
    la, lb, lc, ld = (int(x) for x in cls)
    if la < lb or lc < ld or min(cls) < 0:
        raise ValueError(f"class {cls}: need la >= lb and lc >= ld")
    return la, lb, lc, ld


# ----------------------------------------------------------------------------- Rys
def listed_quartet_lines(list_shift):
    """CUDA statements decoding list entry `t` of a J/K quartet list (``quartet_lists``: bra pair,
    ket pair | flags << list_shift; flag bit 0 = digest J, bit 1 = digest K) and the shell
    offsets and degeneracy factor of the unique quartet.  Defines ib, ik, do_j, do_k, si..sl,
    s and i0..l0; shared by the one-quartet-per-thread and the cooperative kernels."""
    return [
        "  const int ib = qlist[2 * t];",
        "  const unsigned kf = (unsigned)qlist[2 * t + 1];",
        f"  const int ik = (int)(kf & ((1u << {list_shift}) - 1u));",
        f"  const int do_j = (kf >> {list_shift}) & 1u, do_k = (kf >> {list_shift + 1}) & 1u;",
        "  (void)do_j; (void)do_k;",
        "  const int si = bra_sh[2 * ib], sj = bra_sh[2 * ib + 1];",
        "  const int sk = ket_sh[2 * ik], sl = ket_sh[2 * ik + 1];",
        "  double s = 1.0;                       // degeneracy of the unique quartet",
        "  if (si == sj) s *= 0.5;",
        "  if (sk == sl) s *= 0.5;",
        "  if (tri && ib == ik) s *= 0.5;",
        "  const int i0 = cart_loc[si], j0 = cart_loc[sj], k0 = cart_loc[sk], l0 = cart_loc[sl];",
    ]


def rys_function(table, n):
    """Device function rys_<n>(T, tab, u, w) evaluating the table for n roots."""
    deg = table.degree
    stride = 2 * n * (deg + 1)
    lines = [
        f"__device__ __forceinline__ void rys_{n}(const double T, "
        "const double* __restrict__ tab, double* u, double* w)",
        "{",
    ]
    lines.append(f"  if (T >= {table.tmax(n)!r}) {{")
    lines.append("    const double it = 1.0 / T;")
    lines.append("    const double ist = sqrt(it);")
    for i in range(n):
        lines.append(f"    u[{i}] = {float(table.asym_u[n, i])!r} * it;")
        lines.append(f"    w[{i}] = {float(table.asym_w[n, i])!r} * ist;")
    lines.append("    return;")
    lines.append("  }")
    lines.append(f"  const int k = (int)(T / {table.width!r});")
    lines.append(f"  const double x = 2.0 * (T / {table.width!r} - k) - 1.0;")
    lines.append("  const double x2 = 2.0 * x;")
    lines.append(f"  const double* c = tab + (long long)k * {stride};")
    lines.append("#pragma unroll")
    lines.append(f"  for (int f = 0; f < {2 * n}; ++f) {{")
    lines.append(f"    const double* cf = c + f * {deg + 1};")
    lines.append("    double b1 = 0.0, b2 = 0.0;")
    lines.append("#pragma unroll")
    lines.append(f"    for (int j = {deg}; j > 0; --j) {{")
    lines.append("      const double t = __ldg(cf + j) + x2 * b1 - b2;")
    lines.append("      b2 = b1; b1 = t;")
    lines.append("    }")
    lines.append("    const double v = __ldg(cf) + x * b1 - b2;")
    lines.append(f"    if (f < {n}) u[f] = v; else w[f - {n}] = v;")
    lines.append("  }")
    lines.append("}")
    return lines


# ----------------------------------------------------------------------------- 2-D integrals
#: CUDA spelling of the coefficients of :mod:`hartree.integrals.rys_program` ({a}: the axis)
_COEFFICIENT_NAMES = {
    "c00": "c00{a}",
    "c0p": "c0p{a}",
    "b10": "b10",
    "b01": "b01",
    "b00": "b00",
    "AB": "AB{a}",
    "CD": "CD{a}",
}


def node_name(node, defined=None):
    """CUDA variable of a node of :mod:`hartree.integrals.rys_program`: gx_1_2, hx_1_1_2,
    ex_1_1_2_1; a seed G(0, 0) that the program does not define (``defined``: the set of
    targets of its recurrences) is the input g00<axis> (e.g. g00v, a run-time axis)."""
    if node.kind == "g" and node.index == (0, 0) and defined is not None and node not in defined:
        return f"g00{node.axis}"
    return f"{node.kind}{node.axis}_" + "_".join(str(i) for i in node.index)


def _rhs(rec, defined):
    """Right-hand side of a Recurrence: Σ [multiplicity.0 *] [coefficient *] source; the seed
    is wr (z: weight times the prefactor of eq. (1)) or 1.0."""
    if not rec.terms:
        return "wr" if rec.target.axis == "z" else "1.0"
    out = []
    for t in rec.terms:
        f = [f"{t.multiplicity}.0"] if t.multiplicity is not None else []
        if t.coefficient is not None:
            f.append(_COEFFICIENT_NAMES[t.coefficient].format(a=rec.target.axis))
        f.append(node_name(t.source, defined))
        out.append(" * ".join(f))
    return " + ".join(out)


def program_lines(program):
    """CUDA statements of the per-root part of a :class:`~hartree.integrals.rys_program.RysProgram`:
    ``const double`` per Recurrence, ``eri[slot] +=`` per Accumulate, ``I[offset] =`` per Store."""
    defined = {s.target for s in program.root if isinstance(s, Recurrence)}
    lines = []
    for s in program.root:
        if isinstance(s, Recurrence):
            lines.append(f"      const double {node_name(s.target)} = {_rhs(s, defined)};")
        elif isinstance(s, Accumulate):
            f = [node_name(n, defined) for n in s.factors]
            lines.append(f"      eri[{s.slot}] += {f[0]} * {f[1]} * {f[2]};")
        else:
            lines.append(f"        I[{s.offset}] = {node_name(s.node, defined)};")
    return lines


def _root_body(la, lb, lc, ld, arange, brange):
    """Statements for one Rys root: eqs. (2)-(3), the program of
    :func:`hartree.integrals.rys_program.quartet_program` (eqs. (4)-(7)) and the
    accumulation of eq. (1) for the components a in arange, b in brange (all c, d)."""
    return root_coefficient_lines() + program_lines(quartet_program((la, lb, lc, ld), arange, brange))


def root_coefficient_lines():
    """Statements of eqs. (2)-(3) for root r (u[r], w[r]): ur, wr (weight times the
    prefactor), b00, b10, b01, c00<d>, c0p<d> (scalar per axis), from the quartet's
    :func:`quartet_lines`."""
    lines = [
        "      const double ur = u[r];",
        "      const double wr = w[r] * pref;",
        "      const double b00 = 0.5 * ur * inv_zsum;",
        "      const double b10 = 0.5 * inv_ze * (1.0 - ur * et_zs);",
        "      const double b01 = 0.5 * inv_et * (1.0 - ur * ze_zs);",
    ]
    for d in "xyz":
        lines.append(f"      const double c00{d} = PA{d} - et_zs * ur * PQ{d};")
        lines.append(f"      const double c0p{d} = QC{d} + ze_zs * ur * PQ{d};")
    return lines


def quartet_lines(attenuated=False):
    """Statements of one primitive quartet, given the bra primitive P (ze, Kab, PA<d>) and the
    ket row Q (et, Kcd): Q - C, P - Q, the exponent sums and ratios, T and the prefactor of
    eq. (1) (without the weight); attenuated: then θ, θT and sqrt(θ) pref
    (:func:`attenuate`)."""
    lines = [
        "      const double QCx = Q[1] - gc[0], QCy = Q[2] - gc[1], QCz = Q[3] - gc[2];",
        "      const double PQx = P[1] - Q[1], PQy = P[2] - Q[2], PQz = P[3] - Q[3];",
        "      const double zsum = ze + et;",
        "      const double inv_zsum = 1.0 / zsum;",
        "      const double inv_ze = 1.0 / ze, inv_et = 1.0 / et;",
        "      const double et_zs = et * inv_zsum, ze_zs = ze * inv_zsum;",
        "      const double T = ze * et_zs * (PQx * PQx + PQy * PQy + PQz * PQz);",
        f"      const double pref = {_PREF!r} * Kab * Kcd / (ze * et * sqrt(zsum));",
    ]
    return attenuate(lines) if attenuated else lines


# ----------------------------------------------------------------------------- erf attenuation
#: CUDA spelling of the names of :data:`hartree.integrals.rys_program.ATTENUATION` in the
#: frame of :func:`quartet_lines` (ω, bohr^-1, is the kernel argument ``omega``; ρ = ζη/(ζ+η))
ATTENUATION_NAMES = {"omega2": "omega * omega", "rho": "ze * et_zs"}


def attenuate(lines):
    """The frame of a primitive quartet (lines declaring ``const double T`` and ``const double
    pref``, and ze, et_zs) for erf(ω r12)/r12: T and pref become variables and the statements
    of :data:`~hartree.integrals.rys_program.ATTENUATION` follow, θ = ω²/(ω² + ρ), T = θT,
    pref = sqrt(θ) pref (Gill & Adamson, Chem. Phys. Lett. 261, 105 (1996)); the roots are
    scaled after the Rys rule (:func:`attenuated_roots`)."""
    out = [re.sub(r"const double (T|pref) = ", r"double \1 = ", x) for x in lines]
    ind = re.match(r" *", lines[-1]).group(0)
    for target, expression in ATTENUATION:
        head = "" if target in ("T", "pref") else "const double "
        out.append(f"{ind}{head}{target} = {spell(expression, ATTENUATION_NAMES)};")
    return out


def attenuated_roots(n, indent="      "):
    """Statements replacing each Rys root u[r] of the rule at θT by θ u[r]
    (:data:`~hartree.integrals.rys_program.ATTENUATION_ROOT`)."""
    target, expression = ATTENUATION_ROOT
    return [
        "#pragma unroll",
        f"{indent}for (int r = 0; r < {n}; ++r) {target}[r] = {spell(expression, {'u': 'u[r]'})};",
    ]


def eri_function(cls, arange=None, brange=None, suffix="", runtime=False, attenuated=False, loops=False):
    """Device function eri_<cls><suffix>: contracted cartesian block of one quartet, eq. (1),
    for the components a in arange, b in brange (default: all), every c and d.

    Classes that are not :func:`is_generic` get the recurrences written out as scalar
    statements (registers); the others a loop version over local arrays
    (:func:`_root_body_loops`), which compiles in seconds instead of minutes.
    runtime=True (loop version only): the function takes the slice as arguments
    (a0, a1, b0, b1) after `tab`, so one copy serves every slice; `eri` must hold
    (a1-a0)(b1-b0) nc nd values.  attenuated: the integrals of erf(ω r12)/r12, the function
    taking ``const double omega`` (bohr^-1) last (:func:`attenuate`); the text of the
    1/r12 function is unchanged.  loops: the loop version whatever the class's size (one
    copy serves every runtime slice; the derivative kernels of :mod:`hartree.gpu.eri3c_gradient`).
    """
    la, lb, lc, ld = cls
    name = class_name(cls)
    n = nroots(cls)
    arange = list(arange if arange is not None else range(ncart(la)))
    brange = list(brange if brange is not None else range(ncart(lb)))
    size = len(arange) * len(brange) * ncart(lc) * ncart(ld)
    total = ncart(la) * ncart(lb) * ncart(lc) * ncart(ld)
    generic = is_generic(cls) or loops
    if arange != list(range(arange[0], arange[-1] + 1)) or brange != list(range(brange[0], brange[-1] + 1)):
        raise ValueError("component ranges must be contiguous")
    root_unroll = _unroll(size) if total <= ROOT_UNROLL_CLASS_LIMIT and not generic else "#pragma unroll 1"
    if runtime and not generic:
        raise ValueError("runtime slice bounds need the loop version")
    bounds = ("a0", "a1", "b0", "b1") if runtime else (arange[0], arange[-1] + 1, brange[0], brange[-1] + 1)
    lines = []
    if generic:
        lines += _component_tables(cls, suffix)
    lines += [
        f"// (ab|cd) of class ({la}{lb}|{lc}{ld}) for a in [{arange[0]},{arange[-1] + 1}), "
        f"b in [{brange[0]},{brange[-1] + 1}): eri[((a-a0)*nb'+b-b0)*NC+c)*ND+d], {size} values",
        f"__device__ __forceinline__ void eri_{name}{suffix}(",
        "    const int pb0, const int pb1, const double* __restrict__ bra_prim, const double* __restrict__ ga,",
        "    const int pk0, const int pk1, const double* __restrict__ ket_prim, const double* __restrict__ gc,",
        "    const double* __restrict__ tab, double* __restrict__ eri"
        + (", const int a0, const int a1, const int b0, const int b1" if runtime else "")
        + (", const double omega)" if attenuated else ")"),
        "{",
        "  const double ABx = ga[3], ABy = ga[4], ABz = ga[5];",
        "  const double CDx = gc[3], CDy = gc[4], CDz = gc[5];",
        _unroll(size) if not runtime else "#pragma unroll 1",
        (
            f"  for (int q = 0; q < {size}; ++q) eri[q] = 0.0;"
            if not runtime
            else f"  for (int q = 0; q < (a1 - a0) * (b1 - b0) * {ncart(lc) * ncart(ld)}; ++q) eri[q] = 0.0;"
        ),
        "  for (int pb = pb0; pb < pb1; ++pb) {",
        "    const double* P = bra_prim + 5 * pb;",
        "    const double ze = P[0], Kab = P[4];",
        "    const double PAx = P[1] - ga[0], PAy = P[2] - ga[1], PAz = P[3] - ga[2];",
        "    for (int pk = pk0; pk < pk1; ++pk) {",
        "      const double* Q = ket_prim + 5 * pk;",
        "      const double et = Q[0], Kcd = Q[4];",
        *quartet_lines(attenuated),
        f"      double u[{n}], w[{n}];",
        f"      rys_{n}(T, tab, u, w);",
        *(attenuated_roots(n) if attenuated else []),
        root_unroll,
        f"      for (int r = 0; r < {n}; ++r) {{",
    ]
    lines += _root_body_loops(cls, bounds, suffix) if generic else _root_body(la, lb, lc, ld, arange, brange)
    lines += ["      }", "    }", "  }", "}"]
    return lines


def _component_tables(cls, suffix=""):
    """__constant__ tables of cartesian exponents for the loop version (one set per slice
    function: names carry its suffix)."""
    name = class_name(cls) + suffix
    out = []
    for tag, l in zip("abcd", cls):
        comps = ", ".join(f"{{{i},{j},{k}}}" for i, j, k in cart_components(l))
        out.append(f"__constant__ unsigned char cart_{tag}_{name}[{ncart(l)}][3] = {{{comps}}};")
    return out


def _root_body_loops(cls, bounds, suffix=""):
    """One Rys root, eqs. (2)-(7) and (1), as loops over local arrays (large classes), for
    the components a in [a0, a1), b in [b0, b1) (bounds: numbers or C expressions), all c
    and d: eqs. (2)-(3) into per-axis arrays, then the CUDA printing (:func:`rolled_lines`)
    of :func:`hartree.integrals.rys_program.rolled_program`."""
    return [
        "      const double ur = u[r];",
        "      const double wr = w[r] * pref;",
        "      const double b00 = 0.5 * ur * inv_zsum;",
        "      const double b10 = 0.5 * inv_ze * (1.0 - ur * et_zs);",
        "      const double b01 = 0.5 * inv_et * (1.0 - ur * ze_zs);",
        "      const double c00[3] = {PAx - et_zs * ur * PQx, PAy - et_zs * ur * PQy, PAz - et_zs * ur * PQz};",
        "      const double c0p[3] = {QCx + ze_zs * ur * PQx, QCy + ze_zs * ur * PQy, QCz + ze_zs * ur * PQz};",
        "      const double AB[3] = {ABx, ABy, ABz}, CD[3] = {CDx, CDy, CDz};",
    ] + rolled_lines(rolled_program(tuple(cls), bounds), class_name(cls) + suffix)


# ----------------------------------------------------------------------------- rolled printer
#: comments of the local array declarations of the rolled schedule
_ARRAY_COMMENTS = {"g": "            // eqs. (4)-(5)", "h": "   // eq. (6)", "e": "  // eq. (7)"}

#: spelling of the coefficients in the rolled schedule: per-axis arrays ({i}: the axis index)
_ROLLED_COEFFICIENT_NAMES = {
    "c00": "c00[{i}]",
    "c0p": "c0p[{i}]",
    "b10": "b10",
    "b01": "b01",
    "b00": "b00",
    "AB": "AB[{i}]",
    "CD": "CD[{i}]",
}

#: a recurrence longer than this is continued on the next line, under its right-hand side
_LINE_WIDTH = 120


def _index(x):
    """C spelling of an index of the rolled schedule: 3, n, n + 1, m - 1, 4 - j, A[0], a0."""
    if isinstance(x, Sym):
        if x.scale < 0:
            return f"{x.offset} - {x.var}"
        if x.offset == 0:
            return x.var
        return f"{x.var} {'+' if x.offset > 0 else '-'} {abs(x.offset)}"
    if isinstance(x, Exponent):
        return f"{x.shell.upper()}[{x.axis}]"
    return str(x)


def _axis_index(axis):
    """Array index of an axis: 0, 1, 2 for x, y, z, the loop variable for a run-time axis."""
    return str("xyz".index(axis)) if axis in ("x", "y", "z") else axis


def _element(n):
    """Array element of a node: g[d][n + 1][0]."""
    return n.kind + "".join(f"[{x}]" for x in [_axis_index(n.axis)] + [_index(i) for i in n.index])


def _rolled_rhs_terms(rec):
    """Terms of a Recurrence with array elements: [multiplicity *] [coefficient[axis] *]
    source; a run-time multiplicity m guards its term, (m ? ... : 0.0).  The seed: wr on z
    ((axis == 2) ? wr : 1.0 for a run-time axis), else 1.0."""
    axis = rec.target.axis
    if not rec.terms:
        return ["wr" if axis == "z" else "1.0" if axis in ("x", "y") else f"({axis} == 2) ? wr : 1.0"]
    out = []
    for t in rec.terms:
        f = []
        if isinstance(t.multiplicity, Sym):
            f.append(_index(t.multiplicity))
        elif t.multiplicity is not None:
            f.append(f"{t.multiplicity}.0")
        if t.coefficient is not None:
            f.append(_ROLLED_COEFFICIENT_NAMES[t.coefficient].format(i=_axis_index(axis)))
        f.append(_element(t.source))
        term = " * ".join(f)
        out.append(f"({_index(t.multiplicity)} ? {term} : 0.0)" if isinstance(t.multiplicity, Sym) else term)
    return out


def _rolled_statement(s, pad):
    """Lines of one Recurrence or Copy of the rolled schedule (a long right-hand side is
    continued under itself)."""
    if isinstance(s, Copy):
        return [f"{pad}{_element(s.target)} = {_element(s.source)};"]
    head = f"{pad}{_element(s.target)} = "
    terms = _rolled_rhs_terms(s)
    lines, line = [], head + terms[0]
    for t in terms[1:]:
        if len(line) + len(t) + 4 > _LINE_WIDTH:
            lines.append(line)
            line = " " * len(head) + "+ " + t
        else:
            line += " + " + t
    return lines + [line + ";"]


def _rolled_block(s, program, name, pad):
    """The loops over the (a, b) components of a ComponentBlock and its accumulation, eq. (1):
    one pointer per axis to e[axis][A[axis]][B[axis]][0][0], the (c, d) factors at
    compile-time offsets from it."""
    nc, nd = ncart(program.cls[2]), ncart(program.cls[3])
    L = [
        "#pragma unroll 1",
        f"{pad}for (int a = {s.a0}; a < {s.a1}; ++a) {{",
        f"{pad}  const unsigned char* A = cart_a_{name}[a];",
        "#pragma unroll 1",
        f"{pad}  for (int b = {s.b0}; b < {s.b1}; ++b) {{",
        f"{pad}    const unsigned char* B = cart_b_{name}[b];",
        f"{pad}    double* out = eri + ((a - {s.a0}) * ({s.b1} - {s.b0}) + b - {s.b0}) * {nc * nd};",
    ]
    shapes = dict(program.arrays)
    pointers = {}  # pointer per axis and kind: the run-time indices (A, B) fixed, the rest 0
    for acc in s.body:
        for f in acc.factors:
            fixed = "".join(f"[{_index(i)}]" if isinstance(i, Exponent) else "[0]" for i in f.index)
            pointers.setdefault(f"{f.kind}{f.axis}", f"&{f.kind}[{_axis_index(f.axis)}]{fixed}")
    L += [f"{pad}    const double* {p} = {at};" for p, at in pointers.items()]
    for acc in s.body:
        f = []
        for n in acc.factors:  # row-major offset of the compile-time indices
            offset, dims = 0, shapes[n.kind][1:]
            for i, dim in zip(n.index, dims):
                offset = offset * dim + (0 if isinstance(i, Exponent) else i)
            f.append(f"{n.kind}{n.axis}[{offset}]")
        L.append(f"{pad}    out[{acc.slot}] += {f[0]} * {f[1]} * {f[2]};")
    return L + [f"{pad}  }}", f"{pad}}}"]


def _rolled_body(statements, program, name, pad):
    """Lines of rolled statements at indentation ``pad``: a loop of several statements in
    braces, of one Copy on its own line, of one other statement (or loop) below it."""
    lines = []
    for s in statements:
        if isinstance(s, Loop):
            cond = f"{s.var} {'<=' if s.inclusive else '<'} {_index(s.stop)}"
            head = f"{pad}for (int {s.var} = {s.start}; {cond}; ++{s.var})"
            if len(s.body) > 1:
                lines += [head + " {"] + _rolled_body(s.body, program, name, pad + "  ") + [pad + "}"]
            elif isinstance(s.body[0], Copy):
                lines += [head + " " + _rolled_statement(s.body[0], "")[0]]
            else:
                lines += [head] + _rolled_body(s.body, program, name, pad + "  ")
        elif isinstance(s, ComponentBlock):
            lines += _rolled_block(s, program, name, pad)
        else:
            lines += _rolled_statement(s, pad)
    return lines


def rolled_lines(program, name):
    """CUDA statements of the per-root part of a rolled
    :class:`~hartree.integrals.rys_program.RysProgram`: the local arrays, the loops (a loop
    of one Copy on one line), and the component loops over the ``__constant__`` tables
    cart_a_<name>, cart_b_<name> of :func:`_component_tables`."""
    lines = [
        f"      double {kind}" + "".join(f"[{n}]" for n in shape) + ";" + _ARRAY_COMMENTS[kind]
        for kind, shape in program.arrays
    ]
    return lines + _rolled_body(program.root, program, name, "      ")
