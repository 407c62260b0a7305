"""Shell data of a :class:`hartree.basis.Basis` in the forms file formats want.

A Basis stores, per primitive, the coefficient C_i that multiplies the *bare*
radial primitive r^l exp(-a_i r^2) (PySCF's ``_libcint_ctr_coeff`` convention,
contraction normalised to 1).  File formats (Molden, QCSchema, basis-set
libraries) instead list coefficients c_i for *normalised* primitives,
c_i = C_i / N(l, a_i), with N(l, a) = 1 / sqrt(int_0^inf r^(2l+2) exp(-2 a r^2) dr).
The functions here do that conversion and group shells by atom.
"""

from math import sqrt

import numpy as np

from ..basis import primitive_norm
from ..errors import InputError


def shell_primitives(basis, shell):
    """(exponents, coefficients for normalised primitives) of one shell, as float arrays."""
    start = int(basis.shell_prim_start[shell])
    stop = start + int(basis.shell_nprim[shell])
    l = int(basis.shell_l[shell])
    exponents = np.asarray(basis.exponents[start:stop], dtype=float)
    coefficients = np.asarray(basis.coefficients[start:stop], dtype=float) / primitive_norm(l, exponents)
    return exponents, coefficients


def shells_by_atom(basis, natm):
    """List, per atom, of the shell indices centred on it (in basis order)."""
    groups = [[] for _ in range(natm)]
    for shell, atom in enumerate(np.asarray(basis.shell_atom)):
        atom = int(atom)
        if not 0 <= atom < natm:
            raise InputError(f"basis shell {shell} refers to atom {atom}, but the molecule has {natm} atoms")
        groups[atom].append(shell)
    return groups


def ao_count(l, pure):
    """Number of AOs of a shell: 2l+1 (spherical) or (l+1)(l+2)/2 (cartesian)."""
    return 2 * l + 1 if pure else (l + 1) * (l + 2) // 2


def double_factorial(n):
    """n!! for n >= -1 (with (-1)!! = 1)."""
    result = 1
    while n > 1:
        result *= n
        n -= 2
    return result


def cartesian_norm(i, j, k):
    """Norm of the PySCF cartesian AO x^i y^j z^k R(r) f(l), R radially normalised.

    For l = i+j+k >= 2 (f = 1): sqrt(4 pi (2i-1)!!(2j-1)!!(2k-1)!! / (2l+1)!!),
    e.g. sqrt(4 pi/5) for xx and sqrt(4 pi/15) for xy.  s and p AOs carry
    f(0), f(1) that make them normalised, so the norm is 1.
    """
    l = i + j + k
    if l <= 1:
        return 1.0
    angular = 4.0 * np.pi * double_factorial(2 * i - 1) * double_factorial(2 * j - 1) * double_factorial(2 * k - 1)
    return sqrt(angular / double_factorial(2 * l + 1))
