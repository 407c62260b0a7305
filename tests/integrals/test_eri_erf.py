"""erf-attenuated Coulomb integrals (range-separated hybrids): the rule of
hartree.integrals.rys_program (ATTENUATION) in the CPU kernels and J/K against PySCF's
mol.with_range_coulomb(omega) and get_jk(omega=...)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.integrals.eri import eri_full
from hartree.integrals.jk import jk
from hartree.integrals.rys_program import ATTENUATION, ATTENUATION_ROOT, spell
from tests.helpers import to_pyscf, water

pytest.importorskip("pyscf")

OMEGA = 0.33  #: CAM-B3LYP's omega, bohr^-1
ATOL = 1e-10


@pytest.fixture(scope="module")
def water_dz():
    """(Basis, PySCF Mole, RHF density) of water / cc-pVDZ."""
    from pyscf import scf

    mol = water()
    basis = load_basis(mol, "cc-pvdz")
    pmol = to_pyscf(mol, basis)
    return basis, pmol, scf.RHF(pmol).run(conv_tol=1e-9).make_rdm1()


def test_the_rule_spells_in_both_languages():
    names = {"omega2": "om2", "rho": "rho_q", "sqrt": "math.sqrt"}
    assert [spell(e, names) for _, e in ATTENUATION] == [
        "om2 / (om2 + rho_q)",
        "theta * T",
        "math.sqrt(theta) * pref",
    ]
    assert spell(ATTENUATION_ROOT[1], {"u": "u[r]"}) == "theta * u[r]"


def test_attenuated_tensor_equals_pyscf():
    """The generic kernel with omega: every (ab|cd) of erf(omega r12)/r12, water/STO-3G."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    pmol = to_pyscf(mol, basis)
    with pmol.with_range_coulomb(OMEGA):
        ref = pmol.intor("int2e")
    np.testing.assert_allclose(eri_full(basis, omega=OMEGA), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("omega", [OMEGA, -OMEGA])
def test_long_and_short_range_jk_equal_pyscf(water_dz, omega):
    """J and K of erf (omega > 0) and erfc (omega < 0, PySCF's convention) against PySCF's
    get_jk(omega=...) on the RHF density of water/cc-pVDZ, to 1e-10."""
    from pyscf import scf

    basis, pmol, dm = water_dz
    vj, vk = scf.RHF(pmol).get_jk(pmol, dm, omega=omega)
    J, K = jk(basis, dm, omega=omega, generated=False)  # the generic driver, cached across sessions
    np.testing.assert_allclose(J, vj, rtol=0, atol=ATOL)
    np.testing.assert_allclose(K, vk, rtol=0, atol=ATOL)
    assert np.abs(K - scf.RHF(pmol).get_k(pmol, dm)).max() > 1e-3  # the attenuation matters (PySCF's 1/r12 K)


def test_the_cpu_engine_passes_omega(water_dz):
    from hartree.integrals.engine import CPUEngine

    basis, pmol, dm = water_dz
    engine = CPUEngine(water(), basis)
    J, K = engine.jk(dm[None], omega=OMEGA)
    Jr, Kr = jk(basis, dm, omega=OMEGA)
    np.testing.assert_allclose(K[0], Kr, rtol=0, atol=1e-12)
    np.testing.assert_allclose(J[0], Jr, rtol=0, atol=1e-12)
