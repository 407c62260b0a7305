"""Three-index (mu nu|P) and two-index (P|Q) Coulomb integrals against PySCF (the oracle)."""

import numpy as np
import pytest
from pyscf import df

from hartree.basis import Basis, load_basis, normalized_coefficients
from hartree.integrals.three_center import aux_shell_batches, int2c2e, int3c2e
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water

ATOL = 1e-10


def _basis(mol, shells, pure, name):
    """Basis from [(atom, l, exponents, raw coefficients)] with normalised contractions."""
    exps, coefs, start = [], [], []
    for _atom, l, e, c in shells:
        start.append(len(exps))
        exps.extend(e)
        coefs.extend(normalized_coefficients(l, np.array(e, float), np.array(c, float)))
    return Basis(
        name=name,
        pure=pure,
        shell_atom=[s[0] for s in shells],
        shell_l=[s[1] for s in shells],
        shell_nprim=[len(s[2]) for s in shells],
        shell_prim_start=start,
        shell_center=[mol.coords[s[0]] for s in shells],
        exponents=exps,
        coefficients=coefs,
    )


def _high_l(pure):
    """Orbital shells s..g and auxiliary shells s..i (l_mu + l_nu + l_P up to 14)."""
    mol = Molecule.from_string("O 0.1 -0.2 0.0; H 0.3 0.5 0.9", multiplicity=2)
    orb = _basis(
        mol,
        [
            (0, 0, [5.0, 0.9], [0.4, 0.7]),
            (0, 1, [1.1], [1.0]),
            (0, 2, [0.8, 2.5], [0.5, 0.5]),
            (0, 3, [0.9], [1.0]),
            (0, 4, [1.2], [1.0]),
            (1, 0, [0.6], [1.0]),
            (1, 2, [0.7], [1.0]),
        ],
        pure,
        "test-orbital",
    )
    aux = _basis(
        mol,
        [(0, l, [1.5 + 0.3 * l], [1.0]) for l in range(7)]
        + [(1, 0, [0.9, 3.0], [0.6, 0.5]), (1, 1, [1.3], [1.0]), (1, 5, [2.0], [1.0])],
        pure,
        "test-aux",
    )
    return mol, orb, aux


@pytest.mark.parametrize("pure", [True, False])
def test_high_l_equals_pyscf(pure):
    mol, orb, aux = _high_l(pure)
    pmol, paux = to_pyscf(mol, orb), to_pyscf(mol, aux)
    j3 = int3c2e(orb, aux)
    assert j3.shape == (orb.nao, orb.nao, aux.nao)
    np.testing.assert_allclose(j3, df.incore.aux_e2(pmol, paux, "int3c2e"), rtol=0, atol=ATOL)
    np.testing.assert_allclose(int2c2e(aux), paux.intor("int2c2e"), rtol=0, atol=ATOL)


@pytest.mark.parametrize("cartesian", [False, True])
def test_water_ccpvdz_rifit_equals_pyscf(cartesian):
    mol = water()
    orb = load_basis(mol, "cc-pvdz", cartesian=cartesian)
    aux = load_basis(mol, "cc-pvdz-rifit", cartesian=cartesian)
    pmol, paux = to_pyscf(mol, orb), to_pyscf(mol, aux)
    ref = df.incore.aux_e2(pmol, paux, "int3c2e")
    np.testing.assert_allclose(int3c2e(orb, aux), ref, rtol=0, atol=ATOL)
    np.testing.assert_allclose(int2c2e(aux), paux.intor("int2c2e"), rtol=0, atol=ATOL)
    # aux-shell batches reproduce the corresponding slices
    loc = aux.ao_loc
    for s0, s1 in aux_shell_batches(aux, 20):
        assert loc[s1] - loc[s0] <= 20 or s1 - s0 == 1
        np.testing.assert_allclose(int3c2e(orb, aux, (s0, s1)), ref[:, :, loc[s0] : loc[s1]], rtol=0, atol=ATOL)


def test_batches_cover_all_shells_in_order():
    mol = water()
    aux = load_basis(mol, "cc-pvdz-rifit")
    for size in (1, 7, 50, 10_000):
        b = aux_shell_batches(aux, size)
        assert b[0][0] == 0 and b[-1][1] == aux.nshell
        assert all(x[1] == y[0] for x, y in zip(b, b[1:]))


def test_metric_is_symmetric_positive_definite():
    aux = load_basis(water(), "cc-pvdz-rifit")
    v = int2c2e(aux)
    np.testing.assert_array_equal(v, v.T)
    assert np.linalg.eigvalsh(v).min() > 0


def test_bad_aux_range_raises():
    mol = water()
    orb, aux = load_basis(mol, "sto-3g"), load_basis(mol, "cc-pvdz-rifit")
    with pytest.raises(ValueError):
        int3c2e(orb, aux, (3, aux.nshell + 1))


@pytest.mark.parametrize("pure", [True, False])
def test_i_shells_everywhere_equal_pyscf(pure):
    """(ii|i): l_mu + l_nu + l_P = 18, ten Rys roots, the largest Basis allows (MAX_L = 6)."""
    mol = Molecule.from_string("He 0 0 0; He 0.4 0.3 -0.5", charge=0)
    orb = _basis(mol, [(0, 6, [1.0], [1.0]), (1, 6, [0.7, 1.9], [0.5, 0.6])], pure, "i")
    aux = _basis(mol, [(0, 3, [0.5], [1.0]), (1, 6, [1.3], [1.0])], pure, "i-aux")
    pmol, paux = to_pyscf(mol, orb), to_pyscf(mol, aux)
    ref = df.incore.aux_e2(pmol, paux, "int3c2e")
    scale = np.abs(ref).max()
    np.testing.assert_allclose(int3c2e(orb, aux), ref, rtol=0, atol=ATOL * max(1.0, scale))
    np.testing.assert_allclose(int2c2e(aux), paux.intor("int2c2e"), rtol=0, atol=ATOL)


def test_pair_screening_drops_distant_pairs_without_changing_integrals():
    mol = Molecule.from_string("O 0 0 0; H 0 0.76 0.59; O 0 0 9; H 0 0.76 9.59; H 0 -0.76 9.59; H 0 -0.76 0.59")
    orb, aux = load_basis(mol, "cc-pvdz"), load_basis(mol, "cc-pvdz-rifit")
    from hartree.integrals.three_center import significant_pairs

    n = orb.nshell
    assert len(significant_pairs(orb, 1e-14)) < n * (n + 1) // 2
    assert len(significant_pairs(orb, 0.0)) == n * (n + 1) // 2
    s0, s1 = 0, 6
    full = int3c2e(orb, aux, (s0, s1), screening=0.0)
    np.testing.assert_allclose(int3c2e(orb, aux, (s0, s1)), full, rtol=0, atol=1e-12)
    ref = df.incore.aux_e2(to_pyscf(mol, orb), to_pyscf(mol, aux), "int3c2e")
    np.testing.assert_allclose(full, ref[:, :, aux.ao_loc[s0] : aux.ao_loc[s1]], rtol=0, atol=ATOL)


def test_mo_transform_in_batches_equals_einsum():
    from hartree.integrals.three_center import mo_int3c2e

    mol = water()
    orb, aux = load_basis(mol, "cc-pvdz"), load_basis(mol, "cc-pvdz-rifit")
    rng = np.random.default_rng(5)
    c1, c2 = rng.standard_normal((orb.nao, 3)), rng.standard_normal((orb.nao, 7))
    full = np.einsum("mi,nb,mnP->ibP", c1, c2, int3c2e(orb, aux))
    (tiny,) = mo_int3c2e(orb, aux, [(c1, c2)], memory_mb=0.05)  # ~10 aux functions a batch
    np.testing.assert_allclose(tiny, full, rtol=0, atol=1e-11)


# ------------------------------------------------------------------ attenuated operators
@pytest.mark.parametrize("omega", [0.3, -0.3, 5.0])
def test_attenuated_water_jkfit_equals_pyscf(omega):
    """(mn|P) and (P|Q) of erf(omega r12)/r12 (omega > 0, wB97X's 0.3 and a large 5.0) and of
    erfc(|omega| r12)/r12 (omega < 0) equal PySCF's under ``with_range_coulomb(omega)``
    (libcint's attenuated Rys roots; hartree: the Rys rule at theta T, and erfc as 1/r12 - erf),
    all aux shells and one batch, water def2-SVP / def2-universal-jkfit."""
    mol = water()
    orb, aux = load_basis(mol, "def2-svp"), load_basis(mol, "def2-universal-jkfit")
    pmol, paux = to_pyscf(mol, orb), to_pyscf(mol, aux)
    with pmol.with_range_coulomb(omega), paux.with_range_coulomb(omega):
        ref3, ref2 = df.incore.aux_e2(pmol, paux, "int3c2e"), paux.intor("int2c2e")
    full = df.incore.aux_e2(pmol, paux, "int3c2e")
    assert np.abs(ref3 - full).max() > 1e-3  # the operator differs from 1/r12
    np.testing.assert_allclose(int3c2e(orb, aux, omega=omega), ref3, rtol=0, atol=ATOL)
    np.testing.assert_allclose(int2c2e(aux, omega=omega), ref2, rtol=0, atol=ATOL)
    loc = aux.ao_loc
    np.testing.assert_allclose(int3c2e(orb, aux, (4, 11), omega=omega), ref3[:, :, loc[4] : loc[11]], rtol=0, atol=ATOL)


def test_attenuated_high_l_equals_pyscf():
    """erf(0.4 r12)/r12 with orbital shells s..g and auxiliary shells s..i (spherical)."""
    mol, orb, aux = _high_l(True)
    pmol, paux = to_pyscf(mol, orb), to_pyscf(mol, aux)
    with pmol.with_range_coulomb(0.4), paux.with_range_coulomb(0.4):
        ref3, ref2 = df.incore.aux_e2(pmol, paux, "int3c2e"), paux.intor("int2c2e")
    np.testing.assert_allclose(int3c2e(orb, aux, omega=0.4), ref3, rtol=0, atol=ATOL)
    np.testing.assert_allclose(int2c2e(aux, omega=0.4), ref2, rtol=0, atol=ATOL)
