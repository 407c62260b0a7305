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

The source is pure text (no cupy here), so CPU-only tests compile it with NVRTC.
"""

import numpy as np

from ..basis import cart2sph, cart_components

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


_PRELUDE = """\
// generated by hartree.grid.gpu_codegen (version {version}): {flavour} kernels, {real}, {basis_kind}
typedef {real} REAL;
#define EXP {exp}
#define NORB {norb}
#define PPT {ppt}
#define TX {tx}
#define TY {ty}
#define TZ {tz}
#define TILE {tile}
#define BX (TX * PPT)
#define BTILE (TILE * PPT)
struct Entry {{ REAL x, y, z; int atom; }};
"""

_SCREEN = """\
// One thread per tile: atoms whose screening sphere meets the tile's bounding box.
// A lattice tile is BX x TY x TZ points (each thread owns PPT points along x), a point tile BTILE points.
extern "C" __global__ void orb_screen({params})
{{
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= ntile) return;
  double lo[3], hi[3], ref[3];
  if (mode == 0) {{
    const int tz = t % nt2, ty = (t / nt2) % nt1, tx = t / (nt2 * nt1);
    const int i0 = tx * BX, j0 = ty * TY, k0 = tz * TZ;
    const int i1 = min(n0, i0 + BX) - 1, j1 = min(n1, j0 + TY) - 1, k1 = min(n2, k0 + TZ) - 1;
    for (int d = 0; d < 3; ++d) {{
      ref[d] = lat[d] + i0 * lat[3 + d] + j0 * lat[6 + d] + k0 * lat[9 + d];
      lo[d] = hi[d] = ref[d];
      for (int c = 1; c < 8; ++c) {{       // the eight corners of the brick
        const double v = lat[d] + ((c & 1) ? i1 : i0) * lat[3 + d] + ((c & 2) ? j1 : j0) * lat[6 + d]
                       + ((c & 4) ? k1 : k0) * lat[9 + d];
        lo[d] = fmin(lo[d], v); hi[d] = fmax(hi[d], v);
      }}
    }}
  }} else {{
    const int p0 = t * BTILE, p1 = min(n0, p0 + BTILE);
    for (int d = 0; d < 3; ++d) {{
      ref[d] = lo[d] = hi[d] = points[3 * p0 + d];
      for (int p = p0 + 1; p < p1; ++p) {{
        lo[d] = fmin(lo[d], points[3 * p + d]); hi[d] = fmax(hi[d], points[3 * p + d]);
      }}
    }}
  }}
  int n = 0;
  Entry* mine = list + (long long)t * natm;
  for (int a = 0; a < natm; ++a) {{
    double d2 = 0.0;
    for (int d = 0; d < 3; ++d) {{
      const double x = atom_xyz[3 * a + d];
      const double g = x < lo[d] ? lo[d] - x : (x > hi[d] ? x - hi[d] : 0.0);
      d2 += g * g;
    }}
    if (d2 <= atom_rcut2[a]) {{
      Entry e;
      e.x = (REAL)(atom_xyz[3 * a] - ref[0]);
      e.y = (REAL)(atom_xyz[3 * a + 1] - ref[1]);
      e.z = (REAL)(atom_xyz[3 * a + 2] - ref[2]);
      e.atom = a;
      mine[n++] = e;
    }}
  }}
  count[t] = n;
}}
"""

_EVAL_HEAD = """\
extern "C" __global__ void {name}({params})
{{
  const int t = blockIdx.x;
  REAL px[PPT], py[PPT], pz[PPT];         // points minus the tile reference point, bohr
  long long local[PPT];                   // index of each point in the slab (C order)
  bool live[PPT];
  if (mode == 0) {{
    const int tz = t % nt2, ty = (t / nt2) % nt1, tx = t / (nt2 * nt1);
    const int lz = threadIdx.x % TZ, ly = (threadIdx.x / TZ) % TY, lx = threadIdx.x / (TZ * TY);
    const int j = ty * TY + ly, k = tz * TZ + lz;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      const int ix = P * TX + lx, i = tx * BX + ix;
      live[P] = i < n0 && j < n1 && k < n2;
      px[P] = (REAL)(ix * lat[3] + ly * lat[6] + lz * lat[9]);
      py[P] = (REAL)(ix * lat[4] + ly * lat[7] + lz * lat[10]);
      pz[P] = (REAL)(ix * lat[5] + ly * lat[8] + lz * lat[11]);
      local[P] = ((long long)i * n1 + j) * n2 + k;
    }}
  }} else {{
    const int p0 = t * BTILE;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      const int p = p0 + threadIdx.x + P * TILE;
      live[P] = p < n0;
      const int q = live[P] ? p : p0;
      px[P] = (REAL)(points[3 * q] - points[3 * p0]);
      py[P] = (REAL)(points[3 * q + 1] - points[3 * p0 + 1]);
      pz[P] = (REAL)(points[3 * q + 2] - points[3 * p0 + 2]);
      local[P] = q;
    }}
  }}
  if (!live[0]) return;                   // later points of a thread lie further along: all dead
{acc_init}
  const int nent = count[t];
  const Entry* mine = list + (long long)t * natm;
  for (int n = 0; n < nent; ++n) {{
    const Entry e = mine[n];
    REAL x1[PPT], y1[PPT], z1[PPT], r2[PPT];
    REAL r2min = (REAL)1e30;
    _Pragma("unroll") for (int P = 0; P < PPT; ++P) {{
      x1[P] = px[P] - e.x; y1[P] = py[P] - e.y; z1[P] = pz[P] - e.z;
      r2[P] = x1[P] * x1[P] + y1[P] * y1[P] + z1[P] * z1[P];
      r2min = r2[P] < r2min ? r2[P] : r2min;
    }}
    const int a = e.atom;
"""

_EVAL_TAIL = """\
  }}
{store}
}}
"""


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

    kinds: list of AtomKind (see :func:`hartree.grid.gpu.grid_basis`).  Shells with the same
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
        _PRELUDE.format(
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
    src.append(_SCREEN.format(params=decl(SCREEN_PARAMS)))
    src.append(_emit_defs(kind))
    name = "orb_mo" if kind == "mo" else "orb_ao"
    acc_init = (
        "  REAL acc[PPT][NORB];\n"
        '  _Pragma("unroll") for (int P = 0; P < PPT; ++P)\n'
        '    _Pragma("unroll") for (int m = 0; m < NORB; ++m) acc[P][m] = 0;'
        if kind == "mo"
        else ""
    )
    src.append(_EVAL_HEAD.format(name=name, params=decl(EVAL_PARAMS), acc_init=acc_init))
    src.append(_jit_body(kinds, pure, real) if kinds is not None else _general_body(ls, pure, real))
    store = (
        '  _Pragma("unroll") for (int P = 0; P < PPT; ++P)\n'
        "    if (live[P]) for (int m = 0; m < NORB; ++m) out[(long long)m * ld + local[P]] = acc[P][m];"
        if kind == "mo"
        else ""
    )
    src.append(_EVAL_TAIL.format(store=store))
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
