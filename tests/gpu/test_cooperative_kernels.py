"""The cooperative J/K kernels (hartree.gpu.cooperative_kernels, a group of lanes per quartet) without a GPU:
the unit tables address the right 2-D integrals, every class's source compiles for sm_90
(NVRTC), and the kernels, run through the serial g++ emulation inside DirectJK, give the
CPU engine's J and K (rel. 1e-11) for contracted s..g shells, J+K, J only and K only."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hartree.device import nvrtc
from hartree.gpu import codegen, jk_kernels
from hartree.gpu import cooperative_kernels as ck
from hartree.gpu.tables import RysTable
from hartree.gpu.tuning import CooperativeShape, jk_tuning

from .cases import SG_CASE, build, densities, shell_subset
from .reference import _cpu_engine
from .test_nvrtc import _bundle, all_classes, needs_nvrtc


def _rel(x, ref):
    return float(np.abs(x - ref).max() / np.abs(ref).max())


def _fitting():
    return [c for c in all_classes(4) if ck.fits(c)]


@pytest.mark.parametrize("cls", [(0, 0, 0, 0), (3, 1, 1, 0), (3, 2, 3, 1), (3, 3, 2, 1), (2, 1, 2, 1), (4, 4, 3, 3)])
def test_units_address_their_components(cls):
    """Decode each unit's shared-memory offsets back to (i, j, k, l) exponents: the
    values a lane multiplies for component (a, b, c, d) are I_x(a_x, b_x, c_x, d_x) etc.,
    every component is covered once, and the tables fit their N2D slots."""
    la, lb, lc, ld = cls
    LA1, LB1, LC1, LD1, S, N2D = ck.table_layout(cls)
    ca, cb, cc, cd = (codegen.cart_components(l) for l in cls)

    def decode(off):
        ij, kl = divmod(off, S)
        assert kl < LC1 * LD1
        return (*divmod(ij, LB1), *divmod(kl, LD1))

    seen = []
    units = ck.units(cls)
    ab = ck.resolve_unit_mode(cls) == "ab"
    assert len(units) == len(ca) * len(cb) * (1 if ab else len(cc))
    for u, packed in enumerate(units):
        offs = [packed & 1023, (packed >> 10) & 1023, packed >> 20]
        if ab:
            a, b = divmod(u, len(cb))
            cs = range(len(cc))
        else:
            (a, b), c0 = divmod(u // len(cc), len(cb)), u % len(cc)
            cs = [c0]
        for c in cs:
            for d in range(len(cd)):
                for x in range(3):
                    k = cc[c][x] if ab else 0  # abc: c is inside the offset
                    off = offs[x] + k * LD1 + cd[d][x]
                    assert off < N2D
                    assert decode(off) == (ca[a][x], cb[b][x], cc[c][x], cd[d][x])
                seen.append((a, b, c, d))
    assert sorted(seen) == sorted(set(seen)) and len(seen) == int(np.prod([len(ca), len(cb), len(cc), len(cd)]))


def test_configured_classes_fit_shared_memory():
    """Every cooperative class of the shipped tuning fits shared memory with its shape, and
    the driver's launch shape follows the tuning."""
    tuning = jk_tuning()
    assert tuning.cooperative
    for cls, shape in tuning.cooperative.items():
        gs, groups = shape.lanes, shape.groups
        assert ck.resolve_unit_mode(cls, shape.unit_mode) in ("ab", "abc")
        assert ck.fits(cls, groups, shape.slots)
        assert gs in (8, 16, 32) or (gs % 32 == 0 and groups == 1)
        assert (gs * groups) % 32 == 0
        tpq, tpb, shared = jk_kernels.launch_config(cls, tuning)
        assert (tpq, tpb) == (gs, gs * groups) and jk_kernels.grid_z(cls, tuning) == 1
        assert shared == ck.shared_bytes(cls, groups, shape.slots) <= ck.MAX_SHARED
    assert not ck.fits((4, 4, 4, 4))  # (gg|gg): 540 kB a quartet
    with pytest.raises(ValueError):
        ck.kernel_source((2, 2, 2, 2), RysTable.load(), CooperativeShape(64, 2))


@needs_nvrtc
@pytest.mark.slow
def test_every_fitting_class_compiles_for_sm90():
    """Cooperative J/K kernels of every class up to (gg|gg) that fits shared memory, in
    two programs (PTX, -G); sub-warp (8, 16 lanes) and two-warp groups, several primitive
    quartets a pass; an optimised cubin
    of (fd|fp): <= 255 registers, no spills beyond a few words."""
    table = RysTable.load()
    decl = jk_kernels.decl(jk_kernels.JK_PARAMS)
    classes = _fitting()
    assert len(classes) > 100

    def missing(part):  # the classes of `part` without their kernel in the PTX
        srcs = ["\n".join(ck.kernel_source(c, table, CooperativeShape(32, 1), True, True, decl)) for c in part]
        res = nvrtc.compile_source(_bundle(srcs), "sm_90", output="ptx", options=nvrtc.DEFAULT_OPTIONS + ("-G",))
        ptx = res.image.decode()
        return [c for c in part if f".entry jk_{codegen.class_name(c)}(" not in ptx]

    # the two programs in parallel threads (NVRTC is reentrant), as in test_nvrtc
    with ThreadPoolExecutor(max_workers=2) as pool:
        for absent in pool.map(missing, (classes[0::2], classes[1::2])):
            assert not absent, absent[:5]
    sub = [
        ck.kernel_source(c, table, CooperativeShape(gs, g, slots=sl), True, True, decl)
        for c, gs, g, sl in (
            ((2, 1, 1, 0), 16, 8, 2),
            ((3, 0, 2, 1), 8, 16, 1),
            ((1, 1, 1, 1), 64, 1, 3),
            ((3, 1, 2, 1), 32, 2, 2),
        )
    ]
    ptx = nvrtc.compile_source(
        _bundle(["\n".join(x) for x in sub]), "sm_90", output="ptx", options=nvrtc.DEFAULT_OPTIONS + ("-G",)
    ).image.decode()
    assert all(f".entry jk_{n}(" in ptx for n in ("2110", "3021", "1111", "3121"))
    src = "\n".join(ck.kernel_source((3, 2, 3, 1), table, CooperativeShape(32, 2), True, False, decl))
    k = nvrtc.cubin_resources(nvrtc.compile_source(src, "sm_90").image)["jk_3231"]
    assert 0 < k["num_regs"] <= 255 and k["frame_bytes"] <= 64


def all_cooperative():
    """The shipped tuning with every class that fits shared memory cooperative: half a
    warp, one and two warps a quartet, one to three primitive quartets a pass."""
    shapes = {}
    for cls in _fitting():
        if sum(cls) <= 3 and ck.fits(cls, 4, 2):
            shapes[cls] = CooperativeShape(16, 4, slots=2)
        elif sum(cls) % 2 and ck.fits(cls, 2, 3):
            shapes[cls] = CooperativeShape(32, 2, slots=3)
        else:
            shapes[cls] = CooperativeShape(64, 1)
    return jk_tuning().with_cooperative(shapes)


def _emulated_jk(ls, modes, opt="-O0"):
    """DirectJK on the emulator (g++ ``opt``) with every fitting class cooperative; checks
    J/K against the CPU engine for the (with_j, with_k) modes; returns the builder."""
    from hartree.device import emulator
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol, basis, _ = build(SG_CASE)
    sub = shell_subset(basis, ls)
    dms = densities(sub.nao, 2, 9)
    b = DirectJK(sub, emulator.EmulatedBackend(opt=opt), tuning=all_cooperative())
    Jr, Kr, _ = _cpu_engine(mol, sub, dms)
    for wj, wk in modes:
        J, K = b.jk(dms, with_j=wj, with_k=wk)
        assert (J is None) != wj and (K is None) != wk
        if wj:
            assert _rel(J, Jr) <= 1e-11
        if wk:
            assert _rel(K, Kr) <= 1e-11
    return b


def _schwarz(b):
    """{(pair class, shell i, shell j): Q_ij} of a builder."""
    return {(pc, int(i), int(j)): q for pc, P in b.pairs.items() for (i, j), q in zip(np.asarray(P.sh), P.q_host)}


def test_emulated_s_f_classes_match_cpu_engine():
    """s and f shells of SG_CASE (contracted): (ss|ss) ... (ff|ff) cooperative, with
    one-warp groups (2 a block) and two-warp groups, units (a, b) and (a, b, c); and the
    cooperative Schwarz kernels give the classic Schwarz factors."""
    from hartree.device import emulator
    from hartree.gpu.jk_direct import DirectJK

    mol, basis, _ = build(SG_CASE)
    classic = _schwarz(DirectJK(shell_subset(basis, {0, 3}), emulator.EmulatedBackend()))
    b = _emulated_jk({0, 3}, [(True, True)])
    q = _schwarz(b)
    assert q.keys() == classic.keys()
    for key, v in classic.items():
        assert abs(q[key] - v) <= 1e-13 * v
    assert all(b.tuning.cooperative_shape(pc + pc) is not None for pc in b.pair_classes)


def test_emulated_j_only_and_k_only():
    """(ff|ff) of SG_CASE's f shells with J-only and K-only digestion."""
    _emulated_jk({3}, [(True, False), (False, True)])


def test_emulated_p_g_classes_match_cpu_engine():
    """p and g shells of SG_CASE: every class of them that fits shared memory cooperative
    ((gg|gg) stays classic), J+K.  -O1: the kernels run 8x faster than at -O0 (1.5 s instead
    of 12 s) for a second more of g++."""
    _emulated_jk({1, 4}, [(True, True)], opt="-O1")
