"""CUDA C for orbitals, basis-function values and densities on lattices (generated at run time).

Three kernels per source, all one thread per lattice point (or listed point):

* ``orb_screen`` -- one thread per *tile* of TILE points (a TX x TY x TZ brick of a
  lattice slab, or TILE consecutive listed points): the tile's bounding box is tested
  against every atom's screening radius, and the atoms that can contribute are written to
  the tile's list as (atom - tile reference point, atom index).  This is VMD's
  distance culling (Stone et al. 2009, sec. 4) done once per tile instead of once per
  point; the list holds the atom positions relative to the tile, so FP32 differences stay
  accurate far from the origin.
* ``orb_mo`` -- NORB orbitals at once: per point, loop over the tile's atoms, then the
  atom's shells (shell radius test), the contracted radial sum
  R(r) = sum_p c_p exp(-a_p r^2) with a per-primitive radius test (exponent screening),
  the cartesian monomials x^i y^j z^k and, for spherical bases, C_l^T; every basis-function
  value phi_mu is used at once, psi_m += C[m, mu] phi_mu (Algorithm 1 of VMD with the
  orbitals as the inner loop: basis values shared by all NORB orbitals).
* ``orb_ao`` -- the same loop storing phi_mu(r_p) into an (nao, ld) slab, for a GEMM with
  many orbitals or for densities (:mod:`hartree.grid.gpu`).

Two flavours of the per-atom part:

* *general*: shells, exponents and coefficients read from arrays; the angular part is
  generated once per l present in the basis (unrolled monomials and C_l^T).
* *jit* (VMD's per-molecule JIT kernels): one ``case`` per atom kind (atoms with the
  same shells, exponents and coefficients), with every exponent, contraction coefficient,
  shell radius and primitive radius written into the source as a literal; primitives
  shared by several shells of an atom (sp shells) are exponentiated once.

The hand-written parts are CUDA templates beside this module (``orbital_prelude.cu``: types
and launch constants; ``orbital_screen.cu``: the screening kernel; ``orbital_eval.cu``: the
evaluation kernel around the generated per-atom body), filled with ``str.format``; this
module generates the per-atom body, the angular parts and the EMIT macro.  The source is
pure text (no cupy here), so CPU-only tests compile it with NVRTC.
"""

import numpy as np

from ..basis import cart2sph, cart_components
from ..device import cuda_source

#: Tile of lattice points handled by one thread block (x planes, y rows, z points).
TX, TY, TZ = 2, 4, 16
#: Points per tile (= threads per block).
TILE = TX * TY * TZ
#: Most orbitals the fused ``orb_mo`` kernel takes per launch.
MAX_NORB = 8
#: Lattice points per thread (along x) unless told otherwise, per precision: the fastest on
#: C60/6-31G* on an H200 (benchmarks/results/orbitals_gpu.md: FP32 4 > 2 > 1, FP64 2 > 4 > 1).
PPT_DEFAULT = {"float": 4, "double": 2}
#: Generator version (part of the compile cache key).
VERSION = 2
#: Kernel parameter lists (type, name), the launch order of the arguments.
SCREEN_PARAMS = [
    ("int", "mode"),
    ("int", "ntile"),
    ("int", "nt1"),
    ("int", "nt2"),
    ("int", "n0"),
    ("int", "n1"),
    ("int", "n2"),
    ("const double*", "lat"),
    ("const double*", "points"),
    ("int", "natm"),
    ("const double*", "atom_xyz"),
    ("const double*", "atom_rcut2"),
    ("int*", "count"),
    ("Entry*", "list"),
]
EVAL_PARAMS = [
    ("int", "mode"),
    ("int", "nt1"),
    ("int", "nt2"),
    ("int", "n0"),
    ("int", "n1"),
    ("int", "n2"),
    ("const double*", "lat"),
    ("const double*", "points"),
    ("int", "natm"),
    ("const int*", "count"),
    ("const Entry*", "list"),
    ("const int*", "atom_kind"),
    ("const int*", "atom_ao0"),
    ("const int*", "atom_shell"),
    ("const REAL*", "atom_rcut2"),
    ("const int*", "sh_l"),
    ("const int*", "sh_nprim"),
    ("const int*", "sh_p0"),
    ("const int*", "sh_ao0"),
    ("const REAL*", "sh_rcut2"),
    ("const REAL*", "p_exp"),
    ("const REAL*", "p_coef"),
    ("const REAL*", "p_rcut2"),
    ("int", "nao"),
    ("const REAL*", "coef"),
    ("long long", "ld"),
    ("REAL*", "out"),
]


def decl(params):
    """C parameter declarations of a parameter list."""
    return ", ".join(f"{t} __restrict__ {n}" if t.endswith("*") else f"{t} {n}" for t, n in params)


def literal(value, real):
    """A C literal of a float for REAL = real ('float' or 'double'), exact in that precision."""
    text = repr(float(value))
    if "inf" in text:
        return "INFINITY"
    if "e" not in text and "." not in text:
        text += ".0"
    return text + ("f" if real == "float" else "")


def _monomial(i, j, k):
    """C expression of x^i y^j z^k for point P from the per-point powers x1[P].. declared per shell."""
    factors = [f"{v}{n}[P]" for v, n in (("x", i), ("y", j), ("z", k)) if n]
    return "*".join(factors) if factors else "(REAL)1"


def _powers(l):
    """Declarations of the powers x2..xl, y2.., z2.. (per point) needed by the monomials of l."""
    names = [f"{v}{n}" for v in "xyz" for n in range(2, l + 1)]
    if not names:
        return ""
    decl_ = "REAL " + ", ".join(f"{n}[PPT]" for n in names) + ";"
    sets = " ".join(f"{v}{n}[P] = {v}{n - 1}[P]*{v}1[P];" for v in "xyz" for n in range(2, l + 1))
    return f'{decl_} _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{ {sets} }}'


def angular_block(l, pure, mu, real, indent="      "):
    """C statements emitting every function of one shell of angular momentum l.

    Expects per-point REAL arrays ``rad[PPT]`` (contracted radial sum incl. f(l)) and x1, y1,
    z1 (point minus centre); ``mu`` is a C expression of the shell's first AO.  EMIT(mu', v)
    evaluates v for every point P.  Cartesian: EMIT(mu + n, rad x^i y^j z^k) in hartree's
    order; spherical (l >= 2): EMIT(mu + m, sum_n C_l[n, m] cart_n), m = -l..l, with the
    coefficients of hartree.basis.cart2sph as literals.
    """
    comps = cart_components(l)
    out = [indent + "{ " + _powers(l)]
    if not pure or l < 2:
        for n, (i, j, k) in enumerate(comps):
            mono = _monomial(i, j, k)
            value = "rad[P]" if mono == "(REAL)1" else f"rad[P]*{mono}"
            out.append(f"{indent}  EMIT(({mu}) + {n}, {value});")
    else:
        out.append(f"{indent}  REAL " + ", ".join(f"c{n}[PPT]" for n in range(len(comps))) + ";")
        out.append(
            f'{indent}  _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{ '
            + " ".join(f"c{n}[P] = {_monomial(i, j, k)};" for n, (i, j, k) in enumerate(comps))
            + " }"
        )
        c2s = cart2sph(l)
        for m in range(2 * l + 1):
            terms = [f"{literal(c2s[n, m], real)}*c{n}[P]" for n in range(len(comps)) if c2s[n, m] != 0.0]
            out.append(f"{indent}  EMIT(({mu}) + {m}, rad[P]*({' + '.join(terms)}));")
    out.append(indent + "}")
    return "\n".join(out)


def _emit_defs(kind):
    if kind == "mo":
        return (
            "#define EMIT(mu, v) { const REAL* c_ = coef + (mu); \\\n"
            '  _Pragma("unroll") for (int m_ = 0; m_ < NORB; ++m_) { \\\n'
            "    const REAL cm_ = c_[(long long)m_ * nao]; \\\n"
            '    _Pragma("unroll") for (int P = 0; P < PPT; ++P) acc[P][m_] += cm_ * (v); } }\n'
        )
    return (
        '#define EMIT(mu, v) { _Pragma("unroll") for (int P = 0; P < PPT; ++P) \\\n'
        "  if (live[P]) out[(long long)(mu) * ld + local[P]] = (v); }\n"
    )


def _general_body(ls, pure, real):
    """Per-atom loop of the general kernel (arrays), with one case per l present."""
    lines = [
        "    if (r2min > atom_rcut2[a]) continue;",
        "    for (int s = atom_shell[a]; s < atom_shell[a + 1]; ++s) {",
        "      if (r2min > sh_rcut2[s]) continue;",
        "      REAL rad[PPT];",
        '      _Pragma("unroll") for (int P = 0; P < PPT; ++P) rad[P] = 0;',
        "      const int q1 = sh_p0[s] + sh_nprim[s];",
        "      for (int q = sh_p0[s]; q < q1; ++q) {   // exponent screening per primitive",
        "        const REAL A = p_exp[q], C = p_coef[q], RC = p_rcut2[q];",
        '        _Pragma("unroll") for (int P = 0; P < PPT; ++P)',
        "          if (r2[P] < RC) rad[P] += C * EXP(-A * r2[P]);",
        "      }",
        "      const int mu = sh_ao0[s];",
        "      switch (sh_l[s]) {",
    ]
    for l in sorted(ls):
        lines.append(f"      case {l}:")
        lines.append(angular_block(l, pure, "mu", real, indent="        "))
        lines.append("        break;")
    lines += ["      }", "    }"]
    return "\n".join(lines)


def _jit_body(kinds, pure, real):
    """Per-atom part of the JIT kernel: one case per atom kind, all numbers as literals.

    kinds: list of AtomKind (see :func:`hartree.grid.gpu_basis.grid_basis`).  Shells with the same
    exponents (sp shells, segmented general contractions) form a group: its exponentials are
    computed once, per point, and only while the group is being emitted (few live registers).
    """
    lit = lambda v: literal(v, real)  # noqa: E731
    lines = ["    const int mu0 = atom_ao0[a];", "    switch (atom_kind[a]) {"]
    for kk, kind in enumerate(kinds):
        lines.append(f"    case {kk}: {{")
        lines.append(f"      if (r2min > {lit(kind.rcut2)}) break;")
        groups = {}
        for sh in kind.shells:
            groups.setdefault(sh.prims, []).append(sh)
        for prims, shells in groups.items():
            reach = max(sh.rcut2 for sh in shells)
            lines.append(f"      if (r2min < {lit(reach)}) {{")
            for u in prims:
                a, rc = kind.exponents[u], kind.exp_rcut2[u]
                lines.append(
                    f'        REAL e{u}[PPT]; _Pragma("unroll") for (int P = 0; P < PPT; ++P) '
                    f"e{u}[P] = r2[P] < {lit(rc)} ? EXP({lit(-a)} * r2[P]) : (REAL)0;"
                )
            for sh in shells:
                terms = " + ".join(f"{lit(c)}*e{u}[P]" for u, c in zip(sh.prims, sh.coefs))
                lines.append(f"        if (r2min < {lit(sh.rcut2)}) {{")
                lines.append(
                    f'          REAL rad[PPT]; _Pragma("unroll") for (int P = 0; P < PPT; ++P) rad[P] = {terms};'
                )
                lines.append(angular_block(sh.l, pure, f"mu0 + {sh.ao_offset}", real, indent="          "))
                lines.append("        }")
            lines.append("      }")
        lines.append("      break; }")
    lines.append("    }")
    return "\n".join(lines)


def generate(real, pure, kind, norb=1, ls=(0,), kinds=None, ppt=None):
    """CUDA source with orb_screen and one evaluation kernel.

    real: 'double' or 'float'; pure: spherical basis; kind: 'mo' (kernel ``orb_mo``, NORB
    = norb orbitals, 1 <= norb <= MAX_NORB) or 'ao' (kernel ``orb_ao``); ls: angular
    momenta of the basis (general flavour); kinds: list of AtomKind for the JIT flavour
    (None: general); ppt: lattice points per thread (1, 2 or 4; along x, so that every
    coefficient and atom read serves ppt points).
    """
    if real not in ("double", "float"):
        raise ValueError(f"real must be 'double' or 'float', not {real!r}")
    if kind not in ("mo", "ao"):
        raise ValueError(f"kind must be 'mo' or 'ao', not {kind!r}")
    if kind == "mo" and not 1 <= norb <= MAX_NORB:
        raise ValueError(f"norb must be 1..{MAX_NORB}")
    ppt = ppt or PPT_DEFAULT[real]
    if ppt not in (1, 2, 4):
        raise ValueError("ppt must be 1, 2 or 4")
    flavour = "jit" if kinds is not None else "general"
    src = [
        cuda_source.read("hartree.grid", "orbital_prelude.cu").format(
            version=VERSION,
            flavour=flavour,
            real=real,
            basis_kind="spherical" if pure else "cartesian",
            exp="expf" if real == "float" else "exp",
            norb=norb if kind == "mo" else 1,
            ppt=ppt,
            tx=TX,
            ty=TY,
            tz=TZ,
            tile=TILE,
        )
    ]
    src.append(cuda_source.read("hartree.grid", "orbital_screen.cu").format(params=decl(SCREEN_PARAMS)))
    src.append(_emit_defs(kind))
    name = "orb_mo" if kind == "mo" else "orb_ao"
    acc_init = (
        "  REAL acc[PPT][NORB];\n"
        '  _Pragma("unroll") for (int P = 0; P < PPT; ++P)\n'
        '    _Pragma("unroll") for (int m = 0; m < NORB; ++m) acc[P][m] = 0;'
        if kind == "mo"
        else ""
    )
    store = (
        '  _Pragma("unroll") for (int P = 0; P < PPT; ++P)\n'
        "    if (live[P]) for (int m = 0; m < NORB; ++m) out[(long long)m * ld + local[P]] = acc[P][m];"
        if kind == "mo"
        else ""
    )
    body = _jit_body(kinds, pure, real) if kinds is not None else _general_body(ls, pure, real)
    src.append(
        cuda_source.read("hartree.grid", "orbital_eval.cu").format(
            name=name, params=decl(EVAL_PARAMS), acc_init=acc_init, body=body, store=store
        )
    )
    return "\n".join(src)


def tile_shape(ppt):
    """Lattice points per tile along x, y, z for ppt points per thread."""
    return TX * ppt, TY, TZ


def entry_bytes(real):
    """sizeof(Entry) for REAL = real: 3 REAL + int, padded to the REAL alignment."""
    size = 3 * (8 if real == "double" else 4) + 4
    align = 8 if real == "double" else 4
    return -(-size // align) * align


def jit_source_size(kinds):
    """Rough measure of a JIT kernel's size: literal numbers it would hold."""
    return int(sum(len(k.exponents) + sum(len(s.prims) for s in k.shells) for k in kinds)) if kinds else 0


def as_real(array, real):
    """numpy array in the precision of REAL."""
    return np.ascontiguousarray(array, dtype=np.float64 if real == "double" else np.float32)
