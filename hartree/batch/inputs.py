"""The inputs of a batch, on the client: names, jobs, fingerprints and what a rerun skips.

* Names: each result is ``DIR/<name>.json`` with the input's file name without its
  extension; when several inputs share one, the first keeps it and the later ones get
  ``-2``, ``-3``, ... in the order given (skipping names another input already has).  The
  same file given twice is run once.
* Inputs are read here, through :mod:`hartree.io.files`: ``.xyz`` (Angstrom), or ``.json``
  holding a QCSchema AtomicInput (:mod:`hartree.io.qcschema_input`), molecule or result.
  An input that cannot be read becomes a failure record; the others become
  :class:`~hartree.batch.task.Job` objects that carry the molecule, so workers need not
  see the client's files.
* Options (:class:`BatchOptions`): the command line's ``--task``, ``--method``,
  ``--basis``, ``--device``, ``--dispersion``, ``--density-fitting``, ``--exact-k`` win over
  an AtomicInput's driver, model and keywords, which win over the defaults (task energy,
  method rhf, device auto), as for ``hartree run``.
* Fingerprint: SHA-256 of the input file's bytes and the options that shape the result
  (task, method, basis, SCF keywords; not the device).  A result ``DIR/<name>.json`` whose
  ``extras.hartree.batch.fingerprint`` equals the job's is finished: a rerun skips it.  A
  result of other options is recomputed and replaced; a file there that is not a batch
  result is replaced only with ``--overwrite`` (refused before any work otherwise).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from ..errors import HartreeError, InputError
from ..io.files import decode_text, parse_json, read_bytes, read_json
from .task import TASKS, Job, summary_row

#: Hartree-Fock methods a batch runs; any other name but mp2 is a DFT functional (every task;
#: :func:`hartree.keywords.gradient_options`).  RI-MP2 is ``hartree run --method mp2``.
METHODS = ("rhf", "uhf", "rohf")
#: input file extensions a batch reads
EXTENSIONS = (".xyz", ".json")


@dataclass(frozen=True)
class BatchOptions:
    """The command line's choices; None: the input's (an AtomicInput), else the default."""

    task: str | None = None
    method: str | None = None
    basis: str | None = None
    device: str | None = None
    cartesian: bool = False
    dispersion: str | None = None  # 'd3bj' | 'd3zero' | 'd4' (keyword dispersion)
    density_fitting: str | bool | None = None  # True or a J/K fitting basis (keyword density_fitting)
    exact_k: bool = False  # with density_fitting: fit J only (keyword exact_k)


def unique_names(paths):
    """One result name per path (module docstring), in the order given."""
    stems = [os.path.splitext(os.path.basename(os.fspath(p)))[0] or "input" for p in paths]
    taken, names = set(), []
    for index, stem in enumerate(stems):
        name, n = stem, 1
        while name in taken or (n > 1 and name in stems[index + 1 :]):
            n += 1
            name = f"{stem}-{n}"
        taken.add(name)
        names.append(name)
    return names


def distinct_inputs(paths):
    """``paths`` without repeats of the same file (real path), first occurrence kept."""
    seen, kept = set(), []
    for path in paths:
        key = os.path.realpath(os.fspath(path))
        if key not in seen:
            seen.add(key)
            kept.append(os.fspath(path))
    return kept


def fingerprint(data, task, method, basis, options):
    """SHA-256 (hex) of the input's bytes and the options that shape its result."""
    record = {
        "input_sha256": hashlib.sha256(data).hexdigest(),
        "task": task,
        "method": method,
        "basis": basis,
        "keywords": {k: options[k] for k in sorted(options)},
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _read_input(path):
    """(bytes, molecule, AtomicInputRecord or None) of one input file."""
    from ..io.qcschema_input import check_atomic_input, is_atomic_input
    from ..molecule import Molecule

    extension = os.path.splitext(path)[1].lower()
    if extension not in EXTENSIONS:
        raise InputError(f"{path}: cannot tell the format; use .xyz or .json (QCSchema) files")
    data = read_bytes(path, "input file")
    if extension == ".xyz":
        return data, Molecule.from_file(path), None
    doc = parse_json(decode_text(data, f"input file {path}"), f"input file {path}")
    if is_atomic_input(doc):
        record = check_atomic_input(doc, path)
        return data, record.molecule, record
    try:
        return data, Molecule.from_qcschema(doc), None
    except InputError as exc:
        raise InputError(f"{path}: {str(exc).removeprefix('QCSchema input: ')}") from None


def make_job(path, name, options):
    """The :class:`Job` of input ``path`` (named ``name``) under ``options``; InputError
    (naming the file) for an input that cannot be run as asked."""
    from ..keywords import check_gradient_method, gradient_options, scf_options

    data, molecule, record = _read_input(path)
    task = options.task or (record.driver if record is not None else "energy")
    method = options.method or (record.method if record is not None else "rhf")
    basis = options.basis or (record.basis if record is not None else None)
    if task not in TASKS:
        raise InputError(f"{path}: unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if method == "mp2":
        raise InputError(f"{path}: method 'mp2': hartree batch runs {', '.join(METHODS)} and DFT functionals")
    if task != "energy":
        check_gradient_method(method, f"task {task}", path)
    if basis is None:
        raise InputError(f"{path}: no basis set; give --basis (or model.basis in a QCSchema AtomicInput)")
    keywords = dict(record.keywords) if record is not None else {}
    if options.device is not None:
        keywords["device"] = options.device
    if options.cartesian:
        keywords["cartesian"] = True
    if options.dispersion is not None:
        keywords["dispersion"] = options.dispersion
    if options.density_fitting is not None:
        keywords["density_fitting"] = options.density_fitting
    if options.exact_k:
        keywords["exact_k"] = True
    device, scf = scf_options("gradient" if task == "gradient" else "energy", keywords, path)
    scf_method, scf, grid_response = gradient_options(method, molecule, scf, path)  # a functional: rks/uks, xc
    if grid_response and task == "energy":
        raise InputError(f"{path}: keyword grid_response applies only to the tasks gradient, opt and freq")
    return Job(
        name=name,
        input_file=path,
        formula=molecule.formula,
        molecule=molecule.to_qcschema(),
        task=task,
        method=method,
        basis=basis,
        device=device,
        options=scf,
        scf_method=scf_method,
        grid_response=grid_response,
        fingerprint=fingerprint(data, task, method, basis, {**scf, "grid_response": True} if grid_response else scf),
    )


def failure_row(path, name, error, options):
    """The summary row of an input that failed on the client (unreadable, impossible)."""
    job = Job(
        name=name,
        input_file=path,
        formula="",
        molecule={},
        task=options.task or "",
        method=options.method or "",
        basis=options.basis or "",
    )
    return summary_row(job, status="failed", error=" ".join(str(error).split()))


def batch_result(path):
    """The ``extras.hartree.batch`` record of the result file ``path``, or None when the file
    is missing; InputError when it exists but is not a batch result (or is unreadable)."""
    if not os.path.lexists(path):
        return None
    try:
        doc = read_json(path, "result file")
    except HartreeError:
        doc = None
    extras = doc.get("extras") if isinstance(doc, dict) else None
    hartree = extras.get("hartree") if isinstance(extras, dict) else None
    record = hartree.get("batch") if isinstance(hartree, dict) else None
    if not (isinstance(record, dict) and isinstance(record.get("fingerprint"), str)):
        raise InputError(f"{path} exists and is not a hartree batch result; use --overwrite to replace it")
    return record


@dataclass
class BatchPlan:
    """The inputs of a batch: ``rows`` (name -> summary row, in input order; status
    'pending', 'skipped' or 'failed'), ``jobs`` (the pending ones, as :class:`Job`)."""

    rows: dict
    jobs: list

    def count(self, status):
        """How many rows have ``status``."""
        return sum(1 for row in self.rows.values() if row["status"] == status)


def plan(paths, out_dir, options, overwrite=False):
    """The :class:`BatchPlan` of inputs ``paths`` with results in ``out_dir``.

    Skipped: inputs whose result in ``out_dir`` has the job's fingerprint (their rows are
    the stored ones, status 'skipped'); failed: inputs that cannot be read or run as asked.
    InputError (before any work) for a result path that holds something other than a batch
    result, unless ``overwrite``."""
    paths = distinct_inputs(paths)
    rows, jobs = {}, []
    for path, name in zip(paths, unique_names(paths)):
        target = os.path.join(out_dir, f"{name}.json")
        try:
            stored = batch_result(target)
        except InputError:
            if not overwrite:
                raise
            stored = None
        try:
            job = make_job(path, name, options)
        except HartreeError as error:
            rows[name] = failure_row(path, name, error, options)
            continue
        if stored is not None and stored.get("fingerprint") == job.fingerprint:
            row = {**summary_row(job), **dict(stored.get("summary") or {})}
            rows[name] = {**row, "input": path, "status": "skipped"}
        else:
            rows[name] = summary_row(job, status="pending")
            jobs.append(job)
    return BatchPlan(rows, jobs)
