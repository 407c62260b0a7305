"""The Python API's contract: refusals before any SCF, an unconverged optimization raising
ConvergenceError with its result (or returning it with allow_unconverged), and geomeTRIC
imported only when an optimization runs (it is an optional dependency)."""

import subprocess
import sys

import numpy as np
import pytest

from hartree.errors import ConvergenceError, InputError
from hartree.molecule import Molecule
from hartree.optimize import optimize

from .conftest import WATER_XYZ


@pytest.mark.parametrize(
    "molecule, kwargs, message",
    [
        (WATER_XYZ, {"method": "mp2"}, "RI-MP2 does not have yet"),
        (WATER_XYZ, {"convergence": "tight"}, "unknown convergence set 'tight'"),
        (WATER_XYZ, {"coordinates": "zmat"}, "unknown coordinate system 'zmat'"),
        (WATER_XYZ, {"max_steps": 0}, "max_steps must be an integer of at least 1"),
        (WATER_XYZ, {"constraints": "$freeze\nxyz 1\n", "coordinates": "cart"}, "delocalized internal"),
        (WATER_XYZ, {"constraints": "$scan\ndistance 1 2 0.9 1.0 3\n"}, "$scan"),
        ("He 0 0 0", {}, "at least two atoms"),
    ],
    ids=["mp2", "set", "coordinates", "steps", "cart-constraints", "scan", "one-atom"],
)
def test_refusals(molecule, kwargs, message):
    with pytest.raises(InputError, match=message.replace("$", r"\$")):
        optimize(Molecule.from_string(molecule), "sto-3g", **{"method": "rhf", **kwargs})


def test_unconverged_raises_with_the_result(work):
    molecule = Molecule.from_string(WATER_XYZ)
    with pytest.raises(ConvergenceError, match="did not converge in 2 steps") as caught:
        optimize(molecule, "sto-3g", "rhf", device="cpu", max_steps=2)
    result = caught.value.result
    assert result.converged is False and result.iterations == 2 and len(result.steps) == 3
    again = optimize(molecule, "sto-3g", "rhf", device="cpu", max_steps=2, allow_unconverged=True)
    np.testing.assert_allclose(again.energies, result.energies, rtol=0, atol=1e-9)
    assert again.molecule is again.steps[-1].molecule and not again.converged


def test_geometric_is_imported_only_when_optimizing():
    code = (
        "import sys, hartree.optimize, hartree.cli.main; "
        "print(sorted(m for m in sys.modules if m == 'geometric' or m.startswith('geometric.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
