"""``hartree run`` when the GPU runs out of memory while the kernels are prepared (before the
SCF): --device auto says so in one note and runs on the CPU; --device gpu fails with one line
and exit code 4.  No GPU needed: the device is declared present and the preparation fails."""

import pytest

from .conftest import run_main


class _OOM(Exception):
    """Stands in for cupy.cuda.memory.OutOfMemoryError (recognised by its name)."""


_OOM.__name__ = "OutOfMemoryError"


@pytest.fixture
def gpu_without_memory(monkeypatch):
    from hartree.cli import run_command

    def prepare(console, engine, quiet):
        raise _OOM("out of memory allocating 1 GiB")

    monkeypatch.setattr(run_command, "resolve_device", lambda requested: "cpu" if requested == "cpu" else "gpu")
    monkeypatch.setattr(run_command, "resolve_gpus", lambda gpus, nao: [0])
    monkeypatch.setattr(run_command, "prepare_gpu", prepare)


def test_auto_runs_on_the_cpu_and_says_so(water_xyz, gpu_without_memory):
    code, out, err = run_main(["run", str(water_xyz), "-b", "sto-3g"])
    assert code == 0, err
    assert "note: the GPU ran out of memory while preparing; running on the CPU" in out
    assert "cpu (numba" in out and "Traceback" not in out + err


def test_gpu_fails_with_one_line(water_xyz, gpu_without_memory):
    code, out, err = run_main(["run", str(water_xyz), "-b", "sto-3g", "--device", "gpu"])
    assert code == 4
    assert "the GPU ran out of memory while preparing the kernels; run with --device cpu" in err
    assert "Traceback" not in out + err
