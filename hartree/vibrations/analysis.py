"""Harmonic vibrational analysis of a cartesian Hessian.

For a Hessian H (3N x 3N, Eh/bohr^2) and masses m (u) of N atoms at positions R (bohr):

1. Mass weighting, H_mw = M^-1/2 H M^-1/2 with M = diag(m_1, m_1, m_1, m_2, ...), in
   Eh/(bohr^2 u).
2. Translations and rotations projected out (Eckart-Sayvetz conditions; Wilson, Decius &
   Cross, Molecular Vibrations, McGraw-Hill 1955, §11-1; Miller, Handy & Adams, J. Chem.
   Phys. 72, 99 (1980), eqs. 4.6-4.10): the 3N-vectors of infinitesimal translations,
   sqrt(m_a) e_k, and rotations about the centre of mass, sqrt(m_a) (e_k x (R_a - R_com)),
   span the external space D (3 + 3 vectors; 3 + 2 for a linear molecule, 3 for an atom).
   H_mw is diagonalised in the orthonormal complement B of D:  B^T H_mw B c = lambda c.
   (P H_mw P, P = 1 - D D^T, then has exactly 6 (5) zero eigenvalues; the gradient term of
   Miller, Handy & Adams for non-stationary points is not added: frequencies away from a
   stationary point are not physical, and a warning says so.)
3. Frequencies nu~ = sqrt(lambda) / (2 pi c) in cm^-1; a negative lambda gives an imaginary
   frequency, reported as the negative number -sqrt(|lambda|) / (2 pi c).
4. Normal modes: the mass-weighted eigenvectors L = B c (orthonormal) and the cartesian
   displacements X = M^-1/2 L.  ``normal_modes`` holds X normalised to unit length per
   mode (the convention of Gaussian and of Molden viewers); the reduced mass of mode k is
   mu_k = 1 / |X_k|^2 (u), its force constant k_k = mu_k lambda_k (reported in mdyn/Angstrom).
5. IR intensities (double harmonic approximation): with the dipole derivatives
   P_ai = d mu_a / d x_i (e, atomic units), d mu / d Q_k = sum_i P_i M_i^-1/2 L_ik and
   A_k = N_A pi / (3 c^2 4 pi epsilon_0) |d mu / d Q_k|^2 in km/mol
   (:attr:`hartree.vibrations.units.PhysicalConstants.ir_intensity_km_mol`).
   For ions the dipole depends on the origin, but every vibrational mode keeps the centre
   of mass fixed (it is orthogonal to the translations), so d mu / d Q_k about a fixed
   origin equals that about the moving centre of mass: the intensities are origin free.

Frequency scale factors multiply the frequencies (``scaled_frequencies``); the modes and
intensities are those of the unscaled Hessian.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .masses import check_masses, default_masses
from .result import HarmonicAnalysis
from .symmetry import SYMMETRY_TOLERANCE, centred, point_group
from .units import CODATA


def inertia_tensor(coords, masses):
    """(3, 3) moment of inertia tensor about the centre of mass, u bohr^2."""
    r = centred(coords, masses)
    m = np.asarray(masses, dtype=np.float64)
    return np.eye(3) * np.einsum("a,ak,ak->", m, r, r) - np.einsum("a,ai,aj->ij", m, r, r)


def principal_moments(coords, masses):
    """(3,) principal moments of inertia (u bohr^2), ascending, and (3, 3) axes (columns)."""
    return np.linalg.eigh(inertia_tensor(coords, masses))


def external_space(coords, masses, rotor):
    """(3N, n_ext) orthonormal basis of the mass-weighted translations and rotations:
    n_ext = 3 (atom), 5 (linear), 6 (nonlinear)."""
    coords = np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    m = np.asarray(masses, dtype=np.float64)
    natm = len(m)
    r = centred(coords, m)
    root = np.sqrt(m)
    vectors = []
    for k in range(3):
        t = np.zeros((natm, 3))
        t[:, k] = root
        vectors.append(t.ravel())
    if rotor != "atom":
        axes = principal_moments(coords, m)[1]
        for k in range(3):
            vectors.append((root[:, None] * np.cross(axes[:, k], r)).ravel())
    d = np.array(vectors).T
    n_ext = {"atom": 3, "linear": 5, "nonlinear": 6}[rotor]
    u, _, _ = np.linalg.svd(d, full_matrices=True)
    # the n_ext largest singular directions: for a linear molecule the rotation about its
    # axis (the smallest moment) is (nearly) zero and falls off the end
    return u[:, :n_ext], u[:, n_ext:]


def projected_hessian(hessian, coords, masses, rotor):
    """P H_mw P (3N, 3N), Eh/(bohr^2 u): the mass-weighted Hessian with translations and
    rotations projected out (module docstring, step 2)."""
    m3 = np.repeat(np.asarray(masses, dtype=np.float64), 3)
    hmw = np.asarray(hessian) / np.sqrt(np.outer(m3, m3))
    ext, _ = external_space(coords, masses, rotor)
    p = np.eye(len(m3)) - ext @ ext.T
    return p @ hmw @ p


def _check_hessian(hessian, natm):
    h = np.asarray(hessian, dtype=np.float64)
    if h.shape == (natm, natm, 3, 3):  # PySCF's layout [atom a, atom b, x_a, x_b]
        h = h.transpose(0, 2, 1, 3).reshape(3 * natm, 3 * natm)
    if h.shape != (3 * natm, 3 * natm):
        raise InputError(f"the Hessian must have shape ({3 * natm}, {3 * natm}) for {natm} atoms, got {h.shape}")
    if not np.all(np.isfinite(h)):
        raise InputError("the Hessian has non-finite entries")
    return 0.5 * (h + h.T)


def frequencies_from_eigenvalues(eigenvalues, constants=CODATA):
    """cm^-1 for eigenvalues (Eh/(bohr^2 u)) of the mass-weighted Hessian; negative
    eigenvalues give negative (imaginary) frequencies."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    return np.sign(lam) * np.sqrt(np.abs(lam)) * constants.angular_frequency_au_to_wavenumber


def harmonic_analysis(
    hessian,
    molecule,
    *,
    masses=None,
    dipole_derivatives=None,
    scale=1.0,
    symmetry_tolerance=SYMMETRY_TOLERANCE,
    constants=CODATA,
) -> HarmonicAnalysis:
    """The harmonic analysis of a cartesian Hessian (module docstring).

    hessian             (3N, 3N) Eh/bohr^2, rows/columns ordered atom by atom (x, y, z);
                        PySCF's (N, N, 3, 3) layout is accepted too; symmetrised
    molecule            :class:`hartree.Molecule` (coordinates in bohr)
    masses              (N,) u; default the most abundant isotopes (:mod:`.masses`)
    dipole_derivatives  (3N, 3) d mu_a / d x_i in e (atomic units), or None (no IR)
    scale               frequency scale factor (> 0) for ``scaled_frequencies``
    symmetry_tolerance  bohr, for the point group and the linear-molecule test
    constants           :class:`hartree.vibrations.units.PhysicalConstants`
    """
    natm = molecule.natm
    masses = default_masses(molecule.numbers) if masses is None else check_masses(masses, natm)
    if not (np.isfinite(scale) and scale > 0):
        raise InputError(f"the frequency scale factor must be a positive number, got {scale!r}")
    h = _check_hessian(hessian, natm)
    coords = np.asarray(molecule.coords)
    group = point_group(coords, masses, molecule.numbers, symmetry_tolerance)
    m3 = np.repeat(masses, 3)
    hmw = h / np.sqrt(np.outer(m3, m3))
    _, internal = external_space(coords, masses, group.rotor)
    eigenvalues, c = np.linalg.eigh(internal.T @ hmw @ internal)
    modes_mw = internal @ c  # (3N, nvib), orthonormal columns
    cartesian = modes_mw / np.sqrt(m3)[:, None]
    norms = np.linalg.norm(cartesian, axis=0)
    reduced = 1.0 / norms**2
    normal_modes = (cartesian / norms).T.reshape(-1, natm, 3)
    intensities = None
    apt = None
    if dipole_derivatives is not None:
        apt = np.asarray(dipole_derivatives, dtype=np.float64)
        if apt.shape != (3 * natm, 3) or not np.all(np.isfinite(apt)):
            raise InputError(f"dipole derivatives must be finite, shape ({3 * natm}, 3)")
        dmu_dq = cartesian.T @ apt  # (nvib, 3), e / sqrt(u)
        intensities = constants.ir_intensity_km_mol * np.sum(dmu_dq**2, axis=1)
    moments, _ = principal_moments(coords, masses)
    return HarmonicAnalysis(
        frequencies=frequencies_from_eigenvalues(eigenvalues, constants),
        eigenvalues=eigenvalues,
        normal_modes=normal_modes,
        mass_weighted_modes=modes_mw,
        reduced_masses=reduced,
        force_constants=reduced * eigenvalues * constants.force_constant_mdyn_angstrom,
        ir_intensities=intensities,
        dipole_derivatives=apt,
        masses=masses,
        coords=coords.copy(),
        numbers=np.asarray(molecule.numbers).copy(),
        moments_of_inertia=moments,
        point_group=group.symbol,
        symmetry_number=group.symmetry_number,
        rotor=group.rotor,
        scale_factor=float(scale),
        hessian=h,
        constants=constants,
    )


def rotational_constants(moments, constants=CODATA):
    """(3,) rotational constants B = h / (8 pi^2 c I) in cm^-1 for principal moments
    (u bohr^2); inf for a zero moment (the axis of a linear molecule, an atom)."""
    i_si = np.asarray(moments, dtype=np.float64) * constants.atomic_mass_kg * constants.bohr_meter**2
    with np.errstate(divide="ignore"):
        b_hz = np.where(i_si > 0, constants.planck / (8.0 * np.pi**2 * np.where(i_si > 0, i_si, 1.0)), np.inf)
    return b_hz / (constants.speed_of_light * 100.0)
