"""Pair data ordered on the device (hartree.gpu.device_pairs): the gathered records equal the
host reference (pairs.sorted_by of the build-order pairs with the same Schwarz factors, in
numpy) array for array, dtypes included; a replica builder reproduces them from the
permutation; tile slices are views of them.  On the emulated backend the array module is
numpy, so the device-side code runs on the CPU; the "cuda" cases run it with cupy on a GPU
(marked gpu): the order found on the device is the order numpy finds."""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.gpu import codegen
from hartree.gpu.pairs import build_pair_classes, pair_order, permuted, sorted_by, tile_max

from .cases import CASES, build


def test_permuted_moves_each_pairs_primitive_rows():
    """permuted gathers pairs and their primitive rows (checked pair by pair)."""
    mol, basis, _ = build(CASES[1])
    rng = np.random.default_rng(3)
    for pc in build_pair_classes(basis).values():
        order = rng.permutation(pc.npair)
        sh, pst, geo, prim = permuted(pc.sh, pc.pst, pc.geo, pc.prim, order)
        assert pst.dtype == np.int32 and pst[0] == 0 and pst[-1] == len(pc.prim)
        np.testing.assert_array_equal(sh, pc.sh[order])
        np.testing.assert_array_equal(geo, pc.geo[order])
        for new, old in enumerate(order):
            np.testing.assert_array_equal(prim[pst[new] : pst[new + 1]], pc.prim[pc.pst[old] : pc.pst[old + 1]])


def _backend(kind):
    if kind == "cuda":  # marked gpu: skipped by conftest without a device
        from hartree.device.backend import CudaBackend

        return CudaBackend()
    if not emulator.available():
        pytest.skip("g++ not available")
    return emulator.EmulatedBackend()


@pytest.fixture(scope="module", params=["emulated", pytest.param("cuda", marks=pytest.mark.gpu)])
def builder(request):
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK

    from .test_quartet_lists import chain

    backend = _backend(request.param)
    if request.param == "cuda":  # every class up to (gg|gg), contracted shells
        from .cases import SG_CASE

        return DirectJK(build(SG_CASE)[1], backend)
    return DirectJK(load_basis(chain(6), "6-31g*"), backend)


def _host(x):
    return np.asarray(x.get() if hasattr(x, "get") else x)


def _same(a, b):
    a, b = _host(a), _host(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_device_sort_equals_host_sort(builder):
    """Each class's DevicePairs equal pairs.sorted_by of the build-order pairs with the
    same Schwarz factors; the permutation is pair_order's; the tile maxima are tile_max's."""
    b = builder
    for pc, P in b.pairs.items():
        host = b.host_classes[pc]
        order = b.pair_orders[pc]
        q = np.empty(P.npair)
        q[order] = P.q_host  # Schwarz factors in build order
        assert _same(order, pair_order(np.diff(host.pst), q, host.sh))
        ref = sorted_by(host, q)
        for field in ("sh", "pst", "geo", "prim", "q"):
            assert _same(getattr(P, field), getattr(ref, field)), (pc, field)
        assert _same(P.pst_host, ref.pst.astype(np.int64))
        assert _same(P.tile_q_host, tile_max(ref.q, codegen.TILE))
        assert _same(P.tile_q, P.tile_q_host)
        assert P.q_max == float(ref.q.max()) and P.key == pc
        assert (P.tile_start, P.tile_stop) == (0, len(P.tile_q_host))
        assert (P.q_host > 0).all()


def test_replica_reproduces_the_sorted_pairs(builder):
    """A replica (like=) sorts its own upload with the first builder's permutation and
    runs no Schwarz kernel: identical records."""
    from hartree.gpu.jk_direct import DirectJK

    b = builder
    r = DirectJK(b.basis, b.backend, like=b)
    assert r.tuning is b.tuning and r.pair_classes == b.pair_classes
    for pc in b.pair_classes:
        for field in ("sh", "pst", "geo", "prim", "q", "tile_q", "q_host", "tile_q_host", "pst_host"):
            assert _same(getattr(r.pairs[pc], field), getattr(b.pairs[pc], field)), (pc, field)


def test_tile_slices_are_views_of_the_class(builder):
    T = codegen.TILE
    P = max(builder.pairs.values(), key=lambda p: p.npair)
    t1 = min(3, len(P.tile_q_host))
    assert t1 >= 2
    S = P.tiles(1, t1)
    i0, i1 = T, min(t1 * T, P.npair)
    assert S.npair == i1 - i0 and (S.tile_start, S.tile_stop) == (1, t1)
    assert _same(S.sh, P.sh[i0:i1]) and _same(S.pst, P.pst[i0 : i1 + 1]) and S.prim is P.prim
    assert _same(S.tile_q_host, P.tile_q_host[1:t1]) and S.q_max == float(P.q_host[i0:i1].max())
    assert S.tiles(0, 1).tile_start == 1  # recorded absolute
