"""The finite-difference Hessian on one worker process per GPU (``gpus=[0, 1]``,
``hartree freq --device gpu --gpus 0,1``) equals the one-GPU serial Hessian (water
RHF/6-31g, 18 displaced gradients): the same GPU code on the same inputs, so to 1e-8
Eh/bohr^2 (far below the 1e-6 SCF noise of the Hessian, hessian.py); both GPUs take
displacements.  Needs two GPUs; the same machinery on the CPU: tests/vibrations/test_gpu_workers.py."""

import contextlib
import io
import json

import numpy as np
import pytest

from hartree.cli.main import main
from hartree.errors import InputError
from hartree.molecule import Molecule
from hartree.vibrations import SerialExecutor, frequencies
from hartree.vibrations.executors import visible_devices

pytestmark = pytest.mark.gpu

WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"  # Angstrom
WATER_XYZ = "3\nwater, Angstrom\nO 0.0 0.0 0.1173\nH 0.0 0.7572 -0.4692\nH 0.0 -0.7572 -0.4692\n"


def run_main(*argv):
    """``hartree ARGV`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _two_gpus():
    from hartree.device.selection import gpu_names

    if len(gpu_names()) < 2:
        pytest.skip("needs two CUDA devices")


def test_two_gpu_workers_give_the_one_gpu_hessian(tmp_path):
    _two_gpus()
    water = Molecule.from_string(WATER)
    serial = frequencies(water, "6-31g", "rhf", device="gpu", gpus=[0])
    events = []
    parallel = frequencies(water, "6-31g", "rhf", device="gpu", gpus=[0, 1], progress=events.append)
    assert serial.executor == "serial (this process)"
    assert parallel.executor == "2 GPU worker processes (GPUs 0,1)"
    assert parallel.gradient.scf.device.startswith("cuda")
    np.testing.assert_allclose(parallel.hessian, serial.hessian, rtol=0, atol=1e-8)
    np.testing.assert_allclose(parallel.dipole_derivatives, serial.dipole_derivatives, rtol=0, atol=1e-8)
    np.testing.assert_allclose(parallel.frequencies, serial.frequencies, rtol=0, atol=1e-3)
    done = [e for e in events if e.stage == "done"]
    assert {e.visible_devices for e in done} == set(visible_devices([0, 1]))  # both GPUs worked

    xyz, out = tmp_path / "water.xyz", tmp_path / "water-freq.json"
    xyz.write_text(WATER_XYZ)
    code, stdout, err = run_main("freq", xyz, "-b", "6-31g", "--device", "gpu", "--gpus", "0,1", "--json", out)
    assert code == 0, err
    assert "2 GPU worker processes (GPUs 0,1)" in stdout
    hessian = np.array(json.loads(out.read_text())["return_result"]).reshape(9, 9)
    np.testing.assert_allclose(hessian, serial.hessian, rtol=0, atol=1e-8)


def test_several_gpus_and_an_executor_are_refused():
    _two_gpus()
    water = Molecule.from_string(WATER)
    with pytest.raises(InputError, match="one worker process per GPU"):
        frequencies(water, "sto-3g", "rhf", device="gpu", gpus=[0, 1], executor=SerialExecutor())
