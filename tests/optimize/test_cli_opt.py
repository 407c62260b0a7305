"""``hartree opt``: the step lines, the output files (XYZ, trajectory, QCSchema JSON checked
with qcelemental's OptimizationResult model, PNG), exit code 3 with the last geometry,
refusals in one line before any work, --restart, signals, and a working directory that
holds nothing but the inputs and the outputs asked for."""

import json
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

from hartree.cli.main import EXIT_CONVERGENCE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_TERMINATED
from hartree.constants import ANGSTROM_IN_BOHR
from hartree.molecule import Molecule
from hartree.optimize import optimize
from hartree.optimize.trajectory import read_frames

from .conftest import WATER_XYZ

STEP_LINE = re.compile(r"^\s*(\d+)\s+(-\d+\.\d{10})\s")


def _step_lines(out):
    """(step number, energy) of every step line printed."""
    return [(int(m.group(1)), float(m.group(2))) for m in map(STEP_LINE.match, out.splitlines()) if m]


def _frames(path):
    """[(comment line, Molecule)] of a multi-frame XYZ file."""
    return [(f.splitlines()[1], Molecule.from_string(f)) for f in read_frames(path)]


def _validated(path):
    """The --json document, checked against qcelemental's v1 OptimizationResult."""
    try:
        from qcelemental.models.v1 import OptimizationResult
    except ImportError:  # qcelemental < 0.50: the v1 models are the top-level ones
        from qcelemental.models import OptimizationResult
    doc = json.loads(path.read_text())
    return doc, OptimizationResult(**doc)


def test_outputs_parse_and_agree(cli, work):
    code, out, err = cli(
        "opt", "water.xyz", "-b", "6-31g", "--device", "cpu", "--xyz", "opt.xyz", "--trajectory", "traj.xyz",
        "--json", "opt.json", "--plot", "opt.png",
    )  # fmt: skip
    assert code == 0, err
    assert err == ""
    assert sorted(os.listdir(work)) == ["opt.json", "opt.png", "opt.xyz", "traj.xyz", "water.xyz"]
    lines = _step_lines(out)
    doc, model = _validated(work / "opt.json")
    # one line per step, numbered from 0, with the energies of the JSON document
    assert [n for n, _ in lines] == list(range(len(doc["energies"])))
    np.testing.assert_allclose([e for _, e in lines], doc["energies"], rtol=0, atol=5e-11)
    assert out.splitlines()[-1].startswith(f"E(RHF/6-31g) = {doc['energies'][-1]:.10f} Eh  [geometry optimized")
    assert model.success and doc["success"] is True and "error" not in doc
    assert len(model.trajectory) == len(doc["energies"]) >= 3
    assert [t.properties.return_energy for t in model.trajectory] == doc["energies"]
    assert model.trajectory[-1].extras["hartree"]["converged"] is True
    # the optimization is reproduced by the Python API (same gradients, same optimizer)
    result = optimize(Molecule.from_xyz(work / "water.xyz"), "6-31g", "rhf", device="cpu")
    np.testing.assert_allclose(doc["energies"], result.energies, rtol=0, atol=1e-9)
    # final_molecule in bohr; --xyz and the last trajectory frame in Angstrom: one geometry
    final = np.reshape(model.final_molecule.geometry, (-1, 3))
    np.testing.assert_allclose(final, result.molecule.coords, atol=1e-6)
    np.testing.assert_allclose(Molecule.from_xyz(work / "opt.xyz").coords, final, atol=1e-12)
    frames = _frames(work / "traj.xyz")
    assert len(frames) == len(doc["energies"])
    assert frames[-1][0].endswith("converged")
    np.testing.assert_allclose(frames[-1][1].coords, final, atol=1e-12)
    np.testing.assert_allclose(frames[0][1].coords, Molecule.from_xyz(work / "water.xyz").coords, atol=1e-12)
    for (comment, _), energy in zip(frames, doc["energies"]):
        assert f"energy {energy:.12f} Eh" in comment
    # gradients in the trajectory: Eh/bohr, natm x 3, the Python API's
    np.testing.assert_allclose(model.trajectory[-1].return_result, result.gradients[-1], atol=1e-7)
    assert (work / "opt.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_not_converged_exits_3_with_the_last_geometry(cli, work):
    code, out, err = cli(
        "opt", "water.xyz", "-b", "6-31g", "--device", "cpu", "--max-steps", "1", "--xyz", "last.xyz",
        "--trajectory", "traj.xyz", "--json", "last.json",
    )  # fmt: skip
    assert code == EXIT_CONVERGENCE
    assert len(err.strip().splitlines()) == 1 and err.startswith("hartree: error: the geometry optimization did not")
    assert "--max-steps 2" in err and "last.xyz" in err
    assert [n for n, _ in _step_lines(out)] == [0, 1]
    frames = _frames(work / "traj.xyz")
    last = Molecule.from_xyz(work / "last.xyz")
    assert len(frames) == 2
    np.testing.assert_allclose(last.coords, frames[-1][1].coords, atol=1e-12)
    assert not np.allclose(last.coords, frames[0][1].coords, atol=1e-3)  # it moved
    doc, model = _validated(work / "last.json")
    assert model.success is False and doc["error"]["error_type"] == "convergence_error"
    np.testing.assert_allclose(np.reshape(model.final_molecule.geometry, (-1, 3)), last.coords, atol=1e-12)


def test_restart_continues_from_the_last_frame(cli, work):
    """A run stopped after one step, restarted from its trajectory with the same file as
    --trajectory: the new steps follow the old frames, the first new energy is the old last
    one, and it ends at the energy of an uninterrupted run."""
    code, out, _ = cli(
        "opt", "water.xyz", "-b", "6-31g", "--device", "cpu", "--max-steps", "1", "--trajectory", "t.xyz"
    )
    assert code == EXIT_CONVERGENCE
    first = _step_lines(out)
    code, out, err = cli(
        "opt", "water.xyz", "-b", "6-31g", "--device", "cpu", "--restart", "t.xyz", "--trajectory", "t.xyz",
        "--json", "r.json",
    )  # fmt: skip
    assert code == 0, err
    assert "restart:  from the last frame of t.xyz" in out
    second = _step_lines(out)
    assert abs(second[0][1] - first[-1][1]) < 1e-9  # same geometry, same energy
    frames = _frames(work / "t.xyz")
    assert len(frames) == len(first) + len(second) - 1
    assert [int(c.split()[1]) for c, _ in frames] == list(range(len(frames)))
    reference = optimize(Molecule.from_xyz(work / "water.xyz"), "6-31g", "rhf", device="cpu")
    doc, _ = _validated(work / "r.json")
    assert abs(doc["energies"][-1] - reference.energy) < 2e-6


def test_restart_from_another_molecule_is_refused(cli, work):
    (work / "other.xyz").write_text("2\n\nH 0 0 0\nF 0 0 0.9\n")
    code, out, err = cli("opt", "water.xyz", "-b", "sto-3g", "--restart", "other.xyz")
    assert code == EXIT_INPUT and out == ""
    assert err.strip() == "hartree: error: --restart other.xyz: the last frame has 2 atoms, the molecule 3"


@pytest.mark.parametrize(
    "args, message",
    [
        (["-m", "mp2"], "--method mp2: RI-MP2 has no analytic gradient yet"),
        (["--constraints", "scan.txt"], "$scan (a series of constrained optimizations) is not supported"),
        (["--constraints", "scan.txt", "--coordsys", "cart"], "--constraints need delocalized internal"),
        (["--xyz", "water.xyz"], "--xyz water.xyz is the molecule file"),
        (["--xyz", "exists.xyz"], "--xyz exists.xyz already exists; use --overwrite"),
        (["--xyz", "a.xyz", "--trajectory", "a.xyz"], "--xyz and --trajectory both name a.xyz"),
    ],
    ids=["mp2", "scan", "cartesian-constraints", "input", "exists", "twice"],
)
def test_refusals_are_one_line_before_any_work(cli, work, args, message):
    (work / "scan.txt").write_text("$scan\ndistance 1 2 0.9 1.0 3\n")
    (work / "exists.xyz").write_text(WATER_XYZ)
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    code, out, err = cli("opt", "water.xyz", "-b", "sto-3g", *args)
    assert code == EXIT_INPUT and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before


@pytest.mark.parametrize(
    "text, message",
    [
        ("$freeze\ndistance 1\n", "line 'distance 1': expected 3 tokens but got 2"),
        ("$freeze\nbond 1 2\n", "unknown constraint type 'bond'"),
        ("$set\nangle 1 2 5 100\n", "Constraints refer to higher atom indices than the number of atoms"),
        (
            "$options\nmaxiter 3\n$end\n$freeze\nxyz 1\n",
            "$options blocks are not read by hartree; give the options as arguments of hartree opt",
        ),
    ],
    ids=["tokens", "type", "atom", "options"],
)
def test_bad_constraints_are_one_line_before_any_work(cli, work, text, message):
    (work / "c.txt").write_text(text)
    code, out, err = cli("opt", "water.xyz", "-b", "sto-3g", "--constraints", "c.txt", "--xyz", "o.xyz")
    assert code == EXIT_INPUT and out == ""
    assert err.strip() == f"hartree: error: constraints file c.txt: {message}"
    assert sorted(os.listdir(work)) == ["c.txt", "water.xyz"]


def test_quiet_prints_one_line(cli, work):
    code, out, err = cli("opt", "water.xyz", "-b", "sto-3g", "--device", "cpu", "-q")
    assert code == 0, err
    assert len(out.splitlines()) == 1 and re.match(
        r"E\(RHF/sto-3g\) = -\d+\.\d{10} Eh  \[geometry optimized, \d+ steps\]$", out.strip()
    )


def test_help_lists_the_convergence_sets(cli):
    code, out, _ = cli("opt", "--help")
    assert code == 0
    text = " ".join(out.split())
    for name in ("gau", "gau_tight", "gau_loose", "gau_verytight", "nwchem_loose", "turbomole", "interfrag_tight"):
        assert f" {name} " in text, name
    for option in (
        "--max-steps",
        "--convergence",
        "--constraints",
        "--transition-state",
        "--restart",
        "--plot",
        "--trajectory",
        "--json",
        "--xyz",
        "--coordsys",
        "--device",
        "--cartesian",
        "--overwrite",
    ):
        assert option in text, option
    assert "(default: gau)" in text and "(default: 100)" in text and "exit codes:" in text


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGINT, EXIT_INTERRUPTED)])
def test_signal_keeps_the_trajectory_of_finished_steps(cli, work, signum, code):
    """A signal once two steps are on disk: exit 143 / 130 with one line, the trajectory of
    the finished steps readable, no temporary files (here or of geomeTRIC's folder)."""
    traj = work / "traj.xyz"
    finished = threading.Event()  # no time limit on the steps: a slow host may need minutes

    def stop_after_two_frames():
        while not finished.is_set():
            if traj.exists() and traj.read_text().count("step ") >= 2:
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.005)

    threading.Thread(target=stop_after_two_frames, daemon=True).start()
    try:
        got, _, err = cli(
            "opt", "water.xyz", "-b", "6-31g", "--device", "cpu", "--convergence", "gau_verytight", "--trajectory",
            traj, "--xyz", "never.xyz", "-q",
        )  # fmt: skip
    finally:
        finished.set()
    assert got == code, err
    assert len(err.strip().splitlines()) == 1 and ("terminated" in err or "interrupted" in err)
    frames = _frames(traj)
    assert len(frames) >= 2 and not frames[-1][0].endswith("converged")
    assert sorted(os.listdir(work)) == ["traj.xyz", "water.xyz"]


def test_xyz_units(cli, work):
    """--xyz is in Angstrom: the JSON's final molecule (bohr) divided by ANGSTROM_IN_BOHR."""
    code, _, err = cli(
        "opt", "water.xyz", "-b", "sto-3g", "--device", "cpu", "--xyz", "o.xyz", "--json", "o.json", "-q"
    )
    assert code == 0, err
    doc = json.loads((work / "o.json").read_text())
    rows = [line.split()[1:] for line in (work / "o.xyz").read_text().splitlines()[2:]]
    np.testing.assert_allclose(
        np.array(rows, dtype=float),
        np.reshape(doc["final_molecule"]["geometry"], (-1, 3)) / ANGSTROM_IN_BOHR,
        atol=1e-12,
    )
