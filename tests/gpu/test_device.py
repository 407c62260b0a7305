"""Device choice without a GPU (runs everywhere): 'auto' falls back to the CPU silently,
'gpu' raises DeviceError with one clear sentence, an unknown name raises InputError."""

import pytest

from hartree.errors import DeviceError, InputError
from hartree.molecule import Molecule


@pytest.fixture
def no_gpu(monkeypatch):
    from hartree.device import selection as device

    monkeypatch.setattr(device, "gpu_status", lambda: (False, "cupy cannot be imported (test)"))


def test_gpu_without_gpu_raises(no_gpu):
    from hartree.scf import run

    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    with pytest.raises(DeviceError, match="no CUDA GPU is usable"):
        run(mol, "sto-3g", device="gpu")


def test_auto_without_gpu_uses_cpu(no_gpu):
    import warnings

    from hartree.scf import run

    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(mol, "sto-3g", device="auto")
    assert "cpu" in res.device and res.converged


def test_unknown_device_name():
    from hartree.device.selection import resolve_device

    with pytest.raises(InputError, match="unknown device"):
        resolve_device("tpu")


def test_gpu_status_answers_without_raising():
    from hartree.gpu import gpu_status

    ok, text = gpu_status()
    assert isinstance(ok, bool) and isinstance(text, str) and text


def test_stored_scf_reference_matches_cpu_engine():
    """data/scf_cpu_reference.json (used on the GPU machine) is what the CPU engine gives."""
    import json
    import os

    import numpy as np

    from hartree.scf import run

    from .test_scf_gpu import CASES, SCF_OPTS, STORED, build

    with open(STORED) as f:
        stored = json.load(f)
    for case in CASES:
        mol, basis, method = build(case)
        r = run(mol, basis, method, device="cpu", **SCF_OPTS)
        assert abs(r.energy - stored[case[0]]["energy"]) < 1e-9, case[0]
        np.testing.assert_allclose(r.dipole, stored[case[0]]["dipole"], atol=1e-6)
    assert os.path.basename(STORED) == "scf_cpu_reference.json"


# ------------------------------------------------------------------ GPU memory (CPU-only)
# The emulated backend stands in for the GPU; HARTREE_GPU_MEMORY imposes a small budget.
def _water_engine(backend=None):
    from hartree.basis import load_basis
    from hartree.device import emulator
    from hartree.gpu import GPUEngine

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    basis = load_basis(mol, "sto-3g")
    return mol, basis, GPUEngine(mol, basis, backends=[backend or emulator.EmulatedBackend()])


def _dms(nao, nset=3):
    import numpy as np

    rng = np.random.default_rng(3)
    d = rng.standard_normal((nset, nao, nao)) / nao
    return d + d.transpose(0, 2, 1)


def test_parse_bytes():
    from hartree.device.memory import parse_bytes

    assert parse_bytes("8GB") == 8_000_000_000 and parse_bytes("512MiB") == 512 * 2**20
    assert parse_bytes("1000") == 1000 and parse_bytes(" 1.5 kb ") == 1500
    with pytest.raises(DeviceError, match="HARTREE_GPU_MEMORY"):
        parse_bytes("lots")


def test_jk_in_density_batches_when_memory_is_short(monkeypatch):
    """Same J/K (to round-off) in batches of densities, and the user is told."""
    import numpy as np

    from hartree.gpu.memory import jk_bytes

    mol, basis, eng = _water_engine()
    dms = _dms(basis.nao)
    J0, K0 = eng.jk(dms)
    assert eng.notes == []
    monkeypatch.setenv("HARTREE_GPU_MEMORY", str(int(1.5 * jk_bytes(basis, 1))))
    J1, K1 = eng.jk(dms)
    np.testing.assert_allclose(J1, J0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(K1, K0, rtol=0, atol=1e-14)
    assert any("batches of 1" in n for n in eng.notes)
    monkeypatch.setenv("HARTREE_GPU_MEMORY", str(jk_bytes(basis, 1) // 2))
    with pytest.raises(DeviceError, match="GPU memory"):
        eng.jk(dms)


class _OOM(Exception):
    """Stands in for cupy.cuda.memory.OutOfMemoryError (recognised by its name)."""


_OOM.__name__ = "OutOfMemoryError"


def test_out_of_memory_retries_with_smaller_batches():
    """An allocation failure for 3 densities at once -> retried in smaller batches."""
    import numpy as np

    from hartree.device import emulator

    class Tight(emulator.EmulatedBackend):
        def compile(self, specs):
            return [_Failing(m) for m in super().compile(specs)]

    class _Failing:
        def __init__(self, m):
            self.m = m

        def launch(self, name, grid, block, args, stream=None):
            if name.startswith("jk_") and int(args[13]) > 1:  # nset > 1
                raise _OOM("out of memory allocating 1 GiB")
            self.m.launch(name, grid, block, args, stream)

    mol, basis, ref = _water_engine()
    dms = _dms(basis.nao)
    J0, K0 = ref.jk(dms)
    _, _, eng = _water_engine(Tight())
    J1, K1 = eng.jk(dms)
    np.testing.assert_allclose(J1, J0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(K1, K0, rtol=0, atol=1e-14)
    assert any("out of memory" in n for n in eng.notes)


def test_scf_that_does_not_fit_falls_back_or_says_why(monkeypatch):
    """device 'auto': warning + CPU result + note; device 'gpu': DeviceError, one line."""
    from hartree.scf import run

    mol, basis, eng = _water_engine()
    ref = run(mol, basis, device="cpu", guess="core", conv_tol=1e-10)
    monkeypatch.setenv("HARTREE_GPU_MEMORY", "10KB")
    with pytest.warns(UserWarning, match="ran on the CPU instead"):
        res = run(mol, basis, engine=eng, device="auto", guess="core", conv_tol=1e-10)
    assert abs(res.energy - ref.energy) < 1e-10 and "cpu" in res.device
    assert any("GPU memory" in n for n in res.notes)
    with pytest.raises(DeviceError, match="needs about .* of GPU memory"):
        run(mol, basis, engine=eng, device="gpu", guess="core")


def test_gpus_with_cpu_device_is_an_input_error():
    from hartree.scf import run

    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    with pytest.raises(InputError, match="gpus applies only"):
        run(mol, "sto-3g", device="cpu", gpus="0")


@pytest.mark.gpu
def test_gpu_jk_batches_and_scf_memory_check_on_the_device(monkeypatch):
    """On the GPU: J/K of 3 densities in batches under a small HARTREE_GPU_MEMORY equal the
    unbatched ones (1e-14 relative); an SCF that cannot fit raises DeviceError at once."""
    import numpy as np

    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.gpu.memory import jk_bytes
    from hartree.scf import run

    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    basis = load_basis(mol, "sto-3g")
    eng = GPUEngine(mol, basis)
    dms = _dms(basis.nao)
    J0, K0 = eng.jk(dms)
    monkeypatch.setenv("HARTREE_GPU_MEMORY", str(int(1.5 * jk_bytes(basis, 1))))
    J1, K1 = eng.jk(dms)
    assert any("batches of 1" in n for n in eng.notes)
    np.testing.assert_allclose(J1, J0, rtol=0, atol=1e-14 * np.abs(J0).max())
    np.testing.assert_allclose(K1, K0, rtol=0, atol=1e-14 * np.abs(K0).max())
    monkeypatch.setenv("HARTREE_GPU_MEMORY", "10KB")
    with pytest.raises(DeviceError, match="GPU memory"):
        run(mol, basis, device="gpu")
