"""Dispersion corrections through the command line and the interfaces (``--dispersion``,
keyword ``dispersion``): the total energy is the SCF's plus E_disp, whose value is PySCF's
(pyscf-dispersion) on the same molecule; the JSON carries it in QCSchema's
``scf_dispersion_correction_energy`` and ``extras.hartree.dispersion``; gradients add the
dispersion gradient (``hartree run --gradient``, QCEngine, a batch task, ASE forces), ``hartree
opt`` converges on the corrected surface and ``hartree freq``'s Hessian is PySCF's analytic
RHF Hessian plus dftd3's analytic dispersion Hessian; the freq checkpoint's fingerprint tells
runs with and without a correction apart; refusals are one line with exit code 2.  Water and
H2 in STO-3G, grid level 1."""

import json

import numpy as np
import pytest

from hartree.cli.main import EXIT_INPUT
from hartree.gradients import gradient
from hartree.molecule import Molecule
from hartree.optimize.criteria import convergence_set
from hartree.scf import run
from tests.cli.conftest import WATER_XYZ, run_main

pytest.importorskip("pyscf")
pytest.importorskip("dftd3")
pytest.importorskip("dftd4")

from hartree.dft.dispersion import dispersion_energy_gradient  # noqa: E402  (after the skips)

#: a distorted water (bohr; every gradient component non-zero), as a QCSchema molecule file
WATER = Molecule.from_string("O 0.0 0.19 0.22; H 0.19 1.43 -0.89; H 0.0 -1.43 -0.81", unit="bohr")
#: H2 along no axis (bohr)
H2_TILTED = Molecule.from_string("H 0.0 0.0 0.0; H 0.6 0.7 1.1", unit="bohr")
H2_XYZ = "2\nH2\nH 0.0 0.0 0.0\nH 0.0 0.0 0.74\n"
CPU = ["--device", "cpu"]


def _pyscf_dispersion(mol, xc, model):
    """(energy, gradient) of PySCF's dispersion interface for ``mol`` (hartree Molecule) and
    the functional ``xc`` ('hf': Hartree-Fock's parameters)."""
    pytest.importorskip("pyscf.dispersion")
    from pyscf import dft, gto, scf
    from pyscf.grad import dispersion as grad_dispersion
    from pyscf.scf import dispersion

    atoms = [(int(z), tuple(float(x) for x in r)) for z, r in zip(mol.numbers, mol.coords)]
    pmol = gto.M(atom=atoms, unit="Bohr", basis="sto-3g", charge=mol.charge, spin=mol.multiplicity - 1, verbose=0)
    mf = scf.RHF(pmol) if xc == "hf" else dft.RKS(pmol, xc=xc)
    return dispersion.get_dispersion(mf, disp=model), grad_dispersion.get_dispersion(mf.nuc_grad_method(), disp=model)


@pytest.fixture(scope="module")
def water_b3lyp_d3(tmp_path_factory):
    """(stdout, document) of ``hartree run water.json -m b3lyp --grid 1 --dispersion d3bj``."""
    folder = tmp_path_factory.mktemp("disp")
    (folder / "water.json").write_text(json.dumps(WATER.to_qcschema()))
    out = folder / "out.json"
    argv = ["run", str(folder / "water.json"), "-b", "sto-3g", "-m", "b3lyp", "--grid", "1", "--dispersion", "d3bj"]
    code, stdout, err = run_main([*argv, "--json", str(out), *CPU])
    assert code == 0, err
    return stdout, json.loads(out.read_text())


def test_run_energy_is_the_scf_energy_plus_dispersion(water_b3lyp_d3):
    """The total energy is the SCF energy of the same run without a correction plus E_disp
    (1e-10 Eh; the SCF does not change), E_disp is PySCF's (1e-12 Eh); the document holds it
    in scf_dispersion_correction_energy and extras.hartree.dispersion, validates with
    qcelemental, and the report shows the row, the table and 'E(RKS-B3LYP-D3BJ/...)'."""
    from qcelemental.models import AtomicResult

    stdout, doc = water_b3lyp_d3
    props = doc["properties"]
    e_ref, _ = _pyscf_dispersion(WATER, "b3lyp", "d3bj")
    assert abs(props["scf_dispersion_correction_energy"] - e_ref) < 1e-12 and e_ref < 0.0
    plain = run(WATER, "sto-3g", "rks", xc="b3lyp", grid_level=1, device="cpu")
    assert plain.dispersion is None and "dispersion" not in plain.energy_components
    assert abs(props["return_energy"] - (plain.energy + e_ref)) < 1e-10
    assert props["scf_total_energy"] == props["return_energy"] == doc["return_result"]
    record = doc["extras"]["hartree"]["dispersion"]
    assert (record["model"], record["parameters"], record["package"]) == ("d3bj", "b3lyp", "dftd3")
    assert record["three_body"] is False and record["energy"] == props["scf_dispersion_correction_energy"]
    assert doc["keywords"]["dispersion"] == "d3bj"
    AtomicResult(**doc)
    assert "dispersion D3(BJ)" in stdout and "Dispersion correction" in stdout
    assert f"E(RKS-B3LYP-D3BJ/sto-3g) = {props['return_energy']:.10f} Eh" in stdout


def test_run_gradient_adds_the_dispersion_gradient(tmp_path):
    """``hartree run -m rhf --dispersion d4 --gradient`` (HF-D4): the gradient is the RHF
    gradient of the API without a correction (1e-9 Eh/bohr) plus PySCF's D4 gradient (its
    component, 1e-12 Eh/bohr)."""
    (tmp_path / "water.json").write_text(json.dumps(WATER.to_qcschema()))
    out = tmp_path / "grad.json"
    argv = ["run", str(tmp_path / "water.json"), "-b", "sto-3g", "-m", "rhf", "--dispersion", "d4", "--gradient"]
    code, stdout, err = run_main([*argv, "--json", str(out), *CPU])
    assert code == 0, err
    doc = json.loads(out.read_text())
    e_ref, g_ref = _pyscf_dispersion(WATER, "hf", "d4")
    component = np.asarray(doc["extras"]["hartree"]["gradient_components"]["dispersion"])
    np.testing.assert_allclose(component, g_ref, rtol=0, atol=1e-12)
    plain = gradient(WATER, "sto-3g", "rhf", device="cpu")
    np.testing.assert_allclose(np.asarray(doc["return_result"]), plain.gradient + g_ref, rtol=0, atol=1e-9)
    assert abs(doc["properties"]["return_energy"] - (plain.energy + e_ref)) < 1e-10
    assert doc["extras"]["hartree"]["dispersion"]["three_body"] is True and "E(RHF-D4/sto-3g)" in stdout


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("b3lyp-d3bj", ("rks", "b3lyp", "d3bj")),
        ("B3LYP-D3(BJ)", ("rks", "b3lyp", "d3bj")),
        ("pbe0-d3", ("rks", "pbe0", "d3zero")),
        ("pbe-d3zero", ("rks", "pbe", "d3zero")),
        ("r2scan-d4", ("rks", "r2scan", "d4")),
        ("rhf-d4", ("rhf", None, "d4")),
        ("b3lyp", ("rks", "b3lyp", None)),
    ],
)
def test_method_names_carry_the_dispersion_suffix(method, expected):
    """``--method b3lyp-d3bj`` is ``--method b3lyp --dispersion d3bj`` (and -d3(bj), -d3 for
    zero damping, -d3zero, -d4, on HF too)."""
    from hartree.keywords import method_options

    scf, options = method_options(method, WATER, {})
    assert (scf, options.get("xc"), options.get("dispersion")) == expected
    again, same = method_options(method, WATER, {"dispersion": expected[2]} if expected[2] else {})
    assert (again, same) == (scf, options)  # the same model given twice is no conflict


def test_method_suffix_runs_as_the_keyword(tmp_path):
    """``hartree run -m rhf-d3bj``: energy = RHF energy of the API + PySCF's D3(BJ) energy
    (1e-10 Eh), the label names the model."""
    (tmp_path / "water.json").write_text(json.dumps(WATER.to_qcschema()))
    out = tmp_path / "e.json"
    code, stdout, err = run_main(
        ["run", str(tmp_path / "water.json"), "-b", "sto-3g", "-m", "rhf-d3bj", "--json", str(out), *CPU]
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    e_ref, _ = _pyscf_dispersion(WATER, "hf", "d3bj")
    plain = run(WATER, "sto-3g", "rhf", device="cpu")
    assert abs(doc["properties"]["return_energy"] - (plain.energy + e_ref)) < 1e-10
    assert "E(RHF-D3BJ/sto-3g)" in stdout


def test_qcengine_batch_and_ase_pass_it_through(tmp_path):
    """On a tilted H2 (PBE, grid level 1, keyword dispersion d3bj): QCEngine's gradient, a
    batch gradient task (``--dispersion`` of the command line over an input without it) and
    ASE's forces equal the API's gradient with the correction (1e-10 Eh/bohr; ASE 1e-7
    eV/Angstrom), which is the plain gradient plus the package's; the batch fingerprint
    differs from the run without a correction."""
    import qcengine as qcng
    from ase import Atoms, units

    import hartree.qcengine  # noqa: F401  (registers the harness)
    from hartree.ase import Hartree
    from hartree.batch.inputs import BatchOptions, make_job
    from hartree.batch.task import run_task

    mol = H2_TILTED
    api = gradient(mol, "sto-3g", "rks", xc="pbe", grid_level=1, device="cpu", dispersion="d3bj")
    _, g_disp = dispersion_energy_gradient(mol, "pbe", "d3bj", gradient=True)
    np.testing.assert_allclose(api.components["dispersion"], g_disp, rtol=0, atol=0)
    task = {
        "schema_name": "qcschema_input",
        "schema_version": 1,
        "molecule": mol.to_qcschema(),
        "driver": "gradient",
        "model": {"method": "pbe", "basis": "sto-3g"},
        "keywords": {"grid_level": 1, "device": "cpu"},
    }
    res = qcng.compute({**task, "keywords": {**task["keywords"], "dispersion": "d3bj"}}, "hartree", raise_error=True)
    np.testing.assert_allclose(np.asarray(res.return_result), api.gradient, rtol=0, atol=1e-10)
    assert abs(res.properties.scf_dispersion_correction_energy - api.scf.dispersion["energy"]) < 1e-14
    path = tmp_path / "h2.json"
    path.write_text(json.dumps(task))
    job = make_job(str(path), "h2", BatchOptions(dispersion="d3bj"))
    assert job.options["dispersion"] == "d3bj"
    assert job.fingerprint != make_job(str(path), "h2", BatchOptions()).fingerprint
    outcome = run_task(job)
    assert outcome.ok, outcome.error
    np.testing.assert_allclose(np.asarray(outcome.document["return_result"]), api.gradient, rtol=0, atol=1e-10)
    assert outcome.document["keywords"]["dispersion"] == "d3bj"
    atoms = Atoms(numbers=mol.numbers, positions=mol.coords * units.Bohr)
    atoms.calc = Hartree(basis="sto-3g", method="pbe", grid_level=1, device="cpu", dispersion="d3bj")
    forces = atoms.get_forces()
    np.testing.assert_allclose(forces, -api.gradient * units.Hartree / units.Bohr, rtol=0, atol=1e-7)
    assert abs(atoms.get_potential_energy() - api.energy * units.Hartree) < 1e-8


def test_opt_converges_on_the_corrected_surface(tmp_path):
    """``hartree opt -m rhf --dispersion d3bj`` on H2: converged, the header names the
    correction, the keywords record it, and the final gradient of the API with the correction
    (equal to the trajectory's last, 1e-9 Eh/bohr) lies below gau's largest-gradient threshold."""
    (tmp_path / "h2.xyz").write_text(H2_XYZ)
    out = tmp_path / "opt.json"
    argv = ["opt", str(tmp_path / "h2.xyz"), "-b", "sto-3g", "-m", "rhf", "--dispersion", "d3bj"]
    code, stdout, err = run_main([*argv, "--json", str(out), *CPU])
    assert code == 0, err
    assert "dispersion: d3bj" in stdout
    doc = json.loads(out.read_text())
    assert doc["success"] and doc["input_specification"]["keywords"]["dispersion"] == "d3bj"
    final = Molecule.from_qcschema(doc["final_molecule"])
    g = gradient(final, "sto-3g", "rhf", device="cpu", dispersion="d3bj")
    assert "dispersion" in g.components
    np.testing.assert_allclose(g.gradient, doc["trajectory"][-1]["return_result"], rtol=0, atol=1e-9)
    assert np.linalg.norm(g.gradient, axis=1).max() < convergence_set("gau").gmax


def test_freq_hessian_adds_the_dispersion_hessian(tmp_path):
    """``hartree freq -m rhf --dispersion d3bj --step 0.001`` on H2: the Hessian of central
    differences of the corrected gradients equals PySCF's analytic RHF Hessian plus dftd3's
    analytic dispersion Hessian (largest element 4.7e-3) to 3e-6 Eh/bohr^2, the differences'
    truncation error (at the default step 0.005 it is 2.1e-5 for the SCF part and 6.8e-6 for
    the dispersion part); the checkpoint belongs to this job and is refused for the same job
    without the correction."""
    from dftd3.interface import DispersionModel, RationalDampingParam
    from pyscf import gto, scf

    from hartree.basis import load_basis
    from hartree.errors import InputError
    from hartree.vibrations import FREQUENCY_SCF_DEFAULTS
    from hartree.vibrations.driver import open_checkpoint

    (tmp_path / "h2.xyz").write_text(H2_XYZ)
    out, store = tmp_path / "freq.json", tmp_path / "freq.chk.json"
    argv = ["freq", str(tmp_path / "h2.xyz"), "-b", "sto-3g", "-m", "rhf", "--dispersion", "d3bj", "--step", "0.001"]
    code, stdout, err = run_main([*argv, "--json", str(out), "--checkpoint", str(store), *CPU])
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["keywords"]["dispersion"] == "d3bj"
    mol = Molecule.from_string(H2_XYZ)
    atoms = [(int(z), tuple(float(x) for x in r)) for z, r in zip(mol.numbers, mol.coords)]
    mf = scf.RHF(gto.M(atom=atoms, unit="Bohr", basis="sto-3g", verbose=0)).run(conv_tol=1e-12)
    h_scf = mf.Hessian().kernel().transpose(0, 2, 1, 3).reshape(6, 6)
    model = DispersionModel(np.asarray(mol.numbers), np.asarray(mol.coords))
    h_disp = np.asarray(model.get_hessian(RationalDampingParam(method="hf"))["hessian"]).reshape(6, 6)
    assert np.abs(h_disp).max() > 1e-4
    np.testing.assert_allclose(np.asarray(doc["return_result"]).reshape(6, 6), h_scf + h_disp, rtol=0, atol=3e-6)
    basis = load_basis(mol, "sto-3g")
    scf_options = {**FREQUENCY_SCF_DEFAULTS, "dispersion": "d3bj"}
    own = open_checkpoint(store, mol, basis, "rhf", 0.001, scf_options)
    assert len(own.records) == 12
    with pytest.raises(InputError, match="belongs to another job"):
        open_checkpoint(store, mol, basis, "rhf", 0.001, dict(FREQUENCY_SCF_DEFAULTS))


REFUSED = [
    (["run", "{w}", "-m", "b3lyp", "--dispersion", "d5"], "argument --dispersion: invalid choice: 'd5'"),
    (["run", "{w}", "-m", "svwn", "--dispersion", "d3bj"], "no D3(BJ) dispersion parameters for 'svwn' in dftd3"),
    (["run", "{w}", "-m", "m06-2x", "--dispersion", "d4"], "no D4 dispersion parameters for 'm06-2x' in dftd4"),
    (["run", "{w}", "-m", "mp2", "--dispersion", "d3bj"], "applies to SCF methods, not to --method mp2"),
    (["opt", "{w}", "-m", "svwn", "--dispersion", "d3zero"], "no D3(zero) dispersion parameters for 'svwn'"),
    (["freq", "{w}", "-m", "svwn", "--dispersion", "d4"], "no D4 dispersion parameters for 'svwn'"),
    (["batch", "{w}", "--dispersion", "d5", "--out", "{d}/out"], "--dispersion must be one of d3bj, d3zero, d4"),
    (["run", "{j}"], "keywords.dispersion must be a string"),
    (["run", "{w}", "-m", "b3lyp-d3bj", "--dispersion", "d4"], "names the dispersion d3bj and the dispersion 'd4'"),
    (["run", "{w}", "-m", "svwn-d3bj"], "no D3(BJ) dispersion parameters for 'svwn' in dftd3"),
    (["run", "{w}", "-m", "wb97x-d3"], "is libxc's functional WB97X_D3, fitted with its own dispersion"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(a[:1] + a[2:5]) for a, _ in REFUSED])
def test_refusals_are_one_line_with_exit_code_2(tmp_path, argv, message):
    water = tmp_path / "water.xyz"
    water.write_text(WATER_XYZ)
    task = {"molecule": WATER.to_qcschema(), "driver": "energy", "model": {"method": "pbe", "basis": "sto-3g"}}
    (tmp_path / "in.json").write_text(json.dumps({**task, "keywords": {"dispersion": 3}}))
    argv = [a.format(w=water, d=tmp_path, j=tmp_path / "in.json") for a in argv]
    code, stdout, err = run_main([*argv[:2], "-b", "sto-3g", *argv[2:]])
    assert code == EXIT_INPUT and message in err, err
    assert err.startswith(("hartree: error:", "usage:")) and "Traceback" not in err and stdout == ""
    assert err.count("\n") == 1 or "usage:" in err  # argparse's usage line, then its one error line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json", "water.xyz"]  # nothing written
