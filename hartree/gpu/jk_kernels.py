"""CUDA C generator, kernel part: direct J/K kernels and Schwarz kernels per quartet class.

``generate(cls, table, with_j, with_k)`` returns the source of one module:

* ``jk_<cls>``: grid (list entries / TILE², 1, slices), one unique shell quartet (ij|kl)
  per thread, taken from the compacted list of quartets that survived screening
  (:mod:`hartree.gpu.quartet_lists`: bra pair, ket pair, J/K flags).  Classes above codegen.UNROLL_LIMIT
  components are *split*: blockIdx.z picks a slice (a rectangle of a and b cartesian
  components), so each thread keeps only that slice of the ERI block (see
  :func:`split_plan`); slices are uniform per block, so warps never diverge on them.
  Unrolled classes get one device function per slice (a switch on blockIdx.z; the slice
  lives in registers); loop-version classes (above codegen.GENERIC_LIMIT components) one
  function taking the slice bounds from a __constant__ table (the slice lives in local
  memory, at most LOOP_SLICE_TARGET values).
* Lanes of a warp whose quartets add into the same J/K block (neighbouring list entries
  share a bra pair, or a bra shell and a ket shell) first sum their contributions by
  shuffles, then one lane adds the sum (*warp runs*, classes up to
  ``WARP_RUNS_MAX_SIZE`` components); larger classes issue one atomic per lane.
* ``digest_<cls><A0,A1,B0,B1>(..., do_j, do_k)`` (``digest_<cls>_rt(..., A0, A1, B0, B1,
  do_j, do_k)`` for the loop version): J/K digestion of a slice against the cartesian
  density (J only where do_j, K only where do_k: per-quartet flags of the list),
  inside the kernel (no ERI is stored).  With s the degeneracy factor of the unique
  quartet (1/2 for i == j, for k == l, for ij == kl), one image of each pair is
  accumulated and the host adds the transpose (X + X^T):

      J_ij += 2 s Σ_kl (ij|kl) D_kl,    J_kl += 2 s Σ_ij (ij|kl) D_ij
      K_ik += s (ij|kl) D_jl,  K_il += s (ij|kl) D_jk,  K_jk += s (ij|kl) D_il,
      K_jl += s (ij|kl) D_ik

* ``diag_<la><lb>`` (bra class == ket class): Q_ij = sqrt(max_ab |(ab|ab)|) per pair.

Per-GPU choices come from a :class:`hartree.gpu.tuning.JKTuning` (argument ``tuning``;
default: the "default" entry of the tuning file): the classes it lists as cooperative get the
cooperative ``jk_<cls>`` and ``diag_<la><lb>`` of :mod:`hartree.gpu.cooperative_kernels`
instead (a group of lanes per quartet, the block in shared memory), the others the
__launch_bounds__ minimum blocks it names (:func:`min_blocks`).  The driver takes the
launch shape from :func:`launch_config`, :func:`diag_launch_config` and :func:`grid_z`,
with the same tuning.
"""

import math

from hartree.device import cuda_source

from . import codegen, cooperative_kernels
from .codegen import GENERATOR_VERSION, TILE, check_class, class_name, eri_function, ncart, nroots, rys_function
from .tuning import jk_tuning

#: a split slice of the unrolled version keeps at most this many (a, b, c, d) components
#: (its ERI values live in registers)
SLICE_TARGET = 64

#: a slice of the loop version (classes above codegen.GENERIC_LIMIT components) keeps at
#: most this many components in its local array (local memory the driver reserves per
#: resident thread; whole (gg|gg) would be 405 kB a thread)
LOOP_SLICE_TARGET = 1024

#: largest class (components) digested with *warp runs* (the contributions of
#: neighbouring lanes that add into the same J/K block, equal shell offsets, are summed
#: by shuffles before one lane issues the atomic; :func:`runs_source`): the unsliced classes, which have
#: the most atomics per integral.  Up to 324 components Tamoxifen/def2-TZVP J+K gains
#: another 6 % (1.26 -> 1.18 s, H100), but the sliced classes then compile 5-10x slower
#: ((dp|dp) 3 -> 15-21 s, NVRTC on a CPU core) and the cold def2-TZVP compile would no
#: longer stay under a minute
WARP_RUNS_MAX_SIZE = 81


def uses_runs(cls):
    """True when the class's classic kernel digests with warp runs."""
    return math.prod(ncart(l) for l in cls) <= WARP_RUNS_MAX_SIZE


def runs_source():
    """Device helpers of the warp-runs digestion (hand-written: ``warp_runs.cu``, pasted
    into the generated module after a blank line).

    warp_runs(key): the lanes of a warp form runs of consecutive lanes with equal key;
    each lane learns where its run ends, whether it heads the run, and how many halving
    steps cover the longest run of the warp (warp-uniform; 0 when no two neighbours share
    a key).  run_add(r, p, v): segmented tree sum over the run (step k adds the value 2^k
    lanes down while that lane is still in the run: after the steps each head holds its
    run's sum), then one atomicAdd by the head; plain atomicAdd per lane when steps == 0.
    All 32 lanes must call both (the kernel keeps lanes past the list alive with s = 0).
    Serial emulation: plain atomicAdd."""
    return "\n" + cuda_source.read("hartree.gpu", "warp_runs.cu")


def min_blocks(cls, tuning=None):
    """Second argument of __launch_bounds__ (minimum blocks per SM) of the class's classic
    J/K kernel: the tuning's ``min_blocks`` entry, else codegen.MIN_BLOCKS (1: up to 255
    registers a thread; 2: at most 128)."""
    return (tuning or jk_tuning()).min_blocks_of(cls, codegen.MIN_BLOCKS)


JK_PARAMS = [
    ("int", "nlist"),
    ("const int*", "qlist"),
    ("int", "tri"),
    ("const int*", "bra_sh"),
    ("const int*", "bra_pst"),
    ("const double*", "bra_geo"),
    ("const double*", "bra_prim"),
    ("const int*", "ket_sh"),
    ("const int*", "ket_pst"),
    ("const double*", "ket_geo"),
    ("const double*", "ket_prim"),
    ("const int*", "cart_loc"),
    ("const double*", "dm"),
    ("int", "nset"),
    ("int", "ncart"),
    ("double*", "vj"),
    ("double*", "vk"),
    ("const double*", "tab"),
]
#: the attenuated kernels' parameters: JK_PARAMS, then ω (bohr^-1) of erf(ω r12)/r12
JK_ERF_PARAMS = JK_PARAMS + [("double", "omega")]
#: quartet list entries (see :mod:`hartree.gpu.quartet_lists`): int32 pairs (bra pair index,
#: ket pair index | flags << 30), flag bit 0 = digest J, bit 1 = digest K
LIST_FLAG_SHIFT = 30
DIAG_PARAMS = [
    ("int", "npair"),
    ("const int*", "sh"),
    ("const int*", "pst"),
    ("const double*", "geo"),
    ("const double*", "prim"),
    ("double*", "qout"),
    ("const double*", "tab"),
]


def decl(params):
    """C parameter list for [(ctype, name)], pointers marked __restrict__."""
    return ", ".join(f"{t} __restrict__ {n}" if t.endswith("*") else f"{t} {n}" for t, n in params)


def split_plan(cls):
    """Component slices [(a0, a1, b0, b1)] of a class; one grid z-index each.

    Classes up to codegen.UNROLL_LIMIT components: one slice.  Otherwise rectangles of
    a and b components holding at most SLICE_TARGET (unrolled version) or
    LOOP_SLICE_TARGET (loop version) components: consecutive a components grouped when
    one a holds nb*nc*nd <= target components (near-equal groups), else one a per slice
    with b cut into near-equal chunks of at most target // (nc*nd) components (at least 1).
    Every slice recomputes the Rys roots and the recurrences, so fewer slices cost fewer
    flops and more registers.
    """
    na, nb, nc, nd = (ncart(l) for l in cls)
    size = na * nb * nc * nd
    if size <= codegen.UNROLL_LIMIT:
        return [(0, na, 0, nb)]
    target = LOOP_SLICE_TARGET if codegen.is_generic(cls) else SLICE_TARGET
    if size <= target:
        return [(0, na, 0, nb)]
    per_a, per_b = nb * nc * nd, nc * nd
    if per_a <= target:
        ngroup = -(-na // (target // per_a))  # ceil
        edges = [round(k * na / ngroup) for k in range(ngroup + 1)]
        return [(edges[k], edges[k + 1], 0, nb) for k in range(ngroup)]
    nchunk = -(-nb // max(1, target // per_b))
    edges = [round(k * nb / nchunk) for k in range(nchunk + 1)]
    return [(a, a + 1, edges[k], edges[k + 1]) for a in range(na) for k in range(nchunk)]


def launch_config(cls, tuning=None):
    """(threads per quartet, threads per block, dynamic shared bytes per block) of the
    class's jk kernel: one quartet per thread on TILE² threads, or the cooperative
    kernel's shape (:func:`hartree.gpu.cooperative_kernels.launch_config`)."""
    shape = (tuning or jk_tuning()).cooperative_shape(cls)
    if shape is not None:
        return cooperative_kernels.launch_config(cls, shape)
    return 1, TILE * TILE, 0


def diag_launch_config(pc, tuning=None):
    """(threads per pair, threads per block, dynamic shared bytes per block) of the
    Schwarz kernel diag_<la><lb> of pair class pc: one pair per thread (128 a block), or
    one warp per pair for cooperative classes (:func:`hartree.gpu.cooperative_kernels.diag_source`)."""
    cls = tuple(pc) + tuple(pc)
    if (tuning or jk_tuning()).cooperative_shape(cls) is not None:
        lanes = cooperative_kernels.SCHWARZ_LANES
        return lanes, lanes, cooperative_kernels.shared_bytes(cls, 1, 1)
    return 1, 128, 0


def grid_z(cls, tuning=None):
    """Grid z of the class's jk kernel: its component slices (1 for cooperative)."""
    return 1 if (tuning or jk_tuning()).cooperative_shape(cls) is not None else len(split_plan(cls))


def _runtime_slices(cls):
    """True when the class's kernel takes slice bounds at run time (loop version)."""
    return codegen.is_generic(cls)


def _digest_function(cls, with_j, with_k):
    """digest_<cls>: a template on the slice <A0, A1, B0, B1> (unrolled version), or, for
    the loop version, digest_<cls>_rt taking the slice bounds as trailing arguments."""
    name = class_name(cls)
    nc, nd = ncart(cls[2]), ncart(cls[3])
    runtime = _runtime_slices(cls)
    if runtime:
        head = [
            f"__device__ __forceinline__ void digest_{name}_rt(const double* __restrict__ eri, const double s,",
            "    const int i0, const int j0, const int k0, const int l0,",
            "    const double* __restrict__ dm, const int nset, const int ncart, double* vj, double* vk,",
            "    const int A0, const int A1, const int B0, const int B1, const int do_j, const int do_k)",
            "{",
            f"  constexpr int NC = {nc}, ND = {nd}, NBX = {ncart(cls[1])};",
            "  const int NBS = B1 - B0;",
        ]
    else:
        head = [
            "template <int A0, int A1, int B0, int B1>",
            f"__device__ __forceinline__ void digest_{name}(const double* __restrict__ eri, const double s,",
            "    const int i0, const int j0, const int k0, const int l0,",
            "    const double* __restrict__ dm, const int nset, const int ncart, double* vj, "
            "double* vk, const int do_j, const int do_k)",
            "{",
            f"  constexpr int NC = {nc}, ND = {nd}, NBS = B1 - B0, NBX = NBS;",
        ]
    runs = uses_runs(cls)
    L = (
        head
        + (_runs_head(with_j, with_k) if runs else [])
        + [
            "  for (int set = 0; set < nset; ++set) {",
            "    const double* D = dm + (long long)set * ncart * ncart;",
        ]
    )
    if with_j:
        L += [
            "    if (do_j) {",
            "    double* J = vj + (long long)set * ncart * ncart;",
            "    double dkl[NC * ND], jkl[NC * ND];",
            "#pragma unroll",
            "    for (int c = 0; c < NC; ++c)",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d) {",
            "        dkl[c * ND + d] = __ldg(D + (long long)(k0 + c) * ncart + l0 + d);",
            "        jkl[c * ND + d] = 0.0; }",
            "#pragma unroll",
            "    for (int a = A0; a < A1; ++a)",
            "#pragma unroll",
            "      for (int b = B0; b < B1; ++b) {",
            "        const double dij = __ldg(D + (long long)(i0 + a) * ncart + j0 + b);",
            "        double jab = 0.0;",
            "#pragma unroll",
            "        for (int cd = 0; cd < NC * ND; ++cd) {",
            "          const double g = eri[((a - A0) * NBS + b - B0) * NC * ND + cd];",
            "          jab += g * dkl[cd];",
            "          jkl[cd] += g * dij; }",
            "        atomicAdd(J + (long long)(i0 + a) * ncart + j0 + b, 2.0 * s * jab); }",
            "#pragma unroll",
            "    for (int c = 0; c < NC; ++c)",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d)",
            "        atomicAdd(J + (long long)(k0 + c) * ncart + l0 + d, 2.0 * s * jkl[c * ND + d]);",
            "    }",
        ]
    if with_k:
        L += [
            "    if (do_k) {",
            "    double* K = vk + (long long)set * ncart * ncart;",
            "    double djl[NBX * ND], djk[NBX * NC], kjk[NBX * NC], kjl[NBX * ND];",
            "#pragma unroll",
            "    for (int b = 0; b < NBS; ++b) {",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d) {",
            "        djl[b * ND + d] = __ldg(D + (long long)(j0 + B0 + b) * ncart + l0 + d); kjl[b * ND + d] = 0.0; }",
            "#pragma unroll",
            "      for (int c = 0; c < NC; ++c) {",
            "        djk[b * NC + c] = __ldg(D + (long long)(j0 + B0 + b) * ncart + k0 + c); kjk[b * NC + c] = 0.0; }",
            "    }",
            "#pragma unroll",
            "    for (int a = A0; a < A1; ++a) {",
            "      double dik[NC], dil[ND], kik[NC], kil[ND];",
            "#pragma unroll",
            "      for (int c = 0; c < NC; ++c) {",
            "        dik[c] = __ldg(D + (long long)(i0 + a) * ncart + k0 + c); kik[c] = 0.0; }",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d) {",
            "        dil[d] = __ldg(D + (long long)(i0 + a) * ncart + l0 + d); kil[d] = 0.0; }",
            "#pragma unroll",
            "      for (int b = 0; b < NBS; ++b)",
            "#pragma unroll",
            "        for (int c = 0; c < NC; ++c)",
            "#pragma unroll",
            "          for (int d = 0; d < ND; ++d) {",
            "            const double g = eri[(((a - A0) * NBS + b) * NC + c) * ND + d];",
            "            kik[c] += g * djl[b * ND + d];",
            "            kil[d] += g * djk[b * NC + c];",
            "            kjk[b * NC + c] += g * dil[d];",
            "            kjl[b * ND + d] += g * dik[c]; }",
            "#pragma unroll",
            "      for (int c = 0; c < NC; ++c)",
            "        atomicAdd(K + (long long)(i0 + a) * ncart + k0 + c, s * kik[c]);",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d)",
            "        atomicAdd(K + (long long)(i0 + a) * ncart + l0 + d, s * kil[d]);",
            "    }",
            "#pragma unroll",
            "    for (int b = 0; b < NBS; ++b) {",
            "#pragma unroll",
            "      for (int c = 0; c < NC; ++c)",
            "        atomicAdd(K + (long long)(j0 + B0 + b) * ncart + k0 + c, s * kjk[b * NC + c]);",
            "#pragma unroll",
            "      for (int d = 0; d < ND; ++d)",
            "        atomicAdd(K + (long long)(j0 + B0 + b) * ncart + l0 + d, s * kjl[b * ND + d]);",
            "    }",
            "    }",
        ]
    L += ["  }", "}"]
    if runs:
        L = [_with_runs(x) for x in L]
    if runtime:  # loop version: keep digestion rolled too
        L = ["#pragma unroll 1" if x == "#pragma unroll" else x for x in L]
    return L


#: warp-runs digestion, one entry per J/K block a quartet adds into: the name of its run
#: structure, the shell offsets of its rows and columns (the key of warp_runs) and the
#: address its accumulation lines start with
_RUN_BLOCKS = (
    ("rij", "i0", "j0", "J + (long long)(i0"),
    ("rkl", "k0", "l0", "J + (long long)(k0"),
    ("rik", "i0", "k0", "K + (long long)(i0 + a) * ncart + k0"),
    ("ril", "i0", "l0", "K + (long long)(i0 + a) * ncart + l0"),
    ("rjk", "j0", "k0", "K + (long long)(j0 + B0 + b) * ncart + k0"),
    ("rjl", "j0", "l0", "K + (long long)(j0 + B0 + b) * ncart + l0"),
)


def _runs_head(with_j, with_k):
    """Warp runs: run structure of each J/K block in the warp, computed once per quartet
    (all lanes), and the warp-uniform J/K branches: a lane not listed for J (K) adds 0."""
    L = []
    for matrix, flag, scale, wanted in (("J", "do_j", "sj", with_j), ("K", "do_k", "sk", with_k)):
        if wanted:
            L += [
                f"  const Runs {name} = warp_runs((long long){row} * ncart + {col});"
                for name, row, col, address in _RUN_BLOCKS
                if address.startswith(matrix)
            ]
            L += [f"  const int any_{flag[-1]} = WARP_ANY({flag});", f"  const double {scale} = {flag} ? s : 0.0;"]
    return L


def _with_runs(line):
    """One digest line rewritten for warp runs: warp-uniform branches, the per-lane scale
    (sj / sk), run_add instead of atomicAdd."""
    if line.strip() == "if (do_j) {":
        return line.replace("do_j", "any_j")
    if line.strip() == "if (do_k) {":
        return line.replace("do_k", "any_k")
    if "atomicAdd(" not in line:
        return line
    for name, _, _, address in _RUN_BLOCKS:
        if address in line:
            line = line.replace("atomicAdd(", f"run_add({name}, ")
            return (
                line.replace("2.0 * s *", "2.0 * sj *") if address.startswith("J") else line.replace("s * k", "sk * k")
            )
    raise AssertionError(f"digest line without a run key: {line}")


def _slice_size(cls, sl):
    a0, a1, b0, b1 = sl
    return (a1 - a0) * (b1 - b0) * ncart(cls[2]) * ncart(cls[3])


def _plan_table(cls):
    """Loop version: __constant__ table of the slices (a0, a1, b0, b1) by grid z."""
    plan = split_plan(cls)
    vals = ", ".join(str(v) for sl in plan for v in sl)
    return [f"__constant__ int plan_{class_name(cls)}[{4 * len(plan)}] = {{{vals}}};"]


def _slice_call(cls, k, sl, indent="    ", attenuated=False):
    """Statements declaring the local array `eri` of slice k (unrolled version; one per
    slice, so that the compiler keeps it in registers) and computing the slice into it
    (attenuated: passing ``omega``)."""
    return [
        f"{indent}double eri[{_slice_size(cls, sl)}];",
        f"{indent}eri_{class_name(cls)}_s{k}(bra_pst[ib], bra_pst[ib + 1], bra_prim, "
        "bra_geo + 6 * ib, ket_pst[ik], ket_pst[ik + 1], ket_prim, ket_geo + 6 * ik, tab, eri"
        + (", omega);" if attenuated else ");"),
    ]


def _runtime_call(cls, z, indent="  ", attenuated=False):
    """Loop version: one local `eri` (largest slice) and the call for slice number `z`
    (a C expression); defines A0, A1, B0, B1 (attenuated: passing ``omega``)."""
    name = class_name(cls)
    size = max(_slice_size(cls, sl) for sl in split_plan(cls))
    return [
        f"{indent}double eri[{size}];",
        f"{indent}const int* slc = plan_{name} + 4 * ({z});",
        f"{indent}const int A0 = slc[0], A1 = slc[1], B0 = slc[2], B1 = slc[3];",
        f"{indent}eri_{name}_rt(bra_pst[ib], bra_pst[ib + 1], bra_prim, bra_geo + 6 * ib, "
        "ket_pst[ik], ket_pst[ik + 1], ket_prim, ket_geo + 6 * ik, tab, eri, A0, A1, B0, B1"
        + (", omega);" if attenuated else ");"),
    ]


def _jk_kernel(cls, with_j, with_k, blocks, attenuated=False):
    """List kernel: thread t of the 1-D grid takes quartet t of the compacted list
    (bra pair, ket pair, J/K flags) written by the screening kernel
    (:mod:`hartree.gpu.quartet_lists`); grid z = component slice.  Every listed quartet passed
    sqrt((ij|ij)) sqrt((kl|kl)) max|D| >= threshold; s is its degeneracy factor.
    attenuated: erf(ω r12)/r12, ω the last parameter (:data:`JK_ERF_PARAMS`)."""
    name = class_name(cls)
    params = decl(JK_ERF_PARAMS if attenuated else JK_PARAMS)
    L = [
        f'extern "C" __global__ void __launch_bounds__({TILE * TILE}, {blocks}) jk_{name}({params})',
        "{",
    ]
    runs = uses_runs(cls)
    if runs:  # lanes past the list redo the last entry with s = 0
        L += [
            "  const long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
            "  if (t0 - (threadIdx.x & 31) >= nlist) return;      // the whole warp",
            "  const long long t = t0 < nlist ? t0 : nlist - 1;",
        ]
    else:
        L += ["  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "  if (t >= nlist) return;"]
    L += codegen.listed_quartet_lines(LIST_FLAG_SHIFT)
    if runs:
        L += ["  if (t0 >= nlist) s = 0.0;"]
    if _runtime_slices(cls):
        L += _runtime_call(cls, "blockIdx.z", attenuated=attenuated)
        L += [f"  digest_{name}_rt(eri, s, i0, j0, k0, l0, dm, nset, ncart, vj, vk, A0, A1, B0, B1, do_j, do_k);", "}"]
        return L
    L += ["  switch (blockIdx.z) {"]
    for k, sl in enumerate(split_plan(cls)):
        L += [f"  case {k}: {{"] + _slice_call(cls, k, sl, attenuated=attenuated)
        L += [
            f"    digest_{name}<{sl[0]}, {sl[1]}, {sl[2]}, {sl[3]}>(eri, s, i0, j0, k0, l0, "
            "dm, nset, ncart, vj, vk, do_j, do_k);",
            "    break; }",
        ]
    L += ["  }", "}"]
    return L


def _diag_kernel(cls):
    la, lb = cls[0], cls[1]
    nb = ncart(lb)
    nab = ncart(la) * nb
    L = [
        f'extern "C" __global__ void diag_{la}{lb}({decl(DIAG_PARAMS)})',
        "{",
        "  const int p = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (p >= npair) return;",
        "  const int ib = p, ik = p;",
        "  const int* bra_pst = pst; const int* ket_pst = pst;",
        "  const double* bra_prim = prim; const double* ket_prim = prim;",
        "  const double* bra_geo = geo; const double* ket_geo = geo;",
        "  double m = 0.0;",
    ]
    if _runtime_slices(cls):
        L += [f"  for (int z = 0; z < {len(split_plan(cls))}; ++z) {{"]
        L += _runtime_call(cls, "z", "    ")
        L += [
            "    for (int a = A0; a < A1; ++a)",
            "      for (int b = B0; b < B1; ++b)        // element (ab|ab) of the slice",
            f"        m = fmax(m, fabs(eri[((a - A0) * (B1 - B0) + b - B0) * {nab} + a * {nb} + b]));",
            "  }",
            "  qout[p] = sqrt(m);",
            "}",
        ]
        return L
    for k, (a0, a1, b0, b1) in enumerate(split_plan(cls)):
        L += ["  {"] + _slice_call(cls, k, (a0, a1, b0, b1), "    ")
        for a in range(a0, a1):
            for b in range(b0, b1):  # element (ab|ab) of the slice
                idx = ((a - a0) * (b1 - b0) + b - b0) * nab + a * nb + b
                L.append(f"    m = fmax(m, fabs(eri[{idx}]));")
        L.append("  }")
    L += ["  qout[p] = sqrt(m);", "}"]
    return L


def kernel_names(cls, diag=False):
    """Names of the __global__ functions in :func:`generate`'s source for this class."""
    return [f"jk_{class_name(cls)}"] + ([f"diag_{cls[0]}{cls[1]}"] if diag else [])


def generate(cls, table, with_j=True, with_k=True, diag=None, tuning=None, attenuated=False):
    """CUDA C source for one quartet class.

    cls: (la, lb, lc, ld), la >= lb, lc >= ld.  table: :class:`tables.RysTable`.
    with_j / with_k: digestion done by the jk kernel.  diag: also the Schwarz kernel
    (default: when (la,lb) == (lc,ld)).  tuning: :class:`hartree.gpu.tuning.JKTuning`
    (default: the "default" entry).  Launch the jk kernel as :func:`launch_config` and
    :func:`grid_z` say, with the same tuning.  attenuated: the jk kernel of erf(ω r12)/r12
    (parameters :data:`JK_ERF_PARAMS`, no Schwarz kernel: the screening keeps the 1/r12
    factors, which bound erf and erfc); the 1/r12 source is the same text as without the
    argument.  Returns the source text (deterministic).
    """
    tuning = tuning or jk_tuning()
    cls = check_class(cls)
    if diag is None:
        diag = cls[:2] == cls[2:] and not attenuated
    if diag and (cls[:2] != cls[2:] or attenuated):
        raise ValueError("the Schwarz kernel needs bra class == ket class and the 1/r12 operator")
    plan = split_plan(cls)
    # the header names the module's former name: changing it would change every source
    # and so every compile-cache key (bump GENERATOR_VERSION when the text changes anyway)
    out = [
        f"// generated by hartree.gpu.jkgen (version {GENERATOR_VERSION}) for class "
        f"({cls[0]}{cls[1]}|{cls[2]}{cls[3]}), {nroots(cls)} Rys roots, "
        f"J={int(with_j)} K={int(with_k)}, {len(plan)} slice(s)" + (", erf(omega r12)/r12" if attenuated else ""),
        f"// Rys table sha256 {table.sha256}; do not edit",
        "",
    ]
    shape = tuning.cooperative_shape(cls)  # jk (and Schwarz) kernel: a group of lanes a quartet
    cooperative = shape is not None
    if not cooperative:  # slice functions of the classic kernels
        out += rys_function(table, nroots(cls)) + [""]
        if uses_runs(cls):
            out += [runs_source()]
        if _runtime_slices(cls):  # loop version: one copy, slice by table
            out += _plan_table(cls) + eri_function(cls, suffix="_rt", runtime=True, attenuated=attenuated) + [""]
        else:
            for k, (a0, a1, b0, b1) in enumerate(plan):
                out += eri_function(cls, range(a0, a1), range(b0, b1), f"_s{k}", attenuated=attenuated) + [""]
    if cooperative:
        params = decl(JK_ERF_PARAMS if attenuated else JK_PARAMS)
        out += cooperative_kernels.kernel_source(cls, table, shape, with_j, with_k, params, LIST_FLAG_SHIFT, attenuated)
        out += [""]
    else:
        out += _digest_function(cls, with_j, with_k) + [""]
        out += _jk_kernel(cls, with_j, with_k, min_blocks(cls, tuning), attenuated) + [""]
    if diag:
        out += cooperative_kernels.diag_source(cls, table, shape.unit_mode) if cooperative else _diag_kernel(cls)
        out += [""]
    return "\n".join(out)


def module_spec(cls, table, with_j, with_k, tuning, attenuated=False):
    """(source, compile-cache key, {kernel name: parameters}) of the J/K module of class
    `cls` for ``backend.compile``: :func:`generate` with the Schwarz kernel where bra class
    == ket class (1/r12 only); the key of the attenuated module adds ``"operator": "erf"``
    (the 1/r12 keys are those of before, so their cached modules still load)."""
    diag = cls[:2] == cls[2:] and not attenuated
    src = generate(cls, table, with_j, with_k, diag, tuning, attenuated)
    key = {
        "kind": "rys_jk",
        "class": list(cls),
        "with_j": with_j,
        "with_k": with_k,
        "diag": diag,
        "precision": "fp64",
        "tile": TILE,
        "generator": GENERATOR_VERSION,
        "rys_table": table.sha256,
    }
    if attenuated:
        key["operator"] = "erf"
    jk_params = JK_ERF_PARAMS if attenuated else JK_PARAMS
    names = {n: (jk_params if n.startswith("jk_") else DIAG_PARAMS) for n in kernel_names(cls, diag)}
    return src, key, names
