"""Density-fitted SCF (hartree.df; issue 19, step 1): fitted J/K matrices and RHF, UHF, ROHF,
RKS and UKS energies against PySCF's ``density_fit()`` with the same orbital and auxiliary
basis data (``only_dfj=True`` for the J-only fit with exact K, ``exact_k``), Kohn-Sham on
hartree's grid given to PySCF (range-separated hybrids with their long-range K fitted too:
hartree.df.range_separated, tests/scf/test_df_range_separated.py); the default auxiliary
bases; the stored and the direct (B recomputed) paths; and the refusals (exact_k alone)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.df.auxiliary import CC_JKFIT_ELEMENTS, UNIVERSAL_JKFIT, default_jk_aux_name, load_jk_aux
from hartree.df.engine import FittedEngine
from hartree.df.gradient import fitted_two_electron_gradient
from hartree.engine import IntegralEngine
from hartree.errors import BasisError, InputError
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import SCFOptions, run
from tests.helpers import pyscf_density_fitted, to_pyscf, water, water_cation_c1

pytest.importorskip("pyscf")

#: |E_hartree - E_pyscf| allowed, Eh (issue 19's acceptance; both converged to 1e-11 Eh or tighter)
TOL = 1e-8
#: grid level of the Kohn-Sham comparisons (one grid for both codes, so a small one suffices)
LEVEL = 1
#: the runs start from the core guess: the SAD guess's atoms (and an exact K: _PySCFExactK)
#: need the generated ERI module, whose numba compile (a minute or more per session) would
#: take most of this file's time
CORE = {"guess": "core"}


class _PySCFExactK(CPUEngine):
    """A CPU engine whose exact J/K (1/r12 and erf-attenuated) are PySCF's in-core ones, the
    inner engine of the exact_k runs here: everything else (one-electron and 3-index
    integrals, the fitted J) is hartree's, and no run needs the generated ERI module, whose
    numba compile takes a minute or more a session (hartree's exact K is tested against
    PySCF in tests/integrals)."""

    def jk(self, dms, with_j=True, with_k=True, threshold=None, omega=0.0):
        from pyscf.scf import hf

        pmol = to_pyscf(self.molecule, self.basis)
        with pmol.with_range_coulomb(omega):
            vj, vk = hf.get_jk(pmol, np.asarray(dms), hermi=1)
        return (vj if with_j else None), (vk if with_k else None)


# ----------------------------------------------------------------------------- default aux
@pytest.mark.parametrize(
    ("name", "numbers", "expected"),
    [
        ("def2-svp", [8, 1], UNIVERSAL_JKFIT),
        ("def2-TZVPPD", [26], UNIVERSAL_JKFIT),
        ("cc-pvtz", [8, 1], "cc-pVTZ-JKFIT"),
        ("aug-cc-pVQZ", [6, 1], "cc-pVQZ-JKFIT"),
        ("cc-pv5z", [11, 17], {"Cl": "cc-pV5Z-JKFIT", "default": UNIVERSAL_JKFIT}),
        ("cc-pvdz", [8, 1], UNIVERSAL_JKFIT),  # the Basis Set Exchange has no cc-pVDZ-JKFIT
        ("6-31g*", [8, 1], UNIVERSAL_JKFIT),
        ("sto-3g", [8, 1], UNIVERSAL_JKFIT),
    ],
)
def test_default_aux_names(name, numbers, expected):
    assert default_jk_aux_name(name, numbers) == expected


def test_no_default_beyond_radon_names_the_element():
    with pytest.raises(BasisError, match="element U .*--density-fitting AUX"):
        default_jk_aux_name("def2-svp", [92, 1])


def test_cc_jkfit_element_table_is_the_basis_set_exchange_one():
    bse = pytest.importorskip("basis_set_exchange")
    for name in ("cc-pvtz-jkfit", "cc-pvqz-jkfit", "cc-pv5z-jkfit"):
        meta = bse.get_metadata()[name]
        elements = {int(z) for z in meta["versions"][meta["latest_version"]]["elements"]}
        assert elements == CC_JKFIT_ELEMENTS, name


def test_load_jk_aux_follows_the_orbital_basis():
    mol = water()
    basis = load_basis(mol, "sto-3g", cartesian=True)
    aux = load_jk_aux(mol, basis)
    assert aux.name == UNIVERSAL_JKFIT and not aux.pure
    with pytest.raises(BasisError, match="density-fitting basis: unknown basis set"):
        load_jk_aux(mol, basis, "no-such-jkfit")


# ----------------------------------------------------------------------------- J and K
@pytest.mark.parametrize("storage", ["stored", "direct"])
def test_fitted_jk_equals_pyscf_get_jk(storage):
    """J and K of UHF densities and of an indefinite difference of them equal PySCF's
    with_df.get_jk; the direct path (B recomputed, several orbital passes) equals it too."""
    mol = water_cation_c1()
    basis = load_basis(mol, "6-31g")
    aux = load_jk_aux(mol, basis)
    mf = pyscf_density_fitted(mol, basis, aux, "uhf", level=LEVEL)
    mf.kernel()
    dm = mf.make_rdm1()
    nao = basis.nao
    memory = None if storage == "stored" else 8 * aux.nao * nao * (nao + 1) // 2 - 1
    engine = FittedEngine(CPUEngine(mol, basis), aux, memory_bytes=memory)
    for d in (dm, dm - 0.9 * dm[::-1], dm[0]):
        vj, vk = mf.with_df.get_jk(d, hermi=1)
        j, k = engine.jk(d)
        assert j.shape == d.shape and k.shape == d.shape
        np.testing.assert_allclose(j, vj, rtol=0, atol=1e-10)
        np.testing.assert_allclose(k, vk, rtol=0, atol=1e-10)
    assert engine.summary()["storage"] == storage
    only_j, none = engine.jk(dm, with_k=False)
    assert none is None and np.allclose(only_j, mf.with_df.get_jk(dm, hermi=1)[0], rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------- energies
@pytest.mark.parametrize(
    ("system", "basis_name", "method", "xc", "exact_k"),
    [
        ("water", "6-31g", "rhf", None, False),
        ("cation", "6-31g", "uhf", None, False),
        ("cation", "sto-3g", "rohf", None, False),
        ("water", "6-31g", "rks", "pbe", False),
        ("water", "6-31g", "rks", "b3lyp", False),
        ("cation", "sto-3g", "uks", "b3lyp", False),
        ("water", "6-31g", "rhf", None, True),
        ("cation", "6-31g", "uhf", None, True),
        ("water", "sto-3g", "rks", "cam-b3lyp", True),
        ("water", "def2-svp", "rks", "wb97x", False),
        ("cation", "sto-3g", "uks", "cam-b3lyp", False),
    ],
)
def test_energy_equals_pyscf_density_fit(system, basis_name, method, xc, exact_k):
    """Total energies equal PySCF's density_fit() (only_dfj with exact_k) to 1e-8 Eh
    (measured: 4e-13 Eh or better; wB97X, its long-range K fitted with the erf integrals and
    metric: 2e-13 Eh); the result names the fitting."""
    mol = water() if system == "water" else water_cation_c1()
    basis = load_basis(mol, basis_name)
    aux = load_jk_aux(mol, basis)
    kw = {"xc": xc, "grid_level": LEVEL, "conv_tol_grad": 1e-7} if xc else {}
    engine = _PySCFExactK(mol, basis) if exact_k else None
    res = run(mol, basis, method, engine=engine, conv_tol=1e-11, density_fitting=True, exact_k=exact_k, **kw, **CORE)
    mf = pyscf_density_fitted(mol, basis, aux, method, xc, only_dfj=exact_k, level=LEVEL)
    ref = mf.kernel()
    assert mf.converged and mf.with_df.auxmol.nao == aux.nao
    assert abs(res.energy - ref) < TOL, (res.energy, ref)
    fit = res.density_fitting
    assert fit["aux_basis"] == UNIVERSAL_JKFIT and fit["naux"] == aux.nao and fit["exact_k"] == exact_k
    assert fit["storage"] == "stored" and any(UNIVERSAL_JKFIT in n and "kept in host memory" in n for n in res.notes)
    # fitted K: full builds every cycle; exact K: incremental builds as without fitting
    assert (res.timings["incremental_builds"] == 0) == (not exact_k)


def test_direct_path_gives_the_stored_energy():
    """B too large for the memory allowed: (mn|P) computed again in every build, the same
    ROHF energy, and the note says so."""
    mol = water_cation_c1()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    stored = run(mol, basis, "rohf", device="cpu", conv_tol=1e-11, density_fitting=True, **CORE)
    tight = 8 * aux.nao * basis.nao * (basis.nao + 1) // 2 - 1
    engine = FittedEngine(CPUEngine(mol, basis), aux, memory_bytes=tight)
    direct = run(mol, basis, "rohf", engine=engine, conv_tol=1e-11, **CORE)
    assert abs(direct.energy - stored.energy) < 1e-10
    assert direct.density_fitting["storage"] == "direct"
    assert any("computed again in every J/K build" in n for n in direct.notes)


# ----------------------------------------------------------------------------- kept pairs
def _water_pair(distance):
    """Two C1 water molecules ``distance`` bohr apart along x (bohr geometry)."""
    one = [("O", 0.0, 0.05, -0.11), ("H", 0.02, 1.43, 0.97), ("H", -0.07, -1.49, 1.02)]
    atoms = [f"{e} {x + dx} {y} {z}" for dx in (0.0, distance) for e, x, y, z in one]
    return Molecule.from_string("; ".join(atoms), unit="bohr")


def test_left_out_pairs_are_those_the_engine_leaves_zero():
    """Two waters 30 bohr apart: B keeps each molecule's own pairs only (every pair of one
    water with the other has a product-overlap bound far below 1e-14), and exactly the pairs
    whose (mn|P) the engine does not leave zero, shell pair by shell pair."""
    mol = _water_pair(30.0)
    basis = load_basis(mol, "6-31g")
    aux = load_jk_aux(mol, basis)
    engine = FittedEngine(CPUEngine(mol, basis), aux)
    half = basis.nao // 2
    assert engine.summary()["pairs_kept"] == 2 * half * (half + 1) // 2
    assert engine.summary()["pairs_total"] == basis.nao * (basis.nao + 1) // 2
    assert engine.summary()["tensor_bytes"] == 8 * aux.nao * (2 * half * (half + 1) // 2 + 1)
    kept = engine.fitted.pairs.mask() > 0
    nonzero = np.abs(engine.int3c2e(aux)).max(axis=2) > 0
    np.testing.assert_array_equal(kept, nonzero)


@pytest.mark.parametrize("storage", ["stored", "direct"])
def test_kept_pairs_give_the_unscreened_fit(storage):
    """Two waters 30 bohr apart (half the pairs left out): J and K of a random symmetric
    pair of densities equal those of B over every pair (pair_threshold 0) and PySCF's
    with_df.get_jk to 1e-10, stored and direct (memory_bytes 0: one orbital a pass)."""
    mol = _water_pair(30.0)
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    rng = np.random.default_rng(19)
    d = rng.standard_normal((2, basis.nao, basis.nao))
    d = d + d.transpose(0, 2, 1)
    inner = CPUEngine(mol, basis)
    every = FittedEngine(inner, aux, pair_threshold=0.0)
    kept = FittedEngine(inner, aux, memory_bytes=None if storage == "stored" else 0)
    j, k = kept.jk(d)
    j0, k0 = every.jk(d)
    vj, vk = pyscf_density_fitted(mol, basis, aux, "rhf").with_df.get_jk(d, hermi=1)
    assert kept.summary()["storage"] == storage and every.summary()["storage"] == "stored"
    assert kept.summary()["pairs_kept"] < every.summary()["pairs_kept"] == every.summary()["pairs_total"]
    for ours, ref in ((j, j0), (k, k0), (j, vj), (k, vk)):
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-10)
    assert any("B over 53% of the orbital pairs (56 of 105)" in n for n in kept.notes)


def test_kept_pairs_give_the_unscreened_energy():
    """RHF of two waters 30 bohr apart: the energy with the kept pairs equals that with every
    pair to 1e-10 Eh and PySCF's density_fit() to 1e-8 Eh."""
    mol = _water_pair(30.0)
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    every = FittedEngine(CPUEngine(mol, basis), aux, pair_threshold=0.0)
    kept = run(mol, basis, "rhf", device="cpu", conv_tol=1e-11, density_fitting=True, **CORE)
    full = run(mol, basis, "rhf", engine=every, conv_tol=1e-11, **CORE)
    ref = pyscf_density_fitted(mol, basis, aux, "rhf").kernel()
    assert kept.density_fitting["pairs_kept"] < full.density_fitting["pairs_kept"]
    assert abs(kept.energy - full.energy) < 1e-10
    assert abs(kept.energy - ref) < TOL


def test_direct_path_zeroes_the_pairs_a_larger_threshold_leaves_out():
    """A pair threshold above the engine's screening (1e-3: some pairs of neighbouring waters
    the engine computes are left out): the direct path zeroes them in the integrals it
    recomputes and gives the stored path's J and K."""
    mol = _water_pair(5.5)
    basis = load_basis(mol, "6-31g")
    aux = load_jk_aux(mol, basis)
    rng = np.random.default_rng(7)
    d = rng.standard_normal((basis.nao, basis.nao))
    d = d + d.T
    inner = CPUEngine(mol, basis)
    stored = FittedEngine(inner, aux, pair_threshold=1e-3)
    direct = FittedEngine(inner, aux, memory_bytes=0, pair_threshold=1e-3)
    assert direct.fitted.pairs.drops_computed_pairs
    assert stored.summary()["pairs_kept"] < FittedEngine(inner, aux).summary()["pairs_kept"]
    (j, k), (j0, k0) = direct.jk(d), stored.jk(d)
    assert direct.summary()["storage"] == "direct" and stored.summary()["storage"] == "stored"
    np.testing.assert_allclose(j, j0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(k, k0, rtol=0, atol=1e-10)


def test_fitted_engine_keeps_the_contract():
    """The wrapper is an IntegralEngine: everything but J/K and the ERI gradient (fitted:
    tests/gradients/test_df_gradient.py) is the wrapped engine's, the SAD guess's atoms
    included; the gradient of an attenuated operator with a fitted K is that operator's fit's."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    inner = CPUEngine(mol, basis, screening_threshold=1e-12)
    engine = FittedEngine(inner, load_jk_aux(mol, basis))
    assert isinstance(engine, IntegralEngine)
    assert engine.screening_threshold == 1e-12 and engine.device == inner.device and engine.scf_note is None
    np.testing.assert_array_equal(engine.hcore(), inner.hcore())
    assert isinstance(engine.for_molecule(mol, basis), CPUEngine)
    dk = np.eye(basis.nao)[None] * 0.5  # the attenuated operator's gradient is its own fit's
    zeros = np.zeros((basis.nao, basis.nao))
    got = engine.two_electron_gradient(zeros, dk, 0.5, omega=0.33)
    want = fitted_two_electron_gradient(inner, engine.aux, zeros, dk, 0.5, omega=0.33)
    np.testing.assert_array_equal(got, want)
    assert np.abs(got).max() > 1e-4


# ----------------------------------------------------------------------------- refusals
def test_options_are_checked():
    assert SCFOptions(density_fitting=False).density_fitting is None
    assert SCFOptions(density_fitting="def2-universal-JKFIT").density_fitting == "def2-universal-JKFIT"
    with pytest.raises(InputError, match="exact_k .* applies only with density fitting"):
        SCFOptions(exact_k=True)
    with pytest.raises(InputError, match="density_fitting must be"):
        SCFOptions(density_fitting=3)


# the gradients of fitted energies: tests/gradients/test_df_gradient.py
