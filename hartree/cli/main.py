"""``hartree``: the command-line entry point (console script ``hartree.cli.main:main``).

Subcommands are listed in :data:`COMMANDS`, an explicit registry: each entry
names the subcommand, its help texts, a function that adds its arguments to an
argparse parser and a function that runs it.  Adding ``orbitals``, ``atom`` or
``basis-search`` later means writing one module and one registry line.

Every outcome is one exit code of :data:`EXIT_CODES` (documented in ``--help`` and the
README): a :class:`hartree.errors.HartreeError` becomes one line on stderr
(``hartree: error: ...``); OSError and MemoryError that escaped the checks become the
resource or input code with the file named; SIGINT and SIGTERM end with 130 and 143
after the temporary files of unfinished outputs are removed; ``hartree batch`` ends with
:data:`EXIT_SOME_FAILED` when some of its inputs failed.  Any other exception is a
bug: one line (``hartree: internal error: ...``) and exit code 1.  ``--debug`` adds the
traceback in every case.
"""

import argparse
import contextlib
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from .. import interruption
from .._version import __version__
from ..errors import (
    BasisError,
    ConvergenceError,
    DeviceError,
    HartreeError,
    InputError,
    ResourceError,
    Terminated,
)
from ..io.files import output_error
from . import (
    atom_command,
    basis_search_command,
    batch_command,
    cache_command,
    freq_command,
    opt_command,
    orbitals_command,
    run_command,
)

EXIT_OK = 0
EXIT_CRASH = 1  # an unexpected error inside hartree: a bug (one line; --debug: traceback)
EXIT_INPUT = 2  # bad input: arguments, files, molecule, basis, options, output paths
EXIT_CONVERGENCE = 3  # the SCF did not converge (and --allow-unconverged was not given)
EXIT_DEVICE = 4  # GPU missing, failed or out of memory
EXIT_RESOURCES = 5  # disk full, file-size limit, not enough memory for what was asked
EXIT_SOME_FAILED = batch_command.EXIT_SOME_FAILED  # 6: hartree batch: some inputs failed, the others finished
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)
EXIT_TERMINATED = 143  # SIGTERM (what batch schedulers send)

#: Every exit code a hartree command can end with (tests check against this set).
EXIT_CODES = (
    EXIT_OK,
    EXIT_CRASH,
    EXIT_INPUT,
    EXIT_CONVERGENCE,
    EXIT_DEVICE,
    EXIT_RESOURCES,
    EXIT_SOME_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
)

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}    success (also an unconverged SCF with --allow-unconverged)
  {EXIT_CRASH}    internal error: a bug in hartree (please report it; --debug shows where)
  {EXIT_INPUT}    bad input: arguments, molecule or other input file, basis, charge and
       multiplicity, or an output path that cannot be used (exists: use --overwrite)
  {EXIT_CONVERGENCE}    not converged (the SCF, or an optimization)
  {EXIT_DEVICE}    device (GPU) error
  {EXIT_RESOURCES}    resources exhausted: disk full, file-size limit, not enough memory
  {EXIT_SOME_FAILED}    hartree batch: some inputs failed (each listed; the others' results are written)
  {EXIT_INTERRUPTED}  interrupted (SIGINT, Ctrl-C)
  {EXIT_TERMINATED}  terminated (SIGTERM)"""


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help texts, argument setup and runner."""

    name: str
    help: str
    description: str
    epilog: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    execute: Callable[[argparse.Namespace, Console], int]
    quiet_help: str = "print only the final energy line (errors still go to stderr)"


def _command(name, module):
    """The registry entry of a command module: its HELP, DESCRIPTION and EPILOG texts (the
    exit codes appended), ``add_arguments(parser)`` and ``execute(args, console)``; a module's
    QUIET_HELP, when it has one, says what its --quiet prints."""
    extra = {"quiet_help": module.QUIET_HELP} if hasattr(module, "QUIET_HELP") else {}
    return Command(
        name=name,
        help=module.HELP,
        description=module.DESCRIPTION,
        epilog=module.EPILOG + "\n\n" + EXIT_CODES_HELP,
        add_arguments=module.add_arguments,
        execute=module.execute,
        **extra,
    )


#: The subcommand registry, in the order ``hartree --help`` lists them.
COMMANDS = (
    _command("run", run_command),
    _command("opt", opt_command),
    _command("freq", freq_command),
    _command("batch", batch_command),
    _command("atom", atom_command),
    _command("basis-search", basis_search_command),
    _command("orbitals", orbitals_command),
    _command("cache", cache_command),
)

_MAIN_DESCRIPTION = """\
hartree: Hartree-Fock (RHF, UHF, ROHF) on molecules, with live progress,
result tables, QCSchema JSON and Molden output."""

_MAIN_EPILOG = (
    """\
examples:
  hartree run water.xyz --basis cc-pvdz
  hartree run radical.xyz --basis 6-31g* --method uhf --multiplicity 2 --json out.json
  hartree run --help

"""
    + EXIT_CODES_HELP
)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description/epilog layout; appends "(default: X)" to options whose
    default is a real value (not None, False or already mentioned in the help)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            default is None
            or default is False
            or default is argparse.SUPPRESS
            or "default" in text
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


def _common_options(quiet_help):
    """Options every subcommand takes (--quiet with the command's ``quiet_help``, --debug)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("output control")
    group.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    group.add_argument("--debug", action="store_true", help="show the full traceback when an error occurs")
    return parent


def build_parser():
    """The argparse parser with one subparser per registered command."""
    parser = argparse.ArgumentParser(
        prog="hartree", description=_MAIN_DESCRIPTION, epilog=_MAIN_EPILOG, formatter_class=_HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"hartree {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            epilog=command.epilog,
            formatter_class=_HelpFormatter,
            parents=[_common_options(command.quiet_help)],
        )
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
    if isinstance(error, ResourceError):
        return EXIT_RESOURCES
    return EXIT_CRASH


def _error_line(message, prefix="error"):
    """Print the one-line error message on stderr."""
    text = " ".join(str(message).split()) or "unknown error"
    print(f"hartree: {prefix}: {text}", file=sys.stderr, flush=True)


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """A Python warning as one line on stderr, ``hartree: warning: ...`` (no file names,
    line numbers or source lines of library internals)."""
    text = " ".join(str(message).split())
    kind = "" if issubclass(category, UserWarning) else f"{category.__name__}: "
    print(f"hartree: warning: {kind}{text}", file=sys.stderr, flush=True)


def _from_device_library(error):
    """True for exceptions raised by CuPy or the CUDA libraries (driver, runtime, NVRTC)."""
    module = type(error).__module__ or ""
    return module.split(".")[0] in ("cupy", "cupy_backends", "cupyx")


def _raise_terminated(signum, frame):
    interruption.request_stop(signum)  # raised again at the next safe point if this one is lost
    raise Terminated(signum)


def _raise_interrupt(signum, frame):
    interruption.request_stop(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def _signals_as_exceptions():
    """SIGTERM raises :class:`Terminated` in the main thread while a command runs (as SIGINT
    raises KeyboardInterrupt), so that temporary files are removed and checkpoints kept;
    the previous handler is restored afterwards (main() may be called in process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # not when the caller installed its own
        signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        interruption.clear()


def _quiet_shutdown_noise():
    """Silence libraries that log from background threads or the event loop after an
    interrupt (asyncio's "Task exception was never retrieved", distributed's teardown)."""
    import logging

    # tornado.application: distributed's logging config gives it a level of its own
    for name in ("asyncio", "distributed", "tornado", "tornado.application"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _interruption(error):
    """The KeyboardInterrupt or Terminated behind ``error`` (its cause or context chain), or
    None: a signal handler that raises inside compiled code (a numba kernel) comes back
    wrapped, e.g. as ``SystemError: ... returned a result with an exception set``."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, (KeyboardInterrupt, Terminated)):
            return error
        error = error.__cause__ or error.__context__
    return None


def _stopped(stop, debug):
    """Exit code and message for SIGINT (KeyboardInterrupt) or another signal (Terminated)."""
    _quiet_shutdown_noise()
    if debug:
        traceback.print_exc()
    if isinstance(stop, Terminated):
        what, code = f"terminated (signal {stop.signum})", 128 + stop.signum
    else:
        what, code = "interrupted (SIGINT)", EXIT_INTERRUPTED
    print(
        f"hartree: {what}; files being written were removed, finished outputs and checkpoints are kept",
        file=sys.stderr,
        flush=True,
    )
    return code


def execute_command(args, console):
    """Execute a parsed command; every outcome becomes an exit code (module docstring)."""
    debug = getattr(args, "debug", False)
    try:
        with _signals_as_exceptions(), warnings.catch_warnings():
            warnings.showwarning = _warning_line  # restored by catch_warnings
            return args._command.execute(args, console)
    except HartreeError as error:
        if debug:
            traceback.print_exc()
        _error_line(error)
        return exit_code_for(error)
    except MemoryError:
        if debug:
            traceback.print_exc()
        _error_line(
            "not enough memory for what was asked (MemoryError); use a smaller problem or a machine with more memory"
        )
        return EXIT_RESOURCES
    except OSError as error:  # a file or directory the checks before the work did not catch
        if debug:
            traceback.print_exc()
        path = error.filename or "a file"
        mapped = output_error(error, path)
        _error_line(mapped)
        return exit_code_for(mapped)
    except KeyboardInterrupt as stop:
        return _stopped(stop, debug)
    except Terminated as stop:
        return _stopped(stop, debug)
    except Exception as error:  # noqa: BLE001  (a bug: one line; the traceback with --debug)
        stop = _interruption(error)
        if stop is not None:  # a signal that arrived inside compiled code (numba, h5py)
            return _stopped(stop, debug)
        if debug:
            traceback.print_exc()
        if _from_device_library(error):
            _error_line(f"the GPU failed: {type(error).__name__}: {error}; run with --device cpu")
            return EXIT_DEVICE
        _error_line(
            f"{type(error).__name__}: {error} -- this is a bug in hartree; please "
            "report it with the output of the same command run with --debug",
            prefix="internal error",
        )
        return EXIT_CRASH


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
    return execute_command(args, console)
