"""Array-module lookup: numpy for numpy arrays, cupy for cupy arrays.

Never imports cupy itself, so importing hartree.scf stays GPU-free.
"""

import sys

import numpy as np


def array_module(*arrays):
    """Return ``cupy`` if any argument is a cupy array (already imported), else ``numpy``."""
    cp = sys.modules.get("cupy")
    if cp is not None:
        for a in arrays:
            if isinstance(a, cp.ndarray):
                return cp
    return np


def to_numpy(a):
    """Host (numpy) copy of an array from either module; other values are passed through np.asarray."""
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)
