"""Every quartet class up to (gg|gg) on the GPU: J and K of a random C/N/O geometry with
contracted s..g shells (tests/gpu/cases.py SG_CASE) match the CPU engine (stored in
data/jk_sg_reference.npz, checked by test_classes.py) to 1e-11 relative, overall and in
every (l, l') block of AO angular momenta (1e-10 of the block's largest element): with
the package's kernel choice (the shipped tuning, hartree.gpu.tuning), and with every class that fits shared memory
on the cooperative kernel (half a warp, one and two warps a quartet, one to three primitive quartets a pass)."""

import numpy as np
import pytest

from .cases import SG_CASE, SG_REFERENCE, build

pytestmark = pytest.mark.gpu

RTOL = 1e-11
BLOCK_RTOL = 1e-10


def test_every_class_up_to_gggg_matches_cpu_engine():
    _check_sg_case()


def test_every_class_cooperative_matches_cpu_engine():
    from .test_cooperative_kernels import all_cooperative

    _check_sg_case(all_cooperative())


def _check_sg_case(tuning=None):
    """J/K of SG_CASE against the stored reference: GPUEngine with the package's tuning,
    or a DirectJK on the current GPU with `tuning`."""
    from hartree.gpu import GPUEngine

    mol, basis, dms = build(SG_CASE)
    z = np.load(SG_REFERENCE)
    np.testing.assert_allclose(z["dms"], dms, rtol=0, atol=1e-15)
    if tuning is None:
        J, K = GPUEngine(mol, basis).jk(dms)
    else:
        import cupy

        from hartree.device.backend import CudaBackend
        from hartree.gpu.jk_direct import DirectJK

        threshold = GPUEngine(mol, basis).screening_threshold
        J, K = (x.get() for x in DirectJK(basis, CudaBackend(), threshold, tuning=tuning).jk(cupy.asarray(dms)))
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
