"""The one exception family of hartree.

Every error a user can cause (bad input, missing basis, unconverged SCF, device
trouble) is raised as a subclass of :class:`HartreeError`.  The command line
turns these into one clear line and a non-zero exit code; anything else is a
bug and keeps its traceback.
"""


class HartreeError(Exception):
    """Base class of every error hartree raises on purpose."""


class InputError(HartreeError):
    """Malformed or impossible input: files, geometries, charges, options."""


class BasisError(HartreeError):
    """Unknown basis set, element missing from a basis, unsupported basis feature (ECPs)."""


class ConvergenceError(HartreeError):
    """An iterative method stopped before meeting its convergence criteria.

    ``result`` holds the last (unconverged) state when one exists, so that a
    caller can inspect or save it; it is never presented as converged.
    """

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class DeviceError(HartreeError):
    """A compute device (GPU) is missing, failed, or ran out of memory."""


class ResourceError(HartreeError):
    """Not enough of what the computer has for what was asked: disk space, the file-size
    limit (``ulimit -f``), memory.  The message names the file or the amount."""


class Terminated(BaseException):
    """The process was asked to stop by a signal other than SIGINT (SIGTERM from a batch
    scheduler).  A BaseException, like KeyboardInterrupt, so that ``except Exception``
    blocks do not swallow it and every ``finally`` (temporary files) still runs.

    ``signum``: the signal number (the exit code is 128 + signum).
    """

    def __init__(self, signum):
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum
