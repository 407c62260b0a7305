"""One-electron part of an SCF gradient on the GPU: first derivatives of S, T and V
contracted with the densities in the kernels, per atom.

    Σ_ab D_ab d<a|T + V|b>/dX - Σ_ab W_ab d<a|b>/dX                                 (1)

Two kernels per shell-pair class (la, lb), la >= lb, over the unique shell pairs of
:func:`hartree.gpu.pairs.class_pairs` (an off-diagonal pair stands for both orders: weight 2):

* ``grad1_<la><lb>``, one pair per thread: the derivatives by the centres A and B of the
  pair, V with all nuclei; added to the atoms of A and B (one atomic add per pair and axis);
* ``hf_<la><lb>``: the nuclei's own motion (the Hellmann-Feynman term), by translational
  invariance d/dC <a|V_C|b> = -(d/dA + d/dB) <a|V_C|b>; grid y runs over the nuclei, each
  thread sums HF_CHUNK pairs of one nucleus in registers before one atomic add per axis.

The derivatives are not written here: they are the integrals of
:func:`hartree.integrals.os_program.derivative` (Obara & Saika, J. Chem. Phys. 84, 3963
(1986), eq. 20, on the factor of the differentiated axis: 2a X_(i+1)j - i X_(i-1)j, and the
same by B), contracted with the densities per cartesian pair, in the unrolled programs of
the class printed by :class:`hartree.gpu.os_printer.Printed` (the frame is
:mod:`hartree.gpu.one_electron_gpu`'s).  Densities are cartesian (C D C^T, as for J/K).  The host
reference is :mod:`hartree.integrals.one_electron_deriv`.
"""

import numpy as np

from hartree.basis import cart2sph_matrix
from hartree.integrals.os_program import KINETIC, NUCLEAR, OVERLAP, Output, derivative, scaled

from ..integrals.gaussian_product import angular_factor
from . import codegen
from .one_electron_gpu import (
    SHELL_PARAMS,
    _decl,
    _prologue,
    nucleus_lines,
    primitive_lines,
    primitive_loop,
    root_lines,
    shell_pairs,
)
from .os_printer import Printed
from .tables import RysTable

GENERATOR_VERSION = "2"
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

#: the densities the programs contract with, at the cartesian pair (a, b) of the thread's pair
WEIGHTS = {
    "dm": "dm[(size_t)(i0 + {a}) * ncart + j0 + {b}]",
    "wdm": "wdm[(size_t)(i0 + {a}) * ncart + j0 + {b}]",
}

#: S and T: gA[x] += D d<a|T|b>/dA_x - W d<a|b>/dA_x, gB the same by B (eq. (1))
OVERLAP_OUTPUTS = tuple(
    out
    for centre, target in (("a", "gA"), ("b", "gB"))
    for x in range(3)
    for out in (
        Output(target, x, derivative(KINETIC, centre, x), "dm"),
        Output(target, x, scaled(derivative(OVERLAP, centre, x), -1.0), "wdm"),
    )
)

#: V of one nucleus: cA[x] += D d<a|V_C|b>/dA_x, cB by B
NUCLEAR_OUTPUTS = tuple(
    Output(target, x, derivative(NUCLEAR, centre, x), "dm")
    for centre, target in (("a", "cA"), ("b", "cB"))
    for x in range(3)
)


def _nuclear_part(la, lb, program, head, accumulate):
    """V_C derivatives by A and B of one primitive pair for the nuclei of ``head`` (a C
    statement header defining c), contracted with D into cA, cB (``program``: the printed
    NUCLEAR_OUTPUTS), then ``accumulate``."""
    n = (la + lb + 1) // 2 + 1
    return [
        *(["#pragma unroll 1"] if head.startswith("for") else []),
        f"    {head} {{",
        *nucleus_lines(n, "      "),
        "      double cA[3] = {0.0, 0.0, 0.0}, cB[3] = {0.0, 0.0, 0.0};",
        "#pragma unroll 1",
        f"      for (int r = 0; r < {n}; ++r) {{",
        *root_lines(program.used, "        "),
        *program.lines({"cA": "cA[{row}]", "cB": "cB[{row}]"}, None, WEIGHTS, "        "),
        "      }",
        f"      {accumulate}",
        "    }",
    ]


def grad1_kernel(la, lb):
    """Kernel of the A and B derivatives of S, T and V (all nuclei) of class (la, lb)."""
    fab = angular_factor(la) * angular_factor(lb)
    program, nuclear = Printed(la, lb, OVERLAP_OUTPUTS), Printed(la, lb, NUCLEAR_OUTPUTS)
    L = [f'extern "C" __global__ void grad1_{la}{lb}({_decl(GRAD_PARAMS)})', "{"]
    L += _prologue(la, lb)
    L += [
        "  const int i0 = cart_loc[si], j0 = cart_loc[sj];",
        "  double gA[3] = {0.0, 0.0, 0.0}, gB[3] = {0.0, 0.0, 0.0};",
        *program.decls,
        *nuclear.decls,
        *primitive_loop(),
        *primitive_lines(program.used | nuclear.used),
        "    const double sp = 3.141592653589793 / pz;",
        "    const double cc = cc0 * sp * sqrt(sp) * ek;",
        "    const double K = cc0 * 6.283185307179586 / pz * ek;",
        *program.lines({"gA": "gA[{row}]", "gB": "gB[{row}]"}, "cc", WEIGHTS),
        *_nuclear_part(
            la,
            lb,
            nuclear,
            "for (int c = 0; c < natm; ++c)",
            "for (int x = 0; x < 3; ++x) { gA[x] += cA[x]; gB[x] += cB[x]; }",
        ),
        "  }",
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
    nuclear = Printed(la, lb, NUCLEAR_OUTPUTS)
    L = [
        f'extern "C" __global__ void hf_{la}{lb}({_decl(GRAD_PARAMS)})',
        "{",
        *nuclear.decls,
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
        *primitive_loop(),
        *primitive_lines(nuclear.used),
        "    const double K = cc0 * 6.283185307179586 / pz * ek;",
        *_nuclear_part(
            la, lb, nuclear, "if (charges[c] != 0.0)", "for (int x = 0; x < 3; ++x) hC[x] -= wp * (cA[x] + cB[x]);"
        ),
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
