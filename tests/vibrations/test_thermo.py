"""Thermochemistry from a given Hessian against PySCF's ``hessian.thermo`` on the same
Hessian (same masses: PySCF's isotope averages; same constants: PySCF's CODATA 2014),
argon's translational entropy against NIST-JANAF, and the quasi-RRHO treatments against
the formulas of Grimme (2012) and Li et al. (2015) written out independently in SI."""

import types

import numpy as np
import pytest

from hartree.errors import InputError
from hartree.molecule import Molecule
from hartree.vibrations import CODATA, harmonic_analysis, thermochemistry
from tests.vibrations.conftest import CO2, HCN, plain_mole, pyscf_constants, pyscf_hessian, pyscf_scf

#: PySCF result key -> (our Contribution or total attribute)
PARTS = {"elec": "electronic", "trans": "translational", "rot": "rotational", "vib": "vibrational"}


def _pyscf_thermo(molecule, hessian, energy, temperature, pressure):
    """PySCF's thermo on our Hessian: its harmonic analysis (its masses) and thermo."""
    from pyscf.hessian import thermo

    mol = plain_mole(molecule)
    natm = molecule.natm
    freq = thermo.harmonic_analysis(mol, hessian.reshape(natm, 3, natm, 3).transpose(0, 2, 1, 3))["freq_au"]
    return thermo.thermo(types.SimpleNamespace(mol=mol, e_tot=energy), freq, temperature, pressure), mol


def _ours(molecule, hessian, energy, temperature, pressure, constants):
    masses = plain_mole(molecule).atom_mass_list(isotope_avg=True)
    analysis = harmonic_analysis(hessian, molecule, masses=masses, constants=constants)
    return thermochemistry(analysis, energy, molecule.multiplicity, temperature, pressure)


def _compare(molecule, hessian, energy, temperature=298.15, pressure=101325.0):
    ref, _ = _pyscf_thermo(molecule, hessian, energy, temperature, pressure)
    ours = _ours(molecule, hessian, energy, temperature, pressure, pyscf_constants())
    assert ours.symmetry_number == ref["sym_number"][0]
    totals = {
        "ZPE": ours.zero_point_energy,
        "E_tot": ours.internal_energy,
        "H_tot": ours.enthalpy,
        "G_tot": ours.gibbs_free_energy,
        "E_0K": ours.electronic_energy + ours.zero_point_energy,
    }
    for key, value in totals.items():
        assert abs(value - ref[key][0]) < 1e-10, key  # the acceptance bound is 1e-8 Eh
    for key, value in (("S_tot", ours.entropy), ("Cv_tot", ours.cv), ("Cp_tot", ours.cp)):
        assert abs(value - ref[key][0]) < 1e-14, key  # Eh/K
    for short, name in PARTS.items():
        part = ours.contributions[name]
        for field, key in (("energy", "E"), ("enthalpy", "H"), ("gibbs", "G")):
            assert abs(getattr(part, field) - ref[f"{key}_{short}"][0]) < 1e-10, (name, field)
        for field, key in (("entropy", "S"), ("cv", "Cv"), ("cp", "Cp")):
            assert abs(getattr(part, field) - ref[f"{key}_{short}"][0]) < 1e-14, (name, field)
    # with hartree's own constants (CODATA 2022 from scipy) the thermal terms move by
    # about 1e-8 relative: under 3e-8 Eh here
    default = _ours(molecule, hessian, energy, temperature, pressure, CODATA)
    assert abs(default.gibbs_free_energy - ref["G_tot"][0]) < 3e-8
    assert abs(default.enthalpy - ref["H_tot"][0]) < 3e-8
    return ours


def test_water_equals_pyscf(water, water_631g_pyscf):
    mf, hessian = water_631g_pyscf
    ours = _compare(water, hessian, mf.e_tot)
    assert ours.symmetry_number == 2 and ours.rotor == "nonlinear"
    _compare(water, hessian, mf.e_tot, temperature=500.0, pressure=1e5)


@pytest.mark.parametrize("text,sigma", [(HCN, 1), (CO2, 2)])
def test_linear_molecules_equal_pyscf(text, sigma):
    molecule = Molecule.from_string(text)
    mf = pyscf_scf(molecule, "sto-3g")
    ours = _compare(molecule, pyscf_hessian(mf), mf.e_tot)
    assert ours.rotor == "linear" and ours.symmetry_number == sigma


def test_open_shell_equals_pyscf():
    """OH radical (UHF, doublet): the electronic entropy k ln 2."""
    molecule = Molecule.from_string("O 0 0 0; H 0 0 0.97")
    mf = pyscf_scf(molecule, "6-31g", "uhf")
    ours = _compare(molecule, pyscf_hessian(mf), mf.e_tot)
    assert ours.contributions["electronic"].entropy == pytest.approx(CODATA.boltzmann_hartree * np.log(2), rel=1e-8)


def test_argon_entropy_equals_janaf():
    """Sackur-Tetrode for Ar (natural atomic weight 39.948 u) at 298.15 K and 1 bar:
    NIST-JANAF Thermochemical Tables (Chase 1998) give S = 154.845 J/(mol K)."""
    argon = Molecule.from_string("Ar 0 0 0")
    analysis = harmonic_analysis(np.zeros((3, 3)), argon, masses=[39.948])
    thermo = thermochemistry(analysis, -526.0, 1, 298.15, 1e5)
    assert thermo.entropy * CODATA.hartree_joule_mol == pytest.approx(154.845, abs=0.003)
    assert thermo.enthalpy - thermo.electronic_energy == pytest.approx(2.5 * CODATA.boltzmann_hartree * 298.15)


def _si_mode_terms(nu_cm, temperature):
    """(S_V, S_R, E_V) of one mode in J/K and J per molecule, written from the papers in SI."""
    h, k, c = 6.62607015e-34, 1.380649e-23, 2.99792458e10  # c in cm/s
    nu = nu_cm * c  # Hz
    x = h * nu / (k * temperature)
    s_v = k * (x / (np.exp(x) - 1.0) - np.log(1.0 - np.exp(-x)))
    mu = h / (8.0 * np.pi**2 * nu)
    mu_eff = mu * 1e-44 / (mu + 1e-44)
    s_r = k * (0.5 + 0.5 * np.log(8.0 * np.pi**3 * mu_eff * k * temperature / h**2))
    e_v = h * nu * (0.5 + 1.0 / (np.exp(x) - 1.0))
    return s_v, s_r, e_v


@pytest.mark.parametrize("mode", ["grimme", "head-gordon"])
def test_qrrho_equals_the_papers(water, water_631g_pyscf, mode):
    """Low modes made by a scale factor of 0.03 (frequencies 55-120 cm^-1)."""
    _, hessian = water_631g_pyscf
    analysis = harmonic_analysis(hessian, water, scale=0.03)
    temperature = 298.15
    rrho = thermochemistry(analysis, 0.0, temperature=temperature)
    quasi = thermochemistry(analysis, 0.0, temperature=temperature, qrrho=mode, qrrho_cutoff=100.0)
    joule = CODATA.hartree_joule
    s_total, e_total = 0.0, 0.0
    for nu in analysis.scaled_frequencies:
        s_v, s_r, e_v = _si_mode_terms(nu, temperature)
        w = 1.0 / (1.0 + (100.0 / nu) ** 4)
        s_total += w * s_v + (1 - w) * s_r
        e_total += w * e_v + (1 - w) * 0.5 * 1.380649e-23 * temperature if mode == "head-gordon" else e_v
    vib = quasi.contributions["vibrational"]
    assert vib.entropy * joule == pytest.approx(s_total, rel=1e-9)
    assert vib.energy * joule == pytest.approx(e_total, rel=1e-9)
    assert quasi.zero_point_energy == rrho.zero_point_energy  # the ZPE stays harmonic
    assert quasi.entropy < rrho.entropy  # the free rotor tames the low modes' entropy
    # far above the cut-off the treatments agree
    high = thermochemistry(analysis, 0.0, temperature=temperature, qrrho=mode, qrrho_cutoff=1e-3)
    assert high.entropy == pytest.approx(rrho.entropy, rel=1e-9)


def test_imaginary_frequencies_left_out(water, water_631g_pyscf):
    """A Hessian with one negative curvature: that mode is reported and left out."""
    _, hessian = water_631g_pyscf
    analysis = harmonic_analysis(hessian, water)
    mode = analysis.mass_weighted_modes[:, 0]
    m3 = np.repeat(analysis.masses, 3)
    # subtract twice the mode's curvature: its eigenvalue changes sign, nothing else does
    bent = hessian - 2.0 * analysis.eigenvalues[0] * np.outer(np.sqrt(m3) * mode, np.sqrt(m3) * mode)
    saddle = harmonic_analysis(bent, water)
    assert saddle.frequencies[0] == pytest.approx(-analysis.frequencies[0], rel=1e-9)
    thermo = thermochemistry(saddle, -76.0)
    assert thermo.imaginary_frequencies.size == 1
    np.testing.assert_allclose(thermo.frequencies_used, analysis.frequencies[1:], rtol=1e-9)
    reference = thermochemistry(analysis, -76.0)
    low = reference.contributions["vibrational"]
    assert thermo.zero_point_energy < reference.zero_point_energy
    assert thermo.contributions["vibrational"].entropy < low.entropy


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"temperature": 0.0}, "temperature must be positive"),
        ({"pressure": -1.0}, "pressure must be positive"),
        ({"qrrho": "truhlar"}, "unknown qRRHO"),
        ({"qrrho": "grimme", "qrrho_cutoff": 0.0}, "cut-off"),
    ],
)
def test_bad_settings(water, water_631g_pyscf, kwargs, message):
    _, hessian = water_631g_pyscf
    with pytest.raises(InputError, match=message):
        thermochemistry(harmonic_analysis(hessian, water), -76.0, **kwargs)
