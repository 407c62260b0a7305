"""End-to-end ``hartree run --method mp2``: RI-MP2 energies checked against PySCF's DF-MP2.

PySCF gets exactly our orbital and auxiliary basis data (tests.helpers.to_pyscf,
pyscf_basis_dict) and runs its own SCF, so the whole chain (SCF, aux basis, RI-MP2,
JSON) is checked.  Each calculation runs once per module and is shared by the tests.
"""

import json

import pytest
from pyscf import scf as pscf
from pyscf.mp import dfmp2, dfump2

from hartree.basis import load_basis
from hartree.cli.main import EXIT_INPUT
from hartree.io.qcschema import document_properties
from hartree.molecule import Molecule
from hartree.mp2 import load_aux_basis
from tests.helpers import pyscf_basis_dict, to_pyscf

EH_TOL = 1e-8

OH_XYZ = """2
hydroxyl radical, Angstrom
O   0.000000   0.000000   0.000000
H   0.000000   0.000000   0.970000
"""


def _pyscf_dfmp2(xyz, basis_name, multiplicity=1, frozen=0):
    """(SCF energy, DF-MP2 object) from PySCF with hartree's basis and default aux basis data."""
    mol = Molecule.from_xyz(xyz, multiplicity=multiplicity)
    basis = load_basis(mol, basis_name)
    aux = load_aux_basis(mol, basis)
    pmol = to_pyscf(mol, basis)
    uhf = multiplicity != 1
    mf = (pscf.UHF if uhf else pscf.RHF)(pmol)
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-8
    e_scf = mf.kernel()
    assert mf.converged
    pt = (dfump2.DFUMP2 if uhf else dfmp2.DFMP2)(mf, frozen=frozen or None)
    pt.with_df.auxbasis = pyscf_basis_dict(mol, aux)
    pt.kernel()
    assert pt.with_df.auxmol.nao == aux.nao
    return e_scf, pt


@pytest.fixture(scope="module")
def files(tmp_path_factory, water_text):
    directory = tmp_path_factory.mktemp("mp2")
    water, oh = directory / "water.xyz", directory / "oh.xyz"
    water.write_text(water_text)
    oh.write_text(OH_XYZ)
    return directory, water, oh


@pytest.fixture(scope="module")
def water_run(files, cli):
    """Water/cc-pVDZ RI-MP2 (default aux): (code, stdout, stderr, JSON document)."""
    directory, water, _ = files
    out_json = directory / "water-mp2.json"
    code, out, err = cli("run", water, "-b", "cc-pvdz", "--method", "mp2", "--conv-tol", "1e-11", "--json", out_json)
    doc = json.loads(out_json.read_text()) if code == 0 else None
    return code, out, err, doc


@pytest.fixture(scope="module")
def water_fc_run(files, cli):
    """The same with --frozen-core and --quiet."""
    directory, water, _ = files
    out_json = directory / "water-mp2-fc.json"
    code, out, err = cli(
        "run",
        water,
        "-b",
        "cc-pvdz",
        "-m",
        "mp2",
        "--frozen-core",
        "--quiet",
        "--conv-tol",
        "1e-11",
        "--json",
        out_json,
    )
    doc = json.loads(out_json.read_text()) if code == 0 else None
    return code, out, err, doc


@pytest.fixture(scope="module")
def oh_run(files, cli):
    """OH radical/6-31G*, multiplicity 2: UHF reference by default."""
    directory, _, oh = files
    out_json = directory / "oh-mp2.json"
    code, out, err = cli(
        "run", oh, "-b", "6-31g*", "-m", "mp2", "--multiplicity", "2", "--conv-tol", "1e-11", "--json", out_json
    )
    doc = json.loads(out_json.read_text()) if code == 0 else None
    return code, out, err, doc


@pytest.fixture(scope="module")
def water_reference(files):
    return _pyscf_dfmp2(files[1], "cc-pvdz")


def test_water_mp2_matches_pyscf_dfmp2(water_run, water_reference):
    code, _, err, doc = water_run
    assert code == 0, err
    e_scf, pt = water_reference
    props = document_properties(doc)  # QCSchema's properties and hartree's extra ones
    assert abs(props["scf_total_energy"] - e_scf) < EH_TOL
    assert abs(props["mp2_total_energy"] - pt.e_tot) < EH_TOL
    assert abs(props["mp2_correlation_energy"] - pt.e_corr) < EH_TOL
    assert abs(props["mp2_opposite_spin_correlation_energy"] - pt.e_corr_os) < EH_TOL
    assert abs(props["mp2_same_spin_correlation_energy"] - pt.e_corr_ss) < EH_TOL
    assert props["scs_mp2_correlation_energy"] == pytest.approx(1.2 * pt.e_corr_os + pt.e_corr_ss / 3.0, abs=EH_TOL)
    assert "scs_mp2_correlation_energy" not in doc["properties"]  # not a QCSchema v1 field
    assert props["return_energy"] == doc["return_result"] == props["mp2_total_energy"]
    assert doc["model"] == {"method": "mp2", "basis": "cc-pvdz"}
    mp2 = doc["extras"]["hartree"]["mp2"]
    assert mp2["reference"] == "rhf" and mp2["frozen_core"] == 0 and mp2["precision"] == "fp64"
    assert mp2["aux_basis"].lower() == "cc-pvdz-rifit" and mp2["naux"] == pt.with_df.auxmol.nao
    assert (mp2["nocc"], mp2["nvir"]) == (5, 19)
    assert mp2["device"].startswith("cpu") and mp2["wall_time"] > 0
    assert doc["keywords"]["method"] == "mp2" and doc["keywords"]["reference"] == "rhf"


def test_water_mp2_report(water_run):
    code, out, err, doc = water_run
    assert code == 0, err
    assert err == ""
    for text in (
        "MP2/cc-pvdz",
        "RI-MP2",
        "SCF energy (RHF)",
        "opposite-spin correlation",
        "same-spin correlation",
        "MP2 correlation",
        "MP2 total",
        "SCS-MP2 correlation",
        "SCS-MP2 total",
        "aux basis",
        "(84 functions)",
        "frozen core orbitals",
        "precision",
        "fp64",
        "device",
        "time",
    ):
        assert text in out, text
    lines = out.strip().splitlines()
    e_mp2 = doc["properties"]["mp2_total_energy"]
    assert lines[-1] == f"E(MP2/cc-pvdz) = {e_mp2:.10f} Eh"
    assert lines[-2].startswith("E(RHF/cc-pvdz) = ")


def test_frozen_core_matches_pyscf(water_fc_run, water_run, files):
    code, out, err, doc = water_fc_run
    assert code == 0, err
    _, pt = _pyscf_dfmp2(files[1], "cc-pvdz", frozen=1)
    props = doc["properties"]
    assert abs(props["mp2_total_energy"] - pt.e_tot) < EH_TOL
    assert abs(props["mp2_correlation_energy"] - pt.e_corr) < EH_TOL
    full = water_run[3]["properties"]["mp2_correlation_energy"]
    assert props["mp2_correlation_energy"] > full + 1e-4  # less correlation with a frozen 1s
    assert doc["extras"]["hartree"]["mp2"]["frozen_core"] == 1
    assert doc["keywords"]["frozen_core"] is True


def test_quiet_prints_only_the_mp2_line(water_fc_run):
    code, out, err, doc = water_fc_run
    assert code == 0, err
    assert out.strip().splitlines() == [f"E(MP2/cc-pvdz) = {doc['properties']['mp2_total_energy']:.10f} Eh"]


def test_doublet_runs_uhf_mp2(oh_run, files):
    code, out, err, doc = oh_run
    assert code == 0, err
    assert "UHF reference" in out and "SCF energy (UHF)" in out
    _, pt = _pyscf_dfmp2(files[2], "6-31g*", multiplicity=2)
    props = doc["properties"]
    assert abs(props["mp2_total_energy"] - pt.e_tot) < EH_TOL
    assert abs(props["mp2_same_spin_correlation_energy"] - pt.e_corr_ss) < EH_TOL
    mp2 = doc["extras"]["hartree"]["mp2"]
    assert mp2["reference"] == "uhf" and doc["extras"]["hartree"]["scf_method"] == "uhf"
    assert mp2["nocc"] == [5, 4]
    assert out.strip().splitlines()[-1] == f"E(MP2/6-31g*) = {props['mp2_total_energy']:.10f} Eh"


def test_unknown_aux_is_one_line_and_exit_2(files, cli):
    directory, water, _ = files
    out_json = directory / "never.json"
    code, out, err = cli("run", water, "-b", "cc-pvdz", "-m", "mp2", "--aux", "no-such-rifit", "--json", out_json)
    assert code == EXIT_INPUT
    assert err.count("\n") == 1 and err.startswith("hartree: error: --aux")
    assert "no-such-rifit" in err
    assert "cycle" not in out  # failed before the SCF started
    assert not out_json.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (("-b", "sto-6g", "-m", "mp2"), "no default auxiliary basis"),
        (("-b", "sto-3g", "--frozen-core"), "only with --method mp2"),
        (("-b", "sto-3g", "-m", "mp2", "--multiplicity", "3", "--reference", "rhf"), "--reference uhf"),
    ],
)
def test_other_mp2_input_errors(files, cli, argv, message):
    code, _, err = cli("run", files[1], *argv)
    assert code == EXIT_INPUT
    assert err.count("\n") == 1 and message in err


def test_help_mentions_mp2(cli):
    code, out, _ = cli("run", "--help")
    assert code == 0
    text = " ".join(out.split())
    for option in ("--reference", "--aux", "--frozen-core", "--precision", "mp2"):
        assert option in text, option
    assert "--method mp2 --frozen-core" in text
