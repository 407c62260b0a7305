"""``frequencies()``: reference SCF and gradient, the finite-difference Hessian, the
harmonic analysis and the thermochemistry in one call.

>>> from hartree.vibrations import frequencies
>>> res = frequencies(mol, "6-31g*", "rhf", temperature=298.15)
>>> res.frequencies, res.ir_intensities, res.zero_point_energy      # cm^-1, km/mol, Eh
>>> res.thermochemistry.gibbs_free_energy                          # Eh
>>> res = frequencies(mol, "6-31g*", "rhf", device="gpu", gpus=[0, 1])  # one worker per GPU

With ``gpus`` naming more than one GPU (and the device resolving to 'gpu'), the reference SCF
and gradient run here on the first of them, and the displaced gradients on one worker
process per named GPU (:class:`.executors.GPUWorkersExecutor`), started before the
reference SCF so that their start-up overlaps it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from typing import Any

import numpy as np

from ..errors import InputError
from .analysis import harmonic_analysis
from .checkpoint import DisplacementCheckpoint, fingerprint
from .executors import open_executor
from .hessian import DEFAULT_STEP, FREQUENCY_SCF_DEFAULTS, check_step, finite_difference_hessian, prepare_worker
from .result import FrequencyResult
from .symmetry import SYMMETRY_TOLERANCE
from .thermo import QRRHO_CUTOFF, STANDARD_PRESSURE, STANDARD_TEMPERATURE, thermochemistry
from .units import CODATA

#: Methods with analytic gradients (the only ones frequencies can be computed for); Kohn-Sham
#: 'rks'/'uks' take the functional as ``xc=`` and the grid as ``grid_level=``.
FREQUENCY_METHODS = ("rhf", "uhf", "rohf", "rks", "uks")
#: Largest |dE/dR| (Eh/bohr) of a geometry called stationary; above it a note says the
#: frequencies are not those of a minimum or saddle point.
STATIONARY_FORCE = 1e-3


def check_method(method):
    """The method in lower case; InputError with one line for methods without analytic
    gradients (RI-MP2) and unknown ones."""
    name = str(method).lower()
    if name == "mp2":
        raise InputError(
            "frequencies need analytic gradients, and RI-MP2 has none yet; use Hartree-Fock or a DFT functional"
        )
    if name not in FREQUENCY_METHODS:
        raise InputError(f"unknown method {method!r} for frequencies; choose one of {', '.join(FREQUENCY_METHODS)}")
    return name


def open_checkpoint(path, molecule, basis, method, step, scf_options, overwrite=False, grid_response=False):
    """The :class:`DisplacementCheckpoint` of this job at ``path`` (None: no checkpoint);
    refusals (another job's file, a damaged one) raise InputError before any work.  The
    job's fingerprint holds the SCF tolerances and, for Kohn-Sham, the functional, the grid
    level and grid_response, the VV10 grid level when given, and a dispersion correction when
    there is one (Hartree-Fock fingerprints without one are those of earlier versions)."""
    if path is None:
        return None
    tolerances = {k: scf_options[k] for k in ("conv_tol", "conv_tol_grad") if k in scf_options}
    if scf_options.get("xc") is not None:
        tolerances.update(
            xc=str(scf_options["xc"]).lower(),
            grid_level=int(scf_options.get("grid_level", 3)),
            grid_response=bool(grid_response),
        )
    if scf_options.get("nlc_grid_level") is not None:  # only when given: older fingerprints still match
        tolerances["nlc_grid_level"] = int(scf_options["nlc_grid_level"])
    if scf_options.get("dispersion") is not None:  # only when set: older fingerprints still match
        tolerances["dispersion"] = str(scf_options["dispersion"]).lower()
    job = {
        "method": method,
        "basis": str(basis.name),
        "natm": int(molecule.natm),
        "step_bohr": float(step),
        "displacements": 6 * int(molecule.natm),
    }
    key = fingerprint(molecule, basis, method, step, tolerances)
    return DisplacementCheckpoint.open(os.fspath(path), key, job, overwrite=overwrite)


def worker_gpus(device="auto", gpus=None, executor=None):
    """The GPU ordinals that get one worker process each: those ``gpus`` names when it names
    more than one and ``device`` resolves to 'gpu'; else None (``gpus`` then goes to every
    SCF as given).  InputError for gpus with device 'cpu', and for several GPUs together
    with an ``executor`` (the workers are the executor); DeviceError for GPUs not visible."""
    from ..device.selection import resolve_device
    from ..scf.driver import resolve_gpus

    if gpus is None:
        return None
    if device == "cpu":
        raise InputError("gpus applies only to GPU runs (device 'gpu' or 'auto')")
    if resolve_device(device) != "gpu":
        return None
    ids = list(resolve_gpus(gpus))
    if len(ids) < 2:
        return None
    if executor is not None:
        raise InputError(
            f"gpus {ids} starts one worker process per GPU, which is the executor; pass no executor "
            "(or gpus naming one GPU, for the reference SCF)"
        )
    return ids


def open_gpu_workers(ids):
    """Context manager: one worker process per GPU ordinal in ``ids``, each readied for the
    displaced gradients (:func:`.hessian.prepare_worker`), stopped on exit."""
    return open_executor(gpus=ids, prepare=functools.partial(prepare_worker, "gpu"))


def _release_cached_gpu_memory(scf):
    """Return this process's cached, unused cupy blocks to the driver after a GPU reference
    SCF: the worker of the first GPU shares that GPU while this process waits."""
    if str(scf.device).startswith("cuda"):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def frequencies(
    molecule,
    basis: Any = "6-31g**",
    method: str = "rhf",
    *,
    device: str = "auto",
    gpus=None,
    cartesian: bool = False,
    step: float = DEFAULT_STEP,
    masses=None,
    temperature: float = STANDARD_TEMPERATURE,
    pressure: float = STANDARD_PRESSURE,
    scale: float = 1.0,
    qrrho: str | None = None,
    qrrho_cutoff: float = QRRHO_CUTOFF,
    symmetry_tolerance: float = SYMMETRY_TOLERANCE,
    checkpoint=None,
    overwrite_checkpoint: bool = False,
    executor=None,
    progress=None,
    constants=CODATA,
    grid_response: bool = False,
    **scf_options: Any,
) -> FrequencyResult:
    """Harmonic frequencies, IR intensities and thermochemistry of ``molecule``.

    basis: a name, file path, per-element dict or :class:`hartree.basis.Basis`;
    method: 'rhf' | 'uhf' | 'rohf' | 'rks' | 'uks' (Kohn-Sham: ``xc=`` and ``grid_level=``,
    one grid for every SCF; InputError for 'mp2': no analytic gradient);
    grid_response: Kohn-Sham gradients with the derivative of the integration grid
    (:func:`hartree.gradients.scf_gradient`; off by default, as in PySCF);
    device, gpus: where the SCFs run (:func:`hartree.scf.run`); gpus naming several GPUs
    of a GPU run: the reference on the first, the displacements on one worker process per
    GPU (module docstring; not with ``executor``); step: bohr;
    masses: (N,) u or None (most abundant isotopes); temperature K; pressure Pa;
    scale: frequency scale factor; qrrho: None | 'grimme' | 'head-gordon' with
    qrrho_cutoff cm^-1 (:mod:`.thermo`); checkpoint: path of the JSON checkpoint of the
    displaced gradients (resumed when it belongs to this job; another job's is refused
    unless overwrite_checkpoint); executor: :mod:`.executors` (default serial);
    progress: callable receiving :class:`.hessian.DisplacementProgress` (raising from it
    stops the run; finished displacements stay in the checkpoint); constants: the
    :class:`.units.PhysicalConstants`; other keywords: SCFOptions fields for every SCF
    (``callback`` only for the reference SCF), defaults ``FREQUENCY_SCF_DEFAULTS``.
    """
    from ..basis import Basis, load_basis
    from ..gradients.scf_gradient import gradient_engine, scf_gradient
    from ..scf import run

    start = time.perf_counter()
    method = check_method(method)
    step = check_step(step)
    if grid_response and method not in ("rks", "uks"):
        raise InputError("grid_response is for Kohn-Sham gradients (rks, uks); Hartree-Fock has no grid")
    if not isinstance(basis, Basis):
        basis = load_basis(molecule, basis, cartesian=cartesian)
    options = {**FREQUENCY_SCF_DEFAULTS, **scf_options}
    store = open_checkpoint(checkpoint, molecule, basis, method, step, options, overwrite_checkpoint, grid_response)
    workers = worker_gpus(device, gpus, executor)
    with contextlib.ExitStack() as stack:
        if workers is not None:  # started now: their start-up overlaps the reference SCF
            executor = stack.enter_context(open_gpu_workers(workers))
            gpus = workers[:1]
        scf = run(molecule, basis, method, device=device, gpus=gpus, **options)
        reference = scf_gradient(scf, gradient_engine(scf, gpus), grid_response=grid_response)  # SCF's device
        if workers is not None:
            _release_cached_gpu_memory(scf)
        displaced = {k: v for k, v in options.items() if k != "callback"}
        hessian = finite_difference_hessian(
            reference,
            step=step,
            executor=executor,
            checkpoint=store,
            progress=progress,
            device=device,
            gpus=gpus,
            scf_options=displaced,
            grid_response=grid_response,
        )
    analysis = harmonic_analysis(
        hessian.hessian,
        molecule,
        masses=masses,
        dipole_derivatives=hessian.dipole_derivatives,
        scale=scale,
        symmetry_tolerance=symmetry_tolerance,
        constants=constants,
    )
    thermo = thermochemistry(
        analysis,
        reference.energy,
        molecule.multiplicity,
        temperature,
        pressure,
        qrrho=qrrho,
        qrrho_cutoff=qrrho_cutoff,
    )
    notes = []
    force = float(np.max(np.abs(reference.gradient)))
    if force > STATIONARY_FORCE:
        notes.append(
            f"the geometry is not stationary (max |dE/dR| {force:.1e} Eh/bohr > {STATIONARY_FORCE:g}): "
            "the frequencies are not those of a minimum or a saddle point; optimize the geometry first"
        )
    if thermo.imaginary_frequencies.size:
        notes.append(
            f"{thermo.imaginary_frequencies.size} imaginary frequenc"
            f"{'y' if thermo.imaginary_frequencies.size == 1 else 'ies'} left out of the thermochemistry"
        )
    return FrequencyResult(
        method=method,
        basis=str(basis.name),
        energy=float(reference.energy),
        hessian=hessian.hessian,
        dipole_derivatives=hessian.dipole_derivatives,
        analysis=analysis,
        thermochemistry=thermo,
        gradient=reference,
        step=step,
        displacements=6 * molecule.natm,
        resumed=hessian.resumed,
        hessian_asymmetry=hessian.asymmetry,
        wall_time=time.perf_counter() - start,
        executor=getattr(executor, "description", "serial (this process)"),
        notes=tuple(notes),
    )
