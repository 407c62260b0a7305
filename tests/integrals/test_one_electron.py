"""One-electron integrals (hartree.integrals.one_electron) against PySCF (libcint).

Tolerances: every element agrees to ATOL = 1e-10 absolute plus RTOL = 1e-11 relative
(the relative part matters only for the large kinetic/nuclear elements of tight core
functions, up to ~1e4 hartree for Br/Kr).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from hartree.basis import cart_components, load_basis
from hartree.integrals import one_electron as oe
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water

ATOL = 1e-10
RTOL = 1e-11


def _close(ours, ref):
    np.testing.assert_allclose(ours, ref, atol=ATOL, rtol=RTOL)


def _all_four(mol, basis, origin):
    """Our (S, T, V, R) and PySCF's for the same molecule/basis/origin."""
    pmol = to_pyscf(mol, basis)
    ours = (
        oe.overlap(basis),
        oe.kinetic(basis),
        oe.nuclear(basis, mol.numbers.astype(float), mol.coords),
        oe.dipole(basis, origin),
    )
    with pmol.with_common_orig(origin):
        ref = (pmol.intor("int1e_ovlp"), pmol.intor("int1e_kin"), pmol.intor("int1e_nuc"), pmol.intor("int1e_r"))
    return ours, ref


def _write_random_basis(path, rng, elements, lmax, nprim=2):
    """NWChem basis file: per element one contracted shell of each l = 0..lmax with
    random exponents (0.15..6 bohr^-2) and coefficients (0.2..1)."""
    lines = ['BASIS "ao basis" PRINT']
    for el in elements:
        for l in range(lmax + 1):
            lines.append(f"{el}    {'SPDFGHI'[l]}")
            exps = np.sort(rng.uniform(0.15, 6.0, nprim))[::-1]
            for e, c in zip(exps, rng.uniform(0.2, 1.0, nprim)):
                lines.append(f"  {e:.10f}  {c:.10f}")
    lines.append("END")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("cartesian", [False, True])
def test_ccpvqz_matches_pyscf(cartesian):
    """s..g shells (cc-pVQZ) on HF and H2O, spherical and cartesian (_cart variants)."""
    mol = Molecule.from_string("F 0.1 -0.2 0.05; H 0.3 0.6 0.9; O -1.2 0.4 1.7; H -1.9 0.2 1.1; H -1.4 1.3 2.0")
    basis = load_basis(mol, "cc-pvqz", cartesian=cartesian)
    assert basis.max_l == 4
    ours, ref = _all_four(mol, basis, origin=np.array([0.3, -0.7, 1.1]))
    for a, b in zip(ours, ref):
        assert a.shape == b.shape
        _close(a, b)


@pytest.mark.parametrize("cartesian", [False, True])
def test_random_exponents_up_to_i(tmp_path, cartesian):
    """A user basis file with random exponents and shells s..i (l = 0..6) on N, C, H."""
    rng = np.random.default_rng(7)
    path = _write_random_basis(tmp_path / "rand.nw", rng, ["N", "C", "H"], lmax=6)
    mol = Molecule.from_string("N 0 0 0; C 0.4 1.1 0.3; H -0.8 -0.5 0.9")
    basis = load_basis(mol, path, cartesian=cartesian)
    assert basis.max_l == 6
    ours, ref = _all_four(mol, basis, origin=np.array([-0.4, 0.2, 0.9]))
    for a, b in zip(ours, ref):
        _close(a, b)


@pytest.mark.parametrize("cartesian", [False, True])
def test_heavy_atoms_nuclear(cartesian):
    """Br and Kr (all-electron cc-pVTZ: tight s, up to f), large nuclear attraction."""
    mol = Molecule.from_string("Br 0 0 0; H 0 0 1.41; Kr 2.1 1.3 -1.5")
    basis = load_basis(mol, "cc-pvtz", cartesian=cartesian)
    pmol = to_pyscf(mol, basis)
    V = oe.nuclear(basis, mol.numbers.astype(float), mol.coords)
    Vref = pmol.intor("int1e_nuc")
    assert np.abs(Vref).max() > 1e3
    _close(V, Vref)
    _close(oe.kinetic(basis), pmol.intor("int1e_kin"))


def test_external_point_charges():
    """nuclear() with arbitrary point charges (signs, off-atom positions) equals
    sum_C -q_C <m| 1/|r - R_C| |n> from PySCF's int1e_rinv."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz")
    pmol = to_pyscf(mol, basis)
    rng = np.random.default_rng(3)
    charges = np.array([0.7, -1.3, 2.5, -0.4])
    coords = rng.uniform(-4.0, 4.0, (4, 3))
    coords[3] = mol.coords[1]  # a charge sitting on a nucleus
    ref = np.zeros((basis.nao, basis.nao))
    for q, c in zip(charges, coords):
        with pmol.with_rinv_origin(c):
            ref -= q * pmol.intor("int1e_rinv")
    _close(oe.nuclear(basis, charges, coords), ref)
    _close(oe.nuclear(basis, np.zeros(0), np.zeros((0, 3))), np.zeros_like(ref))


def test_symmetric_and_diagonal():
    """Exact symmetry (both triangles written from one block) and unit overlap diagonal."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz")
    S = oe.overlap(basis)
    T = oe.kinetic(basis)
    V = oe.nuclear(basis, mol.numbers.astype(float), mol.coords)
    R = oe.dipole(basis, [0.1, 0.2, 0.3])
    for M in (S, T, V, *R):
        assert np.array_equal(M, M.T)
    np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-12)
    assert np.all(np.diag(T) > 0) and np.all(np.diag(V) < 0)


_finite = st.floats(-5.0, 5.0, allow_nan=False)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shift=st.tuples(_finite, _finite, _finite), seed=st.integers(0, 2**31 - 1), cartesian=st.booleans())
def test_random_rigid_motions_match_pyscf(shift, seed, cartesian):
    """Random rotation + translation of a molecule with d/f shells: all four integrals
    agree with PySCF; S and T are translation invariant (same shells, shifted)."""
    base = Molecule.from_string("N 0 0 0; C 1.2 0.3 -0.2; H -0.6 0.9 0.4")
    rot = Rotation.random(random_state=seed).as_matrix()
    coords = base.coords @ rot.T + np.asarray(shift)
    mol = base.replace(coords=coords)
    basis = load_basis(mol, "cc-pvtz", cartesian=cartesian)
    ours, ref = _all_four(mol, basis, origin=np.asarray(shift) * 0.5)
    for a, b in zip(ours, ref):
        _close(a, b)
    # translation invariance of S and T, and of V when the nuclei move too
    moved = mol.replace(coords=coords + np.array([3.0, -1.5, 2.25]))
    mbasis = load_basis(moved, "cc-pvtz", cartesian=cartesian)
    np.testing.assert_allclose(oe.overlap(mbasis), ours[0], atol=1e-12)
    np.testing.assert_allclose(oe.kinetic(mbasis), ours[1], atol=1e-11, rtol=1e-12)
    np.testing.assert_allclose(
        oe.nuclear(mbasis, moved.numbers.astype(float), moved.coords), ours[2], atol=1e-11, rtol=1e-12
    )


def test_dipole_origin_shift():
    """<r - O'> = <r - O> - (O' - O) S, component by component."""
    mol = water()
    basis = load_basis(mol, "6-31g**")
    S = oe.overlap(basis)
    o1, o2 = np.array([0.2, -0.1, 0.4]), np.array([-1.0, 0.5, 2.0])
    R1, R2 = oe.dipole(basis, o1), oe.dipole(basis, o2)
    for k in range(3):
        np.testing.assert_allclose(R2[k], R1[k] - (o2[k] - o1[k]) * S, atol=1e-12)


def test_shell_pair_block_and_tables():
    """shell_pair_block equals the matrix slices (pure and cartesian); the shared
    tables follow PySCF's component order and cart2sph."""
    mol = water()
    sph = load_basis(mol, "cc-pvtz")
    cart = load_basis(mol, "cc-pvtz", cartesian=True)
    S_sph, S_cart = oe.overlap(sph), oe.overlap(cart)
    R_sph = oe.dipole(sph, [0.0, 0.0, 0.0])
    ish = int(np.argmax(sph.shell_l))  # an f shell
    jsh = 1
    a, b = slice(sph.ao_loc[ish], sph.ao_loc[ish + 1]), slice(sph.ao_loc[jsh], sph.ao_loc[jsh + 1])
    ca = slice(sph.cart_loc[ish], sph.cart_loc[ish + 1])
    cb = slice(sph.cart_loc[jsh], sph.cart_loc[jsh + 1])
    np.testing.assert_allclose(oe.shell_pair_block(sph, ish, jsh)[0], S_sph[a, b], atol=1e-14)
    np.testing.assert_allclose(oe.shell_pair_block(sph, ish, jsh, cartesian=True)[0], S_cart[ca, cb], atol=1e-14)
    np.testing.assert_allclose(oe.shell_pair_block(sph, ish, jsh, "dipole"), R_sph[:, a, b], atol=1e-14)
    xyz = oe.cart_xyz_table()
    for l in range(oe.MAX_L + 1):
        assert [tuple(r) for r in xyz[l, : (l + 1) * (l + 2) // 2]] == cart_components(l)


def test_rejects_mismatched_charges():
    mol = water()
    basis = load_basis(mol, "sto-3g")
    with pytest.raises(ValueError):
        oe.nuclear(basis, [1.0, 2.0], np.zeros((3, 3)))
