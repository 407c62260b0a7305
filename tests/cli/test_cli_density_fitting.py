"""Density fitting from the command line and the keywords (issue 19, step 1): ``hartree run
FILE --density-fitting [AUX]`` (and ``--exact-k``) names the fitting basis and gives the
energy of hartree.scf.run with density_fitting (a range-separated hybrid's too), and
``--gradient`` its gradient (step 2; a range-separated hybrid's with its fitted long-range K
too); bad input ends in one line with exit code 2.  Water in STO-3G from the core guess (no compile
of the generated ERI module: tests/scf/test_density_fitting.py says why)."""

import json

import numpy as np
import pytest

from hartree.cli.main import EXIT_INPUT
from hartree.errors import InputError
from hartree.io.qcschema_input import check_keywords
from hartree.keywords import scf_options
from hartree.scf import run
from tests.helpers import water

RUN = ["-b", "sto-3g", "--guess", "core", "--device", "cpu", "--conv-tol", "1e-10"]


def _one_line(code, err, words):
    assert code == EXIT_INPUT, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hartree: error:") and words in lines[0], err


@pytest.mark.parametrize("aux", [None, "def2-universal-jkfit"])
def test_run_fits_and_names_the_basis(cli, water_xyz, tmp_path, aux):
    """The flag alone means the default basis; the energy is the API's, the header and the
    notes name the basis, the JSON records the keyword."""
    out = tmp_path / "water.json"
    flag = ["--density-fitting"] + ([aux] if aux else [])
    code, stdout, err = cli("run", water_xyz, *RUN, *flag, "--json", out)
    assert code == 0, err
    name = aux or "def2-universal-JKFIT"
    assert f"fitting:  {name}, " in stdout and "(J and K fitted)" in stdout
    assert f"note: density fitting: {name}" in stdout
    ref = run(water(), "sto-3g", "rhf", device="cpu", guess="core", conv_tol=1e-10, density_fitting=aux or True)
    doc = json.loads(out.read_text())
    assert abs(doc["return_result"] - ref.energy) < 1e-9
    assert doc["keywords"]["density_fitting"] == (aux or True)


@pytest.mark.parametrize(
    ("command", "extra", "words"),
    [
        ("run", ["--exact-k"], "applies only with density fitting"),
        ("run", ["--density-fitting", "no-such-jkfit"], "density-fitting basis: unknown basis set"),
    ],
)
def test_refusals_are_one_line_with_exit_code_2(cli, water_xyz, command, extra, words):
    args = RUN if command == "run" else ["-b", "sto-3g", "--device", "cpu"]
    code, _, err = cli(command, water_xyz, *args, *extra)
    _one_line(code, err, words)


def test_run_fits_a_range_separated_hybrid(cli, water_xyz, tmp_path):
    """``--method wb97x --density-fitting``: J, K and the long-range K fitted (no --exact-k),
    the energy is the API's (tests/scf/test_density_fitting.py: PySCF's), the notes name the
    second, attenuated fit."""
    out = tmp_path / "wb97x.json"
    code, stdout, err = cli("run", water_xyz, *RUN, "-m", "wb97x", "--grid", "1", "--density-fitting", "--json", out)
    assert code == 0, err
    assert "(J and K fitted)" in stdout and "density fitting of erf(0.3 r12)/r12" in stdout
    ref = run(water(), "sto-3g", "rks", xc="wb97x", grid_level=1, device="cpu", guess="core", conv_tol=1e-10,
              density_fitting=True)  # fmt: skip
    assert abs(json.loads(out.read_text())["return_result"] - ref.energy) < 1e-9


def test_run_gradient_of_a_range_separated_hybrid(cli, water_xyz, tmp_path):
    """``--method wb97x --density-fitting --gradient`` (no --exact-k): the JSON's gradient is
    scf_gradient's of the fitted energy, its long-range exchange fitted too
    (tests/gradients/test_df_range_separated_gradient.py checks that against PySCF)."""
    from hartree.gradients import scf_gradient

    out = tmp_path / "grad.json"
    code, stdout, err = cli(
        "run", water_xyz, *RUN, "-m", "wb97x", "--grid", "1", "--density-fitting", "--gradient", "--json", out
    )
    assert code == 0, err
    assert "density fitting of erf(0.3 r12)/r12" in stdout
    ref = run(water(), "sto-3g", "rks", xc="wb97x", grid_level=1, device="cpu", guess="core", conv_tol=1e-10,
              conv_tol_grad=1e-7, density_fitting=True)  # fmt: skip
    got = np.asarray(json.loads(out.read_text())["return_result"]).reshape(-1, 3)
    expected = scf_gradient(ref).gradient
    assert np.abs(expected).max() > 1e-2
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7)


def test_batch_makes_a_fitted_range_separated_gradient_task(tmp_path):
    """A batch gradient task of a range-separated hybrid with a fitted K is made (no longer
    refused before any work): the job runs RKS wB97X with density_fitting and without exact_k,
    the route of scf_gradient's fitted long-range term (run end to end by
    test_run_gradient_of_a_range_separated_hybrid); with exact_k the task is made too, and the
    energy task."""
    from hartree.batch.inputs import BatchOptions, make_job

    path = tmp_path / "water.xyz"
    path.write_text(water().to_xyz())
    fit = {"basis": "sto-3g", "device": "cpu", "method": "wb97x", "density_fitting": True}
    job = make_job(str(path), "water", BatchOptions(task="gradient", **fit))
    assert (job.task, job.scf_method, job.options["xc"]) == ("gradient", "rks", "wb97x")
    assert job.options["density_fitting"] is True and not job.options.get("exact_k")
    assert make_job(str(path), "water", BatchOptions(task="energy", **fit)).options["density_fitting"] is True
    assert make_job(str(path), "water", BatchOptions(task="gradient", exact_k=True, **fit)).options["exact_k"] is True


def test_keywords_take_density_fitting():
    """The keyword path (AtomicInput, batch, QCEngine): a basis name keeps its spelling (it may
    be a file), energies and gradients take it, a wrong type is named."""
    _, options = scf_options("energy", {"density_fitting": "Def2-Universal-JKFIT", "exact_k": True})
    assert options["density_fitting"] == "Def2-Universal-JKFIT" and options["exact_k"] is True
    _, options = scf_options("gradient", {"density_fitting": True})
    assert options["density_fitting"] is True
    with pytest.raises(InputError, match="density_fitting must be a string or boolean"):
        check_keywords({"density_fitting": 3})


def test_run_gradient_is_the_fitted_gradient(cli, water_xyz, tmp_path):
    """``--gradient --density-fitting``: the JSON's gradient is scf_gradient's of the fitted
    energy (tests/gradients/test_df_gradient.py checks that against PySCF)."""
    from hartree.gradients import scf_gradient

    out = tmp_path / "grad.json"
    code, _, err = cli("run", water_xyz, *RUN, "--gradient", "--density-fitting", "--json", out)
    assert code == 0, err
    ref = run(
        water(), "sto-3g", "rhf", device="cpu", guess="core", conv_tol=1e-10, conv_tol_grad=1e-7, density_fitting=True
    )
    got = np.asarray(json.loads(out.read_text())["return_result"]).reshape(-1, 3)
    np.testing.assert_allclose(got, scf_gradient(ref).gradient, rtol=0, atol=1e-7)


def test_batch_takes_density_fitting(tmp_path):
    """``hartree batch --density-fitting [AUX] --exact-k``: the parser hands them to
    BatchOptions' keywords, a batch task's energy is hartree.scf.run's with them, and the
    fingerprint tells a fitted result from an exact one (a rerun recomputes)."""
    import argparse

    from hartree.batch.inputs import BatchOptions, make_job
    from hartree.batch.task import run_task
    from hartree.cli.batch_command import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["w.xyz", "-o", "out", "--density-fitting", "def2-universal-jkfit", "--exact-k"])
    assert (args.density_fitting, args.exact_k) == ("def2-universal-jkfit", True)
    args = parser.parse_args(["w.xyz", "-o", "out", "--density-fitting"])
    assert (args.density_fitting, args.exact_k) == (True, False)

    path = tmp_path / "water.xyz"
    path.write_text(water().to_xyz())
    fitted = make_job(str(path), "water", BatchOptions(basis="sto-3g", device="cpu", density_fitting=True))
    assert fitted.options["density_fitting"] is True
    exact_k = make_job(
        str(path), "water", BatchOptions(basis="sto-3g", device="cpu", density_fitting=True, exact_k=True)
    )
    plain = make_job(str(path), "water", BatchOptions(basis="sto-3g", device="cpu"))
    assert len({fitted.fingerprint, exact_k.fingerprint, plain.fingerprint}) == 3
    outcome = run_task(fitted)
    assert outcome.ok, outcome.error
    ref = run(water(), "sto-3g", "rhf", device="cpu", density_fitting=True)
    assert abs(outcome.document["return_result"] - ref.energy) < 1e-8
    assert outcome.document["keywords"]["density_fitting"] is True
