"""RI-MP2 energies against PySCF's DF-MP2 with the same orbitals and auxiliary basis data.

The SCF is hartree's own kernel driven by the PySCF-integral test engine (fast, and the
orbitals are then handed to PySCF unchanged, so the comparison isolates RI-MP2).
"""

import dataclasses

import numpy as np
import pytest
from pyscf import scf as pscf
from pyscf.mp import dfmp2, dfump2

import hartree.scf
from hartree import mp2
from hartree.basis import load_basis
from hartree.errors import BasisError, InputError
from hartree.molecule import Molecule
from tests.helpers import pyscf_basis_dict, to_pyscf, water
from tests.scf.pyscf_engine import PySCFEngine

EH_TOL = 1e-8
KCAL = 1.0 / 627.509474  # Eh per kcal/mol


def _scf(mol, basis_name, method):
    basis = load_basis(mol, basis_name)
    return hartree.scf.run(
        mol, basis, method=method, engine=PySCFEngine(mol, basis), conv_tol=1e-10, conv_tol_grad=1e-7
    )


def _pyscf_dfmp2(res, frozen):
    """PySCF DF-MP2 on hartree's orbitals, auxiliary basis = hartree's default aux data."""
    pmol = to_pyscf(res.molecule, res.basis)
    uhf = res.method == "uhf"
    mf = pscf.UHF(pmol) if uhf else pscf.RHF(pmol)
    mf.mo_coeff, mf.mo_occ = np.asarray(res.mo_coeff), np.asarray(res.mo_occ)
    mf.mo_energy, mf.e_tot, mf.converged = np.asarray(res.mo_energy), res.energy, True
    pt = (dfump2.DFUMP2 if uhf else dfmp2.DFMP2)(mf, frozen=frozen or None)
    aux = mp2.load_aux_basis(res.molecule, res.basis)
    pt.with_df.auxbasis = pyscf_basis_dict(res.molecule, aux)
    pt.kernel()
    assert pt.with_df.auxmol.nao == aux.nao
    return pt


@pytest.fixture(scope="module")
def water_rhf():
    return _scf(water(), "cc-pvdz", "rhf")


@pytest.fixture(scope="module")
def oh_uhf():
    return _scf(Molecule.from_string("O 0 0 0; H 0 0 0.97", multiplicity=2), "cc-pvdz", "uhf")


def _check(res, ref, nfrozen):
    assert abs(res.correlation_energy - ref.e_corr) < EH_TOL
    assert abs(res.opposite_spin - ref.e_corr_os) < EH_TOL
    assert abs(res.same_spin - ref.e_corr_ss) < EH_TOL
    assert res.frozen_core == nfrozen
    assert res.total_energy == pytest.approx(res.scf_energy + res.correlation_energy, abs=1e-14)
    assert res.scs_correlation_energy == pytest.approx(1.2 * res.opposite_spin + res.same_spin / 3.0, abs=1e-14)
    props = res.properties()
    assert props["scs_mp2_total_energy"] == res.scs_total_energy
    assert props["mp2_correlation_energy"] == res.correlation_energy


@pytest.mark.parametrize("frozen_core", [False, True])
def test_rhf_water_equals_pyscf_dfmp2(water_rhf, frozen_core):
    res = mp2.run(water_rhf, frozen_core=frozen_core)
    assert res.aux_basis.lower() == "cc-pvdz-rifit" and res.reference == "rhf"
    _check(res, _pyscf_dfmp2(water_rhf, 1 if frozen_core else 0), 1 if frozen_core else 0)
    assert -0.25 < res.correlation_energy < -0.15


@pytest.mark.parametrize("frozen_core", [False, True])
def test_uhf_oh_equals_pyscf_dfump2(oh_uhf, frozen_core):
    res = mp2.run(oh_uhf, frozen_core=frozen_core)
    _check(res, _pyscf_dfmp2(oh_uhf, 1 if frozen_core else 0), 1 if frozen_core else 0)
    nf = 1 if frozen_core else 0
    assert res.nocc == (5 - nf, 4 - nf)


def test_batching_and_cleaving_do_not_change_the_energy(water_rhf, oh_uhf):
    for ref in (water_rhf, oh_uhf):
        full = mp2.run(ref)
        tiny = mp2.run(ref, memory_mb=0.02, gemm_memory_budget=40_000)
        assert abs(tiny.correlation_energy - full.correlation_energy) < 1e-12
        assert abs(tiny.same_spin - full.same_spin) < 1e-12
        gemm = {g["step"]: g for g in tiny.gemm}
        assert gemm["(ia|jb)"]["calls"] > (2 if ref.method == "rhf" else 3)  # i blocks
        assert gemm["B"]["tiles"] > gemm["B"]["calls"]  # cleaved


def test_disk_storage_equals_memory(oh_uhf, water_rhf, tmp_path):
    for ref in (oh_uhf, water_rhf):
        mem = mp2.run(ref, frozen_core=True)
        disk = mp2.run(ref, frozen_core=True, storage="disk", scratch_dir=str(tmp_path), memory_mb=0.01)
        assert abs(disk.correlation_energy - mem.correlation_energy) < 1e-12
        assert abs(disk.opposite_spin - mem.opposite_spin) < 1e-12
        assert "disk" in disk.device
    assert list(tmp_path.iterdir()) == []  # the scratch file is removed
    with pytest.raises(InputError, match="storage"):
        mp2.run(water_rhf, storage="tape")


def test_block_sizes_respect_the_memory_bound():
    from hartree.mp2.cpu_device import pair_block_sizes

    for no, nv, mb in ((10, 50, 1000.0), (10, 50, 0.1), (300, 1300, 2000.0), (3, 4, 1e-9)):
        ni, nj = pair_block_sizes(no, nv, no, nv, mb)
        assert ni >= 1 and 1 <= nj <= no
        if ni * nj > 1:
            assert ni * nv * nj * nv * 8 <= mb * 1e6 / 2


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-6), ("mixed", 1e-7), ("bitwise", 1e-6), ("ozaki", 1e-11)])
def test_low_precision_schemes_stay_accurate(water_rhf, oh_uhf, precision, tol):
    for ref in (water_rhf, oh_uhf):
        exact = mp2.run(ref).correlation_energy
        res = mp2.run(ref, precision=precision)
        assert res.precision == precision
        assert abs(res.correlation_energy - exact) < min(tol, 0.1 * KCAL)


def test_mixed_is_more_accurate_than_fp32(water_rhf):
    exact = mp2.run(water_rhf).correlation_energy
    e32 = mp2.run(water_rhf, precision="fp32").correlation_energy
    emix = mp2.run(water_rhf, precision="mixed").correlation_energy
    assert abs(emix - exact) < 0.5 * abs(e32 - exact)


def test_explicit_aux_name_equals_default(water_rhf):
    a = mp2.run(water_rhf)
    b = mp2.run(water_rhf, aux="cc-pVDZ-RIFIT")
    assert a.correlation_energy == b.correlation_energy and a.naux == b.naux == 84


def test_user_errors(water_rhf):
    with pytest.raises(InputError, match="precision"):
        mp2.run(water_rhf, precision="fp16")
    with pytest.raises(InputError, match="freeze"):
        mp2.run(water_rhf, frozen_core=6)
    with pytest.raises(TypeError):
        mp2.run(water_rhf, memmory_mb=10)
    with pytest.raises(BasisError):
        mp2.run(water_rhf, aux="no-such-rifit")
    with pytest.raises(InputError, match="converged"):
        mp2.run(dataclasses.replace(water_rhf, converged=False))


def test_rohf_reference_is_rejected():
    mol = Molecule.from_string("O 0 0 0; H 0 0 0.97", multiplicity=2)
    basis = load_basis(mol, "sto-3g")
    res = hartree.scf.run(mol, basis, method="rohf", engine=PySCFEngine(mol, basis))
    with pytest.raises(InputError, match="RHF or UHF"):
        mp2.run(res)


def test_frozen_core_counts():
    assert mp2.frozen_core_count([1, 2]) == 0
    assert mp2.frozen_core_count([8, 1, 1]) == 1
    assert mp2.frozen_core_count([3, 10, 11, 18, 19, 36, 37]) == 1 + 1 + 5 + 5 + 9 + 9 + 18
    assert mp2.frozen_core_count([6] * 8 + [1] * 18) == 8


@pytest.mark.parametrize(
    "name,numbers,expected",
    [
        ("cc-pVDZ", [8], "cc-pVDZ-RIFIT"),
        ("aug-cc-pvtz", [8], "aug-cc-pVTZ-RIFIT"),
        ("cc-pwCVQZ", [8], "cc-pwCVQZ-RIFIT"),
        ("def2-svp", [8], "def2-SVP-RIFIT"),
        ("def2-TZVPPD", [8], "def2-TZVPPD-RIFIT"),
        ("def2-mTZVP", [8], "def2-TZVP-RIFIT"),
        ("6-31g*", [1, 8], "6-31G**-RIFIT"),
        ("6-31G(d,p)", [1, 8], "6-31G**-RIFIT"),
        ("6-31g*", [1, 26], {"H": "6-31G**-RIFIT", "default": "def2-SVP-RIFIT"}),
        ("6-311++G**", [8], "aug-cc-pVTZ-RIFIT"),
        ("sto-3g", [8], "def2-SVP-RIFIT"),
    ],
)
def test_default_aux_names(name, numbers, expected):
    assert mp2.default_aux_name(name, numbers) == expected


def test_no_default_aux_is_a_basis_error():
    with pytest.raises(BasisError, match="aux"):
        mp2.default_aux_name("ano-rcc", [8])


def test_default_aux_for_pople_loads(water_rhf):
    mol = water()
    aux = mp2.load_aux_basis(mol, load_basis(mol, "6-31g*"))
    assert aux.nao > 0 and aux.pure


def test_cartesian_pople_basis_equals_pyscf():
    """6-31G* in cartesian functions with its default auxiliary set (6-31G**-RIFIT)."""
    mol = water()
    basis = load_basis(mol, "6-31g*", cartesian=True)
    res = hartree.scf.run(mol, basis, method="rhf", engine=PySCFEngine(mol, basis), conv_tol=1e-10, conv_tol_grad=1e-7)
    out = mp2.run(res, frozen_core=True)
    assert out.aux_basis == "6-31G**-RIFIT" and out.naux == mp2.load_aux_basis(mol, basis).nao
    _check(out, _pyscf_dfmp2(res, 1), 1)


def test_metric_factor_inverts_the_metric_and_handles_singular_metrics():
    from hartree.mp2.fitting import metric_factor

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 8))
    v = x @ x.T + 8 * np.eye(8)
    m = metric_factor(np, v)
    np.testing.assert_allclose(m.T @ m, np.linalg.inv(v), rtol=0, atol=1e-12)
    y = rng.standard_normal((8, 5))
    vs = y @ y.T  # rank 5
    ms = metric_factor(np, vs)
    assert ms.shape == (5, 8)
    np.testing.assert_allclose(ms @ vs @ ms.T, np.eye(5), rtol=0, atol=1e-10)
