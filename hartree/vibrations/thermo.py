"""Ideal-gas rigid-rotor harmonic-oscillator (RRHO) thermochemistry, per molecule.

Standard statistical thermodynamics (McQuarrie, Statistical Mechanics, Harper & Row 1976,
ch. 8-9; the same formulas as Gaussian's "Thermochemistry in Gaussian", Ochterski 2000, and
PySCF's ``hessian.thermo``), with k the Boltzmann constant (per molecule, Eh/K) and
theta_i = h c nu~_i / k the vibrational temperatures:

* electronic: q = 2S + 1 (the spin multiplicity; no excited states), S = k ln(2S + 1),
  E = H = E0 (the SCF energy);
* translational: q = (2 pi m k T / h^2)^(3/2) k T / p,  S = k (ln q + 5/2),  E = 3/2 kT,
  H = 5/2 kT (the p V = kT of the ideal gas is put here), Cv = 3/2 k, Cp = 5/2 k;
* rotational, nonlinear: q = sqrt(pi) / sigma (kT / h)^(3/2) / sqrt(A B C) (A, B, C in Hz),
  S = k (ln q + 3/2), E = H = 3/2 kT, Cv = Cp = 3/2 k;
  linear: q = kT / (sigma h B), S = k (ln q + 1), E = H = kT, Cv = Cp = k (B from the
  geometric mean of the two equal moments); atom: nothing;
* vibrational, real frequencies only (imaginary ones are excluded and listed):
  ZPE = sum h c nu~_i / 2,  E = H = ZPE + k sum theta_i / (exp(theta_i / T) - 1),
  S = k sum [x_i / (exp(x_i) - 1) - ln(1 - exp(-x_i))],  x_i = theta_i / T,
  Cv = Cp = k sum x_i^2 exp(x_i) / (exp(x_i) - 1)^2.

Totals: E = E0 + E_trans + E_rot + E_vib, H = E + kT, G = H - T S.

Quasi-RRHO (``qrrho``): below ~100 cm^-1 the harmonic entropy of a mode diverges as
nu -> 0.  Grimme (Chem. Eur. J. 18, 9955 (2012), eqs. 4-7) interpolates each mode's entropy
between the harmonic S_V and that of a free rotor S_R with the moment of inertia
mu = h / (8 pi^2 nu) of the mode, damped by an average molecular moment B_av = 1e-44 kg m^2,
mu' = mu B_av / (mu + B_av),  S_R = k (1/2 + ln sqrt(8 pi^3 mu' k T / h^2)),
with the weight w = 1 / (1 + (nu0 / nu)^4), nu0 = ``qrrho_cutoff`` (100 cm^-1):
S_vib = sum [w S_V + (1 - w) S_R].  'head-gordon' also interpolates the vibrational
energy the same way (Li, Gomes, Sharada, Bell & Head-Gordon, J. Phys. Chem. C 119, 1840
(2015), eq. 3): E_vib = sum [w E_V + (1 - w) kT / 2] with E_V = h c nu~ / 2 + k theta /
(exp(theta / T) - 1) the harmonic energy of the mode (its ZPE included) and kT / 2 that of
a one-dimensional free rotor.  The ZPE reported stays the harmonic one, and the heat
capacities stay harmonic.  Frequency scale factors multiply every frequency used here.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .result import Contribution, HarmonicAnalysis, Thermochemistry
from .units import CODATA

#: Standard state of the thermochemistry: 298.15 K and one atmosphere (101325 Pa).
STANDARD_TEMPERATURE = 298.15
STANDARD_PRESSURE = 101325.0
#: Grimme's average molecular moment of inertia for the free-rotor entropy, kg m^2.
GRIMME_AVERAGE_MOMENT = 1e-44
#: Default cut-off nu0 (cm^-1) of the qRRHO damping function and its exponent.
QRRHO_CUTOFF = 100.0
QRRHO_EXPONENT = 4
QRRHO_MODES = ("grimme", "head-gordon")


def _contribution(energy, entropy, cv, temperature):
    """A Contribution with H = E, Cp = Cv and G = H - T S (all but translation)."""
    return Contribution(
        energy=energy, enthalpy=energy, entropy=entropy, cv=cv, cp=cv, gibbs=energy - temperature * entropy
    )


def translational(total_mass, temperature, pressure, constants=CODATA):
    """Contribution of translation for a molecule of ``total_mass`` u (H = E + kT, Cp = Cv + k)."""
    c = constants
    kt = c.boltzmann * temperature
    q = (2.0 * np.pi * total_mass * c.atomic_mass_kg * kt / c.planck**2) ** 1.5 * kt / pressure
    r = c.boltzmann_hartree
    entropy = r * (np.log(q) + 2.5)
    enthalpy = 2.5 * r * temperature
    return Contribution(
        energy=1.5 * r * temperature,
        enthalpy=enthalpy,
        entropy=entropy,
        cv=1.5 * r,
        cp=2.5 * r,
        gibbs=enthalpy - temperature * entropy,
    )


def rotational(moments, rotor, symmetry_number, temperature, constants=CODATA):
    """Contribution of rotation: ``moments`` (3,) principal moments u bohr^2 (ascending)."""
    c = constants
    r = c.boltzmann_hartree
    if rotor == "atom":
        return _contribution(0.0, 0.0, 0.0, temperature)
    moments_si = np.asarray(moments, dtype=np.float64) * c.atomic_mass_kg * c.bohr_meter**2
    kt_over_h = c.boltzmann * temperature / c.planck
    if rotor == "linear":
        inertia = np.sqrt(moments_si[1] * moments_si[2])
        b_hz = c.planck / (8.0 * np.pi**2 * inertia)
        q = kt_over_h / (symmetry_number * b_hz)
        return _contribution(r * temperature, r * (np.log(q) + 1.0), r, temperature)
    abc_hz = c.planck / (8.0 * np.pi**2 * moments_si)
    q = np.sqrt(np.pi) / symmetry_number * kt_over_h**1.5 / np.sqrt(np.prod(abc_hz))
    return _contribution(1.5 * r * temperature, r * (np.log(q) + 1.5), 1.5 * r, temperature)


def qrrho_weights(frequencies, cutoff=QRRHO_CUTOFF):
    """Grimme's damping w = 1 / (1 + (nu0 / nu)^4) of each (positive) frequency, cm^-1."""
    nu = np.asarray(frequencies, dtype=np.float64)
    return 1.0 / (1.0 + (cutoff / nu) ** QRRHO_EXPONENT)


def free_rotor_entropy(frequencies, temperature, constants=CODATA):
    """Grimme's free-rotor entropy of each mode (module docstring), Eh/K."""
    c = constants
    nu_hz = np.asarray(frequencies, dtype=np.float64) * c.speed_of_light * 100.0
    mu = c.planck / (8.0 * np.pi**2 * nu_hz)
    mu_eff = mu * GRIMME_AVERAGE_MOMENT / (mu + GRIMME_AVERAGE_MOMENT)
    arg = 8.0 * np.pi**3 * mu_eff * c.boltzmann * temperature / c.planck**2
    return c.boltzmann_hartree * (0.5 + np.log(np.sqrt(arg)))


def vibrational(frequencies, temperature, constants=CODATA, qrrho=None, cutoff=QRRHO_CUTOFF):
    """(Contribution, ZPE in Eh) of the harmonic modes with ``frequencies`` (cm^-1, > 0)."""
    c = constants
    r = c.boltzmann_hartree
    nu = np.asarray(frequencies, dtype=np.float64)
    zpe_modes = 0.5 * nu * c.wavenumber_hartree
    x = nu * c.wavenumber_kelvin / temperature
    em1 = np.expm1(x)
    energy_modes = zpe_modes + r * temperature * x / em1
    entropy_modes = r * (x / em1 - np.log(-np.expm1(-x)))
    cv = float(np.sum(r * x**2 * np.exp(x) / em1**2)) if nu.size else 0.0
    if qrrho is not None:
        w = qrrho_weights(nu, cutoff)
        entropy_modes = w * entropy_modes + (1.0 - w) * free_rotor_entropy(nu, temperature, c)
        if qrrho == "head-gordon":
            energy_modes = w * energy_modes + (1.0 - w) * 0.5 * r * temperature
    part = _contribution(float(np.sum(energy_modes)), float(np.sum(entropy_modes)), cv, temperature)
    return part, float(np.sum(zpe_modes))


def thermochemistry(
    analysis: HarmonicAnalysis,
    energy: float,
    multiplicity: int = 1,
    temperature: float = STANDARD_TEMPERATURE,
    pressure: float = STANDARD_PRESSURE,
    *,
    qrrho: str | None = None,
    qrrho_cutoff: float = QRRHO_CUTOFF,
    constants=None,
) -> Thermochemistry:
    """Ideal-gas thermochemistry (module docstring) from a :class:`HarmonicAnalysis`.

    energy: E0, the electronic (SCF) energy, Eh; multiplicity: 2S + 1; temperature K (> 0);
    pressure Pa (> 0); qrrho: None, 'grimme' (entropy) or 'head-gordon' (entropy and
    energy); qrrho_cutoff: nu0 in cm^-1; constants: default those of the analysis.
    The frequencies used are ``analysis.scaled_frequencies`` above zero.
    """
    c = analysis.constants if constants is None else constants
    if not (np.isfinite(temperature) and temperature > 0):
        raise InputError(f"the temperature must be positive (K), got {temperature!r}")
    if not (np.isfinite(pressure) and pressure > 0):
        raise InputError(f"the pressure must be positive (Pa), got {pressure!r}")
    if qrrho is not None and qrrho not in QRRHO_MODES:
        raise InputError(f"unknown qRRHO treatment {qrrho!r}; choose {' or '.join(QRRHO_MODES)}")
    if not (np.isfinite(qrrho_cutoff) and qrrho_cutoff > 0):
        raise InputError(f"the qRRHO cut-off must be a positive frequency (cm^-1), got {qrrho_cutoff!r}")
    if int(multiplicity) < 1:
        raise InputError(f"the multiplicity must be at least 1, got {multiplicity!r}")
    r = c.boltzmann_hartree
    freqs = analysis.scaled_frequencies
    used, imaginary = freqs[freqs > 0], freqs[freqs < 0]
    parts = {
        "electronic": _contribution(float(energy), r * np.log(int(multiplicity)), 0.0, temperature),
        "translational": translational(float(np.sum(analysis.masses)), temperature, pressure, c),
        "rotational": rotational(analysis.moments_of_inertia, analysis.rotor, analysis.symmetry_number, temperature, c),
    }
    parts["vibrational"], zpe = vibrational(used, temperature, c, qrrho, qrrho_cutoff)

    def total(name):
        return float(sum(getattr(p, name) for p in parts.values()))

    return Thermochemistry(
        temperature=float(temperature),
        pressure=float(pressure),
        electronic_energy=float(energy),
        zero_point_energy=zpe,
        contributions=parts,
        internal_energy=total("energy"),
        enthalpy=total("enthalpy"),
        entropy=total("entropy"),
        gibbs_free_energy=total("gibbs"),
        cv=total("cv"),
        cp=total("cp"),
        frequencies_used=used,
        imaginary_frequencies=imaginary,
        symmetry_number=int(analysis.symmetry_number),
        rotor=analysis.rotor,
        multiplicity=int(multiplicity),
        qrrho=qrrho,
        qrrho_cutoff=float(qrrho_cutoff),
        scale_factor=float(analysis.scale_factor),
        constants_source=c.source,
    )
