"""What every shell-pair builder shares: the libcint angular factor f(l) and the Gaussian
product theorem (e.g. Helgaker, Jørgensen, Olsen, "Molecular Electronic-Structure Theory",
eq. 9.2.10):

    exp(-a r_A²) exp(-b r_B²) = K_AB exp(-ζ r_P²),
    ζ = a + b,  P = (a A + b B) / ζ,  K_AB = exp(-μ |A - B|²),  μ = a b / ζ.

A cartesian function x^i y^j z^k R(r) of PySCF / libcint carries f(l): 1/sqrt(4π) for
l = 0, sqrt(3/(4π)) for l = 1, 1 otherwise (see :mod:`hartree.basis.angular`).

Users: the CPU pair tables (:mod:`hartree.integrals.eri_pairs`), the one-electron and the
three-index kernels, the GPU pair classes (:mod:`hartree.gpu.pairs`) and the GPU one-electron
and three-index launchers.  Each builder keeps its own primitive-pair cutoff (a property of
its kernels): ERI pairs drop K_AB < 1e-18 (``eri_pairs.PRIM_PAIR_CUTOFF``), the one-electron
kernels μ|A-B|² > 60, the three-index kernels |c_a c_b K_AB| below their cutoff, the GPU
pairs a weight |K| (π/ζ)^(3/2) relative to the pair's largest; all of them evaluate μ|A-B|²
and P with the functions here.

The arithmetic functions exist twice from one definition: as numba functions for the
kernels (:func:`product_exponent`, :func:`product_centre`) and as plain Python for numpy
arrays of any broadcastable shapes (``*_array``); both evaluate the same operations in the
same order, so the CPU and GPU pair data agree bit for bit where the inputs do.
"""

import math

import numba
import numpy as np

#: f(0) and f(1) of libcint; f(l >= 2) = 1
ANGULAR_FACTOR_S = 1.0 / math.sqrt(4.0 * math.pi)
ANGULAR_FACTOR_P = math.sqrt(3.0 / (4.0 * math.pi))


@numba.njit(cache=True)
def angular_factor(l):
    """libcint's f(l) of cartesian functions (dimensionless): 1/sqrt(4π) for s, sqrt(3/(4π))
    for p, 1 otherwise.  A numba function, callable from Python too."""
    if l == 0:
        return ANGULAR_FACTOR_S
    if l == 1:
        return ANGULAR_FACTOR_P
    return 1.0


def angular_factors(n):
    """f(l) for l = 0 .. n-1, float64 (n,) (a table for kernels that index it by l)."""
    out = np.ones(n)
    out[:2] = (ANGULAR_FACTOR_S, ANGULAR_FACTOR_P)[:n]
    return out


def product_exponent_array(a, b, r2):
    """μ |A-B|² = a b / (a + b) |A-B|² (dimensionless; K_AB = exp(-this)), for exponents a, b
    (bohr^-2) and r2 = |A-B|² (bohr²): scalars or broadcastable numpy arrays."""
    return a * b / (a + b) * r2


def product_centre_array(a, b, A, B):
    """Gaussian product centre P = (a A + b B) / (a + b) (bohr), one coordinate or
    broadcastable numpy arrays."""
    return (a * A + b * B) / (a + b)


#: numba versions (inlined into the kernels) of the functions above
product_exponent = numba.njit(inline="always")(product_exponent_array)
product_centre = numba.njit(inline="always")(product_centre_array)
