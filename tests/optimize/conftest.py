"""Fixtures for the optimization tests: molecule files in the test's own directory, the
command line run in process, and the working directory of every test moved there (PySCF's
geomeTRIC driver, the reference, writes its files in the current directory's neighbourhood
and hartree must write nothing beside the outputs asked for)."""

import contextlib
import io

import pytest

from hartree.cli.main import main

#: Water pulled away from its RHF/6-31g minimum (Angstrom): a few steps to converge.
WATER_XYZ = """3
water, stretched
O   0.000000   0.000000   0.130000
H   0.000000   0.800000  -0.500000
H   0.000000  -0.800000  -0.500000
"""


def run_main(argv):
    """``main(argv)`` in process: (exit code, stdout text, stderr text)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def work(tmp_path, monkeypatch):
    """The test's directory, made the working directory, holding water.xyz."""
    (tmp_path / "water.xyz").write_text(WATER_XYZ)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def cli():
    """Factory: cli(args...) -> (exit code, stdout, stderr) of hartree's main()."""
    return lambda *args: run_main(args)
