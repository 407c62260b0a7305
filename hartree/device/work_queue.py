"""Work spread over several GPUs of one host: a shared queue, one host thread per device.

    done = run_dynamic(slabs, backends, setup, work)      # work(state, slab) for every slab

Dynamic scheduling after VMD (Stone et al. 2009, sec. 4.4): one host thread per device
enters its device (``backend.use()``), builds its own state once (uploads, compiled
modules), then pulls the next item from a shared queue whenever it is ready for more, so a
faster or less loaded GPU simply takes more items.  Items are handed out in list order
(callers sort them costliest first).  Used by the orbital lattices (slabs of x planes,
:mod:`hartree.grid.gpu`) and by J/K (quartet-class launch items, :mod:`hartree.gpu.multi`,
which pulls through :meth:`WorkQueue.puller` from inside its launch loop to bound the work
in flight per device).  Works for any number of devices, including one, and for the same
device listed twice (two host threads sharing a GPU).
"""

import threading


class WorkQueue:
    """Items handed out in order to whichever worker asks; ``assigned`` maps each handed-out
    item's index to its worker, ``taken`` counts the items per worker.  After :meth:`close`
    (a worker failed) nothing more is handed out."""

    def __init__(self, items):
        self._items = list(items)
        self._next = 0
        self._closed = False
        self._lock = threading.Lock()
        self.assigned = {}
        self.taken = {}

    def pull(self, worker):
        """The next item for `worker` (an index), or None when the queue is empty or closed."""
        with self._lock:
            if self._closed or self._next >= len(self._items):
                return None
            index = self._next
            self._next += 1
            self.assigned[index] = worker
            self.taken[worker] = self.taken.get(worker, 0) + 1
            return self._items[index]

    def puller(self, worker):
        """A function of no arguments pulling the next item for `worker`."""
        return lambda: self.pull(worker)

    def close(self):
        with self._lock:
            self._closed = True


def on_each_device(backends, fn, queue=None):
    """results[d] = fn(d, backends[d]) for every backend, each in its own host thread under
    ``backends[d].use()`` (backend 0 in the calling thread).

    The first exception raised by any thread is re-raised here after all threads stop;
    `queue` (a WorkQueue) is closed at once then, so that the other threads stop pulling.
    """
    n = len(backends)
    results, errors, lock = [None] * n, [], threading.Lock()

    def work(d):
        try:
            with backends[d].use():
                results[d] = fn(d, backends[d])
        except BaseException as exc:  # handed to the calling thread below
            with lock:
                errors.append(exc)
            if queue is not None:
                queue.close()

    threads = [threading.Thread(target=work, args=(d,), name=f"hartree-gpu{d}") for d in range(1, n)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def run_dynamic(items, backends, setup, work):
    """Call work(state, item) for every item (none of them None), spread over the backends
    (one host thread each, state = setup(backend) made once per thread); returns
    {item index: position of the backend that took it}."""
    queue = WorkQueue(items)

    def worker(d, backend):
        state = setup(backend)
        pull = queue.puller(d)
        while (item := pull()) is not None:
            work(state, item)

    on_each_device(backends, worker, queue)
    return dict(queue.assigned)
