"""The GPU engine's density-fitting integrals (GPUEngine.int2c2e, int3c2e: the engine contract's,
served by hartree.gpu.eri3c) and the density-fitted SCF on it (hartree.df.jk, written once for
numpy and cupy), against the CPU engine.

Without a GPU the kernels run through the g++ emulation (numpy arrays); with one (``gpu``
mark) through NVRTC and cupy, where the fitted tensor B, J and K live on the device, or B
partly or wholly in pinned host memory, streamed to the device in every build."""

import numpy as np
import pytest

from hartree.arrays import to_numpy
from hartree.basis import load_basis
from hartree.df.auxiliary import load_jk_aux
from hartree.df.engine import FittedEngine
from hartree.gpu.engine import GPUEngine
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import run
from tests.helpers import water, water_cation_c1


def _emulated_engine(mol, basis):
    from hartree.device import emulator

    if not emulator.available():
        pytest.skip("g++ is needed to emulate the GPU kernels")
    return GPUEngine(mol, basis, backends=[emulator.EmulatedBackend()])


def test_emulated_engine_serves_the_cpu_three_index_integrals():
    """int2c2e and int3c2e (all aux shells, and a range) equal the CPU engine's to 1e-10 Eh."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    gpu, cpu = _emulated_engine(mol, basis), CPUEngine(mol, basis)
    np.testing.assert_allclose(gpu.int2c2e(aux), cpu.int2c2e(aux), rtol=0, atol=1e-10)
    np.testing.assert_allclose(gpu.int3c2e(aux), cpu.int3c2e(aux), rtol=0, atol=1e-10)
    np.testing.assert_allclose(gpu.int3c2e(aux, (3, 9)), cpu.int3c2e(aux, (3, 9)), rtol=0, atol=1e-10)


@pytest.mark.parametrize("omega", [0.3, -0.3])
def test_emulated_engine_fits_an_attenuated_operator_as_the_cpu_one(omega):
    """int2c2e/int3c2e of erf(0.3 r12)/r12 and erfc(0.3 r12)/r12 (the erf kernels of
    hartree.gpu.eri3c) equal the CPU engine's to 1e-10 Eh, and so do the fitted J and K of
    that operator (hartree.df.range_separated over each engine)."""
    mol = water()
    basis = load_basis(mol, "sto-3g")
    aux = load_jk_aux(mol, basis)
    gpu, cpu = _emulated_engine(mol, basis), CPUEngine(mol, basis)
    np.testing.assert_allclose(gpu.int2c2e(aux, omega), cpu.int2c2e(aux, omega), rtol=0, atol=1e-10)
    np.testing.assert_allclose(gpu.int3c2e(aux, (3, 9), omega), cpu.int3c2e(aux, (3, 9), omega), rtol=0, atol=1e-10)
    d = np.random.default_rng(3).standard_normal((2, basis.nao, basis.nao))
    d = d + d.transpose(0, 2, 1)
    (j, k), (j0, k0) = FittedEngine(gpu, aux).jk(d, omega=omega), FittedEngine(cpu, aux).jk(d, omega=omega)
    np.testing.assert_allclose(j, j0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(k, k0, rtol=0, atol=1e-10)


def test_fitted_scf_on_the_emulated_engine_equals_the_cpu_one():
    mol = water()
    basis = load_basis(mol, "sto-3g")
    gpu = run(mol, basis, "rhf", engine=_emulated_engine(mol, basis), density_fitting=True, guess="core")
    cpu = run(mol, basis, "rhf", device="cpu", density_fitting=True, guess="core")
    assert abs(gpu.energy - cpu.energy) < 1e-9
    assert gpu.density_fitting == cpu.density_fitting


@pytest.mark.gpu
@pytest.mark.parametrize("storage", ["stored", "direct"])
def test_fitted_scf_on_a_gpu_equals_the_cpu_one(storage):
    """UHF of H2O+ / def2-SVP fitted on the device (B in GPU memory, or recomputed block by
    block) equals the CPU's to 1e-9 Eh (issue 19)."""
    mol = Molecule.from_string("O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02", unit="bohr", charge=1)
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    memory = None if storage == "stored" else 8 * aux.nao * basis.nao * (basis.nao + 1) // 2 - 1
    host = None if storage == "stored" else 0  # no pinned host memory: recomputed, not split
    engine = FittedEngine(GPUEngine(mol, basis), aux, memory_bytes=memory, host_memory_bytes=host)
    gpu = run(mol, basis, "uhf", engine=engine, conv_tol=1e-10, incremental_fock=False)
    cpu = run(mol, basis, "uhf", device="cpu", density_fitting=True, conv_tol=1e-10)
    assert abs(gpu.energy - cpu.energy) < 1e-9
    assert gpu.density_fitting["storage"] == storage
    assert any("GPU memory" in n for n in gpu.notes)


@pytest.mark.gpu
@pytest.mark.parametrize("storage", ["split", "host"])
def test_streamed_placements_on_a_gpu_equal_the_stored_one(storage):
    """UHF of H2O+ / def2-SVP on the device with B split between GPU memory (40 % of its rows)
    and pinned host memory, or wholly in pinned host memory, streamed in blocks of 3 rows (many
    blocks through the two device buffers and the copy stream): J and K of the converged
    densities equal the stored placement's to 1e-12, the energy to 1e-11 Eh (issue 19)."""
    mol = water_cation_c1()
    basis = load_basis(mol, "def2-svp")
    aux = load_jk_aux(mol, basis)
    stored = FittedEngine(GPUEngine(mol, basis), aux)
    tensor = stored.fitted.tensor_bytes
    row = tensor // aux.nao
    memory = int(0.4 * tensor) if storage == "split" else row - 1
    engine = FittedEngine(
        GPUEngine(mol, basis), aux, memory_bytes=memory, host_memory_bytes=tensor, block_bytes=3 * row
    )
    ref = run(mol, basis, "uhf", engine=stored, conv_tol=1e-10, incremental_fock=False)
    res = run(mol, basis, "uhf", engine=engine, conv_tol=1e-10, incremental_fock=False)
    assert ref.density_fitting["storage"] == "stored" and res.density_fitting["storage"] == storage
    assert res.density_fitting["device_bytes"] + res.density_fitting["host_bytes"] == tensor
    assert (res.density_fitting["device_bytes"] > 0) == (storage == "split")
    assert any("in pinned host memory, streamed in every J/K build" in n for n in res.notes)
    assert abs(res.energy - ref.energy) < 1e-11
    d = to_numpy(ref.density)
    for dms in (d, d[0] - 0.9 * d[1]):
        (j, k), (j0, k0) = engine.jk(dms), stored.jk(dms)
        np.testing.assert_allclose(j, j0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(k, k0, rtol=0, atol=1e-12)


@pytest.mark.gpu
def test_fitted_range_separated_scf_on_a_gpu_equals_the_cpu_one():
    """RKS wB97X of water / def2-SVP with J, K and the long-range K fitted on the device (the
    erf kernels of hartree.gpu.eri3c, the truncated erf metric in cupy) equals the CPU's to
    1e-9 Eh (the CPU's equals PySCF's: tests/scf/test_density_fitting.py)."""
    mol = water()
    basis = load_basis(mol, "def2-svp")
    options = {"xc": "wb97x", "grid_level": 1, "conv_tol": 1e-10, "density_fitting": True, "guess": "core"}
    gpu = run(mol, basis, "rks", engine=GPUEngine(mol, basis), **options)
    cpu = run(mol, basis, "rks", device="cpu", **options)
    assert abs(gpu.energy - cpu.energy) < 1e-9
    (fit,) = gpu.density_fitting["range_separated"]
    assert fit["omega"] == 0.3 and fit["storage"] == "stored" and 0 < fit["metric_rank"] < gpu.density_fitting["naux"]
