"""``hartree``: the command-line entry point (console script ``hartree.cli.main:main``).

Subcommands are listed in :data:`COMMANDS`, an explicit registry: each entry
names the subcommand, its help texts, a function that adds its arguments to an
argparse parser and a function that runs it.  Adding ``orbitals``, ``atom`` or
``basis-search`` later means writing one module and one registry line.

Every :class:`hartree.errors.HartreeError` becomes one line on stderr
(``hartree: error: ...``) and an exit code from :data:`EXIT_CODES`; ``--debug``
adds the traceback.  Anything else is a bug and keeps its traceback.
"""

import argparse
import sys
import traceback
from dataclasses import dataclass
from typing import Callable

from rich.console import Console

from .. import __version__
from ..errors import BasisError, ConvergenceError, DeviceError, HartreeError, InputError
from . import atom_command, basis_search_command, orbitals_command, run_command

EXIT_OK = 0
EXIT_FAILURE = 1          # other hartree errors, unreadable/unwritable files
EXIT_INPUT = 2            # bad input: arguments, files, molecule, basis, options
EXIT_CONVERGENCE = 3      # the SCF did not converge (and --allow-unconverged was not given)
EXIT_DEVICE = 4           # GPU missing, failed or out of memory
EXIT_INTERRUPTED = 130    # Ctrl-C

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}    success (also an unconverged SCF with --allow-unconverged)
  {EXIT_FAILURE}    other failure (e.g. an output file could not be written)
  {EXIT_INPUT}    input error: bad arguments, molecule file, basis, charge/multiplicity,
       or an output file that exists (use --overwrite)
  {EXIT_CONVERGENCE}    the SCF did not converge
  {EXIT_DEVICE}    device (GPU) error
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help texts, argument setup and runner."""

    name: str
    help: str
    description: str
    epilog: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    execute: Callable[[argparse.Namespace, Console], int]


#: The subcommand registry, in the order ``hartree --help`` lists them.
COMMANDS = (
    Command(name="run", help=run_command.HELP, description=run_command.DESCRIPTION,
            epilog=run_command.EPILOG + "\n\n" + EXIT_CODES_HELP,
            add_arguments=run_command.add_arguments, execute=run_command.execute),
    Command(name="atom", help=atom_command.HELP, description=atom_command.DESCRIPTION,
            epilog=atom_command.EPILOG + "\n\n" + EXIT_CODES_HELP,
            add_arguments=atom_command.add_arguments, execute=atom_command.execute),
    Command(name="basis-search", help=basis_search_command.HELP, description=basis_search_command.DESCRIPTION,
            epilog=basis_search_command.EPILOG + "\n\n" + EXIT_CODES_HELP,
            add_arguments=basis_search_command.add_arguments, execute=basis_search_command.execute),
    Command(name="orbitals", help=orbitals_command.HELP, description=orbitals_command.DESCRIPTION,
            epilog=orbitals_command.EPILOG + "\n\n" + EXIT_CODES_HELP,
            add_arguments=orbitals_command.add_arguments, execute=orbitals_command.execute),
)

_MAIN_DESCRIPTION = """\
hartree: Hartree-Fock (RHF, UHF, ROHF) on molecules, with live progress,
result tables, QCSchema JSON and Molden output."""

_MAIN_EPILOG = """\
examples:
  hartree run water.xyz --basis cc-pvdz
  hartree run radical.xyz --basis 6-31g* --method uhf --multiplicity 2 --json out.json
  hartree run --help

""" + EXIT_CODES_HELP


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description/epilog layout; appends "(default: X)" to options whose
    default is a real value (not None, False or already mentioned in the help)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS
                or "default" in text or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


def _common_options():
    """Options every subcommand takes (--quiet, --debug)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("output control")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="print only the final energy line (errors still go to stderr)")
    group.add_argument("--debug", action="store_true",
                       help="show the full traceback when an error occurs")
    return parent


def build_parser():
    """The argparse parser with one subparser per registered command."""
    parser = argparse.ArgumentParser(prog="hartree", description=_MAIN_DESCRIPTION,
                                     epilog=_MAIN_EPILOG, formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"hartree {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    parent = _common_options()
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.description,
                                    epilog=command.epilog, formatter_class=_HelpFormatter,
                                    parents=[parent])
        command.add_arguments(sub)
        sub.set_defaults(_command=command)
    return parser


def exit_code_for(error):
    """The exit code for a HartreeError (see EXIT_CODES_HELP)."""
    if isinstance(error, ConvergenceError):
        return EXIT_CONVERGENCE
    if isinstance(error, (InputError, BasisError)):
        return EXIT_INPUT
    if isinstance(error, DeviceError):
        return EXIT_DEVICE
    return EXIT_FAILURE


def _error_line(message):
    """Print the one-line error message on stderr."""
    text = " ".join(str(message).split()) or "unknown error"
    print(f"hartree: error: {text}", file=sys.stderr, flush=True)


def main(argv=None):
    """Run the command line with ``argv`` (default: sys.argv[1:]); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (argparse printed it)
        return int(exc.code or 0)
    if getattr(args, "_command", None) is None:
        parser.print_usage(sys.stderr)
        _error_line("a command is required (e.g. 'hartree run FILE --basis NAME'); see 'hartree --help'")
        return EXIT_INPUT
    console = Console(highlight=False)
    debug = getattr(args, "debug", False)
    try:
        return args._command.execute(args, console)
    except HartreeError as error:
        if debug:
            traceback.print_exc()
        _error_line(error)
        return exit_code_for(error)
    except OSError as error:  # an output file or directory we could not write
        if debug:
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        _error_line(f"{where}{error.strerror or error}")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        print("hartree: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
