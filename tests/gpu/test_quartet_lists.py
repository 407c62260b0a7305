"""Quartet lists (hartree.gpu.quartet_lists) checked on the CPU: the screening kernel, run through
the g++ emulation, lists exactly the quartets a slow Python screening selects, with the
right J/K flags, each once; chunking and waves cover every entry once; J/K built from the
lists (batched, serial, several waves of a tiny buffer, difference densities) equal the
CPU engine's (1e-11 relative: screening at 1e-13 leaves ~1e-12)."""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.gpu import codegen, quartet_lists
from hartree.molecule import Molecule

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")


def chain(n=10, spacing=2.2):
    """n H atoms and a C on a line (bohr): far ends decouple, so the density screening
    removes quartets and the J-only / K-only segments are all populated."""
    coords = np.array([[spacing * i, 0.3 * (i % 2), 0.0] for i in range(n)] + [[-2.0, 0, 0]])
    numbers = np.array([1] * n + [6])
    return Molecule(
        numbers=numbers, coords=coords, charge=0, multiplicity=1 + int(numbers.sum()) % 2, symbols=("H",) * n + ("C",)
    )


def decaying_density(basis, seed=3, length=2.0):
    """Symmetric density whose shell blocks fall off as exp(-|A-B| / length) (bohr)."""
    rng = np.random.default_rng(seed)
    centers = np.repeat(np.asarray(basis.shell_center), np.diff(basis.ao_loc), axis=0)
    r = np.linalg.norm(centers[:, None] - centers[None], axis=-1)
    d = rng.standard_normal((basis.nao, basis.nao)) * np.exp(-r / length)
    return d + d.T


def reference_list(b, P, Q, tri, dmax_sh, dmax_all, with_j, with_k):
    """{(ib, ik): flags} by the screening rules of the quartet_lists docstring, in Python."""
    T, thr, ns = codegen.TILE, b.threshold, b.basis.nshell
    qb, qk = P.q_host, Q.q_host
    sb, sk = np.asarray(_h(P.sh)), np.asarray(_h(Q.sh))
    tb, tk = P.tile_q_host, Q.tile_q_host
    d = np.asarray(_h(dmax_sh)).reshape(ns, ns)
    out = {}
    for ib in range(P.npair):
        for ik in range(Q.npair):
            if tri and ik > ib:
                continue
            if tb[ib // T] * tk[ik // T] * dmax_all < thr:
                continue
            q = qb[ib] * qk[ik]
            if q * dmax_all < thr:
                continue
            i, j = sb[ib]
            k, l = sk[ik]
            f = 0
            if with_j and q * max(d[i, j], d[k, l]) >= thr:
                f |= 1
            if with_k and q * max(d[i, k], d[i, l], d[j, k], d[j, l]) >= thr:
                f |= 2
            if f:
                out[(ib, ik)] = f
    return out


def _h(x):
    return x.get() if hasattr(x, "get") else x


@pytest.fixture(scope="module")
def setup():
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = chain()
    basis = load_basis(mol, "6-31g*")
    b = DirectJK(basis, emulator.EmulatedBackend())
    dm = decaying_density(basis)
    return mol, basis, b, dm


@needs_gxx
@pytest.mark.parametrize("flags", [(True, True), (True, False), (False, True)])
def test_screening_lists_exactly_the_significant_quartets(setup, flags):
    """Count pass over the staircase (tile bits set exactly for the tiles holding
    survivors), then write passes over chunks of rows that skip the other tiles: the listed
    quartets and flags are those of the Python screening, each once, segments in order."""
    _, basis, b, dm = setup
    b.threshold = 1e-7  # screens many quartets of this small molecule
    try:
        dm_cart, dmax_sh, dmax_all, _ = b.screen_density(dm)
        seen = {0: 0, 1: 0, 2: 0}
        for _, cls, P, Q, tri in b.launch_list(dmax_all):
            ref = reference_list(b, P, Q, tri, dmax_sh, dmax_all, *flags)
            counts = np.zeros(3 * len(P.tile_q_host), dtype=np.int32)
            plan = quartet_lists.tile_plan(b, P, Q, dmax_all)
            bits = np.zeros(plan.bit_words(), dtype=np.int32)
            b._screen(P, Q, tri, dmax_sh, dmax_all, *flags, counts, None, 0, None, bits=bits, plan=plan)
            set_bits = np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little"))
            T = codegen.TILE  # bit of tile (bt, kt): its staircase entry
            want = {plan.position(x // T, y // T) for x, y in ref}
            assert -1 not in want and set(set_bits.tolist()) == want
            chunks = quartet_lists.plan_chunks(counts, 7)  # tiny chunks: many of them
            got = {}
            for r0, r1, n, offs in chunks:
                cur = np.zeros_like(counts)
                cur[3 * r0 : 3 * r1] = offs.ravel()
                buf = np.full(2 * n, -1, dtype=np.int32)
                b._screen(P, Q, tri, dmax_sh, dmax_all, *flags, cur, buf, r0, None, row1=r1, bits=bits, plan=plan)
                ent = buf.reshape(-1, 2).astype(np.int64)
                ik = ent[:, 1] & ((1 << 30) - 1)
                fl = (ent[:, 1] & 0xFFFFFFFF) >> 30
                # segments in order JK, J-only, K-only inside every chunk
                segs = np.select([fl == 3, fl == 1, fl == 2], [0, 1, 2], -1)
                assert (segs >= 0).all() and (np.diff(segs) >= 0).all()
                for x, y, f in zip(ent[:, 0], ik, fl):
                    assert (x, y) not in got
                    got[(int(x), int(y))] = int(f)
            assert got == ref, codegen.class_name(cls)
            assert int(counts.sum()) == len(ref)
            for f in ref.values():
                seen[{3: 0, 1: 1, 2: 2}[f]] += 1
        if flags == (True, True):
            assert all(v > 0 for v in seen.values()), seen  # every segment exercised
    finally:
        b.threshold = 1e-13


def test_plan_chunks_and_waves_cover_each_entry_once():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 9, size=(40, 3))
    counts[5] = [20, 0, 3]  # a row above the capacity
    counts[7:10] = 0
    cap = 17
    chunks = quartet_lists.plan_chunks(counts, cap)
    rows = []
    for r0, r1, n, offs in chunks:
        rows += list(range(r0, r1))
        assert n == counts[r0:r1].sum() and (n <= cap or r1 - r0 == 1)
        slots = np.zeros(n, dtype=int)
        for r in range(r0, r1):
            for g in range(3):
                slots[offs[r - r0, g] : offs[r - r0, g] + counts[r, g]] += 1
        assert (slots == 1).all()
    assert sorted(set(rows) | {7, 8, 9}) == list(range(40))
    size, waves = quartet_lists.pack_waves([(0, c) for c in chunks], cap)
    assert size == max(cap, counts[5].sum())
    flat = [c for w in waves for c in w]
    assert len(flat) == len(chunks)
    for w in waves:
        ends = sorted((base, base + ch[2]) for _, ch, base in w)
        assert all(e0[1] <= e1[0] for e0, e1 in zip(ends, ends[1:])) and ends[-1][1] <= size


@needs_gxx
def test_batched_serial_and_waved_builds_match_cpu_engine(setup, monkeypatch):
    from hartree.integrals.engine import CPUEngine

    mol, basis, b, dm = setup
    dms = np.stack([dm, 0.5 * dm + 0.02 * np.eye(basis.nao)])
    Jr, Kr = CPUEngine(mol, basis).jk(dms)
    sj, sk = np.abs(Jr).max(), np.abs(Kr).max()
    J, K = b.jk(dms)  # batched path, one wave
    assert b.last_lists["waves"] == 1
    assert np.abs(J - Jr).max() <= 1e-11 * sj and np.abs(K - Kr).max() <= 1e-11 * sk
    monkeypatch.setattr(quartet_lists, "MAX_ENTRIES", 300)  # tiny buffer: several waves
    J2, K2 = b.jk(dms)
    assert b.last_lists["waves"] > 3
    np.testing.assert_allclose(J2, J, rtol=0, atol=1e-13 * sj)
    np.testing.assert_allclose(K2, K, rtol=0, atol=1e-13 * sk)
    b.profile = {}  # serial path (per item)
    try:
        J3, K3 = b.jk(dms)
        assert set(b.stats) and all(v["quartets"] <= v["tile_lanes"] for v in b.stats.values())
    finally:
        b.profile, b.stats = None, {}
    np.testing.assert_allclose(J3, J, rtol=0, atol=1e-13 * sj)
    np.testing.assert_allclose(K3, K, rtol=0, atol=1e-13 * sk)


@needs_gxx
def test_jk_matches_cpu_engine(setup):
    """Pairs in their binned order, quartets listed by the screening kernel: J/K equal the
    CPU engine's (1e-11)."""
    from hartree.integrals.engine import CPUEngine

    mol, basis, b, dm = setup
    Jr, Kr = CPUEngine(mol, basis).jk(dm)
    J, K = b.jk(dm)
    assert np.abs(J - Jr).max() <= 1e-11 * np.abs(Jr).max()
    assert np.abs(K - Kr).max() <= 1e-11 * np.abs(Kr).max()


@needs_gxx
def test_difference_density_build_adds_up(setup):
    """J[D1] + J[D2 - D1] = J[D2] (and K): the incremental Fock build of the SCF, with the
    difference screened by its own (small) max |D| per shell block."""
    mol, basis, b, dm = setup
    rng = np.random.default_rng(5)
    dd = 1e-5 * decaying_density(basis, seed=9) * (rng.random(dm.shape) > 0.5)
    dd = dd + dd.T
    J1, K1 = b.jk(dm)
    Jd, Kd = b.jk(dd)
    J2, K2 = b.jk(dm + dd)
    n_full = b.last_lists["entries"]
    b.jk(dd)
    assert b.last_lists["entries"] < n_full  # the difference screens more
    np.testing.assert_allclose(J1 + Jd, J2, rtol=0, atol=1e-11 * np.abs(J2).max())
    np.testing.assert_allclose(K1 + Kd, K2, rtol=0, atol=1e-11 * np.abs(K2).max())


def test_tile_lane_count_equals_brute_force():
    """tile_lanes (sorted ket tiles + searchsorted) against an explicit tile grid."""
    from types import SimpleNamespace

    from hartree.gpu.quartet_lists import tile_lanes

    T = codegen.TILE
    rng = np.random.default_rng(0)

    def brute(P, Q, tri, dmax, thr):
        nb = np.minimum(T, P.npair - T * np.arange(len(P.tile_q_host)))
        nk = np.minimum(T, Q.npair - T * np.arange(len(Q.tile_q_host)))
        live = np.outer(P.tile_q_host, Q.tile_q_host) * dmax >= thr
        lanes = np.outer(nb, nk).astype(float)
        if tri:
            live &= np.tri(*live.shape, dtype=bool)
            d = np.arange(len(nb))
            lanes[d, d] = nb * (nb + 1) / 2
        return int((lanes * live).sum())

    for tri in (False, True):
        for _ in range(10):
            n = int(rng.integers(1, 200))
            m = n if tri else int(rng.integers(1, 200))
            tq = rng.random(-(-n // T)) ** 8
            tk = tq if tri else rng.random(-(-m // T)) ** 8
            P, Q = SimpleNamespace(tile_q_host=tq, npair=n), SimpleNamespace(tile_q_host=tk, npair=m)
            assert tile_lanes(P, Q, tri, 1.3, 0.01) == brute(P, Q, tri, 1.3, 0.01)


@needs_gxx
def test_emulated_scf_with_incremental_fock_matches_cpu():
    """RHF through the quartet-list kernels (emulated GPU engine): incremental Fock builds
    (J/K of D - D_prev, screened by max |D - D_prev|) with full rebuilds every 8 cycles and
    before accepting convergence give the CPU engine's energy to 1e-9 Eh (both converged
    to conv_tol 1e-10)."""
    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.scf import run

    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    basis = load_basis(mol, "6-31g**")
    opts = dict(guess="core", conv_tol=1e-10)
    ref = run(mol, basis, device="cpu", **opts)
    eng = GPUEngine(mol, basis, backends=[emulator.EmulatedBackend()])
    res = run(mol, basis, engine=eng, **opts)
    steps = [h.step for h in res.history]
    assert res.converged and abs(res.energy - ref.energy) < 1e-9
    assert sum("full" not in s for s in steps[1:]) >= 3  # incremental builds ran
    assert steps[-1] == "full-rebuild" or "full" in steps[-1]
