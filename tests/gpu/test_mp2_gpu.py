"""GPU RI-MP2 (hartree.mp2.rimp2_gpu) against the CPU RI-MP2 (which equals PySCF's DF-MP2 to
1e-8 Eh, tests/mp2) and against stored PySCF numbers.

Without a GPU the driver runs on numpy with the g++-emulated three-index kernels (checks the
batching, transforms and energy sums); with one (``gpu`` mark) on the device.
Tolerances: FP64 1e-8 Eh (observed ~1e-12); fp32/tf32/mixed within 0.1 kcal/mol of FP64.
"""
import dataclasses

import numpy as np
import pytest

import hartree.scf
from hartree import mp2
from hartree.errors import InputError
from hartree.molecule import Molecule

KCAL = 1.0 / 627.509474          # Eh per kcal/mol
WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"
OH = "O 0 0 0; H 0 0 0.97"
AUX = "cc-pvdz-rifit"

#: PySCF 2.x (scf.RHF/UHF, conv_tol 1e-12, then mp.dfmp2.DFMP2 / dfump2.DFUMP2 with the
#: basis-set-exchange cc-pVDZ-RIFIT data), orbital basis 6-31G, geometries above (Angstrom):
#: (E_SCF, E_corr all electrons, E_corr frozen core), hartree.
PYSCF = {"water": (-75.98397446572486, -0.12883649678759745, -0.12779942737374134),
         "oh": (-75.36316824611573, -0.08917293571386894, -0.0882226370027458)}


def _emulated():
    from hartree.gpu import emulate
    if not emulate.available():
        pytest.skip("g++ is needed to emulate the GPU kernels")
    return emulate.EmulatedBackend()


# ----------------------------------------------------------------------------- CPU (emulated)
@pytest.fixture(scope="module")
def cpu_refs():
    from hartree.basis import load_basis
    from tests.scf.pyscf_engine import PySCFEngine
    out = {}
    for name, txt, mult, method in (("water", WATER, 1, "rhf"), ("oh", OH, 2, "uhf")):
        mol = Molecule.from_string(txt, multiplicity=mult)
        basis = load_basis(mol, "6-31g")
        out[name] = hartree.scf.run(mol, basis, method=method, engine=PySCFEngine(mol, basis),
                                    conv_tol=1e-12, conv_tol_grad=1e-9)
    return out


@pytest.mark.parametrize("name", ["water", "oh"])
@pytest.mark.parametrize("frozen_core", [False, True])
def test_emulated_gpu_driver_equals_cpu_mp2(cpu_refs, name, frozen_core):
    """Tiny memory budget and aux batches: several aux batches, occupied blocks, B row blocks."""
    ref = cpu_refs[name]
    cpu = mp2.run(ref, aux=AUX, frozen_core=frozen_core)
    gpu = mp2.run(ref, aux=AUX, frozen_core=frozen_core, device="gpu",
                  gpu_backend=_emulated(), gpu_memory_mb=0.3, aux_batch=16)
    for f in ("correlation_energy", "opposite_spin", "same_spin"):
        assert abs(getattr(gpu, f) - getattr(cpu, f)) < 1e-10, f
    assert gpu.nocc == cpu.nocc and gpu.nvir == cpu.nvir and gpu.naux == cpu.naux
    assert gpu.device.startswith("gpu: emulated")
    pyscf_e = PYSCF[name][2 if frozen_core else 1]
    assert abs(gpu.correlation_energy - pyscf_e) < 1e-8
    assert {g["step"] for g in gpu.gemm} == {"B", "(ia|jb)", "energy"}
    assert next(g for g in gpu.gemm if g["step"] == "(ia|jb)")["calls"] > 1


#: error bound per scheme vs FP64 (kcal/mol): TF32 throughout (also for B = (ia|P) L^-T, whose
#: operands span orders of magnitude) is ~0.1 kcal/mol off already for water/6-31G (1.7e-4 Eh)
BOUND = {"fp32": 0.1, "tf32": 1.0, "mixed": 0.1, "tf32x3": 0.1}


@pytest.mark.parametrize("precision", ["tf32", "mixed", "tf32x3"])
def test_emulated_low_precision_errors_are_bounded(cpu_refs, precision):
    """mgemm's numpy emulation of the schemes (TF32 rounding, split-TF32 products)."""
    for ref in cpu_refs.values():
        exact = mp2.run(ref, aux=AUX).correlation_energy
        res = mp2.run(ref, aux=AUX, device="gpu", gpu_backend=_emulated(), precision=precision)
        assert abs(res.correlation_energy - exact) < BOUND[precision] * KCAL
        assert res.precision.split()[0] == precision


def test_split_tf32_product_is_fp32_accurate():
    """The GPU "mixed" product (numpy path): |C - a b^T| within the FP32 accumulation bound
    (2 (3k + 2) 2^-24 + 2^-20) |a||b^T| elementwise (split residual ~2^-22), and the TF32
    halves exact (10 explicit mantissa bits)."""
    from hartree.mp2.rimp2_gpu import _tf32_split, split_tf32_nt
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 300)) * np.exp(rng.uniform(-12, 2, (40, 300)))
    b = rng.standard_normal((30, 300)) * np.exp(rng.uniform(-12, 2, (30, 300)))
    hi, _ = _tf32_split(np, a)
    assert not (hi.view(np.uint32) & 0x1FFF).any()
    c = split_tf32_nt(a, b)
    assert c.dtype == np.float32 and c.shape == (40, 30)
    bound = (2 * (3 * 300 + 2) * 2.0 ** -24 + 2.0 ** -20) * (np.abs(a) @ np.abs(b).T)
    assert (np.abs(c - a @ b.T) <= bound).all()


def test_gpu_options_are_checked(cpu_refs):
    ref = cpu_refs["water"]
    with pytest.raises(InputError, match="device"):
        mp2.run(ref, aux=AUX, device="tpu")
    with pytest.raises(InputError, match="precision"):
        mp2.run(ref, aux=AUX, device="gpu", precision="fp16")


# ----------------------------------------------------------------------------- on the GPU
@pytest.fixture(scope="module")
def gpu_refs():
    out = {}
    for name, txt, mult, method in (("water", WATER, 1, "rhf"), ("oh", OH, 2, "uhf")):
        mol = Molecule.from_string(txt, multiplicity=mult)
        out[name] = hartree.scf.run(mol, "6-31g", method=method, device="gpu",
                                    conv_tol=1e-12, conv_tol_grad=1e-9)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["water", "oh"])
@pytest.mark.parametrize("frozen_core", [False, True])
def test_gpu_fp64_equals_cpu_and_pyscf(gpu_refs, name, frozen_core):
    ref = gpu_refs[name]
    assert abs(ref.energy - PYSCF[name][0]) < 1e-8
    cpu = mp2.run(ref, aux=AUX, frozen_core=frozen_core)
    gpu = mp2.run(ref, aux=AUX, frozen_core=frozen_core, device="gpu")
    for f in ("correlation_energy", "opposite_spin", "same_spin"):
        assert abs(getattr(gpu, f) - getattr(cpu, f)) < 1e-8, f
    assert abs(gpu.correlation_energy - PYSCF[name][2 if frozen_core else 1]) < 1e-8
    assert gpu.device.startswith("gpu: cuda") and gpu.precision == "fp64"   # no other scheme ran


@pytest.mark.gpu
def test_gpu_host_store_and_batches_equal_device_store(gpu_refs):
    for ref in gpu_refs.values():
        a = mp2.run(ref, aux=AUX, device="gpu")
        b = mp2.run(ref, aux=AUX, device="gpu", gpu_host_store=True, gpu_memory_mb=1.0,
                    aux_batch=20)
        assert abs(a.correlation_energy - b.correlation_energy) < 1e-11
        assert abs(a.same_spin - b.same_spin) < 1e-11
        assert "host memory" in b.device and "device memory" in a.device


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "tf32", "mixed", "tf32x3"])
def test_gpu_low_precision_errors_are_bounded(gpu_refs, precision):
    for ref in gpu_refs.values():
        exact = mp2.run(ref, aux=AUX, device="gpu").correlation_energy
        res = mp2.run(ref, aux=AUX, device="gpu", precision=precision)
        assert res.precision.split()[0] == precision
        assert abs(res.correlation_energy - exact) < BOUND[precision] * KCAL


@pytest.mark.gpu
def test_gpu_unconverged_reference_is_rejected(gpu_refs):
    with pytest.raises(InputError, match="converged"):
        mp2.run(dataclasses.replace(gpu_refs["water"], converged=False), device="gpu")


@pytest.mark.gpu
def test_cli_runs_mp2_on_the_gpu_and_says_so(tmp_path):
    """``hartree run --method mp2 --device gpu``: energy = stored PySCF numbers, and the report
    names the precision and the GPU."""
    import contextlib
    import io
    import json

    from hartree.cli.main import main

    def run_main(argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return code, out.getvalue(), err.getvalue()
    xyz = tmp_path / "water.xyz"
    xyz.write_text("3\nwater\n" + WATER.replace("; ", "\n") + "\n")
    out = tmp_path / "w.json"
    code, text, err = run_main(["run", str(xyz), "-b", "6-31g", "-m", "mp2", "--aux", AUX,
                                "--device", "gpu", "--frozen-core", "--conv-tol", "1e-11",
                                "--json", str(out)])
    assert code == 0, err
    assert "gpu: cuda" in text and "fp64" in text
    total = json.loads(out.read_text())["properties"]["mp2_total_energy"]
    assert abs(total - sum(PYSCF["water"][::2])) < 1e-5      # CLI gradient threshold 1e-5
    code, text, err = run_main(["run", str(xyz), "-b", "6-31g", "-m", "mp2", "--aux", AUX,
                                "--device", "gpu", "--precision", "tf32x3"])
    assert code == 0, err
    assert "tf32x3" in text and "gpu: cuda" in text
