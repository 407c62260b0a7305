"""Convenience front ends: ``run()`` and the RHF/UHF/ROHF driver classes.

They resolve the basis (name, path, dict or Basis), create an engine when none is
given (CPU, or GPU per ``device``), call :func:`hartree.scf.kernel` and, unlike the
kernel, raise ConvergenceError when the SCF did not converge (unless
allow_unconverged=True).

``device``: 'cpu' (numba CPU engine), 'gpu' (:class:`hartree.gpu.GPUEngine`; DeviceError
when no CUDA GPU is usable) or 'auto' (the GPU when cupy imports and a CUDA device is
present, else the CPU, silently).  The GPU is looked for at call time, never at import.
"""

from __future__ import annotations

from ..errors import ConvergenceError, DeviceError, InputError
from .kernel import kernel, validate
from .options import SCFOptions


def _resolve_basis(molecule, basis, cartesian):
    from ..basis import Basis, load_basis
    if isinstance(basis, Basis):
        if cartesian and basis.pure:
            raise InputError("cartesian=True but the given Basis is spherical; "
                             "load it with cartesian=True")
        return basis
    return load_basis(molecule, basis, cartesian=cartesian)


DEVICES = ("auto", "cpu", "gpu")


def resolve_device(device="auto"):
    """'cpu' or 'gpu' for a requested device 'auto' | 'cpu' | 'gpu' (checked now).

    Raises InputError for another name and DeviceError for 'gpu' without a usable GPU.
    """
    if device not in DEVICES:
        raise InputError(f"unknown device {device!r}; choose auto, cpu or gpu")
    if device == "cpu":
        return "cpu"
    from ..gpu.device import gpu_status
    ok, why = gpu_status()
    if device == "gpu" and not ok:
        raise DeviceError(f"device 'gpu' was asked for but no CUDA GPU is usable: {why}")
    return "gpu" if ok else "cpu"


def device_text(device):
    """Readable name of a resolved device: 'gpu (NVIDIA H100 80GB HBM3)' or 'cpu'."""
    if device == "gpu":
        from ..gpu.device import gpu_status
        return f"gpu ({gpu_status()[1]})"
    return "cpu"


def _default_engine(molecule, basis, screening_threshold, device="cpu"):
    if device == "gpu":
        from ..gpu import GPUEngine
        return GPUEngine(molecule, basis, screening_threshold=screening_threshold)
    from ..integrals.engine import CPUEngine
    return CPUEngine(molecule, basis, screening_threshold=screening_threshold)


def run(molecule, basis="6-31g**", method="rhf", *, engine=None, device="auto",
        allow_unconverged=False, **option_overrides):
    """Run an SCF calculation and return its SCFResult.

    basis: a basis-set name, a file path, a per-element dict, or a Basis.
    method: 'rhf' | 'uhf' | 'rohf'; device: 'auto' | 'cpu' | 'gpu' (module docstring;
    ignored when an ``engine`` is given; ``result.device`` names what ran); other
    keywords are SCFOptions fields (a typo raises TypeError).  Raises InputError for
    impossible input, DeviceError for device='gpu' without a GPU, and
    ConvergenceError (with ``.result``) when not converged, unless
    ``allow_unconverged`` is True.
    """
    options = SCFOptions(method=method, **option_overrides)
    validate(molecule, options.method)
    if engine is None:
        device = resolve_device(device)
    basis = _resolve_basis(molecule, basis, options.cartesian)
    if engine is None:
        engine = _default_engine(molecule, basis, options.screening_threshold, device)
    result = kernel(molecule, basis, options, engine)
    if not result.converged and not allow_unconverged:
        last = result.history[-1]
        raise ConvergenceError(
            f"{options.method.upper()} did not converge in {result.iterations} cycles "
            f"(last energy {result.energy:.10f} Eh, |dE| {abs(last.delta_energy):.1e}, "
            f"gradient {last.gradient_norm:.1e}); try more cycles (max_cycle), "
            "level_shift=0.3 or another guess", result=result)
    return result


class _Driver:
    """Holds the inputs, the options and, after run(), the result — nothing else."""

    method = None

    def __init__(self, molecule, basis="6-31g**", *, engine=None, device="auto",
                 allow_unconverged=False, **options):
        self.molecule = molecule
        self.basis = basis
        self.engine = engine
        self.device = device
        self.allow_unconverged = allow_unconverged
        self.options = SCFOptions(method=self.method, **options)
        self.result = None

    def run(self):
        """Run the SCF, store and return the SCFResult (ConvergenceError if not converged)."""
        fields = {k: getattr(self.options, k) for k in self.options.__dataclass_fields__
                  if k != "method"}
        self.result = run(self.molecule, self.basis, self.method, engine=self.engine,
                          device=self.device, allow_unconverged=self.allow_unconverged,
                          **fields)
        return self.result


class RHF(_Driver):
    """Restricted closed-shell Hartree-Fock: ``RHF(mol, "cc-pvdz").run()``."""

    method = "rhf"


class UHF(_Driver):
    """Unrestricted Hartree-Fock: ``UHF(mol, "cc-pvdz").run()``."""

    method = "uhf"


class ROHF(_Driver):
    """Restricted open-shell Hartree-Fock (Roothaan effective Fock): ``ROHF(mol).run()``."""

    method = "rohf"
