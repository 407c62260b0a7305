"""``hartree run --density-fitting --precision mixed`` (issue 19): accepted, reported in the
header, the notes, the stage times and the JSON (keywords and extras.hartree.density_fitting),
with the FP64 energy (on the CPU the policy is FP64: hartree.df.mixed_k); refused in one line
with exit code 2 where it means nothing.  Water in STO-3G from the core guess."""

import json

import pytest

from hartree.cli.main import EXIT_INPUT
from hartree.scf import run
from tests.helpers import water

RUN = ["-b", "sto-3g", "--guess", "core", "--device", "cpu", "--conv-tol", "1e-10"]


def test_mixed_precision_is_accepted_and_reported(cli, water_xyz, tmp_path):
    out = tmp_path / "water.json"
    code, stdout, err = cli("run", water_xyz, *RUN, "--density-fitting", "--precision", "mixed", "--json", out)
    assert code == 0, err
    stdout = " ".join(stdout.split())  # the console folds long lines
    assert "(J and K fitted; K in bounded mixed precision in the early cycles, FP64 at the end)" in stdout
    assert "note: mixed-precision K: " in stdout and "on the CPU mgemm's mixed policy is FP64" in stdout
    assert "note: mixed-precision J/K to cycle " in stdout
    assert "asked for in mixed precision" in stdout
    doc = json.loads(out.read_text())
    assert doc["keywords"]["precision"] == "mixed"
    record = doc["extras"]["hartree"]["density_fitting"]["precision"]
    builds = doc["extras"]["hartree"]["timings"]["mixed_precision_builds"]
    assert builds > 0 and record["mixed_builds"] == builds and record["schemes"] == {"fp64": builds}
    assert record["fallbacks"] == 0 and record["fp64_builds_after"] >= 1 and record["target_eh"] == 1e-6
    ref = run(water(), "sto-3g", "rhf", device="cpu", guess="core", conv_tol=1e-10, density_fitting=True)
    assert abs(doc["return_result"] - ref.energy) < 1e-9


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--precision", "mixed"], "--precision applies only with --method mp2 (RI-MP2) or --density-fitting"),
        (["--density-fitting", "--exact-k", "--precision", "mixed"], "not with --exact-k"),
        (["--density-fitting", "--precision", "fp32"], "the density-fitted SCF takes fp64 or mixed"),
    ],
)
def test_refused_where_it_means_nothing(cli, water_xyz, extra, words):
    code, _, err = cli("run", water_xyz, *RUN, *extra)
    assert code == EXIT_INPUT, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hartree: error:") and words in lines[0], err
