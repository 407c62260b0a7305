"""mgemm on the GPU (cupy + cuBLAS): every scheme within its advertised bound against an
extended-precision product, the INT8 Ozaki split bit-for-bit equal to the CPU reference,
and the streamed cleaver for host operands.  Skipped without cupy and a CUDA device."""

import numpy as np
import pytest

from hartree.linalg import PRECISIONS, error_bound, mgemm
from tests.linalg.matrices import exact_product, make_matrix

pytestmark = pytest.mark.gpu  # skipped without a device (tests/conftest.py)


def test_int8_ozaki_equals_cpu_reference_bit_for_bit():
    """Same slices, exact INT32 vs exact FP64 integer products, same FP64 summation order."""
    import cupy as cp

    rng = np.random.default_rng(12)
    for kind in ("random", "salted", "ill"):
        a, b = make_matrix(rng, (130, 517), kind), make_matrix(rng, (517, 77), kind)
        for s in (1, 3, 7):
            c_cpu = mgemm(a, b, precision="ozaki", slices=s)
            c_gpu = mgemm(cp.asarray(a), cp.asarray(b), precision="ozaki", slices=s)
            np.testing.assert_array_equal(c_gpu.get(), c_cpu)


def test_fused_row_statistics_match_numpy():
    import cupy as cp

    from hartree.linalg import mgemm_gpu, ozaki

    rng = np.random.default_rng(18)
    x = make_matrix(rng, (37, 1000), "salted")
    x[5] = 0.0
    amax, asum = mgemm_gpu.row_absmax_sum(cp.asarray(x))
    np.testing.assert_array_equal(amax.get(), np.abs(x).max(axis=1))
    np.testing.assert_allclose(asum.get(), np.abs(x).sum(axis=1), rtol=1e-13)
    assert abs(mgemm_gpu.dynamic_range(cp.asarray(x)) / ozaki.dynamic_range(np, x) - 1) < 1e-12


def test_tf32_really_runs_on_tensor_cores_and_fp32_does_not():
    """TF32 keeps 10 mantissa bits: its error is ~2^13 times FP32's (same data)."""
    import cupy as cp

    rng = np.random.default_rng(13)
    a, b = rng.uniform(-1, 1, (256, 256)), rng.uniform(-1, 1, (256, 256))
    ref = exact_product(a, b)
    e = {
        p: float(np.sqrt(np.mean((mgemm(cp.asarray(a), cp.asarray(b), precision=p).get() - ref).astype(float) ** 2)))
        for p in ("fp32", "tf32")
    }
    assert e["tf32"] > 100 * e["fp32"]
    c32 = mgemm(
        cp.asarray(a, dtype=cp.float32), cp.asarray(b, dtype=cp.float32), precision="tf32"
    )  # float32 operands are taken as they are
    assert c32.dtype == cp.float64


@pytest.mark.parametrize("precision", ["fp64", "ozaki", "heterogeneous", "tf32"])
def test_streamed_cleaver_for_host_operands(precision):
    """numpy operands, device='gpu', a tiny budget: many tiles over two streams."""
    rng = np.random.default_rng(14)
    a, b = make_matrix(rng, (300, 257), "salted"), make_matrix(rng, (190, 257), "salted")
    c, info = mgemm(a, b, transb=True, precision=precision, device="gpu", memory_budget=200_000, return_info=True)
    assert isinstance(c, np.ndarray) and info.tiles > 4 and info.streams == 2
    assert info.transfer_bytes >= 8 * (a.size + b.size + c.size)
    bound = error_bound(a, b.T, info.precision, slices=info.slices)
    assert np.all(np.abs(c - exact_product(a, b.T)).astype(float) <= bound)
    if precision == "ozaki":  # same tiles on the CPU: identical numbers
        c_cpu = mgemm(a, b, transb=True, precision=precision, slices=info.slices, memory_budget=200_000)
        np.testing.assert_array_equal(c, c_cpu)


def test_device_cleaving_of_cupy_operands_and_k_limit():
    """cupy operands with a budget are tiled on the device; a long k is cut so that the INT32
    diagonal products stay exact (S k <= 133143)."""
    import cupy as cp

    rng = np.random.default_rng(15)
    a, b = rng.uniform(-1, 1, (8, 40000)), rng.uniform(-1, 1, (40000, 8))
    c, info = mgemm(cp.asarray(a), cp.asarray(b), precision="ozaki", slices=8, return_info=True)
    assert info.tile[2] * 8 <= 133143 and info.tiles >= 3
    assert np.all(np.abs(c.get() - exact_product(a, b)).astype(float) <= error_bound(a, b, "ozaki", slices=8))
    c, info = mgemm(cp.asarray(a[:, :300]), cp.asarray(b[:300]), precision="fp64", memory_budget=2000, return_info=True)
    assert info.tiles > 4
    np.testing.assert_allclose(c.get(), a[:, :300] @ b[:300], rtol=0, atol=1e-12)


def test_mixed_on_a_large_product_is_fast_and_at_least_as_accurate_as_fp32():
    import cupy as cp

    a = cp.random.default_rng(16).uniform(-1, 1, (8192, 2048))
    b = cp.random.default_rng(17).uniform(-1, 1, (8192, 2048))
    c, info = mgemm(a, b, transb=True, precision="mixed", return_info=True)
    assert info.precision in ("ozaki", "tf32x3") and info.requested == "mixed"
    assert "predicted" in info.notes[0]
    ref = a @ b.T
    scale = cp.mean(cp.abs(a) @ cp.abs(b.T))

    def rel(x):
        return float(cp.sqrt(cp.mean((x - ref) ** 2)) / scale)

    assert rel(c) < rel(mgemm(a, b, transb=True, precision="fp32"))
    assert rel(c) < info.estimated_error


@pytest.mark.parametrize("kind", ["random", "ill", "salted"])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_gpu_schemes_within_bound(precision, kind):
    import cupy as cp

    rng = np.random.default_rng(11)
    for (m, n, k), ta, tb in (((70, 45, 333), False, True), ((1, 5, 1), True, True)):
        a, b = make_matrix(rng, (m, k), kind), make_matrix(rng, (k, n), kind)
        a_in = np.ascontiguousarray(a.T) if ta else a
        b_in = np.ascontiguousarray(b.T) if tb else b
        c, info = mgemm(cp.asarray(a_in), cp.asarray(b_in), transa=ta, transb=tb, precision=precision, return_info=True)
        assert isinstance(c, cp.ndarray) and c.dtype == cp.float64 and c.shape == (m, n)
        assert info.device == "gpu (cupy)"
        err = np.abs(c.get() - exact_product(a, b)).astype(np.float64)
        bound = error_bound(a, b, info.precision, slices=info.slices)
        assert np.all(err <= bound + 1e-300), float(np.max(err / np.maximum(bound, 1e-300)))
