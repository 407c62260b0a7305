"""``hartree batch`` on real Dask clusters (local worker processes) and its planning parts.

Acceptance: a LocalCluster of 2 workers on three molecules and one broken input writes three
results equal to the Python API's numbers, records the failure, exits with
EXIT_SOME_FAILED, and a rerun skips the three; a worker killed (SIGKILL) while it runs a
task has the task run again and finished; SIGTERM stops a batch with the finished results
kept and no worker left.  Without dask, one line names the extra to install.  Molecules are
tiny (H2, HeH+, water in STO-3G); the workers load the suite's numba cache
(HARTREE_CACHE_DIR, inherited)."""

import csv
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
from qcelemental.models.v1 import AtomicInput, AtomicResult

from hartree.batch.cluster import ClusterPlan, open_client, plan_cluster
from hartree.batch.inputs import BatchOptions, plan, unique_names
from hartree.cli.main import EXIT_CODES, EXIT_INPUT, EXIT_SOME_FAILED, EXIT_TERMINATED
from hartree.errors import InputError
from hartree.gradients import gradient
from hartree.molecule import Molecule
from hartree.scf import run as run_scf
from tests.cli.conftest import WATER_XYZ, run_main

H2_XYZ = "2\nH2\nH 0 0 0\nH 0 0 0.74\n"
HEH_XYZ = "2\nHeH+ charge=1\nHe 0 0 0\nH 0 0 0.774\n"
BROKEN_XYZ = "2\nbroken: one atom line missing\nH 0 0 0\n"


def _summary(out):
    with open(out / "summary.csv", encoding="utf-8", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def _inputs(folder):
    """h2.xyz, heh.xyz, water.json (a QCSchema v1 AtomicInput, driver gradient, no basis)
    and broken.xyz in ``folder``."""
    folder.mkdir(exist_ok=True)
    (folder / "h2.xyz").write_text(H2_XYZ)
    (folder / "heh.xyz").write_text(HEH_XYZ)
    doc = {
        "schema_name": "qcschema_input",
        "schema_version": 1,
        "molecule": Molecule.from_string(WATER_XYZ).to_qcschema(),
        "driver": "gradient",
        "model": {"method": "rhf"},
        "keywords": {},
    }
    AtomicInput(**doc)  # what qcelemental calls an AtomicInput
    (folder / "water.json").write_text(json.dumps(doc))
    (folder / "broken.xyz").write_text(BROKEN_XYZ)
    return [folder / name for name in ("h2.xyz", "heh.xyz", "water.json", "broken.xyz")]


def test_batch_on_two_local_workers_then_rerun_skips(tmp_path):
    paths = _inputs(tmp_path / "in")
    out = tmp_path / "out"
    argv = ["batch", *paths, "-b", "sto-3g", "--out", out, "--workers", "2", "--device", "cpu"]
    code, stdout, err = run_main([str(a) for a in argv])
    assert code == EXIT_SOME_FAILED and EXIT_SOME_FAILED in EXIT_CODES and EXIT_SOME_FAILED != 1, err
    assert err.strip() == f"hartree: error: 1 of 4 inputs failed (broken); see {out}/summary.csv"
    assert "local Dask cluster, 2 CPU worker processes" in stdout
    assert sorted(os.listdir(out)) == ["h2.json", "heh.json", "summary.csv", "water.json"]
    rows = _summary(out)
    assert [rows[n]["status"] for n in ("h2", "heh", "water", "broken")] == ["finished"] * 3 + ["failed"]
    assert "the count line says 2 atoms but 1 atom lines follow" in rows["broken"]["error"]
    assert "broken" in stdout and "count line" in stdout  # listed at the end
    for name, text in (("h2", H2_XYZ), ("heh", HEH_XYZ)):
        doc = json.loads((out / f"{name}.json").read_text())
        AtomicResult(**doc)
        reference = run_scf(Molecule.from_string(text), "sto-3g", "rhf", device="cpu").energy
        assert abs(doc["properties"]["return_energy"] - reference) < 1e-10
        assert abs(float(rows[name]["energy_Eh"]) - reference) < 1e-10
        assert rows[name]["converged"] == "true" and rows[name]["worker"].startswith("tcp://")
    water = json.loads((out / "water.json").read_text())
    assert AtomicResult(**water).driver == "gradient" and rows["water"]["task"] == "gradient"
    reference = gradient(Molecule.from_string(WATER_XYZ), "sto-3g", "rhf", device="cpu")
    np.testing.assert_allclose(water["return_result"], reference.gradient, rtol=0, atol=1e-10)
    assert abs(water["properties"]["return_energy"] - reference.energy) < 1e-10
    assert len(water["extras"]["hartree"]["batch"]["fingerprint"]) == 64

    before = {name: (out / name).read_bytes() for name in ("h2.json", "heh.json", "water.json")}
    code, stdout, err = run_main([str(a) for a in argv])
    assert code == EXIT_SOME_FAILED, err
    assert "skipped 3 finished" in stdout and "cluster:" not in stdout  # nothing left to run: no cluster
    assert {name: (out / name).read_bytes() for name in before} == before
    rows = _summary(out)
    assert [rows[n]["status"] for n in ("h2", "heh", "water", "broken")] == ["skipped"] * 3 + ["failed"]
    assert abs(float(rows["h2"]["energy_Eh"]) - json.loads(before["h2.json"])["properties"]["return_energy"]) == 0


def test_plan_skips_same_input_and_options_only(tmp_path):
    """The rerun rule without running: same bytes and options skip; another basis, task or
    changed content recompute; a file that is not a batch result is refused."""
    paths = [str(p) for p in _inputs(tmp_path / "in")]
    out = tmp_path / "out"
    out.mkdir()
    options = BatchOptions(basis="sto-3g", device="cpu")
    first = plan(paths, out, options)
    assert [job.name for job in first.jobs] == ["h2", "heh", "water"] and first.count("failed") == 1
    for job in first.jobs:  # as a finished run leaves them
        doc = {"extras": {"hartree": {"batch": {"fingerprint": job.fingerprint, "summary": {"name": job.name}}}}}
        (out / f"{job.name}.json").write_text(json.dumps(doc))
    again = plan(paths, out, BatchOptions(basis="sto-3g", device="gpu"))  # the device is not an option of the result
    assert again.jobs == [] and again.count("skipped") == 3
    assert [job.name for job in plan(paths, out, BatchOptions(basis="6-31g")).jobs] == ["h2", "heh", "water"]
    assert [job.task for job in plan(paths, out, BatchOptions(basis="sto-3g", task="energy")).jobs] == ["energy"]
    (tmp_path / "in" / "h2.xyz").write_text(H2_XYZ.replace("0.74", "0.75"))
    assert [job.name for job in plan(paths, out, options).jobs] == ["h2"]
    (out / "heh.json").write_text("{}")
    with pytest.raises(InputError, match="heh.json exists and is not a hartree batch result; use --overwrite"):
        plan(paths, out, options)
    assert "heh" in [job.name for job in plan(paths, out, options, overwrite=True).jobs]


def test_unique_names():
    paths = ["a/water.xyz", "b/water.xyz", "water-2.json", "h2.xyz", "c/water.json"]
    assert unique_names(paths) == ["water", "water-3", "water-2", "h2", "water-4"]


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({"cores": 8, "inputs": 3, "gpus": ()}, ClusterPlan("cpu", 3, 2)),
        ({"cores": 8, "inputs": 100, "gpus": ()}, ClusterPlan("cpu", 8, 1)),
        ({"cores": 8, "inputs": 100, "gpus": (), "workers": 3}, ClusterPlan("cpu", 3, 2)),
        ({"cores": 16, "gpus": ("0", "1"), "dask_cuda": False}, ClusterPlan("gpu", 2, 8, ("0", "1"))),
        ({"cores": 16, "gpus": ("2", "3"), "dask_cuda": True}, ClusterPlan("cuda", 2, 8, ("2", "3"))),
        ({"cores": 16, "gpus": ("0", "1"), "dask_cuda": True, "workers": 3}, ClusterPlan("gpu", 3, 5, ("0", "1", "0"))),
        ({"cores": 4, "inputs": 9, "gpus": ("0",), "device": "cpu"}, ClusterPlan("cpu", 4, 1)),
        ({"scheduler": "tcp://h:8786"}, ClusterPlan("scheduler", address="tcp://h:8786")),
    ],
)
def test_cluster_plan(kwargs, expected):
    got = plan_cluster(**kwargs)
    assert got == expected
    if got.kind != "scheduler":
        assert got.workers * got.threads <= kwargs["cores"] or got.threads == 1


def test_cluster_plan_refusals():
    with pytest.raises(InputError, match="exclude each other"):
        plan_cluster(workers=2, scheduler="tcp://h:1")


def test_one_worker_per_gpu_sees_its_device(tmp_path):
    """The plan without dask-cuda: one Nanny per GPU with CUDA_VISIBLE_DEVICES set (run here
    on the CPU: the variable reaches each worker process) and threads set by environment."""
    gpu_plan = plan_cluster(cores=2, gpus=("0", "1"), dask_cuda=False)
    with open_client(gpu_plan) as client:
        seen = client.run(lambda: (os.environ["CUDA_VISIBLE_DEVICES"], os.environ["NUMBA_NUM_THREADS"]))
    assert sorted(seen.values()) == [("0", "1"), ("1", "1")]


def test_a_killed_worker_has_its_task_run_again(tmp_path):
    """A worker process killed (SIGKILL) while it executes the task: the Nanny restarts it,
    the scheduler gives the task to a worker again, and the batch finishes (exit 0) with
    the result of a surviving worker.  The cluster is the test's (--scheduler)."""
    from distributed import Client, LocalCluster

    (tmp_path / "water.xyz").write_text(WATER_XYZ)
    out = tmp_path / "out"
    killed = {}

    def kill_when_running(client, pids, stop):
        while not stop.is_set():
            for worker, keys in client.processing().items():
                ours = [k for k in keys if str(k).startswith("hartree-batch-")]
                if ours and client.call_stack(keys=ours):  # executing, not only assigned
                    os.kill(pids[worker], signal.SIGKILL)
                    killed[worker] = pids[worker]
                    return
            time.sleep(0.02)

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR) as cluster,
        Client(cluster) as client,
    ):
        stop = threading.Event()
        killer = threading.Thread(target=kill_when_running, args=(client, client.run(os.getpid), stop), daemon=True)
        killer.start()
        # the first attempt runs on a fresh worker: importing hartree and loading the numba
        # cache take seconds, time enough to see it executing and kill it
        argv = ["batch", tmp_path / "water.xyz", "-b", "sto-3g", "--task", "gradient", "--device", "cpu"]
        code, stdout, err = run_main([str(a) for a in [*argv, "--out", out, "--scheduler", cluster.scheduler_address]])
        stop.set()
        killer.join(10)
    assert killed, "the task finished before the test could kill its worker"
    assert code == 0, err
    row = _summary(out)["water"]
    assert row["status"] == "finished" and row["worker"] not in killed
    doc = json.loads((out / "water.json").read_text())
    assert doc["driver"] == "gradient" and doc["extras"]["hartree"]["batch"]["worker_pid"] not in killed.values()
    reference = gradient(Molecule.from_string(WATER_XYZ), "sto-3g", "rhf", device="cpu")
    assert abs(float(row["energy_Eh"]) - reference.energy) < 1e-10
    np.testing.assert_allclose(doc["return_result"], reference.gradient, rtol=0, atol=1e-10)


def test_sigterm_keeps_finished_results_and_leaves_no_worker(tmp_path):
    """SIGTERM after the first of four frequency tasks finished: exit 143, one line, the
    finished results complete, the others marked cancelled, no temporary file, no worker."""
    folder = tmp_path / "in"
    folder.mkdir()
    for n in range(4):
        (folder / f"w{n}.xyz").write_text(WATER_XYZ)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "hartree", "batch", *[str(folder / f"w{n}.xyz") for n in range(4)]]
    command += ["-b", "sto-3g", "--task", "freq", "--device", "cpu", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not (out.is_dir() and any(name.endswith(".json") for name in os.listdir(out))):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        workers = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        stdout, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_TERMINATED, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("hartree: terminated (signal 15)"), err
    gone, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive, alive
    rows = _summary(out)
    finished = [name for name, row in rows.items() if row["status"] == "finished"]
    assert finished and len(finished) < 4 and {r["status"] for r in rows.values()} <= {"finished", "cancelled"}
    assert sorted(os.listdir(out)) == sorted([f"{name}.json" for name in finished] + ["summary.csv"])
    for name in finished:
        doc = json.loads((out / f"{name}.json").read_text())
        assert doc["driver"] == "hessian" and doc["success"] is True


def test_without_dask_one_line_names_the_extra(tmp_path):
    """hartree imports without dask; hartree batch then says what to install (exit 2)."""
    shim = tmp_path / "shim"
    for package in ("dask", "distributed"):
        (shim / package).mkdir(parents=True)
        (shim / package / "__init__.py").write_text(f"raise ImportError('no module named {package} (test)')\n")
    (tmp_path / "water.xyz").write_text(WATER_XYZ)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), os.getcwd()])}
    check = "import hartree, hartree.cli.main, hartree.batch.runner, hartree.batch.task, hartree.vibrations"
    subprocess.run([sys.executable, "-c", check], env=env, check=True)
    argv = ["-m", "hartree", "batch", str(tmp_path / "water.xyz"), "-b", "sto-3g", "--out", str(tmp_path / "o")]
    done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_INPUT, done.stderr
    assert done.stderr.strip() == (
        "hartree: error: hartree batch needs dask.distributed, which is not installed; "
        'pip install "hartree[distributed]"'
    )


def test_quiet_prints_the_closing_line_its_help_describes(tmp_path):
    """--quiet (help text of its own, not run's "final energy line"): only the closing line
    on stdout and the one error line on stderr.  Every input here is broken, so no cluster
    starts."""
    from hartree.cli.batch_command import QUIET_HELP

    helps = {}
    for command in ("batch", "run"):
        code, stdout, _ = run_main([command, "--help"])
        assert code == 0
        helps[command] = " ".join(stdout.split())  # argparse wraps lines
    assert f"-q, --quiet {QUIET_HELP}" in helps["batch"] and "final energy line" not in helps["batch"]
    assert "-q, --quiet print only the final energy line" in helps["run"]
    (tmp_path / "broken.xyz").write_text(BROKEN_XYZ)
    out = tmp_path / "out"
    code, stdout, err = run_main(["batch", str(tmp_path / "broken.xyz"), "-b", "sto-3g", "--out", str(out), "-q"])
    assert code == EXIT_SOME_FAILED
    assert stdout == f"batch: 0 finished, 0 skipped, 1 failed of 1 input; summary: {out}/summary.csv\n"
    assert err == f"hartree: error: 1 of 1 input failed (broken); see {out}/summary.csv\n"


def test_progress_counts_stay_within_the_inputs_left():
    """The display's running count: a fresh count from the scheduler is shown, each completed
    input takes one off (the count sent with it was polled before), never more than the
    inputs left."""
    import io

    from rich.console import Console

    from hartree.batch.inputs import BatchPlan
    from hartree.cli.batch_command import _Display

    rows = {name: {"name": name, "status": "pending"} for name in ("a", "b", "c")}
    display = _Display(Console(file=io.StringIO()), BatchPlan(rows, []), quiet=True)
    display(None, 2)
    assert (display.done, display.failed, display.running) == (0, 0, 2)
    display({"name": "a", "status": "finished"}, 2)
    assert (display.done, display.failed, display.running) == (1, 0, 1)
    display({"name": "b", "status": "failed", "error": "x", "input": "b.xyz"}, 2)
    assert (display.done, display.failed, display.running) == (1, 1, 0)
    display(None, 5)  # a count polled before the last completions
    assert display.running == 1
    display({"name": "c", "status": "finished"}, 1)
    assert (display.done, display.failed, display.running) == (2, 1, 0)
