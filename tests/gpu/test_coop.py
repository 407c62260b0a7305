"""The cooperative J/K kernels (hartree.gpu.coop, one warp per quartet) without a GPU:
the unit tables address the right 2-D integrals, every class's source compiles for sm_90
(NVRTC), and the kernels, run through the serial g++ emulation inside JKBuilder, give the
CPU engine's J and K (rel. 1e-11) for contracted s..g shells, J+K, J only and K only."""

import numpy as np
import pytest

from hartree.gpu import codegen, coop, jkgen, nvrtc
from hartree.gpu.tables import load_rys_table

from .cases import SG_CASE, build, densities, shell_subset
from .reference import _cpu_engine
from .test_nvrtc import _bundle, all_classes, needs_nvrtc


def _rel(x, ref):
    return float(np.abs(x - ref).max() / np.abs(ref).max())


def _fitting():
    return [c for c in all_classes(4) if coop.fits(c)]


@pytest.mark.parametrize("cls", [(0, 0, 0, 0), (3, 1, 1, 0), (3, 2, 3, 1), (3, 3, 2, 1), (2, 1, 2, 1), (4, 4, 3, 3)])
def test_units_address_their_components(cls):
    """Decode each unit's shared-memory offsets back to (i, j, k, l) exponents: the
    values a lane multiplies for component (a, b, c, d) are I_x(a_x, b_x, c_x, d_x) etc.,
    every component is covered once, and the tables fit their N2D slots."""
    la, lb, lc, ld = cls
    LA1, LB1, LC1, LD1, S, N2D = coop.dims(cls)
    ca, cb, cc, cd = (codegen.cart_components(l) for l in cls)

    def decode(off):
        ij, kl = divmod(off, S)
        assert kl < LC1 * LD1
        return (*divmod(ij, LB1), *divmod(kl, LD1))

    seen = []
    units = coop.units(cls)
    ab = coop.mode(cls) == "ab"
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
    for cls, entry in coop.CONFIG.items():
        gs, groups = entry[:2]
        assert coop.mode(cls) in ("ab", "abc")
        assert coop.fits(cls, groups, coop.slots_of(cls))
        assert gs in (8, 16, 32) or (gs % 32 == 0 and groups == 1)
        assert (gs * groups) % 32 == 0
        tpq, tpb, shared = jkgen.launch_config(cls)
        assert (tpq, tpb) == (gs, gs * groups) and jkgen.grid_z(cls) == 1
        assert shared == coop.shared_bytes(cls, groups, coop.slots_of(cls)) <= coop.MAX_SHARED
    assert not coop.fits((4, 4, 4, 4))  # (gg|gg): 540 kB a quartet
    with pytest.raises(ValueError):
        coop.kernel_source((2, 2, 2, 2), load_rys_table(), gs=64, groups=2)


@needs_nvrtc
@pytest.mark.slow
def test_every_fitting_class_compiles_for_sm90():
    """Cooperative J/K kernels of every class up to (gg|gg) that fits shared memory, in
    two programs (PTX, -G); sub-warp (8, 16 lanes) and two-warp groups, several primitive
    quartets a pass; an optimised cubin
    of (fd|fp): <= 255 registers, no spills beyond a few words."""
    table = load_rys_table()
    decl = jkgen.decl(jkgen.JK_PARAMS)
    classes = _fitting()
    assert len(classes) > 100
    for part in (classes[0::2], classes[1::2]):
        srcs = ["\n".join(coop.kernel_source(c, table, True, True, decl, gs=32, groups=1)) for c in part]
        res = nvrtc.compile_source(_bundle(srcs), "sm_90", output="ptx", options=nvrtc.DEFAULT_OPTIONS + ("-G",))
        ptx = res.image.decode()
        missing = [c for c in part if f".entry jk_{codegen.class_name(c)}(" not in ptx]
        assert not missing, missing[:5]
    sub = [
        coop.kernel_source(c, table, True, True, decl, gs=gs, groups=g, slots=sl)
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
    src = "\n".join(coop.kernel_source((3, 2, 3, 1), table, True, False, decl, gs=32, groups=2))
    k = nvrtc.cubin_resources(nvrtc.compile_source(src, "sm_90").image)["jk_3231"]
    assert 0 < k["num_regs"] <= 255 and k["frame_bytes"] <= 64


def _emulated_jk(monkeypatch, ls, modes):
    """JKBuilder on the emulator with every fitting class cooperative; checks J/K against
    the CPU engine for the (with_j, with_k) modes; returns the builder."""
    from hartree.gpu import emulate
    from hartree.gpu.jk import JKBuilder

    if not emulate.available():
        pytest.skip("g++ not available")
    for cls in _fitting():  # every class cooperative (before compiling)
        cfg = (
            (16, 4, None, 2)
            if sum(cls) <= 3 and coop.fits(cls, 4, 2)
            else (32, 2, None, 3)
            if sum(cls) % 2 and coop.fits(cls, 2, 3)
            else (64, 1)
        )
        monkeypatch.setitem(coop.CONFIG, cls, cfg)
    mol, basis, _ = build(SG_CASE)
    sub = shell_subset(basis, ls)
    dms = densities(sub.nao, 2, 9)
    b = JKBuilder(sub, emulate.EmulatedBackend())
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
    return {
        (pc, int(i), int(j)): q for pc in b.pair_classes for (i, j), q in zip(b.host_pairs[pc].sh, b.host_pairs[pc].q)
    }


def test_emulated_s_f_classes_match_cpu_engine(monkeypatch):
    """s and f shells of SG_CASE (contracted): (ss|ss) ... (ff|ff) cooperative, with
    one-warp groups (2 a block) and two-warp groups, units (a, b) and (a, b, c); and the
    cooperative Schwarz kernels give the classic Schwarz factors."""
    from hartree.gpu import emulate
    from hartree.gpu.jk import JKBuilder

    mol, basis, _ = build(SG_CASE)
    classic = _schwarz(JKBuilder(shell_subset(basis, {0, 3}), emulate.EmulatedBackend()))
    b = _emulated_jk(monkeypatch, {0, 3}, [(True, True)])
    q = _schwarz(b)
    assert q.keys() == classic.keys()
    for key, v in classic.items():
        assert abs(q[key] - v) <= 1e-13 * v
    assert all(coop.is_coop(pc + pc) for pc in b.pair_classes)


def test_emulated_j_only_and_k_only(monkeypatch):
    """(ff|ff) of SG_CASE's f shells with J-only and K-only digestion."""
    _emulated_jk(monkeypatch, {3}, [(True, False), (False, True)])


def test_emulated_p_g_classes_match_cpu_engine(monkeypatch):
    """p and g shells of SG_CASE: every class of them that fits shared memory cooperative
    ((gg|gg) stays classic), J+K."""
    _emulated_jk(monkeypatch, {1, 4}, [(True, True)])
