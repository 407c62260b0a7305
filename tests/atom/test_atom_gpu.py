"""GPU path of the atomic SCF (hartree.atom.gpu): the CUDA source and its algebra.

CPU tests: the CUDA C compiles with NVRTC (libnvrtc from the nvidia-cuda-nvrtc wheel, no
GPU needed), and the same source built with g++ behind the emulation shim (hartree.device.emulator) gives J and K
equal to the CPU engine (hartree.atom.operators.two_electron, itself checked against PySCF)
to 1e-13 relative.  GPU tests (marked gpu, skipped without cupy and a device): SCF energies
with device='gpu' equal device='cpu' to 1e-10 Eh.
"""

import numpy as np
import pytest
from bases import exponents

from hartree.atom import AtomSCFOptions, gpu_kernels, kernel, make_nucleus, run
from hartree.atom.gpu import KERNELS, DeviceTwoElectron
from hartree.atom.operators import build_operators, two_electron, two_electron_block
from hartree.device.selection import gpu_available
from hartree.errors import DeviceError, InputError


def test_cuda_source_compiles_with_nvrtc():
    from hartree.device import nvrtc

    if not nvrtc.available():
        pytest.skip("libnvrtc not found")
    result = nvrtc.compile_source(gpu_kernels.source(), arch="sm_90", name="atom.cu")
    kernels = nvrtc.cubin_resources(result.image)
    for name in KERNELS:
        assert name in kernels


@pytest.fixture(scope="module")
def emulated():
    from hartree.device import emulator

    if not emulator.available():
        pytest.skip("g++ not found")
    return emulator.EmulatedBackend(opt="-O2")


def _random_densities(dims, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for d in dims:
        a = rng.standard_normal((d, d))
        out.append(a + a.T)
    return out


@pytest.mark.parametrize("element,relativistic", [("Ne", True), ("Zn", True), ("Kr", False)])
def test_emulated_kernels_equal_cpu_engine(emulated, element, relativistic):
    z = {"Ne": 10, "Zn": 30, "Kr": 36}[element]
    ops = build_operators(exponents(element), make_nucleus(z, "gaussian"), 137.0359895, relativistic)
    dev = DeviceTwoElectron(ops, emulated)
    dms = _random_densities(ops.dims)
    for got, ref in zip(dev.two_electron(dms), two_electron(ops, dms)):
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=0, atol=1e-13 * np.abs(r).max())
    b = len(ops.dims) - 1  # the intra-block part used by open shells
    for g, r in zip(dev.two_electron_block(b, dms[b]), two_electron_block(ops, b, dms[b])):
        np.testing.assert_allclose(g, r, rtol=0, atol=1e-13 * np.abs(r).max())


def test_emulated_1d_mapping_equals_2d(emulated):
    ops = build_operators(exponents("Ne"), make_nucleus(10), 137.0359895, True)
    tiles, loop = DeviceTwoElectron(ops, emulated, "2d"), DeviceTwoElectron(ops, emulated, "1d")
    for x in ("L", "S"):
        np.testing.assert_array_equal(tiles.tri[x][0], loop.tri[x][0])
    np.testing.assert_array_equal(tiles.ls[0], loop.ls[0])
    np.testing.assert_array_equal(tiles.coulomb, loop.coulomb)


def test_thesis_integral_count(emulated):
    # 7 κ symmetries with n = 10 functions each: 385 pairs p >= q, 74,305 integrals in the
    # upper triangle of one X matrix (thesis Table 3.2, first row)
    exps = [np.geomspace(0.1, 1e3, 10)] * 4
    ops = build_operators(exps, make_nucleus(86), 137.0359895, True)
    dev = DeviceTwoElectron(ops, emulated)
    assert dev.integral_count["L"] == dev.integral_count["S"] == 74305
    assert dev.integral_count["LS"] == 700 * 701 // 2


def test_device_option_errors():
    with pytest.raises(InputError, match="unknown device"):
        AtomSCFOptions(device="tpu")
    if not gpu_available():
        with pytest.raises(DeviceError, match="no CUDA GPU"):
            run("He", exponents=exponents("He"), device="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize(
    "element,model,relativistic",
    [("Ne", "gaussian", True), ("Kr", "point", True), ("Kr", "gaussian", False), ("Zn", "gaussian", True)],
)
def test_gpu_energy_equals_cpu(element, model, relativistic):
    z = {"Ne": 10, "Kr": 36, "Zn": 30}[element]
    res = {}
    for device in ("cpu", "gpu"):
        opts = AtomSCFOptions(relativistic=relativistic, energy_tol=1e-12, device=device)
        res[device] = kernel(z, exponents(element), make_nucleus(z, model), opts)
    assert res["gpu"].device != "cpu"
    assert abs(res["gpu"].energy - res["cpu"].energy) < 1e-10


@pytest.mark.gpu
def test_gpu_open_shell_equals_cpu():
    # N: one open p3/2 electron beyond 2p1/2² (average of configuration)
    exps = [np.geomspace(0.2, 5e3, 12), np.geomspace(0.15, 300, 8)]
    cpu = run("N", exponents=exps, nucleus="gaussian", device="cpu", energy_tol=1e-12)
    gpu_res = run("N", exponents=exps, nucleus="gaussian", device="gpu", energy_tol=1e-12)
    assert abs(gpu_res.energy - cpu.energy) < 1e-10


@pytest.mark.gpu
def test_gpu_per_kappa_exponents_equal_cpu():
    # separate p1/2 and p3/2 exponents (per-κ windows); the CPU energy equals PySCF's DHF
    # (tests/atom/test_dirac_atoms.py::test_per_kappa_basis_matches_pyscf_dhf)
    from bases import kappa_exponents

    cpu = kernel(
        10, kappa_exponents("Ne"), make_nucleus(10, "gaussian"), AtomSCFOptions(energy_tol=1e-12, device="cpu")
    )
    gpu_res = kernel(
        10, kappa_exponents("Ne"), make_nucleus(10, "gaussian"), AtomSCFOptions(energy_tol=1e-12, device="gpu")
    )
    assert abs(gpu_res.energy - cpu.energy) < 1e-10


def test_emulated_kernels_per_kappa_exponents(emulated):
    from bases import kappa_exponents

    ops = build_operators(kappa_exponents("Ne"), make_nucleus(10, "gaussian"), 137.0359895, True)
    dms = _random_densities(ops.dims)
    js, ks = two_electron(ops, dms)
    jg, kg = DeviceTwoElectron(ops, emulated).two_electron(dms)
    for a, b in zip(js + ks, jg + kg):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12 * np.abs(a).max())


@pytest.mark.gpu
def test_gpu_autogen_average_level_equals_cpu():
    # N: the 3 jj configurations with one set of spinors (open shells of p1/2 and p3/2 coupled)
    from hartree.atom.config import jj_configurations

    confs = [([n for n, _ in p], [q for _, q in p], w) for p, w, _ in jj_configurations(7)]
    exps = [np.geomspace(0.2, 5e3, 12), np.geomspace(0.15, 300, 8)]
    res = [
        kernel(7, exps, make_nucleus(7, "gaussian"), AtomSCFOptions(energy_tol=1e-12, device=d), configurations=confs)
        for d in ("cpu", "gpu")
    ]
    assert abs(res[1].energy - res[0].energy) < 1e-10
    np.testing.assert_allclose(res[1].configuration_energies, res[0].configuration_energies, rtol=0, atol=1e-10)
