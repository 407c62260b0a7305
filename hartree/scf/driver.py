"""Convenience front ends: ``run()`` and the RHF/UHF/ROHF driver classes.

They resolve the basis (name, path, dict or Basis), create an engine when none is
given (CPU, or GPU per ``device``), call :func:`hartree.scf.kernel` and, unlike the
kernel, raise ConvergenceError when the SCF did not converge (unless
allow_unconverged=True).

``device``: 'cpu' (numba CPU engine), 'gpu' (:class:`hartree.gpu.GPUEngine`; DeviceError
when no CUDA GPU is usable) or 'auto' (the GPU when cupy imports and a CUDA device is
present, else the CPU, silently).  The GPU is looked for at call time, never at import.

``gpus`` (GPU runs only): which devices share the J/K work: None or 'all' (default:
every visible device), '0,1', an int or a list of ints (:func:`hartree.device.selection.parse_gpus`).
The SCF arrays live on the first one.  Memory: before the SCF starts, the estimated
device memory (``hartree.device.memory``, ``hartree.gpu.memory``) is compared with what the first GPU has; if it
does not fit, or the GPU runs out of memory during the SCF, 'auto' reruns on the CPU and
says so (warning and ``result.notes``), while 'gpu' raises a DeviceError (one line).  The
same decision for a GPU that runs out of memory while its kernels are prepared before the
SCF (the CLI does that, to show compilation): :func:`prepare_gpu_engine`.  These are the
only places that turn a GPU out-of-memory error into a CPU run or an error message.
The engine's notes (e.g. J/K batching decisions of the GPU engine) are appended to
``result.notes``.

Density fitting (options ``density_fitting``, ``exact_k``): :func:`fitted_engine` wraps the
engine in a :class:`hartree.df.engine.FittedEngine` (J/K fitted, the rest the engine's) and the
kernel runs on it unchanged, with full J/K builds when K is fitted (SCFOptions says why);
``result.density_fitting`` says what was fitted.  The GPU memory estimate and CPU fallback
above are the exact J/K's and do not apply to such runs (the fitted J/K says where its tensor
lives in ``result.notes``).  ``precision='mixed'`` (SCFOptions) needs a fitted K: the early
cycles build it in a bounded mixed precision (:mod:`hartree.df.mixed_k`), the notes and
``result.density_fitting['precision']`` say what ran; refused (InputError) without fitting.

The SCF itself uses only the engine contract (:class:`hartree.engine.IntegralEngine`);
this module alone knows the GPU engine, for its memory estimate and fallback.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..device.selection import resolve_device
from ..errors import ConvergenceError, InputError
from .kernel import kernel, validate
from .options import SCFOptions
from .result import SCFResult

if TYPE_CHECKING:
    from ..basis import Basis
    from ..engine import IntegralEngine
    from ..gpu.engine import GPUEngine
    from ..molecule import Molecule

#: what the CLI prints (after "note: ") when the GPU ran out of memory while preparing its
#: kernels and --device auto lets the SCF run on the CPU instead
PREPARE_FALLBACK_NOTE = "the GPU ran out of memory while preparing; running on the CPU"


def _resolve_basis(molecule, basis, cartesian):
    from ..basis import Basis, load_basis

    if isinstance(basis, Basis):
        if cartesian and basis.pure:
            raise InputError("cartesian=True but the given Basis is spherical; load it with cartesian=True")
        return basis
    return load_basis(molecule, basis, cartesian=cartesian)


#: below this many basis functions an SCF left to choose its GPUs (gpus=None) uses one:
#: measured on 2 H200s, a 190-function SCF took 4.9 s on two GPUs and 0.46 s on one (fixed
#: per-call costs), while Taxol/6-31G** (1123 functions) built J+K 1.85x faster on two.
MULTI_GPU_MIN_NAO = 500


def resolve_gpus(gpus=None, nao=None):
    """Device ordinals for ``gpus`` (None/'all', '0,1', int, list), checked against the
    visible CUDA devices (InputError if malformed, DeviceError if not visible).

    gpus=None (not chosen) means every visible GPU, except below MULTI_GPU_MIN_NAO basis
    functions (``nao``), where it means the first one; 'all' always means every one."""
    from ..device.selection import gpu_names, parse_gpus

    ids = parse_gpus(gpus, len(gpu_names()))
    if gpus is None and nao is not None and nao < MULTI_GPU_MIN_NAO and ids:
        ids = list(ids)[:1]
    return ids


def device_text(device, gpus=None):
    """Readable name of a resolved device: 'gpu 0 (NVIDIA H100 80GB HBM3)',
    'gpu 0,1 (2 x NVIDIA H200)' or 'cpu'; gpus: resolved ordinals (default: the first)."""
    if device == "gpu":
        from ..device.selection import gpu_names, gpu_status

        names = gpu_names()
        ids = list(gpus) if gpus else [0]
        if not names:
            return f"gpu ({gpu_status()[1]})"
        picked = [names[i] for i in ids if i < len(names)]
        label = f"{len(picked)} x {picked[0]}" if len(set(picked)) == 1 and len(picked) > 1 else " + ".join(picked)
        return f"gpu {','.join(str(i) for i in ids)} ({label})"
    return "cpu"


def make_engine(
    molecule: Molecule,
    basis: Basis,
    screening_threshold: float,
    device: str = "cpu",
    gpus: Sequence[int] | None = None,
) -> IntegralEngine:
    """The engine for a resolved device: CPUEngine, or GPUEngine on the ordinals gpus."""
    if device == "gpu":
        from ..gpu import GPUEngine

        return GPUEngine(molecule, basis, screening_threshold=screening_threshold, devices=gpus)
    from ..integrals.engine import CPUEngine

    return CPUEngine(molecule, basis, screening_threshold=screening_threshold)


def gpu_memory_check(engine: GPUEngine, basis: Basis, options: SCFOptions) -> str | None:
    """None when the SCF fits the first GPU of ``engine`` (hartree.gpu.memory estimates),
    else a sentence saying how much it needs and has."""
    from ..device.memory import budget_bytes, gib
    from ..gpu.memory import jk_bytes, scf_bytes

    nspin = 1 if options.scheme == "rhf" else 2
    need = scf_bytes(basis, nspin, options.diis_space) + jk_bytes(basis, 1, ndev=engine.ndevices)
    have = budget_bytes(engine.backends()[0])
    if need <= have:
        return None
    return f"the SCF needs about {gib(need)} of GPU memory ({basis.nao} functions), {gib(have)} usable"


def prepare_gpu_engine(
    engine: GPUEngine, device_requested: str, prepare: Callable[[GPUEngine], Any] | None = None
) -> GPUEngine | None:
    """Compile (or load from the disk cache) a GPU engine's kernels before the SCF.

    prepare: called with the engine to do the work (default ``engine.prepare()``; the CLI
    passes one that shows a status line).  Returns the engine, or None when the GPU ran out
    of memory and device_requested is 'auto': the caller then runs on the CPU and says
    :data:`PREPARE_FALLBACK_NOTE`.  With any other device_requested an out-of-memory error
    raises GPUMemoryError (a DeviceError: one line); other errors propagate.
    """
    from ..device.memory import GPUMemoryError, is_out_of_memory

    try:
        if prepare is None:
            engine.prepare()
        else:
            prepare(engine)
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        if device_requested != "auto":
            raise GPUMemoryError(
                "the GPU ran out of memory while preparing the kernels; run with --device cpu"
            ) from None
        return None
    return engine


def _with_engine_notes(result: SCFResult, engine: IntegralEngine) -> SCFResult:
    """The result with the engine's notes that it does not carry yet appended."""
    notes = tuple(n for n in engine.notes if n not in result.notes)
    return dataclasses.replace(result, notes=result.notes + notes) if notes else result


def _gpu_kernel(molecule, basis, options, engine, device_requested):
    """kernel() on a GPU engine under its first device; out-of-memory handled as the
    module docstring says.  Returns the SCFResult."""
    from ..device.memory import GPUMemoryError, is_out_of_memory

    why = gpu_memory_check(engine, basis, options)
    if why is None:
        try:
            with engine.use():
                result = kernel(molecule, basis, options, engine)
            return _with_engine_notes(result, engine)
        except GPUMemoryError as exc:
            why = str(exc)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            why = f"the GPU ran out of memory during the SCF ({type(exc).__name__})"
        engine.free_cached_memory()
    if device_requested != "auto":
        raise GPUMemoryError(f"{why}; run with --device cpu (or device='cpu')")
    msg = f"{why}: ran on the CPU instead"
    warnings.warn(msg, stacklevel=3)
    cpu = make_engine(molecule, basis, options.screening_threshold, "cpu")
    result = kernel(molecule, basis, options, cpu)
    return dataclasses.replace(result, notes=result.notes + (msg,))


def fitted_engine(molecule: Molecule, basis: Basis, options: SCFOptions, engine: IntegralEngine) -> IntegralEngine:
    """``engine`` wrapped for the density fitting ``options`` ask for (an engine that already is
    a FittedEngine is returned as it is): the J/K fitting basis loaded (BasisError, one line)
    before any work.  A range-separated hybrid's long-range K is fitted too unless ``exact_k``
    (:mod:`hartree.df.range_separated`)."""
    from ..df.auxiliary import load_jk_aux
    from ..df.engine import FittedEngine

    if isinstance(engine, FittedEngine):
        return engine
    return FittedEngine(engine, load_jk_aux(molecule, basis, options.density_fitting), exact_k=options.exact_k)


def _fitted_kernel(molecule, basis, options, engine):
    """kernel() on the density-fitted engine (:func:`fitted_engine`), full J/K builds when K
    is fitted; the result with the engine's notes and ``density_fitting``."""
    engine = fitted_engine(molecule, basis, options, engine)
    if engine.exact_k and options.precision == "mixed":
        raise InputError("precision 'mixed' applies to a fitted K, not to a FittedEngine with exact_k")
    if not engine.exact_k:
        options = options.replace(incremental_fock=False)
    with engine.use():
        result = kernel(molecule, basis, options, engine)
    return dataclasses.replace(_with_engine_notes(result, engine), density_fitting=engine.summary())


def run(
    molecule: Molecule,
    basis: str | dict | Basis = "6-31g**",
    method: str = "rhf",
    *,
    engine: IntegralEngine | None = None,
    device: str = "auto",
    gpus: str | int | Sequence[int] | None = None,
    allow_unconverged: bool = False,
    **option_overrides: Any,
) -> SCFResult:
    """Run an SCF calculation and return its SCFResult.

    basis: a basis-set name, a file path, a per-element dict, or a Basis.
    method: 'rhf' | 'uhf' | 'rohf' (Hartree-Fock) or 'rks' | 'uks' (Kohn-Sham DFT, with the
    functional as ``xc='b3lyp'`` and ``grid_level`` 1..9; docs/dft.md); ``dispersion='d3bj'``
    ('d3zero', 'd4') adds that correction to the converged energy (:func:`with_dispersion`);
    device: 'auto' | 'cpu' | 'gpu' (module docstring; ignored when an ``engine`` is given,
    except that 'auto' lets a GPU engine that runs out of memory hand over to the CPU;
    ``result.device`` names what ran); gpus: the GPUs to use (None = every visible one,
    or the first below MULTI_GPU_MIN_NAO basis functions; 'all', '0,1', int, list; GPU runs
    only); other keywords are SCFOptions fields (a typo raises TypeError).  Raises InputError for
    impossible input, DeviceError for device='gpu' without a GPU, and
    ConvergenceError (with ``.result``) when not converged, unless
    ``allow_unconverged`` is True.
    """
    options = SCFOptions(method=method, **option_overrides)
    validate(molecule, options.method)
    from ..df.engine import FittedEngine
    from ..gpu.engine import GPUEngine

    if options.precision != "fp64" and options.density_fitting is None and not isinstance(engine, FittedEngine):
        raise InputError(
            f"precision {options.precision!r} applies to a density-fitted K (density_fitting=True, "
            "--density-fitting); exact J/K are built in FP64"
        )
    if options.dispersion is not None:  # parameters for this functional: before any work
        from ..dft.dispersion import check_parameters

        check_parameters(options.xc or options.method, options.dispersion)
    requested = device
    if engine is None:
        device = resolve_device(device)
        if requested == "cpu" and gpus is not None:
            raise InputError("gpus applies only to GPU runs (device 'gpu' or 'auto')")
    basis = _resolve_basis(molecule, basis, options.cartesian)
    if engine is None:
        gpu_ids = resolve_gpus(gpus, basis.nao) if device == "gpu" else None
        engine = make_engine(molecule, basis, options.screening_threshold, device, gpu_ids)
    if options.density_fitting is not None or isinstance(engine, FittedEngine):
        result = _fitted_kernel(molecule, basis, options, engine)
    elif isinstance(engine, GPUEngine):  # device memory estimate and out-of-memory fallback
        result = _gpu_kernel(molecule, basis, options, engine, requested)
    else:
        result = _with_engine_notes(kernel(molecule, basis, options, engine), engine)
    if options.dispersion is not None:
        result = with_dispersion(result, options.dispersion)
    if not result.converged and not allow_unconverged:
        raise ConvergenceError(
            not_converged_text(options.method, result, "more cycles (max_cycle), level_shift=0.3 or another guess"),
            result=result,
        )
    return result


def with_dispersion(result: SCFResult, model: str) -> SCFResult:
    """The result with the dispersion correction ``model`` (:mod:`hartree.dft.dispersion`, the
    parameters of the result's functional or of Hartree-Fock) added after the SCF: to
    ``energy``, as ``energy_components['dispersion']`` (and in 'total') and as the record
    ``dispersion``.  The orbitals, densities and SCF history are those of the SCF."""
    from ..dft.dispersion import dispersion_record

    record = dispersion_record(result.molecule, result.xc or result.method, model)
    e = record["energy"]
    components = {k: v for k, v in result.energy_components.items() if k != "total"}
    components["dispersion"] = e
    components["total"] = float(result.energy_components.get("total", result.energy)) + e
    return dataclasses.replace(result, energy=float(result.energy) + e, energy_components=components, dispersion=record)


def not_converged_text(method, result, hints):
    """'RHF did not converge in N cycles (last energy, |dE|, gradient); try HINTS' for an
    unconverged SCFResult; the caller names its own options in ``hints``."""
    last = result.history[-1]
    return (
        f"{method.upper()} did not converge in {result.iterations} cycles (last energy "
        f"{result.energy:.10f} Eh, |dE| {abs(last.delta_energy):.1e}, gradient "
        f"{last.gradient_norm:.1e}); try {hints}"
    )


class _Driver:
    """Holds the inputs, the options and, after run(), the result — nothing else."""

    method = None

    def __init__(
        self,
        molecule: Molecule,
        basis: str | dict | Basis = "6-31g**",
        *,
        engine: IntegralEngine | None = None,
        device: str = "auto",
        gpus: str | int | Sequence[int] | None = None,
        allow_unconverged: bool = False,
        **options: Any,
    ) -> None:
        self.molecule = molecule
        self.basis = basis
        self.engine = engine
        self.device = device
        self.gpus = gpus
        self.allow_unconverged = allow_unconverged
        self.options = SCFOptions(method=self.method, **options)
        self.result = None

    def run(self) -> SCFResult:
        """Run the SCF, store and return the SCFResult (ConvergenceError if not converged)."""
        fields = {k: getattr(self.options, k) for k in self.options.__dataclass_fields__ if k != "method"}
        self.result = run(
            self.molecule,
            self.basis,
            self.method,
            engine=self.engine,
            device=self.device,
            gpus=self.gpus,
            allow_unconverged=self.allow_unconverged,
            **fields,
        )
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


class RKS(_Driver):
    """Restricted closed-shell Kohn-Sham DFT: ``RKS(mol, "6-31g*", xc="b3lyp").run()``."""

    method = "rks"


class UKS(_Driver):
    """Unrestricted Kohn-Sham DFT: ``UKS(mol, "6-31g*", xc="pbe").run()``."""

    method = "uks"
