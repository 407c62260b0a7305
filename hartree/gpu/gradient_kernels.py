"""CUDA C generator of the ERI-gradient kernels: one kernel per quartet class, one listed
quartet per thread, its derivative integrals contracted with the two-particle density and
added to the gradient of its four atoms.

For a quartet (ab|cd) of class (la lb|lc ld) the kernel ``grad_<cls>`` computes (the same
equations as the CPU reference :mod:`hartree.integrals.eri_deriv`):

    Γ_abcd = DJ_ab DJ_cd - k/2 Σ_s (DK^s_ac DK^s_bd + DK^s_ad DK^s_bc)                (1)
    d/dA_x (ab|cd) = 2α (a+1_x b|cd) - a_x (a-1_x b|cd)   (Obara & Saika, J. Chem. Phys.
                     84, 3963 (1986), eq. 20; likewise B with 2β and C with 2γ)         (2)
    g_A += w Σ_abcd Γ_abcd d(ab|cd)/dA,  g_D -= g_A + g_B + g_C  (translational invariance)

with w = 4 s (s the degeneracy factor of the unique quartet: 1/2 for each of a == b,
c == d, bra pair == ket pair).  The raised and lowered blocks are the contracted cartesian
blocks of the energy's device functions :func:`hartree.gpu.codegen.eri_function` of the
classes (la±1 lb|lc ld), (la lb±1|lc ld) and (lc±1 ld|la lb), fed with the primitive-pair
tables whose K is weighted by 2α (bra, first shell), 2β (bra, second shell) or 2γ (ket,
first shell).  Their recurrences are thus printed from the same Rys program
(:mod:`hartree.integrals.rys_program`) as the energy's; this module only writes the frame:
Γ of the quartet, the six blocks, the contractions of eq. (2) and the atomics.
"""

from hartree.basis.angular import cart_components, ncart
from hartree.integrals.rys_program import AXES, RysProgram, Schedule, node, nroots

from . import cooperative_gradient
from .codegen import (
    GENERATOR_VERSION,
    attenuated_roots,
    class_name,
    eri_function,
    listed_quartet_lines,
    node_name,
    program_lines,
    quartet_lines,
    root_coefficient_lines,
    rys_function,
)
from .jk_kernels import LIST_FLAG_SHIFT, decl

GRAD_PARAMS = [
    ("int", "nlist"),
    ("const int*", "qlist"),
    ("int", "tri"),
    ("const int*", "bra_sh"),
    ("const int*", "bra_pst"),
    ("const double*", "bra_geo"),
    ("const double*", "bra_prim"),
    ("const double*", "bra_prim_a"),
    ("const double*", "bra_prim_b"),
    ("const int*", "ket_sh"),
    ("const int*", "ket_pst"),
    ("const double*", "ket_geo"),
    ("const double*", "ket_prim"),
    ("const double*", "ket_prim_a"),
    ("const int*", "cart_loc"),
    ("const int*", "shell_atom"),
    ("const double*", "dj"),
    ("const double*", "dk"),
    ("int", "nk"),
    ("double", "hk"),
    ("int", "ncart"),
    ("double*", "grad"),
    ("const double*", "tab"),
]

#: threads per block of the gradient kernels
THREADS = 128

#: second argument of the fused kernels' __launch_bounds__ per class (blocks an SM must
#: hold: 3 caps the registers at 168, 4 at 128); 1 where absent.  Valinomycin/6-31G**, H100,
#: per class 1 -> 3 or 4: (ps|ps) 0.201 -> 0.171 s, (ps|ss) 0.253 -> 0.194, (pp|ss) 0.092 ->
#: 0.078, (ss|ss) 0.087 -> 0.080, (ds|ss) 0.062 -> 0.051, (ds|ps) 0.108 -> 0.102, (dp|ss) 0.059
#: -> 0.055; the classes that spill at 168 registers ((pp|pp), (dp|ps), ...) got up to 2.4x
#: slower and keep 1
MIN_BLOCKS = {
    (0, 0, 0, 0): 4,
    (1, 0, 0, 0): 4,
    (1, 0, 1, 0): 4,
    (1, 1, 0, 0): 4,
    (2, 0, 0, 0): 4,
    (2, 0, 1, 0): 3,
    (2, 1, 0, 0): 3,
}


def kernel_name(cls):
    return f"grad_{class_name(cls)}"


def derivative_classes(cls):
    """{centre: (raised class, lowered class or None)} for centres 'A', 'B', 'C'; C's
    classes have the ket pair as bra: (lc±1 ld|la lb)."""
    la, lb, lc, ld = cls
    return {
        "A": ((la + 1, lb, lc, ld), (la - 1, lb, lc, ld) if la > 0 else None),
        "B": ((la, lb + 1, lc, ld), (la, lb - 1, lc, ld) if lb > 0 else None),
        "C": ((lc + 1, ld, la, lb), (lc - 1, ld, la, lb) if lc > 0 else None),
    }


def _size(cls):
    n = 1
    for l in cls:
        n *= ncart(l)
    return n


def shifted_components(l):
    """Eq. (2)'s index lists for the components i of shell l, entry 3 i + x: the index of
    i + 1_x among the components of l + 1, of i - 1_x among those of l - 1 (0 when i_x = 0),
    and i_x."""
    up, down, fac = [], [], []
    comps_u = {c: k for k, c in enumerate(cart_components(l + 1))}
    comps_d = {c: k for k, c in enumerate(cart_components(l - 1))} if l > 0 else {}
    for c in cart_components(l):
        for x in range(3):
            e = list(c)
            e[x] += 1
            up.append(comps_u[tuple(e)])
            if c[x] > 0:
                e[x] -= 2
                down.append(comps_d[tuple(e)])
            else:
                down.append(0)
            fac.append(c[x])
    return up, down, fac


def _index_tables(l):
    """__constant__ tables GUP_l, GDN_l, GFAC_l of :func:`shifted_components`."""
    up, down, fac = shifted_components(l)

    def table(name, values):
        return f"__constant__ int {name}_{l}[{len(values)}] = {{{', '.join(str(v) for v in values)}}};"

    return [table("GUP", up), table("GDN", down), table("GFAC", fac)]


_CONTRACT = """\
// g[x] += Σ_(b,i,a) gam[b][i][a] (up[b][i+1_x][a] - i_x dn[b][i-1_x][a]): eq. (2) on the
// middle index of blocks (nbefore, n(l±1), nafter), contracted with Γ
__device__ __forceinline__ void contract_mid(const double* __restrict__ up, const double* __restrict__ dn,
    const double* __restrict__ gam, const int nbefore, const int n, const int nu, const int nd, const int nafter,
    const int* __restrict__ iu, const int* __restrict__ idn, const int* __restrict__ fac, double* g)
{
  for (int b = 0; b < nbefore; ++b)
    for (int i = 0; i < n; ++i)
      for (int x = 0; x < 3; ++x) {
        const int k = 3 * i + x;
        const double* pu = up + (b * nu + iu[k]) * nafter;
        const double* pg = gam + (b * n + i) * nafter;
        double acc = 0.0;
        for (int a = 0; a < nafter; ++a) acc += pg[a] * pu[a];
        if (fac[k] != 0) {
          const double* pd = dn + (b * nd + idn[k]) * nafter;
          const double f = (double)fac[k];
          for (int a = 0; a < nafter; ++a) acc -= f * pg[a] * pd[a];
        }
        g[x] += acc;
      }
}
"""


def _gamma_lines(cls, transpose):
    """Γ of eq. (1) for the thread's quartet into the local array gam (a, b, c, d) and, with
    ``transpose``, gamt (c, d, a, b) (the bra of the C derivative is the ket pair)."""
    na, nb, nc, nd = (ncart(l) for l in cls)
    size = na * nb * nc * nd
    return [
        f"  double gam[{size}]" + (f", gamt[{size}];" if transpose else ";"),
        f"  for (int a = 0; a < {na}; ++a) for (int b = 0; b < {nb}; ++b) {{",
        "    const double jab = dj[(size_t)(i0 + a) * ncart + j0 + b];",
        f"    for (int c = 0; c < {nc}; ++c) for (int d = 0; d < {nd}; ++d) {{",
        "      double v = jab * dj[(size_t)(k0 + c) * ncart + l0 + d];",
        "      for (int s = 0; s < nk; ++s) {",
        "        const double* D = dk + (size_t)s * ncart * ncart;",
        "        v -= hk * (D[(size_t)(i0 + a) * ncart + k0 + c] * D[(size_t)(j0 + b) * ncart + l0 + d]",
        "                   + D[(size_t)(i0 + a) * ncart + l0 + d] * D[(size_t)(j0 + b) * ncart + k0 + c]);",
        "      }",
        f"      gam[((a * {nb} + b) * {nc} + c) * {nd} + d] = v;",
        *([f"      gamt[((c * {nd} + d) * {na} + a) * {nb} + b] = v;"] if transpose else []),
        "    }",
        "  }",
    ]


#: device function adding one atom's (x, y, z) to the gradient: on the GPU the lanes of a
#: warp holding the same atom first sum their values (__match_any_sync groups them; a warp of
#: a quartet list mostly sees one or two bra pairs and a run of neighbouring ket pairs, so few
#: atoms), then one lane per atom adds.  Thousands of quartets per atom otherwise contend for
#: the same 3 natm addresses (the light classes were bound by these atomics).  The g++
#: emulator runs one thread at a time: plain adds there.
GRAD_ADD = """__device__ __forceinline__ void grad_add3(double* grad, int t3, double x, double y, double z)
{
#ifdef __CUDA_ARCH__
  const unsigned peers = __match_any_sync(__activemask(), t3);
  const int lane = threadIdx.x & 31;
  if (peers != (1u << lane)) {
    double sx = 0.0, sy = 0.0, sz = 0.0;
    for (unsigned rest = peers; rest != 0u; rest &= rest - 1u) {
      const int src = __ffs(rest) - 1;
      sx += __shfl_sync(peers, x, src);
      sy += __shfl_sync(peers, y, src);
      sz += __shfl_sync(peers, z, src);
    }
    if (lane != __ffs(peers) - 1) return;
    x = sx; y = sy; z = sz;
  }
#endif
  atomicAdd(grad + t3, x);
  atomicAdd(grad + t3 + 1, y);
  atomicAdd(grad + t3 + 2, z);
}"""


def _atomic_lines():
    """The quartet's sums gA, gB, gC (and gD = -(gA + gB + gC)) times w = 4 s added to the
    gradient of the atoms of its four shells (:data:`GRAD_ADD`)."""
    return [
        "  const double wq = 4.0 * s;",
        "  grad_add3(grad, 3 * shell_atom[si], wq * gA[0], wq * gA[1], wq * gA[2]);",
        "  grad_add3(grad, 3 * shell_atom[sj], wq * gB[0], wq * gB[1], wq * gB[2]);",
        "  grad_add3(grad, 3 * shell_atom[sk], wq * gC[0], wq * gC[1], wq * gC[2]);",
        "  grad_add3(grad, 3 * shell_atom[sl], -wq * (gA[0] + gB[0] + gC[0]), -wq * (gA[1] + gB[1] + gC[1]),",
        "            -wq * (gA[2] + gB[2] + gC[2]));",
    ]


def _kernel(cls, table, attenuated=False):
    la, lb, lc, ld = cls
    na, nb, nc, nd = (ncart(l) for l in cls)
    dc = derivative_classes(cls)
    up_size = max(_size(dc[k][0]) for k in "ABC")
    dn_size = max([_size(dc[k][1]) for k in "ABC" if dc[k][1] is not None] + [1])

    def tab(c):
        return f"tab + {int(table.offsets[nroots(c)])}"

    def call(c, bra, ket, prim_b, prim_k, out):
        b0, b1, bg = ("pb0", "pb1", "ga") if bra == "bra" else ("pk0", "pk1", "gc")
        k0, k1, kg = ("pk0", "pk1", "gc") if bra == "bra" else ("pb0", "pb1", "ga")
        om = ", omega" if attenuated else ""
        return f"  eri_{class_name(c)}({b0}, {b1}, {prim_b}, {bg}, {k0}, {k1}, {prim_k}, {kg}, {tab(c)}, {out}{om});"

    lines = [
        f'extern "C" __global__ void __launch_bounds__({THREADS}) {kernel_name(cls)}({decl(params(cls, attenuated))})',
        "{",
        "  const int t = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (t >= nlist) return;",
        *listed_quartet_lines(LIST_FLAG_SHIFT),
        "  const int pb0 = bra_pst[ib], pb1 = bra_pst[ib + 1], pk0 = ket_pst[ik], pk1 = ket_pst[ik + 1];",
        "  const double* ga = bra_geo + 6 * ib;",
        "  const double* gc = ket_geo + 6 * ik;",
        *_gamma_lines(cls, transpose=True),
        f"  double up[{up_size}], dn[{dn_size}];",
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0}, gC[3] = {0.0, 0.0, 0.0};",
        "  // d/dA: (a+1 b|cd) with 2α, (a-1 b|cd)",
        call(dc["A"][0], "bra", "ket", "bra_prim_a", "ket_prim", "up"),
    ]
    if dc["A"][1] is not None:
        lines.append(call(dc["A"][1], "bra", "ket", "bra_prim", "ket_prim", "dn"))
    lines += [
        f"  contract_mid(up, dn, gam, 1, {na}, {ncart(la + 1)}, {ncart(la - 1) if la else 1}, {nb * nc * nd}, "
        f"GUP_{la}, GDN_{la}, GFAC_{la}, gA);",
        "  // d/dB: (a b+1|cd) with 2β, (a b-1|cd)",
        call(dc["B"][0], "bra", "ket", "bra_prim_b", "ket_prim", "up"),
    ]
    if dc["B"][1] is not None:
        lines.append(call(dc["B"][1], "bra", "ket", "bra_prim", "ket_prim", "dn"))
    lines += [
        f"  contract_mid(up, dn, gam, {na}, {nb}, {ncart(lb + 1)}, {ncart(lb - 1) if lb else 1}, {nc * nd}, "
        f"GUP_{lb}, GDN_{lb}, GFAC_{lb}, gB);",
        "  // d/dC: the bra of (cd|ab), (c+1 d|ab) with 2γ, (c-1 d|ab)",
        call(dc["C"][0], "ket", "bra", "ket_prim_a", "bra_prim", "up"),
    ]
    if dc["C"][1] is not None:
        lines.append(call(dc["C"][1], "ket", "bra", "ket_prim", "bra_prim", "dn"))
    lines += [
        f"  contract_mid(up, dn, gamt, 1, {nc}, {ncart(lc + 1)}, {ncart(lc - 1) if lc else 1}, {nd * na * nb}, "
        f"GUP_{lc}, GDN_{lc}, GFAC_{lc}, gC);",
        *_atomic_lines(),
        "}",
    ]
    return lines


#: classes with at most this many cartesian components get the fused kernel (one Rys pass per
#: primitive quartet, the derivatives from raised 2-D integrals in registers); larger ones
#: the block kernel (six contracted blocks in local memory), which compiles in bounded time
FUSED_LIMIT = 400

FUSED_PARAMS = GRAD_PARAMS + [("const double*", "bra_exp"), ("const double*", "ket_exp")]


def is_fused(cls):
    return _size(cls) <= FUSED_LIMIT


def _fused_program(cls):
    """The recurrences (eqs. (4)-(7) of :mod:`hartree.integrals.rys_program`) of every 2-D
    integral the derivatives of eq. (2) need, per root: I(i, j; k, l) and I with i, j or k
    raised or lowered by one, for every component of the class."""
    sched = Schedule()
    la, lb, lc, ld = cls
    for a in cart_components(la):
        for b in cart_components(lb):
            for c in cart_components(lc):
                for d in cart_components(ld):
                    for x, ax in enumerate(AXES):
                        i, j, k, l = a[x], b[x], c[x], d[x]
                        sched.request(node("e", ax, i, j, k, l))
                        for di, dj, dk in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                            sched.request(node("e", ax, i + di, j + dj, k + dk, l))
                            if (i, j, k)[(di, dj, dk).index(1)] > 0:
                                sched.request(node("e", ax, i - di, j - dj, k - dk, l))
    return RysProgram(tuple(cls), nroots((la + 1, lb, lc, ld)), tuple(sched.statements))


def _fused_root(cls):
    """Statements of one root: coefficients, recurrences, and per component the nine
    accumulations of Γ x eq. (2) (A, B, C by x, y, z)."""
    la, lb, lc, ld = cls
    program = _fused_program(cls)
    defined = {s.target for s in program.root}
    lines = root_coefficient_lines() + program_lines(program)

    def name(ax, *idx):
        return node_name(node("e", ax, *idx), defined)

    def deriv(ax, idx, pos, weight):
        up = list(idx)
        up[pos] += 1
        text = f"{weight} * {name(ax, *up)}"
        if idx[pos] > 0:
            dn = list(idx)
            dn[pos] -= 1
            text += f" - {float(idx[pos])!r} * {name(ax, *dn)}"
        return f"({text})"

    q = 0
    for a in cart_components(la):
        for b in cart_components(lb):
            for c in cart_components(lc):
                for d in cart_components(ld):
                    idx = [(a[x], b[x], c[x], d[x]) for x in range(3)]
                    v = [name(ax, *idx[x]) for x, ax in enumerate(AXES)]
                    lines.append(f"      {{ const double t = gam[{q}];")
                    for centre, pos, weight in (("A", 0, "ta"), ("B", 1, "tb"), ("C", 2, "tc")):
                        for x, ax in enumerate(AXES):
                            f = [deriv(ax, idx[x], pos, weight) if y == x else v[y] for y in range(3)]
                            lines.append(f"        g{centre}[{x}] += t * {f[0]} * {f[1]} * {f[2]};")
                    lines.append("      }")
                    q += 1
    return program.nroots, lines


def _fused_kernel(cls, table, attenuated=False):
    n, root = _fused_root(cls)
    lines = [
        f'extern "C" __global__ void __launch_bounds__({THREADS}, {MIN_BLOCKS.get(cls, 1)}) '
        f"{kernel_name(cls)}({decl(params(cls, attenuated))})",
        "{",
        "  const int t = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (t >= nlist) return;",
        *listed_quartet_lines(LIST_FLAG_SHIFT),
        "  const double* ga = bra_geo + 6 * ib;",
        "  const double* gc = ket_geo + 6 * ik;",
        "  const double ABx = ga[3], ABy = ga[4], ABz = ga[5];",
        "  const double CDx = gc[3], CDy = gc[4], CDz = gc[5];",
        *_gamma_lines(cls, transpose=False),
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0}, gC[3] = {0.0, 0.0, 0.0};",
        "  for (int pb = bra_pst[ib]; pb < bra_pst[ib + 1]; ++pb) {",
        "    const double* P = bra_prim + 5 * pb;",
        "    const double ze = P[0], Kab = P[4];",
        "    const double ta = 2.0 * bra_exp[2 * pb], tb = 2.0 * bra_exp[2 * pb + 1];",
        "    const double PAx = P[1] - ga[0], PAy = P[2] - ga[1], PAz = P[3] - ga[2];",
        "    for (int pk = ket_pst[ik]; pk < ket_pst[ik + 1]; ++pk) {",
        "      const double* Q = ket_prim + 5 * pk;",
        "      const double et = Q[0], Kcd = Q[4];",
        "      const double tc = 2.0 * ket_exp[2 * pk];",
        *quartet_lines(attenuated),
        f"      double u[{n}], w[{n}];",
        f"      rys_{n}(T, tab + {int(table.offsets[n])}, u, w);",
        *(attenuated_roots(n) if attenuated else []),
        "#pragma unroll 1",
        f"      for (int r = 0; r < {n}; ++r) {{",
        *root,
        "      }",
        "    }",
        "  }",
        *_atomic_lines(),
        "}",
    ]
    return lines


def params(cls, attenuated=False):
    """Kernel parameters of class cls (the fused and cooperative kernels take the primitive
    exponents; attenuated: then ``double omega``, bohr^-1, of erf(ω r12)/r12)."""
    base = FUSED_PARAMS if is_fused(cls) or cooperative_gradient.is_cooperative(cls) else GRAD_PARAMS
    return base + [("double", "omega")] if attenuated else base


def variant(cls):
    """The kernel kind of class cls: 'cooperative' (:mod:`hartree.gpu.cooperative_gradient`),
    'fused' or 'block'."""
    if cooperative_gradient.is_cooperative(cls):
        return "cooperative"
    return "fused" if is_fused(cls) else "block"


def table_roots(cls):
    """Rys roots of the table the class's kernel is given: the cooperative kernels take the
    table of their roots only (the others the whole table, with offsets in the source)."""
    la, lb, lc, ld = cls
    return nroots((la + 1, lb, lc, ld)) if cooperative_gradient.is_cooperative(cls) else None


def generate(cls, table, attenuated=False):
    """CUDA C source of the gradient kernel of quartet class cls = (la, lb, lc, ld)
    (la >= lb, lc >= ld, bra pair class >= ket pair class as the J/K lists give them):
    the cooperative kernel (:mod:`hartree.gpu.cooperative_gradient`) where it applies, else
    the fused kernel up to FUSED_LIMIT components, else the block kernel.
    table: :class:`hartree.gpu.tables.RysTable`.  attenuated: the kernel of erf(ω r12)/r12
    (eq. (2) holds for any operator of r12 alone; parameters :func:`params`); the 1/r12
    text is the same as without the argument.  Deterministic text."""
    if cooperative_gradient.is_cooperative(cls):
        lines = [GRAD_ADD, ""]
        lines += cooperative_gradient.kernel_lines(
            cls, table, kernel_name(cls), decl(params(cls, attenuated)), attenuated=attenuated
        )
        return "\n".join(lines + [""])
    erf = ", erf(omega r12)/r12" if attenuated else ""
    if is_fused(cls):
        la, lb, lc, ld = cls
        n = nroots((la + 1, lb, lc, ld))
        out = [
            f"// generated by hartree.gpu.gradient_kernels (version {GENERATOR_VERSION}, fused{erf}) for class "
            f"({la}{lb}|{lc}{ld}); Rys table sha256 {table.sha256}; do not edit",
            "",
            *rys_function(table, n),
            "",
            GRAD_ADD,
            "",
            *_fused_kernel(cls, table, attenuated),
            "",
        ]
        return "\n".join(out)
    return _block_source(cls, table, attenuated)


def _block_source(cls, table, attenuated=False):
    """The block kernel's source (six contracted blocks of the energy's device functions;
    attenuated: of erf(ω r12)/r12)."""
    la, lb, lc, ld = cls
    dc = derivative_classes(cls)
    classes = []
    for k in "ABC":
        for c in dc[k]:
            if c is not None and c not in classes:
                classes.append(c)
    erf = ", erf(omega r12)/r12" if attenuated else ""
    out = [
        f"// generated by hartree.gpu.gradient_kernels (version {GENERATOR_VERSION}{erf}) for class "
        f"({la}{lb}|{lc}{ld}); Rys table sha256 {table.sha256}; do not edit",
        "",
    ]
    for n in sorted({nroots(c) for c in classes}):
        out += rys_function(table, n) + [""]
    for c in classes:
        out += eri_function(c, attenuated=attenuated) + [""]
    for l in sorted({la, lb, lc}):
        out += _index_tables(l)
    out += ["", _CONTRACT, "", GRAD_ADD, ""]
    out += _kernel(cls, table, attenuated) + [""]
    return "\n".join(out)
