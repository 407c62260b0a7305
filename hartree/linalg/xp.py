"""Array-module lookup for the linalg layer: numpy for numpy arrays, cupy for cupy arrays.

Never imports cupy itself (no GPU query at import); a cupy array can only exist when the
caller already imported cupy.
"""

import sys

import numpy as np


def array_module(*arrays):
    """``cupy`` if any argument is a cupy array, else ``numpy``."""
    cp = sys.modules.get("cupy")
    if cp is not None:
        for a in arrays:
            if isinstance(a, cp.ndarray):
                return cp
    return np


def sparse_module(xp):
    """The sparse-matrix module matching array module ``xp`` (scipy.sparse or cupyx's)."""
    if xp is np:
        import scipy.sparse

        return scipy.sparse
    import cupyx.scipy.sparse  # only reached with cupy arrays, so cupy is installed

    return cupyx.scipy.sparse
