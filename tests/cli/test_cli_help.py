"""Help texts, --version and the subcommand registry."""

import hartree
from hartree.cli.main import COMMANDS, EXIT_CONVERGENCE, EXIT_INPUT, build_parser


def test_version(cli):
    code, out, _ = cli("--version")
    assert code == 0
    assert out.strip() == f"hartree {hartree.__version__}"


def test_main_help_lists_commands_examples_and_exit_codes(cli):
    code, out, _ = cli("--help")
    assert code == 0
    assert "usage: hartree" in out
    assert "run" in out and "Hartree-Fock" in out
    assert "examples:" in out and "hartree run water.xyz --basis cc-pvdz" in out
    assert "exit codes:" in out
    assert f"  {EXIT_INPUT}    bad input" in out
    assert f"  {EXIT_CONVERGENCE}    not converged" in out
    for code_, words in (
        (1, "internal error"),
        (4, "device"),
        (5, "resources exhausted"),
        (130, "interrupted"),
        (143, "terminated"),
    ):
        assert f"  {code_}" in out and words in out


def test_run_help_describes_every_option_with_defaults(cli):
    code, out, _ = cli("run", "--help")
    assert code == 0
    text = " ".join(out.split())  # argparse wraps lines
    for option in (
        "--basis",
        "--method",
        "--charge",
        "--multiplicity",
        "--cartesian",
        "--json",
        "--molden",
        "--checkpoint",
        "--conv-tol",
        "--max-cycle",
        "--guess",
        "--allow-unconverged",
        "--overwrite",
        "--quiet",
        "--debug",
        "--level-shift",
    ):
        assert option in text, option
    assert "(default: rhf)" in text
    assert "(default: 1e-09)" in text
    assert "(default: 100)" in text
    assert "(default: sad)" in text
    assert "examples:" in text and "exit codes:" in text
    assert "hartree run no2.xyz -b def2-svp --method uhf --multiplicity 2" in text


def test_no_command_is_an_input_error(cli):
    code, _, err = cli()
    assert code == EXIT_INPUT
    assert "hartree: error: a command is required" in err


def test_usage_errors_exit_2(cli, water_xyz):
    code, _, err = cli("run", water_xyz)  # --basis missing
    assert code == 2
    assert "--basis" in err and "required" in err
    code, _, err = cli("run", water_xyz, "-b", "sto-3g", "--method", "mp3")  # neither a method nor a functional
    assert code == 2 and "unknown method 'mp3'" in err and err.count("\n") == 1
    code, _, err = cli("run", water_xyz, "-b", "sto-3g", "--max-cycle", "0")
    assert code == 2 and "must be at least 1" in err


def test_registry_drives_the_parser():
    parser = build_parser()
    names = [c.name for c in COMMANDS]
    assert names[0] == "run" and len(set(names)) == len(names)
    args = parser.parse_args(["run", "x.xyz", "-b", "sto-3g"])
    assert args._command is COMMANDS[0]
    assert (args.method, args.quiet, args.debug, args.overwrite) == ("rhf", False, False, False)
    for command in COMMANDS:  # each module has what the registry relies on
        module = command.load()
        assert module.__name__ == command.module
        assert callable(module.add_arguments) and callable(module.execute)
        assert module.DESCRIPTION and module.EPILOG and command.help


def test_parser_for_one_command_sets_up_that_command_only():
    """build_parser(argv) gives the command named in argv its arguments; the others keep
    their name and help line (``hartree --help`` lists them all, and a typo is still an
    invalid choice)."""
    argv = ["run", "x.xyz", "-b", "sto-3g", "--method", "uhf"]
    args = build_parser(argv).parse_args(argv)
    assert args._command is COMMANDS[0] and args.method == "uhf"
    help_text = build_parser(["--help"]).format_help()
    for command in COMMANDS:
        assert command.name in help_text
    assert "run a Hartree-Fock calculation" in help_text
    assert build_parser(["opt", "x.xyz"]).parse_args(["opt", "x.xyz", "-b", "sto-3g"])._command.name == "opt"
