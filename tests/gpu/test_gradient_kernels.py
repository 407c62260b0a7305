"""The GPU gradient kernels without a GPU: their serial CPU emulation (g++) against the CPU
engine's gradient terms, with random densities -- the ERI-gradient kernels
(hartree.gpu.gradient_kernels) for every quartet class up to (gg|gg) (derivatives reach h),
the one-electron ones (hartree.gpu.one_electron_deriv_gpu) for every pair class up to (gg|."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from tests.gradients.test_scf_gradient import SPDFG, WATER


@pytest.mark.slow
def test_emulated_gradient_kernels_up_to_gggg(tmp_path):
    from hartree.device import emulator
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    path = tmp_path / "spdfg.nw"
    path.write_text(SPDFG)
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, str(path), cartesian=True)
    assert int(basis.max_l) == 4
    rng = np.random.default_rng(2)
    da, db = (x + x.T for x in rng.standard_normal((2, basis.nao, basis.nao)) * 0.3)
    builder = DirectGradient(DirectJK(basis, emulator.EmulatedBackend()), basis.shell_atom)
    classes = builder.jk.quartet_classes()
    assert (4, 4, 4, 4) in classes and len(classes) == 120
    cpu = CPUEngine(mol, basis)
    for dk, factor in ((da[None], 0.5), (np.stack([da, db]), 1.0)):
        ref = cpu.two_electron_gradient(da, dk, factor)
        got = builder.gradient(da, dk, factor, mol.natm)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("cartesian", [False, True], ids=["spherical", "cartesian"])
def test_emulated_one_electron_gradient_kernels_up_to_gg(tmp_path, cartesian):
    from hartree.device import emulator
    from hartree.gpu.one_electron_deriv_gpu import OneElectronGradientGPU

    if not emulator.available():
        pytest.skip("g++ not available")
    path = tmp_path / "spdfg.nw"
    path.write_text(SPDFG)
    mol = Molecule.from_string(WATER, charge=1, multiplicity=2)
    basis = load_basis(mol, str(path), cartesian=cartesian)
    rng = np.random.default_rng(4)
    d, w = (x + x.T for x in rng.standard_normal((2, basis.nao, basis.nao)) * 0.3)
    ref = CPUEngine(mol, basis).one_electron_gradient(d, w)
    got = OneElectronGradientGPU(basis, mol, emulator.EmulatedBackend()).gradient(d, w)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_profiled_gradient_is_the_same_and_times_every_class():
    """DirectGradient.profile: classes run one at a time and are timed; the gradient is the
    same as the batched run's."""
    from hartree.device import emulator
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "6-31g*")
    d = np.random.default_rng(5).standard_normal((basis.nao, basis.nao))
    d = d + d.T
    builder = DirectGradient(DirectJK(basis, emulator.EmulatedBackend()), basis.shell_atom)
    batched = builder.gradient(d, d[None], 0.5, mol.natm)
    builder.profile = {}
    profiled = builder.gradient(d, d[None], 0.5, mol.natm)
    np.testing.assert_allclose(profiled, batched, rtol=0, atol=1e-13 * np.abs(batched).max())
    names = {"".join(map(str, c)) for c in builder.jk.quartet_classes()}
    assert set(builder.profile) == names and all(t >= 0.0 for t in builder.profile.values())


def test_emulated_cooperative_gradient_kernels_match_the_cpu_engine():
    """The cooperative gradient kernels (hartree.gpu.cooperative_gradient: one group of
    lanes a quartet, 2-D tables in shared memory) of water/6-31G**: (dp|pp), (dp|dp),
    (dd|pp), (dd|dp), (dd|dd) in both unit modes, two primitive quartets a pass, RHF- and
    UHF-like densities, against the CPU engine's gradient terms."""
    from hartree.device import emulator
    from hartree.gpu import gradient_kernels
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "6-31g**", cartesian=True)
    rng = np.random.default_rng(7)
    da, db = (x + x.T for x in rng.standard_normal((2, basis.nao, basis.nao)) * 0.3)
    builder = DirectGradient(DirectJK(basis, emulator.EmulatedBackend()), basis.shell_atom)
    coop = {c for c in builder.jk.quartet_classes() if gradient_kernels.variant(c) == "cooperative"}
    assert {(2, 1, 1, 1), (2, 1, 2, 1), (2, 2, 1, 1), (2, 2, 2, 1), (2, 2, 2, 2)} <= coop
    cpu = CPUEngine(mol, basis)
    for dk, factor in ((da[None], 0.5), (np.stack([da, db]), 1.0)):
        ref = cpu.two_electron_gradient(da, dk, factor)
        got = builder.gradient(da, dk, factor, mol.natm)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
