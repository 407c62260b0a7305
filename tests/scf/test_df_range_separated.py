"""Density-fitted exchange of an attenuated operator (hartree.df.range_separated; issue 19's
"fitted K for hybrids" for the range-separated ones): the fitted J and K of erf(omega r12)/r12
and erfc(|omega| r12)/r12 against PySCF's ``with_df.get_jk(omega=...)`` (its ``range_coulomb``
fit: the attenuated three-index integrals and metric), stored and recomputed; the metric's
truncation against PySCF's rule; what the engine and the result say.  The SCF energies (RKS
wB97X, UKS CAM-B3LYP) are in tests/scf/test_density_fitting.py, their gradients in
tests/gradients/test_df_range_separated_gradient.py."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.df.auxiliary import load_jk_aux
from hartree.df.engine import FittedEngine
from hartree.df.range_separated import LINEAR_DEPENDENCE, truncated_metric_factor
from hartree.integrals.engine import CPUEngine
from tests.helpers import pyscf_density_fitted, to_pyscf, water, water_cation_c1

pytest.importorskip("pyscf")

#: J and K against PySCF, hartree (both fit the same integrals with the same metric rule)
ATOL = 1e-10


def _densities(nao, seed=7):
    """Two symmetric densities (nset 2, as UHF's) and an indefinite difference of them."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((2, nao, 4)) * 0.3
    d = np.einsum("smi,sni->smn", c, c)
    return d, d[0] - 0.9 * d[1]


@pytest.mark.parametrize("storage", ["stored", "direct"])
@pytest.mark.parametrize("omega", [0.3, -0.3])
def test_fitted_attenuated_jk_equals_pyscf(storage, omega):
    """J and K of erf(0.3 r12)/r12 (singular metric, truncated) and erfc(0.3 r12)/r12 (full
    rank) equal PySCF's ``with_df.get_jk(omega=omega)`` to 1e-10 Eh, for B kept and for B
    recomputed in every build (several orbital passes); the 1/r12 J/K are untouched."""
    mol = water_cation_c1()
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    mf = pyscf_density_fitted(mol, basis, aux, "uhf")
    nao = basis.nao
    memory = None if storage == "stored" else 8 * aux.nao * nao * (nao + 1) // 2 - 1
    engine = FittedEngine(CPUEngine(mol, basis), aux, memory_bytes=memory)
    for d in _densities(nao):
        vj, vk = mf.with_df.get_jk(d, hermi=1, omega=omega)
        j, k = engine.jk(d, omega=omega)
        assert j.shape == d.shape and k.shape == d.shape
        np.testing.assert_allclose(j, vj, rtol=0, atol=ATOL)
        np.testing.assert_allclose(k, vk, rtol=0, atol=ATOL)
        _, k0 = engine.jk(d, with_j=False)
        np.testing.assert_allclose(k0, mf.with_df.get_jk(d, hermi=1)[1], rtol=0, atol=ATOL)
    fit = engine.range_separated[omega]
    assert fit.storage == storage and engine.fitted.storage == storage
    (summary,) = engine.summary()["range_separated"]
    assert summary["omega"] == omega and summary["storage"] == storage and summary["tensor_bytes"] == fit.tensor_bytes
    assert summary["metric_rank"] == fit.metric_rank and (fit.metric_rank == aux.nao) == (omega < 0)


def test_metric_rank_is_pyscfs_linear_dependence_rule():
    """The erf metric of water / def2-universal-jkfit at omega = 0.3 is numerically singular
    (eigenvalues at the rounding level: whether a Cholesky factorisation goes through is a
    rounding accident, PySCF's fails on its hermi=1 metric); the factor keeps the eigenvectors
    of eigenvalue above 1e-7 Eh, PySCF's df.incore rule, and the fitted integrals
    (mn|P) M^T M (P|ls) are PySCF's (M^T M itself, up to 1e7 Eh^-1, depends on the rounding of
    the eigenvectors near the threshold); the erfc metric keeps them all."""
    from pyscf import df

    mol = water()
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    pmol, paux = to_pyscf(mol, basis), to_pyscf(mol, aux)
    for omega, full_rank in ((0.3, False), (-0.3, True)):
        with pmol.with_range_coulomb(omega), paux.with_range_coulomb(omega):
            v = paux.intor("int2c2e", hermi=1)
            j3 = df.incore.aux_e2(pmol, paux, "int3c2e").reshape(-1, aux.nao)  # (mn, P)
        w = np.linalg.eigvalsh(v)
        assert (w.min() < 1e-12 * w.max()) != full_rank
        low = df.incore._eig_decompose(paux, v, LINEAR_DEPENDENCE)  # PySCF's (rank, naux) factor
        m, rank = truncated_metric_factor(np, v)
        assert rank == low.shape[0] and (rank == aux.nao) == full_rank
        assert not m[rank:].any()
        fitted, ref = (m @ j3.T).T @ (m @ j3.T), (low @ j3.T).T @ (low @ j3.T)  # (mn|ls) of eq. (1)
        np.testing.assert_allclose(fitted, ref, rtol=0, atol=1e-10)


def test_engine_says_what_it_fitted():
    """The attenuated fit is made at its first request and kept; its notes say that it is a
    second tensor (twice the memory) and how much of its metric it keeps.  (exact_k with
    omega: K of the wrapped engine, tests/scf/test_density_fitting.py.)"""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    engine = FittedEngine(CPUEngine(mol, basis), aux)
    d = np.eye(basis.nao)
    assert engine.summary()["range_separated"] == [] and not engine.range_separated
    _, k1 = engine.jk(d, with_j=False, omega=0.33)
    fit = engine.range_separated[0.33]
    _, k2 = engine.jk(d, with_j=False, omega=0.33)
    assert engine.range_separated[0.33] is fit and np.array_equal(k1, k2)
    notes = " ".join(engine.notes)
    assert "density fitting of erf(0.33 r12)/r12 (range-separated exchange: a second tensor" in notes
    assert f"{fit.metric_rank} of {aux.nao} eigenvectors of its metric kept" in notes
    assert 0 < fit.metric_rank < aux.nao and engine.fitted.metric_rank is None
