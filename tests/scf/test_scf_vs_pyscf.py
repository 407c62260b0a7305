"""RHF/UHF/ROHF energies and properties against PySCF (the oracle).

Each case runs hartree's SCF once (module-level cache) and PySCF once on exactly
the same basis data (tests.helpers.to_pyscf), PySCF with conv_tol=1e-11.
Tolerances: total energy 1e-8 Eh; orbital energies 1e-6 Eh; dipole 1e-6 a.u.;
Mulliken charges 1e-6 e; <S^2> 1e-6.  hartree runs with conv_tol_grad=1e-7 so
that first-order properties are converged well below those tolerances.
"""

import functools

import numpy as np
import pyscf.scf
import pytest

from hartree.basis import load_basis
from hartree.molecule import Molecule
from hartree.scf import SCFOptions, kernel
from tests.helpers import to_pyscf, water
from tests.scf.engines import make_engine

# name: (geometry in Angstrom, charge, multiplicity, method, basis, cartesian, guess)
CASES = {
    "h2o-rhf-ccpvdz": ("water", 0, 1, "rhf", "cc-pvdz", False, "sad"),
    "h2o-rhf-631gss-cart": ("water", 0, 1, "rhf", "6-31g**", True, "sad"),
    "o2-uhf-triplet": ("O 0 0 0; O 0 0 1.2075", 0, 3, "uhf", "cc-pvdz", False, "sad"),
    "o2-rohf-triplet": ("O 0 0 0; O 0 0 1.2075", 0, 3, "rohf", "cc-pvdz", False, "sad"),
    "no-uhf": ("N 0 0 0; O 0 0 1.1508", 0, 2, "uhf", "6-31g*", False, "sad"),
    "no-rohf": ("N 0 0 0; O 0 0 1.1508", 0, 2, "rohf", "6-31g*", False, "sad"),
    "ch2-uhf-triplet": ("C 0 0 0.1; H 0 0.99 -0.5; H 0 -0.99 -0.5", 0, 3, "uhf", "6-31g**", False, "sad"),
    "ch2-rohf-triplet": ("C 0 0 0.1; H 0 0.99 -0.5; H 0 -0.99 -0.5", 0, 3, "rohf", "6-31g**", False, "core"),
    "h2o-cation-uhf": ("water", 1, 2, "uhf", "cc-pvdz", False, "sad"),
    "oh-anion-rhf": ("O 0 0 0; H 0 0 0.97", -1, 1, "rhf", "aug-cc-pvdz", False, "sad"),
    "hf-rhf-ccpvtz": ("H 0 0 0; F 0 0 0.917", 0, 1, "rhf", "cc-pvtz", False, "sad"),
    "n2-rhf-def2tzvp": ("N 0 0 0; N 0 0 1.098", 0, 1, "rhf", "def2-tzvp", False, "sad"),
    "hf-rhf-ccpvqz": ("H 0 0 0; F 0 0 0.917", 0, 1, "rhf", "cc-pvqz", False, "sad"),
    "hbr-rhf-631g": ("H 0 0 0; Br 0 0 1.414", 0, 1, "rhf", "6-31g", False, "sad"),
    "h-atom-rohf": ("H 0 0 0", 0, 2, "rohf", "cc-pvdz", False, "sad"),
    "cn-uhf-core": ("C 0 0 0; N 0 0 1.1718", 0, 2, "uhf", "cc-pvdz", False, "core"),
}

PYSCF_CLASS = {"rhf": pyscf.scf.RHF, "uhf": pyscf.scf.UHF, "rohf": pyscf.scf.ROHF}


def _molecule(geometry, charge, multiplicity):
    if geometry == "water":
        return water(charge=charge, multiplicity=multiplicity)
    return Molecule.from_string(geometry, charge=charge, multiplicity=multiplicity)


@functools.cache
def _run(name):
    geometry, charge, mult, method, basis_name, cart, guess = CASES[name]
    mol = _molecule(geometry, charge, mult)
    basis = load_basis(mol, basis_name, cartesian=cart)
    options = SCFOptions(method=method, guess=guess, conv_tol=1e-10, conv_tol_grad=1e-7, max_cycle=80)
    res = kernel(mol, basis, options, make_engine(mol, basis))
    mf = PYSCF_CLASS[method](to_pyscf(mol, basis))
    mf.conv_tol = 1e-11
    mf.conv_tol_grad = 1e-8
    mf.kernel()
    assert mf.converged, f"PySCF reference did not converge for {name}"
    return res, mf


@pytest.mark.parametrize("name", list(CASES))
def test_total_energy(name):
    res, mf = _run(name)
    assert res.converged
    assert res.method == CASES[name][3]
    assert abs(res.energy - mf.e_tot) < 1e-8, (res.energy, mf.e_tot)
    comps = res.energy_components
    assert abs(comps["total"] - res.energy) < 1e-10
    assert abs(comps["nuclear_repulsion"] - mf.energy_nuc()) < 1e-10
    e1 = mf.energy_elec()[1]  # two-electron energy of the PySCF state
    # components are not variational: first order in the density error
    assert abs(comps["coulomb"] + comps["exchange"] - e1) < 1e-6


@pytest.mark.parametrize(
    "name",
    [
        "h2o-rhf-ccpvdz",
        "o2-uhf-triplet",
        "o2-rohf-triplet",
        "h2o-cation-uhf",
        "oh-anion-rhf",
        "hbr-rhf-631g",
        "h2o-rhf-631gss-cart",
        "no-rohf",
    ],
)
def test_orbital_energies(name):
    res, mf = _run(name)
    mine = np.sort(np.asarray(res.mo_energy), axis=-1)
    ref = np.sort(np.asarray(mf.mo_energy), axis=-1)
    assert mine.shape == ref.shape
    np.testing.assert_allclose(mine, ref, atol=1e-6, rtol=0)
    np.testing.assert_allclose(np.sort(res.mo_occ, axis=-1), np.sort(mf.mo_occ, axis=-1))


@pytest.mark.parametrize(
    "name",
    [
        "h2o-rhf-ccpvdz",
        "o2-uhf-triplet",
        "no-uhf",
        "no-rohf",
        "h2o-cation-uhf",
        "oh-anion-rhf",
        "hbr-rhf-631g",
        "h2o-rhf-631gss-cart",
        "ch2-uhf-triplet",
    ],
)
def test_dipole_and_mulliken(name):
    res, mf = _run(name)
    dip = mf.dip_moment(unit="au", verbose=0)
    np.testing.assert_allclose(res.dipole, dip, atol=1e-6, rtol=0)
    charges = mf.mulliken_pop(verbose=0)[1]
    np.testing.assert_allclose(res.mulliken_charges, charges, atol=1e-6, rtol=0)
    assert abs(res.mulliken_charges.sum() - res.molecule.charge) < 1e-8


@pytest.mark.parametrize(
    "name",
    [
        "o2-uhf-triplet",
        "o2-rohf-triplet",
        "no-uhf",
        "no-rohf",
        "h-atom-rohf",
        "ch2-uhf-triplet",
        "ch2-rohf-triplet",
        "h2o-cation-uhf",
        "cn-uhf-core",
    ],
)
def test_spin_square(name):
    res, mf = _run(name)
    assert abs(res.s_squared - mf.spin_square()[0]) < 1e-6
    if res.method == "rohf":
        s = 0.5 * (res.molecule.multiplicity - 1)
        assert abs(res.s_squared - s * (s + 1)) < 1e-10


def test_rhf_has_no_spin_square():
    res, _ = _run("h2o-rhf-ccpvdz")
    assert res.s_squared is None
    homo, lumo = res.homo_lumo()
    assert homo < 0 < lumo
