"""Every JSON document hartree writes is valid against its schema.

* ``hartree run --json``: qcelemental's QCSchema v1 ``AtomicResult`` model, for each
  method (RHF, UHF, ROHF, RI-MP2 on RHF and on UHF references) and the driver hartree
  has (energy), from real runs of the command on tiny molecules (STO-3G).
* ``hartree atom --json`` and ``hartree basis-search --json``: the JSON Schemas (draft
  2020-12) in docs/schemas, from real runs of the commands on He, B and Be.  The Dask
  cluster of the multi-element and basis-search runs is replaced by an in-process
  stand-in (``_SerialClient``) so that no worker processes start; the documents are the
  commands' own.
"""

import contextlib
import copy
import io
import json
import pathlib

import jsonschema
import pytest

from hartree.cli.main import main
from hartree.io.qcschema import document_properties
from hartree.io.qcschema_read import read_wavefunction

try:  # qcelemental >= 0.50 ships v1 and v2 models
    from qcelemental.models.v1 import AtomicResult
except ImportError:  # older qcelemental: the v1 models only
    from qcelemental.models import AtomicResult

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "schemas"

WATER_XYZ = """3
water, Angstrom
O   0.000000   0.000000   0.117300
H   0.000000   0.757200  -0.469200
H   0.000000  -0.757200  -0.469200
"""
OH_XYZ = """2
hydroxyl radical, Angstrom
O   0.000000   0.000000   0.000000
H   0.000000   0.000000   0.970000
"""


def _main(argv):
    """(exit code, stdout, stderr) of hartree's main(argv), in process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------ hartree run
RUNS = {  # method -> (molecule, extra arguments, wavefunction.restricted)
    "rhf": (WATER_XYZ, ["-m", "rhf"], True),
    "uhf": (OH_XYZ, ["-m", "uhf", "-s", "2"], False),
    "rohf": (OH_XYZ, ["-m", "rohf", "-s", "2"], False),
    "mp2-rhf": (WATER_XYZ, ["-m", "mp2", "--aux", "cc-pvdz-rifit"], True),
    "mp2-uhf": (OH_XYZ, ["-m", "mp2", "-s", "2", "--aux", "cc-pvdz-rifit"], False),
}


def _run_json(folder, xyz, extra):
    (folder / "mol.xyz").write_text(xyz)
    out = folder / "out.json"
    code, _, err = _main(["run", folder / "mol.xyz", "-b", "sto-3g", "--device", "cpu", "-q", "--json", out, *extra])
    assert code == 0, err
    return out, json.loads(out.read_text())


@pytest.mark.parametrize("driver", ["energy"])
@pytest.mark.parametrize("method", RUNS)
def test_run_json_is_a_qcschema_atomic_result(tmp_path, method, driver):
    xyz, extra, restricted = RUNS[method]
    path, doc = _run_json(tmp_path, xyz, extra)
    result = AtomicResult(**doc)
    assert result.driver == driver and result.success and result.error is None
    assert result.schema_name == "qcschema_output" and result.schema_version == 1
    assert result.model.method == ("mp2" if method.startswith("mp2") else method)
    assert result.return_result == result.properties.return_energy == doc["return_result"]
    # the wavefunction is kept (protocols.wavefunction = all) and checked by qcelemental
    wfn = result.wavefunction
    nbasis, nmo = result.properties.calcinfo_nbasis, result.properties.calcinfo_nmo
    assert wfn is not None and wfn.basis.nbf == nbasis and wfn.restricted is restricted
    assert wfn.scf_orbitals_a.shape == (nbasis, nmo) and wfn.scf_occupations_a.shape == (nmo,)
    if not restricted:
        assert wfn.scf_orbitals_b.shape == (nbasis, nmo)
    props = document_properties(doc)
    if method.startswith("mp2"):
        assert result.properties.mp2_total_energy == result.return_result
        assert props["scs_mp2_total_energy"] == pytest.approx(
            result.properties.scf_total_energy + props["scs_mp2_correlation_energy"], abs=1e-12
        )
        assert doc["extras"]["hartree"]["mp2"]["reference"] == method[4:]
    # qcelemental does check: the old place of the SCS-MP2 energies is refused
    bad = copy.deepcopy(doc)
    bad["properties"]["scs_mp2_total_energy"] = -1.0
    with pytest.raises(ValueError, match="scs_mp2_total_energy"):
        AtomicResult(**bad)
    # and hartree reads its own document back
    molecule, basis, *_ = read_wavefunction(path)
    assert basis.nao == nbasis and molecule.natm == len(doc["molecule"]["symbols"])


def test_unconverged_run_json_is_a_failed_atomic_result(tmp_path):
    _, doc = _run_json(tmp_path, WATER_XYZ, ["--max-cycle", "1", "--allow-unconverged"])
    result = AtomicResult(**doc)
    assert result.success is False and result.error.error_type == "convergence_error"
    assert "did not converge" in result.error.error_message


# ------------------------------------------------------------------------------ atom, basis-search
def _validator(name):
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


class _SerialClient:
    """Stand-in for a dask.distributed Client: map runs the tasks at once, gather returns them."""

    def map(self, fn, tasks, pure=True):
        return [fn(t) for t in tasks]

    def gather(self, futures):
        return list(futures)


@contextlib.contextmanager
def _serial_dask(*args, **kwargs):
    yield _SerialClient()


HE = ["He", "--alpha", "8.14e-2", "--beta", "1.953", "--delta", "4.504", "--gamma", "1.515"]
B = ["B", "--alpha", "5.976e-2", "--beta", "1.923", "--delta", "5.183", "--gamma", "1.442"]
OPTIMIZE = ["--optimize", "--maxfun", "8", "--rhoend", "1e-3", "--no-plot"]
ATOMS = {
    "dirac-fock": HE + ["--nbs", "s:1:18", "--nucleus", "gaussian"],
    "hartree-fock": HE + ["--nbs", "s:1:18", "--nonrelativistic"],
    "optimize": HE + ["--nbs", "s:1:8", "--nonrelativistic", *OPTIMIZE],
    "autogen": B + ["--nbs", "s:1:12,p:1:8", "--autogen"],
    "per-kappa": B + ["--nbs", "s:1:12,p1/2:1:7,p3/2:2:8"],
}


def _atom_json(folder, argv):
    out = folder / "atom.json"
    code, _, err = _main(["atom", *argv, "--device", "cpu", "-q", "--json", out, "--overwrite"])
    assert code == 0, err
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", ATOMS)
def test_atom_json_matches_its_schema(tmp_path, case):
    validator = _validator("atom_result.schema.json")
    doc = _atom_json(tmp_path, ATOMS[case])
    validator.validate(doc)
    assert ("optimization" in doc) == (case == "optimize")
    assert ("configurations" in doc) == (case == "autogen")
    assert isinstance(doc["exponents"][-1], dict) == (case == "per-kappa")
    broken = copy.deepcopy(doc)  # the schema does check
    broken["energy"] = str(broken["energy"])
    assert not validator.is_valid(broken)
    assert not validator.is_valid({"elements": [doc]})


def test_atom_json_of_several_elements_matches_its_schema(tmp_path, monkeypatch):
    import hartree.atom.basis_search

    monkeypatch.setattr(hartree.atom.basis_search, "dask_client", _serial_dask)
    doc = _atom_json(tmp_path, ["He", "Be", "--nonrelativistic", "--workers", "2", *OPTIMIZE])
    _validator("atom_result.schema.json").validate(doc)
    assert [d["element"] for d in doc["elements"]] == ["He", "Be"]


def _basis_search_json(folder, monkeypatch, argv):
    import hartree.cli.basis_search_command

    monkeypatch.setattr(hartree.cli.basis_search_command, "dask_client", _serial_dask)
    reference = folder / "reference.json"
    reference.write_text(json.dumps({"He": {"energy": -2.8616800}, "comment": "He limits"}))
    out = folder / "search.json"
    code, _, err = _main(
        [
            "basis-search",
            "He",
            "--reference",
            reference,
            "--device",
            "cpu",
            "-q",
            "--rhobeg",
            "0.1",
            "--rhoend",
            "1e-3",
            "--json",
            out,
            *argv,
        ]
    )
    return code, err, json.loads(out.read_text())


def test_basis_search_json_matches_its_schema(tmp_path, monkeypatch):
    validator = _validator("basis_search_result.schema.json")
    code, err, doc = _basis_search_json(
        tmp_path,
        monkeypatch,
        ["--nonrelativistic", "--nucleus", "point", "--threshold", "1e-4", "--nbs", "s:1:9", "--maxfun", "12"],
    )
    assert code == 0, err
    validator.validate(doc)
    (result,) = doc["results"]
    assert result["meets_threshold"] and result["candidates"][0]["step"] == "initial"
    broken = copy.deepcopy(doc)
    broken["results"][0]["windows"][0].append(5)
    assert not validator.is_valid(broken)


def test_basis_search_json_with_a_failed_element_matches_its_schema(tmp_path, monkeypatch):
    """A Dirac-Fock search whose start set misses the threshold: exit code 3, and the
    document records the failure (and the nucleus of the Dirac-Fock run)."""
    code, _, doc = _basis_search_json(
        tmp_path, monkeypatch, ["--nucleus", "gaussian", "--threshold", "1e-9", "--nbs", "s:1:5", "--maxfun", "8"]
    )
    assert code == 3
    _validator("basis_search_result.schema.json").validate(doc)
    assert doc["nucleus"] == "gaussian" and set(doc["results"][0]) == {"element", "error"}
