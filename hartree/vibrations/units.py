"""Physical constants and unit conversions of the vibrational analysis and thermochemistry.

Everything is computed in atomic units (hartree, bohr) with masses in unified atomic mass
units (u); the constants below convert to SI, wavenumbers, km/mol and kcal/mol.  The
default set, :data:`CODATA`, is read from ``scipy.constants`` (the CODATA set of the
installed scipy: CODATA 2022 from scipy 1.15 on; ``CODATA.source`` names the scipy
version).  A :class:`PhysicalConstants` with other values (e.g. those of another program,
to compare with it bit for bit) can be passed to the analysis and the thermochemistry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: One thermochemical calorie in joule (exact by definition).
CALORIE_IN_JOULE = 4.184


@dataclass(frozen=True)
class PhysicalConstants:
    """The constants the analysis needs, SI units.

    hartree_joule      J per hartree
    bohr_meter         m per bohr
    atomic_mass_kg     kg per u (the atomic mass constant)
    planck             h, J s
    boltzmann          k, J/K
    avogadro           N_A, 1/mol
    speed_of_light     c, m/s
    elementary_charge  e, C
    vacuum_permittivity  epsilon_0, F/m
    source             where the values come from (recorded in the results)
    """

    hartree_joule: float
    bohr_meter: float
    atomic_mass_kg: float
    planck: float
    boltzmann: float
    avogadro: float
    speed_of_light: float
    elementary_charge: float
    vacuum_permittivity: float
    source: str

    @property
    def boltzmann_hartree(self) -> float:
        """k in Eh/K (per molecule; the gas constant R per molecule)."""
        return self.boltzmann / self.hartree_joule

    @property
    def angular_frequency_au_to_wavenumber(self) -> float:
        """cm^-1 per sqrt(Eh / (bohr^2 u)): omega = sqrt(lambda) for an eigenvalue lambda of
        the mass-weighted Hessian, nu~ = omega / (2 pi c), c in cm/s."""
        omega_si = math.sqrt(self.hartree_joule / (self.atomic_mass_kg * self.bohr_meter**2))  # rad/s
        return omega_si / (2.0 * math.pi * self.speed_of_light * 100.0)

    @property
    def wavenumber_hartree(self) -> float:
        """Eh per cm^-1 (h c nu~ with c in cm/s)."""
        return self.planck * self.speed_of_light * 100.0 / self.hartree_joule

    @property
    def wavenumber_kelvin(self) -> float:
        """K per cm^-1: the vibrational temperature h c nu~ / k of one wavenumber."""
        return self.planck * self.speed_of_light * 100.0 / self.boltzmann

    @property
    def hartree_kcal_mol(self) -> float:
        """kcal/mol per Eh (per molecule times N_A)."""
        return self.hartree_joule * self.avogadro / (1000.0 * CALORIE_IN_JOULE)

    @property
    def hartree_joule_mol(self) -> float:
        """J/mol per Eh."""
        return self.hartree_joule * self.avogadro

    @property
    def ir_intensity_km_mol(self) -> float:
        """km/mol per (e^2 / u): the integrated absorption coefficient of a fundamental,
        A = N_A pi / (3 c^2) (d mu / d Q)^2 / (4 pi epsilon_0) (Wilson, Decius & Cross,
        Molecular Vibrations, McGraw-Hill 1955, ch. 7; in this form e.g. Neugebauer, Reiher,
        Kind & Hess, J. Comput. Chem. 23, 895 (2002), eq. 32), with d mu / d Q in e per
        sqrt(u) (e bohr per bohr sqrt(u)); about 974.88."""
        e = self.elementary_charge
        si = self.avogadro * e**2 / (12.0 * self.vacuum_permittivity * self.speed_of_light**2 * self.atomic_mass_kg)
        return si / 1000.0  # m/mol -> km/mol

    @property
    def force_constant_mdyn_angstrom(self) -> float:
        """mdyn/Angstrom per Eh/bohr^2 (1 mdyn/Angstrom = 100 N/m)."""
        return self.hartree_joule / self.bohr_meter**2 / 100.0


def _codata():
    import scipy
    import scipy.constants as sc

    value = sc.physical_constants
    return PhysicalConstants(
        hartree_joule=value["Hartree energy"][0],
        bohr_meter=value["Bohr radius"][0],
        atomic_mass_kg=value["atomic mass constant"][0],
        planck=sc.h,
        boltzmann=sc.k,
        avogadro=sc.N_A,
        speed_of_light=sc.c,
        elementary_charge=sc.e,
        vacuum_permittivity=value["vacuum electric permittivity"][0],
        source=f"CODATA as in scipy.constants {scipy.__version__}",
    )


#: The default constants: CODATA from scipy.constants (module docstring).
CODATA = _codata()
