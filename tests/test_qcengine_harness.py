"""hartree.qcengine: qcengine.compute(AtomicInput, "hartree") runs drivers energy and gradient
equal to `hartree run` (--gradient), and returns a FailedOperation for bad input."""

import json

import numpy as np
import pytest
import qcengine as qcng

import hartree.qcengine  # noqa: F401  (registers the harness)
from tests.cli.conftest import WATER_XYZ, run_main

WATER = {
    "symbols": ["O", "H", "H"],
    # bohr: the Angstrom geometry of WATER_XYZ
    "geometry": (np.array([[0.0, 0.0, 0.1173], [0.0, 0.7572, -0.4692], [0.0, -0.7572, -0.4692]]) / 0.529177210903)
    .ravel()
    .tolist(),
}


def _input(driver, molecule=WATER, basis="6-31g*", keywords=None):
    return {
        "molecule": molecule,
        "driver": driver,
        "model": {"method": "rhf", "basis": basis},
        "keywords": {"device": "cpu", **(keywords or {})},
        "extras": {"tag": "test"},
    }


@pytest.mark.parametrize("driver", ["energy", "gradient"])
def test_energy_and_gradient_equal_the_cli(tmp_path, driver):
    xyz = tmp_path / "water.xyz"
    xyz.write_text(WATER_XYZ)
    out = tmp_path / "out.json"
    extra = ["--gradient"] if driver == "gradient" else []
    code, _, err = run_main(["run", str(xyz), "-b", "6-31g*", "--device", "cpu", "-q", "--json", str(out), *extra])
    assert code == 0, err
    ref = json.loads(out.read_text())
    res = qcng.compute(_input(driver), "hartree", raise_error=True)
    assert res.success and res.driver == driver and res.extras["tag"] == "test"
    assert res.provenance.creator == "hartree"
    tol = 1e-9 if driver == "energy" else 1e-8
    assert abs(res.properties.return_energy - ref["properties"]["return_energy"]) < tol
    if driver == "gradient":
        np.testing.assert_allclose(np.asarray(res.return_result).reshape(-1, 3), ref["return_result"], atol=1e-8)
    else:
        assert abs(res.return_result - ref["return_result"]) < tol


@pytest.mark.parametrize(
    "bad,message",
    [
        (_input("energy", basis="no-such-basis"), "no-such-basis"),
        (_input("energy", molecule={"symbols": ["H", "H"], "geometry": [0, 0, 0, 0, 0, 1e-4]}), "atoms"),
        (_input("hessian"), "drivers energy, gradient"),
        (_input("energy", keywords={"no_such_option": 1}), "no_such_option"),
    ],
)
def test_bad_input_is_a_failed_operation(bad, message):
    res = qcng.compute(bad, "hartree")
    assert not res.success and type(res).__name__ == "FailedOperation"
    assert message in res.error.error_message
