"""QCSchema AtomicResult documents: structure, values, round trips, documents of earlier
hartree versions, and damaged files (every one an InputError naming the field)."""

import copy
import functools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyscf import gto

import hartree
from hartree.errors import InputError
from hartree.io.qcschema import (
    document_properties,
    dumps,
    electron_counts,
    result_to_qcschema,
    write_json,
)
from hartree.io.qcschema_read import (
    basis_from_qcschema,
    read_result_json,
    read_wavefunction,
    wavefunction_arrays,
)
from hartree.molecule import Molecule

PROPERTY_KEYS = {
    "return_energy",
    "scf_total_energy",
    "nuclear_repulsion_energy",
    "scf_one_electron_energy",
    "scf_two_electron_energy",
    "scf_iterations",
    "scf_dipole_moment",
    "calcinfo_nbasis",
    "calcinfo_nmo",
    "calcinfo_nalpha",
    "calcinfo_nbeta",
    "calcinfo_natom",
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
    assert electron_counts(np.array([2, 2, 1, 1, 0, 0])) == (4, 2)  # ROHF occupations


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
        shells[key] = [
            [sh["angular_momentum"][0]] + [list(p) for p in zip(sh["exponents"], sh["coefficients"][0])]
            for sh in wfn_basis["center_data"][key]["electron_shells"]
        ]
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
    """ROHF: alpha and beta differ in occupations, so the document is not 'restricted' in
    QCSchema's sense (beta quantities would be skipped); hartree still reads it back as a
    restricted-orbital result with 0/1/2 occupations."""
    result, _ = make_result(water, "sto-3g")
    occ = np.zeros(result.basis.nao)
    occ[:4], occ[4:6] = 2.0, 1.0  # 4 doubly, 2 singly occupied
    result.mo_occ, result.method = occ, "rohf"
    doc = result_to_qcschema(result)
    wfn = doc["wavefunction"]
    assert wfn["restricted"] is False and doc["extras"]["hartree"]["scf_method"] == "rohf"
    assert wfn["scf_occupations_a"] == [1.0] * 6 + [0.0]
    assert wfn["scf_occupations_b"] == [1.0] * 4 + [0.0] * 3
    assert wfn["scf_orbitals_a"] == wfn["scf_orbitals_b"]
    assert (doc["properties"]["calcinfo_nalpha"], doc["properties"]["calcinfo_nbeta"]) == (6, 4)
    mo_energy, mo_coeff, mo_occ = wavefunction_arrays(doc)
    np.testing.assert_array_equal(mo_occ, occ)
    np.testing.assert_array_equal(mo_coeff, result.mo_coeff)
    assert mo_energy.shape == (result.basis.nao,)


def _fake_mp2(result, reference="rhf", nocc=4, nvir=2):
    """An MP2Result with made-up energies on top of a (fake) SCF result."""
    from hartree.mp2 import MP2Result

    return MP2Result(
        reference=reference,
        scf_energy=float(result.energy),
        correlation_energy=-0.21,
        opposite_spin=-0.16,
        same_spin=-0.05,
        frozen_core=1,
        nocc=nocc,
        nvir=nvir,
        aux_basis="cc-pVDZ-RIFIT",
        naux=84,
        precision="fp64",
        device="cpu (test)",
        wall_time=0.5,
        timings={"metric": 0.1, "energy": 0.2},
        notes=["mixed: (ia|jb) by ozaki INT8 with 3 slices"],
    )


def test_mp2_result_document(tmp_path, water, make_result):
    result, _ = make_result(water, "sto-3g")
    mp2 = _fake_mp2(result)
    plain = result_to_qcschema(result, keywords={"method": "mp2"})
    doc = result_to_qcschema(result, keywords={"method": "mp2"}, mp2=mp2)
    props = doc["properties"]
    scs = {"scs_mp2_correlation_energy", "scs_mp2_total_energy"}  # not QCSchema v1 fields
    assert set(props) == PROPERTY_KEYS | (set(mp2.properties()) - scs)
    assert set(doc["extras"]["hartree"]["properties"]) == scs
    merged = document_properties(doc)
    for key in (
        "mp2_correlation_energy",
        "mp2_total_energy",
        "mp2_same_spin_correlation_energy",
        "mp2_opposite_spin_correlation_energy",
        "scs_mp2_correlation_energy",
        "scs_mp2_total_energy",
    ):
        assert merged[key] == mp2.properties()[key], key
    assert props["mp2_total_energy"] == pytest.approx(result.energy - 0.21, abs=1e-12)
    assert merged["scs_mp2_correlation_energy"] == pytest.approx(1.2 * -0.16 + -0.05 / 3, abs=1e-12)
    assert props["return_energy"] == doc["return_result"] == mp2.total_energy
    assert props["scf_total_energy"] == result.energy
    assert doc["model"] == {"method": "mp2", "basis": "sto-3g"}
    extra = doc["extras"]["hartree"]["mp2"]
    assert extra == {
        "reference": "rhf",
        "aux_basis": "cc-pVDZ-RIFIT",
        "naux": 84,
        "frozen_core": 1,
        "nocc": 4,
        "nvir": 2,
        "precision": "fp64",
        "device": "cpu (test)",
        "wall_time": 0.5,
        "timings": {"metric": 0.1, "energy": 0.2},
        "notes": ["mixed: (ia|jb) by ozaki INT8 with 3 slices"],
    }
    assert doc["extras"]["hartree"]["scf_method"] == "rhf"
    # the SCF part of the document is what it is without MP2
    assert doc["wavefunction"] == plain["wavefunction"]
    assert doc["molecule"] == plain["molecule"]
    assert "mp2" not in plain["extras"]["hartree"] and plain["model"]["method"] == "rhf"
    assert "properties" not in plain["extras"]["hartree"]
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
    result.timings = {
        "one_electron": 0.25,
        "guess": 0.5,
        "jk": 2.0,
        "other": 0.1,
        "analysis": 0.01,
        "full_builds": 3,
        "incremental_builds": 12,
        "early_screening_builds": 0,
    }
    doc = json.loads(json.dumps(result_to_qcschema(result)))
    t = doc["extras"]["hartree"]["timings"]
    assert t == result.timings
    assert all(isinstance(t[k], int) for k in t if k.endswith("_builds"))


# ------------------------------------------------------------------------------ old layout
def _legacy(doc):
    """The document as hartree 0.1.0 wrote it: SCS-MP2 energies in ``properties``,
    ``function_type`` in the shells, ``wavefunction.extras``, no ``protocols``, ROHF as
    ``restricted: true`` with beta occupations."""
    old = copy.deepcopy(doc)
    hartree_extras = old["extras"]["hartree"]
    old["properties"].update(hartree_extras.pop("properties", {}))
    old.pop("protocols")
    old["wavefunction"]["extras"] = {
        "hartree_ao_order": hartree_extras.pop("ao_order"),
        "hartree_ao_labels": hartree_extras.pop("ao_labels"),
    }
    for center in old["wavefunction"]["basis"]["center_data"].values():
        for shell in center["electron_shells"]:
            shell["function_type"] = "gto"
    if hartree_extras.pop("scf_method") == "rohf":
        old["wavefunction"]["restricted"] = True
    return old


@pytest.mark.parametrize("kind", ["rhf", "uhf", "rohf", "mp2"])
def test_documents_of_earlier_versions_still_read(tmp_path, water, make_result, kind):
    result, _ = make_result(water, "sto-3g", unrestricted=kind == "uhf")
    if kind == "rohf":
        occ = np.zeros(result.basis.nao)
        occ[:4], occ[4:6] = 2.0, 1.0
        result.mo_occ, result.method = occ, "rohf"
        result.molecule = Molecule(result.molecule.numbers, result.molecule.coords, multiplicity=3)
    doc = result_to_qcschema(result, mp2=_fake_mp2(result) if kind == "mp2" else None)
    path = tmp_path / "old.json"
    write_json(path, _legacy(doc))
    molecule, basis, mo_energy, mo_coeff, mo_occ = read_wavefunction(path)
    np.testing.assert_array_equal(mo_coeff, result.mo_coeff)
    np.testing.assert_array_equal(mo_energy, result.mo_energy)
    np.testing.assert_array_equal(mo_occ, result.mo_occ)
    assert basis.nao == result.basis.nao and molecule.multiplicity == result.molecule.multiplicity
    assert document_properties(read_result_json(path)) == document_properties(doc)


def test_write_json_is_atomic_and_valid_json(tmp_path, water, make_result):
    """write_json goes through hartree.io.files.write_text (temporary file + rename); a
    non-finite number becomes null, never NaN (which is not JSON)."""
    result, _ = make_result(water, "sto-3g")
    path = tmp_path / "r.json"
    path.write_text("old")
    doc = result_to_qcschema(result)
    doc["extras"]["hartree"]["s_squared"] = float("nan")
    doc["extras"]["hartree"]["mulliken_charges"][0] = float("inf")
    write_json(path, doc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left
    back = json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(name))
    assert back["extras"]["hartree"]["s_squared"] is None
    assert back["extras"]["hartree"]["mulliken_charges"][0] is None
    assert "NaN" not in dumps({"x": [float("nan")], "y": float("-inf")})


# ------------------------------------------------------------------------------ damaged files
SHELL = ("wavefunction", "basis", "center_data", "O1", "electron_shells", 0)


def _at(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _set(path, value):
    def damage(doc):
        _at(doc, path[:-1])[path[-1]] = value

    return damage


def _delete(*path):
    def damage(doc):
        del _at(doc, path[:-1])[path[-1]]

    return damage


def _call(path, method, *args):
    def damage(doc):
        getattr(_at(doc, path), method)(*args)

    return damage


def _grow_nbasis(doc):
    doc["properties"]["calcinfo_nbasis"] += 1
    doc["wavefunction"]["scf_orbitals_a"] += [0.0] * doc["properties"]["calcinfo_nmo"]


def _mixed_harmonics(doc):
    doc["wavefunction"]["basis"]["center_data"]["H2"]["electron_shells"][0]["harmonic_type"] = "cartesian"


ORB_A, EIG_A, OCC_A = (("wavefunction", f"scf_{n}_a") for n in ("orbitals", "eigenvalues", "occupations"))
DAMAGE = {
    # missing keys
    "no molecule": (_delete("molecule"), r"molecule is missing"),
    "no symbols": (_delete("molecule", "symbols"), r"molecule\.symbols is missing"),
    "no orbitals": (_delete(*ORB_A), r"wavefunction\.scf_orbitals_a is missing"),
    "no nmo": (_delete("properties", "calcinfo_nmo"), r"properties\.calcinfo_nmo is missing"),
    "no restricted": (_delete("wavefunction", "restricted"), r"wavefunction\.restricted is missing"),
    "no atom_map": (_delete("wavefunction", "basis", "atom_map"), r"basis\.atom_map is missing"),
    "no exponents": (_delete(*SHELL, "exponents"), r"electron_shells\[0\]\.exponents is missing"),
    "no basis": (_delete("wavefunction", "basis"), r"wavefunction\.basis is missing"),
    # wrong types and nested garbage
    "document is a list": (lambda doc: doc.clear(), r"not a QCSchema result"),
    "properties a list": (_set(("properties",), [1, 2]), r"properties must be a JSON object"),
    "string eigenvalues": (_set(EIG_A, "abc"), r"scf_eigenvalues_a must be a list of numbers"),
    "string in orbitals": (_call(ORB_A, "__setitem__", 3, "0.5"), r"scf_orbitals_a must be a list of numbers"),
    "nested orbitals": (_set(ORB_A, [[1.0, 2.0], [3.0]]), r"scf_orbitals_a must be a list of numbers"),
    "boolean occupation": (_call(OCC_A, "__setitem__", 0, True), r"scf_occupations_a must be a list of numbers"),
    "string nbasis": (_set(("properties", "calcinfo_nbasis"), "7"), r"calcinfo_nbasis must be an integer"),
    "restricted string": (_set(("wavefunction", "restricted"), "yes"), r"restricted must be true or false"),
    "center_data list": (_set(("wavefunction", "basis", "center_data"), []), r"center_data must be a JSON object"),
    "boolean l": (_set((*SHELL, "angular_momentum"), [True]), r"electron_shells\[0\]\.angular_momentum must"),
    "shell a string": (_set(SHELL, "s"), r"electron_shells\[0\] must be a JSON object"),
    "geometry strings": (_set(("molecule", "geometry"), ["0"] * 9), r"molecule\.geometry must be a list"),
    # wrong lengths and sizes
    "short orbitals": (_call(ORB_A, "pop"), r"scf_orbitals_a has 48 numbers, expected calcinfo_nbasis x calcinfo_nmo"),
    "long eigenvalues": (_call(EIG_A, "append", 1.0), r"scf_eigenvalues_a has 8 numbers, expected calcinfo_nmo = 7"),
    "short occupations": (_call(OCC_A, "pop"), r"scf_occupations_a has 6 numbers"),
    "nbasis is not the basis size": (_grow_nbasis, r"calcinfo_nbasis is 8 but wavefunction\.basis holds 7"),
    "wrong nbf": (_set(("wavefunction", "basis", "nbf"), 9), r"basis\.nbf is 9 but its shells hold 7"),
    "short geometry": (_call(("molecule", "geometry"), "pop"), r"molecule\.geometry has 8 numbers, expected 3 x 3"),
    "long atom_map": (_call(("wavefunction", "basis", "atom_map"), "append", "H3"), r"atom_map has 4 entries for 3"),
    "unknown atom_map key": (_set(("wavefunction", "basis", "atom_map", 1), "X9"), r"atom_map\[1\] is 'X9'"),
    "unknown center key": (_set(("wavefunction", "basis", "center_data", "O1", "colour"), 1), r"unknown key 'colour'"),
    "unknown shell key": (_set((*SHELL, "contraction"), 2), r"electron_shells\[0\] has an unknown key"),
    "coefficient length": (_call((*SHELL, "coefficients", 0), "pop"), r"coefficients\[0\] has 2 numbers"),
    "sp without p coefficients": (_set((*SHELL, "angular_momentum"), [0, 1]), r"angular_momentum has 2 entries"),
    "natom": (_set(("properties", "calcinfo_natom"), 4), r"calcinfo_natom is 4 but the molecule has 3"),
    "nmo above nbasis": (_set(("properties", "calcinfo_nmo"), 8), r"calcinfo_nmo \(8\) exceeds"),
    # values
    "huge integer": (_set((*SHELL, "exponents", 0), 10**400), r"exponents holds a number that is not finite"),
    "negative exponent": (_set((*SHELL, "exponents", 0), -1.0), r"exponents must be a non-empty list of positive"),
    "zero exponent": (_set((*SHELL, "exponents", 1), 0), r"exponents must be a non-empty list of positive"),
    "l = 7": (_set((*SHELL, "angular_momentum"), [7]), r"integers in 0\.\.6"),
    "l = -1": (_set((*SHELL, "angular_momentum"), [-1]), r"integers in 0\.\.6"),
    "occupation 1.5 per spin": (_set((*OCC_A, 0), 1.5), r"scf_occupations_a\[0\] = 1\.5 is outside \[0, 1\]"),
    "negative occupation": (_set((*OCC_A, 6), -0.25), r"scf_occupations_a\[6\] = -0\.25 is outside"),
    "zero coefficients": (_set((*SHELL, "coefficients"), [[0.0, 0.0, 0.0]]), r"cannot be normalised"),
    "mixed harmonics": (_mixed_harmonics, r"mixes spherical and cartesian"),
    "ECP": (_set(("wavefunction", "basis", "center_data", "O1", "ecp_electrons"), 2), r"ECP"),
    "function type": (_set((*SHELL, "function_type"), "sto"), r"function_type must be 'gto'"),
    "schema version 2": (_set(("schema_version",), 2), r"schema_version must be 1"),
    "schema name": (_set(("schema_name",), "qcschema_input"), r"not a QCSchema result"),
}


def _load_like_sources(path):
    """What hartree.grid.sources.load_wavefunction does with a .json file, in its order."""
    doc = read_result_json(path)
    molecule = Molecule.from_qcschema(doc["molecule"])
    mo_energy, mo_coeff, mo_occ = wavefunction_arrays(doc)
    return molecule, basis_from_qcschema(doc), mo_energy, mo_coeff, mo_occ


def _input_error_only(function, *args):
    """Call function(*args): it may succeed or raise InputError, nothing else."""
    try:
        return function(*args)
    except InputError as error:
        assert str(error) and "\n" not in str(error)
        return None


@pytest.mark.parametrize("name", DAMAGE)
def test_damaged_result_file_is_one_input_error(tmp_path, water, make_result, name):
    from hartree.grid.sources import load_wavefunction

    damage, message = DAMAGE[name]
    result, _ = make_result(water, "sto-3g")
    doc = result_to_qcschema(result)
    damage(doc)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc if doc else []))
    for read in (read_result_json, _load_like_sources, read_wavefunction, load_wavefunction):
        with pytest.raises(InputError, match=message):
            read(path)
    for function in (wavefunction_arrays, basis_from_qcschema):  # in memory, too
        _input_error_only(function, doc)


@pytest.mark.parametrize(
    "text, message",
    [
        ("NaN", "NaN is not a number JSON allows"),
        ("Infinity", "Infinity is not a number JSON allows"),
        ("1e999", "too large for a double"),
    ],
)
def test_non_finite_numbers_are_refused(tmp_path, water, make_result, text, message):
    result, _ = make_result(water, "sto-3g")
    doc = result_to_qcschema(result)
    doc["wavefunction"]["scf_orbitals_a"][5] = 12345.5
    path = tmp_path / "nan.json"
    path.write_text(dumps(doc).replace("12345.5", text))
    with pytest.raises(InputError, match=message):
        read_wavefunction(path)


def test_occupations_must_hold_the_electrons(tmp_path, water, make_result):
    result, _ = make_result(water, "sto-3g")
    doc = result_to_qcschema(result)
    doc["wavefunction"]["scf_occupations_a"][4] = 0.0
    doc["wavefunction"]["scf_occupations_b"][4] = 0.0
    path = tmp_path / "r.json"
    write_json(path, doc)
    with pytest.raises(InputError, match="occupations hold 8 electrons, but the molecule has 10"):
        read_wavefunction(path)


@functools.cache
def _real_document(method):
    """A result document of a real SCF (H2O RHF or OH UHF, STO-3G, CPU)."""
    import hartree.scf

    if method == "rhf":
        mol = Molecule.from_string("O 0 0 0.117; H 0 0.757 -0.469; H 0 -0.757 -0.469")
    else:
        mol = Molecule.from_string("O 0 0 0; H 0 0 0.97", multiplicity=2)
    return json.loads(dumps(result_to_qcschema(hartree.scf.run(mol, basis="sto-3g", method=method, device="cpu"))))


def _paths(value, prefix=()):
    """Every path into a document (long lists: first and last element only)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index in range(len(value)) if len(value) <= 3 else (0, len(value) - 1):
            yield from _paths(value[index], (*prefix, index))


_garbage = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=3)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, -1, 0.0, -1e-300, 1e308, 10**400, 7, 2.5, "1"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), method=st.sampled_from(["rhf", "uhf"]))
def test_mutated_documents_give_input_error_only(tmp_path_factory, data, method):
    """Random damage anywhere in a real document (delete, replace by garbage, shorten or
    lengthen a list): reading it the way ``hartree orbitals`` does either works, giving
    consistent arrays, or raises InputError; never another exception."""
    doc = copy.deepcopy(_real_document(method))
    path = data.draw(st.sampled_from(list(_paths(doc))[1:]), label="path")
    parent, key = _at(doc, path[:-1]), path[-1]
    action = data.draw(st.sampled_from(["delete", "replace", "shorten", "lengthen"]), label="action")
    if action == "delete":
        del parent[key]
    elif action == "replace" or not isinstance(parent[key], list):
        parent[key] = data.draw(_garbage, label="value")
    elif action == "shorten" and parent[key]:
        parent[key].pop()
    else:
        parent[key].append(parent[key][-1] if parent[key] else 0.0)
    file = tmp_path_factory.getbasetemp() / f"mutated-{method}.json"
    file.write_text(json.dumps(doc))
    loaded = _input_error_only(_load_like_sources, file)
    again = _input_error_only(read_wavefunction, file)
    assert (loaded is None) == (again is None)
    if loaded is not None:
        _, basis, mo_energy, mo_coeff, mo_occ = loaded
        assert mo_coeff.shape[-2] == basis.nao and mo_occ.shape == mo_energy.shape
        assert np.all(np.isfinite(mo_coeff)) and np.all((mo_occ >= 0) & (mo_occ <= 2))
    for function in (wavefunction_arrays, basis_from_qcschema):
        _input_error_only(function, doc)
