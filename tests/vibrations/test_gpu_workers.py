"""One worker process per GPU (hartree.vibrations.executors.GPUWorkersExecutor), run on the
CPU: two workers whose CUDA_VISIBLE_DEVICES ('0', '1') is only recorded, with tasks on the
CPU, give the Hessian of the serial run (water RHF/sto-3g, 18 displaced gradients; the
same code on the same inputs, so equal to 1e-10 Eh/bohr^2), both take tasks, are started
once and reused; a task's exception surfaces as that one exception, and it, a worker that
dies or a run abandoned by its caller (an interruption) leave no child process; the
mapping of this process's GPU ordinals to the workers' CUDA_VISIBLE_DEVICES; the refusals
of the API and of ``hartree freq --gpus``.  The same on two real GPUs:
tests/gpu/test_freq_workers.py."""

import functools
import multiprocessing
import os
import signal
import sys

import numpy as np
import pytest

from hartree.errors import ConvergenceError, DeviceError, InputError
from hartree.gradients.scf_gradient import scf_gradient
from hartree.scf import run
from hartree.vibrations import frequencies
from hartree.vibrations.executors import GPUWorkersExecutor, visible_devices
from hartree.vibrations.hessian import FREQUENCY_SCF_DEFAULTS, finite_difference_hessian, prepare_worker
from tests.vibrations.conftest import WATER_XYZ, run_main


def _cpu_workers():
    """Two workers that see CUDA_VISIBLE_DEVICES '0' and '1' and run their tasks on the CPU."""
    return GPUWorkersExecutor(["0", "1"], task_device="cpu", prepare=functools.partial(prepare_worker, "cpu"))


def _gone(pids):
    """True when no process of ``pids`` exists any more (none left running or unreaped)."""
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return not multiprocessing.active_children()


@pytest.fixture(scope="module")
def water_reference(water):
    """The water RHF/sto-3g reference gradient and its serial finite-difference Hessian."""
    reference = scf_gradient(run(water, "sto-3g", "rhf", device="cpu", **FREQUENCY_SCF_DEFAULTS))
    return reference, finite_difference_hessian(reference, device="cpu")


def test_two_workers_give_the_serial_hessian(water_reference):
    reference, serial = water_reference
    events = []
    with _cpu_workers() as executor:
        pids = executor.pids
        parallel = finite_difference_hessian(reference, executor=executor, device="cpu", progress=events.append)
        assert executor.pids == pids  # still running, ready for another run
        ignored = list(executor.run(signal.getsignal, [signal.SIGINT] * 2))  # Ctrl-C is for the parent
        assert ignored == [signal.SIG_IGN] * 2 and executor.pids == pids
    np.testing.assert_allclose(parallel.hessian, serial.hessian, rtol=0, atol=1e-10)
    np.testing.assert_allclose(parallel.dipole_derivatives, serial.dipole_derivatives, rtol=0, atol=1e-10)
    done = [e for e in events if e.stage == "done"]
    assert sorted(e.index for e in done) == list(range(18))
    assert {e.visible_devices for e in done} == {"0", "1"}  # both workers took tasks
    assert {e.pid for e in done} == set(pids) and os.getpid() not in pids  # started once, reused
    assert executor.description == "2 worker processes (CUDA_VISIBLE_DEVICES 0,1, tasks on the cpu)"
    assert _gone(pids)


def test_task_error_is_one_error_and_stops_the_workers(water_reference):
    """An SCF that cannot converge in one cycle: its ConvergenceError (naming the
    displacement) is what the caller gets, and the workers are gone."""
    reference, _ = water_reference
    options = {**FREQUENCY_SCF_DEFAULTS, "max_cycle": 1}
    with _cpu_workers() as executor:
        pids = executor.pids
        with pytest.raises(ConvergenceError, match="the SCF displaced along .* did not converge"):
            finite_difference_hessian(reference, executor=executor, device="cpu", scf_options=options)
        assert executor.pids == [] and _gone(pids)
        with pytest.raises(DeviceError, match="were stopped"):
            list(executor.run(sys.exit, [3]))


def test_interrupted_run_stops_the_workers(water_reference):
    """A stop request while the displacements run (here raised by the progress callback,
    as the CLI's SIGINT handler raises it in the main thread)."""
    reference, _ = water_reference

    def interrupt(event):
        if event.stage == "done" and event.done == 2:
            raise KeyboardInterrupt

    with _cpu_workers() as executor:
        pids = executor.pids
        with pytest.raises(KeyboardInterrupt):
            finite_difference_hessian(reference, executor=executor, device="cpu", progress=interrupt)
        assert executor.pids == [] and _gone(pids)


def test_a_worker_that_dies_is_a_device_error():
    """sys.exit(3) as the task: SystemExit is not an error of the task but ends its worker
    (the task functions live in modules a spawned worker imports, not in this test file)."""
    with GPUWorkersExecutor(["0", "1"], task_device="cpu") as executor:
        pids = executor.pids
        with pytest.raises(DeviceError, match=r"CUDA_VISIBLE_DEVICES=[01] ended with exit code 3 while running task"):
            list(executor.run(sys.exit, [3, 3, 3, 3]))
        assert _gone(pids)


def test_visible_devices_follow_this_process():
    """Ordinals of this process name the entries of its own CUDA_VISIBLE_DEVICES."""
    assert visible_devices([0, 1], {}) == ["0", "1"]
    assert visible_devices([1, 0], {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["3", "2"]
    assert visible_devices([1], {"CUDA_VISIBLE_DEVICES": "GPU-aa, GPU-bb"}) == ["GPU-bb"]


def test_refusals(tmp_path, water):
    xyz = tmp_path / "water.xyz"
    xyz.write_text(WATER_XYZ)
    for extra in (["--workers", "2"], ["--scheduler", "tcp://x:1"]):
        code, stdout, err = run_main("freq", xyz, "-b", "sto-3g", "--gpus", "0,1", *extra)
        assert code == 2 and err.strip().count("\n") == 0, err
        assert "--gpus runs the displaced gradients on one worker process per GPU and excludes" in err
        assert "/18]" not in stdout
    code, _, err = run_main("freq", xyz, "-b", "sto-3g", "--device", "cpu", "--gpus", "0,1")
    assert code == 2 and "--gpus applies only to GPU runs" in err
    with pytest.raises(InputError, match="gpus applies only to GPU runs"):
        frequencies(water, "sto-3g", "rhf", device="cpu", gpus=[0, 1])
