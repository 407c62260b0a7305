"""Kohn-Sham DFT from the command line and in the outputs (issue 18, step 3): ``hartree run
--method FUNCTIONAL`` equals PySCF's RKS/UKS on hartree's grid, the report and the QCSchema
JSON carry the functional, the energy parts, the grid and the integrated electron count, the
QCEngine harness, ``hartree batch`` and an AtomicInput file give the same energy through the
one keyword mapping (hartree.keywords), and what is not implemented is refused in one line
with exit code 2.  Water and H2O+ in STO-3G on grid level 1 (the comparison is on one grid)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from hartree.cli.main import EXIT_INPUT
from hartree.errors import InputError
from hartree.keywords import check_gradient_method, gradient_options, method_options, scf_options
from hartree.molecule import Molecule
from tests.cli.conftest import WATER_XYZ, run_main

pytest.importorskip("pyscf")

#: H2O+ (doublet), no symmetry so that no orbitals are degenerate (Angstrom)
CATION_XYZ = "3\ncharge=1 multiplicity=2\nO 0.00 0.03 -0.06\nH 0.01 0.76 0.51\nH -0.04 -0.79 0.54\n"
#: SCF convergence of every run here (Eh), and |E_hartree - E_pyscf| allowed (Eh)
CONV = ["--conv-tol", "1e-10", "--device", "cpu"]
TOL = 1e-8


def _pyscf_energy(mol, basis_name, xc, level, unrestricted=False):
    """PySCF's RKS or UKS energy (Eh) given hartree's grid of ``level`` (its points and weights:
    PySCF builds its own grid only while grids.coords is None) and the same libxc functional."""
    from pyscf import dft

    from hartree.basis import load_basis
    from hartree.dft import make_grid, parse_functional
    from tests.helpers import to_pyscf

    pmol = to_pyscf(mol, load_basis(mol, basis_name))
    mf = dft.UKS(pmol) if unrestricted or mol.multiplicity != 1 else dft.RKS(pmol)
    mf.xc = parse_functional(xc).xc_code
    grid = make_grid(mol, level=level)
    mf.grids = dft.gen_grid.Grids(pmol)
    mf.grids.coords, mf.grids.weights = np.array(grid.coords), np.array(grid.weights)
    mf.conv_tol = 1e-12
    energy = mf.kernel()
    assert mf.converged
    return energy, len(grid.weights)


@pytest.fixture(scope="module")
def b3lyp_run(tmp_path_factory):
    """(exit code, stdout, stderr, JSON document) of water / STO-3G / B3LYP, grid 1, report on."""
    folder = tmp_path_factory.mktemp("dft")
    (folder / "water.xyz").write_text(WATER_XYZ)
    out = folder / "water.json"
    code, stdout, err = run_main(
        ["run", str(folder / "water.xyz"), "-b", "sto-3g", "-m", "B3LYP", "--grid", "1", "--json", str(out), *CONV]
    )
    return code, stdout, err, (json.loads(out.read_text()) if out.exists() else None)


def test_rks_energy_report_and_json(b3lyp_run):
    """The CLI's RKS energy equals PySCF's on the same grid; the report names the libxc
    component and its reference, E_xc, the grid and the electron count; the JSON carries
    them in QCSchema's fields (scf_xc_energy, ...) and extras.hartree.dft."""
    from qcelemental.models.v1 import AtomicResult

    code, stdout, err, doc = b3lyp_run
    assert code == 0, err
    mol = Molecule.from_string(WATER_XYZ)
    ref, npoints = _pyscf_energy(mol, "sto-3g", "b3lyp", 1)
    energy = doc["properties"]["return_energy"]
    assert abs(energy - ref) < TOL, (energy, ref)
    for text in ("exchange-correlation", "exact exchange", "HYB_GGA_XC_B3LYP", "Stephens", "level 1"):
        assert text in stdout, text
    assert f"{npoints} points" in stdout and "electrons on the grid" in stdout
    assert f"E(RKS-B3LYP/sto-3g) = {energy:.10f} Eh" in stdout
    AtomicResult(**doc)  # a valid QCSchema v1 result
    props, extras = doc["properties"], doc["extras"]["hartree"]
    assert doc["model"]["method"] == "b3lyp" and extras["scf_method"] == "rks"
    parts = props["scf_one_electron_energy"] + props["scf_two_electron_energy"] + props["scf_xc_energy"]
    assert abs(parts + props["nuclear_repulsion_energy"] - energy) < 1e-10
    assert props["scf_xc_energy"] < 0.0 and extras["exchange_energy"] < 0.0  # 20 % exact exchange
    dft = extras["dft"]
    assert dft["xc"] == "b3lyp" and dft["xc_code"] == "HYB_GGA_XC_B3LYP" and dft["hf_exchange"] == 0.2
    assert [c["name"] for c in dft["components"]] == ["HYB_GGA_XC_B3LYP"]
    assert "J. Phys. Chem. 98, 11623 (1994)" in dft["components"][0]["references"][0]
    assert dft["grid_level"] == 1 and dft["grid_points"] == npoints
    assert abs(dft["electrons_integrated"] - 10.0) < 1e-3  # level 1: 6e-5 measured
    assert doc["keywords"]["grid_level"] == 1


@pytest.mark.parametrize(
    ("xyz", "args", "unrestricted"),
    [(CATION_XYZ, ["-m", "pbe"], True), (WATER_XYZ, ["-m", "svwn", "--unrestricted"], True)],
    ids=["open-shell-uks", "forced-uks"],
)
def test_uks_energy_equals_pyscf(tmp_path, xyz, args, unrestricted):
    """Open shells run UKS, --unrestricted forces it on a singlet; both equal PySCF's UKS."""
    path = tmp_path / "m.xyz"
    path.write_text(xyz)
    out = tmp_path / "m.json"
    code, stdout, err = run_main(
        ["run", str(path), "-b", "sto-3g", "--grid", "1", "-q", "--json", str(out), *args, *CONV]
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    ref, _ = _pyscf_energy(Molecule.from_file(str(path)), "sto-3g", args[1], 1, unrestricted)
    assert doc["extras"]["hartree"]["scf_method"] == "uks" and stdout.startswith("E(UKS-")
    assert abs(doc["properties"]["return_energy"] - ref) < TOL


def test_qcengine_atomic_input_and_batch_equal_the_cli(tmp_path, b3lyp_run):
    """model.method b3lyp with keywords grid_level 1: QCEngine, hartree run input.json and a
    batch task give the CLI's energy (1e-9 Eh: the same SCF); their gradients are in
    test_cli_dft_gradient.py."""
    import qcengine as qcng

    import hartree.qcengine  # noqa: F401  (registers the harness)
    from hartree.batch.inputs import BatchOptions, make_job
    from hartree.batch.task import run_task

    energy = b3lyp_run[3]["properties"]["return_energy"]
    doc = {
        "schema_name": "qcschema_input",
        "schema_version": 1,
        "molecule": Molecule.from_string(WATER_XYZ).to_qcschema(),
        "driver": "energy",
        "model": {"method": "b3lyp", "basis": "sto-3g"},
        "keywords": {"grid_level": 1, "conv_tol": 1e-10, "device": "cpu"},
    }
    res = qcng.compute(doc, "hartree", raise_error=True)
    assert abs(res.return_result - energy) < 1e-9 and res.properties.scf_xc_energy < 0.0
    assert res.model.method == "b3lyp" and res.extras["hartree"]["dft"]["grid_level"] == 1
    path = tmp_path / "input.json"
    path.write_text(json.dumps(doc))
    code, stdout, err = run_main(["run", str(path), "-q"])
    assert code == 0 and abs(float(stdout.split("=")[1].split()[0]) - energy) < 1e-9, err
    job = make_job(str(path), "input", BatchOptions())
    assert (job.method, job.scf_method, job.options["xc"], job.options["grid_level"]) == ("b3lyp", "rks", "b3lyp", 1)
    outcome = run_task(job)
    assert outcome.ok and abs(outcome.document["properties"]["return_energy"] - energy) < 1e-9


def test_keyword_mapping():
    """hartree.keywords: a functional runs RKS for closed-shell singlets and UKS otherwise or
    with 'unrestricted'; grid_level defaults to 3; grid_response goes to the gradient, not
    the SCF; HF methods refuse the DFT keywords; a gradient's method check refuses what
    the SCF refuses, with the command's name."""
    water = Molecule.from_string(WATER_XYZ)
    doublet = Molecule.from_string(CATION_XYZ)
    device, options = scf_options("energy", {"grid_level": 2, "device": "cpu"})
    assert device == "cpu" and options == {"grid_level": 2}
    assert method_options("PBE", water, options) == ("rks", {"grid_level": 2, "xc": "pbe"})
    assert method_options("pbe", water, {"unrestricted": True}) == ("uks", {"xc": "pbe", "grid_level": 3})
    assert method_options("pbe", doublet, {}) == ("uks", {"xc": "pbe", "grid_level": 3})
    assert method_options("uhf", doublet, {"unrestricted": False, "conv_tol": 1e-8}) == ("uhf", {"conv_tol": 1e-8})
    assert gradient_options("pbe", water, {"grid_response": True}) == ("rks", {"xc": "pbe", "grid_level": 3}, True)
    assert gradient_options("rohf", doublet, {}) == ("rohf", {}, False)
    assert check_gradient_method("b3lyp", "hartree opt") is None and check_gradient_method("uhf", "x") is None
    assert check_gradient_method("cam-b3lyp", "hartree freq", "in.json") is None  # range separated: CPU
    assert method_options("wb97x-v", water, {}) == ("rks", {"xc": "wb97x-v", "grid_level": 3})
    for method, keywords, message in [
        ("rhf", {"grid_level": 2}, "grid_level applies only to DFT functionals"),
        ("rhf", {"unrestricted": True}, "use method 'uhf'"),
        ("rhf", {"grid_response": True}, "grid_response applies only to DFT functionals, not to RHF"),
        ("mp2", {}, "not an SCF method"),
        ("roks", {}, "ROKS (restricted open-shell Kohn-Sham) is not implemented"),
        ("rks", {}, "name the functional"),
        ("no-such", {}, "unknown method 'no-such'"),
        ("1e999*b88", {}, "not a finite number"),
    ]:
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            method_options(method, water, keywords, "in.json")
    with pytest.raises(InputError, match="grid_level must be an integer from 1 to 9"):
        scf_options("energy", {"grid_level": 10})


REFUSED = [
    (["run", "{w}", "-m", "roks"], "ROKS (restricted open-shell Kohn-Sham) is not implemented"),
    (
        ["run", "{w}", "-m", "pbe", "--grid-response"],
        "--grid-response (keyword grid_response) applies only to gradients",
    ),
    (["run", "{w}", "-m", "b3lyp", "--checkpoint", "{d}/c.h5"], "not supported for DFT yet"),
    (["run", "{w}", "-m", "rhf", "--grid", "2"], "--grid applies only to DFT functionals"),
    (["run", "{w}", "-m", "uhf", "--unrestricted"], "--unrestricted applies only to DFT functionals"),
    (["run", "{w}", "-m", "b3lyp", "--grid", "10"], "--grid: must be an integer from 1 to 9"),
    (["opt", "{w}", "-m", "roks"], "hartree opt: ROKS (restricted open-shell Kohn-Sham) is not implemented"),
    (["opt", "{w}", "-m", "rhf", "--grid-response"], "--grid-response applies only to DFT functionals"),
    (["freq", "{w}", "-m", "uhf", "--grid", "2"], "--grid applies only to DFT functionals"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(a[:1] + a[2:4]) for a, _ in REFUSED])
def test_refusals_are_one_line_with_exit_code_2(tmp_path, argv, message):
    water = tmp_path / "water.xyz"
    water.write_text(WATER_XYZ)
    argv = [a.format(w=water, d=tmp_path) for a in argv]
    code, stdout, err = run_main([*argv[:2], "-b", "sto-3g", *argv[2:]])
    assert code == EXIT_INPUT and message in err, err
    assert err.startswith(("hartree: error:", "usage:")) and "Traceback" not in err and stdout == ""
    assert err.count("\n") == 1 or "usage:" in err  # argparse's usage line, then its one error line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["water.xyz"]  # nothing written


def test_without_pyscf_one_line_names_the_dft_extra(tmp_path):
    """No PySCF (the dft extra): a functional stops with one line naming pip install
    "hartree[dft]" (the import of PySCF made to fail in a child process)."""
    water = tmp_path / "water.xyz"
    water.write_text(WATER_XYZ)
    code = (
        "import sys; sys.modules['pyscf'] = None\n"  # 'import pyscf' then raises ImportError
        "from hartree.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = [sys.executable, "-c", code, "run", str(water), "-b", "sto-3g", "-q", "--device", "cpu"]
    proc = subprocess.run([*argv, "-m", "b3lyp"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == EXIT_INPUT and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and 'pip install "hartree[dft]"' in proc.stderr, proc.stderr
