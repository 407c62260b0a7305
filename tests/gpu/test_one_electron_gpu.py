"""One-electron integrals from the generated kernels (hartree.gpu.one_electron_gpu) versus
the CPU code (hartree.integrals.one_electron, itself checked against PySCF): S, T, V and
the dipole integrals agree to 1e-12 absolute.  The arithmetic is checked on the CPU
through the emulated backend (g++), and on the device by the gpu-marked tests."""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.integrals import one_electron as oe

from .cases import CASES, build

ATOL = 1e-12
ORIGIN = (0.1, -0.2, 0.3)

#: spherical up to f (ch_ccpvtz) and cartesian d (cnf_ccpvdz_cart)
PICK = [CASES[3], CASES[2]]


def _compare(gpu, basis, mol, to_host):
    got = {"S": gpu.overlap(), "T": gpu.kinetic(), "V": gpu.nuclear(mol.numbers, mol.coords), "D": gpu.dipole(ORIGIN)}
    ref = {
        "S": oe.overlap(basis),
        "T": oe.kinetic(basis),
        "V": oe.nuclear(basis, mol.numbers, mol.coords),
        "D": oe.dipole(basis, ORIGIN),
    }
    for k in got:
        g = to_host(got[k])
        assert g.shape == ref[k].shape, k
        err = float(np.abs(g - ref[k]).max())
        print(f"{k}: max |GPU - CPU| = {err:.1e} (max |CPU| {np.abs(ref[k]).max():.1f})")
        assert err <= ATOL, k


@pytest.mark.skipif(not emulator.available(), reason="g++ not available")
@pytest.mark.parametrize("case", PICK, ids=[c[0] for c in PICK])
def test_emulated_one_electron_match_cpu(case):
    from hartree.gpu.one_electron_gpu import OneElectronGPU

    mol, basis, _ = build(case)
    _compare(OneElectronGPU(basis, emulator.EmulatedBackend()), basis, mol, np.asarray)


def test_source_is_deterministic():
    from hartree.gpu.one_electron_gpu import generate
    from hartree.gpu.tables import RysTable

    t = RysTable.load()
    a = generate([(2, 1)], t)
    assert a == generate([(2, 1)], t)
    assert "one_21" in a and "nuc_21" in a and "rys_2(" in a and t.sha256 in a


@pytest.mark.gpu
@pytest.mark.parametrize("case", PICK, ids=[c[0] for c in PICK])
def test_gpu_one_electron_match_cpu(case):
    from hartree.device.backend import CudaBackend
    from hartree.gpu.one_electron_gpu import OneElectronGPU

    mol, basis, _ = build(case)
    _compare(OneElectronGPU(basis, CudaBackend()), basis, mol, lambda a: a.get())


@pytest.mark.gpu
def test_engine_one_electron_stay_on_device():
    import cupy

    from hartree.gpu import GPUEngine

    mol, basis, _ = build(CASES[0])
    eng = GPUEngine(mol, basis)
    for m in (eng.overlap(), eng.hcore(), eng.dipole()):
        assert isinstance(m, cupy.ndarray)
    np.testing.assert_allclose(
        eng.hcore().get(), oe.kinetic(basis) + oe.nuclear(basis, mol.numbers, mol.coords), rtol=0, atol=ATOL
    )
