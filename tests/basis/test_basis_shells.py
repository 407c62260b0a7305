"""The Basis container: derived arrays, immutability, labels, per-atom views."""

import dataclasses

import numpy as np
import pytest

from hartree.basis import Basis, load_basis, normalized_coefficients, primitive_norm
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water


def test_primitive_norm_equals_pyscf():
    from pyscf.gto import gto_norm

    for l in range(7):
        for a in (1e-2, 0.3, 7.0, 1e4):
            assert abs(primitive_norm(l, a) / gto_norm(l, a) - 1) < 1e-14


def test_normalized_coefficients_equal_libcint():
    import pyscf.gto

    exps, coefs = [3.42525091, 0.62391373, 0.1688554], [0.15432897, 0.53532814, 0.44463454]
    for l in (0, 2, 4):
        mol = pyscf.gto.M(atom="He 0 0 0", basis={"He": [[l, *map(list, zip(exps, coefs))]]}, verbose=0)
        np.testing.assert_allclose(
            normalized_coefficients(l, exps, coefs), mol._libcint_ctr_coeff(0).ravel(), rtol=1e-13
        )


def test_fields_dtypes_and_readonly():
    b = load_basis(water(), "6-31g**")
    assert [f.name for f in dataclasses.fields(Basis)][:11] == [
        "name",
        "pure",
        "shell_atom",
        "shell_l",
        "shell_nprim",
        "shell_prim_start",
        "shell_center",
        "exponents",
        "coefficients",
        "ao_loc",
        "cart_loc",
    ]
    for name in ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start", "ao_loc", "cart_loc"):
        assert getattr(b, name).dtype == np.int64
        with pytest.raises(ValueError):
            getattr(b, name)[0] = 1
    assert b.shell_center.shape == (b.nshell, 3) and b.exponents.dtype == np.float64
    assert (b.nshell, b.nao, b.ncart, b.max_l) == (12, 24, 25, 2)
    np.testing.assert_allclose(b.shell_center, water().coords[b.shell_atom], atol=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.name = "x"
    cart = load_basis(water(), "6-31g**", cartesian=True)
    assert not cart.pure and cart.nao == cart.ncart == 25
    np.testing.assert_array_equal(cart.ao_loc, cart.cart_loc)


def test_hand_made_basis_and_validation():
    kw = dict(
        name="toy",
        pure=True,
        shell_atom=[0, 0],
        shell_l=[0, 2],
        shell_nprim=[2, 1],
        shell_prim_start=[0, 2],
        shell_center=np.zeros((2, 3)),
        exponents=[1.0, 0.5, 0.8],
        coefficients=[0.5, 0.5, 1.0],
    )
    b = Basis(**kw)
    np.testing.assert_array_equal(b.ao_loc, [0, 1, 6])
    np.testing.assert_array_equal(b.cart_loc, [0, 1, 7])
    assert b.ao_labels() == ["0 X 1s", "0 X 3dxy", "0 X 3dyz", "0 X 3dz^2", "0 X 3dxz", "0 X 3dx2-y2"]
    with pytest.raises(ValueError, match="ao_loc"):
        Basis(**{**kw, "ao_loc": [0, 1, 7]})
    with pytest.raises(ValueError, match="outside the primitives"):
        Basis(**{**kw, "shell_nprim": [2, 2]})
    with pytest.raises(ValueError, match="shell_l"):
        Basis(**{**kw, "shell_l": [0, 7]})


@pytest.mark.parametrize("name, cart", [("cc-pvqz", False), ("cc-pvtz", True), ("sto-3g", False)])
def test_ao_labels_and_atom_slices_equal_pyscf(name, cart):
    mol = Molecule.from_string("C 0 0 0; O 0 0 1.13; H 0 1 -0.5", charge=1)
    b = load_basis(mol, name, cartesian=cart)
    ref = to_pyscf(mol, b)
    ours = [lab.split() for lab in b.ao_labels()]
    theirs = [lab.split() for lab in ref.ao_labels()]
    assert [o[0] for o in ours] == [t[0] for t in theirs]
    assert [o[1] for o in ours] == [t[1].rstrip("0123456789") for t in theirs]  # "O2" -> "O"
    assert [o[2] for o in ours] == [t[2] for t in theirs]
    np.testing.assert_array_equal(b.atom_slices(), ref.aoslice_by_atom())


def test_for_atoms():
    mol = Molecule.from_string("C 0 0 0; O 0 0 1.13; H 0 1 -0.5", charge=1)
    b = load_basis(mol, "cc-pvdz")
    sub = b.for_atoms([1])
    assert sub.natm == 1 and sub.atom_symbols == ("O",) and sub.nao == 14
    o = b.shell_atom == 1
    np.testing.assert_array_equal(sub.shell_l, b.shell_l[o])
    np.testing.assert_array_equal(sub.exponents, np.concatenate([b.shell_exponents(i) for i in np.flatnonzero(o)]))
    np.testing.assert_allclose(sub.shell_center, b.shell_center[o], atol=0)
    both = b.for_atoms([2, 0])
    assert both.atom_symbols == ("H", "C") and both.nao == 5 + 14
    np.testing.assert_array_equal(both.shell_atom[:3], [0, 0, 0])
