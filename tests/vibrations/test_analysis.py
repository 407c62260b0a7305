"""The harmonic analysis of a given Hessian against PySCF's ``hessian.thermo.harmonic_analysis``
on PySCF's analytic Hessian (same masses, same constants), the projection of
translations and rotations, origin independence of IR intensities, and the unit
conversions against qcelemental's CODATA constants (an independent source)."""

import numpy as np
import pytest

from hartree.errors import InputError
from hartree.molecule import Molecule
from hartree.vibrations import CODATA, harmonic_analysis
from hartree.vibrations.analysis import projected_hessian
from tests.vibrations.conftest import HCN, pyscf_constants, pyscf_hessian, pyscf_scf


def _compare_with_pyscf(molecule, hessian, pmol):
    """Our analysis and PySCF's of one Hessian with PySCF's constants and our masses."""
    from pyscf.hessian import thermo

    ours = harmonic_analysis(hessian, molecule, constants=pyscf_constants())
    natm = molecule.natm
    ref = thermo.harmonic_analysis(
        pmol, hessian.reshape(natm, 3, natm, 3).transpose(0, 2, 1, 3), mass=ours.masses, imaginary_freq=False
    )
    # 1e-9: PySCF diagonalises its Hessian as it is (one triangle), ours symmetrised
    np.testing.assert_allclose(ours.frequencies, ref["freq_wavenumber"], rtol=1e-9)
    np.testing.assert_allclose(ours.reduced_masses, ref["reduced_mass"], rtol=1e-9)
    np.testing.assert_allclose(ours.force_constants, ref["force_const_dyne"], rtol=1e-9)
    # modes: PySCF's are M^-1/2 L, ours the same normalised; compare the projectors onto
    # each set of degenerate modes (a degenerate pair may be any rotation of itself)
    theirs = (
        ref["norm_mode"] / np.linalg.norm(ref["norm_mode"].reshape(len(ours.frequencies), -1), axis=1)[:, None, None]
    )
    freqs = ours.frequencies
    for k in range(len(freqs)):
        group = np.flatnonzero(np.abs(freqs - freqs[k]) < 1e-3)
        a = ours.normal_modes[group].reshape(len(group), -1)
        b = theirs[group].reshape(len(group), -1)
        np.testing.assert_allclose(a.T @ a, b.T @ b, atol=1e-8)
    return ours


def test_water_equals_pyscf(water, water_631g_pyscf):
    mf, hessian = water_631g_pyscf
    ours = _compare_with_pyscf(water, hessian, mf.mol)
    assert ours.rotor == "nonlinear" and len(ours.frequencies) == 3 and ours.point_group == "C2v"


def test_linear_molecule_equals_pyscf():
    hcn = Molecule.from_string(HCN)
    mf = pyscf_scf(hcn, "sto-3g")
    ours = _compare_with_pyscf(hcn, pyscf_hessian(mf), mf.mol)
    assert ours.rotor == "linear" and len(ours.frequencies) == 4  # 3N - 5
    assert abs(ours.frequencies[0] - ours.frequencies[1]) < 1e-6  # the degenerate bend


def test_pyscf_layout_accepted(water, water_631g_pyscf):
    _, hessian = water_631g_pyscf
    four_index = hessian.reshape(3, 3, 3, 3).transpose(0, 2, 1, 3)
    a, b = harmonic_analysis(hessian, water), harmonic_analysis(four_index, water)
    np.testing.assert_array_equal(a.frequencies, b.frequencies)
    with pytest.raises(InputError, match="the Hessian must have shape"):
        harmonic_analysis(hessian[:6, :6], water)


@pytest.mark.parametrize("text,zeros", [("O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692", 6), (HCN, 5)])
def test_projection_leaves_exactly_the_external_zeros(text, zeros):
    """P H_mw P has exactly 6 (linear: 5) zero eigenvalues; the others are the analysis's."""
    molecule = Molecule.from_string(text)
    hessian = pyscf_hessian(pyscf_scf(molecule, "sto-3g"))
    analysis = harmonic_analysis(hessian, molecule)
    rotor = "linear" if zeros == 5 else "nonlinear"
    eigenvalues = np.linalg.eigvalsh(projected_hessian(hessian, molecule.coords, analysis.masses, rotor))
    small = np.abs(eigenvalues) < 1e-10
    assert np.count_nonzero(small) == zeros
    np.testing.assert_allclose(np.sort(eigenvalues[~small]), analysis.eigenvalues, rtol=1e-10, atol=1e-12)
    # each mode is free of translation and rotation: it keeps the centre of mass in place
    shift = np.einsum("a,kax->kx", analysis.masses, analysis.normal_modes)
    assert np.max(np.abs(shift)) < 1e-10


def test_unprojected_modes_come_back_for_a_random_hessian(water):
    """A Hessian that is not translation invariant still gives 3N - 6 modes orthogonal to
    the external space (the projection removes its translational part)."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(9, 9))
    analysis = harmonic_analysis(a + a.T, water)
    assert analysis.normal_modes.shape == (3, 3, 3)
    np.testing.assert_allclose(np.einsum("a,kax->kx", analysis.masses, analysis.normal_modes), 0.0, atol=1e-12)


def test_ir_intensities_do_not_depend_on_the_origin_for_ions(water, water_631g_pyscf):
    """For a molecule of charge q the dipole about a point moving with the centre of mass
    differs from that about a fixed origin by -q R_com: its derivatives differ by
    -q m_b / M per atom and direction.  The vibrations keep the centre of mass fixed, so
    the intensities are the same."""
    _, hessian = water_631g_pyscf
    rng = np.random.default_rng(11)
    apt = rng.normal(size=(9, 3))
    masses = harmonic_analysis(hessian, water).masses
    charge = 1.0
    shifted = apt - charge * np.kron((masses / masses.sum())[:, None], np.eye(3))
    a = harmonic_analysis(hessian, water, dipole_derivatives=apt)
    b = harmonic_analysis(hessian, water, dipole_derivatives=shifted)
    np.testing.assert_allclose(a.ir_intensities, b.ir_intensities, rtol=1e-12)


def test_one_atom_has_no_vibrations():
    atom = Molecule.from_string("Ar 0 0 0")
    analysis = harmonic_analysis(np.zeros((3, 3)), atom)
    assert analysis.rotor == "atom" and analysis.frequencies.size == 0


def test_scale_and_masses_checked(water, water_631g_pyscf):
    _, hessian = water_631g_pyscf
    analysis = harmonic_analysis(hessian, water, scale=0.9)
    np.testing.assert_allclose(analysis.scaled_frequencies, 0.9 * analysis.frequencies, rtol=1e-15)
    with pytest.raises(InputError, match="scale factor"):
        harmonic_analysis(hessian, water, scale=0.0)
    with pytest.raises(InputError, match="expected 3 values"):
        harmonic_analysis(hessian, water, masses=[16.0, 1.0])


def test_constants_against_qcelemental():
    """Frequency, IR and energy conversions from qcelemental's CODATA 2014 set, by other
    routes (the CODATA 2014 and 2022 values differ by up to 2e-8 relative):
    omega = sqrt(lambda / (m_u / m_e)) in Eh, times Eh in cm^-1; the IR factor
    N_A pi alpha^2 a0 (m_e / m_u) / 3 (the atomic-unit form of the same formula)."""
    from qcelemental import constants as qc

    me_per_u = qc.get("electron mass in u")
    wavenumber = qc.conversion_factor("hartree", "wavenumber")
    to_cm = np.sqrt(me_per_u) * wavenumber
    assert CODATA.angular_frequency_au_to_wavenumber == pytest.approx(to_cm, rel=1e-7)
    ir = qc.get("Avogadro constant") * np.pi * qc.get("fine-structure constant") ** 2
    ir *= qc.get("atomic unit of length") * me_per_u / 3.0 * 1e-3
    assert CODATA.ir_intensity_km_mol == pytest.approx(ir, rel=1e-7)
    assert CODATA.hartree_kcal_mol == pytest.approx(qc.conversion_factor("hartree", "kcal/mol"), rel=1e-7)
    assert CODATA.wavenumber_hartree == pytest.approx(1.0 / wavenumber, rel=1e-7)
