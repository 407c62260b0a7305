"""``hartree run --gpus``: parsed and checked before any work, with one-line errors and the
documented exit codes (2 input, 4 device); runs everywhere (no GPU needed)."""

import pytest

from .conftest import run_main


@pytest.fixture
def no_gpu(monkeypatch):
    from hartree.device import selection as device

    monkeypatch.setattr(device, "gpu_status", lambda: (False, "cupy cannot be imported (test)"))


def test_help_documents_gpus():
    code, out, _ = run_main(["run", "--help"])
    assert code == 0 and "--gpus" in out and "0,1" in out


def test_gpus_with_cpu_device_is_an_input_error(water_xyz):
    code, out, err = run_main(["run", str(water_xyz), "-b", "sto-3g", "--device", "cpu", "--gpus", "0,1"])
    assert code == 2
    assert "--gpus applies only to GPU runs" in err + out
    assert "Traceback" not in err + out


def test_gpus_without_a_gpu_is_a_device_error(water_xyz, no_gpu):
    code, out, err = run_main(["run", str(water_xyz), "-b", "sto-3g", "--device", "gpu", "--gpus", "0,1"])
    assert code == 4
    assert "no CUDA GPU is usable" in err + out and "Traceback" not in err + out


def test_auto_without_gpu_ignores_gpus_and_names_the_cpu(water_xyz, no_gpu):
    code, out, err = run_main(["run", str(water_xyz), "-b", "sto-3g", "--gpus", "all"])
    assert code == 0, err
    assert "device:   cpu" in out


def test_default_gpus_use_one_device_for_small_molecules(monkeypatch):
    """gpus=None: all visible GPUs from MULTI_GPU_MIN_NAO basis functions up, the first
    below (a second GPU made a 190-function SCF 10x slower on the device); an explicit
    choice ('all', '0,1') is always honoured."""
    import hartree.device.selection as gdev
    from hartree.scf.driver import MULTI_GPU_MIN_NAO, resolve_gpus

    monkeypatch.setattr(gdev, "gpu_names", lambda: ["GPU A", "GPU B"])
    assert resolve_gpus(None, MULTI_GPU_MIN_NAO - 1) == [0]
    assert resolve_gpus(None, MULTI_GPU_MIN_NAO) == [0, 1]
    assert resolve_gpus("all", 10) == [0, 1]
    assert resolve_gpus("0,1", 10) == [0, 1]
    assert resolve_gpus(None) == [0, 1]
