"""Basis-set size search (thesis §2.1.1, steps 1-8) and Dask-parallel optimizations.

Starting from a large well-tempered set (windows start:end per l) whose parameters are
optimized first, the search shrinks one symmetry at a time and re-optimizes every
candidate with NEWUOA (:mod:`hartree.atom.optimize`):

* steps 1-5: for l = lmax, ..., 0 the window end x is lowered one function at a time
  (down to the fewest functions that hold the occupied shells); the smallest x before the
  first candidate whose optimized energy has relative error |E − E_ref| / |E_ref| above
  the threshold is kept, and its optimized parameters start the next candidates;
* steps 6-8: for l = lmax, ..., 1 (not s) the window start y is raised the same way.

The thesis optimizes every candidate size of a step and picks the smallest that meets the
threshold; shrinking from the current size until the first failure picks the same one
when the error grows monotonically as functions are removed, and costs far fewer
optimizations.  Candidates of a step are independent optimizations: they run in batches
of ``batch`` through an executor (a Dask client's ``map``/``gather``, or serially); a
batch's candidates all start from the parameters accepted before the batch.  Independent
elements run concurrently (one driver thread per element, all sharing the client).

Dask (``dask.distributed``) is optional: :func:`dask_client` imports it lazily and raises
a clear :class:`hartree.errors.InputError` when it is missing.
"""

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ..errors import ConvergenceError, HartreeError, InputError
from ..interruption import children_ignore_sigint
from .angular import blocks_for
from .config import SYMBOLS, configuration
from .nucleus import make_nucleus
from .optimize import NewuoaOptions, optimize_wtbs
from .options import AtomSCFOptions
from .wtbs import Window, WTBSParameters

MISSING_DASK = (
    "{what} needs dask.distributed, which is not installed; install it with "
    "pip install 'hartree[distributed]' (or pip install 'dask[distributed]')"
)


@contextmanager
def dask_client(workers=None, scheduler=None, processes=True, what="parallel basis optimization"):
    """Yield a dask.distributed Client: to ``scheduler`` (an address such as
    tcp://host:8786) or to a LocalCluster of ``workers`` single-threaded workers
    (processes, or threads with processes=False).  Closes what it opened."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError(MISSING_DASK.format(what=what)) from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot connect to the Dask scheduler at {scheduler}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1 (got {workers})")
    with children_ignore_sigint():
        cluster = LocalCluster(
            n_workers=workers or 1,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    client = Client(cluster)
    try:
        yield client
    except BaseException as exc:
        if not isinstance(exc, Exception):  # SIGINT, SIGTERM: the tasks are cancelled
            _silence_cancelled_tasks()
        raise
    finally:
        client.close()
        cluster.close()


def _silence_cancelled_tasks():
    """Quiet the loggers that report the tasks an interrupt cancels (asyncio's "Task
    exception was never retrieved", distributed's teardown): expected, not errors."""
    # tornado.application: distributed's logging config gives it a level of its own
    for name in ("asyncio", "distributed", "tornado", "tornado.application"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class SerialExecutor:
    """The executor interface (``map_gather``) without Dask: runs tasks one by one."""

    def map_gather(self, fn, tasks):
        return [fn(t) for t in tasks]


class DaskExecutor:
    """``map_gather`` through a dask.distributed Client (pure=False: every task runs)."""

    def __init__(self, client):
        self.client = client

    def map_gather(self, fn, tasks):
        futures = self.client.map(fn, tasks, pure=False)
        return self.client.gather(futures)


@dataclass(frozen=True)
class SearchSpec:
    """One element's search: start parameters (per group), start windows, reference energy (Eh).

    nucleus: 'point' | 'gaussian' | 'sphere'; options: AtomSCFOptions (relativistic or not);
    newuoa: NewuoaOptions of every optimization; threshold: relative error allowed.
    """

    z: int
    start: tuple
    windows: tuple
    reference: float
    threshold: float = 5e-9
    nucleus: str = "gaussian"
    options: AtomSCFOptions = AtomSCFOptions()
    newuoa: NewuoaOptions = NewuoaOptions(rhobeg=0.05, rhoend=1e-4, maxfun=200)
    occupations: tuple = None  # (block_shells, open_shells); None: the ground configuration

    def pattern(self):
        """[(closed, open q)] per symmetry block."""
        if self.occupations is None:
            return configuration(self.z, 0, self.options.relativistic)
        closed, opened = self.occupations
        return list(zip(closed, opened))

    def __post_init__(self):
        if not self.threshold > 0:
            raise InputError(f"the threshold must be positive (got {self.threshold})")
        if not self.reference < 0:
            raise InputError(f"the reference energy of {SYMBOLS[self.z]} must be negative (Eh), got {self.reference}")


@dataclass
class SearchResult:
    """Final windows and parameters, energy (Eh), relative error and every candidate tried."""

    element: str
    windows: list
    groups: list
    energy: float
    relative_error: float
    reference: float
    threshold: float
    candidates: list = field(default_factory=list)  # dicts: step, l, window, energy, error, accepted
    optimizations: int = 0
    wall_time: float = 0.0

    def nbs(self):
        return ",".join(f"{'spdfghi'[w.l]}:{w.start}:{w.end}" for w in sorted(self.windows, key=lambda w: w.l))

    def to_dict(self):
        return {
            "element": self.element,
            "nbs": self.nbs(),
            "windows": [[w.l, w.start, w.end, w.group + 1] for w in self.windows],
            "groups": [[p.alpha, p.beta, p.delta, p.gamma] for p in self.groups],
            "energy": self.energy,
            "relative_error": self.relative_error,
            "reference": self.reference,
            "threshold": self.threshold,
            "meets_threshold": self.relative_error <= self.threshold,
            "optimizations": self.optimizations,
            "wall_time": self.wall_time,
            "candidates": self.candidates,
        }


def occupied_per_l(z, relativistic, lmax, pattern=None):
    """Fewest radial functions per l that can hold the occupied shells (default: ground configuration)."""
    pattern = pattern or configuration(z, 0, relativistic)
    need = [0] * (lmax + 1)
    for (nc, q), b in zip(pattern, blocks_for(6, relativistic)):
        if nc or q:
            if b.l > lmax:
                raise InputError(f"{SYMBOLS[z]} occupies l = {b.l} but the windows stop at l = {lmax}")
            need[b.l] = max(need[b.l], nc + (1 if q else 0))
    return need


def _optimize_task(task):
    """One candidate: optimize the parameters for given windows (runs on a worker).

    task: (spec, groups, windows) -> dict with energy (None if the start SCF failed), groups.
    """
    spec, groups, windows = task
    pattern = spec.pattern()
    nucleus = make_nucleus(spec.z, spec.nucleus)
    try:
        res = optimize_wtbs(
            spec.z,
            list(groups),
            list(windows),
            nucleus,
            spec.options,
            spec.newuoa,
            block_shells=[n for n, _ in pattern],
            open_shells=[q for _, q in pattern],
        )
    except (InputError, ConvergenceError):
        return {"energy": None, "groups": list(groups), "evaluations": 0, "wall_time": 0.0}
    return {"energy": res.energy, "groups": res.groups, "evaluations": res.evaluations, "wall_time": res.wall_time}


def size_search(spec, executor=None, batch=1, log=None):
    """Run steps 0-8 of the module docstring for one element; returns a SearchResult."""
    executor = executor or SerialExecutor()
    batch = max(int(batch), 1)
    t0 = time.perf_counter()
    windows = {w.l: w for w in spec.windows}
    lmax = max(windows)
    need = occupied_per_l(spec.z, spec.options.relativistic, lmax, spec.pattern())
    candidates = []
    count = {"optimizations": 0}

    def error(e):
        return None if e is None else abs(e - spec.reference) / abs(spec.reference)

    def run(step, l, trial_windows, groups):
        tasks = [(spec, tuple(groups), tuple(sorted(w.values(), key=lambda w: w.l))) for w in trial_windows]
        out = executor.map_gather(_optimize_task, tasks)
        count["optimizations"] += len(tasks)
        for w, o in zip(trial_windows, out):
            err = error(o["energy"])
            candidates.append(
                {
                    "step": step,
                    "l": l,
                    "window": [w[l].start, w[l].end],
                    "energy": o["energy"],
                    "error": err,
                    "accepted": err is not None and err <= spec.threshold,
                    "evaluations": o["evaluations"],
                }
            )
            if log:
                log(
                    f"{SYMBOLS[spec.z]} {step} {'spdfghi'[l]}:{w[l].start}:{w[l].end} "
                    + ("failed" if err is None else f"E={o['energy']:.10f} err={err:.2e}")
                )
        return out

    # step 0: optimize the start set; it must meet the threshold
    first = run("initial", 0, [dict(windows)], spec.start)[0]
    if first["energy"] is None or error(first["energy"]) > spec.threshold:
        what = "fails" if first["energy"] is None else f"has relative error {error(first['energy']):.2e}"
        raise InputError(
            f"{SYMBOLS[spec.z]}: the optimized start set {what} (threshold {spec.threshold:g}); "
            f"start from larger windows"
        )
    groups, energy = first["groups"], first["energy"]

    # steps 1-5: window ends, highest l first; candidates shrink from the current end down
    # to the fewest functions that hold the occupied shells, in batches, and the step stops
    # at the first candidate above the threshold (the error grows as functions are removed)
    for l in range(lmax, -1, -1):
        w = windows[l]
        ends = list(range(w.end - 1, max(w.start + need[l] - 1, w.start) - 1, -1))
        windows, groups, energy = _shrink(
            run, "end", l, windows, groups, energy, [replace(w, end=e) for e in ends], batch, error, spec.threshold
        )

    # steps 6-8: window starts, highest l first, not s
    for l in range(lmax, 0, -1):
        w = windows[l]
        starts = list(range(w.start + 1, w.end - need[l] + 2))
        windows, groups, energy = _shrink(
            run,
            "start",
            l,
            windows,
            groups,
            energy,
            [replace(w, start=s) for s in starts],
            batch,
            error,
            spec.threshold,
        )
    return SearchResult(
        SYMBOLS[spec.z],
        sorted(windows.values(), key=lambda w: w.l),
        list(groups),
        energy,
        error(energy),
        spec.reference,
        spec.threshold,
        candidates,
        count["optimizations"],
        time.perf_counter() - t0,
    )


def _shrink(run, step, l, windows, groups, energy, trials, batch, error, threshold):
    """Accept trial windows of symmetry l in order while they meet the threshold."""
    for i in range(0, len(trials), batch):
        chunk = []
        for w in trials[i : i + batch]:
            t = dict(windows)
            t[l] = w
            chunk.append(t)
        out = run(step, l, chunk, groups)
        for t, o in zip(chunk, out):
            if o["energy"] is None or error(o["energy"]) > threshold:
                return windows, groups, energy
            windows, groups, energy = t, o["groups"], o["energy"]
    return windows, groups, energy


def search_elements(specs, executor=None, batch=1, log=None):
    """Size searches of several elements at once (one driver thread each); results in order.

    An element whose search fails gets its HartreeError message instead of a result.
    """
    executor = executor or SerialExecutor()

    def one(spec):
        try:
            return size_search(spec, executor, batch, log)
        except HartreeError as exc:
            return exc

    if len(specs) == 1:
        return [one(specs[0])]
    with ThreadPoolExecutor(max_workers=len(specs)) as pool:
        return list(pool.map(one, specs))


def start_windows(nbs_windows, margin):
    """Start windows 1:end+margin from a basis (e.g. the thesis' set) for steps 1-8."""
    return tuple(Window(w.l, 1, w.end + margin, w.group) for w in nbs_windows)


__all__ = [
    "SearchSpec",
    "SearchResult",
    "size_search",
    "search_elements",
    "dask_client",
    "DaskExecutor",
    "SerialExecutor",
    "start_windows",
    "WTBSParameters",
]
