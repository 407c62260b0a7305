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

from concurrent.futures import ThreadPoolExecutor

import numba


def thread_count() -> int:
    """Threads the CPU kernels use: numba's thread count."""
    return int(numba.get_num_threads())


def run(kernel, *args, nthreads: int | None = None) -> list:
    """[kernel(t, n, *args) for t in range(n)], the calls in n threads (n = nthreads or
    :func:`thread_count`); an exception of a kernel is raised here."""
    n = thread_count() if nthreads is None else int(nthreads)
    if n <= 1:
        return [kernel(0, 1, *args)]
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="hartree-kernel") as pool:
        futures = [pool.submit(kernel, t, n, *args) for t in range(n)]
        return [f.result() for f in futures]
