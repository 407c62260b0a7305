"""VV10 non-local correlation (hartree.dft.vv10): E_nlc and V_nlc of fixed densities against
PySCF's ``NumInt.nr_nlc_vxc`` on hartree's grid, the potential against central differences of
the energy, the pair sums against a slow numpy reference, the emulated CUDA kernel
(vv10.cu on the g++ backend) against numba, and the gradient against PySCF's
``grad.rks.get_nlc_vxc`` and finite differences.  SCF energies and gradients with VV10
functionals: tests/dft/test_scf_vv10.py."""

import numpy as np
import pytest

from hartree.device import cuda_source, emulator, nvrtc
from hartree.dft import make_grid, parse_functional
from hartree.dft.vv10 import CudaPairs, NonLocal, nlc_gradient, pair_sums, vv10_parameters
from hartree.errors import InputError

pytest.importorskip("pyscf")

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")
#: (b, C) of b97m-v / ωB97X-V / ωB97M-V and of libxc's GGA_XC_VV10, with PySCF's names
PARAMETERS = [((6.0, 0.01), "B97M_V"), ((5.9, 0.0093), "GGA_XC_VV10")]


def _pyscf_nlc(pmol, grid, xc, dm):
    """PySCF's (nelec, E_nlc, V_nlc) of dm on hartree's grid."""
    from pyscf import dft

    grids = dft.gen_grid.Grids(pmol)
    grids.coords, grids.weights = np.array(grid.coords), np.array(grid.weights)
    return dft.numint.NumInt().nr_nlc_vxc(pmol, grids, xc, dm)


def _slow_pair_sums(outer, inner):
    """F, U, W by the module docstring's formulas, one numpy expression per sum."""
    d = outer[:3, :, None] - inner[:3, None, :]
    r2 = (d * d).sum(axis=0)
    g = r2 * outer[3][:, None] + outer[4][:, None]
    gp = r2 * inner[3][None, :] + inner[4][None, :]
    t = inner[5][None, :] / (g * gp * (g + gp))
    s = t * (1.0 / g + 1.0 / (g + gp))
    return np.stack([-1.5 * t.sum(axis=1), s.sum(axis=1), (s * r2).sum(axis=1)])


def _random_points(n, seed=0):
    rng = np.random.default_rng(seed)
    outer = np.vstack([rng.normal(size=(3, n)) * 2.0, rng.uniform(0.1, 2.0, (2, n))])
    inner = np.vstack([outer, rng.uniform(0.0, 1.0, (1, n))])
    return np.ascontiguousarray(outer[:, : n // 2]), np.ascontiguousarray(inner)


def test_pair_sums_equal_the_formula():
    """numba's pair sums equal the direct numpy sums to 1e-13 relative."""
    outer, inner = _random_points(300)
    ref = _slow_pair_sums(outer, inner)
    got = pair_sums(outer, inner)
    assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()


@pytest.mark.parametrize(("params", "xc"), PARAMETERS)
def test_energy_and_potential_equal_pyscf(water_rhf, params, xc):
    """E_nlc, V_nlc and the electron count of the water/6-31G RHF density equal PySCF's on
    the same grid (level 1) to 1e-12 Eh."""
    mol, basis, pmol, dm = water_rhf
    grid = make_grid(mol, level=1)
    e, v, n = NonLocal(basis, grid, params)(dm)
    n_ref, e_ref, v_ref = _pyscf_nlc(pmol, grid, xc, dm)
    assert abs(e - e_ref) < 1e-12 and abs(n - n_ref) < 1e-10
    assert np.abs(v - v_ref).max() < 1e-12
    assert e > 0.0  # VV10's β term dominates on a molecule: E_nlc is positive


def test_total_density_of_an_open_shell_equals_pyscf(water_cation_uhf):
    """VV10 takes the total density: D_α + D_β of H2O+ gives PySCF's (UKS takes the same)."""
    mol, basis, pmol, dm = water_cation_uhf
    grid = make_grid(mol, level=1)
    e, v, _ = NonLocal(basis, grid, (6.0, 0.01))(dm[0] + dm[1])
    _, e_ref, v_ref = _pyscf_nlc(pmol, grid, "B97M_V", dm[0] + dm[1])
    assert abs(e - e_ref) < 1e-12 and np.abs(v - v_ref).max() < 1e-12


def test_potential_is_the_derivative_of_the_energy(water_rhf):
    """tr(V X) equals the central difference (E(D + hX) - E(D - hX)) / 2h along a random
    symmetric X to 1e-8 relative (h = 1e-4; the difference's truncation error is ~1e-9)."""
    mol, basis, _, dm = water_rhf
    nl = NonLocal(basis, make_grid(mol, level=1), (6.0, 0.01))
    x = np.random.default_rng(1).normal(size=dm.shape) * 0.01
    x = x + x.T
    _, v, _ = nl(dm)
    h = 1e-4
    fd = (nl(dm + h * x)[0] - nl(dm - h * x)[0]) / (2 * h)
    assert abs(fd - np.sum(v * x)) < 1e-8 * abs(fd)


def test_kept_and_recomputed_blocks_agree(water_rhf):
    """All AO blocks kept, none kept: the same E_nlc and V_nlc to 1e-14."""
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    e1, v1, _ = NonLocal(basis, grid, (6.0, 0.01))(dm)
    nl = NonLocal(basis, grid, (6.0, 0.01), memory_budget=0)
    assert nl.cache.ncached == 0
    e0, v0, _ = nl(dm)
    assert abs(e1 - e0) < 1e-14 and np.abs(v1 - v0).max() < 1e-14


@needs_gxx
def test_emulated_cuda_pair_sums_equal_numba():
    """vv10.cu (g++ emulation) equals numba's pair sums to 1e-13 relative."""
    outer, inner = _random_points(400, seed=2)
    ref = pair_sums(outer, inner)
    got = CudaPairs(emulator.EmulatedBackend(opt="-O1"))(outer, inner)
    assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()


@needs_gxx
@pytest.mark.parametrize("budget", [None, 0])
def test_emulated_gpu_energy_and_potential_equal_the_cpu(water_rhf, budget):
    """NonLocal on the emulated GPU kernels (AO values, GEMM path and pair sums of
    xc_gpu.cu/vv10.cu) equals the CPU's E_nlc and V_nlc to 1e-12, AO values kept or not."""
    from hartree.dft.xc_gpu import GPUKernels

    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    e, v, n = NonLocal(basis, grid, (6.0, 0.01))(dm)
    kernels = GPUKernels(emulator.EmulatedBackend(opt="-O1"), block_points=256)
    e2, v2, n2 = NonLocal(basis, grid, (6.0, 0.01), kernels=kernels, memory_budget=budget)(dm)
    assert abs(e - e2) < 1e-12 and np.abs(v - v2).max() < 1e-12 and abs(n - n2) < 1e-12


def test_gradient_equals_pyscf_and_finite_differences(water_rhf):
    """nlc_gradient (grid held fixed) equals the VV10 part of PySCF's gradient (its
    ``get_nlc_vxc`` contracted as ``grad.rks`` does) to 1e-11 Eh/bohr, and central differences
    of E_nlc with the density and the grid held fixed, the basis moving with an atom, to 1e-8."""
    from pyscf import dft
    from pyscf.grad import rks as rks_grad

    from hartree.basis import load_basis

    mol, basis, pmol, dm = water_rhf
    grid = make_grid(mol, level=1)
    grad = nlc_gradient(mol, basis, grid, dm, (6.0, 0.01))
    grids = dft.gen_grid.Grids(pmol)
    grids.coords, grids.weights = np.array(grid.coords), np.array(grid.weights)
    vmat = rks_grad.get_nlc_vxc(dft.numint.NumInt(), pmol, grids, "B97M_V", dm)[1]  # (3, nao, nao)
    ref = np.zeros_like(grad)
    for atom, (p0, p1) in enumerate(pmol.aoslice_by_atom()[:, 2:]):
        ref[atom] = 2.0 * np.einsum("xij,ij->x", vmat[:, p0:p1], dm[p0:p1])
    assert np.abs(grad - ref).max() < 1e-11
    h = 1e-4
    for atom, x in ((0, 2), (1, 1)):
        energies = []
        for sign in (1, -1):
            coords = np.array(mol.coords)
            coords[atom, x] += sign * h
            moved = mol.replace(coords=coords)
            energies.append(NonLocal(load_basis(moved, "6-31g"), grid, (6.0, 0.01))(dm)[0])
        fd = (energies[0] - energies[1]) / (2 * h)
        assert abs(fd - grad[atom, x]) < 1e-8, (atom, x, fd, grad[atom, x])


def test_parameters_from_functionals_and_refusals():
    """(b, C) from libxc through parse_functional; a functional without VV10 is refused."""
    assert vv10_parameters(parse_functional("b97m-v")) == (6.0, 0.01)
    assert vv10_parameters(parse_functional("GGA_XC_VV10")) == (5.9, 0.0093)
    with pytest.raises(InputError, match="no VV10"):
        vv10_parameters(parse_functional("pbe"))
    with pytest.raises(InputError, match="positive"):
        vv10_parameters((0.0, 0.01))


@pytest.mark.skipif(not nvrtc.available(), reason="libnvrtc not found (pip install nvidia-cuda-nvrtc)")
def test_cuda_kernel_compiles_for_sm90_without_spills():
    """vv10.cu compiles through NVRTC for sm_90 without a stack frame (48 registers)."""
    result = nvrtc.compile_source(cuda_source.read("hartree.dft", "vv10.cu"), arch="sm_90", output="cubin")
    res = nvrtc.cubin_resources(result.image)
    assert "vv10_pairs" in res and all(r["frame_bytes"] == 0 for r in res.values()), res


@pytest.mark.gpu
def test_gpu_scf_equals_cpu():
    """A whole b97m-v RKS SCF of water/cc-pVTZ (grid level 3, VV10 grid level 1) on the GPU
    engine: the CPU's energy and E_nlc to 1e-9 Eh, E_nlc and V_nlc computed on the device."""
    from hartree.scf import run
    from tests.helpers import water

    opts = dict(xc="b97m-v", grid_level=3, conv_tol=1e-11, conv_tol_grad=1e-7)
    cpu = run(water(), "cc-pvtz", "rks", device="cpu", **opts)
    gpu = run(water(), "cc-pvtz", "rks", device="gpu", **opts)
    assert cpu.converged and gpu.converged
    print(f"RKS b97m-v water/cc-pVTZ: GPU - CPU = {gpu.energy - cpu.energy:.2e} Eh; {gpu.notes[-1]}")
    assert abs(gpu.energy - cpu.energy) < 1e-9
    assert abs(gpu.energy_components["vv10"] - cpu.energy_components["vv10"]) < 1e-9
