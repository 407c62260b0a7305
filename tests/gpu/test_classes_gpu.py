"""Every quartet class up to (gg|gg) on the GPU: J and K of a random C/N/O geometry with
contracted s..g shells (tests/gpu/cases.py SG_CASE) match the CPU engine (stored in
data/jk_sg_reference.npz, checked by test_classes.py) to 1e-11 relative, overall and in
every (l, l') block of AO angular momenta (1e-10 of the block's largest element): with
the package's kernel choice (coop.CONFIG), and with every class that fits shared memory
on the cooperative kernel (half a warp, one and two warps a quartet, one to three primitive quartets a pass)."""

import numpy as np
import pytest

from .cases import SG_CASE, SG_REFERENCE, build

pytestmark = pytest.mark.gpu

RTOL = 1e-11
BLOCK_RTOL = 1e-10


def test_every_class_up_to_gggg_matches_cpu_engine():
    _check_sg_case()


def test_every_class_cooperative_matches_cpu_engine(monkeypatch):
    from hartree.gpu import coop

    from .test_nvrtc import all_classes

    for cls in all_classes(4):
        if coop.fits(cls):
            cfg = (
                (16, 4, None, 2)
                if sum(cls) <= 3 and coop.fits(cls, 4, 2)
                else (32, 2, None, 3)
                if sum(cls) % 2 and coop.fits(cls, 2, 3)
                else (64, 1)
            )
            monkeypatch.setitem(coop.CONFIG, cls, cfg)
    _check_sg_case()


def _check_sg_case():
    from hartree.gpu import GPUEngine

    mol, basis, dms = build(SG_CASE)
    z = np.load(SG_REFERENCE)
    np.testing.assert_allclose(z["dms"], dms, rtol=0, atol=1e-15)
    J, K = GPUEngine(mol, basis).jk(dms)
    l_of_ao = np.repeat(np.asarray(basis.shell_l), np.diff(np.asarray(basis.ao_loc)))
    for name, x, ref in (("J", J, z["J"]), ("K", K, z["K"])):
        err = np.abs(x - ref).max() / np.abs(ref).max()
        worst = 0.0
        for la in range(5):
            for lb in range(5):
                rows, cols = np.flatnonzero(l_of_ao == la), np.flatnonzero(l_of_ao == lb)
                blk = np.ix_(np.arange(len(dms)), rows, cols)
                worst = max(worst, np.abs(x[blk] - ref[blk]).max() / np.abs(ref[blk]).max())
        print(f"{SG_CASE[0]} nao={basis.nao}: {name} rel. error {err:.2e}, worst (l, l') block {worst:.2e}")
        assert err <= RTOL and worst <= BLOCK_RTOL, name
