"""Saying when one-time compilation runs: the first CPU run of an installation compiles
numba's kernels (minutes on two cores), in silence unless told.

A marker file per kind of run is written under the cache root (:func:`hartree.cache.root`,
in ``compiled/``) after a run of that kind
succeeds; it is keyed by the hartree, numba and Python versions, the things that make numba
compile again.  Before a run whose marker is missing the command prints one line, also when
its output goes to a pipe or a file.  ``hartree cache warm`` (:mod:`hartree.warm`) compiles
ahead of time and writes the marker too.  The marker is a hint for that message only: numba
keeps its own cache and decides itself what to compile.
"""

import os
import sys

from .. import cache
from .._version import __version__

#: What the first run of each kind compiles, and about how long it takes on two cores.
FIRST_RUN = {
    "scf-cpu": "the CPU integral kernels (numba) are compiled on the first run of this "
    "installation: about 2 to 3 minutes on 2 cores; later runs load them from the cache "
    "('hartree cache warm' compiles them ahead of time, e.g. when setting up a machine)",
}


def _marker(kind):
    import numba

    key = f"{kind}-hartree{__version__}-numba{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(cache.root(create=False), "compiled", key)


def announce(console, kind):
    """Print the one-time compilation line for ``kind`` if its marker is missing."""
    if not os.path.exists(_marker(kind)):
        console.print(f"note:     {FIRST_RUN[kind]}", markup=False, highlight=False, soft_wrap=True)


def mark_done(kind):
    """Record that a run of ``kind`` finished (best effort: a read-only cache is fine)."""
    path = _marker(kind)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "a", encoding="ascii"):
            pass
    except OSError:
        pass
