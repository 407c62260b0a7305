"""QCSchema AtomicResult documents: structure, values, and round trips."""

import json

import numpy as np
import pytest
from pyscf import gto

import hartree
from hartree.errors import InputError
from hartree.io.qcschema import (basis_from_qcschema, electron_counts, read_result_json,
                                 result_to_qcschema, wavefunction_arrays, write_json)
from hartree.molecule import Molecule

PROPERTY_KEYS = {
    "return_energy", "scf_total_energy", "nuclear_repulsion_energy", "scf_one_electron_energy",
    "scf_two_electron_energy", "scf_iterations", "scf_dipole_moment", "calcinfo_nbasis",
    "calcinfo_nmo", "calcinfo_nalpha", "calcinfo_nbeta", "calcinfo_natom",
}


def test_document_structure(water, make_result):
    result, _ = make_result(water, "6-31g*")
    doc = result_to_qcschema(result, input_file="water.xyz", keywords={"conv_tol": 1e-9})
    assert doc["schema_name"] == "qcschema_output"
    assert doc["schema_version"] == 1
    assert doc["driver"] == "energy"
    assert doc["model"] == {"method": "rhf", "basis": "6-31g*"}
    assert doc["keywords"] == {"conv_tol": 1e-9}
    assert doc["success"] is True
    assert doc["return_result"] == result.energy
    assert doc["provenance"]["creator"] == "hartree"
    assert doc["provenance"]["version"] == hartree.__version__
    assert doc["provenance"]["device"] == "cpu (test)"
    assert doc["extras"]["hartree"]["input_file"] == "water.xyz"
    mol = doc["molecule"]
    assert mol["symbols"] == ["O", "H", "H"]
    assert mol["molecular_charge"] == 0 and mol["molecular_multiplicity"] == 1
    np.testing.assert_allclose(mol["geometry"], np.array([xyz for _, xyz in water]).ravel(), atol=1e-12)
    json.dumps(doc)  # everything is JSON-able


def test_properties_values(water, make_result):
    result, _ = make_result(water, "6-31g*")
    props = result_to_qcschema(result)["properties"]
    assert set(props) == PROPERTY_KEYS
    nao = result.basis.nao
    assert props["return_energy"] == props["scf_total_energy"] == result.energy
    assert props["nuclear_repulsion_energy"] == 9.1
    assert props["scf_one_electron_energy"] == -123.1
    assert props["scf_two_electron_energy"] == pytest.approx(46.9 - 8.9, abs=1e-12)
    assert props["scf_iterations"] == 11
    assert props["scf_dipole_moment"] == [0.01, -0.2, 0.78]
    assert (props["calcinfo_nbasis"], props["calcinfo_nmo"]) == (nao, nao)
    assert (props["calcinfo_nalpha"], props["calcinfo_nbeta"], props["calcinfo_natom"]) == (5, 5, 3)


def test_uhf_and_rohf_electron_counts(water, make_result):
    result, _ = make_result(water, "sto-3g", unrestricted=True)
    props = result_to_qcschema(result)["properties"]
    assert (props["calcinfo_nalpha"], props["calcinfo_nbeta"]) == (6, 4)
    assert electron_counts(np.array([2, 2, 1, 1, 0, 0])) == (4, 2)   # ROHF occupations


@pytest.mark.parametrize("unrestricted", [False, True])
def test_json_round_trip_is_exact(tmp_path, water, make_result, unrestricted):
    result, _ = make_result(water, "cc-pvdz", unrestricted=unrestricted)
    doc = result_to_qcschema(result)
    path = tmp_path / "result.json"
    write_json(path, doc)
    back = read_result_json(path)
    assert back == doc
    mo_energy, mo_coeff, mo_occ = wavefunction_arrays(back)
    np.testing.assert_array_equal(mo_coeff, result.mo_coeff)
    np.testing.assert_array_equal(mo_energy, result.mo_energy)
    np.testing.assert_array_equal(mo_occ, result.mo_occ)
    assert back["wavefunction"]["restricted"] is (not unrestricted)


@pytest.mark.parametrize("basis_name, cartesian", [("cc-pvtz", False), ("6-31g**", True)])
def test_basis_rebuilt_from_document(water, make_result, basis_name, cartesian):
    result, _ = make_result(water, basis_name, cartesian=cartesian)
    basis = basis_from_qcschema(json.loads(json.dumps(result_to_qcschema(result))))
    ref = result.basis
    assert basis.pure == ref.pure and basis.nao == ref.nao
    for name in ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start", "ao_loc"):
        np.testing.assert_array_equal(getattr(basis, name), getattr(ref, name))
    np.testing.assert_allclose(basis.shell_center, ref.shell_center, atol=1e-14)
    np.testing.assert_allclose(basis.exponents, ref.exponents, rtol=1e-15)
    np.testing.assert_allclose(basis.coefficients, ref.coefficients, rtol=1e-12)


def test_basis_is_understood_by_pyscf(water, make_result):
    """Feeding the document's shells to PySCF (which expects coefficients for normalised
    primitives) reproduces the overlap matrix of the original basis."""
    result, ref_mol = make_result(water, "cc-pvtz")
    doc = result_to_qcschema(result)
    wfn_basis = doc["wavefunction"]["basis"]
    geometry = np.array(doc["molecule"]["geometry"]).reshape(-1, 3)
    atoms, shells = [], {}
    for key, xyz in zip(wfn_basis["atom_map"], geometry):
        atoms.append([key, tuple(xyz)])
        shells[key] = [[sh["angular_momentum"][0]] + [list(p) for p in zip(sh["exponents"], sh["coefficients"][0])]
                       for sh in wfn_basis["center_data"][key]["electron_shells"]]
    mol = gto.M(atom=atoms, unit="Bohr", basis=shells, verbose=0)
    np.testing.assert_allclose(mol.intor("int1e_ovlp"), ref_mol.intor("int1e_ovlp"), atol=1e-12)
    c = np.array(doc["wavefunction"]["scf_orbitals_a"]).reshape(mol.nao, mol.nao)
    np.testing.assert_allclose(c.T @ mol.intor("int1e_ovlp") @ c, np.eye(mol.nao), atol=1e-10)


def test_molecule_reads_back(water, make_result):
    result, _ = make_result(water, "sto-3g", unrestricted=True)
    doc = result_to_qcschema(result)
    mol = Molecule.from_qcschema(doc)
    np.testing.assert_array_equal(mol.numbers, result.molecule.numbers)
    np.testing.assert_allclose(mol.coords, result.molecule.coords, atol=0)
    assert mol.multiplicity == 3


def test_read_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_result_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(InputError, match="not valid JSON"):
        read_result_json(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema_name": "qcschema_molecule"}))
    with pytest.raises(InputError, match="not a QCSchema result"):
        read_result_json(other)


def test_rohf_occupations_split_by_spin(water, make_result):
    result, _ = make_result(water, "sto-3g")
    occ = np.zeros(result.basis.nao)
    occ[:4], occ[4:6] = 2.0, 1.0                      # 4 doubly, 2 singly occupied
    result.mo_occ, result.method = occ, "rohf"
    doc = result_to_qcschema(result)
    wfn = doc["wavefunction"]
    assert wfn["restricted"] is True
    assert wfn["scf_occupations_a"] == [1.0] * 6 + [0.0]
    assert wfn["scf_occupations_b"] == [1.0] * 4 + [0.0] * 3
    assert (doc["properties"]["calcinfo_nalpha"], doc["properties"]["calcinfo_nbeta"]) == (6, 4)
    np.testing.assert_array_equal(wavefunction_arrays(doc)[2], occ)


def _fake_mp2(result, reference="rhf", nocc=4, nvir=2):
    """An MP2Result with made-up energies on top of a (fake) SCF result."""
    from hartree.mp2 import MP2Result

    return MP2Result(reference=reference, scf_energy=float(result.energy),
                     correlation_energy=-0.21, opposite_spin=-0.16, same_spin=-0.05,
                     frozen_core=1, nocc=nocc, nvir=nvir, aux_basis="cc-pVDZ-RIFIT", naux=84,
                     precision="fp64", device="cpu (test)", wall_time=0.5,
                     timings={"metric": 0.1, "energy": 0.2},
                     notes=["mixed: (ia|jb) by ozaki INT8 with 3 slices"])


def test_mp2_result_document(tmp_path, water, make_result):
    result, _ = make_result(water, "sto-3g")
    mp2 = _fake_mp2(result)
    plain = result_to_qcschema(result, keywords={"method": "mp2"})
    doc = result_to_qcschema(result, keywords={"method": "mp2"}, mp2=mp2)
    props = doc["properties"]
    assert set(props) == PROPERTY_KEYS | set(mp2.properties())
    for key in ("mp2_correlation_energy", "mp2_total_energy", "mp2_same_spin_correlation_energy",
                "mp2_opposite_spin_correlation_energy", "scs_mp2_correlation_energy",
                "scs_mp2_total_energy"):
        assert props[key] == mp2.properties()[key], key
    assert props["mp2_total_energy"] == pytest.approx(result.energy - 0.21, abs=1e-12)
    assert props["scs_mp2_correlation_energy"] == pytest.approx(1.2 * -0.16 + -0.05 / 3, abs=1e-12)
    assert props["return_energy"] == doc["return_result"] == mp2.total_energy
    assert props["scf_total_energy"] == result.energy
    assert doc["model"] == {"method": "mp2", "basis": "sto-3g"}
    extra = doc["extras"]["hartree"]["mp2"]
    assert extra == {"reference": "rhf", "aux_basis": "cc-pVDZ-RIFIT", "naux": 84,
                     "frozen_core": 1, "nocc": 4, "nvir": 2, "precision": "fp64",
                     "device": "cpu (test)", "wall_time": 0.5,
                     "timings": {"metric": 0.1, "energy": 0.2},
                     "notes": ["mixed: (ia|jb) by ozaki INT8 with 3 slices"]}
    assert doc["extras"]["hartree"]["scf_method"] == "rhf"
    # the SCF part of the document is what it is without MP2
    assert doc["wavefunction"] == plain["wavefunction"]
    assert doc["molecule"] == plain["molecule"]
    assert "mp2" not in plain["extras"]["hartree"] and plain["model"]["method"] == "rhf"
    path = tmp_path / "mp2.json"
    write_json(path, doc)
    assert read_result_json(path) == doc


def test_mp2_uhf_orbital_counts_are_lists(water, make_result):
    result, _ = make_result(water, "sto-3g", unrestricted=True)
    doc = result_to_qcschema(result, mp2=_fake_mp2(result, "uhf", (6, 4), (1, 3)))
    extra = doc["extras"]["hartree"]["mp2"]
    assert extra["reference"] == "uhf"
    assert (extra["nocc"], extra["nvir"]) == ([6, 4], [1, 3])
    json.dumps(doc)


def test_scf_stage_timings_in_extras(water, make_result):
    """SCFResult.timings go to extras.hartree.timings: seconds as floats, build counts as ints."""
    result, _ = make_result(water, "sto-3g")
    result.timings = {"one_electron": 0.25, "guess": 0.5, "jk": 2.0, "other": 0.1,
                      "analysis": 0.01, "full_builds": 3, "incremental_builds": 12,
                      "early_screening_builds": 0}
    doc = json.loads(json.dumps(result_to_qcschema(result)))
    t = doc["extras"]["hartree"]["timings"]
    assert t == result.timings
    assert all(isinstance(t[k], int) for k in t if k.endswith("_builds"))
