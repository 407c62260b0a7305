"""Kohn-Sham gradients through the command line and the interfaces: ``hartree run --gradient``
with a functional equals :func:`hartree.gradients.gradient` (the same SCF: 1e-10 Eh/bohr) and
PySCF's nuc_grad_method on hartree's grid (1e-7), the QCEngine gradient driver, a batch
gradient task and the ASE calculator give the same numbers (the keyword grid_response too),
``hartree opt`` ends below its gradient threshold, and ``hartree freq`` equals the frequency of
PySCF's analytic RKS Hessian on the same grid (1 cm-1).  Water and H2 in STO-3G on grid level 1."""

import json

import numpy as np
import pytest

from hartree.gradients import gradient
from hartree.molecule import Molecule
from hartree.optimize.criteria import convergence_set
from tests.cli.conftest import run_main

pytest.importorskip("pyscf")

#: a distorted water (bohr; no symmetry, every component of the gradient non-zero), given to
#: the CLI as a QCSchema molecule: qcelemental (QCEngine) keeps these short decimals exactly,
#: where it moves coordinates converted from Angstrom by up to 4e-9 bohr (3e-9 Eh/bohr)
WATER = Molecule.from_string("O 0.0 0.19 0.22; H 0.19 1.43 -0.89; H 0.0 -1.43 -0.81", unit="bohr")
#: H2 along no axis (bohr; every component of the gradient non-zero), as WATER
H2_TILTED = Molecule.from_string("H 0.0 0.0 0.0; H 0.6 0.7 1.1", unit="bohr")
#: H2 slightly stretched from the SVWN/STO-3G minimum (Angstrom)
H2_XYZ = "2\nH2\nH 0.0 0.0 0.0\nH 0.0 0.0 0.74\n"
LEVEL = 1
CPU = ["--device", "cpu"]


@pytest.fixture(scope="module")
def water_pbe(tmp_path_factory):
    """(folder, the CLI's gradient document, the API's GradientResult) of water PBE/STO-3G."""
    folder = tmp_path_factory.mktemp("dftgrad")
    (folder / "water.json").write_text(json.dumps(WATER.to_qcschema()))
    out = folder / "gradient.json"
    argv = ["run", str(folder / "water.json"), "-b", "sto-3g", "-m", "pbe", "--grid", "1", "--gradient"]
    code, stdout, err = run_main([*argv, "--json", str(out), *CPU])
    assert code == 0, err
    assert "nuclear gradient dE/dR (Eh/bohr)" in stdout and "E(RKS-PBE/sto-3g)" in stdout
    api = gradient(WATER, "sto-3g", "rks", xc="pbe", grid_level=LEVEL, device="cpu")
    return folder, json.loads(out.read_text()), api


def _pyscf_gradient(mol, xc):
    """PySCF's RKS gradient (natm, 3) on hartree's grid of LEVEL (coords and weights handed
    over), tightly converged (tests/gradients/test_ks_gradient.py)."""
    from pyscf import dft

    from hartree.basis import load_basis
    from hartree.dft import make_grid, parse_functional
    from tests.helpers import to_pyscf

    pmol = to_pyscf(mol, load_basis(mol, "sto-3g"))
    mf = dft.RKS(pmol)
    mf.xc = parse_functional(xc).xc_code
    grid = make_grid(mol, level=LEVEL)
    mf.grids = dft.gen_grid.Grids(pmol)
    mf.grids.coords, mf.grids.weights = np.array(grid.coords), np.array(grid.weights)
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel()
    assert mf.converged
    return mf, mf.nuc_grad_method().kernel()


def test_run_gradient_equals_the_api_and_pyscf(water_pbe):
    """The driver-gradient document of ``hartree run -m pbe --gradient`` holds the API's
    gradient (1e-10 Eh/bohr; measured 0) and PySCF's on the same grid (1e-7; measured 3e-10)."""
    _, doc, api = water_pbe
    g = np.asarray(doc["return_result"])
    np.testing.assert_allclose(g, api.gradient, rtol=0, atol=1e-10)
    _, ref = _pyscf_gradient(WATER, "pbe")
    np.testing.assert_allclose(g, ref, rtol=0, atol=1e-7)
    assert doc["driver"] == "gradient" and doc["model"]["method"] == "pbe"
    assert doc["extras"]["hartree"]["scf_method"] == "rks" and doc["keywords"]["grid_level"] == 1
    assert "exchange_correlation" in doc["extras"]["hartree"]["gradient_components"]


def test_qcengine_batch_and_ase_equal_the_cli(tmp_path):
    """On a tilted H2 (PBE): QCEngine's gradient driver gives the gradient of ``hartree run
    --gradient`` (1e-10 Eh/bohr); a batch gradient task with the keyword grid_response the
    API's gradient with the grid response (1e-10); the ASE calculator's forces are minus the
    CLI's gradient in eV/Angstrom (1e-7)."""
    import qcengine as qcng
    from ase import Atoms, units

    import hartree.qcengine  # noqa: F401  (registers the harness)
    from hartree.ase import Hartree
    from hartree.batch.inputs import BatchOptions, make_job
    from hartree.batch.task import run_task

    mol = H2_TILTED
    task = {
        "schema_name": "qcschema_input",
        "schema_version": 1,
        "molecule": mol.to_qcschema(),
        "driver": "gradient",
        "model": {"method": "pbe", "basis": "sto-3g"},
        "keywords": {"grid_level": LEVEL, "device": "cpu"},
    }
    path = tmp_path / "h2.json"
    path.write_text(json.dumps(task))
    code, _, err = run_main(["run", str(path), "--json", str(tmp_path / "out.json"), "-q"])
    assert code == 0, err
    ref = np.asarray(json.loads((tmp_path / "out.json").read_text())["return_result"])
    res = qcng.compute(task, "hartree", raise_error=True)
    np.testing.assert_allclose(np.asarray(res.return_result), ref, rtol=0, atol=1e-10)
    path.write_text(json.dumps({**task, "keywords": {**task["keywords"], "grid_response": True}}))
    job = make_job(str(path), "h2", BatchOptions())
    assert (job.task, job.scf_method, job.grid_response) == ("gradient", "rks", True)
    outcome = run_task(job)
    assert outcome.ok, outcome.error
    full = np.asarray(outcome.document["return_result"])
    assert outcome.document["keywords"]["grid_response"] is True
    api = gradient(mol, "sto-3g", "rks", xc="pbe", grid_level=LEVEL, device="cpu", grid_response=True)
    np.testing.assert_allclose(full, api.gradient, rtol=0, atol=1e-10)
    assert np.abs(full - ref).max() > 1e-6  # the grid's derivative (2.5e-5 here)
    atoms = Atoms(numbers=mol.numbers, positions=mol.coords * units.Bohr)
    atoms.calc = Hartree(basis="sto-3g", method="pbe", grid_level=LEVEL, device="cpu")
    forces = atoms.get_forces()
    assert atoms.calc.scf_result.method == "rks" and atoms.calc.scf_result.xc == "pbe"
    np.testing.assert_allclose(forces, -ref * units.Hartree / units.Bohr, rtol=0, atol=1e-7)


def test_opt_with_a_functional_converges(tmp_path):
    """``hartree opt -m svwn --grid 1 --grid-response`` on H2: converged, the energy below the
    start, the last gradient (checked again by the API with the grid response) below the
    criteria's largest-gradient threshold."""
    (tmp_path / "h2.xyz").write_text(H2_XYZ)
    out = tmp_path / "opt.json"
    argv = ["opt", str(tmp_path / "h2.xyz"), "-b", "sto-3g", "-m", "svwn", "--grid", "1", "--grid-response"]
    code, stdout, err = run_main([*argv, "--json", str(out), *CPU])
    assert code == 0, err
    assert "DFT:      svwn, RKS, grid level 1, gradients with the grid response" in stdout
    assert stdout.splitlines()[-1].startswith("E(RKS-SVWN/sto-3g) = ")
    doc = json.loads(out.read_text())
    assert doc["success"] and doc["input_specification"]["model"]["method"] == "svwn"
    assert doc["input_specification"]["keywords"]["grid_response"] is True
    assert doc["energies"][-1] < doc["energies"][0]
    final = Molecule.from_qcschema(doc["final_molecule"])
    g = gradient(final, "sto-3g", "rks", xc="svwn", grid_level=LEVEL, device="cpu", grid_response=True).gradient
    np.testing.assert_allclose(g, doc["trajectory"][-1]["return_result"], rtol=0, atol=1e-9)
    assert np.linalg.norm(g, axis=1).max() < convergence_set("gau").gmax


def test_freq_with_a_functional_equals_the_pyscf_hessian(tmp_path):
    """``hartree freq -m svwn --grid 1`` on H2: the stretching frequency of the central
    differences of analytic gradients equals that of PySCF's analytic RKS Hessian on the same
    grid to 1 cm-1 (measured 0.5 cm-1 of 4935: the grid moves with the displaced atoms here,
    not in the analytic Hessian; 0.15 cm-1 with --grid-response)."""
    from pyscf.hessian import thermo

    (tmp_path / "h2.xyz").write_text(H2_XYZ)
    out = tmp_path / "freq.json"
    code, stdout, err = run_main(
        ["freq", str(tmp_path / "h2.xyz"), "-b", "sto-3g", "-m", "svwn", "--grid", "1", "--json", str(out), *CPU]
    )
    assert code == 0, err
    assert "RKS-SVWN/sto-3g: E0" in stdout.splitlines()[-1]
    doc = json.loads(out.read_text())
    assert doc["model"]["method"] == "svwn" and doc["keywords"]["grid_level"] == 1
    mf, _ = _pyscf_gradient(Molecule.from_string(H2_XYZ), "svwn")
    ref = thermo.harmonic_analysis(mf.mol, mf.Hessian().kernel())["freq_wavenumber"]
    ours = doc["extras"]["hartree"]["frequencies_cm-1"]
    assert len(ours) == 1 and abs(ours[0] - ref[-1]) < 1.0, (ours, ref)
