"""The CPU kernels' threads: ``run(kernel, *args)`` calls ``kernel(t, nthreads, *args)`` for
t = 0 .. nthreads - 1, each in its own Python thread, and returns the results in order of t.

The kernels are numba functions compiled with ``nogil=True``, so the threads run at the same
time; each takes every nthreads-th item of its work list (round robin: where the list is
sorted heaviest first, this spreads the heavy items) into a buffer of its own, which the
caller sums.  nthreads is numba's thread count (``NUMBA_NUM_THREADS``,
``numba.set_num_threads``), so the usual controls keep working.

Why not numba's ``parallel=True`` with ``prange``: its parfor passes and lowering cost 8 to
25 s of compilation per kernel on a first run (measured on 2 cores: the J/K driver 22.6 s,
the Schwarz factors 8.8 s, the one-electron matrices 8.2 s of CPU time), for the same loop.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

_pool = None  # (ThreadPoolExecutor, its size, the process id that made it)
_pool_lock = threading.Lock()


def thread_count() -> int:
    """Threads the CPU kernels use: numba's thread count."""
    return int(numba.get_num_threads())


def _workers(n):
    """The process's pool of n - 1 helper threads, made on first use and kept (starting
    threads at every call cost about a millisecond, as much as a small J/K build); made
    anew after a fork or a change of the thread count."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[1] != n or _pool[2] != os.getpid():
            if _pool is not None and _pool[2] == os.getpid():
                _pool[0].shutdown(wait=False)
            _pool = (ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="hartree-kernel"), n, os.getpid())
        return _pool[0]


def run(kernel, *args, nthreads: int | None = None) -> list:
    """[kernel(t, n, *args) for t in range(n)], share 0 in the calling thread and the others
    in the pool's threads at the same time (n = nthreads or :func:`thread_count`); an
    exception of a kernel is raised here."""
    n = thread_count() if nthreads is None else int(nthreads)
    if n <= 1:
        return [kernel(0, 1, *args)]
    futures = [_workers(n).submit(kernel, t, n, *args) for t in range(1, n)]
    first = kernel(0, n, *args)
    return [first] + [f.result() for f in futures]
