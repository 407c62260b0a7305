"""mgemm against products in extended precision (np.longdouble), with the advertised bounds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hartree.errors import InputError
from hartree.linalg import PRECISIONS, error_bound, mgemm


def _matrix(rng, shape, kind):
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


def _exact(a, b):
    return (a.astype(np.longdouble) @ b.astype(np.longdouble))


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 33), n=st.integers(1, 33), k=st.integers(1, 70),
       kind=st.sampled_from(["random", "ill", "salted"]),
       precision=st.sampled_from(PRECISIONS), transa=st.booleans(), transb=st.booleans(),
       tiny_budget=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_within_advertised_bound(m, n, k, kind, precision, transa, transb, tiny_budget, seed):
    rng = np.random.default_rng(seed)
    a = _matrix(rng, (m, k), kind)
    b = _matrix(rng, (k, n), kind)
    a_in = np.ascontiguousarray(a.T) if transa else a
    b_in = np.ascontiguousarray(b.T) if transb else b
    budget = 600 if tiny_budget else None
    c, info = mgemm(a_in, b_in, transa=transa, transb=transb, precision=precision,
                    memory_budget=budget, return_info=True)
    assert c.shape == (m, n) and c.dtype == np.float64
    assert info.shape == (m, n, k) and info.precision == precision
    if tiny_budget and 8 * (m * k + k * n + m * n) > budget:   # cannot fit: must cleave
        assert info.tiles > 1
    err = np.abs(c - _exact(a, b)).astype(np.float64)
    bound = error_bound(a, b, precision)
    assert np.all(err <= bound + 1e-300), float(np.max(err / np.maximum(bound, 1e-300)))


@pytest.mark.parametrize("precision", PRECISIONS)
def test_cleaving_forced_by_tiny_budget(precision):
    rng = np.random.default_rng(7)
    a, b = _matrix(rng, (97, 131), "salted"), _matrix(rng, (131, 45), "salted")
    c, info = mgemm(a, b, precision=precision, memory_budget=4096, return_info=True)
    mt, nt, kt = info.tile
    assert info.tiles == -(-97 // mt) * -(-45 // nt) * -(-131 // kt) > 8
    assert np.all(np.abs(c - _exact(a, b)) <= error_bound(a, b, precision))


def test_salted_mixed_beats_fp32_and_ozaki_reaches_fp64():
    """The seed's claim (heterogeneous split removes the error of large elements) and the
    split scheme's: RMS error against the exact product, N = 160 salted matrices."""
    rng = np.random.default_rng(3)
    a, b = _matrix(rng, (160, 160), "salted"), _matrix(rng, (160, 160), "salted")
    ref = _exact(a, b)

    def rms(p, **kw):
        c = mgemm(a, b, precision=p, **kw)
        return float(np.sqrt(np.mean((c - ref).astype(float) ** 2)))

    e64, e32, emix = rms("fp64"), rms("fp32"), rms("mixed")
    assert emix < e32 / 30
    assert e32 > 1e3 * e64
    # row/column scaling by the largest element (1e4 ~ 2^13) costs ~13 bits for the
    # unit-size elements: 9 slices of 8 bits restore FP64 accuracy, 7 do not quite
    assert rms("ozaki", slices=9) < 4 * e64
    assert rms("ozaki", slices=7) > rms("ozaki", slices=9)
    a, b = _matrix(rng, (160, 160), "random"), _matrix(rng, (160, 160), "random")
    ref = _exact(a, b)
    assert rms("ozaki") < 4 * rms("fp64")


def test_bitwise_reports_three_fp32_products_per_tile():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((20, 30)), rng.standard_normal((30, 10))
    _, info = mgemm(a, b, precision="bitwise", upper_bits=10, memory_budget=3000,
                    return_info=True)
    assert info.low_precision_gemms == 3 * info.tiles and info.upper_bits == 10


def test_mixed_reports_the_large_elements():
    a = np.ones((4, 5))
    a[1, 2] = 1e4
    b = np.eye(5)
    c, info = mgemm(a, b, precision="mixed", cutoff=10.0, return_info=True)
    assert info.n_large == (1, 0) and info.cutoff == (10.0, 10.0)
    np.testing.assert_array_equal(c, a)        # exact: small ones in FP32 and 1e4 in FP64


def test_transposes_match_numpy_exactly_in_fp64():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 9)), rng.standard_normal((7, 6))
    np.testing.assert_allclose(mgemm(a, b, transa=True, transb=True), a.T @ b.T,
                               rtol=0, atol=1e-13)


def test_user_errors():
    a = np.ones((3, 4))
    with pytest.raises(InputError, match="precision"):
        mgemm(a, a.T, precision="fp8")
    with pytest.raises(InputError, match="do not match"):
        mgemm(a, a)
    with pytest.raises(InputError, match="too small"):
        mgemm(a, a.T, memory_budget=8)
    with pytest.raises(InputError, match="2-D"):
        mgemm(np.ones(3), a)
    with pytest.raises(InputError, match="slice_bits"):
        mgemm(a, a.T, precision="ozaki", slice_bits=12)


def test_auto_policy_meets_the_accuracy_target_and_says_why():
    rng = np.random.default_rng(4)
    a, b = rng.uniform(-1, 1, (40, 300)), rng.uniform(-1, 1, (300, 30))
    ref = _exact(a, b)
    absab = np.abs(a) @ np.abs(b)
    for target, expected in ((1e-4, "fp32"), (1e-9, "fp64")):
        c, info = mgemm(a, b, precision="auto", accuracy=target, return_info=True)
        assert info.precision == expected and info.notes[0].startswith("auto: ")
        assert np.all(np.abs(c - ref) <= target * absab)
    with pytest.raises(InputError, match="accuracy"):
        mgemm(a, b, precision="auto")
