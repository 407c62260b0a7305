"""Fixtures for the command-line tests: small molecule files in a temporary directory."""

import contextlib
import io

import pytest

from hartree.cli.main import main

WATER_XYZ = """3
water, Angstrom
O   0.000000   0.000000   0.117300
H   0.000000   0.757200  -0.469200
H   0.000000  -0.757200  -0.469200
"""


def run_main(argv):
    """Call ``main(argv)`` and return (exit code, stdout text, stderr text)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def water_text():
    """XYZ text of one water molecule (Angstrom)."""
    return WATER_XYZ


@pytest.fixture
def water_xyz(tmp_path):
    """Path of an XYZ file with one water molecule."""
    path = tmp_path / "water.xyz"
    path.write_text(WATER_XYZ)
    return path


@pytest.fixture
def write_file(tmp_path):
    """Factory: write_file(name, text) -> path in the test's temporary directory."""

    def _write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return path

    return _write


@pytest.fixture(scope="session")
def cli():
    """Factory: cli(args...) -> (exit code, stdout, stderr) of hartree's main()."""
    return lambda *args: run_main([str(a) for a in args])
