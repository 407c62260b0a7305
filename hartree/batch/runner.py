"""Running a planned batch on a Dask client: :func:`run_jobs`.

Each job is submitted as one task (:func:`hartree.batch.task.run_task`, key
``hartree-batch-<name>-<fingerprint[:12]>``, ``retries=1`` for an exception that is not
hartree's; a worker that dies is handled by the scheduler, which gives the task to a worker
again).  Results are collected as they complete (``distributed.as_completed``):

* a finished input's document is written at once, atomically, as ``DIR/<name>.json``
  (:func:`hartree.io.qcschema.write_json`);
* ``DIR/summary.csv`` (:data:`SUMMARY_COLUMNS`, one row per input in input order, status
  pending | finished | skipped | failed | cancelled) is rewritten atomically at the start,
  at most once a second while results come in, and at the end;
* a failed input is recorded with its error and the others go on;
* SIGINT/SIGTERM (``KeyboardInterrupt`` / :class:`hartree.errors.Terminated`, raised in
  the main thread, which polls) cancel the tasks not yet finished; the results written so
  far stay, the summary marks the rest 'cancelled', and the signal's exception propagates.
"""

from __future__ import annotations

import csv
import io
import os
import time

from .. import interruption
from ..io.files import write_text
from ..io.qcschema import write_json
from .task import run_task, summary_row

#: the columns of DIR/summary.csv
SUMMARY_COLUMNS = (
    "name",
    "input",
    "formula",
    "task",
    "method",
    "basis",
    "energy_Eh",
    "converged",
    "wall_time_s",
    "worker",
    "status",
    "error",
)
SUMMARY_NAME = "summary.csv"
#: resubmissions of a task that raised an exception other than hartree's
RETRIES = 1
#: seconds between polls of the futures (and of the running count)
POLL = 0.2
#: seconds between rewrites of the summary while results come in
SUMMARY_INTERVAL = 1.0


def task_key(job):
    """The Dask key of a job's task (unique per name and options)."""
    return f"hartree-batch-{job.name}-{job.fingerprint[:12]}"


def result_path(out_dir, name):
    """DIR/<name>.json."""
    return os.path.join(out_dir, f"{name}.json")


def summary_text(rows):
    """CSV text (header and one line per row) of summary rows."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SUMMARY_COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: row.get(key, "") for key in SUMMARY_COLUMNS})
    return buffer.getvalue()


def write_summary(out_dir, rows):
    """Write DIR/summary.csv atomically."""
    write_text(os.path.join(out_dir, SUMMARY_NAME), summary_text(rows))


def _failed_row(future, job):
    """The row of a task that ended in an exception (after its retries) or was cancelled."""
    if future.status == "cancelled":
        return summary_row(job, status="failed", error="the task was cancelled by the Dask scheduler")
    error = future.exception()
    from distributed.scheduler import KilledWorker

    if isinstance(error, KilledWorker):
        text = (
            "the worker running it died each time it was tried (distributed.scheduler.allowed-failures); "
            "it may need more memory than a worker has"
        )
    else:
        text = f"internal error: {type(error).__name__}: {' '.join(str(error).split())}"
    return summary_row(job, status="failed", error=text)


def _collect(future, job, out_dir):
    """The summary row of a completed future; a success's document is written first."""
    if future.status != "finished":
        return _failed_row(future, job)
    outcome = future.result()
    if outcome.ok:
        write_json(result_path(out_dir, job.name), outcome.document)
    return outcome.row


def _running(client, keys):
    """How many of ``keys`` are executing now: per worker, those Dask lists as processing
    there (assigned, perhaps queued), at most the worker's thread count."""
    try:
        processing, threads = client.processing(), client.nthreads()
    except Exception:  # noqa: BLE001  (a count for the display only; the scheduler may be busy)
        return None
    return sum(
        min(sum(1 for key in tasks if key in keys), threads.get(worker, 1)) for worker, tasks in processing.items()
    )


def run_jobs(client, plan, out_dir, notify=None):
    """Run the jobs of ``plan`` (:class:`hartree.batch.inputs.BatchPlan`) on ``client``,
    updating ``plan.rows`` and writing files as results come (module docstring).

    notify: called as ``notify(row, running)`` after each completed input (``row``) and
    with ``row=None`` when only the number of inputs running changed."""
    from distributed import as_completed

    notify = notify or (lambda row, running: None)
    rows = plan.rows
    write_summary(out_dir, rows.values())
    if not plan.jobs:
        return
    futures = {}
    for job in plan.jobs:
        future = client.submit(run_task, job, key=task_key(job), retries=RETRIES, pure=False)
        futures[future] = job
    keys = {future.key for future in futures}
    pending = set(futures)
    completed = as_completed(list(futures))
    last_summary = last_count = 0.0
    running = None
    try:
        while pending:
            interruption.check()
            batch = completed.next_batch(block=False)
            for future in batch:
                pending.discard(future)
                row = _collect(future, futures[future], out_dir)
                rows[row["name"]] = row
                notify(row, running)
            now = time.monotonic()
            if batch and now - last_summary >= SUMMARY_INTERVAL:
                write_summary(out_dir, rows.values())
                last_summary = now
            if pending and now - last_count >= 2 * POLL:
                count = _running(client, keys)
                if count is not None and count != running:
                    running = count
                    notify(None, running)
                last_count = now
            if pending and not batch:
                time.sleep(POLL)
    finally:
        if pending:
            client.cancel(list(pending))
            for future in pending:
                job = futures[future]
                rows[job.name] = summary_row(job, status="cancelled", error="not run: the batch was stopped")
        write_summary(out_dir, rows.values())
