"""Where a batch runs: :func:`plan_cluster` decides, :func:`open_client` starts it.

Rules of :func:`plan_cluster` (the machine is asked at run time, never at import):

* ``scheduler='tcp://host:8786'``: a running Dask cluster (its workers, e.g. started by
  dask-jobqueue on SLURM or PBS, docs/batch.md); nothing is started here;
* GPUs visible (``device`` auto or gpu, :func:`hartree.device.selection.gpu_names`): one
  worker process per GPU -- dask-cuda's ``LocalCUDACluster`` when dask_cuda is importable,
  else one Nanny per GPU with ``CUDA_VISIBLE_DEVICES`` set to it (``--workers N`` other than
  the GPU count: the GPUs are shared round-robin);
* otherwise CPU workers: ``--workers N``, else one per core up to the number of inputs.

Each worker runs one task at a time (one Dask thread) and its numba/BLAS threads are set
through its environment (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ...) so that workers x
threads <= cores.  Worker processes start with SIGINT ignored: Ctrl-C and SIGTERM are for
this process, which cancels the tasks and closes the cluster.  A worker process that dies
is restarted by its Nanny and its task given to a worker again (Dask's
``distributed.scheduler.allowed-failures``, default 3 deaths per task).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from dataclasses import dataclass, field

from ..errors import InputError
from ..interruption import children_ignore_sigint

MISSING_DASK = 'hartree batch needs dask.distributed, which is not installed; pip install "hartree[distributed]"'
#: environment variables that size a worker's thread pools
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ClusterPlan:
    """What :func:`open_client` starts.

    kind     'scheduler' (connect to ``address``), 'cuda' (dask-cuda's LocalCUDACluster),
             'gpu' (one Nanny per worker with CUDA_VISIBLE_DEVICES), 'cpu' (LocalCluster)
    workers  worker processes (0 for 'scheduler': the cluster has its own)
    threads  numba/BLAS threads per worker
    gpus     the CUDA_VISIBLE_DEVICES value of each worker ('gpu'), or the GPUs ('cuda')
    """

    kind: str
    workers: int = 0
    threads: int = 1
    gpus: tuple = field(default_factory=tuple)
    address: str | None = None

    def description(self):
        """One line for the user."""
        if self.kind == "scheduler":
            return f"Dask scheduler {self.address}"
        per = f"{self.threads} thread{'s' if self.threads != 1 else ''} each"
        if self.kind == "cuda":
            return f"local dask-cuda cluster, {self.workers} GPU workers ({per})"
        if self.kind == "gpu":
            return f"local Dask cluster, {self.workers} workers on GPUs {','.join(self.gpus)} ({per})"
        return f"local Dask cluster, {self.workers} CPU worker process{'es' if self.workers != 1 else ''} ({per})"

    def environment(self):
        """Environment variables every worker of the plan gets."""
        return {name: str(self.threads) for name in THREAD_VARIABLES}


def available_cores():
    """CPU cores this process may use (its affinity mask, else os.cpu_count())."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def visible_gpus(device):
    """Device ids for CUDA_VISIBLE_DEVICES of the GPUs a local batch may use: none for
    ``device='cpu'``, else those cupy sees (renumbered through a CUDA_VISIBLE_DEVICES of
    this process)."""
    if device == "cpu":
        return ()
    from ..device.selection import gpu_names

    count = len(gpu_names())
    given = [g.strip() for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    if given and len(given) >= count:
        return tuple(given[:count])
    return tuple(str(i) for i in range(count))


def plan_cluster(*, workers=None, scheduler=None, device="auto", inputs=1, cores=None, gpus=None, dask_cuda=None):
    """The :class:`ClusterPlan` of a batch (module docstring).

    workers: --workers (None: automatic); scheduler: --scheduler address; device: the
    batch's --device; inputs: jobs to run (no more CPU workers than that by default);
    cores, gpus (CUDA_VISIBLE_DEVICES ids), dask_cuda (importable): the machine, asked
    when None."""
    if workers is not None and scheduler is not None:
        raise InputError("--workers and --scheduler exclude each other (a scheduler has its own workers)")
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    if scheduler is not None:
        return ClusterPlan("scheduler", address=str(scheduler))
    cores = available_cores() if cores is None else max(1, int(cores))
    gpus = visible_gpus(device) if gpus is None else tuple(str(g) for g in gpus)
    if gpus and device != "cpu":
        n = workers or len(gpus)
        threads = max(1, cores // n)
        if dask_cuda is None:
            dask_cuda = importlib.util.find_spec("dask_cuda") is not None
        if dask_cuda and n == len(gpus):
            return ClusterPlan("cuda", n, threads, gpus)
        return ClusterPlan("gpu", n, threads, tuple(gpus[i % len(gpus)] for i in range(n)))
    n = workers or max(1, min(cores, inputs))
    return ClusterPlan("cpu", n, max(1, cores // n))


def _start(plan):
    """(cluster, client) of a local plan."""
    from distributed import Client, LocalCluster, Nanny, Scheduler, SpecCluster

    env = plan.environment()
    common = {"dashboard_address": None, "silence_logs": logging.ERROR}
    with children_ignore_sigint():
        if plan.kind == "cuda":
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=",".join(plan.gpus), threads_per_worker=1, env=env, **common
            )
        elif plan.kind == "gpu":
            workers = {
                f"gpu-{i}": {
                    "cls": Nanny,
                    "options": {
                        "nthreads": 1,
                        "env": {**env, "CUDA_VISIBLE_DEVICES": gpu},
                        "silence_logs": logging.ERROR,
                    },
                }
                for i, gpu in enumerate(plan.gpus)
            }
            scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
            cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR)
        else:
            cluster = LocalCluster(n_workers=plan.workers, threads_per_worker=1, processes=True, env=env, **common)
    try:
        return cluster, Client(cluster)
    except BaseException:
        cluster.close()
        raise


@contextlib.contextmanager
def open_client(plan):
    """Yield a dask.distributed Client for ``plan``; closes what it started (also on
    SIGINT/SIGTERM).  InputError without dask.distributed or when the scheduler cannot be
    reached."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError(MISSING_DASK) from None
    if plan.kind == "scheduler":
        try:
            client = Client(plan.address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot connect to the Dask scheduler at {plan.address}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    cluster, client = _start(plan)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
