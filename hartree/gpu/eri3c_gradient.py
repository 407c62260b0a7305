"""First derivatives of the three-index (mn|P) and two-index (P|Q) Coulomb integrals on the GPU,
contracted with a density-like tensor Γ inside the kernel and added to the gradient of the
atoms (generated Rys kernels; the GPU side of :mod:`hartree.integrals.three_center_deriv`).

    grad3c(gamma, (s0, s1))    -> Σ_mnP Γ_mnP d(mn|P)/dR   per atom, (3 natm,) on the device
    grad2c(gamma2)             -> Σ_PQ  Γ_PQ  d(P|Q)/dR

As in :mod:`hartree.gpu.eri3c`, a class (la lb|lc) is the four-index class (la lb|lc 0) with
the unit function as fourth centre, and (P|Q) is (P 1|Q 1).  For one bra pair (a, b) and one
auxiliary shell c a thread computes (Obara & Saika, J. Chem. Phys. 84, 3963 (1986), eq. 20)

    d/dA_x (ab|c) = 2α (a+1_x b|c) - a_x (a-1_x b|c),   likewise B with 2β,          (1)
    d/dC = -(d/dA + d/dB)                    (translational invariance: (ab|c) depends
                                              on A - C and B - C only)

from the contracted cartesian blocks of the energy's device functions
(:func:`hartree.gpu.codegen.eri_function`) of the classes (la±1 lb|lc 0) and (la lb±1|lc 0),
the raised ones fed with primitive-pair tables whose K is weighted by 2α or 2β, exactly as
the four-index gradient kernels (:mod:`hartree.gpu.gradient_kernels`, whose eq. (2)
contraction and per-warp atomic sums this module reuses).  The block is contracted with the
cartesian Γ of the thread's (a, b, c) and the three sums go to the atoms of a, b and c,
doubled for a pair of two different shells (Γ is symmetric in m, n; the pair lists hold each
unordered pair once).  For the metric the bra is (P, 1): only d/dP is computed, and Q takes
minus it; every ordered (P, Q) is visited, so each term of Σ_PQ is covered once.

Γ in the final AO bases (spherical or cartesian) is brought to the cartesian functions of the
kernels first, Γ_cart = C Γ C^T per auxiliary function and likewise over P (C the cartesian-
to-final matrix of :func:`hartree.basis.cart2sph_matrix`), since (mn|P) in the final basis is
C^T (m'n'|P')_cart C on each index.

The erf-attenuated operator erf(ω r12)/r12 (ω > 0, bohr^-1: the long-range fits of
:mod:`hartree.df.range_separated`) is a second variant of each kernel,
``g3_<la><lb><lc>[_metric]_erf``, whose ERI functions are codegen's attenuated ones (θ =
ω²/(ω² + ρ): the Rys rule at θT, roots θu, prefactor sqrt(θ); Gill & Adamson, Chem. Phys.
Lett. 261, 105 (1996)) and which takes ω as a run-time argument, its last
(:data:`G3_ERF_PARAMS`); eq. (1) holds for any operator of r12, the raised primitives
carrying 2α in K as before.  One compiled module per class serves every ω, its cache key
adding ``"operator": "erf"``; the 1/r12 kernels keep their text and keys.  erfc(|ω| r12)/r12
(ω < 0, PySCF's convention) is 1/r12 minus erf, two launches (:class:`ThreeCenterGradient`),
as :mod:`hartree.gpu.eri3c` does for the integrals.
"""

import numpy as np

from hartree.basis import cart2sph_matrix
from hartree.basis.angular import ncart

from . import codegen, eri3c, jk_kernels
from .gradient_kernels import GRAD_ADD, _index_tables, shifted_components
from .jk_kernels import decl
from .tables import RysTable

#: threads per block (bra pairs of one class against one aux shell)
BLOCK = 128

#: version of this module's kernel text (part of the compile cache key)
VERSION = "3"

G3_PARAMS = [
    ("int", "nbra"),
    ("const int*", "bra_off"),
    ("const int*", "bra_atom"),
    ("const int*", "bra_pst"),
    ("const double*", "bra_geo"),
    ("const double*", "bra_prim"),
    ("const double*", "bra_prim_a"),
    ("const double*", "bra_prim_b"),
    ("int", "k0"),
    ("const int*", "ket_off"),
    ("const int*", "ket_atom"),
    ("const int*", "ket_pst"),
    ("const double*", "ket_geo"),
    ("const double*", "ket_prim"),
    ("int", "kbase"),
    ("int", "sk"),
    ("int", "si"),
    ("int", "sj"),
    ("const double*", "gam_in"),
    ("double*", "grad"),
    ("const double*", "tab"),
]
#: the attenuated kernels' parameters: G3_PARAMS, then ω (bohr^-1) of erf(ω r12)/r12
G3_ERF_PARAMS = G3_PARAMS + [("double", "omega")]


def kernel_name(cls3, metric=False, attenuated=False):
    """g3_<la><lb><lc>, then ``_metric`` for the metric class and ``_erf`` for the attenuated
    variant."""
    return "g3_" + codegen.class_name(cls3) + ("_metric" if metric else "") + ("_erf" if attenuated else "")


#: most components of one raised or lowered block a thread holds at once: the energy's slice
#: targets (:func:`hartree.gpu.jk_kernels.split_plan`), for the unrolled and the loop versions
SLICE_TARGET, LOOP_SLICE_TARGET = jk_kernels.SLICE_TARGET, jk_kernels.LOOP_SLICE_TARGET

_CONTRACT3 = """\
// eq. (1) on the first index (d/dA): g[x] += Σ_(i in [i0,i1), b in [o0,o1), c) Γ(i,b,c)
// (up[i+1_x - u0][b - o0][c] - i_x dn[i-1_x - d0][b - o0][c]); Γ(a,b,c) = gp[c sk + a si + b sj]
__device__ __forceinline__ void contract_first(const double* __restrict__ up, const double* __restrict__ dn,
    const double* __restrict__ gp, const long long sk, const long long si, const long long sj, const int nc,
    const int i0, const int i1, const int u0, const int d0, const int o0, const int o1,
    const int* __restrict__ iu, const int* __restrict__ idn, const int* __restrict__ fac, double* g)
{
  const int no = o1 - o0;
  for (int i = i0; i < i1; ++i)
    for (int x = 0; x < 3; ++x) {
      const int k = 3 * i + x;
      const double f = (double)fac[k];
      double acc = 0.0;
      for (int b = o0; b < o1; ++b) {
        const double* pu = up + ((iu[k] - u0) * no + b - o0) * nc;
        const double* pd = dn + ((idn[k] - d0) * no + b - o0) * nc;
        for (int c = 0; c < nc; ++c) {
          const double v = gp[c * sk + i * si + b * sj];
          acc += v * (f != 0.0 ? pu[c] - f * pd[c] : pu[c]);
        }
      }
      g[x] += acc;
    }
}

// eq. (1) on the second index (d/dB): g[x] += Σ_(a in [o0,o1), j in [i0,i1), c) Γ(a,j,c)
// (up[a - o0][j+1_x - u0][c] - j_x dn[a - o0][j-1_x - d0][c]); blocks of nu, nd second components
__device__ __forceinline__ void contract_second(const double* __restrict__ up, const double* __restrict__ dn,
    const double* __restrict__ gp, const long long sk, const long long si, const long long sj, const int nc,
    const int i0, const int i1, const int u0, const int nu, const int d0, const int nd, const int o0,
    const int o1, const int* __restrict__ iu, const int* __restrict__ idn, const int* __restrict__ fac, double* g)
{
  for (int a = o0; a < o1; ++a)
    for (int j = i0; j < i1; ++j)
      for (int x = 0; x < 3; ++x) {
        const int k = 3 * j + x;
        const double f = (double)fac[k];
        const double* pu = up + ((a - o0) * nu + iu[k] - u0) * nc;
        const double* pd = dn + ((a - o0) * nd + idn[k] - d0) * nc;
        double acc = 0.0;
        for (int c = 0; c < nc; ++c) {
          const double v = gp[c * sk + a * si + j * sj];
          acc += v * (f != 0.0 ? pu[c] - f * pd[c] : pu[c]);
        }
        g[x] += acc;
      }
}
"""


def derivative_slices(l, nother, nc, target):
    """Slices of eq. (1) on a shell of angular momentum l whose blocks have ``nother``
    components on the other orbital index and nc on the auxiliary one:
    [(i0, i1, u0, u1, d0, d1, o0, o1)] with the derivative components [i0, i1), the raised
    and lowered component ranges they need [u0, u1), [d0, d1) (d1 = d0 when l = 0), and the
    other index's range [o0, o1); each raised block (u1 - u0)(o1 - o0) nc at most ``target``
    components when one other component allows.  Fewer slices mean fewer repeated Rys roots
    and recurrences, larger blocks more memory."""
    up, down, fac = shifted_components(l)
    n = ncart(l)

    def span(i0, i1):
        ups = up[3 * i0 : 3 * i1]
        dns = [d for d, f in zip(down[3 * i0 : 3 * i1], fac[3 * i0 : 3 * i1]) if f > 0]
        return min(ups), max(ups) + 1, (min(dns), max(dns) + 1) if dns else (0, 0)

    for ngroup in range(1, n + 1):
        edges = [round(k * n / ngroup) for k in range(ngroup + 1)]
        groups = [(edges[k], edges[k + 1]) for k in range(ngroup)]
        if max((span(*g)[1] - span(*g)[0]) * nc for g in groups) <= target or ngroup == n:
            break
    out = []
    for i0, i1 in groups:
        u0, u1, (d0, d1) = span(i0, i1)
        per = max(1, target // ((u1 - u0) * nc))
        nchunk = -(-nother // per)
        cuts = [round(k * nother / nchunk) for k in range(nchunk + 1)]
        out += [(i0, i1, u0, u1, d0, d1, cuts[k], cuts[k + 1]) for k in range(nchunk)]
    return out


def uses_loops(cls3, metric=False):
    """True when the kernel of the class takes the loop version: a raised class of more than
    SLICE_TARGET components (else every block is unrolled, whole, in registers)."""
    la, lb, lc = cls3
    raised = [(la + 1, lb, lc)] + ([] if metric else [(la, lb + 1, lc)])
    return any(_size(c) > SLICE_TARGET for c in raised)


def _size(cls):
    return ncart(cls[0]) * ncart(cls[1]) * ncart(cls[2])


def _unrolled_contraction(side, l, nother, nc):
    """Eq. (1) contracted with Γ as straight-line code (compile-time indices: the blocks stay
    in registers): per (i, o, c) one load of Γ and three updates of g."""
    up, down, fac = shifted_components(l)
    g = "gA" if side == "A" else "gB"
    nu, nd = ncart(l + 1), max(ncart(l - 1), 1) if l else 1
    lines = []
    for i in range(ncart(l)):
        for o in range(nother):
            for c in range(nc):
                if side == "A":
                    gam = f"gp[{c} * sk + {i} * si + {o} * sj]"
                    u_at = lambda k, o=o, c=c: f"up[{(up[k] * nother + o) * nc + c}]"  # noqa: E731
                    d_at = lambda k, o=o, c=c: f"dn[{(down[k] * nother + o) * nc + c}]"  # noqa: E731
                else:
                    gam = f"gp[{c} * sk + {o} * si + {i} * sj]"
                    u_at = lambda k, o=o, c=c: f"up[{(o * nu + up[k]) * nc + c}]"  # noqa: E731
                    d_at = lambda k, o=o, c=c: f"dn[{(o * nd + down[k]) * nc + c}]"  # noqa: E731
                lines.append(f"  {{ const double v = {gam};")
                for x in range(3):
                    k = 3 * i + x
                    term = u_at(k) if fac[k] == 0 else f"({u_at(k)} - {fac[k]}.0 * {d_at(k)})"
                    lines.append(f"    {g}[{x}] += v * {term};")
                lines.append("  }")
    return lines


def generate(cls3, table, metric=False, attenuated=False):
    """CUDA C source of the gradient kernel of class (la lb|lc) (la >= lb), or with ``metric``
    of the metric class (la 1|lc) (lb = 0 then stands for the unit function: no B derivative);
    with ``attenuated`` of erf(ω r12)/r12, ω its last parameter (:data:`G3_ERF_PARAMS`).

    Two forms (:func:`uses_loops`).  Small classes: the whole raised and lowered blocks of the
    energy's unrolled device functions, contracted by straight-line code.  Larger ones: one
    loop-version device function per raised or lowered class, called with runtime component
    ranges over the slices of :func:`derivative_slices` (a __constant__ table, at most
    LOOP_SLICE_TARGET components a block), each slice contracted as soon as it is made; one
    copy of each function keeps the source and NVRTC's time small (printing a copy per slice
    of the unrolled functions made (dd|g) 1.2 MB of source and 154 s of NVRTC).
    table: :class:`hartree.gpu.tables.RysTable` (offsets of each root count written in).
    Launch with grid (ceil(nbra / BLOCK), nket) and BLOCK threads; Γ (gam_in) is read at
    (ket offset + c - kbase) sk + (i0 + a) si + (j0 + b) sj, as :mod:`hartree.gpu.eri3c`
    stores the integrals (eq. 2 there).  Deterministic text."""
    la, lb, lc = (int(x) for x in cls3)
    codegen.check_class((la, lb, lc, 0))
    na, nb, nc = ncart(la), ncart(lb), ncart(lc)
    loops = uses_loops((la, lb, lc), metric)
    sides = [("A", la, nb, (la + 1, lb, lc, 0), (la - 1, lb, lc, 0))]
    if not metric:
        sides.append(("B", lb, na, (la, lb + 1, lc, 0), (la, lb - 1, lc, 0)))
    target = LOOP_SLICE_TARGET if loops else 10**9
    plan = [(side, l, nother, raised, lowered, derivative_slices(l, nother, nc, target)) for side, l, nother, raised,
            lowered in sides]  # fmt: skip
    up_size = max(max((s[3] - s[2]) * (s[7] - s[6]) * nc for s in p[5]) for p in plan)
    dn_size = max([max((s[5] - s[4]) * (s[7] - s[6]) * nc for s in p[5]) for p in plan] + [1])
    classes = []
    for _, l, _, raised, lowered, _ in plan:
        classes += [c for c in ([raised] + ([lowered] if l else [])) if c not in classes]
    kind = "metric " if metric else ""
    erf = ", erf(omega r12)/r12" if attenuated else ""
    nslices = sum(len(p[5]) for p in plan)
    out = [
        f"// generated by hartree.gpu.eri3c_gradient (version {VERSION}, codegen {codegen.GENERATOR_VERSION}) "
        f"for the {kind}class ({la}{lb}|{lc}){erf}, {'loop version, ' if loops else ''}{nslices} slice(s); "
        f"Rys table sha256 {table.sha256}; do not edit",
        "",
    ]
    for n in sorted({codegen.nroots(c) for c in classes}):
        out += codegen.rys_function(table, n) + [""]
    for c in classes:
        out += codegen.eri_function(c, runtime=loops, attenuated=attenuated, loops=loops) + [""]
    if loops:
        for l in sorted({la} if metric else {la, lb}):
            out += _index_tables(l)
        for side, _, _, _, _, slices in plan:
            flat = ", ".join(str(v) for sl in slices for v in sl)
            out.append(f"__constant__ int SLICES_{side}[{8 * len(slices)}] = {{{flat}}};")
        out += ["", _CONTRACT3]
    out += ["", GRAD_ADD, ""]

    def call(c, prim, target, ranges=""):
        tab = f"tab + {int(table.offsets[codegen.nroots(c)])}"
        om = ", omega" if attenuated else ""
        return (
            f"eri_{codegen.class_name(c)}(pb0, pb1, {prim}, ga, pk0, pk1, ket_prim, gc, {tab}, {target}{ranges}{om});"
        )

    name = kernel_name((la, lb, lc), metric, attenuated)
    params = G3_ERF_PARAMS if attenuated else G3_PARAMS
    out += [
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({decl(params)})',
        "{",
        f"  const int ib = blockIdx.x * {BLOCK} + threadIdx.x;",
        "  if (ib >= nbra) return;",
        "  const int ik = k0 + blockIdx.y;",
        "  const long long i0 = bra_off[3 * ib], j0 = bra_off[3 * ib + 1];",
        "  const double w = bra_off[3 * ib + 2] ? 2.0 : 1.0;  // Γ symmetric in m, n",
        "  const long long kk = (long long)ket_off[ik] - kbase;",
        "  const int pb0 = bra_pst[ib], pb1 = bra_pst[ib + 1], pk0 = ket_pst[ik], pk1 = ket_pst[ik + 1];",
        "  const double* ga = bra_geo + 6 * ib;",
        "  const double* gc = ket_geo + 6 * ik;",
        "  const double* gp = gam_in + kk * sk + i0 * si + j0 * (long long)sj;",
        f"  double up[{up_size}], dn[{dn_size}];",
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0};",
    ]
    for side, l, nother, raised, lowered, slices in plan:
        prim = "bra_prim_a" if side == "A" else "bra_prim_b"
        out.append(f"  // d/d{side}, eq. (1)")
        if not loops:
            out.append("  " + call(raised, prim, "up"))
            if l:
                out.append("  " + call(lowered, "bra_prim", "dn"))
            out += _unrolled_contraction(side, l, nother, nc)
            continue
        # runtime ranges: A blocks (a' in [u0,u1), b in [o0,o1)), B blocks (a in [o0,o1), b' in [u0,u1))
        up_r, dn_r = (("q[2], q[3], q[6], q[7]", "q[4], q[5], q[6], q[7]") if side == "A"
                      else ("q[6], q[7], q[2], q[3]", "q[6], q[7], q[4], q[5]"))  # fmt: skip
        out += [
            f"  for (int s = 0; s < {len(slices)}; ++s) {{",
            f"    const int* q = SLICES_{side} + 8 * s;  // i0 i1 u0 u1 d0 d1 o0 o1",
            "    " + call(raised, prim, "up", ", " + up_r),
        ]
        if l:
            out.append("    " + call(lowered, "bra_prim", "dn", ", " + dn_r))
        if side == "A":
            out.append(
                f"    contract_first(up, dn, gp, sk, si, sj, {nc}, q[0], q[1], q[2], q[4], q[6], q[7], "
                f"GUP_{l}, GDN_{l}, GFAC_{l}, gA);"
            )
        else:
            out.append(
                f"    contract_second(up, dn, gp, sk, si, sj, {nc}, q[0], q[1], q[2], q[3] - q[2], q[4], "
                f"q[5] > q[4] ? q[5] - q[4] : 1, q[6], q[7], GUP_{l}, GDN_{l}, GFAC_{l}, gB);"
            )
        out.append("  }")
    if not metric:
        out.append("  grad_add3(grad, 3 * bra_atom[2 * ib + 1], w * gB[0], w * gB[1], w * gB[2]);")
    out += [
        f"  grad_add3(grad, 3 * bra_atom[{1 if metric else 2} * ib], w * gA[0], w * gA[1], w * gA[2]);",
        "  grad_add3(grad, 3 * ket_atom[ik], -w * (gA[0] + gB[0]), -w * (gA[1] + gB[1]), -w * (gA[2] + gB[2]));",
        "}",
        "",
    ]
    return "\n".join(out)


def _weighted(prim, exps):
    """Primitive-pair rows (exponent, P, K) with K times 2 * exps (eq. 1's weight)."""
    out = np.array(prim, dtype=np.float64, copy=True)
    out[:, 4] *= 2.0 * exps
    return out


class ThreeCenterGradient:
    """Σ Γ d(mn|P)/dR and Σ Γ d(P|Q)/dR per atom for one orbital/auxiliary basis pair on one
    backend (``hartree.device.backend.CudaBackend`` or the g++ emulator), over the pairs and
    auxiliary shells of :class:`hartree.gpu.eri3c.ThreeCenterBuilder` (the same screening).

    natm: the number of atoms of the molecule.  Results are backend arrays (3 natm,),
    hartree/bohr times the units of Γ.
    """

    def __init__(self, basis, aux, backend, natm, screening=1e-14, table=None):
        self.basis, self.aux, self.backend, self.natm = basis, aux, backend, int(natm)
        self.xp = xp = backend.xp
        self.table = table or RysTable.load()
        lmax = 2 * max(basis.max_l, aux.max_l) + 1 if aux.nshell else 0
        if lmax // 2 + 1 > self.table.max_nroots:
            raise ValueError(f"l = {lmax} needs {lmax // 2 + 1} Rys roots; the table holds {self.table.max_nroots}")
        self._tab = xp.asarray(self.table.coef)
        up = lambda a: xp.asarray(np.ascontiguousarray(a))  # noqa: E731
        self.bra = {}
        for cls, d in eri3c.orbital_pair_lists(basis, screening, exponents=True).items():
            self.bra[cls] = {
                "off": up(d["off"]),
                "atoms": up(d["atoms"].ravel()),
                "pst": up(d["pst"]),
                "geo": up(d["geo"]),
                "prim": up(d["prim"]),
                "prim_a": up(_weighted(d["prim"], d["prim_exp"][:, 0])),
                "prim_b": up(_weighted(d["prim"], d["prim_exp"][:, 1])),
            }
        self._aux_host = eri3c.aux_unit_lists(aux)
        self.ket = {}
        for l, d in self._aux_host.items():
            self.ket[l] = {k: up(d[k]) for k in ("off", "ket_off", "pst", "geo", "prim", "atoms")}
            self.ket[l]["prim_a"] = up(_weighted(d["prim"], d["prim"][:, 0]))
        self._mods = {}
        self.C = xp.asarray(cart2sph_matrix(basis))  # (ncart, nao)
        self.C_aux = xp.asarray(cart2sph_matrix(aux))  # (naux_cart, naux)

    # ------------------------------------------------------------------ compilation
    def classes_3c(self):
        return [(la, lb, lc) for (la, lb) in sorted(self.bra) for lc in sorted(self.ket)]

    def classes_2c(self):
        return [(lp, 0, lq) for lp in sorted(self.ket) for lq in sorted(self.ket)]

    def _compile(self, classes, metric, attenuated=False):
        """{class: module} of the 1/r12 kernels, or of the erf ones with ``attenuated`` (their
        cache key adds ``"operator": "erf"``: the 1/r12 keys are those of before)."""
        todo = [c for c in classes if (c, metric, attenuated) not in self._mods]
        specs = []
        for cls in todo:
            key = {
                "kind": "rys_3c_gradient",
                "class": list(cls),
                "metric": metric,
                "precision": "fp64",
                "block": BLOCK,
                "generator": codegen.GENERATOR_VERSION,
                "eri3c_gradient": VERSION,
                "rys_table": self.table.sha256,
            }
            if attenuated:
                key["operator"] = "erf"
            name = kernel_name(cls, metric, attenuated)
            params = G3_ERF_PARAMS if attenuated else G3_PARAMS
            specs.append((generate(cls, self.table, metric, attenuated), key, {name: params}))
        for cls, mod in zip(todo, self.backend.compile(specs)):
            self._mods[(cls, metric, attenuated)] = mod
        return {c: self._mods[(c, metric, attenuated)] for c in classes}

    def prepare(self, attenuated=False):
        """Compile (or fetch from the cache) every kernel this basis pair needs (with
        ``attenuated`` the erf variants too)."""
        for flag in (False, True) if attenuated else (False,):
            self._compile(self.classes_3c(), False, flag)
            self._compile(self.classes_2c(), True, flag)
        return self

    def _launch(self, mod, name, bra, ket, k0, nk, kbase, strides, gamma, grad, weighted_b, omega=0.0):
        """One class: grid (bra pairs / BLOCK, aux shells k0 <= k < k0 + nk); the whole Rys
        table is passed (the sources hold each root count's offset); omega > 0 (bohr^-1), the
        erf kernel's last argument."""
        nbra = int(bra["off"].shape[0])
        if nbra == 0 or nk == 0:
            return
        mod.launch(
            name,
            ((nbra + BLOCK - 1) // BLOCK, nk, 1),
            BLOCK,
            [
                np.int32(nbra),
                bra["off"],
                bra["atoms"],
                bra["pst"],
                bra["geo"],
                bra["prim"],
                bra["prim_a"],
                weighted_b,
                np.int32(k0),
                ket["ket_off"],
                ket["atoms"],
                ket["pst"],
                ket["geo"],
                ket["prim"],
                np.int32(kbase),
                *(np.int32(s) for s in strides),
                gamma,
                grad,
                self._tab,
                *((np.float64(omega),) if omega > 0.0 else ()),
            ],
        )

    # ------------------------------------------------------------------ gradients
    def cartesian_gamma(self, gamma, aux_shells=None):
        """Γ (nao, nao, nP) of the final AO bases for aux shells s0 <= s < s1 -> the
        cartesian (nP_cart, ncart, ncart) the kernels read."""
        xp = self.xp
        s0, s1 = (0, self.aux.nshell) if aux_shells is None else map(int, aux_shells)
        cl, al = np.asarray(self.aux.cart_loc), np.asarray(self.aux.ao_loc)
        caux = self.C_aux[cl[s0] : cl[s1], al[s0] : al[s1]]  # (nPc, nP)
        g = xp.asarray(gamma, dtype=np.float64)
        g = xp.tensordot(caux, g, axes=(1, 2))  # (nPc, nao, nao)
        return xp.ascontiguousarray(xp.matmul(xp.matmul(self.C, g), self.C.T))

    def grad3c(self, gamma, aux_shells=None, grad=None, omega=0.0):
        """Σ_mnP Γ_mnP d(mn|P)/dR added to ``grad`` (a backend array (3 natm,), zeros when
        None) and returned; Γ (nao, nao, nP) symmetric in m, n, final AO bases, for the aux
        shells s0 <= s < s1 of ``aux_shells`` (default all); omega (bohr^-1): 0 for 1/r12,
        > 0 for erf(ω r12)/r12, < 0 for erfc(|ω| r12)/r12 = 1/r12 - erf (module docstring)."""
        xp = self.xp
        omega = float(omega)
        grad = xp.zeros(3 * self.natm) if grad is None else grad
        if omega < 0.0:  # erfc = 1/r12 - erf
            grad -= self.grad3c(gamma, aux_shells, None, -omega)
            return self.grad3c(gamma, aux_shells, grad)
        s0, s1 = (0, self.aux.nshell) if aux_shells is None else map(int, aux_shells)
        cl = np.asarray(self.aux.cart_loc)
        gc = self.cartesian_gamma(gamma, (s0, s1))
        nc = self.basis.ncart
        erf = omega > 0.0
        mods = self._compile(self.classes_3c(), False, erf)
        for la, lb, lc in self.classes_3c():
            sh = self._aux_host[lc]["shells"]
            k0, k1 = np.searchsorted(sh, [s0, s1])
            bra = self.bra[(la, lb)]
            self._launch(
                mods[(la, lb, lc)], kernel_name((la, lb, lc), False, erf), bra, self.ket[lc], int(k0), int(k1 - k0),
                int(cl[s0]), (nc * nc, nc, 1), gc, grad, bra["prim_b"], omega,
            )  # fmt: skip
        return grad

    def grad2c(self, gamma2, grad=None, omega=0.0):
        """Σ_PQ Γ_PQ d(P|Q)/dR added to ``grad`` (as :meth:`grad3c`); Γ (naux, naux)
        symmetric, final auxiliary basis; omega (bohr^-1): the operator, as in :meth:`grad3c`."""
        xp = self.xp
        omega = float(omega)
        grad = xp.zeros(3 * self.natm) if grad is None else grad
        if omega < 0.0:  # erfc = 1/r12 - erf
            grad -= self.grad2c(gamma2, None, -omega)
            return self.grad2c(gamma2, grad)
        g = xp.asarray(gamma2, dtype=np.float64)
        gc = xp.ascontiguousarray(self.C_aux @ g @ self.C_aux.T)  # (naux_cart, naux_cart)
        n = self.aux.ncart
        erf = omega > 0.0
        mods = self._compile(self.classes_2c(), True, erf)
        for lp, _, lq in self.classes_2c():
            bra, ket = self.ket[lp], self.ket[lq]  # the bra (P, 1): the aux lists as they are
            self._launch(
                mods[(lp, 0, lq)], kernel_name((lp, 0, lq), True, erf), bra, ket, 0, int(ket["off"].shape[0]), 0,
                (1, n, 0), gc, grad, bra["prim_a"], omega,
            )  # fmt: skip
        return grad
