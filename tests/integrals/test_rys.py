"""Rys roots/weights (hartree.integrals.rys) against an mpmath reference.

The reference is tools/make_rys_tables.py (100-digit Chebyshev algorithm on the Boys
moments + Newton-refined Gauss nodes); the moment test uses mpmath's incomplete gamma
function directly, independent of that pipeline.
"""

import importlib.util
import pathlib

import mpmath as mp
import numba
import numpy as np
import pytest

from hartree.integrals import rys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RTOL = 1e-13  # acceptance: relative error of every root and weight


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_rys_tables", ROOT / "tools" / "make_rys_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tool = _load_tool()
TABLE = rys.rys_table_array()
TMAX = rys.read_rys_npz()["tmax"]
WIDTH = float(rys.read_rys_npz()["width"])


def _max_rel_err(T, nmax=rys.MAX_NROOTS):
    """Max relative errors (roots, weights) per n = 1..nmax at one T (exact mpmath rule)."""
    rules = tool.all_rules(mp.mpf(float(T)), nmax)
    out = []
    for n in range(1, nmax + 1):
        r, w = rys.roots_weights(n, T)
        x, wx = rules[n - 1]
        er = max(abs(float((r[i] - x[i]) / x[i])) for i in range(n))
        ew = max(abs(float((w[i] - wx[i]) / wx[i])) for i in range(n))
        out.append((n, er, ew))
    return out


def _check(Ts):
    worst = {}
    for T in Ts:
        for n, er, ew in _max_rel_err(T):
            assert er <= RTOL and ew <= RTOL, (n, T, er, ew)
            worst[n] = max(worst.get(n, 0.0), er, ew)
    return worst


def test_max_nroots():
    assert rys.MAX_NROOTS >= 13
    assert len(TMAX) == rys.MAX_NROOTS + 1


def test_random_sample_against_mpmath():
    rng = np.random.default_rng(20261121)
    tmax = TMAX[rys.MAX_NROOTS]
    Ts = np.concatenate(
        [
            [0.0, 1e-300, 1e-12],
            rng.uniform(0.0, 1e-6, 3),
            rng.uniform(0.0, 1.0, 6),
            rng.uniform(1.0, 50.0, 14),
            rng.uniform(50.0, tmax, 10),
            rng.uniform(TMAX[1], 2 * tmax, 6),  # some n on the asymptote, some not
            [1e3, 1e6, 1e12, 1e30],
        ]
    )
    worst = _check(Ts)
    assert set(worst) == set(range(1, rys.MAX_NROOTS + 1))


def test_interval_edges_and_tmax():
    """T exactly on interval edges, just below edges, and at / just below every T_max(n)."""
    nedge = int(round(TMAX[rys.MAX_NROOTS] / WIDTH))
    edges = [k * WIDTH for k in list(range(0, 12)) + list(range(12, nedge + 1, 7))]
    below = [np.nextafter(k * WIDTH, 0.0) for k in (1, 2, 5, 17, 60)]
    tmaxes = set(TMAX[1:]) | {np.nextafter(t, 0.0) for t in TMAX[1:]}
    _check(sorted(set(edges) | set(below) | tmaxes))


def test_moments_equal_boys_function():
    """sum_i w_i u_i^m = F_m(T) = gamma(m+1/2, T) / (2 T^(m+1/2)), m < 2n (rtol 1e-12)."""
    mp.mp.dps = 40
    for T in (0.0, 3e-7, 0.37, 4.2, 17.5, 61.3, 107.9, 250.0, 5e4):
        for n in range(1, rys.MAX_NROOTS + 1):
            r, w = rys.roots_weights(n, T)
            for m in range(2 * n):
                if T == 0.0:
                    F = mp.mpf(1) / (2 * m + 1)
                else:
                    a = mp.mpf(m) + mp.mpf(1) / 2
                    F = mp.gammainc(a, 0, T) / (2 * mp.power(mp.mpf(T), a))
                got = float(np.sum(w * r**m))
                assert abs(got - F) <= 1e-12 * F, (n, T, m, got, F)


def test_rule_shape_and_ordering():
    for n in range(1, rys.MAX_NROOTS + 1):
        for T in (0.0, 0.5, 13.0, TMAX[n], 1e5):
            r, w = rys.roots_weights(n, T)
            assert np.all(np.diff(r) > 0) and r[0] > 0 and r[-1] < 1
            assert np.all(w > 0)
    r, w = rys.roots_weights(1, 0.0)
    assert r[0] == pytest.approx(1 / 3, rel=1e-15) and w[0] == pytest.approx(1.0, rel=1e-15)


@numba.njit(cache=True)
def _kernel(Ts, n, table):
    """A caller like the ERI kernels: preallocated scratch, rule per T inside njit."""
    r = np.empty(rys.MAX_NROOTS)
    w = np.empty(rys.MAX_NROOTS)
    out = np.empty((Ts.size, 2, n))
    for k in range(Ts.size):
        rys.rys_roots_weights(n, Ts[k], r, w, table)
        out[k, 0] = r[:n]
        out[k, 1] = w[:n]
    return out


def test_callable_from_njit_without_python():
    assert TABLE is rys.rys_table_array() and not TABLE.flags.writeable
    Ts = np.array([0.0, 2.5, 80.0, 1e4])
    out = _kernel(Ts, 5, TABLE)
    for k, T in enumerate(Ts):
        r, w = rys.roots_weights(5, T)
        np.testing.assert_array_equal(out[k, 0], r)
        np.testing.assert_array_equal(out[k, 1], w)


def test_bad_arguments():
    with pytest.raises(ValueError):
        rys.roots_weights(0, 1.0)
    with pytest.raises(ValueError):
        rys.roots_weights(rys.MAX_NROOTS + 1, 1.0)
    with pytest.raises(ValueError):
        rys.roots_weights(2, -1.0)
    r = np.empty(rys.MAX_NROOTS + 1)
    with pytest.raises(ValueError):
        rys.rys_roots_weights(rys.MAX_NROOTS + 1, 1.0, r, r.copy(), TABLE)


def test_table_header_and_version():
    tab = rys.read_rys_npz()  # also verifies the sha256 entry against the content
    assert "generated by tools/make_rys_tables.py" in str(tab["header"])
    assert str(tab["generator_version"]) == tool.GENERATOR_VERSION == rys.GENERATOR_VERSION
    assert int(tab["max_nroots"]) == tool.MAX_NROOTS == rys.MAX_NROOTS
    assert int(tab["degree"]) == tool.DEG and float(tab["width"]) == tool.H
    assert int(tab["dps"]) == tool.DPS
    np.testing.assert_array_equal(tab["tmax"][1:], tab["nint"][1:] * tab["width"])
    assert np.all(np.diff(tab["tmax"][1:]) > 0)
    assert float(np.max(tab["tail"])) < 1e-15  # fits converged to rounding level
    assert (ROOT / "hartree" / "integrals" / "data" / "rys_tables.npz").stat().st_size < 5e6


def test_asymptote_table_matches_hermite():
    """Stored large-T constants = half-range Gauss-Hermite rule recomputed by the tool."""
    tab = rys.read_rys_npz()
    asym = tool.asymptotic_rules(rys.MAX_NROOTS)
    for n in range(1, rys.MAX_NROOTS + 1):
        v, lam = asym[n - 1]
        np.testing.assert_allclose(tab["asym_u"][n, :n], [float(t) for t in v], rtol=1e-15)
        np.testing.assert_allclose(tab["asym_w"][n, :n], [float(t) for t in lam], rtol=1e-15)
    # v_i = x_i^2 with x_i the positive zeros of the Hermite polynomial H_2n
    for n in (1, 4, 9):
        x = np.polynomial.hermite.hermgauss(2 * n)
        pos = x[0] > 0
        np.testing.assert_allclose(tab["asym_u"][n, :n], x[0][pos] ** 2, rtol=1e-12)
        np.testing.assert_allclose(tab["asym_w"][n, :n], x[1][pos], rtol=1e-12)
