"""One-electron integrals on the GPU: overlap, kinetic, dipole and nuclear attraction.

CUDA C is generated at run time per shell-pair class (la, lb), la >= lb, one shell pair
per thread, and compiled like the J/K kernels (:mod:`hartree.device.compile`; the emulated
backend runs the same source with g++).  Each thread loops over the primitive pairs of
its shell pair and writes the cartesian block and its transpose into (ncart, ncart)
matrices; the final AO matrices are C^T M C (C: cartesian -> final AOs, as for J/K).

Equations (a, b exponents, p = a + b, P = (aA + bB)/p, X_PA = P_x - A_x, one direction):

    S_00 = sqrt(π/p) exp(-ab/p (A_x - B_x)²)                                    (1)
    S_{n+1,0} = X_PA S_n0 + n/(2p) S_{n-1,0}                (Obara-Saika 1986)   (2)
    S_{i,j+1} = S_{i+1,j} + (A_x - B_x) S_ij                (transfer)           (3)
    T^x_ij = -1/2 [4b² S_{i,j+2} - 2b(2j+1) S_ij + j(j-1) S_{i,j-2}]             (4)
    T = T^x S^y S^z + S^x T^y S^z + S^x S^y T^z;   <a|x - O_x|b> = S_{i+1,j} + (A_x-O_x) S_ij
    V = -Σ_C Z_C 2π/p exp(-ab/p |AB|²) Σ_r w_r I_x(u_r) I_y(u_r) I_z(u_r),
        T_C = p |P - C|²,  Σ_r w_r u_r^m = F_m(T_C),  (la+lb)/2 + 1 roots           (5)
    I_{n+1} = (X_PA - u X_PC) I_n + n (1 - u)/(2p) I_{n-1},  I_0 = 1, then (3)      (6)

Primitive coefficients already include the radial normalisation; the libcint angular
factors f(la) f(lb) multiply each block (see ``pairs.py``).  Roots and weights come from
the same Chebyshev table as the ERIs (``codegen.rys_function``).
"""

import numpy as np

from hartree.basis import cart2sph_matrix

from ..integrals.gaussian_product import angular_factor
from . import codegen
from .pairs import class_pairs
from .tables import RysTable

GENERATOR_VERSION = "1"
BLOCK = 128

SHELL_PARAMS = [
    ("int", "npair"),
    ("const int*", "pairs"),
    ("const int*", "shell_nprim"),
    ("const int*", "shell_pst"),
    ("const double*", "centers"),
    ("const double*", "expo"),
    ("const double*", "coef"),
    ("const int*", "cart_loc"),
    ("int", "ncart"),
]
ONE_PARAMS = SHELL_PARAMS + [("double", "ox"), ("double", "oy"), ("double", "oz"), ("double*", "out")]
NUC_PARAMS = SHELL_PARAMS + [
    ("int", "natm"),
    ("const double*", "charges"),
    ("const double*", "coords"),
    ("const double*", "tab"),
    ("double*", "out"),
]


def _decl(params):
    return ", ".join(f"{t} __restrict__ {n}" if t.endswith("*") else f"{t} {n}" for t, n in params)


def _prologue(la, lb):
    """Thread -> shell pair, centres; shared by both kernels."""
    return [
        "  const int p = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (p >= npair) return;",
        "  const int si = pairs[2 * p], sj = pairs[2 * p + 1];",
        "  const double A[3] = {centers[3 * si], centers[3 * si + 1], centers[3 * si + 2]};",
        "  const double B[3] = {centers[3 * sj], centers[3 * sj + 1], centers[3 * sj + 2]};",
        "  const double AB[3] = {A[0] - B[0], A[1] - B[1], A[2] - B[2]};",
    ]


def _components(tag, l):
    """Loops over the cartesian components of l in PySCF order, index <tag>."""
    return [
        f"    for (int {tag}x = {l}, {tag}i = 0; {tag}x >= 0; --{tag}x)",
        f"    for (int {tag}y = {l} - {tag}x; {tag}y >= 0; --{tag}y, ++{tag}i) {{",
        f"      const int {tag}z = {l} - {tag}x - {tag}y;",
    ]


def _store(la, lb, nmat):
    """Write block * f(la) f(lb) and its transpose into out (nmat, ncart, ncart)."""
    fab = angular_factor(la) * angular_factor(lb)
    na, nb = codegen.ncart(la), codegen.ncart(lb)
    return [
        "  const int i0 = cart_loc[si], j0 = cart_loc[sj];",
        f"  for (int m = 0; m < {nmat}; ++m)",
        f"    for (int a = 0; a < {na}; ++a)",
        f"      for (int b = 0; b < {nb}; ++b) {{",
        f"        const double v = {fab!r} * acc[m][a * {nb} + b];",
        "        out[((long long)m * ncart + i0 + a) * ncart + j0 + b] = v;",
        "        out[((long long)m * ncart + j0 + b) * ncart + i0 + a] = v;",
        "      }",
    ]


def one_kernel(la, lb):
    """S, T, dipole (x, y, z about O) of class (la, lb): out (5, ncart, ncart)."""
    na, nb = codegen.ncart(la), codegen.ncart(lb)
    nmax = la + lb + 3
    L = [f'extern "C" __global__ void one_{la}{lb}({_decl(ONE_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        "  const double O[3] = {ox, oy, oz};",
        f"  double acc[5][{na * nb}];",
        f"  for (int m = 0; m < 5; ++m) for (int q = 0; q < {na * nb}; ++q) acc[m][q] = 0.0;",
        "#pragma unroll 1",
        "  for (int ip = shell_pst[si]; ip < shell_pst[si] + shell_nprim[si]; ++ip)",
        "  for (int jp = shell_pst[sj]; jp < shell_pst[sj] + shell_nprim[sj]; ++jp) {",
        "    const double a = expo[ip], b = expo[jp], pz = a + b, ip2 = 0.5 / pz;",
        "    const double cc = coef[ip] * coef[jp];",
        f"    double h[3][{nmax + 1}][{lb + 3}];",
        "    for (int d = 0; d < 3; ++d) {",
        "      const double PA = (a * A[d] + b * B[d]) / pz - A[d];",
        "      h[d][0][0] = sqrt(3.141592653589793 / pz) * exp(-a * b / pz * AB[d] * AB[d]); // (1)",
        f"      if ({nmax} > 0) h[d][1][0] = PA * h[d][0][0];",
        f"      for (int n = 1; n < {nmax}; ++n)                                    // (2)",
        "        h[d][n + 1][0] = PA * h[d][n][0] + n * ip2 * h[d][n - 1][0];",
        f"      for (int j = 0; j < {lb + 2}; ++j)                                  // (3)",
        f"        for (int n = 0; n < {nmax} - j; ++n)",
        "          h[d][n][j + 1] = h[d][n + 1][j] + AB[d] * h[d][n][j];",
        "    }",
    ]
    L += _components("a", la) + _components("b", lb)
    L += [
        "      const int ax_[3] = {ax, ay, az}, bx_[3] = {bx, by, bz};",
        "      double s[3], t[3], r[3];",
        "      for (int d = 0; d < 3; ++d) {",
        "        const int i = ax_[d], j = bx_[d];",
        "        s[d] = h[d][i][j];",
        "        t[d] = -0.5 * (4.0 * b * b * h[d][i][j + 2] - 2.0 * b * (2 * j + 1) * h[d][i][j]"
        "                      + (j >= 2 ? j * (j - 1) * h[d][i][j - 2] : 0.0));        // (4)",
        "        r[d] = h[d][i + 1][j] + (A[d] - O[d]) * h[d][i][j];",
        "      }",
        f"      const int q = ai * {nb} + bi;",
        "      acc[0][q] += cc * s[0] * s[1] * s[2];",
        "      acc[1][q] += cc * (t[0] * s[1] * s[2] + s[0] * t[1] * s[2] + s[0] * s[1] * t[2]);",
        "      acc[2][q] += cc * r[0] * s[1] * s[2];",
        "      acc[3][q] += cc * s[0] * r[1] * s[2];",
        "      acc[4][q] += cc * s[0] * s[1] * r[2];",
        "    }}",
        "  }",
    ]
    return L + _store(la, lb, 5) + ["}"]


def nuc_kernel(la, lb):
    """Nuclear attraction of class (la, lb), eq. (5)-(6): out (ncart, ncart)."""
    na, nb = codegen.ncart(la), codegen.ncart(lb)
    n = (la + lb) // 2 + 1
    lab = la + lb
    L = [f'extern "C" __global__ void nuc_{la}{lb}({_decl(NUC_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        "  const double ab2 = AB[0] * AB[0] + AB[1] * AB[1] + AB[2] * AB[2];",
        f"  double acc[1][{na * nb}];",
        f"  for (int q = 0; q < {na * nb}; ++q) acc[0][q] = 0.0;",
        "#pragma unroll 1",
        "  for (int ip = shell_pst[si]; ip < shell_pst[si] + shell_nprim[si]; ++ip)",
        "  for (int jp = shell_pst[sj]; jp < shell_pst[sj] + shell_nprim[sj]; ++jp) {",
        "    const double a = expo[ip], b = expo[jp], pz = a + b;",
        "    const double P[3] = {(a * A[0] + b * B[0]) / pz, (a * A[1] + b * B[1]) / pz, (a * A[2] + b * B[2]) / pz};",
        "    const double K = coef[ip] * coef[jp] * 6.283185307179586 / pz * exp(-a * b / pz * ab2);",
        "#pragma unroll 1",
        "    for (int c = 0; c < natm; ++c) {",
        "      const double PC[3] = {P[0] - coords[3 * c], P[1] - coords[3 * c + 1], P[2] - coords[3 * c + 2]};",
        "      const double T = pz * (PC[0] * PC[0] + PC[1] * PC[1] + PC[2] * PC[2]);",
        f"      double u[{n}], w[{n}];",
        f"      rys_{n}(T, tab, u, w);",
        "      const double pref = -charges[c] * K;",
        "#pragma unroll 1",
        f"      for (int r = 0; r < {n}; ++r) {{",
        "        const double b10 = 0.5 * (1.0 - u[r]) / pz;",
        f"        double g[3][{lab + 1}][{lb + 1}];",
        "        for (int d = 0; d < 3; ++d) {",
        "          const double c00 = P[d] - A[d] - u[r] * PC[d];                    // (6)",
        "          g[d][0][0] = (d == 2) ? w[r] * pref : 1.0;",
        f"          if ({lab} > 0) g[d][1][0] = c00 * g[d][0][0];",
        f"          for (int m = 1; m < {lab}; ++m)",
        "            g[d][m + 1][0] = c00 * g[d][m][0] + m * b10 * g[d][m - 1][0];",
        f"          for (int j = 0; j < {lb}; ++j)                                   // (3)",
        f"            for (int m = 0; m < {lab} - j; ++m)",
        "              g[d][m][j + 1] = g[d][m + 1][j] + AB[d] * g[d][m][j];",
        "        }",
    ]
    L += ["  " + x for x in _components("a", la) + _components("b", lb)]
    L += [
        f"          acc[0][ai * {nb} + bi] += g[0][ax][bx] * g[1][ay][by] * g[2][az][bz];",
        "      }}",
        "      }",
        "    }",
        "  }",
    ]
    return L + _store(la, lb, 1) + ["}"]


def classes_of(basis):
    """Shell-pair classes (la, lb), la >= lb, present in the basis."""
    ls = sorted(set(int(l) for l in basis.shell_l))
    return [(a, b) for a in ls for b in ls if a >= b]


def generate(classes, table):
    """CUDA C source with one_<la><lb> and nuc_<la><lb> for each class (deterministic)."""
    nr = sorted({(la + lb) // 2 + 1 for la, lb in classes})
    out = [
        f"// generated by hartree.gpu.one_electron_gpu (version {GENERATOR_VERSION}); "
        f"classes {' '.join(f'{a}{b}' for a, b in classes)}",
        f"// Rys table sha256 {table.sha256}; do not edit",
        "",
    ]
    for n in nr:
        out += codegen.rys_function(table, n) + [""]
    for la, lb in classes:
        out += one_kernel(la, lb) + [""] + nuc_kernel(la, lb) + [""]
    return "\n".join(out)


def shell_pairs(basis, la, lb):
    """int32 (npair, 2) shell pairs (i, j) with l_i = la, l_j = lb (i >= j when la == lb)."""
    return np.ascontiguousarray(class_pairs(basis, la, lb), dtype=np.int32)


class OneElectronGPU:
    """S, T, V, dipole of one basis on one backend (arrays of the backend's module).

    basis: hartree.basis.Basis; backend: CudaBackend or EmulatedBackend.  Matrices are
    (nao, nao) (dipole (3, nao, nao)) in the final AO basis, atomic units.
    """

    def __init__(self, basis, backend, table=None):
        self.basis, self.backend = basis, backend
        xp = self.xp = backend.xp
        self.table = table or RysTable.load()
        self.classes = classes_of(basis)
        nmax = max((la + lb) // 2 + 1 for la, lb in self.classes)
        if nmax > self.table.max_nroots:
            raise ValueError(f"l = {basis.max_l}: {nmax} Rys roots needed")
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
        self._pairs = {c: i32(shell_pairs(basis, *c)) for c in self.classes}
        self._tab = xp.asarray(self.table.coef)
        self._mod = None
        self._sto = None

    def prepare(self):
        """Compile (or fetch from the caches) one module per class (la, lb), shared by
        every basis with that class (e.g. the SAD guess's atoms)."""
        if self._mod is None:
            specs = []
            for la, lb in self.classes:
                names = {f"one_{la}{lb}": ONE_PARAMS, f"nuc_{la}{lb}": NUC_PARAMS}
                key = {
                    "kind": "one_electron",
                    "class": [la, lb],
                    "generator": GENERATOR_VERSION,
                    "rys_table": self.table.sha256,
                }
                specs.append((generate([(la, lb)], self.table), key, names))
            self._mod = dict(zip(self.classes, self.backend.compile(specs)))
        return self

    def _launch(self, kind, extra, nmat):
        xp, ncart = self.xp, self.basis.ncart
        out = xp.zeros((nmat, ncart, ncart))
        nprim, pst, cen, ex, co, cart_loc = self._shell
        for la, lb in self.classes:
            pairs = self._pairs[(la, lb)]
            n = int(pairs.shape[0])
            if n == 0:
                continue
            self._mod[(la, lb)].launch(
                f"{kind}_{la}{lb}",
                ((n + BLOCK - 1) // BLOCK,),
                BLOCK,
                [np.int32(n), pairs, nprim, pst, cen, ex, co, cart_loc, np.int32(ncart), *extra, out],
            )
        return xp.matmul(xp.matmul(self.C.T, out), self.C)  # (nmat, nao, nao)

    def _sto_blocks(self, origin=(0.0, 0.0, 0.0)):
        self.prepare()
        o = [np.float64(x) for x in np.asarray(origin, dtype=np.float64).reshape(3)]
        return self._launch("one", o, 5)

    def _cached_sto(self):
        if self._sto is None:
            self._sto = self._sto_blocks()
        return self._sto

    def overlap(self):
        """S (nao, nao)."""
        return self._cached_sto()[0].copy()

    def kinetic(self):
        """T (nao, nao)."""
        return self._cached_sto()[1].copy()

    def dipole(self, origin=(0.0, 0.0, 0.0)):
        """<μ| r - origin |ν>, (3, nao, nao)."""
        return self._sto_blocks(origin)[2:5].copy()

    def nuclear(self, numbers, coords):
        """V (nao, nao) for point charges Z (natm,) at coords (natm, 3) bohr."""
        self.prepare()
        xp = self.xp
        z = xp.asarray(np.asarray(numbers, dtype=np.float64))
        r = xp.asarray(np.ascontiguousarray(coords, dtype=np.float64).reshape(-1, 3))
        return self._launch_nuc(z, r)

    def _launch_nuc(self, z, r):
        xp, ncart = self.xp, self.basis.ncart
        out = xp.zeros((1, ncart, ncart))
        nprim, pst, cen, ex, co, cart_loc = self._shell
        for la, lb in self.classes:
            pairs = self._pairs[(la, lb)]
            npair = int(pairs.shape[0])
            if npair == 0:
                continue
            nr = (la + lb) // 2 + 1
            tab = self._tab[int(self.table.offsets[nr]) :]
            self._mod[(la, lb)].launch(
                f"nuc_{la}{lb}",
                ((npair + BLOCK - 1) // BLOCK,),
                BLOCK,
                [
                    np.int32(npair),
                    pairs,
                    nprim,
                    pst,
                    cen,
                    ex,
                    co,
                    cart_loc,
                    np.int32(ncart),
                    np.int32(z.shape[0]),
                    z,
                    r,
                    tab,
                    out,
                ],
            )
        return xp.matmul(xp.matmul(self.C.T, out), self.C)[0]
