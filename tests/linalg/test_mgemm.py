"""mgemm against products in extended precision (np.longdouble), with the advertised bounds
(CPU; the GPU side is tests/linalg/test_mgemm_gpu.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hartree.errors import InputError
from hartree.linalg import PRECISIONS, choose_mixed, choose_precision, error_bound, mgemm, ozaki
from hartree.linalg.gemm_schemes import round_tf32
from tests.linalg.matrices import exact_product, make_matrix


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 33),
    n=st.integers(1, 33),
    k=st.integers(1, 70),
    kind=st.sampled_from(["random", "ill", "salted"]),
    precision=st.sampled_from(PRECISIONS),
    transa=st.booleans(),
    transb=st.booleans(),
    tiny_budget=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_within_advertised_bound(m, n, k, kind, precision, transa, transb, tiny_budget, seed):
    rng = np.random.default_rng(seed)
    a = make_matrix(rng, (m, k), kind)
    b = make_matrix(rng, (k, n), kind)
    a_in = np.ascontiguousarray(a.T) if transa else a
    b_in = np.ascontiguousarray(b.T) if transb else b
    budget = 600 if tiny_budget else None
    c, info = mgemm(
        a_in, b_in, transa=transa, transb=transb, precision=precision, memory_budget=budget, return_info=True
    )
    assert c.shape == (m, n) and c.dtype == np.float64
    assert info.shape == (m, n, k) and info.requested == precision
    assert info.precision == precision or precision == "mixed"
    if tiny_budget and 8 * (m * k + k * n + m * n) > budget:  # cannot fit: must cleave
        assert info.tiles > 1
    err = np.abs(c - exact_product(a, b)).astype(np.float64)
    bound = error_bound(a, b, info.precision, slices=info.slices)
    assert np.all(err <= bound + 1e-300), float(np.max(err / np.maximum(bound, 1e-300)))


@pytest.mark.parametrize("precision", PRECISIONS)
def test_cleaving_forced_by_tiny_budget(precision):
    rng = np.random.default_rng(7)
    a, b = make_matrix(rng, (97, 131), "salted"), make_matrix(rng, (131, 45), "salted")
    c, info = mgemm(a, b, precision=precision, memory_budget=4096, return_info=True)
    mt, nt, kt = info.tile
    assert info.tiles == -(-97 // mt) * -(-45 // nt) * -(-131 // kt) > 8
    assert np.all(np.abs(c - exact_product(a, b)) <= error_bound(a, b, info.precision, slices=info.slices))


def test_salted_heterogeneous_beats_fp32_and_ozaki_reaches_fp64():
    """The seed's claim (heterogeneous split removes the error of large elements) and the
    split scheme's: RMS error against the exact product, N = 160 salted matrices."""
    rng = np.random.default_rng(3)
    a, b = make_matrix(rng, (160, 160), "salted"), make_matrix(rng, (160, 160), "salted")
    ref = exact_product(a, b)

    def rms(p, **kw):
        c = mgemm(a, b, precision=p, **kw)
        return float(np.sqrt(np.mean((c - ref).astype(float) ** 2)))

    e64, e32, ehet = rms("fp64"), rms("fp32"), rms("heterogeneous")
    assert ehet < e32 / 30
    assert e32 > 1e3 * e64
    # row/column scaling by the largest element (1e4 ~ 2^13) costs ~13 bits for the
    # unit-size elements: 9 slices of 7 bits restore FP64 accuracy, 7 do not
    assert rms("ozaki", slices=9) < 4 * e64
    assert rms("ozaki", slices=7) > 10 * rms("ozaki", slices=9)
    _, info = mgemm(a, b, precision="ozaki", return_info=True)  # default: FP64 level
    assert info.slices >= 9 and rms("ozaki") < 4 * e64
    a, b = make_matrix(rng, (160, 160), "random"), make_matrix(rng, (160, 160), "random")
    ref = exact_product(a, b)
    assert rms("ozaki") < 4 * rms("fp64")


def test_bitwise_reports_three_fp32_products_per_tile():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((20, 30)), rng.standard_normal((30, 10))
    _, info = mgemm(a, b, precision="bitwise", upper_bits=10, memory_budget=3000, return_info=True)
    assert info.low_precision_gemms == 3 * info.tiles and info.upper_bits == 10


def test_heterogeneous_reports_the_large_elements():
    a = np.ones((4, 5))
    a[1, 2] = 1e4
    b = np.eye(5)
    c, info = mgemm(a, b, precision="heterogeneous", cutoff=10.0, return_info=True)
    assert info.n_large == (1, 0) and info.cutoff == (10.0, 10.0)
    np.testing.assert_array_equal(c, a)  # exact: small ones in FP32 and 1e4 in FP64


def test_transposes_match_numpy_exactly_in_fp64():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 9)), rng.standard_normal((7, 6))
    np.testing.assert_allclose(mgemm(a, b, transa=True, transb=True), a.T @ b.T, rtol=0, atol=1e-13)


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
    with pytest.raises(InputError, match="slices"):
        mgemm(a, a.T, precision="ozaki", slices=13)
    with pytest.raises(InputError, match="device"):
        mgemm(a, a.T, device="tpu")


def test_auto_policy_meets_the_accuracy_target_and_says_why():
    rng = np.random.default_rng(4)
    a, b = rng.uniform(-1, 1, (40, 300)), rng.uniform(-1, 1, (300, 30))
    ref = exact_product(a, b)
    absab = np.abs(a) @ np.abs(b)
    for target, expected in ((1e-4, "fp32"), (1e-9, "fp64")):
        c, info = mgemm(a, b, precision="auto", accuracy=target, return_info=True)
        assert info.precision == expected and info.notes[0].startswith("auto: ")
        assert np.all(np.abs(c - ref) <= target * absab)
    with pytest.raises(InputError, match="accuracy"):
        mgemm(a, b, precision="auto")


def test_ozaki_slices_reconstruct_the_rows_exactly():
    """eq. (1): sum_s Q_s 2^(-7 s) 2^(e_i) equals x up to the remainder bound 2^(-7 S - 1)
    2^e_i (slices rounded to nearest), |Q_1| <= 127 and |Q_s| <= 64 after (fits INT8), and
    the slicing is exact: S = 8 of 7 bits recover 53-bit values."""
    rng = np.random.default_rng(5)
    x = make_matrix(rng, (30, 50), "ill")
    x[3] = 0.0
    x[4, 7] = 2.0**40  # a power of two as the row maximum
    x[5, 2] = -(1.0 - 2.0**-20)  # a row maximum just below a power of two: e bumped
    for s in (1, 3, 8):
        q, inv = ozaki.slice_rows(np, x, s)
        assert np.all(np.abs(q[:, 0]) <= 127) and np.all(np.abs(q[:, 1:]) <= 64)
        assert np.all(q == np.trunc(q))
        w = 2.0 ** (-7.0 * np.arange(1, s + 1))
        rec = np.einsum("isk,s->ik", q, w) / inv
        assert np.all(np.abs(rec - x) <= 2.0 ** (-7 * s - 1) / inv)
    y = rng.uniform(0.5, 1.0, (20, 30)) * rng.choice([-1.0, 1.0], (20, 30))
    q, inv = ozaki.slice_rows(np, y, 8)  # 53 significant bits within 56
    np.testing.assert_array_equal(np.einsum("isk,s->ik", q, 2.0 ** (-7.0 * np.arange(1, 9))) / inv, y)
    qr, _ = ozaki.slice_rows(np, x, 3, reverse=True)
    np.testing.assert_array_equal(qr[:, ::-1], ozaki.slice_rows(np, x, 3)[0])


def test_ozaki_slices_are_unbiased():
    """Rounded slices leave remainders of both signs: for positive data the mean remainder is
    ~0 (truncation would make it ~ +half the slice unit), so sums of squares are unbiased."""
    rng = np.random.default_rng(8)
    x = rng.uniform(0.01, 1.0, (200, 300))
    q, inv = ozaki.slice_rows(np, x, 2)
    rem = x * inv - np.einsum("isk,s->ik", q, 2.0 ** (-7.0 * np.arange(1, 3)))
    unit = 2.0**-14
    assert abs(rem.mean()) < 0.02 * unit and 0.2 * unit < np.abs(rem).mean() < 0.3 * unit
    c = mgemm(x, x, transb=True, precision="ozaki", slices=2)
    ref = x @ x.T
    rel = (c - ref) / ref
    assert abs(rel.mean()) < 0.1 * np.sqrt(np.mean(rel**2))  # no systematic sign


def test_ozaki_error_falls_by_2_to_the_7_per_slice():
    rng = np.random.default_rng(6)
    a, b = make_matrix(rng, (60, 200), "random"), make_matrix(rng, (200, 50), "random")
    ref = exact_product(a, b)
    typical = float(np.mean(np.abs(a) @ np.abs(b)))
    errs = []
    for s in (2, 3, 4, 5):
        c, info = mgemm(a, b, precision="ozaki", slices=s, return_info=True)
        errs.append(float(np.sqrt(np.mean((c - ref).astype(float) ** 2))))
        # the a-priori estimate is an upper estimate, within two orders of magnitude
        assert errs[-1] / typical < info.estimated_error < 100 * errs[-1] / typical
    for e1, e2 in zip(errs, errs[1:]):
        assert 2.0**5 < e1 / e2 < 2.0**9


def test_tf32_rounding_matches_a_slow_reference():
    """Round to nearest even at 10 explicit mantissa bits, checked against frexp arithmetic."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(2000) * 10.0 ** rng.uniform(-8, 8, 2000)).astype(np.float32)
    x[:4] = [1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, -(1.0 + 2.0**-11), 0.0]  # ties
    got = round_tf32(x.copy())
    f, e = np.frexp(x.astype(np.float64))  # x = f 2^e, 0.5 <= |f| < 1
    ref = np.ldexp(np.round(f * 2.0**11), e - 11)  # np.round: half to even
    np.testing.assert_array_equal(got.astype(np.float64), ref)
    assert got[0] == 1.0 and got[1] == 1.0 + 2.0**-9


def test_gpu_policy_is_stated_and_monotone():
    """choose_precision on the GPU: TF32 for loose targets, the INT8 split where the cost
    model (measured rates) predicts it faster than DGEMM, FP64 for small products or
    FP64-level targets; the reason names the prediction."""
    from hartree.linalg.gemm_precision import dgemm_seconds, ozaki_seconds

    assert choose_precision(4096, 4096, 4096, 1e-2, "gpu")[0] == "tf32"
    p, why = choose_precision(8192, 8192, 8192, 1e-9, "gpu")
    assert p == "ozaki" and "slices" in why and "DGEMM" in why
    assert choose_precision(8192, 8192, 2048, 1e-8, "gpu")[0] == "ozaki"
    assert choose_precision(100, 4096, 4096, 1e-9, "gpu")[0] == "fp64"
    assert choose_precision(2048, 2048, 2048, 1e-8, "gpu")[0] == "fp64"
    assert choose_precision(8192, 8192, 8192, 1e-16, "gpu")[0] == "fp64"
    assert choose_precision(8192, 8192, 8192, 1e-9, "cpu")[0] == "fp64"
    assert ozaki.slices_for(1e-9, 4096) <= ozaki.slices_for(1e-12, 4096)
    # "mixed": FP32-level accuracy, fastest predicted scheme, fp64 for small products
    p, s, why = choose_mixed(8192, 8192, 2048, "gpu", (2.0, 2.0))
    assert p == "ozaki" and s == 4 and "predicted" in why
    assert choose_mixed(8192, 8192, 2048, "gpu", (30.0, 30.0))[0] == "fp64"  # S=5 too slow
    assert choose_mixed(2048, 2048, 2048, "gpu")[0] == "fp64"
    assert choose_mixed(8192, 8192, 8192, "cpu")[0] == "fp64"
    # the model reproduces the H200 measurements it was fitted to within 15%
    for m, n, k, s, measured in (
        (8192, 8192, 8192, 4, 9.58e-3),
        (8192, 8192, 2048, 3, 2.20e-3),
        (2048, 2048, 2048, 3, 0.465e-3),
    ):
        assert abs(ozaki_seconds(m, n, k, s) / measured - 1) < 0.15
    assert abs(dgemm_seconds(8192, 8192, 2048) / 4.42e-3 - 1) < 0.15


def test_mixed_resolves_by_policy_and_reports_it():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((30, 40)), rng.standard_normal((50, 40))
    c, info = mgemm(a, b, transb=True, precision="mixed", return_info=True)
    assert info.requested == "mixed" and info.precision == "fp64"
    assert info.notes[0].startswith("mixed: ") and info.estimated_error > 0
    np.testing.assert_allclose(c, a @ b.T, rtol=0, atol=1e-12)


def test_device_gpu_without_a_gpu_is_a_clear_error():
    from hartree.device.selection import gpu_available
    from hartree.errors import DeviceError

    if gpu_available():
        pytest.skip("a GPU is present (the GPU tests cover device='gpu')")
    with pytest.raises(DeviceError, match="GPU"):
        mgemm(np.ones((2, 3)), np.ones((3, 2)), device="gpu")


def test_bitwise_enhancement_for_elementwise_products():
    """Seed fig. 2 at N = 1: with 12 upper bits the products A^u B^u are exact and the
    remaining terms are 2^-12 smaller, so the error falls ~1000x below SGEMM's on [1, 2]."""
    rng = np.random.default_rng(10)
    a = np.diag(rng.uniform(1.0, 2.0, 400))
    b = np.diag(rng.uniform(1.0, 2.0, 400))
    ref = np.diag(a) * np.diag(b)
    e32 = np.sqrt(np.mean((np.diag(mgemm(a, b, precision="fp32")) - ref) ** 2))
    ebw = np.sqrt(np.mean((np.diag(mgemm(a, b, precision="bitwise", upper_bits=12)) - ref) ** 2))
    assert e32 / ebw > 300
