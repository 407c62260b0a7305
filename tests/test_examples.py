"""The scripts in examples/ run (in process, with tiny settings) and print numbers equal to
independent references.

* ``examples/ase_md.py`` (water, RHF/STO-3G): every printed BFGS and MD energy equals
  ``hartree.scf.run`` at the recorded geometry, in eV with ASE's ``units.Hartree`` (1e-8 eV);
  every printed fmax equals the largest atomic norm of ``hartree.gradients.gradient`` (1e-6
  eV/Angstrom); each kinetic energy is 1/2 sum m v^2 of the recorded velocities with ASE's
  masses; the first MD step is the velocity-Verlet formula applied to hartree's gradients
  (positions 1e-10 Angstrom, measured 3e-13; velocities 2e-8 Angstrom per ASE time unit,
  measured 3e-9: the calculator's SCF stops at a commutator norm of 1e-7, the reference's at
  1e-8); the total energy stays within 2e-3 eV over 2 fs (measured 7.1e-4) and its deviation
  falls by 4 when the time step is halved (Verlet's dt^2 law: measured ratio 3.99, accepted
  3.6 to 4.4).  Measured: energies within 2e-12 eV, fmax within 7e-10 eV/Angstrom.
* ``examples/qcengine_compute.py`` (water, RHF/STO-3G): the energy equals ``hartree.scf.run``
  (1e-10 Eh), the gradient PySCF's analytic gradient on the same basis data (1e-8 Eh/bohr),
  the basis size and SCF iterations those of ``hartree.scf.run``; the bad input comes back as
  a FailedOperation naming the basis.  Measured: energy difference 0, gradient 2e-11.
* ``examples/batch/`` with examples/README.md's ``hartree batch`` command (one local worker
  process, the CPU): each molecule's energy in its result JSON, in summary.csv and in the
  printed line equals ``hartree.scf.run`` in this process (1e-10 Eh; measured 0).
"""

import csv
import importlib.util
import json
import pathlib
import re
import sys

import numpy as np
import pytest
from ase import units
from ase.data import atomic_masses

from hartree import Molecule
from hartree.constants import ANGSTROM_IN_BOHR
from hartree.gradients import gradient
from hartree.scf import run
from tests.helpers import to_pyscf

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
WATER_NUMBERS = np.array([8, 1, 1])
FLOAT = r"[-+]?\d+\.\d+(?:e[-+]\d+)?"


def _load(name):
    """The example script ``examples/<name>.py`` as a module (its ``main`` not yet run)."""
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def _rows(text, header, ncol):
    """The numeric rows of the table under the line starting with ``header``: (n, ncol)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == header.split()[:2]) + 1
    rows = []
    for line in lines[start:]:
        fields = line.split()
        if len(fields) != ncol or not re.fullmatch(r"\d+", fields[0]):
            break
        rows.append([float(f) for f in fields])
    return np.array(rows)


def _water(positions):
    """Water at ``positions`` (Angstrom), converted as the ASE calculator does."""
    return Molecule(numbers=WATER_NUMBERS, coords=np.asarray(positions) * ANGSTROM_IN_BOHR, charge=0, multiplicity=1)


def _energy_ev(positions):
    """hartree.scf.run's RHF/STO-3G energy at ``positions``, eV (ASE's conversion)."""
    res = run(_water(positions), "sto-3g", "rhf", device="cpu", conv_tol=1e-11, conv_tol_grad=1e-8)
    return res.energy * units.Hartree


def _forces(positions):
    """-hartree.gradients.gradient at ``positions``, eV/Angstrom (natm, 3)."""
    g = gradient(_water(positions), "sto-3g", "rhf", device="cpu", conv_tol=1e-11, conv_tol_grad=1e-8)
    return -np.asarray(g.gradient) * units.Hartree / units.Bohr


@pytest.fixture(scope="module")
def ase_md():
    return _load("ase_md")


def test_ase_md_prints_hartree_energies_and_conserves_energy(ase_md, capsys):
    result = ase_md.main(["--device", "cpu", "--steps", "4"])
    out = capsys.readouterr().out

    # BFGS: energies and fmax printed for each geometry are hartree's
    opt_rows = _rows(out, "step energy", 3)
    assert result.optimized and len(opt_rows) == len(result.optimization) >= 3
    for row, rec in zip(opt_rows, result.optimization):
        assert abs(rec.energy - _energy_ev(rec.positions)) < 1e-8
        assert abs(rec.fmax - np.linalg.norm(_forces(rec.positions), axis=1).max()) < 1e-6
        assert abs(row[1] - rec.energy) < 6e-9 and abs(row[2] - rec.fmax) < 6e-7
    assert opt_rows[-1, 2] < 0.05 <= opt_rows[0, 2]

    # MD: energies, kinetic energies and the printed total and drift
    md_rows = _rows(out, "step t", 6)
    frames = result.frames
    assert len(md_rows) == len(frames) == 5
    masses = atomic_masses[WATER_NUMBERS]
    np.testing.assert_array_equal(result.masses, masses)
    for row, frame in zip(md_rows, frames):
        assert abs(frame.epot - _energy_ev(frame.positions)) < 1e-8
        assert abs(frame.ekin - 0.5 * np.sum(masses[:, None] * frame.velocities**2)) < 1e-12
        assert row[1] == pytest.approx(0.5 * frame.step, abs=1e-12)
        np.testing.assert_allclose(row[2:5], [frame.epot, frame.ekin, frame.etot], rtol=0, atol=6e-9)
        assert row[5] == pytest.approx(frame.etot - frames[0].etot, rel=6e-3, abs=1e-15)
    # the optimized geometry is where the dynamics starts
    np.testing.assert_array_equal(frames[0].positions, result.optimization[-1].positions)

    # step 1 is velocity Verlet on hartree's forces: x1 = x0 + v0 dt + F0 dt^2 / 2m,
    # v1 = v0 + (F0 + F1) dt / 2m  (ASE units: eV, Angstrom, u, time 10.18 fs)
    dt = 0.5 * units.fs
    f0, f1 = _forces(frames[0].positions), _forces(frames[1].positions)
    x1 = frames[0].positions + frames[0].velocities * dt + f0 * dt**2 / (2 * masses[:, None])
    v1 = frames[0].velocities + (f0 + f1) * dt / (2 * masses[:, None])
    np.testing.assert_allclose(frames[1].positions, x1, rtol=0, atol=1e-10)
    np.testing.assert_allclose(frames[1].velocities, v1, rtol=0, atol=2e-8)

    # energy conservation: the printed drift line and its bound
    drift = re.search(rf"total energy drift over 2 fs: ({FLOAT}) eV \(largest deviation ({FLOAT}) eV", out)
    assert drift, out
    assert float(drift.group(1)) == pytest.approx(result.drift, rel=6e-3)
    assert float(drift.group(2)) == pytest.approx(result.max_deviation, rel=6e-3)
    assert result.max_deviation < 2e-3


def test_ase_md_energy_error_follows_the_verlet_dt_squared_law(ase_md, capsys):
    common = ["--device", "cpu", "--opt-steps", "0"]
    coarse = ase_md.main([*common, "--steps", "4", "--timestep", "0.5"])
    fine = ase_md.main([*common, "--steps", "8", "--timestep", "0.25"])
    capsys.readouterr()
    # same start: same geometry and (seeded) velocities
    np.testing.assert_array_equal(coarse.frames[0].velocities, fine.frames[0].velocities)
    assert 3.6 < coarse.drift / fine.drift < 4.4  # both at t = 2 fs


def test_qcengine_example_equals_scf_run_and_pyscf(capsys):
    energy, grad, failed = _load("qcengine_compute").main(["--device", "cpu"])
    out = capsys.readouterr().out

    # the geometry QCEngine ran: qcelemental keeps it to 1e-8 bohr of the XYZ file's
    coords = np.asarray(energy.molecule.geometry).reshape(-1, 3)
    np.testing.assert_allclose(coords, Molecule.from_xyz(EXAMPLES / "water.xyz").coords, rtol=0, atol=1e-8)
    mol = Molecule(numbers=WATER_NUMBERS, coords=coords, charge=0, multiplicity=1)
    ref = run(mol, "sto-3g", "rhf", device="cpu")  # the harness's SCF settings (the defaults)
    assert abs(energy.return_result - ref.energy) < 1e-10
    assert abs(grad.properties.return_energy - ref.energy) < 1e-10
    printed = re.search(rf"energy \(return_result\): ({FLOAT}) Eh\n\s+(\d+) basis functions, (\d+) SCF iterations", out)
    assert printed, out
    assert abs(float(printed.group(1)) - ref.energy) < 1e-10
    assert int(printed.group(2)) == ref.basis.nao == energy.properties.calcinfo_nbasis
    assert int(printed.group(3)) == ref.iterations == energy.properties.scf_iterations
    assert abs(float(re.search(rf"energy ({FLOAT}) Eh:", out).group(1)) - ref.energy) < 1e-10

    pmol = to_pyscf(mol, ref.basis)
    pscf = pmol.RHF().run(conv_tol=1e-12, conv_tol_grad=1e-9)
    pgrad = pscf.nuc_grad_method().kernel()
    g = np.asarray(grad.return_result).reshape(-1, 3)
    np.testing.assert_allclose(g, pgrad, rtol=0, atol=1e-8)
    rows = np.array([[float(x) for x in line.split()[1:]] for line in out.splitlines() if re.match(r"\s+[OH]\s", line)])
    np.testing.assert_allclose(rows, g, rtol=0, atol=6e-11)

    assert type(failed).__name__ == "FailedOperation" and not failed.success
    assert "unknown basis set 'no-such-basis'" in failed.error.error_message
    assert "bad input -> FailedOperation: success False" in out
    assert "hartree.errors.BasisError: unknown basis set 'no-such-basis'" in out


def test_batch_example_equals_scf_run(tmp_path, capsys):
    from hartree.cli.main import main

    paths = sorted((EXAMPLES / "batch").glob("*.xyz"))
    assert [p.stem for p in paths] == ["ammonia", "methane", "water"]
    # the references first: they also put the compiled kernels in the cache the worker loads
    energies = {p.stem: run(Molecule.from_xyz(p), "sto-3g", "rhf", device="cpu").energy for p in paths}
    out = tmp_path / "batch-results"
    argv = ["batch", *map(str, paths), "--basis", "sto-3g", "--out", str(out), "--workers", "1", "--device", "cpu"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert sorted(q.name for q in out.iterdir()) == ["ammonia.json", "methane.json", "summary.csv", "water.json"]
    with open(out / "summary.csv", encoding="utf-8", newline="") as handle:
        rows = {row["name"]: row for row in csv.DictReader(handle)}
    for name, reference in energies.items():
        doc = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        assert doc["driver"] == "energy" and doc["success"] and doc["model"]["basis"] == "sto-3g"
        assert abs(doc["return_result"] - reference) < 1e-10
        assert abs(doc["properties"]["return_energy"] - reference) < 1e-10
        assert rows[name]["status"] == "finished" and abs(float(rows[name]["energy_Eh"]) - reference) < 1e-10
        line = re.search(rf"finished {name}: E = ({FLOAT}) Eh", printed)
        assert line and abs(float(line.group(1)) - reference) < 1e-10, printed
    assert "batch: 3 finished, 0 skipped, 0 failed of 3 inputs" in printed


def test_citation_file_names_this_version():
    import yaml

    from hartree._version import __version__

    cff = yaml.safe_load((EXAMPLES.parent / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["title"] == "hartree"
    assert cff["version"] == __version__ and cff["license"] == "BSD-3-Clause"
    assert all(ref["doi"].startswith("10.") for ref in cff["references"])
