"""Nuclear charge models for atomic Dirac-Fock: point, Gaussian, uniform sphere.

Each model gives the radial potential moments

    U(n, p) = ∫_0^∞ r^n V(r) e^{-p r²} dr          (n even ≥ 2, p > 0 in bohr^-2)

in closed form, which is all the one-electron integrals over r^m e^{-ζ r²} need
(see :mod:`hartree.atom.radial`).  Units: bohr, hartree.

Nuclear sizes (Visscher and Dyall, At. Data Nucl. Data Tables 67, 207 (1997)):
r_rms = (0.836 A^(1/3) + 0.570) fm with A the mass number; the Gaussian exponent is
η = 3 / (2 r_rms²) (ρ ∝ e^{-η r²}), the uniform sphere radius is R = sqrt(5/3) r_rms.
Default mass numbers are those of the most abundant isotope (:data:`MASS_NUMBERS`,
the same list PySCF uses, so that its ``nucmod='G'`` is the same nucleus); the fm→bohr
factor 52917.7249 fm/bohr is the one of that paper (and of PySCF).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..errors import InputError

#: femtometres per bohr used for nuclear radii (Visscher-Dyall; PySCF uses the same)
FM_PER_BOHR = 52917.7249

#: mass number of the most abundant isotope, index = Z (0 unused), Z = 1..89
MASS_NUMBERS = (
    0,
    1,
    4,
    7,
    9,
    11,
    12,
    14,
    16,
    19,
    20,
    23,
    24,
    27,
    28,
    31,
    32,
    35,
    40,
    39,
    40,
    45,
    48,
    51,
    52,
    55,
    56,
    59,
    58,
    63,
    64,
    69,
    74,
    75,
    80,
    79,
    84,
    85,
    88,
    89,
    90,
    93,
    98,
    98,
    102,
    103,
    106,
    107,
    114,
    115,
    120,
    121,
    130,
    127,
    132,
    133,
    138,
    139,
    140,
    141,
    144,
    145,
    152,
    153,
    158,
    159,
    162,
    162,
    168,
    169,
    174,
    175,
    180,
    181,
    184,
    187,
    192,
    193,
    195,
    197,
    202,
    205,
    208,
    209,
    209,
    210,
    222,
    223,
    226,
    227,
)

MODELS = ("point", "gaussian", "sphere")


@dataclass(frozen=True)
class Nucleus:
    """A nucleus of charge ``charge`` (a.u.) and model ``model``.

    ``parameter``: Gaussian exponent η (bohr^-2) for ``gaussian``, radius R (bohr) for
    ``sphere``, unused (0) for ``point``.
    """

    charge: float
    model: str = "point"
    parameter: float = 0.0

    def __post_init__(self):
        if self.model not in MODELS:
            raise InputError(f"nuclear model '{self.model}' is unknown; use one of {', '.join(MODELS)}")
        if self.model != "point" and not self.parameter > 0:
            raise InputError(f"the {self.model} nucleus needs a positive size parameter")


def rms_radius(mass_number):
    """Visscher-Dyall root-mean-square nuclear radius (bohr) for mass number A."""
    return (0.836 * mass_number ** (1.0 / 3.0) + 0.570) / FM_PER_BOHR


def make_nucleus(z, model="point", mass_number=None, parameter=None):
    """Build a :class:`Nucleus` for atomic number ``z``.

    ``parameter`` overrides the size (η in bohr^-2 for gaussian, R in bohr for sphere);
    otherwise it follows from ``mass_number`` (default :data:`MASS_NUMBERS`).
    """
    if model == "point":
        return Nucleus(float(z), "point", 0.0)
    if parameter is None:
        if mass_number is None:
            if not 1 <= z < len(MASS_NUMBERS):
                raise InputError(f"no default mass number for Z = {z}; give the nuclear size")
            mass_number = MASS_NUMBERS[z]
        r = rms_radius(mass_number)
        parameter = 1.5 / r**2 if model == "gaussian" else math.sqrt(5.0 / 3.0) * r
    return Nucleus(float(z), model, float(parameter))


def _cos_power_integral(m, theta):
    """C_m(θ) = ∫_0^θ cos^m t dt for odd m ≥ 1, by the positive recursion
    C_m = cos^{m-1}θ sinθ / m + (m-1)/m C_{m-2}, C_1 = sin θ (vectorized over θ)."""
    s, c = np.sin(theta), np.cos(theta)
    value = s.copy()
    for j in range(3, m + 1, 2):
        value = c ** (j - 1) * s / j + (j - 1) / j * value
    return value


def potential_moment(nucleus, n, p):
    """U(n, p) = ∫_0^∞ r^n V(r) e^{-p r²} dr for the nucleus' potential V (hartree).

    n: even integer ≥ 2; p: array of exponents (bohr^-2).  Returns an array like p.
    Point: V = -Z/r, U = -Z Γ(n/2) / (2 p^{n/2}).
    Gaussian: V = -Z erf(√η r)/r; with erf(ar)/r = (2/√π)∫_0^a e^{-t²r²}dt,
    U = -Z (2/√π) Γ(N+1/2)/2 ∫_0^{√η} (p+t²)^{-N-1/2} dt (N = n/2), and t = √p tan θ
    gives U = -Z Γ(N+1/2)/√π · p^{-N} C_{2N-1}(θ_a), tan θ_a = √(η/p).
    Sphere (radius R): V = -Z/r outside, -Z(3 - r²/R²)/(2R) inside; incomplete gammas.
    """
    p = np.asarray(p, dtype=float)
    z = nucleus.charge
    half = n / 2.0
    if nucleus.model == "point":
        return -z * math.gamma(half) / (2.0 * p**half)
    if nucleus.model == "gaussian":
        big_n = n // 2
        theta = np.arctan(np.sqrt(nucleus.parameter / p))
        return (
            -z
            * math.gamma(big_n + 0.5)
            / math.sqrt(math.pi)
            * p ** (-big_n)
            * _cos_power_integral(2 * big_n - 1, theta)
        )
    radius = nucleus.parameter
    x = p * radius**2

    def inner(m):  # ∫_0^R r^m e^{-p r²} dr
        a = (m + 1) / 2.0
        return math.gamma(a) * special.gammainc(a, x) / (2.0 * p**a)

    outer = math.gamma(half) * special.gammaincc(half, x) / (2.0 * p**half)  # ∫_R^∞ r^{n-1}
    return -z * (outer + (3.0 * inner(n) - inner(n + 2) / radius**2) / (2.0 * radius))
