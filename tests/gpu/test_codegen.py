"""GPU code generator and driver, checked without a GPU (generated source; serial CPU
emulation of the kernels with g++)."""

import numpy as np
import pytest

from hartree.basis import cart2sph_matrix
from hartree.gpu import codegen, jk_kernels
from hartree.gpu.pairs import build_pair_classes
from hartree.gpu.tables import RysTable, eval_roots_weights
from hartree.gpu.tuning import jk_tuning

from .cases import CASES, build
from .reference import reference_jk


@pytest.fixture(scope="module")
def table():
    return RysTable.load()


def test_source_is_deterministic_and_named(table):
    a = jk_kernels.generate((2, 1, 1, 0), table)
    assert a == jk_kernels.generate((2, 1, 1, 0), table)
    assert "jk_2110" in a and "diag_" not in a and "rys_3(" in a
    b = jk_kernels.generate((1, 1, 1, 1), table, with_k=False)
    assert "diag_11" in b and "vk +" not in b and "J = vj" in b
    assert table.sha256 in b and f"version {codegen.GENERATOR_VERSION}" in b
    with pytest.raises(ValueError):
        jk_kernels.generate((0, 1, 0, 0), table)


def test_split_plan_covers_every_component_once():
    """Slices tile the (a, b) components exactly once and respect the size targets."""
    from .test_nvrtc import all_classes

    for cls in all_classes(4):
        na, nb = codegen.ncart(cls[0]), codegen.ncart(cls[1])
        ncd = codegen.ncart(cls[2]) * codegen.ncart(cls[3])
        hit = np.zeros((na, nb), dtype=int)
        plan = jk_kernels.split_plan(cls)
        for a0, a1, b0, b1 in plan:
            hit[a0:a1, b0:b1] += 1
        assert (hit == 1).all(), cls
        if len(plan) > 1:
            target = jk_kernels.LOOP_SLICE_TARGET if codegen.is_generic(cls) else jk_kernels.SLICE_TARGET
            biggest = max((a1 - a0) * (b1 - b0) * ncd for a0, a1, b0, b1 in plan)
            assert biggest <= max(target, ncd), cls
    assert len(jk_kernels.split_plan((2, 1, 2, 1))) == 6  # 54 components per a
    assert len(jk_kernels.split_plan((3, 1, 1, 0))) == 2  # 5 a components of 9 each
    assert len(jk_kernels.split_plan((2, 2, 2, 2))) == 36
    assert len(jk_kernels.split_plan((4, 4, 4, 4))) == 60  # 15 a x 4 b-chunks of <= 4


def test_slice_functions_follow_is_generic():
    """eri_function writes the loop body exactly for the classes jk_kernels treats as loop
    classes (not in each of the 30 slices of (fd|fp), which is scalar code)."""
    from .test_nvrtc import all_classes

    for cls in all_classes(4):
        a0, a1, b0, b1 = jk_kernels.split_plan(cls)[0]
        body = "\n".join(codegen.eri_function(cls, range(a0, a1), range(b0, b1), "_s0"))
        assert ("double g[3][" in body) == codegen.is_generic(cls), cls
    assert not codegen.is_generic((3, 2, 3, 1)) and codegen.is_generic((3, 3, 3, 1))


def test_large_classes_use_loops(table):
    """Loop version: one copy of the recurrences for all slices (slice bounds from a
    constant table by grid z), not one function per slice (classic kernels: a tuning without cooperative classes
    emptied, (ff|ff) is cooperative in the package)."""
    classic = jk_tuning().with_cooperative({})
    src = jk_kernels.generate((3, 3, 3, 3), table, tuning=classic)
    assert "__constant__ unsigned char cart_a_3333_rt" in src
    assert "__constant__ int plan_3333[40]" in src and "switch" not in src
    assert len(src.splitlines()) < 500  # loops, not 10^4 statements
    assert len(jk_kernels.generate((4, 4, 4, 4), table).splitlines()) < 800  # 225 (c, d) lines


def test_table_evaluation_matches_cpu_rys(table):
    from hartree.integrals.rys import roots_weights

    for n in range(1, 8):
        for T in (0.0, 1e-3, 0.7, 4.5, 17.3, 38.9, table.tmax(n) - 1e-9, table.tmax(n), 300.0):
            u, w = eval_roots_weights(table, n, T)
            u0, w0 = roots_weights(n, T)
            np.testing.assert_allclose(u, u0, rtol=1e-12)
            np.testing.assert_allclose(w, w0, rtol=1e-12)


def test_pairs_cover_each_shell_pair_once():
    mol, basis, _ = build(CASES[1])
    pcs = build_pair_classes(basis)
    seen = set()
    for (la, lb), pc in pcs.items():
        for i, j in pc.sh:
            assert basis.shell_l[i] == la and basis.shell_l[j] == lb
            key = frozenset((int(i), int(j)))
            assert key not in seen
            seen.add(key)
        assert pc.pst[-1] == len(pc.prim)
    assert len(seen) == basis.nshell * (basis.nshell + 1) // 2
    C = cart2sph_matrix(basis)
    assert C.shape == (basis.ncart, basis.nao)


def test_pair_order_binned():
    """pair_order: primitive-pair count descending first, then decade of q descending,
    then shells i, j ascending; a permutation."""
    from hartree.gpu.pairs import pair_order, sorted_by

    rng = np.random.default_rng(4)
    n = 400
    counts = rng.choice([1, 3, 9, 18], size=n)
    q = 10.0 ** rng.uniform(-12, 1, size=n)
    q[:5] = 0.0  # pairs that never pass
    sh = np.stack([rng.integers(0, 60, n), rng.integers(0, 60, n)], axis=1)
    o = pair_order(counts, q, sh)
    assert sorted(o) == list(range(n))
    qbin = np.floor(np.log10(np.where(q > 0, q, 1e-300)))
    keys = [(-counts[a], -qbin[a], sh[a, 0], sh[a, 1]) for a in o]
    assert keys == sorted(keys)
    mol, basis, _ = build(CASES[1])  # sorted_by keeps each pair's data
    pc = build_pair_classes(basis)[(1, 0)]
    qq = rng.random(pc.npair)
    out = sorted_by(pc, qq)
    perm = pair_order(np.diff(pc.pst), qq, pc.sh)
    np.testing.assert_array_equal(out.sh, pc.sh[perm])
    np.testing.assert_array_equal(out.q, qq[perm])
    for p_new, p_old in enumerate(perm):
        np.testing.assert_array_equal(
            out.prim[out.pst[p_new] : out.pst[p_new + 1]], pc.prim[pc.pst[p_old] : pc.pst[p_old + 1]]
        )


def test_warp_runs_only_in_small_classic_classes(table):
    """Warp-runs digestion (run_add) in the classic kernels of at most WARP_RUNS_MAX_SIZE
    components; plain atomics above; lanes past the list stay alive (s = 0) only there."""
    small = jk_kernels.generate((1, 0, 1, 0), table)
    assert "run_add(rik," in small and "warp_runs(" in small and "if (t0 >= nlist) s = 0.0;" in small
    assert "atomicAdd(K +" not in small and "atomicAdd(J +" not in small
    classes = [
        (a, b, c, d)
        for a in range(5)
        for b in range(a + 1)
        for c in range(a + 1)
        for d in range(c + 1)
        if (a, b) >= (c, d)
    ]
    big = next(
        c
        for c in classes
        if np.prod([codegen.ncart(l) for l in c]) > jk_kernels.WARP_RUNS_MAX_SIZE
        and jk_tuning().cooperative_shape(c) is None
        and not codegen.is_generic(c)
    )
    src = jk_kernels.generate(big, table)
    assert "run_add(" not in src and "atomicAdd(K +" in src and "if (t >= nlist) return;" in src
    j_only = jk_kernels.generate((1, 1, 0, 0), table, with_k=False)
    assert "run_add(rij," in j_only and "rik" not in j_only


def test_launch_bounds_follow_the_measured_table(table):
    """Classic kernels get __launch_bounds__(256, jk_kernels.min_blocks(cls)): 2 (at most 128
    registers) for the classes the tuning names, codegen.MIN_BLOCKS otherwise; a tuning
    passed to the generator is the one it follows."""
    assert jk_kernels.min_blocks((1, 0, 1, 0)) == 2 and jk_kernels.min_blocks((1, 1, 1, 1)) == 1
    for cls in [(1, 0, 1, 0), (2, 1, 0, 0), (1, 1, 1, 1), (0, 0, 0, 0)]:
        src = jk_kernels.generate(cls, table)
        assert f"__launch_bounds__({codegen.TILE**2}, {jk_kernels.min_blocks(cls)}) jk_" in src
    tuning = jk_tuning()
    assert all(tuning.cooperative_shape(c) is None for c in tuning.min_blocks)
    other = tuning.with_min_blocks({(1, 1, 1, 1): 2})
    assert "__launch_bounds__(256, 2) jk_1111" in jk_kernels.generate((1, 1, 1, 1), table, tuning=other)
    assert "__launch_bounds__(256, 1) jk_1010" in jk_kernels.generate((1, 0, 1, 0), table, tuning=other)


def _warp_run_sums(keys, values):
    """Python model of warp_runs.cu's warp_runs + run_add for one warp (32 lanes), step by
    step as the CUDA code does it: {lane: value added by that lane's atomicAdd}."""
    lanes = range(32)
    head = [lane == 0 or keys[lane - 1] != keys[lane] for lane in lanes]
    heads = sum(1 << lane for lane in lanes if head[lane])
    end, length = [], []
    for lane in lanes:
        above = 0 if lane == 31 else heads & (0xFFFFFFFF << (lane + 1)) & 0xFFFFFFFF
        end.append((above & -above).bit_length() - 1 if above else 32)  # __ffs(above) - 1
        length.append(end[lane] - lane if head[lane] else 1)
    longest = max(length)
    steps = 0 if longest <= 1 else (longest - 1).bit_length()  # ceil(log2)
    if steps == 0:
        return {lane: values[lane] for lane in lanes}
    v = list(values)
    for k in range(steps):
        shifted = [v[lane + (1 << k)] if lane + (1 << k) < 32 else v[lane] for lane in lanes]
        v = [v[lane] + shifted[lane] if lane + (1 << k) < end[lane] else v[lane] for lane in lanes]
    return {lane: v[lane] for lane in lanes if head[lane]}


def test_warp_run_sum_model_adds_each_value_once():
    """The segmented tree sum of the warp-runs digestion: every value reaches J/K exactly once
    whatever the runs (one run, none, random lengths, repeated keys in separate runs)."""
    rng = np.random.default_rng(7)
    patterns = [[5] * 32, list(range(32)), [0] * 16 + [1] * 16, [3, 3, 4, 3] * 8]
    patterns += [sorted(rng.integers(0, n, 32).tolist()) for n in (2, 5, 12, 40)]
    patterns += [rng.integers(0, 4, 32).tolist() for _ in range(20)]
    for keys in patterns:
        values = rng.standard_normal(32)
        added = _warp_run_sums(keys, values)
        total = {}
        for lane, v in added.items():
            total[keys[lane]] = total.get(keys[lane], 0.0) + v
        expect = {}
        for key, v in zip(keys, values):
            expect[key] = expect.get(key, 0.0) + v
        assert total.keys() == expect.keys()
        for key in expect:
            assert abs(total[key] - expect[key]) <= 1e-14 * (1 + abs(expect[key]))
        if len(set(keys)) < 32:
            assert len(added) < 32  # fewer atomics than lanes


@pytest.mark.slow
@pytest.mark.parametrize("generic_limit,loop_target", [(codegen.GENERIC_LIMIT, jk_kernels.LOOP_SLICE_TARGET), (0, 20)])
def test_emulated_kernels_match_reference(generic_limit, loop_target, monkeypatch):
    """The generated kernels run serially on the CPU (g++) and reproduce J/K to 1e-11
    (screening at 1e-13 leaves ~1e-12 relative); (0, 20): every class through the loop
    version, cut into slices of at most 20 components (a groups and b chunks)."""
    from hartree.device import emulator
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    monkeypatch.setattr(codegen, "GENERIC_LIMIT", generic_limit)
    monkeypatch.setattr(codegen, "GENERIC_LIMIT_F", min(generic_limit, codegen.GENERIC_LIMIT_F))
    monkeypatch.setattr(jk_kernels, "LOOP_SLICE_TARGET", loop_target)
    assert codegen.is_generic((1, 0, 0, 0)) == (generic_limit == 0)
    for case in CASES[:2]:
        mol, basis, dms = build(case)
        ref = reference_jk(case[0], mol, basis, dms)
        if ref is None:
            pytest.skip("no reference J/K available")
        J, K = DirectJK(basis, emulator.EmulatedBackend()).jk(dms)
        scale_j, scale_k = np.abs(ref[0]).max(), np.abs(ref[1]).max()
        assert np.abs(J - ref[0]).max() <= 1e-11 * scale_j
        assert np.abs(K - ref[1]).max() <= 1e-11 * scale_k


@pytest.mark.slow
def test_emulated_j_only_and_k_only_match_full_build():
    from hartree.device import emulator
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol, basis, dms = build(CASES[0])
    dms = np.stack([dms[0], 0.3 * dms[0] - 0.05])
    jb = DirectJK(basis, emulator.EmulatedBackend())
    J, K = jb.jk(dms)
    J1, K1 = jb.jk(dms, with_k=False)
    J2, K2 = jb.jk(dms[0], with_j=False)
    assert K1 is None and J2 is None and K2.shape == dms[0].shape
    np.testing.assert_allclose(J1, J, rtol=0, atol=1e-11 * np.abs(J).max())  # screening differs
    np.testing.assert_allclose(K2, K[0], rtol=0, atol=1e-11 * np.abs(K).max())


def test_loop_version_is_the_rolled_program_printed():
    """The loop version's recurrences and accumulation are the CUDA printing of the rolled
    schedule of the intermediate representation (run-time slice bounds included)."""
    from hartree.integrals.rys_program import rolled_program

    cls = (4, 4, 4, 4)
    body = codegen.eri_function(cls, suffix="_rt", runtime=True)
    printed = codegen.rolled_lines(rolled_program(cls, ("a0", "a1", "b0", "b1")), "4444_rt")
    start = body.index(printed[0])
    assert body[start : start + len(printed)] == printed
    assert "for (int a = a0; a < a1; ++a) {" in "\n".join(printed)
