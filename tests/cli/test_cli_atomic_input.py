"""``hartree run input.json`` on a QCSchema AtomicInput (v1 and v2, as qcelemental defines
them): the same numbers as ``hartree run water.xyz`` with the same options, the command
line over the file over the defaults, and broken documents refused in one line (exit 2).
The keyword mapping is the QCEngine harness's (hartree.keywords)."""

import dataclasses
import json

import numpy as np
import pytest
from qcelemental.models import v1 as qcel_v1
from qcelemental.models import v2 as qcel_v2

from hartree.cli.main import EXIT_CONVERGENCE, EXIT_INPUT
from hartree.io.qcschema_input import KEYWORDS, check_atomic_input
from hartree.keywords import scf_options
from hartree.molecule import Molecule
from hartree.scf import SCFOptions
from tests.cli.conftest import WATER_XYZ

HEH_XYZ = "2\nHeH+\nHe 0 0 0\nH 0 0 0.774\n"


def _molecule(text, charge=None):
    return Molecule.from_string(text, charge=charge).to_qcschema()  # bohr, the XYZ's exact numbers


def atomic_input(version=1, driver="energy", method="rhf", basis="sto-3g", keywords=None, xyz=WATER_XYZ, charge=None):
    """An AtomicInput document of QCSchema ``version`` (1 or 2), validated by qcelemental."""
    model = {"method": method} if basis is None else {"method": method, "basis": basis}
    keywords = {"device": "cpu", **(keywords or {})}
    if version == 1:
        doc = {
            "schema_name": "qcschema_input",
            "schema_version": 1,
            "molecule": _molecule(xyz, charge),
            "driver": driver,
            "model": model,
            "keywords": keywords,
        }
        qcel_v1.AtomicInput(**doc)
    else:
        doc = {
            "schema_name": "qcschema_atomic_input",
            "schema_version": 2,
            "molecule": {**_molecule(xyz, charge), "schema_version": 3},
            "specification": {"driver": driver, "model": model, "keywords": keywords, "program": "hartree"},
        }
        qcel_v2.AtomicInput(**doc)
    return doc


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _result(cli, tmp_path, *args):
    out = tmp_path / "out.json"
    code, _, err = cli("run", *args, "-q", "--json", out, "--overwrite")
    assert code == 0, err
    return json.loads(out.read_text())


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("driver", ["energy", "gradient"])
def test_atomic_input_equals_the_xyz_run(cli, tmp_path, water_xyz, version, driver):
    flags = ["--gradient"] if driver == "gradient" else []
    ref = _result(cli, tmp_path, water_xyz, "-b", "sto-3g", "--device", "cpu", *flags)
    doc = _result(cli, tmp_path, _write(tmp_path, "in.json", atomic_input(version, driver)))
    assert doc["driver"] == driver and doc["model"] == {"method": "rhf", "basis": "sto-3g"}
    assert abs(doc["properties"]["return_energy"] - ref["properties"]["return_energy"]) < 1e-10
    if driver == "gradient":
        np.testing.assert_allclose(doc["return_result"], ref["return_result"], rtol=0, atol=1e-10)
        assert doc["keywords"]["conv_tol"] == 1e-9 and doc["keywords"]["conv_tol_grad"] == 1e-7
    assert {k: v for k, v in doc["keywords"].items() if k != "device"} == ref["keywords"]


def test_command_line_overrides_the_file(cli, tmp_path, water_xyz):
    """--basis, --method and --max-cycle win over model and keywords; keywords without an
    option (conv_tol_grad) reach the SCF; molecular_charge is the molecule's charge."""
    path = _write(tmp_path, "in.json", atomic_input(basis="6-31g", keywords={"max_cycle": 2, "conv_tol_grad": 1e-8}))
    code, _, err = cli("run", path, "-q")  # the file's max_cycle: 2 cycles do not converge
    assert code == EXIT_CONVERGENCE and "did not converge in 2" in err
    doc = _result(cli, tmp_path, path, "-b", "sto-3g", "--max-cycle", "60")
    ref = _result(cli, tmp_path, water_xyz, "-b", "sto-3g", "--device", "cpu")
    assert abs(doc["properties"]["return_energy"] - ref["properties"]["return_energy"]) < 1e-10
    assert doc["keywords"]["max_cycle"] == 60 and doc["keywords"]["conv_tol_grad"] == 1e-8
    assert doc["model"]["basis"] == "sto-3g"

    heh = _write(tmp_path, "heh.json", atomic_input(method="uhf", xyz=HEH_XYZ, charge=1))
    (tmp_path / "heh.xyz").write_text(HEH_XYZ)
    doc = _result(cli, tmp_path, heh, "--method", "rhf")
    ref = _result(cli, tmp_path, tmp_path / "heh.xyz", "-b", "sto-3g", "--charge", "1", "--device", "cpu")
    assert doc["model"]["method"] == "rhf" and doc["molecule"]["molecular_charge"] == 1.0
    assert abs(doc["properties"]["return_energy"] - ref["properties"]["return_energy"]) < 1e-10


def test_basis_needed_only_when_the_file_has_none(cli, tmp_path, water_xyz):
    path = _write(tmp_path, "nobasis.json", atomic_input(basis=None))
    code, _, err = cli("run", path, "-q")
    assert code == EXIT_INPUT and err.count("\n") == 1
    assert "--basis is required" in err and "names no basis (model.basis)" in err
    code, _, err = cli("run", water_xyz, "-q")
    assert code == EXIT_INPUT and "--basis is required" in err
    doc = _result(cli, tmp_path, path, "-b", "sto-3g")
    ref = _result(cli, tmp_path, water_xyz, "-b", "sto-3g", "--device", "cpu")
    assert abs(doc["properties"]["return_energy"] - ref["properties"]["return_energy"]) < 1e-10


def _broken(change):
    def make():
        doc = atomic_input(1)
        change(doc)
        return doc

    return make


def _set(path, value):
    def change(doc):
        *parents, last = path.split(".")
        target = doc
        for key in parents:
            target = target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value

    return change


BROKEN = [
    ("driver hessian", _set("driver", "hessian"), "driver 'hessian': hartree runs the drivers energy, gradient"),
    ("driver properties", _set("driver", "properties"), "driver 'properties'"),
    ("driver unknown", _set("driver", "dance"), "driver must be one of energy, gradient"),
    ("driver missing", _set("driver", KeyError), "driver is missing"),
    ("molecule missing", _set("molecule", KeyError), "molecule is missing"),
    ("molecule bad", _set("molecule.symbols", ["Xx", "H", "H"]), "molecule:"),
    ("multiplicity", _set("molecule.molecular_multiplicity", 2), "multiplicity 2 is incompatible"),
    ("method missing", _set("model.method", KeyError), "model.method is missing"),
    ("method unknown", _set("model.method", "no-such-method"), "unknown method 'no-such-method'"),
    ("method number", _set("model.method", 3), "model.method must be rhf, uhf, rohf, mp2 or a functional name"),
    ("grid with rhf", _set("keywords.grid_level", 2), "grid_level applies only to DFT functionals, not to RHF"),
    ("basis object", _set("model.basis", {"name": "x"}), "a basis-set object is not supported"),
    ("basis number", _set("model.basis", 3), "model.basis must be a basis-set name"),
    ("model extra", _set("model.functional", "x"), "unknown member model.functional"),
    ("keyword unknown", _set("keywords.no_such_option", 1), "unknown keyword 'no_such_option'"),
    ("keyword type", _set("keywords.max_cycle", "ten"), "keywords.max_cycle must be an integer"),
    ("keyword bool", _set("keywords.conv_tol", True), "keywords.conv_tol must be a number"),
    ("keyword range", _set("keywords.damping", 2.0), "damping must lie in [0, 1)"),
    ("keyword device", _set("keywords.device", "tpu"), "keywords.device must be one of"),
    ("keywords list", _set("keywords", [1]), "keywords must be a JSON object"),
    ("member unknown", _set("keyword", {}), "unknown member keyword"),
    ("version", _set("schema_version", 2), "schema_version must be 1"),
    ("id", _set("id", 7), "id must be a string or null"),
    ("extras", _set("extras", "x"), "extras must be a JSON object"),
]


@pytest.mark.parametrize("change,message", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_broken_documents_are_one_line_and_exit_2(cli, tmp_path, change, message):
    path = _write(tmp_path, "bad.json", _broken(change)())
    out = tmp_path / "o.json"
    code, stdout, err = cli("run", path, "-q", "--json", out)
    assert code == EXIT_INPUT, err
    assert err.count("\n") == 1 and err.startswith(f"hartree: error: {path}") and message in err, err
    assert not out.exists() and stdout == ""


def test_v2_documents_are_checked_in_the_specification(cli, tmp_path):
    doc = atomic_input(2)
    doc["specification"]["driver"] = "hessian"
    code, _, err = cli("run", _write(tmp_path, "a.json", doc), "-q")
    assert code == EXIT_INPUT and "specification.driver 'hessian'" in err and "hartree freq" in err
    doc = atomic_input(2)
    del doc["specification"]
    code, _, err = cli("run", _write(tmp_path, "b.json", doc), "-q")
    assert code == EXIT_INPUT and "specification is missing" in err
    doc = atomic_input(2)
    doc["driver"] = "energy"  # a v1 member in a v2 document
    code, _, err = cli("run", _write(tmp_path, "c.json", doc), "-q")
    assert code == EXIT_INPUT and "unknown member driver" in err


def test_record_fields_and_keyword_table():
    record = check_atomic_input(atomic_input(2, "gradient", method="UHF", keywords={"max_cycle": 40.0}))
    assert (record.driver, record.method, record.basis, record.schema_version) == ("gradient", "uhf", "sto-3g", 2)
    assert record.keywords == {"device": "cpu", "max_cycle": 40} and isinstance(record.keywords["max_cycle"], int)
    assert record.molecule.natm == 3 and record.molecule.charge == 0 and record.molecule.multiplicity == 1
    fields = {f.name for f in dataclasses.fields(SCFOptions)}
    assert set(KEYWORDS) - {"device", "unrestricted", "grid_response"} <= fields  # every other keyword is an SCF option


def test_gradient_keywords_are_tightened_not_loosened():
    """The rule shared with the QCEngine harness: a gradient's SCF converges at least to
    GRADIENT_SCF_DEFAULTS (1e-9 Eh, 1e-7), tighter keywords are kept, energies untouched."""
    device, options = scf_options("gradient", {"conv_tol": 1e-6, "conv_tol_grad": 1e-10, "device": "cpu"})
    assert device == "cpu" and options == {"conv_tol": 1e-9, "conv_tol_grad": 1e-10}
    assert scf_options("energy", {"conv_tol": 1e-6}) == ("auto", {"conv_tol": 1e-6})
