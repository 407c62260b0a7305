"""Array-module lookup shared by every layer: numpy for numpy arrays, cupy for cupy arrays.

Methods are written against the array API (``xp = array_module(x)``) so that the same code
runs on the CPU and on the GPU. Never imports cupy itself (no GPU query at import): a cupy
array can only exist when the caller already imported cupy.
"""

import sys

import numpy as np


def array_module(*arrays):
    """``cupy`` if any argument is a cupy array (cupy already imported), else ``numpy``."""
    cp = sys.modules.get("cupy")
    if cp is not None:
        for a in arrays:
            if isinstance(a, cp.ndarray):
                return cp
    return np


def to_numpy(a):
    """Host (numpy) copy of an array from either module; other values go through np.asarray."""
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        return a.get()
    return np.asarray(a)


def sparse_module(xp):
    """The sparse-matrix module matching array module ``xp`` (scipy.sparse or cupyx's)."""
    if xp is np:
        import scipy.sparse

        return scipy.sparse
    import cupyx.scipy.sparse  # only reached with cupy arrays, so cupy is installed

    return cupyx.scipy.sparse
