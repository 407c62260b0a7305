"""Device choice without a GPU (runs everywhere): 'auto' falls back to the CPU silently,
'gpu' raises DeviceError with one clear sentence, an unknown name raises InputError."""
import pytest

from hartree.errors import DeviceError, InputError
from hartree.molecule import Molecule


@pytest.fixture
def no_gpu(monkeypatch):
    from hartree.gpu import device
    monkeypatch.setattr(device, "gpu_status", lambda: (False, "cupy cannot be imported (test)"))


def test_gpu_without_gpu_raises(no_gpu):
    from hartree.scf import run
    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    with pytest.raises(DeviceError, match="no CUDA GPU is usable"):
        run(mol, "sto-3g", device="gpu")


def test_auto_without_gpu_uses_cpu(no_gpu):
    import warnings
    from hartree.scf import run
    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(mol, "sto-3g", device="auto")
    assert "cpu" in res.device and res.converged


def test_unknown_device_name():
    from hartree.scf.driver import resolve_device
    with pytest.raises(InputError, match="unknown device"):
        resolve_device("tpu")


def test_gpu_status_answers_without_raising():
    from hartree.gpu import gpu_status
    ok, text = gpu_status()
    assert isinstance(ok, bool) and isinstance(text, str) and text


def test_stored_scf_reference_matches_cpu_engine():
    """data/scf_cpu_reference.json (used on the GPU machine) is what the CPU engine gives."""
    import json
    import os
    import numpy as np
    from hartree.scf import run
    from .test_scf_gpu import CASES, SCF_OPTS, STORED, build
    with open(STORED) as f:
        stored = json.load(f)
    for case in CASES:
        mol, basis, method = build(case)
        r = run(mol, basis, method, device="cpu", **SCF_OPTS)
        assert abs(r.energy - stored[case[0]]["energy"]) < 1e-9, case[0]
        np.testing.assert_allclose(r.dipole, stored[case[0]]["dipole"], atol=1e-6)
    assert os.path.basename(STORED) == "scf_cpu_reference.json"
