"""The finite-difference Hessian of hartree's analytic gradients against PySCF's analytic
Hessian (RHF and UHF; ROHF: differences of PySCF's analytic gradients), its step error,
IR intensities against finite differences of PySCF's dipoles projected on PySCF's normal
modes, the checkpoint (interrupt, resume, refusals), Dask workers, and the refusal of
methods without analytic gradients.  The costlier PySCF references are stored
(tests/stored.py)."""

import json

import numpy as np
import pytest

from hartree.errors import InputError
from hartree.molecule import Molecule
from hartree.vibrations import frequencies, harmonic_analysis, open_executor
from tests.stored import computed_by_pyscf, stored
from tests.vibrations.conftest import WATER, pyscf_hessian, pyscf_scf


def test_water_rhf_equals_pyscf(water, water_631g, water_631g_pyscf):
    """Frequencies within 1 cm^-1 of PySCF's analytic Hessian (measured: 0.06 cm^-1)."""
    _, reference = water_631g_pyscf
    ours = water_631g
    np.testing.assert_allclose(ours.hessian, reference, rtol=0, atol=2e-5)  # Eh/bohr^2
    expected = harmonic_analysis(reference, water).frequencies
    np.testing.assert_allclose(ours.frequencies, expected, rtol=0, atol=0.2)
    assert ours.hessian_asymmetry < 1e-5 and ours.displacements == 18 and ours.resumed == 0
    assert ours.energy == pytest.approx(ours.gradient.scf.energy, abs=0)


HYDROXYL = "O 0 0 0; H 0 0 0.97"


@computed_by_pyscf("hessian/hydroxyl-uhf-6-31g")
def _hydroxyl_uhf_hessian():
    """PySCF's analytic UHF Hessian of the hydroxyl radical, (6, 6) Eh/bohr^2."""
    return pyscf_hessian(pyscf_scf(Molecule.from_string(HYDROXYL), "6-31g", "uhf"))


def test_open_shell_uhf_equals_pyscf():
    """Hydroxyl radical UHF/6-31g (linear: one stretch)."""
    molecule = Molecule.from_string(HYDROXYL)
    ours = frequencies(molecule, "6-31g", "uhf", device="cpu")
    expected = harmonic_analysis(np.array(stored("hessian/hydroxyl-uhf-6-31g")), molecule).frequencies
    assert ours.analysis.rotor == "linear" and ours.frequencies.size == 1
    np.testing.assert_allclose(ours.frequencies, expected, rtol=0, atol=0.5)
    assert ours.thermochemistry.multiplicity == 2


@computed_by_pyscf("hessian/hydroxyl-rohf-6-31g-gradient-differences")
def _hydroxyl_rohf_hessian():
    """PySCF has no ROHF Hessian: central differences (step 0.005 bohr, hartree's default)
    of PySCF's analytic ROHF gradients, symmetrised, (6, 6) Eh/bohr^2."""
    import pyscf.scf

    from tests.helpers import to_pyscf

    molecule = Molecule.from_string(HYDROXYL)
    step, rows = 0.005, []
    for i in range(6):
        gradients = []
        for sign in (1.0, -1.0):
            coords = np.array(molecule.coords)
            coords.reshape(-1)[i] += sign * step
            mf = pyscf.scf.ROHF(to_pyscf(molecule.replace(coords=coords), "6-31g"))
            mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
            mf.kernel()
            gradients.append(mf.nuc_grad_method().kernel().ravel())
        rows.append((gradients[0] - gradients[1]) / (2 * step))
    return 0.5 * (np.array(rows) + np.array(rows).T)


def test_open_shell_rohf_equals_differences_of_pyscf_gradients():
    """The same central difference of PySCF's analytic ROHF gradients (hydroxyl radical,
    6-31g; measured difference 1e-7 Eh/bohr^2)."""
    molecule = Molecule.from_string(HYDROXYL)
    ours = frequencies(molecule, "6-31g", "rohf", device="cpu")
    reference = np.array(stored("hessian/hydroxyl-rohf-6-31g-gradient-differences"))
    np.testing.assert_allclose(ours.hessian, reference, rtol=0, atol=2e-6)
    expected = harmonic_analysis(reference, molecule).frequencies
    np.testing.assert_allclose(ours.frequencies, expected, rtol=0, atol=0.05)


def test_step_error_is_second_order():
    """The central-difference error of the frequencies shrinks as h^2 (water, sto-3g)."""
    molecule = Molecule.from_string("O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692")
    expected = harmonic_analysis(pyscf_hessian(pyscf_scf(molecule, "sto-3g")), molecule).frequencies
    errors = []
    for step in (0.02, 0.01, 0.005):
        result = frequencies(molecule, "sto-3g", "rhf", device="cpu", step=step)
        errors.append(np.max(np.abs(result.frequencies - expected)))
    assert errors[2] < 0.2  # cm^-1 at the default step
    assert 3.0 < errors[0] / errors[1] < 5.0 and 3.0 < errors[1] / errors[2] < 5.0


def _pyscf_ir(molecule, basis, method, step=0.002, origin_at_mass_centre=False):
    """IR intensities (km/mol) from central differences of PySCF's SCF dipoles, projected
    on the normal modes of PySCF's own harmonic analysis of its analytic Hessian:
    A_k = N_A pi / (3 c^2 4 pi eps0) |sum_i dmu/dx_i X_ik|^2 with the constant from
    qcelemental's CODATA (atomic-unit form N_A pi alpha^2 a0 (m_e / m_u) / 3)."""
    from pyscf.hessian import thermo
    from qcelemental import constants as qc

    from hartree.vibrations import default_masses

    mf = pyscf_scf(molecule, basis, method)
    natm = molecule.natm
    masses = default_masses(molecule.numbers)
    modes = thermo.harmonic_analysis(
        mf.mol, pyscf_hessian(mf).reshape(natm, 3, natm, 3).transpose(0, 2, 1, 3), mass=masses
    )["norm_mode"]
    apt = np.zeros((3 * natm, 3))
    for i in range(3 * natm):
        dipoles = []
        for sign in (1.0, -1.0):
            coords = np.array(molecule.coords)
            coords.reshape(-1)[i] += sign * step
            shifted = pyscf_scf(molecule.replace(coords=coords), basis, method)
            origin = masses @ coords / masses.sum() if origin_at_mass_centre else np.zeros(3)
            with shifted.mol.with_common_origin(origin):
                dip = shifted.dip_moment(unit="AU", verbose=0, origin=origin)
            dipoles.append(np.asarray(dip))
        apt[i] = (dipoles[0] - dipoles[1]) / (2 * step)
    dmu_dq = np.einsum("kax,axy->ky", modes, apt.reshape(natm, 3, 3))
    factor = qc.get("Avogadro constant") * np.pi * qc.get("fine-structure constant") ** 2
    factor *= qc.get("atomic unit of length") * qc.get("electron mass in u") / 3.0 * 1e-3
    return factor * np.sum(dmu_dq**2, axis=1)


HEH_CATION = "He 0 0 0; H 0 0 0.78"


@computed_by_pyscf("ir_intensities/water-rhf-6-31g")
def _water_ir():
    return _pyscf_ir(Molecule.from_string(WATER), "6-31g", "rhf")


@computed_by_pyscf("ir_intensities/heh+-rhf-sto-3g-about-the-centre-of-mass")
def _heh_ir():
    return _pyscf_ir(Molecule.from_string(HEH_CATION, charge=1), "sto-3g", "rhf", origin_at_mass_centre=True)


def test_ir_intensities_equal_pyscf_dipole_differences(water_631g):
    expected = np.array(stored("ir_intensities/water-rhf-6-31g"))
    np.testing.assert_allclose(water_631g.ir_intensities, expected, rtol=2e-3, atol=1e-3)


def test_ir_intensities_of_an_ion():
    """HeH+: PySCF's dipoles taken about the moving centre of mass give the same
    intensities as hartree's about the fixed origin."""
    ion = Molecule.from_string(HEH_CATION, charge=1)
    ours = frequencies(ion, "sto-3g", "rhf", device="cpu")
    expected = np.array(stored("ir_intensities/heh+-rhf-sto-3g-about-the-centre-of-mass"))
    np.testing.assert_allclose(ours.ir_intensities, expected, rtol=2e-3, atol=1e-3)


class _Interrupt(Exception):
    """Raised by the test's progress hook after k displacements."""


def _stop_after(count):
    def hook(event):
        if event.stage == "done" and event.done - event.resumed >= count:
            raise _Interrupt

    return hook


def test_checkpoint_resume_gives_the_same_hessian(tmp_path):
    molecule = Molecule.from_string("H 0 0 0; F 0 0 0.92")
    path = tmp_path / "hf.freq-checkpoint.json"
    with pytest.raises(_Interrupt):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, progress=_stop_after(5))
    assert len(json.loads(path.read_text())["displacements"]) == 5
    seen = []
    resumed = frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, progress=seen.append)
    assert resumed.resumed == 5 and seen[0].stage == "start" and seen[0].resumed == 5
    assert sum(1 for e in seen if e.stage == "done") == 7
    fresh = frequencies(molecule, "sto-3g", "rhf", device="cpu")
    np.testing.assert_allclose(resumed.hessian, fresh.hessian, rtol=0, atol=1e-9)
    again = frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, temperature=400.0)
    assert again.resumed == 12  # nothing computed again: the analysis only
    np.testing.assert_array_equal(again.hessian, resumed.hessian)


def test_checkpoint_of_another_job_is_refused(tmp_path):
    molecule = Molecule.from_string("H 0 0 0; F 0 0 0.92")
    path = tmp_path / "chk.json"
    with pytest.raises(_Interrupt):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, progress=_stop_after(1))
    with pytest.raises(InputError, match="belongs to another job"):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, step=0.01)
    with pytest.raises(InputError, match="belongs to another job"):
        frequencies(molecule.replace(coords=molecule.coords * 1.01), "sto-3g", "rhf", device="cpu", checkpoint=path)
    result = frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, step=0.01, overwrite_checkpoint=True)
    assert result.resumed == 0 and json.loads(path.read_text())["job"]["step_bohr"] == 0.01
    path.write_text('{"schema": "hartree_freq_checkpoint", "version": 1, "fingerprint": ')
    with pytest.raises(InputError, match="not valid JSON"):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path)


def test_damaged_checkpoint_records_are_refused(tmp_path):
    molecule = Molecule.from_string("H 0 0 0; F 0 0 0.92")
    path = tmp_path / "chk.json"
    with pytest.raises(_Interrupt):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path, progress=_stop_after(2))
    doc = json.loads(path.read_text())
    doc["displacements"]["0"]["gradient"] = doc["displacements"]["0"]["gradient"][:5]
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="is damaged"):
        frequencies(molecule, "sto-3g", "rhf", device="cpu", checkpoint=path)


def test_dask_workers_give_the_same_hessian():
    """Two local worker processes (HF molecule, sto-3g: 12 displaced gradients)."""
    molecule = Molecule.from_string("H 0 0 0; F 0 0 0.92")
    serial = frequencies(molecule, "sto-3g", "rhf", device="cpu")
    with open_executor(workers=2) as executor:
        parallel = frequencies(molecule, "sto-3g", "rhf", device="cpu", executor=executor)
    assert parallel.executor == "dask, 2 local worker processes"
    np.testing.assert_allclose(parallel.hessian, serial.hessian, rtol=0, atol=1e-10)
    np.testing.assert_allclose(parallel.dipole_derivatives, serial.dipole_derivatives, rtol=0, atol=1e-10)


def test_methods_without_analytic_gradients_are_refused(water):
    with pytest.raises(InputError, match="RI-MP2 has none yet"):
        frequencies(water, "sto-3g", "mp2")
    with pytest.raises(InputError, match="unknown method"):
        frequencies(water, "sto-3g", "ccsd")
    with pytest.raises(InputError, match="step must lie between"):
        frequencies(water, "sto-3g", "rhf", step=0.5)
    with pytest.raises(InputError, match="exclude each other"), open_executor(workers=2, scheduler="tcp://x:1"):
        pass
