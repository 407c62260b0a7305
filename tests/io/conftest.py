"""Shared fixtures for the io tests: SCFResult-like objects whose orbitals come
from PySCF-built matrices on a real hartree Molecule and Basis."""

import re
from types import SimpleNamespace

import numpy as np
import pytest
from pyscf import gto

from hartree.basis import load_basis, primitive_norm
from hartree.molecule import Molecule

# A water molecule with no symmetry (bohr), so permutation or sign mistakes show.
WATER_BOHR = [("O", (0.00, 0.05, -0.11)), ("H", (0.02, 1.43, 0.97)), ("H", (-0.07, -1.49, 1.02))]


def pyscf_molecule(molecule, basis, spin=0):
    """PySCF Mole with the same atoms and exactly the same shells as a hartree Basis.

    The shells are handed over as (exponent, coefficient for normalised primitive)
    lists per atom, so PySCF's own copy of a basis set (which may round digits
    differently from basis-set-exchange) plays no part.
    """
    atoms, shells = [], {}
    for atom, (symbol, xyz) in enumerate(zip(molecule.symbols, molecule.coords)):
        label = f"{symbol}{atom + 1}"
        atoms.append([label, tuple(xyz)])
        shells[label] = []
    for ish in range(basis.nshell):
        l = int(basis.shell_l[ish])
        exps = basis.shell_exponents(ish)
        coefs = basis.shell_coefficients(ish) / primitive_norm(l, exps)
        label = atoms[int(basis.shell_atom[ish])][0]
        shells[label].append([l] + [[float(a), float(c)] for a, c in zip(exps, coefs)])
    return gto.M(
        atom=atoms, unit="Bohr", basis=shells, cart=not basis.pure, charge=molecule.charge, spin=spin, verbose=0
    )


def random_orbitals(overlap, seed):
    """An S-orthonormal coefficient matrix C (C^T S C = 1) with every AO mixed in."""
    rng = np.random.default_rng(seed)
    nao = overlap.shape[0]
    q, _ = np.linalg.qr(rng.standard_normal((nao, nao)))
    w, v = np.linalg.eigh(overlap)
    return (v / np.sqrt(w)) @ v.T @ q


def fake_result(atoms, basis_name, *, cartesian=False, unrestricted=False, seed=7):
    """(SCFResult-like namespace, matching PySCF Mole) with random orthonormal orbitals."""
    spin = 2 if unrestricted else 0
    text = "; ".join(f"{s} {x} {y} {z}" for s, (x, y, z) in atoms)
    molecule = Molecule.from_string(text, unit="bohr", multiplicity=spin + 1)
    basis = load_basis(molecule, basis_name, cartesian=cartesian)
    mol = pyscf_molecule(molecule, basis, spin=spin)
    labels = [re.sub(r"^(\d+)\s*([A-Za-z]+)\d+\s+", r"\1 \2 ", " ".join(lab.split())) for lab in mol.ao_labels()]
    assert labels == basis.ao_labels(), "hartree and PySCF AO orders differ"
    overlap = mol.intor("int1e_ovlp")
    nao = overlap.shape[0]
    nalpha, nbeta = molecule.nalpha, molecule.nbeta
    if unrestricted:
        coeff = np.stack([random_orbitals(overlap, seed), random_orbitals(overlap, seed + 1)])
        energy = np.stack([np.linspace(-20, 3, nao), np.linspace(-19.5, 3.5, nao)])
        occ = np.zeros((2, nao))
        occ[0, :nalpha] = 1
        occ[1, :nbeta] = 1
    else:
        coeff = random_orbitals(overlap, seed)
        energy = np.linspace(-20, 3, nao)
        occ = np.zeros(nao)
        occ[:nalpha] = 2
    result = SimpleNamespace(
        method="uhf" if unrestricted else "rhf",
        converged=True,
        energy=-76.0123456789012,
        energy_components={
            "one_electron": -123.1,
            "coulomb": 46.9,
            "exchange": -8.9,
            "nuclear_repulsion": 9.1,
            "total": -76.0123456789012,
        },
        mo_energy=energy,
        mo_coeff=coeff,
        mo_occ=occ,
        iterations=11,
        history=[],
        dipole=np.array([0.01, -0.2, 0.78]),
        mulliken_charges=np.array([-0.66, 0.33, 0.33]),
        s_squared=2.003 if unrestricted else None,
        wall_time=1.25,
        device="cpu (test)",
        molecule=molecule,
        basis=basis,
    )
    return result, mol


@pytest.fixture
def water():
    """The atoms of an asymmetric water molecule, bohr."""
    return WATER_BOHR


@pytest.fixture
def make_result():
    """Factory: make_result(atoms, basis_name, cartesian=..., unrestricted=..., seed=...)."""
    return fake_result
