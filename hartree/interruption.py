"""Stop requests (SIGINT, SIGTERM) remembered until a safe point acts on them.

The command line's signal handlers raise ``KeyboardInterrupt`` / :class:`Terminated` at
once, as Python does, *and* record the request here.  Python ignores an exception raised
while it runs a destructor or a weak-reference callback ("Exception ignored in ..."), so a
signal that lands there would be lost; long loops therefore call :func:`check` at safe
points (each SCF cycle, each lattice block, each MP2 block pair), which raises the recorded
request again.  Library callers that install no handler never record anything, so
:func:`check` costs one comparison.

:func:`children_ignore_sigint` is for commands that start worker processes (Dask clusters
of ``hartree batch`` and ``hartree basis-search``): the workers inherit SIGINT ignored, so
only the command itself acts on Ctrl-C.
"""

import signal
import threading
from contextlib import contextmanager

from .errors import Terminated

_pending = None


def request_stop(signum: int) -> None:
    """Remember that signal ``signum`` asked the run to stop."""
    global _pending
    _pending = int(signum)


def clear() -> None:
    """Forget a recorded request (the command that received it has ended)."""
    global _pending
    _pending = None


def check() -> None:
    """Raise KeyboardInterrupt (SIGINT) or Terminated (other signals) if a stop was asked."""
    if _pending is not None:
        if _pending == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(_pending)


@contextmanager
def children_ignore_sigint():
    """Within the block, SIGINT is ignored, so processes started in it inherit "ignore".

    Ctrl-C reaches the whole process group, and only the command should act on it (closing
    its cluster cleanly); Python and asyncio in a child leave an inherited "ignore" in
    place, so the workers print no tracebacks.  The previous handler is restored on exit.
    Outside the main thread (where signal handlers cannot be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
