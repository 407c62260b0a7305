"""Result objects of the vibrational analysis: results only, no methods that compute
more than a unit conversion or a selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class HarmonicAnalysis:
    """Harmonic frequencies and normal modes of one Hessian (:func:`harmonic_analysis`).

    nvib = 3N - 6 (3N - 5 linear, 0 for an atom) modes, in ascending order of eigenvalue.

    frequencies          (nvib,) cm^-1, unscaled; imaginary ones as negative numbers
    eigenvalues          (nvib,) eigenvalues of the projected mass-weighted Hessian, Eh/(bohr^2 u)
    normal_modes         (nvib, N, 3) cartesian displacements, unit length per mode
    mass_weighted_modes  (3N, nvib) orthonormal eigenvectors of the mass-weighted Hessian
    reduced_masses       (nvib,) u, 1 / |M^-1/2 L_k|^2
    force_constants      (nvib,) mdyn/Angstrom, reduced mass times eigenvalue
    ir_intensities       (nvib,) km/mol, or None without dipole derivatives
    dipole_derivatives   (3N, 3) d mu_a / d x_i, e (atomic units), or None
    masses               (N,) u
    coords               (N, 3) bohr, numbers (N,) atomic numbers
    moments_of_inertia   (3,) principal moments, u bohr^2, ascending
    point_group          Schoenflies symbol; symmetry_number: rotational sigma
    rotor                'atom' | 'linear' | 'nonlinear'
    scale_factor         frequency scale factor (1.0: none)
    hessian              (3N, 3N) the symmetrised cartesian Hessian analysed, Eh/bohr^2
    constants            the PhysicalConstants used
    """

    frequencies: np.ndarray
    eigenvalues: np.ndarray
    normal_modes: np.ndarray
    mass_weighted_modes: np.ndarray
    reduced_masses: np.ndarray
    force_constants: np.ndarray
    ir_intensities: np.ndarray | None
    dipole_derivatives: np.ndarray | None
    masses: np.ndarray
    coords: np.ndarray
    numbers: np.ndarray
    moments_of_inertia: np.ndarray
    point_group: str
    symmetry_number: int
    rotor: str
    scale_factor: float
    hessian: np.ndarray
    constants: Any

    @property
    def scaled_frequencies(self) -> np.ndarray:
        """(nvib,) cm^-1, the frequencies times ``scale_factor``."""
        return self.frequencies * self.scale_factor

    @property
    def imaginary_frequencies(self) -> np.ndarray:
        """The (scaled) frequencies below zero, cm^-1 (negative numbers)."""
        f = self.scaled_frequencies
        return f[f < 0]


@dataclass
class Contribution:
    """One part of the ideal-gas thermochemistry (per molecule, atomic units).

    energy (E, Eh), enthalpy (H, Eh), entropy (S, Eh/K), cv and cp (heat capacities, Eh/K),
    gibbs (G = H - T S, Eh).  The electronic part's E and H include the electronic energy.
    """

    energy: float
    enthalpy: float
    entropy: float
    cv: float
    cp: float
    gibbs: float


@dataclass
class Thermochemistry:
    """Ideal-gas rigid-rotor harmonic-oscillator thermochemistry (:func:`thermochemistry`).

    temperature (K), pressure (Pa); electronic_energy E0 (Eh, the SCF energy);
    zero_point_energy (Eh); contributions: {'electronic', 'translational', 'rotational',
    'vibrational'} -> :class:`Contribution`; the totals internal_energy (E = E0 + thermal
    energy including the ZPE), enthalpy (H = E + kT), entropy (Eh/K), gibbs_free_energy
    (G = H - T S), cv, cp (Eh/K); frequencies_used (cm^-1, scaled, real) and
    imaginary_frequencies (cm^-1, excluded); symmetry_number, rotor, multiplicity;
    qrrho (None, 'grimme' or 'head-gordon') and qrrho_cutoff (cm^-1); scale_factor;
    constants_source.
    """

    temperature: float
    pressure: float
    electronic_energy: float
    zero_point_energy: float
    contributions: dict
    internal_energy: float
    enthalpy: float
    entropy: float
    gibbs_free_energy: float
    cv: float
    cp: float
    frequencies_used: np.ndarray
    imaginary_frequencies: np.ndarray
    symmetry_number: int
    rotor: str
    multiplicity: int
    qrrho: str | None
    qrrho_cutoff: float
    scale_factor: float
    constants_source: str

    @property
    def thermal_correction_energy(self) -> float:
        """E - E0, Eh (ZPE included)."""
        return self.internal_energy - self.electronic_energy

    @property
    def thermal_correction_enthalpy(self) -> float:
        """H - E0, Eh."""
        return self.enthalpy - self.electronic_energy

    @property
    def thermal_correction_gibbs(self) -> float:
        """G - E0, Eh."""
        return self.gibbs_free_energy - self.electronic_energy


@dataclass
class FrequencyResult:
    """Hessian, harmonic analysis and thermochemistry of one molecule (:func:`frequencies`).

    method, basis (name), energy (Eh, the reference SCF), hessian (3N, 3N) Eh/bohr^2,
    dipole_derivatives (3N, 3) e, analysis (:class:`HarmonicAnalysis`), thermochemistry
    (:class:`Thermochemistry`), gradient: the reference :class:`GradientResult` (its
    ``scf`` the reference SCFResult), step (bohr), displacements (6N), resumed (how many
    came from a checkpoint), hessian_asymmetry (max |H - H^T| / 2 before symmetrising,
    Eh/bohr^2: a measure of the numerical noise), wall_time (s), executor (a description),
    notes (sentences for the user).
    """

    method: str
    basis: str
    energy: float
    hessian: np.ndarray
    dipole_derivatives: np.ndarray
    analysis: HarmonicAnalysis
    thermochemistry: Thermochemistry
    gradient: Any
    step: float
    displacements: int
    resumed: int
    hessian_asymmetry: float
    wall_time: float
    executor: str
    notes: tuple = field(default=())

    @property
    def molecule(self):
        """The molecule (coordinates in bohr)."""
        return self.gradient.molecule

    @property
    def frequencies(self) -> np.ndarray:
        """(nvib,) harmonic frequencies, cm^-1, unscaled, imaginary ones negative."""
        return self.analysis.frequencies

    @property
    def normal_modes(self) -> np.ndarray:
        """(nvib, N, 3) unit-length cartesian displacements."""
        return self.analysis.normal_modes

    @property
    def ir_intensities(self) -> np.ndarray:
        """(nvib,) km/mol."""
        return self.analysis.ir_intensities

    @property
    def reduced_masses(self) -> np.ndarray:
        """(nvib,) u."""
        return self.analysis.reduced_masses

    @property
    def zero_point_energy(self) -> float:
        """Eh, from the scaled real frequencies."""
        return self.thermochemistry.zero_point_energy
