"""The task of one batch input, run on a Dask worker (or anywhere): :func:`run_task`.

A :class:`Job` is plain data built on the client (:mod:`hartree.batch.inputs`): the molecule
as a QCSchema dict (bohr), the task, method, basis, device and SCF options.  Workers
therefore need hartree but not the client's file system: input files are read on the client
and result files written there.  :func:`run_task` returns an :class:`Outcome`: the result
document (QCSchema) and the summary row, or the error of an input that failed (hartree's
own errors: bad input, an SCF or optimization that did not converge, a device error).  Any
other exception is a bug or a broken machine and propagates, so that Dask retries the task
(``retries=`` of the submit) before the client records it.

Task -> API -> document:

* ``energy``   :func:`hartree.scf.run` -> AtomicResult, driver energy (:mod:`hartree.io.qcschema`);
* ``gradient`` the SCF and :func:`hartree.gradients.scf_gradient` -> driver gradient;
* ``opt``      :func:`hartree.optimize.optimize` -> OptimizationResult; not converged within
  its steps is a failure;
* ``freq``     :func:`hartree.vibrations.frequencies` (serially, in the worker) -> driver hessian.

Every document gets ``extras.hartree.batch``: the fingerprint of input and options (what a
rerun compares), the input file, the task, the worker and its process id, the wall time
(s) and the summary row.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from .._version import __version__
from ..errors import ConvergenceError, HartreeError

#: the tasks a batch runs
TASKS = ("energy", "gradient", "opt", "freq")


@dataclass(frozen=True)
class Job:
    """One input, ready to run (plain data: it travels to the worker).

    name         the result's name (DIR/<name>.json), unique in the batch
    input_file   the path given on the command line (recorded, never opened by the task)
    formula      e.g. 'H2O'
    molecule     QCSchema molecule dict (geometry in bohr, charge, multiplicity)
    task         'energy' | 'gradient' | 'opt' | 'freq'
    method       'rhf' | 'uhf' | 'rohf' or a DFT functional (as named; recorded)
    basis        basis-set name or file path (a file must exist where the worker runs)
    device       'auto' | 'cpu' | 'gpu'
    options      SCFOptions keywords (:func:`hartree.keywords.scf_options`)
    fingerprint  SHA-256 (hex) of the input's bytes and the options (:mod:`.inputs`)
    scf_method   the method :func:`hartree.scf.run` runs ('rks'/'uks' for a functional, whose
                 ``xc`` and ``grid_level`` are in options; :func:`hartree.keywords.method_options`);
                 '' means ``method``
    grid_response  gradients of a functional with the grid's derivative (keyword grid_response;
                 tasks gradient, opt and freq)
    """

    name: str
    input_file: str
    formula: str
    molecule: dict
    task: str
    method: str
    basis: str
    device: str = "auto"
    options: dict = field(default_factory=dict)
    fingerprint: str = ""
    scf_method: str = ""
    grid_response: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a task returns: ``ok`` with the result ``document`` (a JSON-able dict), or not
    ok with ``error`` (one line); ``row`` is the input's summary row either way."""

    name: str
    ok: bool
    row: dict
    document: dict | None = None
    error: str | None = None


def worker_identity():
    """(address, pid) of the Dask worker running this (host name when not in a worker)."""
    try:
        from distributed import get_worker

        return str(get_worker().address), os.getpid()
    except (ImportError, ValueError):  # no distributed, or not inside a worker
        return socket.gethostname(), os.getpid()


def summary_row(job, *, energy=None, converged=None, wall_time=None, worker="", status="", error=""):
    """The summary CSV row of ``job`` (:data:`hartree.batch.runner.SUMMARY_COLUMNS`)."""
    return {
        "name": job.name,
        "input": job.input_file,
        "formula": job.formula,
        "task": job.task,
        "method": job.method,
        "basis": job.basis,
        "energy_Eh": "" if energy is None else repr(float(energy)),
        "converged": "" if converged is None else str(bool(converged)).lower(),
        "wall_time_s": "" if wall_time is None else f"{wall_time:.3f}",
        "worker": worker,
        "status": status,
        "error": error,
    }


def _keywords(job):
    """The settings recorded in the document's keywords."""
    keywords = {"method": job.method, "basis": job.basis, "task": job.task, "device": job.device, **job.options}
    if job.grid_response:
        keywords["grid_response"] = True
    return keywords


def _compute(job, molecule):
    """(document, energy Eh, converged) of the job's task."""
    keywords = _keywords(job)
    if job.task in ("energy", "gradient"):
        from ..io.qcschema import gradient_to_qcschema, result_to_qcschema
        from ..scf import run

        result = run(molecule, job.basis, job.scf_method or job.method, device=job.device, **job.options)
        if job.task == "energy":
            return result_to_qcschema(result, input_file=job.input_file, keywords=keywords), result.energy, True
        from ..gradients import scf_gradient
        from ..gradients.scf_gradient import gradient_engine

        screening = job.options.get("screening_threshold", 1e-13)
        gradient = scf_gradient(result, gradient_engine(result, None, screening), grid_response=job.grid_response)
        return gradient_to_qcschema(gradient, input_file=job.input_file, keywords=keywords), result.energy, True
    if job.task == "opt":
        from ..optimize import optimize
        from ..optimize.qcschema import optimization_to_qcschema

        result = optimize(
            molecule,
            job.basis,
            job.scf_method or job.method,
            device=job.device,
            allow_unconverged=True,
            grid_response=job.grid_response,
            **job.options,
        )
        if not result.converged:
            raise ConvergenceError(
                f"the geometry optimization did not converge in {result.max_steps} steps "
                f"(last energy {result.energy:.10f} Eh)"
            )
        doc = optimization_to_qcschema(result, scf_keywords=keywords, input_file=job.input_file)
        return doc, result.energy, True
    if job.task == "freq":
        from ..io.qcschema_freq import frequency_to_qcschema
        from ..vibrations import frequencies

        result = frequencies(
            molecule,
            job.basis,
            job.scf_method or job.method,
            device=job.device,
            grid_response=job.grid_response,
            **job.options,
        )
        return frequency_to_qcschema(result, input_file=job.input_file, keywords=keywords), result.energy, True
    raise HartreeError(f"unknown task {job.task!r}; choose one of {', '.join(TASKS)}")


def run_task(job):
    """Run one :class:`Job` and return its :class:`Outcome` (module docstring).  hartree's
    errors become a failed Outcome; other exceptions propagate (Dask retries the task)."""
    from ..molecule import Molecule

    start = time.perf_counter()
    worker, pid = worker_identity()
    try:
        molecule = Molecule.from_qcschema(job.molecule)
        document, energy, converged = _compute(job, molecule)
    except HartreeError as error:
        text = " ".join(str(error).split()) or type(error).__name__
        row = summary_row(
            job,
            converged=False if isinstance(error, ConvergenceError) else None,
            wall_time=time.perf_counter() - start,
            worker=worker,
            status="failed",
            error=text,
        )
        return Outcome(job.name, False, row, error=text)
    wall = time.perf_counter() - start
    row = summary_row(job, energy=energy, converged=converged, wall_time=wall, worker=worker, status="finished")
    extras = document.setdefault("extras", {}).setdefault("hartree", {})
    extras["batch"] = {
        "fingerprint": job.fingerprint,
        "name": job.name,
        "input_file": job.input_file,
        "task": job.task,
        "worker": worker,
        "worker_pid": pid,
        "wall_time": wall,
        "hartree_version": __version__,
        "summary": row,
    }
    return Outcome(job.name, True, row, document=document)
