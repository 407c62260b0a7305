"""CPUEngine: every method of the engine contract against PySCF."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.integrals.engine import CPUEngine
from tests.helpers import to_pyscf, water


@pytest.fixture(scope="module")
def setup():
    mol = water()
    basis = load_basis(mol, "cc-pvdz")
    return mol, basis, CPUEngine(mol, basis), to_pyscf(mol, basis)


def test_one_electron(setup):
    mol, basis, eng, pmol = setup
    np.testing.assert_allclose(eng.overlap(), pmol.intor("int1e_ovlp"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(eng.kinetic(), pmol.intor("int1e_kin"), rtol=0, atol=1e-11)
    np.testing.assert_allclose(eng.nuclear(), pmol.intor("int1e_nuc"), rtol=0, atol=1e-10)
    np.testing.assert_allclose(eng.hcore(), pmol.intor("int1e_kin") + pmol.intor("int1e_nuc"), rtol=0, atol=1e-10)
    origin = np.array([0.1, -0.2, 0.3])
    with pmol.with_common_orig(origin):
        ref = pmol.intor("int1e_r")
    np.testing.assert_allclose(eng.dipole(origin), ref, rtol=0, atol=1e-11)
    # cached matrices are handed out as copies
    s = eng.overlap()
    s[0, 0] = 99.0
    assert eng.overlap()[0, 0] != 99.0


def test_two_electron(setup):
    mol, basis, eng, pmol = setup
    g = pmol.intor("int2e")
    np.testing.assert_allclose(eng.eri(), g, rtol=0, atol=1e-10)
    rng = np.random.default_rng(5)
    d = rng.standard_normal((2, basis.nao, basis.nao))
    d = d + d.transpose(0, 2, 1)
    for _ in range(2):  # second call reuses the cached pair data
        J, K = eng.jk(d)
        np.testing.assert_allclose(J, np.einsum("ijkl,xkl->xij", g, d), rtol=0, atol=1e-10)
        np.testing.assert_allclose(K, np.einsum("ikjl,xkl->xij", g, d), rtol=0, atol=1e-10)
    J1, K1 = eng.jk(d[0])
    assert J1.shape == (basis.nao, basis.nao)
    np.testing.assert_allclose(J1, J[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(K1, K[0], rtol=0, atol=1e-12)
    assert eng.jk(d[0], with_j=False)[0] is None


def test_device_and_threshold(setup):
    mol, basis, eng, _ = setup
    assert eng.device.startswith("cpu (numba, ")
    assert eng.screening_threshold == 1e-13
    assert CPUEngine(mol, basis, screening_threshold=1e-10).screening_threshold == 1e-10
