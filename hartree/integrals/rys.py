"""Rys quadrature roots and weights from precomputed Chebyshev tables.

Contract
--------
``rys_roots_weights(nroots, T, roots, weights, table)`` -- numba ``@njit(cache=True)``,
allocation-free, callable from other njit kernels:

* ``nroots``: int, 1 <= nroots <= MAX_NROOTS (= 14);
* ``T``: float64 >= 0 (the Boys argument, e.g. rho |P-Q|^2; a tiny negative T from
  rounding is extrapolated smoothly, T = inf gives zeros);
* ``roots``, ``weights``: caller-allocated float64 1-D arrays, length >= nroots;
* ``table``: the read-only float64 1-D array returned by ``rys_table_array()``
  (memoised: get it once in the Python driver and pass it down to the njit kernels as an
  ordinary argument).

It writes ``roots[:nroots]`` = u_i = t_i^2 in (0, 1), ascending, and
``weights[:nroots]`` = w_i > 0, the n-point Gauss rule of the measure
exp(-T u) u^(-1/2) du / 2 on [0, 1], i.e.

    sum_i w_i u_i^m = F_m(T) = int_0^1 t^(2m) exp(-T t^2) dt,   m = 0 .. 2n-1

(so F_0(0) = sum_i w_i = 1).  ``roots_weights(nroots, T)`` is a plain-Python
convenience returning two new arrays.  A nroots outside 1..MAX_NROOTS raises ValueError.

Usage::

    table = rys_table_array()                 # Python side, once

    @numba.njit(cache=True)
    def kernel(..., table):
        r = np.empty(MAX_NROOTS); w = np.empty(MAX_NROOTS)   # once, outside the loops
        for ...:
            rys_roots_weights(n, T, r, w, table)

Method
------
Tables (``data/rys_tables.npz``) are made by ``tools/make_rys_tables.py`` with mpmath
(100 digits): Boys moments -> Chebyshev algorithm -> Jacobi matrix -> Newton-refined
Gauss nodes and Christoffel weights.  For each n, [0, T_max(n)) is cut into intervals of
width 1; on each, every u_i(T) and w_i(T) is a degree-13 Chebyshev interpolant, evaluated
here as sum_j c_j T_j(x) with T_1..T_13 held in registers.  For T >= T_max(n) (39 for n = 1
up to 114 for n = 14) the large-T (half-range Hermite) asymptote is exact to double
precision:  u_i = v_i / T,  w_i = lambda_i / sqrt(T),  with v_i = x_i^2 for x_i > 0 the
zeros of H_2n and lambda_i their Gauss-Hermite weights.

Accuracy: relative error of every root and weight <= 1e-13 guaranteed by the tests
(observed max 1.6e-15) for n = 1..14 and all T >= 0, 0 and subnormal T included
(tests/integrals/test_rys.py regenerates a sample with the tool's mpmath reference).

Cost per call in a numba loop (AMD EPYC, 2.6 GHz): T < T_max(n): 24 ns (n = 1),
45 ns (3), 62 ns (5), 100 ns (9), 143 ns (14); T >= T_max(n): 7-13 ns.

Design of the data path (why the table is one array argument)
-------------------------------------------------------------
numba freezes global arrays into compiled code only below 1 MB; the table (2.1 MB) would
become a "dynamic global", which makes the function -- and every cached kernel calling
it -- uncacheable, and frozen copies would be re-embedded in every kernel's object code
and could go stale in numba's cache after a table change.  Passed as an argument, the
table is plain run-time data: kernels stay cacheable, nothing is embedded, and a
regenerated table takes effect without clearing any cache.  It is a single flat array
rather than a tuple of arrays because unpacking a tuple costs ~50 ns per call of
reference counting in numba.  ``read_rys_npz`` checks the file's SHA-256 entry,
generator version and layout (MAX_NROOTS, degree) against this module.
"""

import functools
import hashlib
import os

import numba
import numpy as np

MAX_NROOTS = 14  # largest supported root count (the table must match)
GENERATOR_VERSION = "1"  # tools/make_rys_tables.py version the table must come from
_NC = 14  # Chebyshev coefficients per series (degree 13; table must match)
_TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "rys_tables.npz")


def read_rys_npz(path=_TABLE_PATH):
    """Read and verify the npz; return a dict of numpy arrays (see tools/make_rys_tables.py).

    Keys: ``coef`` (flat float64; per n a block (nint[n], 2n, _NC), roots' series first),
    ``offsets`` (int64 (MAX_NROOTS+2,), start of each n's block), ``nint`` (int64, intervals
    per n), ``tmax`` (float64, T_max(n) = nint[n] * width), ``width``, ``degree``,
    ``asym_u``/``asym_w`` ((MAX_NROOTS+1, MAX_NROOTS) float64, row n = v_i, lambda_i),
    plus ``header``, ``generator_version``, ``dps``, ``sha256``, ``tail``.
    Raises RuntimeError when the content or layout does not match this module.
    """
    with np.load(path) as z:
        tab = {k: z[k] for k in z.files}
    digest = hashlib.sha256()
    for key in ("tmax", "nint", "offsets", "coef", "asym_u", "asym_w"):
        digest.update(np.ascontiguousarray(tab[key]).tobytes())
    if digest.hexdigest() != str(tab["sha256"]):
        raise RuntimeError(f"{path}: content does not match its sha256 entry")
    if str(tab["generator_version"]) != GENERATOR_VERSION:
        raise RuntimeError(f"{path}: generator version {tab['generator_version']} != expected {GENERATOR_VERSION}")
    if int(tab["max_nroots"]) != MAX_NROOTS or int(tab["degree"]) + 1 != _NC:
        raise RuntimeError(f"{path}: layout (max_nroots, degree) does not match rys.py")
    return tab


# Layout of the flat run-time table (float64 1-D; integers stored exactly as floats):
#   [0] width of the T intervals, [1] coefficients per series (_NC), [2] MAX_NROOTS,
#   [_TMAX0 + n]  T_max(n)                      n = 0..MAX_NROOTS (entry 0 unused)
#   [_NINT0 + n]  number of intervals for n
#   [_OFF0 + n]   start of n's coefficient block, relative to _COEF0
#   [_AU0 + n*MAX_NROOTS + i], [_AW0 + ...]   asymptotic v_i, lambda_i of the n-point rule
#   [_COEF0 + ...] per n a block (nint[n], 2n, _NC): interval, series (n roots, then
#                  n weights), Chebyshev index j -- as in the npz file.
_HDR = 4
_TMAX0 = _HDR
_NINT0 = _TMAX0 + MAX_NROOTS + 1
_OFF0 = _NINT0 + MAX_NROOTS + 1
_AU0 = _OFF0 + MAX_NROOTS + 1
_AW0 = _AU0 + (MAX_NROOTS + 1) * MAX_NROOTS
_COEF0 = _AW0 + (MAX_NROOTS + 1) * MAX_NROOTS


@functools.lru_cache(maxsize=1)
def rys_table_array():
    """The run-time table for rys_roots_weights (memoised; read on first use, ~20 ms).

    Returns one read-only float64 1-D array (about 2.1 MB) laid out as described above
    (one array rather than a tuple of arrays: numba then needs no reference counting
    inside rys_roots_weights, which otherwise costs ~50 ns per call).
    """
    tab = read_rys_npz()
    coef = tab["coef"]
    offsets = tab["offsets"]
    nint = tab["nint"]
    flat = np.zeros(_COEF0 + coef.size)
    flat[0] = float(tab["width"])
    flat[1] = _NC
    flat[2] = MAX_NROOTS
    flat[_TMAX0 : _TMAX0 + MAX_NROOTS + 1] = tab["tmax"]
    flat[_NINT0 : _NINT0 + MAX_NROOTS + 1] = nint
    flat[_OFF0 : _OFF0 + MAX_NROOTS + 1] = offsets[: MAX_NROOTS + 1]
    flat[_AU0:_AW0] = tab["asym_u"].ravel()
    flat[_AW0:_COEF0] = tab["asym_w"].ravel()
    flat[_COEF0:] = coef
    flat.setflags(write=False)
    return flat


@numba.njit(cache=True, inline="always")
def _series(c, p, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13):
    """sum_{j=0}^{13} c[p + j] T_j(x) given T_1..T_13 (_NC = 14 is checked at load).

    Summed in groups (ascending j inside a group) to shorten the dependency chain.
    """
    s0 = c[p] + c[p + 1] * t1 + c[p + 2] * t2 + c[p + 3] * t3
    s1 = c[p + 4] * t4 + c[p + 5] * t5 + c[p + 6] * t6 + c[p + 7] * t7
    s2 = c[p + 8] * t8 + c[p + 9] * t9 + c[p + 10] * t10
    s3 = c[p + 11] * t11 + c[p + 12] * t12 + c[p + 13] * t13
    return s0 + (s1 + (s2 + s3))


@numba.njit(cache=True)
def rys_roots_weights(nroots, T, roots, weights, table):
    """Fill roots[:nroots] (u_i, ascending) and weights[:nroots]; see module docstring."""
    n = nroots
    if n < 1 or n > MAX_NROOTS:
        raise ValueError("rys_roots_weights: nroots out of range 1..MAX_NROOTS")
    if T >= table[_TMAX0 + n]:
        # half-range Hermite asymptote: u_i = v_i / T, w_i = lambda_i / sqrt(T)
        inv_t = 1.0 / T
        inv_sqrt_t = np.sqrt(inv_t)
        a = _AU0 + n * MAX_NROOTS
        b = _AW0 + n * MAX_NROOTS
        for i in range(n):
            roots[i] = table[a + i] * inv_t
            weights[i] = table[b + i] * inv_sqrt_t
    else:
        width = table[0]
        inv_width = 1.0 / width
        k = int(T * inv_width)
        kmax = int(table[_NINT0 + n]) - 1
        if k > kmax:
            k = kmax
        elif k < 0:
            k = 0
        # local coordinate x in [-1, 1] on the interval [k width, (k+1) width)
        x = 2.0 * (T - k * width) * inv_width - 1.0
        # Chebyshev polynomials T_j(x), j = 1..13, kept in registers, from
        # T_2j = 2 T_j^2 - 1 and T_(2j+1) = 2 T_j T_(j+1) - x (a dependency chain of depth
        # 6 instead of 12 for the three-term recurrence; equally stable on [-1, 1])
        t1 = x
        t2 = 2.0 * x * x - 1.0
        t3 = 2.0 * t1 * t2 - x
        t4 = 2.0 * t2 * t2 - 1.0
        t5 = 2.0 * t2 * t3 - x
        t6 = 2.0 * t3 * t3 - 1.0
        t7 = 2.0 * t3 * t4 - x
        t8 = 2.0 * t4 * t4 - 1.0
        t9 = 2.0 * t4 * t5 - x
        t10 = 2.0 * t5 * t5 - 1.0
        t11 = 2.0 * t5 * t6 - x
        t12 = 2.0 * t6 * t6 - 1.0
        t13 = 2.0 * t6 * t7 - x
        base = _COEF0 + int(table[_OFF0 + n]) + k * (2 * n * _NC)
        for i in range(n):
            roots[i] = _series(table, base + i * _NC, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13)
        base += n * _NC
        for i in range(n):
            weights[i] = _series(table, base + i * _NC, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13)


def roots_weights(nroots, T):
    """Plain-Python convenience: (roots, weights) float64 arrays of length nroots."""
    nroots = int(nroots)
    T = float(T)
    if not 1 <= nroots <= MAX_NROOTS:
        raise ValueError(f"nroots={nroots} outside 1..{MAX_NROOTS}")
    if not T >= 0.0:
        raise ValueError(f"T={T} must be >= 0")
    r = np.empty(nroots)
    w = np.empty(nroots)
    rys_roots_weights(nroots, T, r, w, rys_table_array())
    return r, w
