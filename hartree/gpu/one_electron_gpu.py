"""One-electron integrals on the GPU: overlap, kinetic, dipole and nuclear attraction.

CUDA C is generated at run time per shell-pair class (la, lb), la >= lb, one shell pair
per thread, and compiled like the J/K kernels (:mod:`hartree.device.compile`; the emulated
backend runs the same source with g++).  Each thread loops over the primitive pairs of
its shell pair and writes the cartesian block and its transpose into (ncart, ncart)
matrices; the final AO matrices are C^T M C (C: cartesian -> final AOs, as for J/K).

The recurrences are not written here: the 1-D values and the products of every cartesian
pair are the CUDA printing (:class:`hartree.gpu.os_printer.Printed`) of the class's program
of :mod:`hartree.integrals.os_program` (Obara & Saika 1986 for S, T and μ, the Rys form for
V; unrolled, or rolled for the largest classes), the intermediate representation that the
numba kernels print too.  This module writes the frame: primitive loops, the coefficients of the program
(X_PA, X_PB, 1/(2p), 2b, B - O; per Rys root X_PA - u X_PC, X_PB - u X_PC, (1 - u)/(2p)),
the prefactors (π/p)^(3/2) K_AB and -Z_C 2π/p K_AB (T_C = p |P - C|², roots and weights from
the same Chebyshev table as the ERIs, ``codegen.rys_function``), the stores.

Primitive coefficients already include the radial normalisation; the libcint angular
factors f(la) f(lb) multiply each block (see ``pairs.py``).
"""

import numpy as np

from hartree.basis import cart2sph_matrix
from hartree.integrals.os_program import KINETIC, NUCLEAR, OVERLAP, Output, dipole

from ..integrals.gaussian_product import angular_factor
from . import codegen
from .os_printer import Printed
from .pairs import class_pairs
from .tables import RysTable

GENERATOR_VERSION = "2"
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

#: the outputs of one_<la><lb>: acc rows S, T, μ_x, μ_y, μ_z (about O)
ONE_OUTPUTS = (
    Output("acc", 0, OVERLAP),
    Output("acc", 1, KINETIC),
    *(Output("acc", 2 + x, dipole(x)) for x in range(3)),
)


def _decl(params):
    return ", ".join(f"{t} __restrict__ {n}" if t.endswith("*") else f"{t} {n}" for t, n in params)


def _prologue(la, lb):
    """Thread -> shell pair, centres; shared by the kernels."""
    return [
        "  const int p = blockIdx.x * blockDim.x + threadIdx.x;",
        "  if (p >= npair) return;",
        "  const int si = pairs[2 * p], sj = pairs[2 * p + 1];",
        "  const double A[3] = {centers[3 * si], centers[3 * si + 1], centers[3 * si + 2]};",
        "  const double B[3] = {centers[3 * sj], centers[3 * sj + 1], centers[3 * sj + 2]};",
        "  const double AB[3] = {A[0] - B[0], A[1] - B[1], A[2] - B[2]};",
    ]


def primitive_lines(used, pad="    "):
    """One primitive pair (exponents a, b, coefficients' product cc0, K_AB as ek): p, P and
    the coefficients of the programs among ``used`` (names of os_program: 1/(2p), 2a, 2b,
    X_PA, X_PB -- also for their eq. (8) forms); unused ones are not declared (NVRTC warns)."""
    lines = [
        f"{pad}const double a = expo[ip], b = expo[jp], pz = a + b;",
        f"{pad}const double cc0 = coef[ip] * coef[jp];",
        f"{pad}const double ek = exp(-a * b / pz * (AB[0] * AB[0] + AB[1] * AB[1] + AB[2] * AB[2]));",
    ]
    lines += [f"{pad}const double hp = 0.5 / pz;"] if used & {"hp", "hu"} else []
    lines += [f"{pad}const double {c}2 = 2.0 * {c};" for c in "ab" if c + "2" in used]
    for x, c in enumerate("xyz"):
        line = f"{pad}const double P{c} = (a * A[{x}] + b * B[{x}]) / pz"
        line += f", PA{c} = P{c} - A[{x}]" if used & {"pa", "ua"} else ""
        line += f", PB{c} = P{c} - B[{x}]" if used & {"pb", "ub"} else ""
        lines.append(line + ";")
    return lines


def root_lines(used, pad):
    """Per Rys root r (u[r], w[r]; PC<d>, pref of the nucleus): the seed weight wr and the
    coefficients of eq. (8) of os_program among ``used``."""
    lines = [f"{pad}const double wr = w[r] * pref;"]
    if used & {"hu", "ua", "ub"}:
        lines.append(f"{pad}const double ur = u[r];")
    lines += [f"{pad}const double hu = (1.0 - ur) * hp;"] if "hu" in used else []
    for c in "xyz":
        lines += [f"{pad}const double UA{c} = PA{c} - ur * PC{c};"] if "ua" in used else []
        lines += [f"{pad}const double UB{c} = PB{c} - ur * PC{c};"] if "ub" in used else []
    return lines


def nucleus_lines(n, pad):
    """One nucleus c of the attraction: P - C, T, the n Rys roots and weights, pref = -Z K."""
    return [
        f"{pad}const double PCx = Px - coords[3 * c], PCy = Py - coords[3 * c + 1], PCz = Pz - coords[3 * c + 2];",
        f"{pad}const double T = pz * (PCx * PCx + PCy * PCy + PCz * PCz);",
        f"{pad}double u[{n}], w[{n}];",
        f"{pad}rys_{n}(T, tab, u, w);",
        f"{pad}const double pref = -charges[c] * K;",
    ]


def primitive_loop():
    """The loops over the primitive pairs of the thread's shell pair (one brace left open)."""
    return [
        "#pragma unroll 1",
        "  for (int ip = shell_pst[si]; ip < shell_pst[si] + shell_nprim[si]; ++ip)",
        "  for (int jp = shell_pst[sj]; jp < shell_pst[sj] + shell_nprim[sj]; ++jp) {",
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
    program = Printed(la, lb, ONE_OUTPUTS)
    L = [f'extern "C" __global__ void one_{la}{lb}({_decl(ONE_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        "  const double O[3] = {ox, oy, oz};",
        f"  double acc[5][{na * nb}];",
        f"  for (int m = 0; m < 5; ++m) for (int q = 0; q < {na * nb}; ++q) acc[m][q] = 0.0;",
        *program.decls,
        *primitive_loop(),
        *primitive_lines(program.used),
        "    const double BCx = B[0] - O[0], BCy = B[1] - O[1], BCz = B[2] - O[2];",
        "    const double sp = 3.141592653589793 / pz;",
        "    const double cc = cc0 * sp * sqrt(sp) * ek;",
        *program.lines({"acc": "acc[{row}][{pair}]"}, "cc"),
        "  }",
    ]
    return L + _store(la, lb, 5) + ["}"]


def nuc_kernel(la, lb):
    """Nuclear attraction of class (la, lb): out (ncart, ncart)."""
    na = codegen.ncart(la) * codegen.ncart(lb)
    n = (la + lb) // 2 + 1
    program = Printed(la, lb, (Output("acc", 0, NUCLEAR),))
    L = [f'extern "C" __global__ void nuc_{la}{lb}({_decl(NUC_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        f"  double acc[1][{na}];",
        f"  for (int q = 0; q < {na}; ++q) acc[0][q] = 0.0;",
        *program.decls,
        *primitive_loop(),
        *primitive_lines(program.used),
        "    const double K = cc0 * 6.283185307179586 / pz * ek;",
        "#pragma unroll 1",
        "    for (int c = 0; c < natm; ++c) {",
        *nucleus_lines(n, "      "),
        "#pragma unroll 1",
        f"      for (int r = 0; r < {n}; ++r) {{",
        *root_lines(program.used, "        "),
        *program.lines({"acc": "acc[{row}][{pair}]"}, None, pad="        "),
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
