"""The SCF's GPU-side paths without a GPU: the SAD guess with one engine for all free atoms
(run through the g++-emulated GPU kernels), and the one place that turns a GPU out-of-memory
error into a CPU run or a one-line error (hartree.scf.driver)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.device.memory import GPUMemoryError, is_out_of_memory
from hartree.errors import DeviceError
from hartree.gpu.engine import GPUEngine
from hartree.molecule import Molecule
from hartree.scf.driver import PREPARE_FALLBACK_NOTE, prepare_gpu_engine
from hartree.scf.guess import engine_atomic_densities, host_atomic_density

WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"


class _OOM(Exception):
    """Stands in for cupy.cuda.memory.OutOfMemoryError (recognised by its name)."""


_OOM.__name__ = "OutOfMemoryError"


def _emulated_engine(mol, basis):
    from hartree.device import emulator

    if not emulator.available():
        pytest.skip("g++ not available")

    class Counting(GPUEngine):
        derived = 0

        def for_molecule(self, molecule, basis):
            Counting.derived += 1
            return super().for_molecule(molecule, basis)

    return Counting(mol, basis, backends=[emulator.EmulatedBackend()])


def test_sad_atoms_on_one_engine_equal_the_host_atoms():
    """O and H of water (6-31G: s and p shells) through one emulated GPU engine over both free
    atoms: the same atomic densities as the host path (CPU integrals per atom) to 1e-10."""
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "6-31g")
    eng = _emulated_engine(mol, basis)
    atoms = [(8, basis.for_atoms([0])), (1, basis.for_atoms([1]))]
    dens = engine_atomic_densities(eng, atoms)
    assert type(eng).derived == 1  # one engine for all atoms, none per element
    for (z, b_atom), d in zip(atoms, dens):
        ref = host_atomic_density(z, b_atom)
        assert d.shape == ref.shape == (b_atom.nao, b_atom.nao)
        np.testing.assert_allclose(d, ref, rtol=0, atol=1e-10)


def test_is_out_of_memory():
    assert is_out_of_memory(_OOM("out of memory allocating 1 GiB"))
    assert is_out_of_memory(RuntimeError("cudaErrorMemoryAllocation: out of memory"))
    assert is_out_of_memory(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED"))
    assert not is_out_of_memory(ValueError("bad value"))


def test_prepare_out_of_memory_falls_back_for_auto_and_says_why_for_gpu():
    mol = Molecule.from_string(WATER)
    eng = GPUEngine(mol, load_basis(mol, "sto-3g"))  # the callables below never touch a device

    def oom(engine):
        raise _OOM("out of memory allocating 1 GiB")

    def bug(engine):
        raise ValueError("not a memory problem")

    assert prepare_gpu_engine(eng, "gpu", lambda engine: None) is eng
    assert prepare_gpu_engine(eng, "auto", oom) is None
    assert PREPARE_FALLBACK_NOTE == "the GPU ran out of memory while preparing; running on the CPU"
    with pytest.raises(GPUMemoryError, match=r"^the GPU ran out of memory while preparing the kernels; run with --d"):
        prepare_gpu_engine(eng, "gpu", oom)
    with pytest.raises(ValueError, match="not a memory problem"):
        prepare_gpu_engine(eng, "auto", bug)
    assert issubclass(GPUMemoryError, DeviceError)
