"""Molden writer: read our files back with PySCF's reader and compare orbitals."""

import numpy as np
import pytest
from pyscf import gto
from pyscf.tools import molden as pyscf_molden

from hartree.basis import load_basis
from hartree.errors import InputError
from hartree.io.molden import (
    cartesian_shell_order_and_scale,
    check_molden_supported,
    molden_text,
    spherical_shell_order,
    write_molden,
)
from hartree.molecule import Molecule

TOL = 1e-9


def _projected(loaded_mol, loaded_coeff, ref_mol, ref_coeff):
    """C_loaded^T S(loaded, ref) C_ref: the identity when both describe the same orbitals."""
    cross = gto.intor_cross("int1e_ovlp", loaded_mol, ref_mol)
    return loaded_coeff.T @ cross @ ref_coeff


@pytest.mark.parametrize(
    "basis_name, cartesian",
    [
        ("cc-pvtz", False),  # s, p, d, f spherical
        ("cc-pvtz", True),  # s, p, d, f cartesian (xx vs xy normalisation)
        ("cc-pvqz", False),  # up to g, spherical
    ],
)
def test_rhf_round_trip_through_pyscf_reader(tmp_path, water, make_result, basis_name, cartesian):
    result, ref_mol = make_result(water, basis_name, cartesian=cartesian)
    path = tmp_path / "water.molden"
    write_molden(path, result)
    mol, mo_energy, mo_coeff, mo_occ, _, spins = pyscf_molden.load(str(path))
    assert mol.cart == cartesian
    assert mol.nao == result.basis.nao
    np.testing.assert_allclose(mol.atom_coords(), result.molecule.coords, atol=1e-10)
    np.testing.assert_allclose(mo_energy, result.mo_energy, atol=1e-10)
    np.testing.assert_allclose(mo_occ, result.mo_occ, atol=1e-10)
    assert set(spins) == {"ALPHA"}
    projected = _projected(mol, mo_coeff, ref_mol, result.mo_coeff)
    np.testing.assert_allclose(projected, np.eye(mol.nao), atol=TOL)


def test_cartesian_g_round_trip(tmp_path, make_result):
    """Cartesian g shells (15G order, per-component norms) on a single neon atom."""
    atoms = [("Ne", (0.1, -0.2, 0.3))]
    result, ref_mol = make_result(atoms, "cc-pvqz", cartesian=True)
    assert result.basis.max_l == 4
    path = tmp_path / "ne.molden"
    write_molden(path, result)
    mol, _, mo_coeff, _, _, _ = pyscf_molden.load(str(path))
    projected = _projected(mol, mo_coeff, ref_mol, result.mo_coeff)
    np.testing.assert_allclose(projected, np.eye(mol.nao), atol=TOL)


@pytest.mark.parametrize("cartesian", [False, True])
def test_uhf_round_trip_alpha_and_beta(tmp_path, water, make_result, cartesian):
    result, ref_mol = make_result(water, "cc-pvdz", cartesian=cartesian, unrestricted=True)
    path = tmp_path / "triplet.molden"
    write_molden(path, result)
    mol, mo_energy, mo_coeff, mo_occ, _, spins = pyscf_molden.load(str(path))
    for spin in (0, 1):
        np.testing.assert_allclose(mo_energy[spin], result.mo_energy[spin], atol=1e-10)
        np.testing.assert_allclose(mo_occ[spin], result.mo_occ[spin], atol=1e-10)
        projected = _projected(mol, mo_coeff[spin], ref_mol, result.mo_coeff[spin])
        np.testing.assert_allclose(projected, np.eye(mol.nao), atol=TOL)
    assert set(spins[1]) == {"BETA"}
    assert mol.spin == 2


def test_orbital_values_on_points(tmp_path, water, make_result):
    """Orbital values on random points agree with PySCF's AOs times our coefficients."""
    result, ref_mol = make_result(water, "cc-pvtz", cartesian=True, seed=3)
    path = tmp_path / "values.molden"
    write_molden(path, result)
    mol, _, mo_coeff, _, _, _ = pyscf_molden.load(str(path))
    points = np.random.default_rng(1).normal(scale=1.5, size=(50, 3))
    ours = ref_mol.eval_gto("GTOval_cart", points) @ result.mo_coeff
    theirs = mol.eval_gto("GTOval_cart", points) @ mo_coeff
    np.testing.assert_allclose(theirs, ours, atol=1e-8 * np.abs(ours).max())


def test_file_layout(water, make_result):
    result, _ = make_result(water, "6-31g*")
    text = molden_text(result)
    lines = text.splitlines()
    assert lines[0] == "[Molden Format]"
    for section in ("[Title]", "[Atoms] AU", "[GTO]", "[5D7F]", "[9G]", "[MO]"):
        assert section in lines
    atoms = lines[lines.index("[Atoms] AU") + 1 : lines.index("[Atoms] AU") + 4]
    first = atoms[0].split()
    assert first[:3] == ["O", "1", "8"]
    np.testing.assert_allclose([float(x) for x in first[3:]], result.molecule.coords[0], atol=1e-11)
    assert atoms[2].split()[:3] == ["H", "3", "1"]
    assert text.count("Ene=") == result.basis.nao
    assert text.count("Spin= Alpha") == result.basis.nao


def test_cartesian_file_has_no_spherical_flags(water, make_result):
    result, _ = make_result(water, "6-31g*", cartesian=True)
    text = molden_text(result)
    assert "[5D" not in text and "[9G]" not in text


def test_gto_coefficients_are_for_normalised_primitives(water, make_result):
    """[GTO] lists coefficients for normalised primitives, i.e. the basis-file numbers.

    Reference: STO-3G oxygen 1s as published (basis-set-exchange): exponents
    130.7093214, 23.80886605, 6.443608313; coefficients 0.1543289673,
    0.5353281423, 0.4446345422 (contraction normalised to 1 within 1e-4).
    """
    result, _ = make_result(water, "sto-3g")
    lines = molden_text(result).splitlines()
    start = lines.index("[GTO]")
    assert lines[start + 1].split() == ["1", "0"]
    assert lines[start + 2].split() == ["s", "3", "1.00"]
    first_shell = [line.split() for line in lines[start + 3 : start + 6]]
    exps = [float(a) for a, _ in first_shell]
    coefs = np.array([float(c) for _, c in first_shell])
    np.testing.assert_allclose(exps, [130.7093214, 23.80886605, 6.443608313], rtol=1e-12)
    published = np.array([0.1543289673, 0.5353281423, 0.4446345422])
    ratio = coefs / published
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)
    assert abs(ratio[0] - 1.0) < 1e-4


def test_component_orders():
    assert spherical_shell_order(1) == [0, 1, 2]
    assert spherical_shell_order(2) == [2, 3, 1, 4, 0]  # d0, d+1, d-1, d+2, d-2
    assert spherical_shell_order(4) == [4, 5, 3, 6, 2, 7, 1, 8, 0]
    positions, scales = cartesian_shell_order_and_scale(2)
    assert positions == [0, 3, 5, 1, 2, 4]  # xx yy zz xy xz yz
    np.testing.assert_allclose(scales, np.sqrt(4 * np.pi / 15) * np.array([3, 3, 3, 1, 1, 1]) ** 0.5)


def test_h_functions_are_refused():
    molecule = Molecule.from_string("Ne 0 0 0")
    basis = load_basis(molecule, "cc-pv5z")
    assert basis.max_l == 5
    with pytest.raises(InputError, match="up to g"):
        check_molden_supported(basis)
