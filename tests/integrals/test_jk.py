"""Direct J/K against contractions of PySCF's full ERI tensor; screening accuracy."""

import numpy as np
import pytest
import scipy.linalg

from hartree.basis import load_basis
from hartree.integrals import one_electron
from hartree.integrals.eri import ShellPairs
from hartree.integrals.jk import jk
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water

ATOL = 1e-10


def random_dms(rng, nset, nao):
    d = rng.standard_normal((nset, nao, nao)) * 0.3
    return d + d.transpose(0, 2, 1)


@pytest.mark.parametrize("name, cartesian", [("cc-pvdz", False), ("6-31g*", True)])
def test_jk_matches_full_tensor(name, cartesian):
    mol = water()
    basis = load_basis(mol, name, cartesian=cartesian)
    g = to_pyscf(mol, basis).intor("int2e_cart" if cartesian else "int2e")
    dms = random_dms(np.random.default_rng(0), 3, basis.nao)
    J, K = jk(basis, dms, threshold=0.0)
    np.testing.assert_allclose(J, np.einsum("ijkl,xkl->xij", g, dms), rtol=0, atol=ATOL)
    np.testing.assert_allclose(K, np.einsum("ikjl,xkl->xij", g, dms), rtol=0, atol=ATOL)


def test_single_matrix_and_flags():
    mol = water()
    basis = load_basis(mol, "sto-3g")
    pairs = ShellPairs.build(basis)
    g = to_pyscf(mol, basis).intor("int2e")
    dm = random_dms(np.random.default_rng(1), 1, basis.nao)[0]
    J, K = jk(basis, dm, pairs=pairs)
    assert J.shape == K.shape == dm.shape
    np.testing.assert_allclose(J, np.einsum("ijkl,kl->ij", g, dm), rtol=0, atol=ATOL)
    np.testing.assert_allclose(K, np.einsum("ikjl,kl->ij", g, dm), rtol=0, atol=ATOL)
    Jo, Ko = jk(basis, dm, with_k=False, pairs=pairs)
    assert Ko is None
    np.testing.assert_allclose(Jo, J, rtol=0, atol=1e-14)
    Jo, Ko = jk(basis, dm, with_j=False, pairs=pairs)
    assert Jo is None
    np.testing.assert_allclose(Ko, K, rtol=0, atol=1e-14)


def core_density(basis, mol):
    """Closed-shell density of the core-Hamiltonian guess (a realistic, delocalised D)."""
    s = one_electron.overlap(basis)
    h = one_electron.kinetic(basis) + one_electron.nuclear(basis, np.asarray(mol.numbers, float), mol.coords)
    _, c = scipy.linalg.eigh(h, s)
    occ = c[:, : mol.nelectron // 2]
    return 2.0 * occ @ occ.T


def water_chain(n, spacing=3.2):
    """n water molecules along x, ``spacing`` Angstrom apart (spatially extended)."""
    lines = []
    for k in range(n):
        x = k * spacing
        lines += [f"O {x:.3f} 0 0.1173", f"H {x + 0.3:.3f} 0.7572 -0.4692", f"H {x - 0.3:.3f} -0.7572 -0.4692"]
    return Molecule.from_string("\n".join(lines))


def test_screening_error_is_small():
    """Threshold 1e-13 against no screening on a chain of 5 waters (12.8 Angstrom long),
    for a full density and for a small density difference (what incremental Fock builds
    pass)."""
    mol = water_chain(5)
    basis = load_basis(mol, "6-31g")
    pairs = ShellPairs.build(basis)
    dm = core_density(basis, mol)
    ddm = 1e-5 * random_dms(np.random.default_rng(2), 1, basis.nao)[0]
    for d in (dm, ddm):
        J0, K0 = jk(basis, d, threshold=0.0, pairs=pairs)
        J1, K1 = jk(basis, d, threshold=1e-13, pairs=pairs)
        assert np.abs(J1 - J0).max() < 1e-10
        assert np.abs(K1 - K0).max() < 1e-10
        # screening at 1e-6 must change something (it is actually applied)
        J2, _ = jk(basis, d, threshold=1e-6 * np.abs(d).max(), pairs=pairs)
        assert np.abs(J2 - J0).max() > 0.0


def test_jk_symmetry_of_result():
    mol = water()
    basis = load_basis(mol, "cc-pvdz")
    dms = random_dms(np.random.default_rng(4), 2, basis.nao)
    J, K = jk(basis, dms)
    np.testing.assert_allclose(J, J.transpose(0, 2, 1), rtol=0, atol=1e-13)
    np.testing.assert_allclose(K, K.transpose(0, 2, 1), rtol=0, atol=1e-13)


@pytest.mark.parametrize("pure", [True, False])
def test_generated_and_generic_drivers(pure):
    """J/K through the generated per-class kernels and through the generic kernel only,
    both against PySCF's tensor, on random contracted s, p, d shells (every generated
    class occurs, in both bra/ket orders)."""
    from tests.integrals.test_eri import custom_basis, pyscf_eri, random_shells

    rng = np.random.default_rng(11)  # (every atom gets shells with this seed)
    coords = rng.uniform(-1.5, 1.5, (3, 3))
    basis = custom_basis(random_shells(rng, 3, 2, 7), coords, pure)
    g = pyscf_eri(coords, basis)
    dms = random_dms(np.random.default_rng(12), 2, basis.nao)
    Jr = np.einsum("ijkl,xkl->xij", g, dms)
    Kr = np.einsum("ikjl,xkl->xij", g, dms)
    pairs = ShellPairs.build(basis)
    for generated in (True, False):
        J, K = jk(basis, dms, threshold=0.0, pairs=pairs, generated=generated)
        np.testing.assert_allclose(J, Jr, rtol=0, atol=ATOL)
        np.testing.assert_allclose(K, Kr, rtol=0, atol=ATOL)
