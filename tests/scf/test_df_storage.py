"""Where the fitted 3-index tensor B lives (hartree.df.storage; issue 19): every placement
(stored, split, host, direct) forced on the CPU through the memory budgets FittedJK takes
(memory_bytes for the engine's memory, host_memory_bytes beside it; block_bytes small, so that
the host part is streamed in several blocks and K unpacks few rows at a time), against the
stored placement (1e-12) and PySCF's density_fit() (the tolerances of test_density_fitting).
For a numpy engine the host part is numpy and its transfer a no-op, so this is the GPU's
arithmetic; the GPU's pinned memory and streams: tests/gpu/test_df_engine.py."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.df.auxiliary import load_jk_aux
from hartree.df.engine import FittedEngine
from hartree.df.storage import place
from hartree.integrals.engine import CPUEngine
from hartree.scf import run
from tests.helpers import pyscf_density_fitted, water, water_cation_c1

pytest.importorskip("pyscf")

#: |E_hartree - E_pyscf| allowed, Eh (as tests/scf/test_density_fitting.py)
TOL = 1e-8
#: the core guess: no generated ERI module (tests/scf/test_density_fitting.py says why)
CORE = {"guess": "core"}


def _budgets(storage, tensor_bytes, row_bytes):
    """memory_bytes, host_memory_bytes that force ``storage`` for a B of tensor_bytes:
    split keeps 40 % of the rows on the 'device', host none, direct has too little host
    memory for the rows the device cannot hold."""
    return {
        "stored": (None, None),
        "split": (int(0.4 * tensor_bytes), tensor_bytes),
        "host": (row_bytes - 1, tensor_bytes),
        "direct": (int(0.4 * tensor_bytes), int(0.5 * tensor_bytes)),
    }[storage]


def _engine(mol, basis, aux, storage, rows_a_block=3):
    """A FittedEngine on the CPU engine whose B is placed as ``storage`` says, streamed (and
    built) in blocks of ``rows_a_block`` rows of B."""
    probe = FittedEngine(CPUEngine(mol, basis), aux)
    tensor = probe.fitted.tensor_bytes
    row = tensor // aux.nao
    memory, host = _budgets(storage, tensor, row)
    return FittedEngine(
        CPUEngine(mol, basis), aux, memory_bytes=memory, host_memory_bytes=host, block_bytes=rows_a_block * row
    )


def test_placement_chooses_the_best_that_fits():
    """place(): every row on the device when B fits its budget (to the byte), as many rows as
    fit there and the rest on the host when those fit the host budget, all on the host when
    not one row fits on the device, recomputation otherwise."""
    naux, ncol = 10, 7
    row = 8 * ncol
    p = place(naux, ncol, naux * row, 0)
    assert (p.storage, p.device_rows, p.host_rows, p.tensor_bytes) == ("stored", 10, 0, 560)
    p = place(naux, ncol, naux * row - 1, row)
    assert (p.storage, p.device_rows, p.host_rows, p.device_bytes, p.host_bytes) == ("split", 9, 1, 504, 56)
    p = place(naux, ncol, 4 * row + 55, 6 * row)
    assert (p.storage, p.device_rows, p.host_rows) == ("split", 4, 6)
    p = place(naux, ncol, row - 1, naux * row)
    assert (p.storage, p.device_rows, p.host_rows) == ("host", 0, 10)
    p = place(naux, ncol, 4 * row, 6 * row - 1)
    assert (p.storage, p.device_rows, p.host_rows, p.device_bytes, p.host_bytes) == ("direct", 0, 0, 0, 0)
    assert place(naux, ncol, 0, 0).storage == "direct"


@pytest.mark.parametrize("storage", ["split", "host", "direct"])
def test_each_placement_gives_the_stored_jk(storage):
    """Water / def2-SVP with def2-universal-JKFIT: J and K of UHF-like densities, of an
    indefinite difference and of one density equal the stored placement's to 1e-12 and
    PySCF's with_df.get_jk to 1e-10; the record and the note say where B lives."""
    mol = water()
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    mf = pyscf_density_fitted(mol, basis, aux, "rhf")
    mf.kernel()
    dm = mf.make_rdm1()
    dms = np.array([0.55 * dm, 0.45 * dm])
    stored = FittedEngine(CPUEngine(mol, basis), aux)
    engine = _engine(mol, basis, aux, storage)
    for d in (dms, dms - 0.9 * dms[::-1], dm):
        j, k = engine.jk(d)
        j0, k0 = stored.jk(d)
        vj, vk = mf.with_df.get_jk(d, hermi=1)
        assert j.shape == d.shape and k.shape == d.shape
        np.testing.assert_allclose(j, j0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(k, k0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(j, vj, rtol=0, atol=1e-10)
        np.testing.assert_allclose(k, vk, rtol=0, atol=1e-10)
    only_j, none = engine.jk(dm, with_k=False)
    none_j, only_k = engine.jk(dm, with_j=False)
    assert none is None and none_j is None
    np.testing.assert_allclose(only_j, stored.jk(dm)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(only_k, stored.jk(dm)[1], rtol=0, atol=1e-12)
    fit, tensor = engine.summary(), stored.summary()["tensor_bytes"]
    assert fit["storage"] == storage and fit["tensor_bytes"] == tensor
    if storage == "direct":
        assert fit["device_bytes"] == fit["host_bytes"] == 0
        assert any("of host memory (the host budget) it may take: (mn|P) is computed again" in n for n in engine.notes)
    else:
        assert fit["device_bytes"] + fit["host_bytes"] == tensor
        assert (fit["device_bytes"] > 0) == (storage == "split")
        assert any("in host memory (the host budget), streamed in every J/K build" in n for n in engine.notes)
    assert stored.summary()["device_bytes"] == tensor and stored.summary()["host_bytes"] == 0


def test_a_numpy_engine_has_no_host_budget_of_its_own():
    """Without host_memory_bytes a numpy engine's B that does not fit its memory is
    recomputed, as before the host placements (its host memory is its device memory)."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    engine = FittedEngine(CPUEngine(mol, basis), aux, memory_bytes=1)
    engine.jk(np.eye(basis.nao))
    assert engine.summary()["storage"] == "direct"
    assert any("more than the 1 B of host memory it may take" in n for n in engine.notes)


@pytest.mark.parametrize(
    ("system", "method", "storage"),
    [
        ("water", "rhf", "split"),
        ("water", "rhf", "host"),
        ("cation", "uhf", "split"),
        ("cation", "rohf", "host"),
        ("cation", "uhf", "direct"),
    ],
)
def test_each_placement_gives_the_stored_energy(system, method, storage):
    """RHF of water, UHF and ROHF of H2O+ / def2-SVP (def2-universal-JKFIT): the energy with B
    split, on the host or recomputed equals the stored placement's to 1e-12 Eh (measured:
    6e-14 or better) and PySCF's density_fit() to 1e-8 Eh (2e-13; PySCF started from the
    stored run's density, so that both find the same UHF state of the cation)."""
    mol = water() if system == "water" else water_cation_c1()
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    opts = {"conv_tol": 1e-12, **CORE}
    stored = run(mol, basis, method, engine=FittedEngine(CPUEngine(mol, basis), aux), **opts)
    placed = run(mol, basis, method, engine=_engine(mol, basis, aux, storage, rows_a_block=7), **opts)
    dm0 = np.asarray(stored.density)
    ref = pyscf_density_fitted(mol, basis, aux, method).kernel(dm0=dm0[0] if method == "rhf" else dm0)
    assert placed.density_fitting["storage"] == storage and stored.density_fitting["storage"] == "stored"
    assert abs(placed.energy - stored.energy) < 1e-12
    assert abs(placed.energy - ref) < TOL
