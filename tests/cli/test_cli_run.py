"""End-to-end ``hartree run`` on water/STO-3G, checked against PySCF.

The first SCF in a process pays for numba compilation, so one module-scoped run
(with --json and --molden) is shared by several tests.
"""

import json
import os
import signal
import subprocess
import sys

import basis_set_exchange as bse
import numpy as np
import pytest
from pyscf import gto, scf
from pyscf.tools import molden as pyscf_molden

from hartree.cli.main import EXIT_CONVERGENCE, EXIT_INTERRUPTED, EXIT_TERMINATED

ANGSTROM_PER_BOHR = 0.529177210903  # CODATA 2018, as hartree uses

WATER_ANGSTROM = [("O", (0.0, 0.0, 0.1173)), ("H", (0.0, 0.7572, -0.4692)), ("H", (0.0, -0.7572, -0.4692))]


def pyscf_water(basis_name, charge=0, spin=0):
    """PySCF water with the basis-set-exchange data hartree uses (not PySCF's own copy)."""
    atoms = [[s, tuple(np.array(xyz) / ANGSTROM_PER_BOHR)] for s, xyz in WATER_ANGSTROM]
    text = bse.get_basis(basis_name, elements=[1, 8], fmt="nwchem")
    basis = {symbol: gto.basis.parse(text, symb=symbol) for symbol in ("H", "O")}
    return gto.M(atom=atoms, unit="Bohr", basis=basis, charge=charge, spin=spin, verbose=0)


@pytest.fixture(scope="module")
def reference_energy():
    mf = scf.RHF(pyscf_water("sto-3g"))
    mf.conv_tol = 1e-12
    return mf.kernel()


@pytest.fixture(scope="module")
def water_run(tmp_path_factory, cli, water_text):
    """One full run with both output files: (exit code, stdout, stderr, json path, molden path)."""
    directory = tmp_path_factory.mktemp("run")
    xyz = directory / "water.xyz"
    xyz.write_text(water_text)
    json_path, molden_path = directory / "water.json", directory / "water.molden"
    code, out, err = cli(
        "run", xyz, "--basis", "sto-3g", "--json", json_path, "--molden", molden_path, "--conv-tol", "1e-11"
    )
    return code, out, err, json_path, molden_path


def test_run_succeeds_and_prints_the_tables(water_run):
    code, out, err, _, _ = water_run
    assert code == 0, err
    assert err == ""
    for heading in (
        "energy / Eh",
        "Energy",
        "one-electron",
        "Coulomb",
        "exchange",
        "nuclear repulsion",
        "Orbital energies",
        "HOMO-4",
        "LUMO+1",
        "eV",
        "Mulliken charges",
        "Dipole moment",
        "debye",
        "HOMO-LUMO gap",
        "iterations",
        "wall time",
        "device",
        "cpu",
    ):
        assert heading in out, heading
    assert "NOT CONVERGED" not in out
    assert out.strip().splitlines()[-1].startswith("E(RHF/sto-3g) = -74.96")


def test_json_energy_matches_pyscf(water_run, reference_energy):
    _, _, _, json_path, _ = water_run
    doc = json.loads(json_path.read_text())
    assert doc["success"] is True
    assert abs(doc["properties"]["return_energy"] - reference_energy) < 1e-8
    assert doc["model"] == {"method": "rhf", "basis": "sto-3g"}
    assert doc["keywords"]["conv_tol"] == 1e-11
    assert doc["properties"]["calcinfo_nbasis"] == 7
    assert doc["provenance"]["device"].startswith("cpu")


def test_printed_components_add_up(water_run):
    _, out, _, json_path, _ = water_run
    doc = json.loads(json_path.read_text())
    props = doc["properties"]
    total = props["scf_one_electron_energy"] + props["scf_two_electron_energy"] + props["nuclear_repulsion_energy"]
    assert abs(total - props["return_energy"]) < 1e-9
    assert f"{props['nuclear_repulsion_energy']:.10f}" in out


def test_molden_orbitals_reproduce_the_energy_in_pyscf(water_run, reference_energy):
    _, _, _, _, molden_path = water_run
    mol, _, mo_coeff, mo_occ, _, _ = pyscf_molden.load(str(molden_path))
    mf = scf.RHF(mol)
    energy = mf.energy_tot(mf.make_rdm1(mo_coeff, mo_occ))
    assert abs(energy - reference_energy) < 1e-8


def test_quiet_prints_only_the_energy(cli, water_xyz, reference_energy):
    code, out, err = cli("run", water_xyz, "-b", "sto-3g", "--quiet", "--conv-tol", "1e-11")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("E(RHF/sto-3g) = ")
    assert abs(float(lines[0].split("=")[1].split()[0]) - reference_energy) < 1e-8


def test_not_converged_exits_3_with_a_loud_message(cli, water_xyz, tmp_path):
    out_json = tmp_path / "never.json"
    code, out, err = cli("run", water_xyz, "-b", "sto-3g", "--max-cycle", "1", "--json", out_json)
    assert code == EXIT_CONVERGENCE
    assert "NOT CONVERGED" in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hartree: error: RHF did not converge")
    assert "Traceback" not in err
    assert not out_json.exists()


def test_allow_unconverged_reports_and_exits_0(cli, water_xyz, tmp_path):
    out_json = tmp_path / "partial.json"
    code, out, err = cli(
        "run", water_xyz, "-b", "sto-3g", "--max-cycle", "1", "--allow-unconverged", "--json", out_json
    )
    assert code == 0, err
    assert "NOT CONVERGED" in out and "Energy" in out
    doc = json.loads(out_json.read_text())
    assert doc["success"] is False


def test_uhf_cation_matches_pyscf(cli, water_xyz, tmp_path):
    out_json = tmp_path / "cation.json"
    code, out, err = cli(
        "run",
        water_xyz,
        "-b",
        "sto-3g",
        "--method",
        "uhf",
        "--charge",
        "1",
        "--multiplicity",
        "2",
        "--conv-tol",
        "1e-11",
        "--json",
        out_json,
    )
    assert code == 0, err
    assert "Orbital energies (alpha)" in out and "Orbital energies (beta)" in out
    assert "<S^2>" in out
    mf = scf.UHF(pyscf_water("sto-3g", charge=1, spin=1))
    mf.conv_tol = 1e-12
    reference = mf.kernel()
    doc = json.loads(out_json.read_text())
    assert abs(doc["properties"]["return_energy"] - reference) < 1e-8
    assert (doc["properties"]["calcinfo_nalpha"], doc["properties"]["calcinfo_nbeta"]) == (5, 4)


def test_overwrite_replaces_an_existing_file(cli, water_xyz, tmp_path):
    target = tmp_path / "old.json"
    target.write_text("old\n")
    code, _, err = cli("run", water_xyz, "-b", "sto-3g", "--quiet", "--json", target, "--overwrite")
    assert code == 0, err
    assert json.loads(target.read_text())["schema_name"] == "qcschema_output"


def _console_script():
    script = os.path.join(os.path.dirname(sys.executable), "hartree")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "hartree"]


def test_console_script_error_path(tmp_path):
    """The installed ``hartree`` script: one error line and exit code 2, no traceback."""
    proc = subprocess.run(
        _console_script() + ["run", str(tmp_path / "missing.xyz"), "-b", "sto-3g"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"hartree: error: molecule file not found: {tmp_path / 'missing.xyz'}"
    assert proc.stdout == ""


def test_python_m_hartree_version():
    proc = subprocess.run([sys.executable, "-m", "hartree", "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("hartree ")


@pytest.mark.parametrize(
    "signum, code, words",
    [
        (signal.SIGINT, EXIT_INTERRUPTED, "hartree: interrupted (SIGINT)"),
        (signal.SIGTERM, EXIT_TERMINATED, "hartree: terminated (signal 15)"),
    ],
)
def test_signals_exit_with_one_line(water_xyz, tmp_path, signum, code, words):
    """SIGINT or SIGTERM (a batch scheduler) once the header is printed (the SCF is starting):
    exit 130 or 143, one line, no traceback, no temporary file left beside the checkpoint."""
    proc = subprocess.Popen(
        _console_script() + ["run", str(water_xyz), "-b", "cc-pvdz", "--checkpoint", str(tmp_path / "w.h5")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for line in proc.stdout:
            if line.startswith("basis:"):
                break
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert len(err.strip().splitlines()) == 1 and err.startswith(words), err
    assert not [f for f in os.listdir(tmp_path) if f.endswith("tmp")]


def test_rohf_and_molden_output(cli, water_xyz, tmp_path):
    out_molden = tmp_path / "rohf.molden"
    code, out, err = cli(
        "run",
        water_xyz,
        "-b",
        "sto-3g",
        "-m",
        "rohf",
        "-c",
        "1",
        "-s",
        "2",
        "--conv-tol",
        "1e-11",
        "--molden",
        out_molden,
    )
    assert code == 0, err
    mf = scf.ROHF(pyscf_water("sto-3g", charge=1, spin=1))
    mf.conv_tol = 1e-12
    reference = mf.kernel()
    energy = float(out.strip().splitlines()[-1].split("=")[1].split()[0])
    assert abs(energy - reference) < 1e-8
    assert "<S^2>           0.750000" in out
    mol, _, mo_coeff, mo_occ, _, _ = pyscf_molden.load(str(out_molden))
    assert sorted(set(np.round(mo_occ, 6))) == [0.0, 1.0, 2.0]


def test_cartesian_basis_matches_pyscf(cli, water_xyz):
    code, out, err = cli("run", water_xyz, "-b", "6-31g*", "--cartesian", "--quiet", "--conv-tol", "1e-11")
    assert code == 0, err
    mol = pyscf_water("6-31g*")
    mol.cart = True
    mol.build()
    mf = scf.RHF(mol)
    mf.conv_tol = 1e-12
    reference = mf.kernel()
    assert mol.nao == 19
    assert abs(float(out.split("=")[1].split()[0]) - reference) < 1e-8


def test_result_json_is_accepted_as_input(cli, water_run, reference_energy):
    """A QCSchema result written by --json can be the molecule FILE of a new run."""
    _, _, _, json_path, _ = water_run
    code, out, err = cli("run", json_path, "-b", "sto-3g", "--quiet", "--conv-tol", "1e-11")
    assert code == 0, err
    assert abs(float(out.split("=")[1].split()[0]) - reference_energy) < 1e-8


def test_checkpoint_restart(cli, water_xyz, tmp_path):
    checkpoint = tmp_path / "water.h5"
    code, first, err = cli("run", water_xyz, "-b", "sto-3g", "--checkpoint", checkpoint)
    assert code == 0, err
    assert checkpoint.exists()
    code, second, err = cli("run", water_xyz, "-b", "sto-3g", "--checkpoint", checkpoint, "--guess", "checkpoint")
    assert code == 0, err

    def iterations(text):
        return int(next(line for line in text.splitlines() if line.startswith("iterations")).split()[1])

    assert iterations(second) < iterations(first)


def test_quiet_unconverged_line_says_so(cli, water_xyz):
    code, out, err = cli("run", water_xyz, "-b", "sto-3g", "--max-cycle", "1", "--allow-unconverged", "-q")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("[NOT CONVERGED]")
