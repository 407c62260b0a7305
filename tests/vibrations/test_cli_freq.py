"""``hartree freq``: the tables, the QCSchema hessian document (qcelemental's AtomicResult),
the Molden [FREQ] sections, the checkpoint (resume after an interruption, reuse, another
job's refused), --quiet, and the refusals (one line, exit code 2).  The numbers printed
and written are those of the Python API, itself checked against PySCF in the other
files of this folder."""

import json
import re

import numpy as np
import pytest

from hartree.molecule import Molecule
from hartree.vibrations import frequencies
from tests.vibrations.conftest import WATER, WATER_XYZ, run_main

try:  # qcelemental >= 0.50 ships v1 and v2 models
    from qcelemental.models.v1 import AtomicResult
except ImportError:  # older qcelemental: the v1 models only
    from qcelemental.models import AtomicResult


@pytest.fixture
def water_xyz(tmp_path):
    path = tmp_path / "water.xyz"
    path.write_text(WATER_XYZ)
    return path


@pytest.fixture(scope="module")
def water_sto3g():
    """The API's result for the command lines below (water RHF/sto-3g)."""
    return frequencies(Molecule.from_string(WATER), "sto-3g", "rhf", device="cpu")


def _molden_sections(text):
    """{section name: [lines]} of a Molden file."""
    sections, name = {}, None
    for line in text.splitlines():
        match = re.match(r"\s*\[([^\]]+)\]", line)
        if match:
            name = match.group(1)
            sections[name] = []
        elif name is not None and line.strip():
            sections[name].append(line.split())
    return sections


def test_tables_json_and_molden(tmp_path, water_xyz, water_sto3g):
    out, molden = tmp_path / "w.json", tmp_path / "w.molden"
    code, stdout, err = run_main(
        "freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--json", out, "--molden", molden
    )
    assert code == 0, err
    assert stdout.count(" Eh ") >= 18 and "[18/18]" in stdout  # one line per displacement
    for title in ("harmonic vibrations (3N-6: 3", "thermal contributions at 298.15 K", "Gibbs free energy G"):
        assert title in stdout
    assert "point group C2v, rotational symmetry number 2" in stdout
    table = [line.split() for line in stdout.splitlines() if re.match(r"\s+[123]\s+\d+\.\d\d\s", line)]
    np.testing.assert_allclose([float(row[1]) for row in table], water_sto3g.frequencies, atol=0.006)
    np.testing.assert_allclose([float(row[2]) for row in table], water_sto3g.ir_intensities, atol=6e-5)
    assert f"G(298.15 K) {water_sto3g.thermochemistry.gibbs_free_energy:.10f} Eh" in stdout

    doc = json.loads(out.read_text())
    result = AtomicResult(**doc)
    assert result.driver == "hessian" and result.success
    np.testing.assert_allclose(np.asarray(result.return_result).reshape(9, 9), water_sto3g.hessian, atol=1e-9)
    np.testing.assert_allclose(
        np.asarray(result.properties.return_hessian).reshape(9, 9), water_sto3g.hessian, atol=1e-9
    )
    extras = doc["extras"]["hartree"]
    np.testing.assert_allclose(extras["frequencies_cm-1"], water_sto3g.frequencies, atol=1e-5)
    np.testing.assert_allclose(extras["ir_intensities_km_mol"], water_sto3g.ir_intensities, atol=1e-6)
    modes = np.asarray(extras["normal_modes"]).reshape(3, 9)
    overlap = np.abs(np.sum(modes * water_sto3g.normal_modes.reshape(3, 9), axis=1))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-9)  # the same unit vectors (up to sign)
    assert extras["zero_point_energy"] == pytest.approx(water_sto3g.zero_point_energy, abs=1e-10)
    thermo = extras["thermochemistry"]
    assert thermo["gibbs_free_energy"] == pytest.approx(water_sto3g.thermochemistry.gibbs_free_energy, abs=1e-10)
    assert thermo["temperature_K"] == 298.15 and thermo["pressure_Pa"] == 101325.0
    assert extras["point_group"] == "C2v" and extras["symmetry_number"] == 2

    sections = _molden_sections(molden.read_text())
    for name in ("Atoms", "GTO", "MO", "FREQ", "FR-COORD", "FR-NORM-COORD", "INT"):
        assert name in sections, name
    np.testing.assert_allclose([float(r[0]) for r in sections["FREQ"]], water_sto3g.frequencies, atol=1e-5)
    coords = np.array([[float(x) for x in row[1:]] for row in sections["FR-COORD"]])
    np.testing.assert_allclose(coords, Molecule.from_file(water_xyz).coords, atol=1e-11)  # bohr
    modes = [row for row in sections["FR-NORM-COORD"] if row[0] != "vibration"]
    np.testing.assert_allclose(
        np.array(modes, dtype=float).reshape(3, 3, 3), np.asarray(extras["normal_modes"]), atol=1e-9
    )
    np.testing.assert_allclose([float(r[0]) for r in sections["INT"]], water_sto3g.ir_intensities, atol=1e-5)
    checkpoint = tmp_path / "w.freq-checkpoint.json"  # next to --json by default
    assert len(json.loads(checkpoint.read_text())["displacements"]) == 18


def test_resume_after_interruption(tmp_path, water_xyz, water_sto3g):
    """Interrupted after 7 displacements (the test's progress hook), resumed by the CLI."""
    checkpoint = tmp_path / "chk.json"

    def interrupt(event):
        if event.stage == "done" and event.done == 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        frequencies(
            Molecule.from_file(water_xyz), "sto-3g", "rhf", device="cpu", checkpoint=checkpoint, progress=interrupt
        )
    out = tmp_path / "w.json"
    code, stdout, err = run_main(
        "freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--checkpoint", checkpoint, "--json", out
    )
    assert code == 0, err
    assert "resumed 7 of 18 displacements from the checkpoint" in stdout and "[18/18]" in stdout
    assert "[ 7/18]" not in stdout and "[ 8/18]" in stdout
    hessian = np.asarray(json.loads(out.read_text())["return_result"])
    np.testing.assert_allclose(hessian, water_sto3g.hessian, rtol=0, atol=1e-9)
    # the same checkpoint again at another temperature: no new gradient
    code, stdout, err = run_main(
        "freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--checkpoint", checkpoint, "--temperature", "400", "-q"
    )
    assert code == 0, err
    assert stdout.strip().count("\n") == 0 and "G(400 K)" in stdout


def test_quiet_prints_one_line(water_xyz):
    code, stdout, err = run_main("freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "-q", "--masses", "H=D")
    assert code == 0, err
    assert stdout.strip().count("\n") == 0 and stdout.startswith("RHF/sto-3g: E0 ")


@pytest.mark.parametrize(
    "extra,message",
    [
        (["-m", "mp2"], "RI-MP2 has none yet"),
        (["--masses", "9:2.0"], "atom numbers run from 1 to 3"),
        (["--step", "0.3"], "step must lie between"),
        (["--checkpoint", "CHK", "--no-checkpoint"], "exclude each other"),
        (["-m", "rhf", "--multiplicity", "3"], "multiplicity"),
    ],
)
def test_refusals(tmp_path, water_xyz, extra, message):
    extra = [str(tmp_path / "chk.json") if a == "CHK" else a for a in extra]
    code, stdout, err = run_main("freq", water_xyz, "-b", "sto-3g", "--device", "cpu", *extra)
    assert code == 2, err
    assert err.strip().count("\n") == 0 and message in err
    assert "/18]" not in stdout  # refused before any displaced gradient


def test_workers_and_scheduler_exclude_each_other(water_xyz):
    code, _, err = run_main("freq", water_xyz, "-b", "sto-3g", "--workers", "2", "--scheduler", "tcp://x:1")
    assert code == 2 and "not allowed with argument" in err


def test_outputs_and_checkpoints_of_other_jobs(tmp_path, water_xyz):
    out = tmp_path / "w.json"
    out.write_text("{}")
    code, _, err = run_main("freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--json", out)
    assert code == 2 and "already exists; use --overwrite" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "hartree_freq_checkpoint", "version": 1, "fingerprint": "0" * 64}))
    code, _, err = run_main("freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--checkpoint", other)
    assert code == 2 and "belongs to another job" in err
    code, _, err = run_main("freq", water_xyz, "-b", "sto-3g", "--device", "cpu", "--checkpoint", water_xyz)
    assert code == 2 and "is the molecule file" in err


def test_checkpoint_fingerprint_holds_the_dft_settings(tmp_path):
    """A frequency checkpoint of one Kohn-Sham job is refused by a job with another grid,
    VV10 grid or dispersion (they change every gradient), and read by the same job."""
    from hartree.basis import load_basis
    from hartree.errors import InputError
    from hartree.vibrations.driver import open_checkpoint

    mol = Molecule.from_string(WATER_XYZ)
    basis = load_basis(mol, "sto-3g")
    store = tmp_path / "chk.json"
    job = {"conv_tol": 1e-10, "xc": "b97m-v", "grid_level": 2, "nlc_grid_level": 2}
    open_checkpoint(store, mol, basis, "rks", 0.001, job).add(0, -76.0, np.zeros((3, 3)), np.zeros(3))
    assert len(open_checkpoint(store, mol, basis, "rks", 0.001, dict(job)).records) == 1
    for change in ({"nlc_grid_level": 1}, {"grid_level": 3}, {"dispersion": "d3bj"}):
        with pytest.raises(InputError, match="belongs to another job"):
            open_checkpoint(store, mol, basis, "rks", 0.001, {**job, **change})
