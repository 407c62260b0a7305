"""Derivatives of (mn|P) and (P|Q) contracted per atom (hartree.integrals.three_center_deriv)
against PySCF's int3c2e_ip1, int3c2e_ip2 and int2c2e_ip1 contracted with the same random
symmetric Gamma: water in STO-3G and 6-31G* (d shells) with def2-universal-JKFIT (up to g
auxiliary shells), spherical and cartesian."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.integrals.three_center import aux_shell_batches
from hartree.integrals.three_center_deriv import grad2c, grad3c
from hartree.molecule import Molecule
from tests.helpers import to_pyscf

pytest.importorskip("pyscf")

#: max |hartree - PySCF| allowed, relative to the largest per-atom component (measured 3e-14)
RTOL = 1e-12


@pytest.fixture(scope="module", params=[("sto-3g", False), ("6-31g*", False), ("6-31g*", True)], ids=str)
def case(request):
    """(molecule, basis, aux, Gamma (nao, nao, naux), Gamma2 (naux, naux)); water without symmetry."""
    name, cart = request.param
    mol = Molecule.from_string("O 0 0 0.12; H 0 0.76 -0.47; H 0.1 -0.76 -0.47")
    basis = load_basis(mol, name, cartesian=cart)
    aux = load_basis(mol, "def2-universal-jkfit", cartesian=cart)
    rng = np.random.default_rng(7)
    g3 = rng.standard_normal((basis.nao, basis.nao, aux.nao))
    g2 = rng.standard_normal((aux.nao, aux.nao))
    return mol, basis, aux, g3 + g3.transpose(1, 0, 2), g2 + g2.T


def _per_atom(values, basis):
    """(nfunction, 3) -> (natm, 3): each function's row added to its atom."""
    atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    out = np.zeros((int(atom.max()) + 1, 3))
    np.add.at(out, atom, values)
    return out


def test_grad3c_equals_pyscf(case):
    """PySCF's ip1 is (d/dr m n|P) = -d/dA, ip2 (mn|d/dr P) = -d/dC; Gamma symmetric in m, n
    doubles the m term."""
    from pyscf import df

    mol, basis, aux, g3, _ = case
    pmol, amol = to_pyscf(mol, basis), to_pyscf(mol, aux)
    nao, naux = basis.nao, aux.nao
    ip1 = df.incore.aux_e2(pmol, amol, "int3c2e_ip1", comp=3, aosym="s1").reshape(3, nao, nao, naux)
    ip2 = df.incore.aux_e2(pmol, amol, "int3c2e_ip2", comp=3, aosym="s1").reshape(3, nao, nao, naux)
    ref = _per_atom(-2.0 * np.einsum("xmnP,mnP->mx", ip1, g3), basis)
    ref += _per_atom(-np.einsum("xmnP,mnP->Px", ip2, g3), aux)
    got = grad3c(basis, aux, g3)
    assert np.abs(got - ref).max() <= RTOL * np.abs(ref).max()
    # aux-shell batches add up to the whole
    batches = aux_shell_batches(aux, 40)
    assert len(batches) > 2
    loc = np.asarray(aux.ao_loc)
    parts = sum(grad3c(basis, aux, g3[:, :, loc[s0] : loc[s1]], (s0, s1)) for s0, s1 in batches)
    np.testing.assert_allclose(parts, got, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_grad2c_equals_pyscf(case):
    """PySCF's int2c2e_ip1 is (d/dr P|Q) = -d/dR_P; Gamma symmetric doubles it."""
    mol, _, aux, _, g2 = case
    amol = to_pyscf(mol, aux)
    ref = _per_atom(-2.0 * np.einsum("xPQ,PQ->Px", amol.intor("int2c2e_ip1"), g2), aux)
    got = grad2c(aux, g2)
    assert np.abs(got - ref).max() <= RTOL * np.abs(ref).max()
    assert np.abs(got.sum(axis=0)).max() <= RTOL * np.abs(ref).max()  # translational invariance


def test_shapes_are_checked(case):
    _, basis, aux, g3, g2 = case
    with pytest.raises(ValueError, match="gamma must have shape"):
        grad3c(basis, aux, g3[:, :, :-1])
    with pytest.raises(ValueError, match="gamma2 must have shape"):
        grad2c(aux, g2[:-1])


@pytest.mark.parametrize("omega", [0.3, -0.3], ids=["erf", "erfc"])
def test_attenuated_derivatives_equal_pyscf(case, omega):
    """omega (bohr^-1) != 0: the derivatives of (mn|P) and (P|Q) of erf(0.3 r12)/r12 and
    erfc(0.3 r12)/r12 equal PySCF's int3c2e_ip1/ip2 and int2c2e_ip1 under
    ``with_range_coulomb(omega)`` contracted with the same Gamma (measured 1e-13 relative at most)."""
    from pyscf import df

    mol, basis, aux, g3, g2 = case
    pmol, amol = to_pyscf(mol, basis), to_pyscf(mol, aux)
    nao, naux = basis.nao, aux.nao
    with pmol.with_range_coulomb(omega), amol.with_range_coulomb(omega):
        ip1 = df.incore.aux_e2(pmol, amol, "int3c2e_ip1", comp=3, aosym="s1").reshape(3, nao, nao, naux)
        ip2 = df.incore.aux_e2(pmol, amol, "int3c2e_ip2", comp=3, aosym="s1").reshape(3, nao, nao, naux)
        v1 = amol.intor("int2c2e_ip1")
    ref3 = _per_atom(-2.0 * np.einsum("xmnP,mnP->mx", ip1, g3), basis)
    ref3 += _per_atom(-np.einsum("xmnP,mnP->Px", ip2, g3), aux)
    ref2 = _per_atom(-2.0 * np.einsum("xPQ,PQ->Px", v1, g2), aux)
    got3, got2 = grad3c(basis, aux, g3, omega=omega), grad2c(aux, g2, omega=omega)
    assert np.abs(got3 - ref3).max() <= RTOL * np.abs(ref3).max()
    assert np.abs(got2 - ref2).max() <= RTOL * np.abs(ref2).max()
    assert np.abs(got3 - grad3c(basis, aux, g3)).max() > 1e-2 * np.abs(ref3).max()  # not the 1/r12 ones


def test_attenuated_derivatives_are_those_of_the_integrals():
    """Central differences (h = 1e-4 bohr) of sum Gamma (mn|P)_omega and sum Gamma (P|Q)_omega
    (hartree.integrals.three_center with omega) in two coordinates equal grad3c/grad2c with
    omega, erf and erfc, to 1e-8 relative to the largest component (water / STO-3G)."""
    from hartree.integrals.three_center import int2c2e, int3c2e

    mol = Molecule.from_string("O 0 0 0.12; H 0 0.76 -0.47; H 0.1 -0.76 -0.47")
    basis, aux = load_basis(mol, "sto-3g"), load_basis(mol, "def2-universal-jkfit")
    rng = np.random.default_rng(3)
    g3 = rng.standard_normal((basis.nao, basis.nao, aux.nao))
    g3 = g3 + g3.transpose(1, 0, 2)
    g2 = rng.standard_normal((aux.nao, aux.nao))
    g2 = g2 + g2.T
    h = 1e-4
    for omega in (0.3, -0.3):
        got3, got2 = grad3c(basis, aux, g3, omega=omega), grad2c(aux, g2, omega=omega)
        for atom, xyz in ((0, 2), (1, 0)):
            sums = []
            for sign in (1, -1):
                coords = np.array(mol.coords, dtype=float)
                coords[atom, xyz] += sign * h
                moved = mol.replace(coords=coords)
                b, a = load_basis(moved, "sto-3g"), load_basis(moved, "def2-universal-jkfit")
                sums.append(np.array([np.sum(g3 * int3c2e(b, a, omega=omega)), np.sum(g2 * int2c2e(a, omega=omega))]))
            fd = (sums[0] - sums[1]) / (2 * h)
            assert abs(fd[0] - got3[atom, xyz]) < 1e-8 * np.abs(got3).max()
            assert abs(fd[1] - got2[atom, xyz]) < 1e-8 * np.abs(got2).max()
