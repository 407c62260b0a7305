"""Three-index (mu nu|P) and two-index (P|Q) integrals from the generated GPU kernels
(hartree.gpu.eri3c), of 1/r12 and of the attenuated operators (the erf kernel variants, omega
> 0; erfc for omega < 0), against the CPU code (hartree.integrals.three_center, itself checked
against PySCF's int3c2e/int2c2e in tests/integrals).

Without a GPU the kernels run through the g++ emulation (serial); with one (``gpu`` mark)
through NVRTC and cupy.  Tolerance 1e-10 Eh absolute (both sides are FP64 Rys quadrature from
the same root tables; the observed difference is ~1e-14).
"""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.gpu import eri3c
from hartree.gpu.tables import RysTable
from hartree.integrals.three_center import int2c2e, int3c2e
from hartree.molecule import Molecule
from tests.helpers import cuda_backend, emulated_backend

TOL = 1e-10
WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"


def _to_numpy(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _check(backend, orbital, aux, cartesian=False, batch=None):
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, orbital, cartesian=cartesian)
    auxb = load_basis(mol, aux, cartesian=cartesian)
    tb = eri3c.ThreeCenterBuilder(basis, auxb, backend)
    np.testing.assert_allclose(_to_numpy(tb.int2c()), int2c2e(auxb), rtol=0, atol=TOL)
    np.testing.assert_allclose(_to_numpy(tb.int3c()), int3c2e(basis, auxb), rtol=0, atol=TOL)
    if batch is not None:  # an aux-shell range (batching in MP2)
        np.testing.assert_allclose(_to_numpy(tb.int3c(batch)), int3c2e(basis, auxb, batch), rtol=0, atol=TOL)
        p_first = _to_numpy(tb.int3c_cart(batch))  # (P, mu, nu) layout
        p_last = _to_numpy(tb.int3c_cart(batch, p_last=True))  # (mu, nu, P) layout
        np.testing.assert_array_equal(p_last, p_first.transpose(1, 2, 0))
    return tb


def test_source_names_class_and_is_deterministic():
    table = RysTable.load()
    a = eri3c.generate((2, 1, 3), table)
    assert a == eri3c.generate((2, 1, 3), table)
    assert "e3_213(" in a and "eri_2130_s0" in a and "rys_4(" in a and table.sha256 in a
    with pytest.raises(ValueError):
        eri3c.generate((0, 1, 0), table)


def test_pair_lists_cover_the_cpu_significant_pairs():
    from hartree.integrals.three_center import significant_pairs

    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "6-31g*")
    lists = eri3c.orbital_pair_lists(basis)
    n = sum(d["off"].shape[0] for d in lists.values())
    assert n == len(significant_pairs(basis))
    for d in lists.values():  # primitive-pair counts non-increasing
        assert (np.diff(np.diff(d["pst"])) <= 0).all()


def test_emulated_kernels_equal_cpu_integrals():
    """s, p, d orbital shells (6-31G*) with s, p, d auxiliary shells (cc-pVDZ used as a
    fitting set), spherical and cartesian, one aux-shell batch."""
    backend = emulated_backend()
    _check(backend, "6-31g*", "cc-pvdz", batch=(4, 11))
    _check(backend, "6-31g*", "cc-pvdz", cartesian=True)


def test_attenuated_source_is_the_plain_one_with_the_erf_rule():
    """The erf kernel (e3_<class>_erf) is the 1/r12 one with codegen's attenuation (theta, the
    scaled T, pref and roots) and the omega parameter passed on; the 1/r12 text has none."""
    table = RysTable.load()
    plain, erf = eri3c.generate((2, 1, 3), table), eri3c.generate((2, 1, 3), table, attenuated=True)
    assert "omega" not in plain and "theta" not in plain
    assert "e3_213_erf(" in erf and "double omega)" in erf and "const double theta = " in erf
    assert "u[r] = theta * u[r];" in erf and "tab, eri, omega);" in erf
    assert len(erf.splitlines()) > len(plain.splitlines())


@pytest.mark.parametrize("omega", [0.3, -0.3])
def test_emulated_attenuated_kernels_equal_cpu_integrals(omega):
    """erf(omega r12)/r12 (omega > 0) and erfc(|omega| r12)/r12 (omega < 0: 1/r12 - erf, two
    launches) against the CPU kernels (tests/integrals/test_three_center.py: equal to PySCF's),
    water def2-SVP / def2-universal-jkfit (s..d orbital, s..g auxiliary shells), all aux shells
    and one batch, to 1e-11 Eh."""
    backend = emulated_backend()
    mol = Molecule.from_string(WATER)
    basis, auxb = load_basis(mol, "def2-svp"), load_basis(mol, "def2-universal-jkfit")
    tb = eri3c.ThreeCenterBuilder(basis, auxb, backend)
    atol = 1e-11
    np.testing.assert_allclose(_to_numpy(tb.int2c(omega)), int2c2e(auxb, omega=omega), rtol=0, atol=atol)
    np.testing.assert_allclose(_to_numpy(tb.int3c(omega=omega)), int3c2e(basis, auxb, omega=omega), rtol=0, atol=atol)
    got = _to_numpy(tb.int3c((3, 9), omega=omega))
    np.testing.assert_allclose(got, int3c2e(basis, auxb, (3, 9), omega=omega), rtol=0, atol=atol)
    plain = _to_numpy(tb.int3c((3, 9)))  # the 1/r12 kernels are still those of omega = 0
    np.testing.assert_allclose(plain, int3c2e(basis, auxb, (3, 9)), rtol=0, atol=atol)


@pytest.mark.gpu
@pytest.mark.parametrize("orbital,aux", [("cc-pvdz", "cc-pvdz-rifit"), ("cc-pvtz", "cc-pvtz-rifit")])
def test_gpu_kernels_equal_cpu_integrals(orbital, aux):
    """Every class of the benchmark bases (up to f orbital and g auxiliary shells)."""
    _check(cuda_backend(), orbital, aux, batch=(5, 17))


@pytest.mark.gpu
def test_gpu_cartesian_kernels_equal_cpu_integrals():
    _check(cuda_backend(), "6-31g*", "def2-svp-rifit", cartesian=True)


@pytest.mark.gpu
@pytest.mark.parametrize("omega", [0.33, -0.33])
def test_gpu_attenuated_kernels_equal_cpu_integrals(omega):
    """The erf kernels on the device (cc-pVTZ / cc-pVTZ-RIFIT: up to f orbital and g auxiliary
    shells) against the CPU kernels, 1e-10 Eh."""
    mol = Molecule.from_string(WATER)
    basis, auxb = load_basis(mol, "cc-pvtz"), load_basis(mol, "cc-pvtz-rifit")
    tb = eri3c.ThreeCenterBuilder(basis, auxb, cuda_backend())
    np.testing.assert_allclose(_to_numpy(tb.int2c(omega)), int2c2e(auxb, omega=omega), rtol=0, atol=TOL)
    np.testing.assert_allclose(_to_numpy(tb.int3c(omega=omega)), int3c2e(basis, auxb, omega=omega), rtol=0, atol=TOL)
