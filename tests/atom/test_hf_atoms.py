"""Nonrelativistic mode (c -> ∞) against PySCF RHF and the numerical Hartree-Fock limit."""

import numpy as np
import pytest
from bases import even_tempered, exponents, pyscf_basis
from pyscf import gto, scf

from hartree.atom import AtomSCFOptions, kernel, make_nucleus, run
from hartree.atom.config import atomic_number, closed_shells

NONREL = AtomSCFOptions(relativistic=False, energy_tol=1e-11)


def _pyscf_rhf(element):
    mol = gto.M(atom=f"{element} 0 0 0", basis=pyscf_basis(element), verbose=0)
    mf = scf.RHF(mol)
    mf.conv_tol = 1e-12
    energy = mf.kernel()
    assert mf.converged
    return energy


@pytest.mark.parametrize("element", ["He", "Be", "Ne", "Mg", "Ar", "Kr"])
def test_matches_pyscf_rhf_same_basis(element):
    z = atomic_number(element)
    result = kernel(z, exponents(element), make_nucleus(z), NONREL)
    assert result.converged
    assert abs(result.energy - _pyscf_rhf(element)) < 1e-8
    # virial theorem holds for the converged nonrelativistic energy to basis accuracy
    assert result.components["kinetic"] == pytest.approx(-result.energy, rel=1e-3)


def test_neon_hartree_fock_limit():
    # Numerical HF limit of Ne: -128.547098109 Eh (Froese Fischer; Saito 2009).  A large
    # even-tempered basis s36 p26 (ratio 1.65 from 0.04) reaches it to ~1.4e-6 Eh.
    result = run("Ne", exponents=[even_tempered(0.04, 1.65, 36), even_tempered(0.04, 1.65, 26)], relativistic=False)
    error = result.energy - (-128.547098109)
    assert 0 < error < 2e-6  # variational: above the limit, and close


def test_orbital_energies_and_occupations_neon():
    result = run("Ne", exponents=exponents("Ne"), relativistic=False)
    assert result.blocks == ["s", "p"]
    assert result.occupations == [[2.0, 2.0], [6.0]]
    # Koopmans orbital energies of Ne near the HF limit: 1s -32.77, 2s -1.93, 2p -0.850
    np.testing.assert_allclose(
        [result.orbital_energies[0][0], result.orbital_energies[0][1], result.orbital_energies[1][0]],
        [-32.77, -1.93, -0.850],
        atol=0.02,
    )


def test_closed_shell_configurations():
    assert closed_shells(2) == [1]
    assert closed_shells(10) == [2, 1]
    assert closed_shells(36) == [4, 3, 1]
    assert closed_shells(86) == [6, 5, 3, 1]
