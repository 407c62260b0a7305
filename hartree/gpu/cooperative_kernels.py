"""CUDA C generator: cooperative J/K kernel, one group of lanes (a warp) per shell quartet.

For the high-l classes the one-quartet-per-thread kernel (:mod:`hartree.gpu.jk_kernels`) must
cut the ERI block into slices that each recompute the Rys roots and the 2-D integrals
(and each slice digests with its own atomics).  Here a group of lanes (threads) shares
one quartet (ij|kl) of the quartet list (the "one quartet per warp" mapping of the GAMESS
and QUICK GPU codes; groups of 8 or 16 lanes, or 2-8 warps, are possible too).  Primitive quartets
are taken a few at a time ("slots", the constant NS of the generated code: with few roots
the phases 1-2 below would leave most lanes idle); per pass:

1. lanes (slot, f), f < 2n, evaluate one Chebyshev series each: root u_f or weight w_f
   of the slot's primitive quartet (same table and Clenshaw recurrence as
   ``codegen.rys_function``; w carries the prefactor of eq. (1) of
   :mod:`hartree.gpu.codegen`);
2. lanes (slot, d, r) compute the whole 2-D table I_d(r)[i][j][k][l], i <= la, j <= lb,
   k <= lc, l <= ld, of direction d and root r (VRR eqs. (4)-(5), HRR eqs. (6)-(7) of
   codegen, written out for the class) into shared memory; the slots' roots follow one
   another, so phase 3 sums them like more roots;
3. each lane owns *units* of the cartesian block -- a bra component pair (a, b) with all
   (c, d), or a triple (a, b, c) with all d for classes with few (a, b) -- and adds
   Σ_r I_x I_y I_z (eq. (1)) into the block E[a][b][c][d] kept in shared memory (no
   other lane writes that unit: no atomics).

Then the group digests E against the density with one atomicAdd per J/K element
(the six blocks J_ab, J_cd, K_ac, K_ad, K_bc, K_bd of the degeneracy-weighted rules in
:mod:`hartree.gpu.jk_kernels`), each element summed by one lane.

Which classes use these kernels, and with which shape (lanes per quartet, groups per
block, unit mode, slots: :class:`hartree.gpu.tuning.CooperativeShape`), is per-GPU tuning
data (:mod:`hartree.gpu.tuning`); the functions here take the shape as an argument.

Launch (see :func:`launch_config`): list entry t -> group t; blockDim.x = lanes per group
x groups per block; dynamic shared memory :func:`shared_bytes` (groups x doubles per group
x 8).  Groups are part of a warp or one warp (barriers: __syncwarp with the group's lane
mask) or one whole block (__syncthreads).  The
group size is the constant ``GSZ`` of the class's namespace; under the CPU emulation shim
(``hartree/device/emulator_shim.cu`` defines ``HT_EMULATION``) it is 1, so the serial emulator runs the
same source with one "lane" per group, every phase being a lane-strided loop
(``for (x = lane; x < N; x += GSZ)``).
"""

from typing import NamedTuple

from ..integrals.rys_program import table_program
from .codegen import (
    _PREF,
    ATTENUATION_ROOT,
    attenuate,
    cart_components,
    check_class,
    class_name,
    listed_quartet_lines,
    ncart,
    nroots,
    program_lines,
    spell,
)

#: lanes per pair of the cooperative Schwarz kernels (one warp: __syncwarp suffices
#: between phases; the final max is a warp shuffle)
SCHWARZ_LANES = 32

#: mode "ab" (a unit = one (a, b) pair, all (c, d)) when the class has at least this many
#: (a, b) pairs, else mode "abc" (a unit = (a, b, c), all d): keeps most lanes busy
AB_UNITS_MIN = 24


class TableLayout(NamedTuple):
    """Layout of the 2-D table I[i][j][k][l] of one (direction, root) in shared memory:
    index (i lb1 + j) stride + k ld1 + l."""

    la1: int  #: la + 1
    lb1: int  #: lb + 1
    lc1: int  #: lc + 1
    ld1: int  #: ld + 1
    stride: int  #: padded stride of one (i, j) block: (lc+1)(ld+1), made odd (bank conflicts)
    size: int  #: values per (direction, root) table: (la+1)(lb+1) stride


def table_layout(cls):
    """TableLayout of the 2-D tables of class `cls`."""
    la, lb, lc, ld = cls
    s = (lc + 1) * (ld + 1)
    s += 1 - s % 2
    return TableLayout(la + 1, lb + 1, lc + 1, ld + 1, s, (la + 1) * (lb + 1) * s)


def block_row_stride(cls):
    """Stride (doubles) between the (a, b) rows of the block E in shared memory: nc nd,
    made odd against bank conflicts (lanes read rows o, o+1, ... in the digestion)."""
    r = ncart(cls[2]) * ncart(cls[3])
    return r + 1 - r % 2


def resolve_unit_mode(cls, unit_mode=None):
    """Units of a class: `unit_mode` if given ('ab' or 'abc'), else 'ab' or 'abc' by
    :data:`AB_UNITS_MIN`."""
    if unit_mode is not None:
        if unit_mode not in ("ab", "abc"):
            raise ValueError(f"unit mode {unit_mode!r}: 'ab' or 'abc'")
        return unit_mode
    return "ab" if ncart(cls[0]) * ncart(cls[1]) >= AB_UNITS_MIN else "abc"


def units(cls, unit_mode=None):
    """Packed offsets of every unit: ox | oy << 10 | oz << 20, o_d the offset of the
    unit's first value in the (d, r) table."""
    la, lb, lc, ld = cls
    LA1, LB1, LC1, LD1, S, _ = table_layout(cls)
    out = []
    for a in cart_components(la):
        for b in cart_components(lb):
            base = [(a[x] * LB1 + b[x]) * S for x in range(3)]
            if resolve_unit_mode(cls, unit_mode) == "ab":
                out.append(base)
            else:
                for c in cart_components(lc):
                    out.append([base[x] + c[x] * LD1 for x in range(3)])
    for o in out:
        assert max(o) < 1024
    return [o[0] | (o[1] << 10) | (o[2] << 20) for o in out]


def group_doubles(cls, slots=1):
    """Shared doubles per group: 2-D tables 3 n N2D per slot (N2D: TableLayout.size), the
    block E (na nb rows of :func:`block_row_stride`), roots/weights 2n per slot."""
    n = nroots(cls)
    return (
        3 * n * slots * table_layout(cls).size + ncart(cls[0]) * ncart(cls[1]) * block_row_stride(cls) + 2 * n * slots
    )


def shared_bytes(cls, groups=1, slots=1):
    """Dynamic shared memory of one block (bytes): `groups` groups of `slots` slots."""
    return 8 * group_doubles(cls, slots) * groups


#: largest dynamic shared memory of one block (bytes; sm_90 opt-in limit 227 KiB)
MAX_SHARED = 227 * 1024


def fits(cls, groups=1, slots=1):
    """True when `groups` quartets of class `cls` fit one block's shared memory."""
    return shared_bytes(cls, groups, slots) <= MAX_SHARED


def launch_config(cls, shape):
    """(threads per quartet, threads per block, dynamic shared bytes per block) of the
    class's cooperative J/K kernel of CooperativeShape `shape`."""
    return shape.lanes, shape.lanes * shape.groups, shared_bytes(cls, shape.groups, shape.slots)


def _prim(ind, attenuated=False):
    """Statements of primitive quartet q0 + sl (pair-primitive rows pb, pk): exponents,
    centres relative to A and C, T and the prefactor of eq. (1); attenuated: θ, θT and
    sqrt(θ) pref of erf(ω r12)/r12 (:func:`hartree.gpu.codegen.attenuate`)."""
    lines = [
        ind + x
        for x in [
            "const int pb = pb0 + (q0 + sl) / npk, pk = pk0 + (q0 + sl) % npk;",
            "const double* P = bra_prim + 5 * pb;",
            "const double* Q = ket_prim + 5 * pk;",
            "const double ze = P[0], Kab = P[4], et = Q[0], Kcd = Q[4];",
            "const double PAx = P[1] - ga[0], PAy = P[2] - ga[1], PAz = P[3] - ga[2];",
            "const double QCx = Q[1] - gc[0], QCy = Q[2] - gc[1], QCz = Q[3] - gc[2];",
            "const double PQx = P[1] - Q[1], PQy = P[2] - Q[2], PQz = P[3] - Q[3];",
            "const double zsum = ze + et;",
            "const double inv_zsum = 1.0 / zsum;",
            "const double inv_ze = 1.0 / ze, inv_et = 1.0 / et;",
            "const double et_zs = et * inv_zsum, ze_zs = ze * inv_zsum;",
            "const double T = ze * et_zs * (PQx * PQx + PQy * PQy + PQz * PQz);",
            f"const double pref = {_PREF!r} * Kab * Kcd / (ze * et * sqrt(zsum));",
            "(void)PAx; (void)PAy; (void)PAz; (void)QCx; (void)QCy; (void)QCz; (void)inv_ze;",
            "(void)inv_et; (void)ze_zs; (void)pref;",
        ]
    ]
    return attenuate(lines) if attenuated else lines


def _roots_phase(table, n, attenuated=False):
    """Phase 1: lanes (slot, f) evaluate series f (u_0..u_{n-1}, w_0..w_{n-1}) of the
    slot's primitive quartet into sUW; attenuated (erf(ω r12)/r12): the series at θT, θu
    and the weight times sqrt(θ) pref stored (phase 2 reads u and w only)."""
    _, root = ATTENUATION_ROOT
    u = spell(root, {"u": "v"}) if attenuated else "v"
    deg = table.degree
    stride = 2 * n * (deg + 1)
    return (
        [
            "      for (int sf = lane; sf < nact * NR2; sf += GSZ) {",
            "        const int sl = sf / NR2, f = sf % NR2;",
        ]
        + _prim("        ", attenuated)
        + [
            "        double v;",
            f"        if (T >= {table.tmax(n)!r}) {{",
            "          const double it = 1.0 / T;",
            "          v = asym[f] * (f < NR ? it : sqrt(it));",
            "        } else {",
            f"          const int k = (int)(T / {table.width!r});",
            f"          const double x = 2.0 * (T / {table.width!r} - k) - 1.0;",
            "          const double x2 = 2.0 * x;",
            f"          const double* cf = tab + (long long)k * {stride} + f * {deg + 1};",
            "          double b1 = 0.0, b2 = 0.0;",
            "#pragma unroll",
            f"          for (int j = {deg}; j > 0; --j) {{",
            "            const double t = __ldg(cf + j) + x2 * b1 - b2;",
            "            b2 = b1; b1 = t;",
            "          }",
            "          v = __ldg(cf) + x * b1 - b2;",
            "        }",
            f"        sUW[sl * NR2 + f] = f < NR ? {u} : v * pref;",
            "      }",
        ]
    )


def _tables_phase(cls):
    """Phase 2: lanes (slot, d, r) write the 2-D table of direction d, root r of the slot's
    primitive quartet (slot-major roots: the units phase sums them like roots)."""
    L = (
        [
            "      for (int sdr = lane; sdr < nact * 3 * NR; sdr += GSZ) {",
            "        const int sl = sdr / (3 * NR), dr = sdr % (3 * NR);",
            "        const int d = dr / NR, r = dr % NR;",
        ]
        + _prim("        ")
        + [
            "        const double ur = sUW[sl * NR2 + r], wr = sUW[sl * NR2 + NR + r];",
            "        const double b00 = 0.5 * ur * inv_zsum;",
            "        const double b10 = 0.5 * inv_ze * (1.0 - ur * et_zs);",
            "        const double b01 = 0.5 * inv_et * (1.0 - ur * ze_zs);",
            "        const double PAv = d == 0 ? PAx : (d == 1 ? PAy : PAz);",
            "        const double QCv = d == 0 ? QCx : (d == 1 ? QCy : QCz);",
            "        const double PQv = d == 0 ? PQx : (d == 1 ? PQy : PQz);",
            "        const double ABv = d == 0 ? ABx : (d == 1 ? ABy : ABz);",
            "        const double CDv = d == 0 ? CDx : (d == 1 ? CDy : CDz);",
            "        (void)ABv; (void)CDv;",
            "        const double c00v = PAv - et_zs * ur * PQv;",
            "        const double c0pv = QCv + ze_zs * ur * PQv;",
            "        (void)c00v; (void)c0pv; (void)b00; (void)b10; (void)b01;",
            "        const double g00v = d == 2 ? wr : 1.0;",
            "        double* I = sI + (d * NRS + sl * NR + r) * N2D;",
        ]
    )
    # the axis is chosen at run time ('v'); its seed G(0,0) is g00v (w_r for z, 1 for x and y);
    # each value is stored as soon as it exists
    L += program_lines(table_program(cls, table_layout(cls).stride, "v"))
    return L + ["      }"]


def _units_phase(cls, unit_mode):
    """Phase 3: each lane adds Σ_r I_x I_y I_z of its units into E."""
    la, lb, lc, ld = cls
    LA1, LB1, LC1, LD1, S, N2D = table_layout(cls)
    cc, cd = cart_components(lc), cart_components(ld)
    ab = resolve_unit_mode(cls, unit_mode) == "ab"
    cs = cc if ab else [None]
    nval = len(cs) * len(cd)
    L = [
        "#pragma unroll 1",
        "      for (int u = lane; u < NU; u += GSZ) {",
        "        const unsigned pk = __ldg(units + u);",
        "        const int ox = pk & 1023u, oy = (pk >> 10) & 1023u, oz = pk >> 20;",
        f"        double acc[{nval}];",
        "#pragma unroll",
        f"        for (int q = 0; q < {nval}; ++q) acc[q] = 0.0;",
        "#pragma unroll 1",
        "        for (int r = 0; r < nact * NR; ++r) {",
        "          const double* X = sI + r * N2D + ox;",
        "          const double* Y = sI + (NRS + r) * N2D + oy;",
        "          const double* Z = sI + (2 * NRS + r) * N2D + oz;",
    ]
    kmax = LC1 if ab else 1
    for t in "XYZ":
        for k in range(kmax):
            for l in range(LD1):
                L.append(f"          const double {t.lower()}{k}_{l} = {t}[{k * LD1 + l}];")
    q = 0
    for c in cs:
        for d in cd:
            f = []
            for x, t in enumerate("xyz"):
                k = c[x] if ab else 0
                f.append(f"{t}{k}_{d[x]}")
            L.append(f"          acc[{q}] += {f[0]} * {f[1]} * {f[2]};")
            q += 1
    L += [
        "        }",
        (
            f"        double* E = sE + u * {block_row_stride(cls)};"
            if ab
            else f"        double* E = sE + (u / {len(cc)}) * {block_row_stride(cls)} + (u % {len(cc)}) * {nval};"
        ),
        "#pragma unroll",
        f"        for (int q = 0; q < {nval}; ++q) E[q] += acc[q];",
        "      }",
    ]
    return L


def _digest(cls, with_j, with_k):
    """J/K digestion of E (shared) with one atomicAdd per element: see module docstring."""
    na, nb, nc, nd = (ncart(l) for l in cls)
    R = block_row_stride(cls)
    L = ["  for (int set = 0; set < nset; ++set) {", "    const double* D = dm + (long long)set * ncart * ncart;"]

    if with_j:
        L += [
            "    if (do_j) {",
            "    double* J = vj + (long long)set * ncart * ncart;",
            f"    for (int o = lane; o < {na * nb}; o += GSZ) {{",
            "      double v = 0.0;",
            "#pragma unroll",
            f"      for (int cd = 0; cd < {nc * nd}; ++cd)",
            f"        v += sE[o * {R} + cd] * __ldg(D + (long long)(k0 + cd / {nd}) * ncart + l0 + cd % {nd});",
            f"      atomicAdd(J + (long long)(i0 + o / {nb}) * ncart + j0 + o % {nb}, 2.0 * s * v);",
            "    }",
            f"    for (int o = lane; o < {nc * nd}; o += GSZ) {{",
            "      double v = 0.0;",
            "#pragma unroll 4",
            f"      for (int ab = 0; ab < {na * nb}; ++ab)",
            f"        v += sE[ab * {R} + o] * __ldg(D + (long long)(i0 + ab / {nb}) * ncart + j0 + ab % {nb});",
            f"      atomicAdd(J + (long long)(k0 + o / {nd}) * ncart + l0 + o % {nd}, 2.0 * s * v);",
            "    }",
            "    }",
        ]
    if with_k:
        # (out rows, out cols, summed index pairs): K_ac (D_bd), K_ad (D_bc), K_bc (D_ad),
        # K_bd (D_ac); E index ((a nb + b) nc + c) nd + d
        specs = [
            ("a", "c", "b", "d", "i0", "k0", "j0", "l0"),
            ("a", "d", "b", "c", "i0", "l0", "j0", "k0"),
            ("b", "c", "a", "d", "j0", "k0", "i0", "l0"),
            ("b", "d", "a", "c", "j0", "l0", "i0", "k0"),
        ]
        n = {"a": na, "b": nb, "c": nc, "d": nd}
        L += ["    if (do_k) {", "    double* K = vk + (long long)set * ncart * ncart;"]
        for r1, r2, s1, s2, o1, o2, p1, p2 in specs:
            L += [
                f"    for (int o = lane; o < {n[r1] * n[r2]}; o += GSZ) {{",
                f"      const int {r1} = o / {n[r2]}, {r2} = o % {n[r2]};",
                "      double v = 0.0;",
                "#pragma unroll",
                f"      for (int {s1} = 0; {s1} < {n[s1]}; ++{s1})",
                "#pragma unroll",
                f"        for (int {s2} = 0; {s2} < {n[s2]}; ++{s2})",
                f"          v += sE[(a * {nb} + b) * {R} + c * {nd} + d] * "
                f"__ldg(D + (long long)({p1} + {s1}) * ncart + {p2} + {s2});",
                f"      atomicAdd(K + (long long)({o1} + {r1}) * ncart + {o2} + {r2}, s * v);",
                "    }",
            ]
        L += ["    }"]
    L += ["  }"]
    return L


def _preamble(cls, table, lanes, namespace, unit_mode, slots):
    """C++ namespace `namespace` with the group size (`lanes`), constants, asymptote and
    unit tables."""
    n = nroots(cls)
    N2D = table_layout(cls).size
    uts = units(cls, unit_mode)
    asym = [float(table.asym_u[n, i]) for i in range(n)] + [float(table.asym_w[n, i]) for i in range(n)]
    # the header names the module's former name: changing it would change every source
    # and so every compile-cache key (bump GENERATOR_VERSION when the text changes anyway)
    return [
        f"// cooperative kernels (hartree.gpu.coop) for ({cls[0]}{cls[1]}|{cls[2]}{cls[3]}): "
        f"{n} roots, units '{resolve_unit_mode(cls, unit_mode)}' ({len(uts)}), {slots} slot(s), "
        f"{group_doubles(cls, slots)} shared doubles per group",
        f"namespace {namespace} {{",
        "#ifdef HT_EMULATION",
        "constexpr int GSZ = 1;                 // serial emulation: one lane per group",
        "#else",
        f"constexpr int GSZ = {lanes};",
        "#endif",
        "#define HT_SYNC() do { if (GSZ > 32) __syncthreads(); else __syncwarp(gmask); } while (0)",
        f"constexpr int NR = {n}, NR2 = {2 * n}, N2D = {N2D}, NU = {len(uts)}, "
        f"NS = {slots}, NRS = {slots * n}, PER = {group_doubles(cls, slots)}, "
        f"NCOMP = {ncart(cls[0]) * ncart(cls[1]) * block_row_stride(cls)};",
        f"__constant__ double asym[{2 * n}] = {{{', '.join(repr(x) for x in asym)}}};",
        f"__device__ const unsigned units[{len(uts)}] = {{{', '.join(str(u) + 'u' for u in uts)}}};",
        "}",
    ]


def _group_setup(namespace):
    """Lane / group indices and the group's shared-memory regions; defines t."""
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
        "  double* sE = sI + 3 * NRS * N2D;             // block E[ab][c][d], rows of row()",
        "  double* sUW = sE + NCOMP;                    // u_r, w_r * prefactor",
    ]


def _block(cls, table, unit_mode, attenuated=False):
    """E = contracted cartesian block of quartet (ib ik) (needs ga, gc, pair ranges):
    primitive quartets NS at a time (slots), each through phases 1-3 (attenuated: of
    erf(ω r12)/r12)."""
    L = [
        "  const double ABx = ga[3], ABy = ga[4], ABz = ga[5];",
        "  const double CDx = gc[3], CDy = gc[4], CDz = gc[5];",
        "  for (int q = lane; q < NCOMP; q += GSZ) sE[q] = 0.0;",
        "  const int npk = pk1 - pk0, npq = (pb1 - pb0) * npk;",
        "  for (int q0 = 0; q0 < npq; q0 += NS) {",
        "      const int nact = npq - q0 < NS ? npq - q0 : NS;",
        "      HT_SYNC();                     // readers of the previous tables are done",
    ]
    L += _roots_phase(table, nroots(cls), attenuated)
    L += ["      HT_SYNC();"]
    L += _tables_phase(cls)
    L += ["      HT_SYNC();"]
    L += _units_phase(cls, unit_mode)
    L += ["  }", "  HT_SYNC();"]
    return L


def kernel_source(cls, table, shape, with_j=True, with_k=True, params_decl=None, list_shift=30, attenuated=False):
    """Source lines of ``jk_<cls>`` (cooperative version) for the quartet-list launch.

    shape: :class:`hartree.gpu.tuning.CooperativeShape` (lanes per quartet, groups per
    block, unit mode, slots); lanes > 32 needs groups == 1 (block-wide barriers).
    params_decl: the C parameter list (``jk_kernels.decl(jk_kernels.JK_PARAMS)``); the
    kernel uses nlist, qlist, tri, bra_/ket_ sh, pst, geo, prim, cart_loc, dm, nset,
    ncart, vj, vk, tab (the table of nroots(cls) roots).  Group t takes list entry t
    (int32 pair: bra pair, ket pair | flags << list_shift).  attenuated: erf(ω r12)/r12,
    the parameters ending in ``double omega`` (``jk_kernels.JK_ERF_PARAMS``)."""
    gs, groups, unit_mode, slots = shape.lanes, shape.groups, shape.unit_mode, shape.slots
    if gs > 32 and groups != 1:
        raise ValueError("groups of more than one warp need one group per block")
    if gs not in (8, 16, 32, 64, 96, 128, 192, 256):
        raise ValueError(f"{gs} lanes a group: 8, 16 or a multiple of 32 up to 256")
    if not fits(cls, groups, slots):
        raise ValueError(
            f"class {cls}: {shared_bytes(cls, groups, slots)} bytes of shared memory a block, more than {MAX_SHARED}"
        )
    check_class(cls)
    name = class_name(cls)
    L = _preamble(cls, table, gs, f"coop_{name}", unit_mode, slots) + [
        f'extern "C" __global__ void __launch_bounds__({gs * groups}) jk_{name}({params_decl})',
        "{",
    ]
    L += _group_setup(f"coop_{name}")
    L += [
        "  if (t >= nlist || blockIdx.z > 0) return;     // whole groups leave together",
    ]
    L += listed_quartet_lines(list_shift)
    L += [
        "  const double* ga = bra_geo + 6 * ib;",
        "  const double* gc = ket_geo + 6 * ik;",
        "  const int pb0 = bra_pst[ib], pb1 = bra_pst[ib + 1];",
        "  const int pk0 = ket_pst[ik], pk1 = ket_pst[ik + 1];",
    ]
    L += _block(cls, table, unit_mode, attenuated)
    L += _digest(cls, with_j, with_k)
    L += ["}"]
    return L


#: parameters of the cooperative Schwarz kernel (same as jk_kernels.DIAG_PARAMS)
DIAG_PARAMS = [
    ("int", "npair"),
    ("const int*", "sh"),
    ("const int*", "pst"),
    ("const double*", "geo"),
    ("const double*", "prim"),
    ("double*", "qout"),
    ("const double*", "tab"),
]


def diag_source(cls, table, unit_mode=None):
    """Source lines of ``diag_<la><lb>`` (cooperative, one warp a pair): group p computes
    the block (ab|ab) of pair p and writes Q_p = sqrt(max_ab |(ab|ab)|).
    cls = (la, lb, la, lb); unit_mode: that of the class's J/K kernel (None: by size)."""
    la, lb, lc, ld = check_class(cls)
    if (la, lb) != (lc, ld):
        raise ValueError("the Schwarz kernel needs bra class == ket class")
    name = class_name(cls)
    na, nb = ncart(la), ncart(lb)
    decl = ", ".join(f"{t} __restrict__ {n}" if t.endswith("*") else f"{t} {n}" for t, n in DIAG_PARAMS)
    L = _preamble(cls, table, SCHWARZ_LANES, f"coopd_{name}", unit_mode, 1)
    L += [f'extern "C" __global__ void diag_{la}{lb}({decl})', "{"]
    L += _group_setup(f"coopd_{name}")
    L += [
        "  if (t >= npair) return;",
        "  const int ib = (int)t, ik = (int)t;",
        "  const double* bra_prim = prim; const double* ket_prim = prim;",
        "  const double* ga = geo + 6 * ib; const double* gc = ga;",
        "  const int pb0 = pst[ib], pb1 = pst[ib + 1], pk0 = pb0, pk1 = pb1;",
        "  (void)sh;",
    ]
    L += _block(cls, table, unit_mode)
    L += [
        "  double m = 0.0;",
        f"  for (int ab = lane; ab < {na * nb}; ab += GSZ)     // element (ab|ab)",
        f"    m = fmax(m, fabs(sE[ab * {block_row_stride(cls)} + ab]));",
        "#ifndef HT_EMULATION",
        "  for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));",
        "#endif",
        "  if (lane == 0) qout[t] = sqrt(m);",
        "}",
    ]
    return L
