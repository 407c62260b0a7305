"""``hartree run --gradient``: the table, the QCSchema gradient document (qcelemental's
AtomicResult), the numbers equal to the Python API's (itself checked against PySCF in
tests/gradients), and the refusals (one line, exit code 2)."""

import json

import numpy as np
import pytest

from hartree.gradients import gradient
from hartree.molecule import Molecule

try:  # qcelemental >= 0.50 ships v1 and v2 models
    from qcelemental.models.v1 import AtomicResult
except ImportError:  # older qcelemental: the v1 models only
    from qcelemental.models import AtomicResult

OH_XYZ = """2
hydroxyl radical, Angstrom
O   0.000000   0.000000   0.000000
H   0.000000   0.100000   0.970000
"""


@pytest.mark.parametrize("method", ["rhf", "uhf"])
def test_gradient_table_and_json(cli, tmp_path, water_xyz, method):
    path = water_xyz if method == "rhf" else tmp_path / "oh.xyz"
    if method == "uhf":
        path.write_text(OH_XYZ)
    out = tmp_path / "grad.json"
    code, stdout, err = cli("run", path, "-b", "6-31g*", "-m", method, "--device", "cpu", "--gradient", "--json", out)
    assert code == 0, err
    assert "nuclear gradient dE/dR (Eh/bohr)" in stdout and "gradient: max |dE/dR|" in stdout
    doc = json.loads(out.read_text())
    result = AtomicResult(**doc)
    assert result.driver == "gradient" and result.success
    mol = Molecule.from_file(path)
    ref = gradient(mol, "6-31g*", method, device="cpu")
    got = np.asarray(result.return_result).reshape(-1, 3)
    np.testing.assert_allclose(got, ref.gradient, rtol=0, atol=1e-8)
    np.testing.assert_allclose(np.asarray(result.properties.return_gradient).reshape(-1, 3), got, rtol=0, atol=0)
    assert abs(result.properties.return_energy - ref.energy) < 1e-9
    assert doc["keywords"]["conv_tol_grad"] == 1e-7 and doc["keywords"]["conv_tol"] == 1e-9
    parts = doc["extras"]["hartree"]["gradient_components"]
    np.testing.assert_allclose(sum(np.asarray(v) for v in parts.values()), got, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["-m", "mp2"], "--gradient: RI-MP2 has no analytic gradient yet"),
        (["--allow-unconverged"], "--gradient needs a converged SCF"),
    ],
)
def test_gradient_refusals(cli, water_xyz, extra, message):
    code, stdout, err = cli("run", water_xyz, "-b", "sto-3g", "--device", "cpu", "--gradient", *extra)
    assert code == 2
    assert err.strip().count("\n") == 0 and message in err
