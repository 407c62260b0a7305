"""Bad input: one line on stderr, no traceback, the documented exit code.

All of these fail before any SCF cycle runs, so they are fast.
"""

import pytest

from hartree.cli.main import EXIT_INPUT

BAD_MOLECULES = {
    "malformed.xyz": ("3\nwater\nO 0 0 0.1173\nH 0 0.7572\nH 0 -0.7572 -0.4692\n", "line 4"),
    "unknown.xyz": ("2\n\nXx 0 0 0\nH 0 0 1\n", "unknown element 'Xx'"),
    "overlap.xyz": ("2\n\nH 0 0 0\nH 0 0 0.01\n", "apart"),
    "iodide.xyz": ("2\n\nI 0 0 0\nH 0 0 1.6\n", None),
}


def assert_one_line_error(code, out, err, expected_code, fragment):
    assert code == expected_code
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hartree: error: ")
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err + out


@pytest.mark.parametrize("name", ["malformed.xyz", "unknown.xyz", "overlap.xyz"])
def test_bad_molecule_files(cli, write_file, name):
    text, fragment = BAD_MOLECULES[name]
    path = write_file(name, text)
    assert_one_line_error(*cli("run", path, "-b", "sto-3g"), EXIT_INPUT, fragment)


def test_missing_file(cli, tmp_path):
    assert_one_line_error(*cli("run", tmp_path / "nothere.xyz", "-b", "sto-3g"), EXIT_INPUT, "not found")


def test_unknown_basis(cli, water_xyz):
    assert_one_line_error(*cli("run", water_xyz, "-b", "no-such-basis"), EXIT_INPUT, "unknown basis set")


@pytest.mark.parametrize(
    "basis, fragment",
    [
        ("6-31g", "no functions for element I"),  # 6-31G stops at Kr
        ("def2-svp", "ECPs are not supported"),  # def2 uses an ECP for iodine
        ("lanl2dz", "ECPs are not supported"),
    ],
)
def test_basis_problems_for_iodine(cli, write_file, basis, fragment):
    path = write_file("iodide.xyz", BAD_MOLECULES["iodide.xyz"][0])
    assert_one_line_error(*cli("run", path, "-b", basis), EXIT_INPUT, fragment)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--charge", "1"], "even number of electrons"),  # RHF with 9 electrons
        (["--multiplicity", "2"], "incompatible with 10 electrons"),
        (["--charge", "11"], "electrons"),
        (["--method", "rhf", "--multiplicity", "3"], "RHF"),
    ],
)
def test_impossible_charge_or_spin(cli, water_xyz, args, fragment):
    assert_one_line_error(*cli("run", water_xyz, "-b", "sto-3g", *args), EXIT_INPUT, fragment)


def test_existing_output_is_not_overwritten(cli, water_xyz, tmp_path):
    for flag in ("--json", "--molden"):
        target = tmp_path / f"existing{flag.replace('-', '_')}"
        target.write_text("precious\n")
        assert_one_line_error(
            *cli("run", water_xyz, "-b", "sto-3g", flag, target), EXIT_INPUT, "already exists; use --overwrite"
        )
        assert target.read_text() == "precious\n"


def test_output_checks_happen_before_the_molecule_is_read(cli, tmp_path):
    target = tmp_path / "out.json"
    target.write_text("{}")
    # the molecule file does not exist either: the output check comes first
    code, out, err = cli("run", tmp_path / "nothere.xyz", "-b", "sto-3g", "--json", target)
    assert_one_line_error(code, out, err, EXIT_INPUT, "already exists")


def test_output_in_missing_directory(cli, water_xyz, tmp_path):
    assert_one_line_error(
        *cli("run", water_xyz, "-b", "sto-3g", "--json", tmp_path / "no" / "x.json"), EXIT_INPUT, "does not exist"
    )


def test_same_path_for_two_outputs(cli, water_xyz, tmp_path):
    same = tmp_path / "both.out"
    assert_one_line_error(
        *cli("run", water_xyz, "-b", "sto-3g", "--json", same, "--molden", same), EXIT_INPUT, "both name"
    )


def test_molden_refuses_h_functions_before_the_scf(cli, write_file, tmp_path):
    path = write_file("ne.xyz", "1\n\nNe 0 0 0\n")
    assert_one_line_error(*cli("run", path, "-b", "cc-pv5z", "--molden", tmp_path / "ne.molden"), EXIT_INPUT, "up to g")
    assert not (tmp_path / "ne.molden").exists()


def test_debug_shows_the_traceback(cli, tmp_path):
    code, _, err = cli("run", tmp_path / "nothere.xyz", "-b", "sto-3g", "--debug")
    assert code == EXIT_INPUT
    assert "Traceback" in err
    assert err.strip().splitlines()[-1].startswith("hartree: error: molecule file not found")
