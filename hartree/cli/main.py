"""``hartree``: the command-line entry point (console script ``hartree.cli.main:main``).

Subcommands are listed in :data:`COMMANDS`, an explicit registry: each entry
names the subcommand, its one-line help and the module that implements it (its
``--help`` texts, a function that adds its arguments to an argparse parser and a
function that runs it).  Only the module of the command being run is imported, so
that a small job starts quickly.  Adding a command means writing one module and one
registry line.

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
import gc
import importlib
import signal
import sys
import threading
import traceback
import warnings
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

EXIT_OK = 0
EXIT_CRASH = 1  # an unexpected error inside hartree: a bug (one line; --debug: traceback)
EXIT_INPUT = 2  # bad input: arguments, files, molecule, basis, options, output paths
EXIT_CONVERGENCE = 3  # the SCF did not converge (and --allow-unconverged was not given)
EXIT_DEVICE = 4  # GPU missing, failed or out of memory
EXIT_RESOURCES = 5  # disk full, file-size limit, not enough memory for what was asked
EXIT_SOME_FAILED = 6  # hartree batch: some inputs failed, the others finished
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
    """One subcommand: its name, the one-line help ``hartree --help`` lists, and the module
    that implements it.  The module is imported only when its command is parsed or run
    (:meth:`load`): ``hartree run`` does not import the atomic, frequency or batch code.

    The module provides DESCRIPTION and EPILOG (its ``--help`` texts; the exit codes are
    appended), ``add_arguments(parser)`` and ``execute(args, console)``, and QUIET_HELP
    when its --quiet prints something other than the final energy line."""

    name: str
    help: str
    module: str

    def load(self):
        """The command's module (imported on the first call)."""
        return importlib.import_module(self.module)


#: The subcommand registry, in the order ``hartree --help`` lists them.
COMMANDS = (
    Command(
        "run",
        "run a Hartree-Fock calculation (RHF, UHF or ROHF) or Kohn-Sham DFT (--method b3lyp, ...), "
        "optionally followed by RI-MP2",
        "hartree.cli.run_command",
    ),
    Command(
        "opt",
        "optimize a geometry (minimum or transition state) with geomeTRIC on analytic gradients",
        "hartree.cli.opt_command",
    ),
    Command(
        "freq",
        "harmonic frequencies, IR intensities and thermochemistry (Hessian from analytic gradients)",
        "hartree.cli.freq_command",
    ),
    Command(
        "batch",
        "run many inputs (XYZ or QCSchema) as Dask tasks: energies, gradients, optimizations, frequencies",
        "hartree.cli.batch_command",
    ),
    Command("atom", "atomic Dirac-Hartree-Fock (or HF) with well-tempered basis sets", "hartree.cli.atom_command"),
    Command(
        "basis-search",
        "basis-set size search with NEWUOA-optimized well-tempered sets (elements in parallel)",
        "hartree.cli.basis_search_command",
    ),
    Command(
        "orbitals",
        "orbitals and densities on a 3-D lattice (cube files, PNG pictures, arrays)",
        "hartree.cli.orbitals_command",
    ),
    Command(
        "cache",
        "show, clear, prune or fill (warm) the cache of generated and compiled kernels",
        "hartree.cli.cache_command",
    ),
)

_QUIET_HELP = "print only the final energy line (errors still go to stderr)"

_MAIN_DESCRIPTION = """\
hartree: Hartree-Fock (RHF, UHF, ROHF) and Kohn-Sham DFT (RKS, UKS) on molecules, with
live progress, result tables, QCSchema JSON and Molden output."""

_MAIN_EPILOG = (
    """\
examples:
  hartree run water.xyz --basis cc-pvdz
  hartree run radical.xyz --basis 6-31g* --method uhf --multiplicity 2 --json out.json
  hartree run water.xyz --basis def2-svp --method b3lyp
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


def _named_command(argv):
    """The registered command that ``argv`` names, or None: the first argument that is not an
    option (the top-level options, -h, --help and --version, take no value)."""
    name = next((a for a in argv if not a.startswith("-")), None)
    return next((c for c in COMMANDS if c.name == name), None)


def build_parser(argv=None):
    """The argparse parser with one subparser per registered command.

    argv: None (every command gets its arguments: every command module is imported), or the
    command line about to be parsed: then only the command it names is set up in full and
    the others are listed by name and help line, so that ``hartree run`` imports only
    ``run``'s module and ``hartree --help`` none."""
    parser = argparse.ArgumentParser(
        prog="hartree", description=_MAIN_DESCRIPTION, epilog=_MAIN_EPILOG, formatter_class=_HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"hartree {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    named = None if argv is None else _named_command(argv)
    for command in COMMANDS:
        if argv is not None and command is not named:
            subparsers.add_parser(command.name, help=command.help)
            continue
        module = command.load()
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=module.DESCRIPTION,
            epilog=module.EPILOG + "\n\n" + EXIT_CODES_HELP,
            formatter_class=_HelpFormatter,
            parents=[_common_options(getattr(module, "QUIET_HELP", _QUIET_HELP))],
        )
        module.add_arguments(sub)
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
            return args._command.load().execute(args, console)
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
    """Run the command line with ``argv`` (default: sys.argv[1:]); returns the exit code.

    Called without ``argv``, as the ``hartree`` program and ``python -m hartree`` call it,
    it ends with :func:`gc.freeze`: the process is about to exit, and the interpreter's
    shutdown would otherwise run the cycle collector over every object numba's type system
    made (0.7 s of a 3 s small job on 2 cores); the operating system frees them at once.
    Outputs are complete by then (written and renamed), and objects that are not in
    reference cycles are still finalized at shutdown as before."""
    program = argv is None
    argv = sys.argv[1:] if program else list(argv)
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (argparse printed it)
        return int(exc.code or 0)
    if getattr(args, "_command", None) is None:
        parser.print_usage(sys.stderr)
        _error_line("a command is required (e.g. 'hartree run FILE --basis NAME'); see 'hartree --help'")
        return EXIT_INPUT
    console = Console(highlight=False)
    code = execute_command(args, console)
    if program:
        gc.freeze()
    return code
