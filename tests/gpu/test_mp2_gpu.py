"""GPU RI-MP2 (hartree.mp2.gpu_device) against the CPU RI-MP2 (which equals PySCF's DF-MP2 to
1e-8 Eh, tests/mp2) and against stored PySCF numbers.

Without a GPU the driver runs on numpy with the g++-emulated three-index kernels (checks the
batching, transforms and energy sums); with one (``gpu`` mark) on the device.
Tolerances: FP64 1e-8 Eh (observed ~1e-12); fp32/tf32/mixed within 0.1 kcal/mol of FP64.
"""

import dataclasses
import importlib

import numpy as np
import pytest

import hartree.scf
from hartree import mp2
from hartree.errors import InputError
from hartree.molecule import Molecule
from tests.helpers import emulated_backend

KCAL = 1.0 / 627.509474  # Eh per kcal/mol
WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"
OH = "O 0 0 0; H 0 0 0.97"
AUX = "cc-pvdz-rifit"

#: PySCF 2.x (scf.RHF/UHF, conv_tol 1e-12, then mp.dfmp2.DFMP2 / dfump2.DFUMP2 with the
#: basis-set-exchange cc-pVDZ-RIFIT data), orbital basis 6-31G, geometries above (Angstrom):
#: (E_SCF, E_corr all electrons, E_corr frozen core), hartree.
PYSCF = {
    "water": (-75.98397446572486, -0.12883649678759745, -0.12779942737374134),
    "oh": (-75.36316824611573, -0.08917293571386894, -0.0882226370027458),
}


# ----------------------------------------------------------------------------- CPU (emulated)
@pytest.fixture(scope="module")
def cpu_refs():
    from hartree.basis import load_basis
    from tests.scf.pyscf_engine import PySCFEngine

    out = {}
    for name, txt, mult, method in (("water", WATER, 1, "rhf"), ("oh", OH, 2, "uhf")):
        mol = Molecule.from_string(txt, multiplicity=mult)
        basis = load_basis(mol, "6-31g")
        out[name] = hartree.scf.run(
            mol, basis, method=method, engine=PySCFEngine(mol, basis), conv_tol=1e-12, conv_tol_grad=1e-9
        )
    return out


@pytest.mark.parametrize("name", ["water", "oh"])
@pytest.mark.parametrize("frozen_core", [False, True])
def test_emulated_gpu_driver_equals_cpu_mp2(cpu_refs, name, frozen_core):
    """Tiny memory budget and aux batches: several aux batches, occupied blocks, B row blocks."""
    ref = cpu_refs[name]
    cpu = mp2.run(ref, aux=AUX, frozen_core=frozen_core)
    gpu = mp2.run(
        ref,
        aux=AUX,
        frozen_core=frozen_core,
        device="gpu",
        gpu_backend=emulated_backend(),
        gpu_memory_mb=0.3,
        aux_batch=16,
    )
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
        res = mp2.run(ref, aux=AUX, device="gpu", gpu_backend=emulated_backend(), precision=precision)
        assert abs(res.correlation_energy - exact) < BOUND[precision] * KCAL
        assert res.precision.split()[0] == precision


def _random_b(rng, no, nv, naux):
    """A B tensor (no*nv, naux) with RI-like structure: rows of decaying magnitude."""
    scale = np.exp(-0.05 * np.arange(naux))[None, :] * rng.uniform(0.2, 1.0, (no * nv, 1))
    return rng.standard_normal((no * nv, naux)) * scale


def _slow_energies(v, eo, ev, eo2=None, ev2=None):
    """(direct, exchange) sums over all i, j of the full (ia|jb) (no*nv, no2*nv2): reference
    (exchange only for one spin)."""
    eo2, ev2 = (eo, ev) if eo2 is None else (eo2, ev2)
    v = v.reshape(len(eo), len(ev), len(eo2), len(ev2))
    d = eo[:, None, None, None] - ev[None, :, None, None] + eo2[None, None, :, None] - ev2
    x = (v * v.transpose(0, 3, 2, 1) / d).sum() if v.shape == v.transpose(0, 3, 2, 1).shape else 0.0
    return float((v * v / d).sum()), float(x)


def _energies_np(b, eo, ev, precision, budget):
    """pair_energy.energies of the GPU device on numpy for one spin: ((E_OS, E_SS, nocc, nvir,
    calibration), log)."""
    from hartree.mp2 import pair_energy
    from hartree.mp2.gpu_device import GPUDevice, StepTimeLog

    log = StepTimeLog()
    out = pair_energy.energies(GPUDevice(np, budget), [(None, None, eo, ev)], [b], precision, log)
    return out, log


@pytest.mark.parametrize("slices", [2, 3])
def test_mixed_ozaki_blocks_equal_one_big_ozaki_product(monkeypatch, slices):
    """The "mixed" block path (each i block sliced once, j blocks sliced in reverse order,
    diagonals scaled per row/column, j <= i with weights) gives the energy sums of ONE
    mgemm(precision="ozaki", slices=S) product of the whole B, summed by a plain numpy
    reference, to rounding (1e-12 relative)."""
    from hartree.linalg import mgemm
    from hartree.mp2 import mixed_precision, pair_energy
    from hartree.mp2.gpu_device import pair_block_sizes

    rng = np.random.default_rng(3)
    no, nv, naux = 7, 11, 40
    b = _random_b(rng, no, nv, naux)
    eo = np.sort(rng.uniform(-2.0, -0.3, no))
    ev = np.sort(rng.uniform(0.1, 3.0, nv))
    monkeypatch.setattr(mixed_precision, "MIXED_SLICES", (slices,))
    monkeypatch.setattr(mixed_precision, "MIXED_TARGET_EH", 1e3)  # accept S at once
    budget = 4 * (16 * (3 * nv) ** 2 + 24 * naux * 6 * nv)  # several i blocks
    (e_os, e_ss, _, _, cal), log = _energies_np(b, eo, ev, "mixed", budget)
    v = mgemm(b, b, transb=True, precision="ozaki", slices=slices)
    d, x = _slow_energies(v, eo, ev)
    assert abs(e_os - d) < 1e-12 * abs(d) and abs(e_ss - (d - x)) < 1e-12 * abs(d)
    assert cal[0]["slices"] == slices
    ni, _ = pair_block_sizes(no, nv, no, nv, naux, budget, 28)
    nblocks = sum(len(js) for _, _, js in pair_energy.occupied_blocks(no, no, ni, ni, True))
    assert nblocks > 3  # the calibration block is not formed a second time:
    assert sum(r["calls"] for r in log.steps.values() if r["step"] == "(ia|jb)") == nblocks - 1
    d64, x64 = _slow_energies(b @ b.T, eo, ev)
    assert abs(e_os - d64) > 0.0  # it is not FP64


def test_mixed_ozaki_opposite_spin_blocks(monkeypatch):
    """UHF: the alpha-beta sum (rectangular blocks, different nocc/nvir, all i, j) and the two
    same-spin sums of the "mixed" path equal the sums of whole mgemm ozaki products."""
    from hartree.linalg import mgemm
    from hartree.mp2 import mixed_precision, pair_energy
    from hartree.mp2.gpu_device import GPUDevice, StepTimeLog

    rng = np.random.default_rng(11)
    naux = 30
    dims = ((6, 9), (4, 11))
    bs = [_random_b(rng, no, nv, naux) for no, nv in dims]
    es = [(np.sort(rng.uniform(-2.0, -0.3, no)), np.sort(rng.uniform(0.1, 3.0, nv))) for no, nv in dims]
    monkeypatch.setattr(mixed_precision, "MIXED_SLICES", (3,))
    monkeypatch.setattr(mixed_precision, "MIXED_TARGET_EH", 1e3)
    budget = 4 * (28 * (2 * 11) ** 2 + 24 * naux * 4 * 11)  # several blocks
    e_os, e_ss, nocc, nvir, cal = pair_energy.energies(
        GPUDevice(np, budget), [(None, None, eo, ev) for eo, ev in es], bs, "mixed", StepTimeLog()
    )
    assert nocc == (6, 4) and nvir == (9, 11) and len(cal) == 3
    ss = 0.0
    for b, (eo, ev) in zip(bs, es):
        d, x = _slow_energies(mgemm(b, b, transb=True, precision="ozaki", slices=3), eo, ev)
        ss += 0.5 * (d - x)
    os_, _ = _slow_energies(mgemm(bs[0], bs[1], transb=True, precision="ozaki", slices=3), *es[0], *es[1])
    assert abs(e_os - os_) < 1e-12 * abs(os_) and abs(e_ss - ss) < 1e-12 * abs(ss)


def test_mixed_calibration_picks_slices_by_the_energy_and_falls_back_to_fp64(monkeypatch):
    """The calibration tries S = 2, 3, ... on the first block and keeps the first whose
    extrapolated energy error meets the target; an unreachable target gives FP64 (and the
    FP64 energy, to rounding), and both are reported."""
    from hartree.mp2 import mixed_precision

    rng = np.random.default_rng(4)
    no, nv, naux = 6, 20, 60
    b = _random_b(rng, no, nv, naux)
    eo = np.sort(rng.uniform(-2.0, -0.3, no))
    ev = np.sort(rng.uniform(0.1, 3.0, nv))
    d64, x64 = _slow_energies(b @ b.T, eo, ev)
    budget = 4 * (28 * (3 * nv) ** 2 + 24 * naux * 6 * nv)  # several i blocks
    (e_os, e_ss, _, _, cal), _ = _energies_np(b, eo, ev, "mixed", budget)
    rec = cal[0]
    s = rec["slices"]
    assert s in mixed_precision.MIXED_SLICES and rec["tried"][-1]["slices"] == s
    for t in rec["tried"][:-1]:  # rejected: above target / safety
        assert t["estimated_error_eh"] > rec["target_eh"] / mixed_precision.MIXED_SAFETY
    assert rec["tried"][-1]["estimated_error_eh"] <= rec["target_eh"] / mixed_precision.MIXED_SAFETY
    assert abs(2 * e_os - (e_os - e_ss) - (2 * d64 - x64)) < rec["target_eh"]
    assert "ozaki INT8 with" in mixed_precision.calibration_note(rec)
    monkeypatch.setattr(mixed_precision, "MIXED_TARGET_EH", 0.0)
    (e_os, e_ss, _, _, cal), log = _energies_np(b, eo, ev, "mixed", budget)
    assert cal[0]["slices"] is None and "fp64" in mixed_precision.calibration_note(cal[0])
    assert abs(e_os - d64) < 1e-12 * abs(d64) and abs(e_ss - (d64 - x64)) < 1e-12 * abs(d64)
    assert {r["precision"] for r in log.steps.values() if r["step"] == "(ia|jb)"} == {"fp64"}


def test_emulated_mixed_reports_the_calibration(cpu_refs):
    """MP2Result of "mixed": the precision names the Ozaki slices, notes the calibration."""
    ref = cpu_refs["water"]
    exact = mp2.run(ref, aux=AUX).correlation_energy
    res = mp2.run(ref, aux=AUX, device="gpu", gpu_backend=emulated_backend(), precision="mixed", gpu_memory_mb=0.3)
    assert "(ia|jb): ozaki INT8" in res.precision and res.notes[0].startswith("mixed: ")
    assert res.calibration[0]["slices"] >= 2
    assert abs(res.correlation_energy - exact) < 1e-6
    assert set(res.timings) >= {"energy", "energy_gemm", "energy_kernel", "energy_slices", "energy_calibration"}
    from rich.console import Console

    from hartree.cli.report import print_mp2_report
    from hartree.io.qcschema import mp2_extras

    assert mp2_extras(res)["notes"] == res.notes  # --json carries them
    console = Console(record=True, width=200)
    print_mp2_report(console, res)
    text = console.export_text()
    assert "note" in text and "ozaki INT8 with" in text and "(ia|jb): ozaki INT8" in text


def test_energy_and_ozaki_kernels_compile_for_sm90_without_spills():
    """The MP2 energy kernels and mgemm's slicing/summation kernels through NVRTC (no GPU
    needed): they compile for sm_90 and use no local memory (the Ozaki energy kernels for 1
    and 2 slices, used only by the calibration, keep an 8-byte stack frame)."""
    from hartree.device import nvrtc
    from hartree.linalg import mgemm_gpu
    from hartree.mp2 import block_energy

    if not nvrtc.available():
        pytest.skip("NVRTC library not found")
    res_small = None
    ozaki = tuple(f"mp2_block_energy_ozaki{s}" for s in range(3, 9))
    for src, names in (
        (block_energy.energy_source(), ("mp2_block_energy_f64", "mp2_block_energy_f32") + ozaki),
        (mgemm_gpu.kernel_source(), ("hartree_ozaki_slice", "hartree_row_absmax_sum", "hartree_ozaki_sum")),
    ):
        res = nvrtc.cubin_resources(nvrtc.compile_source(src, "sm_90", options=("-std=c++17",)).image)
        res_small = res if "mp2_block_energy_ozaki1" in res else res_small
        for name in names:
            assert res[name]["frame_bytes"] == 0 and res[name]["num_regs"] <= 64, name
    for s in (1, 2):
        assert res_small[f"mp2_block_energy_ozaki{s}"]["frame_bytes"] <= 8


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
        out[name] = hartree.scf.run(mol, "6-31g", method=method, device="gpu", conv_tol=1e-12, conv_tol_grad=1e-9)
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
    assert gpu.device.startswith("gpu: cuda") and gpu.precision == "fp64"  # no other scheme ran


@pytest.mark.gpu
def test_gpu_host_store_and_batches_equal_device_store(gpu_refs):
    for ref in gpu_refs.values():
        a = mp2.run(ref, aux=AUX, device="gpu")
        b = mp2.run(ref, aux=AUX, device="gpu", gpu_host_store=True, gpu_memory_mb=1.0, aux_batch=20)
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
@pytest.mark.parametrize("reference", ["rhf", "uhf"])
def test_gpu_fused_ozaki_energy_kernel_equals_the_numpy_path(monkeypatch, reference):
    """mp2_block_energy_ozaki (INT32 diagonals read in the kernel) on the device against the
    numpy path of the same blocks (same slices, same FP64 sums): 1e-12 relative; RHF (one
    spin, j <= i) and UHF (two spins, rectangular alpha-beta blocks)."""
    import cupy as cp

    from hartree.mp2 import mixed_precision, pair_energy
    from hartree.mp2.gpu_device import GPUDevice, StepTimeLog

    rng = np.random.default_rng(9)
    naux = 300
    dims = ((9, 70),) if reference == "rhf" else ((9, 70), (7, 72))
    bs = [_random_b(rng, no, nv, naux) for no, nv in dims]
    spaces = [(None, None, np.sort(rng.uniform(-2.0, -0.3, no)), np.sort(rng.uniform(0.1, 3.0, nv))) for no, nv in dims]
    monkeypatch.setattr(mixed_precision, "MIXED_SLICES", (3,))
    monkeypatch.setattr(mixed_precision, "MIXED_TARGET_EH", 1e3)
    policy = importlib.import_module("hartree.linalg.gemm_precision")
    monkeypatch.setattr(policy, "GPU_SPLIT_GAIN", 0.0)  # small: no cost model
    budget = 4 * (28 * (4 * 72) ** 2 + 24 * naux * 8 * 72)
    ref = pair_energy.energies(GPUDevice(np, budget), spaces, bs, "mixed", StepTimeLog())
    gpu = pair_energy.energies(GPUDevice(cp, budget), spaces, [cp.asarray(b) for b in bs], "mixed", StepTimeLog())
    assert [c["slices"] for c in gpu[4]] == [3] * len(gpu[4])
    for r, g in zip(ref[:2], gpu[:2]):
        assert abs(r - g) < 1e-12 * abs(r)


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
    code, text, err = run_main(
        [
            "run",
            str(xyz),
            "-b",
            "6-31g",
            "-m",
            "mp2",
            "--aux",
            AUX,
            "--device",
            "gpu",
            "--frozen-core",
            "--conv-tol",
            "1e-11",
            "--json",
            str(out),
        ]
    )
    assert code == 0, err
    assert "gpu: cuda" in text and "fp64" in text
    total = json.loads(out.read_text())["properties"]["mp2_total_energy"]
    assert abs(total - sum(PYSCF["water"][::2])) < 1e-5  # CLI gradient threshold 1e-5
    code, text, err = run_main(
        ["run", str(xyz), "-b", "6-31g", "-m", "mp2", "--aux", AUX, "--device", "gpu", "--precision", "tf32x3"]
    )
    assert code == 0, err
    assert "tf32x3" in text and "gpu: cuda" in text
