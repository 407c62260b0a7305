"""The Hessian by central differences of analytic gradients, with dipole derivatives.

For each cartesian coordinate x_i (i = 0 .. 3N-1) of the reference geometry the SCF and its
analytic gradient g (:mod:`hartree.gradients`) are computed at x + h e_i and x - h e_i:

    H[i, :] = (g(x + h e_i) - g(x - h e_i)) / (2h),      H <- (H + H^T) / 2,
    P[i, :] = (mu(x + h e_i) - mu(x - h e_i)) / (2h)     (dipole derivatives, e),

6N SCF gradients in all, each SCF starting from the reference orbitals (``guess_orbitals``:
a few cycles fewer).  mu is the total (nuclear + electronic) dipole about the origin as
:class:`hartree.scf.SCFResult` reports it; its derivative is origin independent for a
neutral molecule, and for an ion its projection on the vibrations is (the modes keep the
centre of mass fixed, :mod:`.analysis`).

Step: h = 0.005 bohr (``DEFAULT_STEP``, also ORCA's default for numerical frequencies).
The central difference has a truncation error h^2/6 d^3g/dx^3 that shrinks as h^2: for
water RHF/6-31g the frequencies differ from PySCF's analytic Hessian by at most 0.015,
0.06, 0.24 and 0.97 cm^-1 at h = 0.0025, 0.005, 0.01 and 0.02 bohr (the Hessian by
8e-6 Eh/bohr^2 at 0.005; tests/vibrations/test_hessian.py checks the h^2 law).  The SCF
noise of a gradient, about conv_tol_grad (1e-8, ``FREQUENCY_SCF_DEFAULTS``), becomes
1e-8 / (2h) = 1e-6 Eh/bohr^2 in H, under 0.01 cm^-1 for the usual modes, and grows as 1/h:
0.005 keeps both errors far below 1 cm^-1 while leaving room for looser SCFs of larger
molecules.

Each displacement is a task (:class:`DisplacementTask`: plain data) run by
:func:`run_displacement` on an executor (:mod:`.executors`): in this process, on Dask
workers or on one worker process per GPU (:func:`prepare_worker` readies those).  Finished
displacements go into a checkpoint (:mod:`.checkpoint`) when one is given, so an
interrupted run resumes with the missing ones only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import interruption
from ..arrays import to_numpy
from ..errors import ConvergenceError, DeviceError, InputError

#: Default displacement (bohr) of the central differences (module docstring).
DEFAULT_STEP = 0.005
#: Steps accepted (bohr): below, SCF noise dominates; above, anharmonicity.
STEP_RANGE = (1e-4, 0.05)
#: SCF convergence of every SCF of a frequency job (reference and displaced): the energy
#: change (Eh) and the orbital-gradient norm (SCFOptions.conv_tol_grad), tighter than a
#: gradient run's because the gradients are differenced.
FREQUENCY_SCF_DEFAULTS = {"conv_tol": 1e-10, "conv_tol_grad": 1e-8}


@dataclass(frozen=True)
class DisplacementTask:
    """One displaced gradient to compute (picklable plain data).

    index: 0 .. 6N-1, coordinate index // 2 moved by +step (even) or -step (odd);
    molecule, basis: the reference geometry and its Basis; method 'rhf' | 'uhf' | 'rohf' |
    'rks' | 'uks'; step (bohr); guess_orbitals (mo_coeff, mo_energy) of the reference, numpy;
    scf_options: SCFOptions fields (no callback; Kohn-Sham: xc and grid_level); device,
    gpus: as :func:`hartree.scf.run`; grid_response: Kohn-Sham gradients with the grid's
    derivative (:func:`hartree.gradients.scf_gradient`).
    """

    index: int
    molecule: Any
    basis: Any
    method: str
    step: float
    guess_orbitals: tuple
    scf_options: dict
    device: str = "cpu"
    gpus: Any = None
    grid_response: bool = False


@dataclass(frozen=True)
class DisplacementResult:
    """What a task returns: index, energy (Eh), gradient (N, 3) Eh/bohr, dipole (3,) e bohr,
    SCF iterations, wall seconds; where it ran: pid of the process and its
    CUDA_VISIBLE_DEVICES (None when unset)."""

    index: int
    energy: float
    gradient: np.ndarray
    dipole: np.ndarray
    iterations: int
    seconds: float
    pid: int = 0
    visible_devices: str | None = None


@dataclass(frozen=True)
class DisplacementProgress:
    """What a progress callback receives.

    stage 'start' (once, before any displaced SCF: total, resumed = displacements already
    in the checkpoint) or 'done' (after each computed displacement, its checkpoint record
    written: index, label such as 'H2 +y', done = finished so far including resumed,
    energy Eh, iterations, seconds; pid and CUDA_VISIBLE_DEVICES of the process that
    computed it, as in :class:`DisplacementResult`).
    """

    stage: str
    total: int
    resumed: int
    done: int = 0
    index: int | None = None
    label: str = ""
    energy: float | None = None
    iterations: int | None = None
    seconds: float | None = None
    pid: int | None = None
    visible_devices: str | None = None


@dataclass
class HessianResult:
    """hessian (3N, 3N) Eh/bohr^2, symmetrised; dipole_derivatives (3N, 3) e; energies (6N,)
    Eh of the displaced SCFs; computed and resumed counts; asymmetry max |H - H^T| / 2 before
    symmetrising (Eh/bohr^2); step (bohr); wall_time (s)."""

    hessian: np.ndarray
    dipole_derivatives: np.ndarray
    energies: np.ndarray
    computed: int
    resumed: int
    asymmetry: float
    step: float
    wall_time: float


def check_step(step):
    """``step`` as a float in STEP_RANGE (bohr), else InputError."""
    low, high = STEP_RANGE
    if not (np.isfinite(step) and low <= step <= high):
        raise InputError(f"the finite-difference step must lie between {low:g} and {high:g} bohr, got {step!r}")
    return float(step)


def displacement_label(index, symbols):
    """'O1 +x' for displacement ``index`` of atoms ``symbols``."""
    coordinate, negative = divmod(int(index), 2)
    atom, axis = divmod(coordinate, 3)
    return f"{symbols[atom]}{atom + 1} {'-' if negative else '+'}{'xyz'[axis]}"


def displaced_coords(coords, index, step):
    """(N, 3) bohr: ``coords`` with coordinate index // 2 moved by +step (even index) or -step."""
    coordinate, negative = divmod(int(index), 2)
    moved = np.array(coords, dtype=np.float64)
    moved.reshape(-1)[coordinate] += -step if negative else step
    return moved


def basis_at(basis, coords):
    """The same Basis with its shells moved onto the atoms at ``coords`` (N, 3) bohr."""
    centres = np.asarray(coords, dtype=np.float64)[np.asarray(basis.shell_atom)]
    return dataclasses.replace(basis, shell_center=centres)


def run_displacement(task: DisplacementTask) -> DisplacementResult:
    """SCF and analytic gradient at the task's displaced geometry (runs on any worker)."""
    from ..gradients.scf_gradient import gradient_engine, scf_gradient
    from ..scf import run

    start = time.perf_counter()
    coords = displaced_coords(task.molecule.coords, task.index, task.step)
    molecule = task.molecule.replace(coords=coords)
    try:
        result = run(
            molecule,
            basis_at(task.basis, coords),
            task.method,
            device=task.device,
            gpus=task.gpus,
            guess_orbitals=task.guess_orbitals,
            **task.scf_options,
        )
    except ConvergenceError as error:
        label = displacement_label(task.index, task.molecule.symbols)
        raise ConvergenceError(f"the SCF displaced along {label} did not converge: {error}") from None
    engine = gradient_engine(result, task.gpus)  # on the SCF's device
    gradient = scf_gradient(result, engine, grid_response=task.grid_response)
    return DisplacementResult(
        index=int(task.index),
        energy=float(result.energy),
        gradient=np.asarray(gradient.gradient, dtype=np.float64),
        dipole=to_numpy(result.dipole).astype(np.float64),
        iterations=int(result.iterations),
        seconds=time.perf_counter() - start,
        pid=os.getpid(),
        visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )


def prepare_worker(device):
    """Ready a worker process for :func:`run_displacement` before its first task (the
    ``prepare`` of :class:`.executors.GPUWorkersExecutor`): import the SCF and gradient code
    and, for device 'gpu', check that the worker sees exactly one CUDA device (DeviceError
    otherwise) and create its CUDA context, so that this start-up overlaps the reference
    SCF of the parent.  Python warnings of the worker become one line on stderr, as the
    command line prints its own ("hartree: warning (CUDA_VISIBLE_DEVICES=1): ...")."""
    import warnings

    from ..gradients import scf_gradient  # noqa: F401
    from ..scf import driver  # noqa: F401

    warnings.showwarning = _worker_warning_line

    if device != "gpu":
        return
    from ..device.selection import gpu_names

    names = gpu_names()
    if len(names) != 1:
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise DeviceError(
            f"a GPU worker process sees {len(names)} CUDA devices (CUDA_VISIBLE_DEVICES={shown}), not one"
        )
    import cupy

    from ..gpu import engine  # noqa: F401

    cupy.cuda.Device(0).synchronize()  # the CUDA context


def _worker_warning_line(message, category, filename, lineno, file=None, line=None):
    text = " ".join(str(message).split())
    kind = "" if issubclass(category, UserWarning) else f"{category.__name__}: "
    where = os.environ.get("CUDA_VISIBLE_DEVICES")
    print(f"hartree: warning (CUDA_VISIBLE_DEVICES={where}): {kind}{text}", file=sys.stderr, flush=True)


def assemble(records, natm, step):
    """(hessian, dipole derivatives, energies, asymmetry) from {index: (energy, gradient
    (N, 3), dipole (3,))} with every index 0 .. 6N-1 present."""
    n = 3 * natm
    rows = np.zeros((n, n))
    apt = np.zeros((n, 3))
    energies = np.zeros(2 * n)
    for i in range(n):
        e_plus, g_plus, mu_plus = records[2 * i]
        e_minus, g_minus, mu_minus = records[2 * i + 1]
        rows[i] = (np.ravel(g_plus) - np.ravel(g_minus)) / (2.0 * step)
        apt[i] = (np.asarray(mu_plus) - np.asarray(mu_minus)) / (2.0 * step)
        energies[2 * i], energies[2 * i + 1] = e_plus, e_minus
    asymmetry = float(np.max(np.abs(rows - rows.T)) / 2.0)
    return 0.5 * (rows + rows.T), apt, energies, asymmetry


def finite_difference_hessian(
    reference,
    *,
    step=DEFAULT_STEP,
    executor=None,
    checkpoint=None,
    progress=None,
    device="cpu",
    gpus=None,
    scf_options=None,
    grid_response=False,
) -> HessianResult:
    """The Hessian and dipole derivatives around a converged reference (module docstring).

    reference: the :class:`hartree.gradients.GradientResult` at the reference geometry
    (its SCF's orbitals start every displaced SCF); executor: see :mod:`.executors`
    (default serial); checkpoint: a :class:`.checkpoint.DisplacementCheckpoint` or None;
    progress: callable receiving :class:`DisplacementProgress`; scf_options: SCFOptions
    fields of the displaced SCFs (default ``FREQUENCY_SCF_DEFAULTS``; Kohn-Sham: with the
    reference's xc and grid_level); grid_response: as the reference gradient's.
    """
    from .executors import SerialExecutor

    start = time.perf_counter()
    step = check_step(step)
    scf = reference.scf
    molecule = scf.molecule
    natm = molecule.natm
    total = 6 * natm
    records = dict(checkpoint.records) if checkpoint is not None else {}
    resumed = len(records)
    missing = [k for k in range(total) if k not in records]
    options = dict(FREQUENCY_SCF_DEFAULTS if scf_options is None else scf_options)
    options.pop("callback", None)
    if scf.method in ("rks", "uks") and "xc" not in options:  # the reference's functional and grid
        options.update(xc=scf.xc, grid_level=int(scf.dft["grid_level"]))
    if getattr(scf, "dispersion", None) and "dispersion" not in options:  # the reference's correction
        options["dispersion"] = scf.dispersion["model"]
    guess = (to_numpy(scf.mo_coeff), to_numpy(scf.mo_energy))
    executor = SerialExecutor() if executor is None else executor
    if hasattr(executor, "placement"):  # e.g. one worker per GPU: device 'gpu', gpus None
        device, gpus = executor.placement(device, gpus)
    tasks = [
        DisplacementTask(
            k,
            molecule,
            scf.basis,
            scf.method,
            step,
            guess,
            options,
            device=device,
            gpus=gpus,
            grid_response=grid_response,
        )
        for k in missing
    ]
    if progress is not None:
        progress(DisplacementProgress(stage="start", total=total, resumed=resumed, done=resumed))
    # closing: a run left early (an exception here, in progress or the checkpoint) stops
    # its workers now, not when the generator is collected
    with contextlib.closing(executor.run(run_displacement, tasks)) as results:
        for result in results:
            records[result.index] = (result.energy, result.gradient, result.dipole)
            if checkpoint is not None:
                checkpoint.add(result.index, result.energy, result.gradient, result.dipole)
            if progress is not None:
                progress(
                    DisplacementProgress(
                        stage="done",
                        total=total,
                        resumed=resumed,
                        done=len(records),
                        index=result.index,
                        label=displacement_label(result.index, molecule.symbols),
                        energy=result.energy,
                        iterations=result.iterations,
                        seconds=result.seconds,
                        pid=result.pid,
                        visible_devices=result.visible_devices,
                    )
                )
            interruption.check()  # a stop request whose exception Python lost (hartree.interruption)
    hessian, apt, energies, asymmetry = assemble(records, natm, step)
    return HessianResult(
        hessian=hessian,
        dipole_derivatives=apt,
        energies=energies,
        computed=len(missing),
        resumed=resumed,
        asymmetry=asymmetry,
        step=step,
        wall_time=time.perf_counter() - start,
    )
