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
