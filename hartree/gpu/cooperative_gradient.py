"""CUDA C generator: cooperative ERI-gradient kernel, one group of lanes per shell quartet.

The one-quartet-per-thread gradient kernels (:mod:`hartree.gpu.gradient_kernels`) keep every
2-D integral of the raised and lowered classes of a quartet in registers; from about a
hundred cartesian components on ((dp|pp), (dp|dp), (dd|pp), ...) those no longer fit and
the kernels run out of local memory (tens of kilobytes a thread).  Here a group of lanes
shares one quartet of the gradient's quartet list, as the cooperative J/K kernels
(:mod:`hartree.gpu.cooperative_kernels`) do, and keeps the 2-D tables in shared memory:

0. lanes compute Γ_abcd of the quartet (eq. (1) of :mod:`hartree.gpu.gradient_kernels`)
   into shared memory, once;
1. per pass of NS primitive quartets ("slots"), lanes (slot, f) evaluate the Rys roots and
   weights of n = nroots(la+lb+lc+ld+1) (the J/K kernels' phase 1), and the slot's
   exponent factors 2α, 2β, 2γ;
2. lanes (slot, d, r) write the whole 2-D table I_d(r)[i][j][k][l] of the class raised by
   one on the first three centres, i <= la+1, j <= lb+1, k <= lc+1, l <= ld (the same
   recurrences, printed from :func:`hartree.integrals.rys_program.table_program`);
3. each lane owns *units* of the cartesian block -- a bra component pair (a, b) with all
   (c, d), or a triple (a, b, c) with all d -- and adds, per root and component,
   Γ_abcd × eq. (2) of :mod:`hartree.gpu.gradient_kernels` in factored form

       g_Ax += Γ I_y I_z (2α I_x(i+1) - i I_x(i-1)),  likewise y, z and B (j), C (k);

then the group sums its lanes' nine values (warp shuffles) and one lane adds the four
atoms' gradients (``grad_add3``; D by translational invariance).

Launch: list entry t -> group t; blockDim.x = lanes x groups; dynamic shared memory
:func:`shared_bytes`.  Groups are 8, 16 or 32 lanes (one warp at most: the barriers are
__syncwarp over the group's lanes).  Under the serial emulator (``HT_EMULATION``) a group
is one lane and every phase a plain loop, as for the J/K kernels.
"""

from typing import NamedTuple

from ..basis.angular import cart_components, ncart
from .codegen import GENERATOR_VERSION, check_class, class_name, listed_quartet_lines, nroots
from .cooperative_kernels import MAX_SHARED, _roots_phase, _tables_phase, table_layout


class GradientShape(NamedTuple):
    """Launch shape of a cooperative gradient kernel: lanes per quartet (8, 16, 32),
    quartets per block, unit mode ('ab' or 'abc'), primitive quartets per pass."""

    lanes: int
    groups: int
    unit_mode: str
    slots: int = 1


#: a class gets the cooperative gradient kernel from this many cartesian components on
#: (below, the one-quartet-per-thread kernels keep their 2-D integrals in registers).
#: Measured on Taxol/6-31G** (H100, per class, one-quartet-per-thread -> cooperative 32 x 2,
#: 2 slots): (dp|dp) 1.018 -> 0.071 s, (dd|dp) 0.63 -> < 0.04, (dd|pp) 0.52 -> 0.040,
#: (dp|pp) 0.30 -> 0.21; but (dp|ps) 0.108 -> 0.31, (ds|pp) 0.062 -> 0.20, (pp|pp) 0.084 ->
#: 0.137, (dp|ds) 0.082 -> 0.120, (dd|ps) 0.049 -> 0.057: from (dp|pp)'s 162 components on
COOPERATIVE_MIN = 162

#: unit mode 'ab' when the class has at least this many (a, b) pairs and at most KET_AB_MAX
#: (c, d) pairs (a unit's Γ and 2-D values stay in registers), else 'abc'
AB_UNITS_MIN = 24
KET_AB_MAX = 36


def is_cooperative(cls):
    """True when class `cls` uses the kernel of this module: COOPERATIVE_MIN components or
    more, and one group's tables fit a block's shared memory."""
    size = ncart(cls[0]) * ncart(cls[1]) * ncart(cls[2]) * ncart(cls[3])
    return size >= COOPERATIVE_MIN and 8 * group_doubles(cls) <= MAX_SHARED


def raised(cls):
    """The class whose 2-D tables hold every integral eq. (2) needs: (la+1, lb+1, lc+1, ld)."""
    la, lb, lc, ld = cls
    return (la + 1, lb + 1, lc + 1, ld)


def shape_of(cls):
    """GradientShape of class `cls`: 32 lanes, 2 quartets a block and 2 primitive quartets a
    pass where they fit (on Taxol/6-31G** 2 slots were 6 % faster than 1 in all, 16 x 4
    lanes 3 %; unit mode 'abc' for (dd|pp) 35 % slower than 'ab')."""
    ab = ncart(cls[0]) * ncart(cls[1]) >= AB_UNITS_MIN and ncart(cls[2]) * ncart(cls[3]) <= KET_AB_MAX
    mode = "ab" if ab else "abc"
    for groups, slots in ((2, 2), (2, 1), (1, 2), (1, 1)):
        if 8 * groups * group_doubles(cls, slots) <= MAX_SHARED:
            return GradientShape(32, groups, mode, slots)
    raise ValueError(f"class {cls}: one group's tables do not fit a block's shared memory")


def _nroots(cls):
    la, lb, lc, ld = cls
    return nroots((la + 1, lb, lc, ld))


def group_doubles(cls, slots=1):
    """Shared doubles per group: 2-D tables 3 n N2D per slot (of the raised class), Γ,
    roots/weights 2n and exponent factors 3 per slot."""
    n = _nroots(cls)
    ng = ncart(cls[0]) * ncart(cls[1]) * ncart(cls[2]) * ncart(cls[3])
    return 3 * n * slots * table_layout(raised(cls)).size + ng + (2 * n + 3) * slots


def shared_bytes(cls, shape):
    """Dynamic shared memory of one block (bytes)."""
    return 8 * group_doubles(cls, shape.slots) * shape.groups


def launch_config(cls, shape=None):
    """(threads per quartet, threads per block, dynamic shared bytes per block)."""
    shape = shape or shape_of(cls)
    return shape.lanes, shape.lanes * shape.groups, shared_bytes(cls, shape)


def _units(cls, mode):
    """Per unit: the packed offsets of its first value in the (d, r) tables (ox | oy << 10 |
    oz << 20) and its packed exponents (a_x a_y a_z b_x b_y b_z c_x c_y c_z, 3 bits each;
    c only in mode 'abc')."""
    la, lb, lc, ld = cls
    _, LB1, _, LD1, S, _ = table_layout(raised(cls))
    offs, exps = [], []
    for a in cart_components(la):
        for b in cart_components(lb):
            base = [(a[x] * LB1 + b[x]) * S for x in range(3)]
            cs = cart_components(lc) if mode == "abc" else [(0, 0, 0)]
            for c in cs:
                o = [base[x] + c[x] * LD1 for x in range(3)]
                assert max(o) < 1024
                offs.append(o[0] | (o[1] << 10) | (o[2] << 20))
                e = 0
                for k, v in enumerate((*a, *b, *c)):
                    e |= v << (3 * k)
                exps.append(e)
    return offs, exps


def _preamble(cls, table, shape, namespace):
    n = _nroots(cls)
    R = raised(cls)
    N2D = table_layout(R).size
    offs, exps = _units(cls, shape.unit_mode)
    ng = ncart(cls[0]) * ncart(cls[1]) * ncart(cls[2]) * ncart(cls[3])
    asym = [float(table.asym_u[n, i]) for i in range(n)] + [float(table.asym_w[n, i]) for i in range(n)]
    return [
        f"// generated by hartree.gpu.cooperative_gradient (version {GENERATOR_VERSION}) for class "
        f"({cls[0]}{cls[1]}|{cls[2]}{cls[3]}): {n} roots, units '{shape.unit_mode}' ({len(offs)}), "
        f"{shape.slots} slot(s), {group_doubles(cls, shape.slots)} shared doubles per group; "
        f"Rys table sha256 {table.sha256}; do not edit",
        f"namespace {namespace} {{",
        "#ifdef HT_EMULATION",
        "constexpr int GSZ = 1;                 // serial emulation: one lane per group",
        "#else",
        f"constexpr int GSZ = {shape.lanes};",
        "#endif",
        "#define HT_SYNC() do { __syncwarp(gmask); } while (0)",
        f"constexpr int NR = {n}, NR2 = {2 * n}, N2D = {N2D}, NU = {len(offs)}, NS = {shape.slots}, "
        f"NRS = {shape.slots * n}, NG = {ng}, PER = {group_doubles(cls, shape.slots)};",
        f"__constant__ double asym[{2 * n}] = {{{', '.join(repr(x) for x in asym)}}};",
        f"__device__ const unsigned units[{len(offs)}] = {{{', '.join(str(u) + 'u' for u in offs)}}};",
        f"__device__ const unsigned uexp[{len(exps)}] = {{{', '.join(str(u) + 'u' for u in exps)}}};",
        "}",
    ]


def _group_setup(namespace):
    return [
        f"  using namespace {namespace};",
        "#ifdef HT_EMULATION",
        "  static thread_local double ht_smem[PER];",
        "  const int grp = 0;",
        "#else",
        "  extern __shared__ double ht_smem[];",
        "  const int grp = threadIdx.x / GSZ;",
        "#endif",
        "  const int lane = threadIdx.x % GSZ;",
        "  const unsigned gmask = GSZ >= 32 ? 0xffffffffu :       // the group's lanes in its warp",
        "      ((1u << (GSZ % 32)) - 1u) << ((threadIdx.x % 32) / GSZ * GSZ);",
        "  (void)gmask;",
        "  const long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / GSZ;",
        "  double* sI = ht_smem + grp * PER;            // 2-D tables [d][r][N2D]",
        "  double* sG = sI + 3 * NRS * N2D;             // Γ[a][b][c][d]",
        "  double* sUW = sG + NG;                       // u_r, w_r * prefactor per slot",
        "  double* sT = sUW + NS * NR2;                 // 2α, 2β, 2γ per slot",
    ]


def _gamma_phase(cls):
    """Phase 0: Γ of eq. (1) into sG, lanes over the components."""
    na, nb, nc, nd = (ncart(l) for l in cls)
    return [
        "  for (int q = lane; q < NG; q += GSZ) {",
        f"    const int a = q / {nb * nc * nd}, b = (q / {nc * nd}) % {nb}, c = (q / {nd}) % {nc}, d = q % {nd};",
        "    double v = __ldg(dj + (size_t)(i0 + a) * ncart + j0 + b) * __ldg(dj + (size_t)(k0 + c) * ncart + l0 + d);",
        "    for (int s2 = 0; s2 < nk; ++s2) {",
        "      const double* D = dk + (size_t)s2 * ncart * ncart;",
        "      const double* Da = D + (size_t)(i0 + a) * ncart;",
        "      const double* Db = D + (size_t)(j0 + b) * ncart;",
        "      v -= hk * (__ldg(Da + k0 + c) * __ldg(Db + l0 + d) + __ldg(Da + l0 + d) * __ldg(Db + k0 + c));",
        "    }",
        "    sG[q] = v;",
        "  }",
    ]


def _units_phase(cls, mode):
    """Phase 3: each lane adds Γ x eq. (2) of its units, per root, into gA, gB, gC."""
    la, lb, lc, ld = cls
    _, LB1, _, LD1, S, _ = table_layout(raised(cls))
    nd = ncart(ld)
    ab = mode == "ab"
    cs = cart_components(lc) if ab else [None]
    cd = cart_components(ld)
    nval = len(cs) * nd
    kmax = lc + 1 if ab else 1  # distinct k offsets within a unit
    L = [
        "#pragma unroll 1",
        "      for (int u = lane; u < NU; u += GSZ) {",
        "        const unsigned pk = __ldg(units + u), pe = __ldg(uexp + u);",
        "        const int off[3] = {(int)(pk & 1023u), (int)((pk >> 10) & 1023u), (int)(pk >> 20)};",
        f"        double gam[{nval}];",
        (f"        const double* G = sG + u * {nval};"),
        "#pragma unroll",
        f"        for (int q = 0; q < {nval}; ++q) gam[q] = G[q];",
        "#pragma unroll 1",
        "        for (int r = 0; r < nact * NR; ++r) {",
        "          const double ta = sT[3 * (r / NR)], tb = sT[3 * (r / NR) + 1], tc = sT[3 * (r / NR) + 2];",
    ]
    # per direction: the value, and its A, B, C derivatives of eq. (2), for every (k, l) of
    # the unit; lowered terms only where the exponent is > 0 (never read below the table)
    for x, t in enumerate("xyz"):
        L += [
            f"          const double* {t.upper()} = sI + ({x} * NRS + r) * N2D + off[{x}];",
            f"          const int ea{t} = (pe >> {3 * x}) & 7u, eb{t} = (pe >> {3 * (3 + x)}) & 7u;",
        ]
        if not ab:
            L.append(f"          const int ec{t} = (pe >> {3 * (6 + x)}) & 7u;")
        for k in range(kmax):
            for l in range(ld + 1):
                o = k * LD1 + l
                T = t.upper()
                kf = str(k) if ab else f"ec{t}"
                L += [
                    f"          const double {t}{k}_{l} = {T}[{o}];",
                    f"          const double {t}A{k}_{l} = ta * {T}[{o + LB1 * S}]"
                    f" - (ea{t} ? ea{t} * {T}[{o - LB1 * S}] : 0.0);",
                    f"          const double {t}B{k}_{l} = tb * {T}[{o + S}] - (eb{t} ? eb{t} * {T}[{o - S}] : 0.0);",
                ]
                if ab and k == 0:
                    L.append(f"          const double {t}C{k}_{l} = tc * {T}[{o + LD1}];")
                elif ab:
                    L.append(f"          const double {t}C{k}_{l} = tc * {T}[{o + LD1}] - {k}.0 * {T}[{o - LD1}];")
                else:
                    low = f"({kf} ? {kf} * {T}[{o - LD1}] : 0.0)"
                    L.append(f"          const double {t}C{k}_{l} = tc * {T}[{o + LD1}] - {low};")
    q = 0
    for c in cs:
        for d in cd:
            idx = [f"{(c[x] if ab else 0)}_{d[x]}" for x in range(3)]
            L += [
                "          {",
                f"            const double gx = {'x' + idx[0]}, gy = {'y' + idx[1]}, gz = {'z' + idx[2]};",
                f"            const double fz = gam[{q}] * gx * gy, fy = gam[{q}] * gx * gz, fx = gam[{q}] * gy * gz;",
            ]
            for centre in "ABC":
                for x, t in enumerate("xyz"):
                    f = ("fx", "fy", "fz")[x]
                    L.append(f"            g{centre}[{x}] += {f} * {t}{centre}{idx[x]};")
            L.append("          }")
            q += 1
    L += ["        }", "      }"]
    return L


def _reduce_and_add():
    """The group's sum of gA, gB, gC (warp shuffles within the group), added by lane 0."""
    return [
        "#ifndef HT_EMULATION",
        "  for (int o = GSZ / 2; o > 0; o >>= 1)",
        "    for (int x = 0; x < 3; ++x) {",
        "      gA[x] += __shfl_xor_sync(gmask, gA[x], o);",
        "      gB[x] += __shfl_xor_sync(gmask, gB[x], o);",
        "      gC[x] += __shfl_xor_sync(gmask, gC[x], o);",
        "    }",
        "#endif",
        "  if (lane != 0) return;",
        "  const double wq = 4.0 * s;",
        "  grad_add3(grad, 3 * shell_atom[si], wq * gA[0], wq * gA[1], wq * gA[2]);",
        "  grad_add3(grad, 3 * shell_atom[sj], wq * gB[0], wq * gB[1], wq * gB[2]);",
        "  grad_add3(grad, 3 * shell_atom[sk], wq * gC[0], wq * gC[1], wq * gC[2]);",
        "  grad_add3(grad, 3 * shell_atom[sl], -wq * (gA[0] + gB[0] + gC[0]), -wq * (gA[1] + gB[1] + gC[1]),",
        "            -wq * (gA[2] + gB[2] + gC[2]));",
    ]


def kernel_lines(cls, table, name, params_decl, shape=None, list_shift=30, attenuated=False):
    """Source lines of the cooperative gradient kernel `name` of class `cls` (after the
    ``grad_add3`` device function and the Rys table's constants; parameters as
    :data:`hartree.gpu.gradient_kernels.FUSED_PARAMS`).  attenuated: erf(ω r12)/r12, the
    parameters ending in ``double omega`` (``gradient_kernels.params(cls, True)``); phase 1
    stores the scaled roots and weights (:func:`hartree.gpu.cooperative_kernels._roots_phase`)."""
    shape = shape or shape_of(cls)
    if shape.lanes not in (8, 16, 32):
        raise ValueError(f"{shape.lanes} lanes a group: 8, 16 or 32")
    if shared_bytes(cls, shape) > MAX_SHARED:
        raise ValueError(
            f"class {cls}: {shared_bytes(cls, shape)} bytes of shared memory a block, more than {MAX_SHARED}"
        )
    check_class(cls)
    ns = f"cgrad_{class_name(cls)}"
    L = _preamble(cls, table, shape, ns)
    L += [f'extern "C" __global__ void __launch_bounds__({shape.lanes * shape.groups}) {name}({params_decl})', "{"]
    L += _group_setup(ns)
    L += ["  if (t >= nlist) return;     // whole groups leave together"]
    L += listed_quartet_lines(list_shift)
    L += [
        "  const double* ga = bra_geo + 6 * ib;",
        "  const double* gc = ket_geo + 6 * ik;",
        "  const int pb0 = bra_pst[ib], pb1 = bra_pst[ib + 1];",
        "  const int pk0 = ket_pst[ik], pk1 = ket_pst[ik + 1];",
        "  const double ABx = ga[3], ABy = ga[4], ABz = ga[5];",
        "  const double CDx = gc[3], CDy = gc[4], CDz = gc[5];",
    ]
    L += _gamma_phase(cls)
    L += [
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0}, gC[3] = {0.0, 0.0, 0.0};",
        "  const int npk = pk1 - pk0, npq = (pb1 - pb0) * npk;",
        "  for (int q0 = 0; q0 < npq; q0 += NS) {",
        "      const int nact = npq - q0 < NS ? npq - q0 : NS;",
        "      HT_SYNC();                     // readers of the previous tables (and Γ) are done",
        "      for (int sl = lane; sl < nact; sl += GSZ) {",
        "        const int pb = pb0 + (q0 + sl) / npk, pk = pk0 + (q0 + sl) % npk;",
        "        sT[3 * sl] = 2.0 * bra_exp[2 * pb];",
        "        sT[3 * sl + 1] = 2.0 * bra_exp[2 * pb + 1];",
        "        sT[3 * sl + 2] = 2.0 * ket_exp[2 * pk];",
        "      }",
    ]
    L += _roots_phase(table, _nroots(cls), attenuated)
    L += ["      HT_SYNC();"]
    L += _tables_phase(raised(cls))
    L += ["      HT_SYNC();"]
    L += _units_phase(cls, shape.unit_mode)
    L += ["  }"]
    L += _reduce_and_add()
    L += ["}"]
    return L
