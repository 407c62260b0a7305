"""The screening kernel's staircase (hartree.gpu.quartet_lists.TilePlan), checked on the CPU.

The staircase keeps, per bra tile, the ket tiles whose product of tile-maximal Schwarz
factors times max|D| reaches the threshold: exactly the tiles the kernel's tile test can
pass (up to a relative margin of 1e-9), so the listed quartets are those of a screening of
the whole tile grid, while tiles of negligible (far-apart) pairs are never launched.
Molecules far apart (three waters 30 bohr apart, a block-diagonal density) show it: fewer
blocks than the full grid, no quartet with a pair of shells on two molecules, no K-needed
quartet between molecules, and J/K equal to the CPU engine's (1e-11 relative) and to the
unscreened CPU build's within what the 1e-13 threshold allows.
"""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.gpu import quartet_lists
from hartree.molecule import Molecule
from tests.gpu.test_quartet_lists import reference_list

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")

#: water (bohr), copied three times along x, SEPARATION bohr apart
WATER = np.array([[0.0, 0.0, 0.2217], [0.0, 1.4309, -0.8867], [0.0, -1.4309, -0.8867]])
SEPARATION = 30.0


def test_staircase_rows_hold_exactly_the_tiles_passing_the_tile_test():
    """Row r keeps the ket tiles k with tq_r tq_k dbound >= threshold (1 - margin), as a
    prefix of the ket order (decreasing max Q), and so every tile the kernel's test passes."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        tb = rng.random(int(rng.integers(1, 40))) ** 12
        tk = rng.random(int(rng.integers(1, 40))) ** 12
        tb[rng.random(len(tb)) < 0.2] = 0.0
        tk[:3] = tk[0]  # ties
        dbound, thr = float(rng.uniform(0.1, 3.0)), 1e-6
        order, tk_sorted = quartet_lists.ket_order(tk)
        assert np.all(np.diff(tk_sorted) <= 0) and sorted(order.tolist()) == list(range(len(tk)))
        offs = quartet_lists.row_offsets(tb, tk_sorted, dbound, thr)
        for r in range(len(tb)):
            kept = set(order[: offs[r + 1] - offs[r]].tolist())
            wide = {k for k in range(len(tk)) if tb[r] * tk[k] * dbound >= thr * (1 - quartet_lists.STAIR_MARGIN)}
            exact = {k for k in range(len(tk)) if tb[r] * tk[k] * dbound >= thr}
            assert kept == wide and exact <= kept


def test_launch_rows_cover_the_rows_in_bounded_pieces():
    rng = np.random.default_rng(2)
    n = rng.integers(0, 9, size=50)
    n[10:14] = 0  # empty rows
    n[20] = 30  # a row longer than a launch
    offs = np.concatenate([[0], np.cumsum(n)])
    for row0, row1 in ((0, 50), (3, 37), (10, 14)):
        pieces = quartet_lists.launch_rows(offs, row0, row1, max_blocks=12)
        covered = [r for r0, r1, _ in pieces for r in range(r0, r1)]
        assert covered == sorted(set(covered)) and set(covered) >= {r for r in range(row0, row1) if n[r]}
        for r0, r1, blocks in pieces:
            assert blocks == offs[r1] - offs[r0] > 0 and (blocks <= 12 or r1 - r0 == 1)


def waters():
    """Three waters on the x axis, SEPARATION bohr apart."""
    coords = np.vstack([WATER + [SEPARATION * m, 0.0, 0.0] for m in range(3)])
    return Molecule(
        numbers=np.array([8, 1, 1] * 3), coords=coords, charge=0, multiplicity=1, symbols=("O", "H", "H") * 3
    )


def kernel_list(b, P, Q, tri, dmax_sh, dmax_all, with_j, with_k):
    """{(ib, ik): flags} listed by the count and write passes of the screening kernel."""
    plan = quartet_lists.tile_plan(b, P, Q, dmax_all)
    counts = np.zeros(3 * len(P.tile_q_host), dtype=np.int32)
    bits = np.zeros(plan.bit_words(), dtype=np.int32)
    b._screen(P, Q, tri, dmax_sh, dmax_all, with_j, with_k, counts, None, 0, None, bits=bits, plan=plan)
    got = {}
    for r0, r1, n, offs in quartet_lists.plan_chunks(counts, 1 << 20):
        cur = np.zeros_like(counts)
        cur[3 * r0 : 3 * r1] = offs.ravel()
        buf = np.full(2 * n, -1, dtype=np.int32)
        b._screen(P, Q, tri, dmax_sh, dmax_all, with_j, with_k, cur, buf, r0, None, row1=r1, bits=bits, plan=plan)
        ent = buf.reshape(-1, 2).astype(np.int64)
        for x, y in ent:
            got[(int(x), int(y) & ((1 << 30) - 1))] = int((y & 0xFFFFFFFF) >> 30)
    return got


@pytest.fixture(scope="module")
def separated():
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = waters()
    basis = load_basis(mol, "6-31g")
    rng = np.random.default_rng(4)
    atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    d = rng.standard_normal((basis.nao, basis.nao)) * np.equal.outer(atom // 3, atom // 3)
    return mol, basis, DirectJK(basis, emulator.EmulatedBackend()), d + d.T


@needs_gxx
@pytest.mark.parametrize("flags", [(True, True), (False, True)])
def test_far_apart_molecules_skip_tiles_and_cross_quartets(separated, flags):
    """Fewer blocks than the full tile grid; the kernel lists the quartets of the whole-grid
    Python screening; no listed pair has its shells on two molecules; K needs no quartet
    whose bra and ket pairs lie on different molecules (their density blocks are zero)."""
    _, basis, b, dm = separated
    mol_of = np.asarray(basis.shell_atom) // 3
    dm_cart, dmax_sh, dmax_all, _ = b.screen_density(dm)
    blocks = grid = 0
    for _, _cls, P, Q, tri in b.launch_list(dmax_all):
        blocks += quartet_lists.tile_plan(b, P, Q, dmax_all).blocks
        grid += len(P.tile_q_host) * len(Q.tile_q_host)
        got = kernel_list(b, P, Q, tri, dmax_sh, dmax_all, *flags)
        assert got == reference_list(b, P, Q, tri, dmax_sh, dmax_all, *flags)
        sb, sk = mol_of[np.asarray(P.sh)], mol_of[np.asarray(Q.sh)]
        for (ib, ik), f in got.items():
            assert sb[ib, 0] == sb[ib, 1] and sk[ik, 0] == sk[ik, 1]
            if sb[ib, 0] != sk[ik, 0]:
                assert f == 1  # J only
    assert blocks < 0.5 * grid


@needs_gxx
def test_far_apart_molecules_jk_match_cpu(separated):
    """J/K of the staircase lists equal the CPU engine's at the same threshold (1e-11
    relative) and the unscreened CPU build's within 1e-10 relative."""
    from hartree.integrals.engine import CPUEngine

    mol, basis, b, dm = separated
    J, K = b.jk(dm)
    Jr, Kr = CPUEngine(mol, basis).jk(dm)
    J0, K0 = CPUEngine(mol, basis, screening_threshold=0.0).jk(dm)
    for X, ref, full in ((J, Jr, J0), (K, Kr, K0)):
        scale = np.abs(ref).max()
        assert np.abs(X - ref).max() <= 1e-11 * scale
        assert np.abs(X - full).max() <= 1e-10 * scale
