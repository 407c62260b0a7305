"""Even-tempered test bases shared by the atom tests and the reference script.

Exponents per l: a · b^k, k = 0..n-1 (bohr^-2).  Small on purpose: PySCF's DHF is the
reference and is slow on the 2-core CI machines.
"""

import numpy as np


def even_tempered(a, b, n):
    return a * b ** np.arange(n)


#: element -> (Z, [(a, b, n) per l])
DHF_BASES = {
    "He": (2, [(0.1, 2.5, 10)]),
    "Be": (4, [(0.05, 2.6, 12)]),
    "Ne": (10, [(0.12, 2.6, 12), (0.15, 2.6, 8)]),
    "Mg": (12, [(0.04, 2.6, 14), (0.08, 2.6, 9)]),
    "Ar": (18, [(0.05, 2.6, 15), (0.06, 2.6, 10)]),
    "Ca": (20, [(0.02, 2.6, 16), (0.05, 2.6, 11)]),
    "Zn": (30, [(0.03, 2.7, 17), (0.06, 2.6, 12), (0.15, 2.6, 7)]),
    "Kr": (36, [(0.05, 2.7, 17), (0.06, 2.6, 13), (0.2, 2.6, 8)]),
}


def exponents(element):
    return [even_tempered(*spec) for spec in DHF_BASES[element][1]]


def pyscf_basis(element):
    """The same uncontracted basis in PySCF's format (one primitive per shell)."""
    return {element: [[l, [float(z), 1.0]] for l, exps in enumerate(exponents(element)) for z in exps]}


#: separate exponents per κ symmetry (s1/2; p1/2 and p3/2 differ): element -> (Z, s, p1/2, p3/2)
KAPPA_BASES = {"Ne": (10, (0.12, 2.6, 10), (0.2, 2.6, 7), (0.12, 2.5, 6))}


def kappa_exponents(element):
    """[s, (p1/2, p3/2)]: the per-l list with a per-κ pair for l = 1."""
    _, s, p12, p32 = KAPPA_BASES[element]
    return [even_tempered(*s), (even_tempered(*p12), even_tempered(*p32))]


def pyscf_kappa_basis(element):
    """The same in PySCF's format: [l, kappa, [exp, 1]] (libcint: kappa > 0 is j = l-1/2 only,
    kappa < 0 is j = l+1/2 only)."""
    s, (p12, p32) = kappa_exponents(element)
    return {
        element: [[0, [float(z), 1.0]] for z in s]
        + [[1, 1, [float(z), 1.0]] for z in p12]
        + [[1, -2, [float(z), 1.0]] for z in p32]
    }
