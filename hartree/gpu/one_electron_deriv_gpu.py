"""One-electron part of an SCF gradient on the GPU: first derivatives of S, T and V
contracted with the densities in the kernels, per atom.

    Σ_ab D_ab d<a|T + V|b>/dX - Σ_ab W_ab d<a|b>/dX                                 (1)

Two kernels per shell-pair class (la, lb), la >= lb, over the unique shell pairs of
:func:`hartree.gpu.pairs.class_pairs` (an off-diagonal pair stands for both orders: weight 2):

* ``grad1_<la><lb>``, one pair per thread: the derivatives by the centres A and B of the
  pair, by the Gaussian-exponent rule (Obara & Saika, J. Chem. Phys. 84, 3963 (1986),
  eq. 20) on the 1-D tables of :mod:`hartree.gpu.one_electron_gpu` (eqs. (1)-(6) there)
  with one more quantum on each side:

      d/dA_x S_ij = 2a S_(i+1)j - i S_(i-1)j,   d/dB_x S_ij = 2b S_i(j+1) - j S_i(j-1)
      (the same for the 1-D kinetic factors T_ij and the Rys factors I_ij of V),

  V with all nuclei; added to the atoms of A and B (one atomic add per pair and axis).
* ``hf_<la><lb>``: the nuclei's own motion (the Hellmann-Feynman term), by translational
  invariance d/dC <a|V_C|b> = -(d/dA + d/dB) <a|V_C|b>; grid y runs over the nuclei, each
  thread sums HF_CHUNK pairs of one nucleus in registers before one atomic add per axis.

Densities are cartesian (C D C^T, as for J/K).  The host reference is
:mod:`hartree.integrals.one_electron_deriv`.
"""

import numpy as np

from hartree.basis import cart2sph_matrix

from ..integrals.gaussian_product import angular_factor
from . import codegen
from .one_electron_gpu import SHELL_PARAMS, _components, _decl, _prologue, shell_pairs
from .tables import RysTable

GENERATOR_VERSION = "1"
BLOCK = 128
#: pairs one thread of the Hellmann-Feynman kernel sums before its atomic add
HF_CHUNK = 16

GRAD_PARAMS = SHELL_PARAMS + [
    ("const int*", "shell_atom"),
    ("const double*", "dm"),
    ("const double*", "wdm"),
    ("int", "natm"),
    ("const double*", "charges"),
    ("const double*", "coords"),
    ("const double*", "tab"),
    ("double*", "grad"),
]


def _overlap_part(la, lb):
    """S and T derivatives of one primitive pair, contracted (eq. (1))."""
    nmax = la + lb + 4
    jmax = lb + 3
    return [
        f"    double h[3][{nmax + 1}][{jmax + 1}];",
        "    for (int d = 0; d < 3; ++d) {",
        "      const double PA = (a * A[d] + b * B[d]) / pz - A[d];",
        "      h[d][0][0] = sqrt(3.141592653589793 / pz) * exp(-a * b / pz * AB[d] * AB[d]);",
        "      h[d][1][0] = PA * h[d][0][0];",
        f"      for (int n = 1; n < {nmax}; ++n)",
        "        h[d][n + 1][0] = PA * h[d][n][0] + n * ip2 * h[d][n - 1][0];",
        f"      for (int j = 0; j < {jmax}; ++j)",
        f"        for (int n = 0; n < {nmax} - j; ++n)",
        "          h[d][n][j + 1] = h[d][n + 1][j] + AB[d] * h[d][n][j];",
        "    }",
        *_components("a", la),
        *["  " + x for x in _components("b", lb)],
        "      const int ii[3] = {ax, ay, az}, jj[3] = {bx, by, bz};",
        "      const double dab = dm[(size_t)(i0 + ai) * ncart + j0 + bi];",
        "      const double wab = wdm[(size_t)(i0 + ai) * ncart + j0 + bi];",
        "      double s[3], t[3], sa[3], ta[3], sb[3], tb[3];",
        "      for (int d = 0; d < 3; ++d) {",
        "        const int i = ii[d], j = jj[d];",
        "        s[d] = h[d][i][j];",
        "        t[d] = kin(h[d], i, j, b);",
        "        sa[d] = 2.0 * a * h[d][i + 1][j] - (i > 0 ? i * h[d][i - 1][j] : 0.0);",
        "        ta[d] = 2.0 * a * kin(h[d], i + 1, j, b) - (i > 0 ? i * kin(h[d], i - 1, j, b) : 0.0);",
        "        sb[d] = 2.0 * b * h[d][i][j + 1] - (j > 0 ? j * h[d][i][j - 1] : 0.0);",
        "        tb[d] = 2.0 * b * kin(h[d], i, j + 1, b) - (j > 0 ? j * kin(h[d], i, j - 1, b) : 0.0);",
        "      }",
        "      for (int x = 0; x < 3; ++x) {",
        "        const int y = (x + 1) % 3, z = (x + 2) % 3;",
        "        const double dsa = sa[x] * s[y] * s[z], dsb = sb[x] * s[y] * s[z];",
        "        const double dta = ta[x] * s[y] * s[z] + sa[x] * (t[y] * s[z] + s[y] * t[z]);",
        "        const double dtb = tb[x] * s[y] * s[z] + sb[x] * (t[y] * s[z] + s[y] * t[z]);",
        "        gA[x] += cc * (dab * dta - wab * dsa);",
        "        gB[x] += cc * (dab * dtb - wab * dsb);",
        "      }",
        "    }}",
    ]


def _nuclear_part(la, lb, indent, nucleus_loop):
    """V_C derivatives by A and B of one primitive pair for the nuclei of ``nucleus_loop``
    (a C for-statement header defining c), contracted with D into vA, vB."""
    n = (la + lb + 1) // 2 + 1
    lab = la + lb + 1
    p = " " * indent
    body = [
        nucleus_loop,
        "{",
        "  const double PC[3] = {P[0] - coords[3 * c], P[1] - coords[3 * c + 1], P[2] - coords[3 * c + 2]};",
        "  const double T = pz * (PC[0] * PC[0] + PC[1] * PC[1] + PC[2] * PC[2]);",
        f"  double u[{n}], w[{n}];",
        f"  rys_{n}(T, tab, u, w);",
        "  const double pref = -charges[c] * K;",
        "  double cA[3] = {0.0, 0.0, 0.0}, cB[3] = {0.0, 0.0, 0.0};",
        "#pragma unroll 1",
        f"  for (int r = 0; r < {n}; ++r) {{",
        "    const double b10 = 0.5 * (1.0 - u[r]) / pz;",
        f"    double g[3][{lab + 1}][{lb + 2}];",
        "    for (int d = 0; d < 3; ++d) {",
        "      const double c00 = P[d] - A[d] - u[r] * PC[d];",
        "      g[d][0][0] = (d == 2) ? w[r] * pref : 1.0;",
        "      g[d][1][0] = c00 * g[d][0][0];",
        f"      for (int m = 1; m < {lab}; ++m)",
        "        g[d][m + 1][0] = c00 * g[d][m][0] + m * b10 * g[d][m - 1][0];",
        f"      for (int j = 0; j < {lb + 1}; ++j)",
        f"        for (int m = 0; m < {lab} - j; ++m)",
        "          g[d][m][j + 1] = g[d][m + 1][j] + AB[d] * g[d][m][j];",
        "    }",
        *["  " + x for x in _components("a", la)],
        *["    " + x for x in _components("b", lb)],
        "        const int ii[3] = {ax, ay, az}, jj[3] = {bx, by, bz};",
        "        const double dab = dm[(size_t)(i0 + ai) * ncart + j0 + bi];",
        "        double v[3], va[3], vb[3];",
        "        for (int d = 0; d < 3; ++d) {",
        "          const int i = ii[d], j = jj[d];",
        "          v[d] = g[d][i][j];",
        "          va[d] = 2.0 * a * g[d][i + 1][j] - (i > 0 ? i * g[d][i - 1][j] : 0.0);",
        "          vb[d] = 2.0 * b * g[d][i][j + 1] - (j > 0 ? j * g[d][i][j - 1] : 0.0);",
        "        }",
        "        cA[0] += dab * va[0] * v[1] * v[2]; cA[1] += dab * v[0] * va[1] * v[2]; "
        "cA[2] += dab * v[0] * v[1] * va[2];",
        "        cB[0] += dab * vb[0] * v[1] * v[2]; cB[1] += dab * v[0] * vb[1] * v[2]; "
        "cB[2] += dab * v[0] * v[1] * vb[2];",
        "      }}",
        "  }",
        "  ACCUMULATE",
        "}",
    ]
    return [p + x for x in body]


def _primitive_loop(la, lb):
    return [
        "#pragma unroll 1",
        "  for (int ip = shell_pst[si]; ip < shell_pst[si] + shell_nprim[si]; ++ip)",
        "  for (int jp = shell_pst[sj]; jp < shell_pst[sj] + shell_nprim[sj]; ++jp) {",
        "    const double a = expo[ip], b = expo[jp], pz = a + b, ip2 = 0.5 / pz;",
        "    const double cc = coef[ip] * coef[jp];",
        "    const double P[3] = {(a * A[0] + b * B[0]) / pz, (a * A[1] + b * B[1]) / pz, (a * A[2] + b * B[2]) / pz};",
        "    const double ab2 = AB[0] * AB[0] + AB[1] * AB[1] + AB[2] * AB[2];",
        "    const double K = cc * 6.283185307179586 / pz * exp(-a * b / pz * ab2);",
        "    (void)ip2;",
    ]


_KINETIC = """\
// 1-D kinetic factor -1/2 d²/dx² acting on the ket (exponent b), Obara & Saika eq. (4)
__device__ __forceinline__ double kin_row(const double* h, const int stride, const int i, const int j, const double b)
{
  const double* r = h + i * stride;
  return -0.5 * (4.0 * b * b * r[j + 2] - 2.0 * b * (2 * j + 1) * r[j] + (j >= 2 ? j * (j - 1) * r[j - 2] : 0.0));
}
"""


def grad1_kernel(la, lb):
    """Kernel of the A and B derivatives of S, T and V (all nuclei) of class (la, lb)."""
    fab = angular_factor(la) * angular_factor(lb)
    jmax = lb + 3
    L = [f'extern "C" __global__ void grad1_{la}{lb}({_decl(GRAD_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        f"#define kin(hd, i, j, b) kin_row(&(hd)[0][0], {jmax + 1}, (i), (j), (b))",
        "  const int i0 = cart_loc[si], j0 = cart_loc[sj];",
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0};",
    ]
    L += _primitive_loop(la, lb)
    L += _overlap_part(la, lb)
    nuc = _nuclear_part(la, lb, 4, "    for (int c = 0; c < natm; ++c)")
    acc = "      for (int x = 0; x < 3; ++x) { gA[x] += cA[x]; gB[x] += cB[x]; }"
    L += [acc if x.strip() == "ACCUMULATE" else x for x in nuc]
    L += [
        "  }",
        "#undef kin",
        f"  const double wp = (si == sj ? 1.0 : 2.0) * {fab!r};",
        "  for (int x = 0; x < 3; ++x) {",
        "    atomicAdd(grad + 3 * shell_atom[si] + x, wp * gA[x]);",
        "    atomicAdd(grad + 3 * shell_atom[sj] + x, wp * gB[x]);",
        "  }",
        "}",
    ]
    return L


def hf_kernel(la, lb):
    """Kernel of the nuclei's own motion (Hellmann-Feynman term) of class (la, lb): grid
    (ceil(npair / (BLOCK HF_CHUNK)), natm)."""
    fab = angular_factor(la) * angular_factor(lb)
    L = [
        f'extern "C" __global__ void hf_{la}{lb}({_decl(GRAD_PARAMS)})',
        "{",
        "  const int c = blockIdx.y;",
        "  double hC[3] = {0.0, 0.0, 0.0};",
        f"  const int first = (blockIdx.x * blockDim.x + threadIdx.x) * {HF_CHUNK};",
        f"  for (int p = first; p < first + {HF_CHUNK} && p < npair; ++p) {{",
        "  const int si = pairs[2 * p], sj = pairs[2 * p + 1];",
        "  const double A[3] = {centers[3 * si], centers[3 * si + 1], centers[3 * si + 2]};",
        "  const double B[3] = {centers[3 * sj], centers[3 * sj + 1], centers[3 * sj + 2]};",
        "  const double AB[3] = {A[0] - B[0], A[1] - B[1], A[2] - B[2]};",
        "  const int i0 = cart_loc[si], j0 = cart_loc[sj];",
        f"  const double wp = (si == sj ? 1.0 : 2.0) * {fab!r};",
    ]
    L += _primitive_loop(la, lb)
    nuc = _nuclear_part(la, lb, 4, "    if (charges[c] != 0.0)")
    acc = "      for (int x = 0; x < 3; ++x) hC[x] -= wp * (cA[x] + cB[x]);"
    L += [acc if x.strip() == "ACCUMULATE" else x for x in nuc]
    L += [
        "  }",
        "  }",
        "  for (int x = 0; x < 3; ++x) atomicAdd(grad + 3 * c + x, hC[x]);",
        "}",
    ]
    return L


def generate(la, lb, table):
    """CUDA C source with grad1_<la><lb> and hf_<la><lb> (deterministic)."""
    n = (la + lb + 1) // 2 + 1
    out = [
        f"// generated by hartree.gpu.one_electron_deriv_gpu (version {GENERATOR_VERSION}); class {la}{lb}",
        f"// Rys table sha256 {table.sha256}; do not edit",
        "",
        *codegen.rys_function(table, n),
        "",
        _KINETIC,
        *grad1_kernel(la, lb),
        "",
        *hf_kernel(la, lb),
        "",
    ]
    return "\n".join(out)


class OneElectronGradientGPU:
    """The one-electron gradient term (1) of one basis on one backend."""

    def __init__(self, basis, molecule, backend, table=None):
        self.basis, self.molecule, self.backend = basis, molecule, backend
        xp = self.xp = backend.xp
        self.table = table or RysTable.load()
        ls = sorted(set(int(l) for l in basis.shell_l))
        self.classes = [(a, b) for a in ls for b in ls if a >= b]
        self.C = xp.asarray(cart2sph_matrix(basis))
        i32 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        f64 = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=np.float64))  # noqa: E731
        self._shell = [
            i32(basis.shell_nprim),
            i32(basis.shell_prim_start),
            f64(basis.shell_center),
            f64(basis.exponents),
            f64(basis.coefficients),
            i32(basis.cart_loc),
        ]
        self._atom = i32(basis.shell_atom)
        self._pairs = {c: i32(shell_pairs(basis, *c)) for c in self.classes}
        self._charges = f64(molecule.numbers)
        self._coords = f64(np.asarray(molecule.coords).reshape(-1, 3))
        self._tab = xp.asarray(self.table.coef)
        self._mod = None

    def prepare(self):
        if self._mod is None:
            specs = []
            for la, lb in self.classes:
                key = {
                    "kind": "one_electron_gradient",
                    "class": [la, lb],
                    "generator": GENERATOR_VERSION,
                    "rys_table": self.table.sha256,
                }
                names = {f"grad1_{la}{lb}": GRAD_PARAMS, f"hf_{la}{lb}": GRAD_PARAMS}
                specs.append((generate(la, lb, self.table), key, names))
            self._mod = dict(zip(self.classes, self.backend.compile(specs)))
        return self

    def gradient(self, density, energy_weighted_density):
        """Term (1) per atom, numpy (natm, 3), hartree/bohr; densities (nao, nao) of the final
        AO basis, symmetric (numpy or the backend's arrays)."""
        self.prepare()
        xp, C = self.xp, self.C
        dm = xp.ascontiguousarray(C @ xp.asarray(density, dtype=np.float64) @ C.T)
        wdm = xp.ascontiguousarray(C @ xp.asarray(energy_weighted_density, dtype=np.float64) @ C.T)
        natm = self.molecule.natm
        grad = xp.zeros(3 * natm)
        ncart = self.basis.ncart
        for la, lb in self.classes:
            pairs = self._pairs[(la, lb)]
            n = int(pairs.shape[0])
            if n == 0:
                continue
            tab = self._tab[int(self.table.offsets[(la + lb + 1) // 2 + 1]) :]
            args = [np.int32(n), pairs, *self._shell, np.int32(ncart), self._atom, dm, wdm, np.int32(natm)]
            args += [self._charges, self._coords, tab, grad]
            mod = self._mod[(la, lb)]
            mod.launch(f"grad1_{la}{lb}", ((n + BLOCK - 1) // BLOCK,), BLOCK, args)
            nx = (n + BLOCK * HF_CHUNK - 1) // (BLOCK * HF_CHUNK)
            mod.launch(f"hf_{la}{lb}", (nx, natm), BLOCK, args)
        out = grad.get() if hasattr(grad, "get") else np.asarray(grad)
        return np.asarray(out).reshape(natm, 3)
