"""Where the displaced gradients run: executors with one method,
``run(function, tasks)``, which yields ``function(task)`` for every task as each finishes
(in any order; each result names its task).

* :class:`SerialExecutor` -- in this process, one after another (the default);
* :class:`DaskExecutor` -- through a ``dask.distributed`` Client: a LocalCluster of
  single-threaded worker processes (``workers=N``) or an existing scheduler
  (``scheduler='tcp://host:8786'``), see :func:`open_executor`.  Tasks and results are
  plain data (numpy arrays, a Molecule, a Basis), so any worker can run them.

Hook for several GPUs of one host (not wired yet): an executor that starts one worker per
device (e.g. a LocalCluster whose worker processes each see one GPU through
CUDA_VISIBLE_DEVICES) and leaves ``device='gpu'`` in the tasks; each task already carries
``device`` and ``gpus`` for :func:`hartree.scf.run`.  Nothing else needs to change: the
Hessian is assembled from results in any order.
"""

from __future__ import annotations

import contextlib


class SerialExecutor:
    """Runs the tasks one after another in this process."""

    description = "serial (this process)"

    def run(self, function, tasks):
        for task in tasks:
            yield function(task)


class DaskExecutor:
    """Runs the tasks on the workers of a dask.distributed Client, yielding results as they
    complete (every task runs: ``pure=False``)."""

    def __init__(self, client, description="dask"):
        self.client = client
        self.description = description

    def run(self, function, tasks):
        from dask.distributed import as_completed

        tasks = list(tasks)
        if not tasks:
            return
        futures = self.client.map(function, tasks, pure=False)
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            self.client.cancel(futures)  # an interrupted run leaves nothing running


@contextlib.contextmanager
def open_executor(workers=None, scheduler=None):
    """Yield the executor for ``workers`` (a local Dask cluster of that many processes),
    ``scheduler`` (an existing Dask scheduler's address) or neither (serial).  InputError
    when both are given, when dask.distributed is missing or the scheduler unreachable."""
    from ..errors import InputError

    if workers is not None and scheduler is not None:
        raise InputError("--workers and --scheduler exclude each other (a scheduler has its own workers)")
    if workers is None and scheduler is None:
        yield SerialExecutor()
        return
    # the Dask client of the atom basis search: lazy import, SIGINT kept from the workers
    from ..atom.basis_search import dask_client

    with dask_client(workers=workers, scheduler=scheduler, what="hartree freq --workers/--scheduler") as client:
        where = f"dask scheduler {scheduler}" if scheduler else f"dask, {workers} local worker processes"
        yield DaskExecutor(client, where)
