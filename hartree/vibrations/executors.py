"""Where the displaced gradients run: executors with one method,
``run(function, tasks)``, which yields ``function(task)`` for every task as each finishes
(in any order; each result names its task), and an optional ``placement(device, gpus)``
giving the ``device`` and ``gpus`` the tasks should carry where they run.

* :class:`SerialExecutor` -- in this process, one after another (the default);
* :class:`DaskExecutor` -- through a ``dask.distributed`` Client: a LocalCluster of
  single-threaded worker processes (``workers=N``) or an existing scheduler
  (``scheduler='tcp://host:8786'``), see :func:`open_executor`.  Tasks and results are
  plain data (numpy arrays, a Molecule, a Basis), so any worker can run them.
* :class:`GPUWorkersExecutor` -- several GPUs of one host, standard library only (Dask is an
  optional extra): one worker process per GPU, started with the 'spawn' method and with
  ``CUDA_VISIBLE_DEVICES`` naming its GPU alone, so its tasks run with ``device='gpu'`` and
  ``gpus=None`` (the one GPU it sees).  Tasks are handed out in the order given, the next
  one to whichever worker is free (one task in flight per worker, so the last tasks balance
  across the GPUs); results are yielded as they arrive.  Workers start when the executor is
  entered (``with``), so their start (Python, hartree, cupy, a CUDA context) overlaps the
  reference SCF of the parent, and serve every later ``run``.  A task that raises ends the
  run with that exception (its remote traceback as ``__cause__``); a worker that dies, an
  interruption (SIGINT, SIGTERM) or an abandoned run stops every worker (SIGTERM, then
  SIGKILL after a grace period) before the error propagates, and the executor is then
  closed.  The workers ignore SIGINT (:func:`hartree.interruption.children_ignore_sigint`):
  Ctrl-C reaches the whole process group, and only the parent acts on it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import threading
import time
import traceback

#: Seconds the workers get to leave after being asked (a closed executor, an idle worker),
#: and after SIGTERM, before the next, harder step.
STOP_GRACE = 10.0
#: Seconds between checks for a stop request whose exception Python lost, while waiting.
POLL_INTERVAL = 1.0

_ENVIRONMENT_LOCK = threading.Lock()


class SerialExecutor:
    """Runs the tasks one after another in this process."""

    description = "serial (this process)"

    def run(self, function, tasks):
        for task in tasks:
            yield function(task)

    def placement(self, device, gpus):
        """The tasks run here, as asked."""
        return device, gpus


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

    def placement(self, device, gpus):
        """The workers run the tasks as asked."""
        return device, gpus


def visible_devices(gpus, environ=None):
    """The ``CUDA_VISIBLE_DEVICES`` value that shows a child process exactly GPU ``i`` of
    this process, for each ordinal ``i`` in ``gpus``: the i-th entry of this process's own
    ``CUDA_VISIBLE_DEVICES`` when it is set (a number or a UUID), else ``str(i)``.
    environ: the environment to read (default ``os.environ``)."""
    environ = os.environ if environ is None else environ
    own = environ.get("CUDA_VISIBLE_DEVICES")
    if own is None or not own.strip():
        return [str(int(i)) for i in gpus]
    entries = [entry.strip() for entry in own.split(",")]
    return [entries[int(i)] for i in gpus]


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (its text), attached as
    the ``__cause__`` of the exception re-raised in the parent."""

    def __str__(self):
        return "\n" + self.args[0]


class GPUWorkersExecutor:
    """One worker process per GPU of this host (module docstring); a context manager.

    devices: the ``CUDA_VISIBLE_DEVICES`` value of each worker, e.g. ``['0', '1']``
    (:func:`visible_devices` maps this process's ordinals to them); task_device: the
    ``device`` the tasks carry in the workers ('gpu'; 'cpu' lets tests run the machinery
    without a GPU); names: the GPUs as the user named them, for the description (default
    ``devices``); threads: numba and OpenMP threads per worker, set as
    ``NUMBA_NUM_THREADS`` / ``OMP_NUM_THREADS`` unless this process's environment sets them
    (default None: the worker's own default); prepare: a picklable callable without
    arguments that each worker runs once on start (imports, the CUDA context), whose
    exception becomes the run's error.
    """

    def __init__(self, devices, *, task_device="gpu", names=None, threads=None, prepare=None):
        self.devices = [str(d) for d in devices]
        if not self.devices:
            from ..errors import InputError

            raise InputError("GPUWorkersExecutor: the list of devices is empty")
        self.task_device = task_device
        self.threads = threads
        self.prepare = prepare
        shown = ",".join(str(n) for n in (names if names is not None else self.devices))
        count = len(self.devices)
        if task_device == "gpu":
            self.description = f"{count} GPU worker process{'es' if count > 1 else ''} (GPUs {shown})"
        else:
            self.description = (
                f"{count} worker process{'es' if count > 1 else ''} "
                f"(CUDA_VISIBLE_DEVICES {shown}, tasks on the {task_device})"
            )
        self._workers = []
        self._state = "new"  # new -> started -> closed

    # -- life cycle -------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, kind, error, trace):
        self.close(abort=kind is not None)
        return False

    def placement(self, device, gpus):
        """In a worker a task runs on ``task_device`` and the one GPU the worker sees."""
        return self.task_device, None

    def start(self):
        """Start the workers (once); DeviceError when this executor was closed."""
        if self._state == "started":
            return
        if self._state == "closed":
            from ..errors import DeviceError

            raise DeviceError("the GPU worker processes were stopped (an earlier error or interruption)")
        import multiprocessing

        from ..interruption import children_ignore_sigint

        context = multiprocessing.get_context("spawn")
        self._state = "started"
        try:
            with children_ignore_sigint():
                for label in self.devices:
                    self._workers.append(_start_worker(context, label, self._environment(label), self.prepare))
        except BaseException:
            self.close(abort=True)
            raise

    def _environment(self, label):
        env = {"CUDA_VISIBLE_DEVICES": label}
        if self.threads is not None:
            for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
                if name not in os.environ:
                    env[name] = str(int(self.threads))
        return env

    def close(self, abort=False):
        """Stop the workers: asked to leave (abort=False: after their current task), or at
        once (SIGTERM); after STOP_GRACE seconds SIGTERM, then SIGKILL.  Idempotent."""
        workers, self._workers = self._workers, []
        self._state = "closed"
        for worker in workers:
            if abort:
                worker.process.terminate()
            else:
                with contextlib.suppress(OSError):
                    worker.connection.send(None)
        for signal_step in ("wait", "terminate", "kill"):
            deadline = time.monotonic() + STOP_GRACE
            for worker in workers:
                if signal_step == "terminate" and worker.process.is_alive():
                    worker.process.terminate()
                elif signal_step == "kill" and worker.process.is_alive():
                    worker.process.kill()
                worker.process.join(max(0.0, deadline - time.monotonic()))
            if not any(worker.process.is_alive() for worker in workers):
                break
        for worker in workers:
            worker.connection.close()
            if not worker.process.is_alive():
                worker.process.close()

    @property
    def pids(self):
        """Process ids of the running workers (empty before start and after close)."""
        return [worker.process.pid for worker in self._workers]

    # -- the work ---------------------------------------------------------------------
    def run(self, function, tasks):
        """Yield ``function(task)`` for every task as each finishes (module docstring)."""
        from multiprocessing.connection import wait

        from .. import interruption

        tasks = list(tasks)
        if not tasks:
            return
        self.start()
        pending = collections.deque(enumerate(tasks))
        remaining = len(tasks)
        finished = False
        try:
            while remaining:
                self._dispatch(function, pending)
                waiting = {}
                for worker in self._workers:
                    waiting[worker.connection] = worker
                    waiting[worker.process.sentinel] = worker
                ready = wait(list(waiting), timeout=POLL_INTERVAL)
                if not ready:
                    interruption.check()  # a stop request whose exception Python lost
                    continue
                for worker in {id(waiting[r]): waiting[r] for r in ready}.values():
                    message = worker.receive()
                    if message is None:
                        continue
                    kind, position, payload = message
                    if kind == "ready":
                        worker.ready = True
                    elif kind == "result":
                        worker.position = None
                        remaining -= 1
                        self._dispatch(function, pending)  # keep the GPUs busy while we yield
                        yield payload
                    else:
                        raise _remote_error(payload, worker, position)
            finished = True
        finally:
            if not finished:  # an error, an interruption, or a run abandoned by its caller
                self.close(abort=True)

    def _dispatch(self, function, pending):
        for worker in self._workers:
            if pending and worker.ready and worker.position is None:
                position, task = pending.popleft()
                worker.position = position
                try:
                    worker.connection.send((position, function, task))
                except (BrokenPipeError, ConnectionResetError, EOFError):
                    worker.died()


class _Worker:
    """The parent's handle of one worker: process, connection, label, state."""

    def __init__(self, process, connection, label):
        self.process = process
        self.connection = connection
        self.label = label
        self.ready = False  # started and prepared
        self.position = None  # the task it runs

    def receive(self):
        """The next message, None when there is none yet; DeviceError when the worker died."""
        try:
            if self.connection.poll():
                return self.connection.recv()
            gone = not self.process.is_alive()
        except (EOFError, OSError):  # the worker's end closed: it is ending
            gone = True
        if gone:
            self.died()
        return None

    def died(self):
        from .. import interruption
        from ..errors import DeviceError

        interruption.check()  # SIGTERM to the process group: the stop request, not the death
        self.process.join(STOP_GRACE)
        code = self.process.exitcode
        if code is not None and code < 0:
            how = f"was killed by signal {-code} ({_signal_name(-code)})"
        else:
            how = f"ended with exit code {code}"
        doing = "while starting" if self.position is None else f"while running task {self.position + 1}"
        raise DeviceError(f"the worker process of CUDA_VISIBLE_DEVICES={self.label} {how} {doing}")


def _signal_name(number):
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _start_worker(context, label, environment, prepare):
    """Start one worker with ``environment`` added to this process's (set while it starts,
    so that the child has it from its first instruction, before anything imports cupy)."""
    parent_end, child_end = context.Pipe(duplex=True)
    process = context.Process(
        target=_worker_main, args=(child_end, label, prepare), name=f"hartree-worker-{label}", daemon=True
    )
    with _ENVIRONMENT_LOCK:
        saved = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            process.start()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    child_end.close()
    return _Worker(process, parent_end, label)


def _worker_main(connection, label, prepare):
    """A worker's loop: prepare, say ready, then run tasks until told to stop (None) or the
    parent is gone.  Messages to the parent: (kind, position, payload) with kind 'ready',
    'result' or 'error' (payload: (pickled exception or None, traceback text))."""
    try:
        if os.environ.get("CUDA_VISIBLE_DEVICES") != label:
            raise RuntimeError(f"worker started with CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
        if prepare is not None:
            prepare()
        reply = ("ready", None, os.getpid())
    except Exception as error:  # noqa: BLE001 -- reported to the parent
        reply = ("error", None, _error_payload(error))
    while True:
        try:
            try:
                connection.send(reply)
            except (pickle.PicklingError, TypeError, AttributeError) as error:  # an unpicklable result
                connection.send(("error", reply[1], _error_payload(error)))
            if reply[0] == "error" and reply[1] is None:
                return  # could not start
            message = connection.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        position, function, task = message
        try:
            reply = ("result", position, function(task))
        except Exception as error:  # noqa: BLE001 -- reported to the parent
            reply = ("error", position, _error_payload(error))


def _error_payload(error):
    """(the pickled exception, or None when it does not pickle; its traceback text)."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        blob = pickle.dumps(error)
        pickle.loads(blob)
    except Exception:  # noqa: BLE001 -- sent as text instead
        blob = None
    return blob, text


def _remote_error(payload, worker, position):
    """The exception of a worker's task (or start), ready to raise in the parent."""
    blob, text = payload
    error = None
    if blob is not None:
        try:
            error = pickle.loads(blob)
        except Exception:  # noqa: BLE001 -- an exception class this process cannot rebuild
            error = None
    if error is None:
        from ..errors import HartreeError

        last = text.strip().splitlines()[-1] if text.strip() else "unknown error"
        error = HartreeError(f"a worker process failed: {last}")
    where = "while starting" if position is None else f"in task {position + 1}"
    if hasattr(error, "add_note"):  # Python 3.11+
        error.add_note(f"(raised in the worker process of CUDA_VISIBLE_DEVICES={worker.label}, {where})")
    error.__cause__ = RemoteTraceback(text)
    return error


@contextlib.contextmanager
def open_executor(workers=None, scheduler=None, gpus=None, prepare=None):
    """Yield the executor for ``workers`` (a local Dask cluster of that many processes),
    ``scheduler`` (an existing Dask scheduler's address), ``gpus`` naming more than one GPU
    (ordinals of this process: a :class:`GPUWorkersExecutor`, whose workers run
    ``prepare`` on start) or none of them (serial).  InputError when two are given, when
    dask.distributed is missing or the scheduler unreachable."""
    from ..errors import InputError

    if workers is not None and scheduler is not None:
        raise InputError("--workers and --scheduler exclude each other (a scheduler has its own workers)")
    several = gpus is not None and len(gpus) > 1
    if several and (workers is not None or scheduler is not None):
        raise InputError(
            "--gpus with several GPUs runs one worker process per GPU and excludes --workers and --scheduler"
        )
    if several:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        executor = GPUWorkersExecutor(
            visible_devices(gpus), names=list(gpus), threads=max(1, cores // len(gpus)), prepare=prepare
        )
        with executor:
            yield executor
        return
    if workers is None and scheduler is None:
        yield SerialExecutor()
        return
    # the Dask client of the atom basis search: lazy import, SIGINT kept from the workers
    from ..atom.basis_search import dask_client

    with dask_client(workers=workers, scheduler=scheduler, what="hartree freq --workers/--scheduler") as client:
        where = f"dask scheduler {scheduler}" if scheduler else f"dask, {workers} local worker processes"
        yield DaskExecutor(client, where)
