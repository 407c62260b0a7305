"""Test matrices for mgemm (CPU and GPU tests) and their exact product."""

import numpy as np


def make_matrix(rng, shape, kind):
    """'random' in [-1, 1]; 'ill' with rows and columns scaled by 10^U(-6, 6); 'salted' with
    a fraction 1e-2 of elements in [90, 110] and 1e-3 in [9990, 10010] (the seed's test)."""
    x = rng.uniform(-1.0, 1.0, shape)
    if kind == "ill":
        x *= 10.0 ** rng.uniform(-6, 6, (shape[0], 1)) * 10.0 ** rng.uniform(-6, 6, (1, shape[1]))
    elif kind == "salted":
        for frac, lo, hi in ((1e-2, 90.0, 110.0), (1e-3, 9990.0, 10010.0)):
            mask = rng.random(shape) < frac
            x[mask] = rng.uniform(lo, hi, mask.sum()) * rng.choice([-1.0, 1.0], mask.sum())
    return x


def exact_product(a, b):
    """a @ b in long double (the reference the schemes' error bounds are checked against)."""
    return a.astype(np.longdouble) @ b.astype(np.longdouble)
