"""The XC gradient on a device (hartree.dft.xc_grad_integrate: eq. (1) of
hartree.dft.xc_gradient written once for numpy and cupy) against the host's numpy reference
(xc_gradient without kernels, itself checked against PySCF in test_xc_gradient.py).

Without a GPU the CUDA kernels run on the emulated backend (g++): the second derivatives of
ao_blocks2 must equal numba's (ao_kernels, deriv 2) to rounding and both hartree.dft.numint's
ao_values(deriv=2); the gradient of the emulated kernels and of the CPU's numba kernels must
equal the reference to 1e-11 Eh/bohr (LDA, GGA, meta-GGA; RKS and UKS; measured: below
3e-14), whether a chunk holds every block or one; the VV10 gradient likewise.  On a GPU
(``gpu`` mark) the same comparisons, and the XC and VV10 components of a GPU engine's
gradient against the host's terms of the same SCF result.
"""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.device import emulator
from hartree.dft import make_grid, parse_functional
from hartree.dft.ao_cache import AOCache
from hartree.dft.numint import ao_values, shell_radii
from hartree.dft.vv10 import nlc_gradient
from hartree.dft.xc_grad_integrate import atom_gradient, gradient_cache, per_ao_gradient
from hartree.dft.xc_gradient import xc_gradient
from hartree.dft.xc_integrate import check_dm
from hartree.dft.xc_kernels import CPUKernels
from hartree.errors import InputError
from tests.helpers import water

pytest.importorskip("pyscf")

#: LDA, GGA, a hybrid's semilocal part, two meta-GGAs
FUNCTIONALS = ["svwn", "pbe", "b3lyp", "tpss", "r2scan"]
#: |device - host| allowed, Eh/bohr
TOL = 1e-11
needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")


def _emulated(nset=1, block_points=128):
    from hartree.dft.xc_gpu import GPUKernels

    return GPUKernels(emulator.EmulatedBackend(opt="-O1"), nset=nset, block_points=block_points)


def _block(cache, b):
    """(ncomp, k, m) values of block b of a cache that keeps every block."""
    buffer, offsets = cache._cached
    return cache._arrays(b, b + 1, (buffer[offsets[b] :], offsets[b : b + 2] - offsets[b]))[0]


@needs_gxx
@pytest.mark.parametrize("cartesian", [False, True])
def test_second_derivatives_equal_numba_and_numint(cartesian):
    """ao_blocks2 (CUDA, g++) equals numba's deriv-2 values on every block to 1e-13 of the
    largest (measured: bit for bit), and numba's equal numint.ao_values(deriv=2) on a sample of
    blocks; spherical and cartesian shells up to f."""
    mol = water()
    basis = load_basis(mol, "cc-pvtz", cartesian=cartesian)
    grid = make_grid(mol, level=1)
    radii = shell_radii(basis, deriv=2)
    ref = AOCache(basis, grid, 2, radii, block_points=200)
    got = AOCache(basis, grid, 2, radii, block_points=200, kernels=_emulated(block_points=200))
    assert ref.ncomp == got.ncomp == 10 and ref.ncached == got.ncached == ref.nblock
    a, b = ref._cached[0], got._cached[0]
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-13 * np.abs(a).max())
    for blk in range(0, ref.nblock, 9):
        pts = ref.coords[ref.starts[blk] : ref.starts[blk + 1]]
        shells = ref.shells[ref.shell_start[blk] : ref.shell_start[blk + 1]]
        x = ao_values(basis, pts, 2, shells).transpose(0, 2, 1)
        np.testing.assert_allclose(_block(ref, blk), x, rtol=0, atol=1e-13 * np.abs(x).max())


@needs_gxx
@pytest.mark.parametrize("name", FUNCTIONALS)
def test_device_gradient_equals_host(water_rhf, water_cation_uhf, name):
    """xc_gradient with the emulated GPU kernels (blocks of up to 1100 points: up to three
    segments of contract_gradient, the last one short) and with the CPU's numba kernels
    equals the numpy reference, RKS water and UKS H2O+ / 6-31G."""
    for mol, basis, _, dm in (water_rhf, water_cation_uhf):
        grid = make_grid(mol, level=1)
        ref = xc_gradient(mol, basis, grid, dm, name)
        for kernels in (_emulated(nset=np.ndim(dm) - 1, block_points=1100), CPUKernels()):
            got = xc_gradient(mol, basis, grid, dm, name, kernels=kernels)
            np.testing.assert_allclose(got, ref, rtol=0, atol=TOL)


@needs_gxx
def test_chunks_do_not_change_the_gradient(water_cation_uhf):
    """With scratch for one block at a time (every block its own chunk and libxc call) the
    device gradient is the reference's too; the reference's sum over atoms is not zero (the
    grid is held fixed), and the device's equals it."""
    mol, basis, _, dm = water_cation_uhf
    grid = make_grid(mol, level=1)
    f = parse_functional("tpss")
    ref = xc_gradient(mol, basis, grid, dm, f)
    kernels = _emulated(nset=2, block_points=100)
    cache = gradient_cache(basis, grid, f.family, kernels, scratch_bytes=1)
    assert cache.ncached == 0 and len(list(cache.chunks())) == cache.nblock > 10
    dms, unrestricted = check_dm(basis, dm, kernels.xp)
    got = atom_gradient(basis, mol.natm, per_ao_gradient(cache, dms, f, unrestricted))
    np.testing.assert_allclose(got, ref, rtol=0, atol=TOL)
    assert np.abs(ref.sum(axis=0)).max() > 1e-6


def test_grid_response_with_kernels_is_refused(water_rhf):
    mol, basis, _, dm = water_rhf
    with pytest.raises(InputError, match="grid response runs on the host") as err:
        xc_gradient(mol, basis, make_grid(mol, level=1), dm, "pbe", grid_response=True, kernels=CPUKernels())
    assert "\n" not in str(err.value)


@needs_gxx
def test_vv10_gradient_on_device_equals_host(water_rhf):
    """nlc_gradient with the emulated kernels (ao_blocks2, vv10.cu's pair sums) and with the
    CPU's equals the host reference to 1e-13 Eh/bohr (its largest component: 1e-3)."""
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    ref = nlc_gradient(mol, basis, grid, dm, (6.0, 0.01))
    for kernels in (_emulated(), CPUKernels()):
        got = nlc_gradient(mol, basis, grid, dm, (6.0, 0.01), kernels=kernels)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13)


@needs_gxx
@pytest.mark.parametrize("method", ["rks", "uks"])
def test_xc_term_with_kernels(water_rhf, water_cation_uhf, method):
    """scf_gradient's XC (and VV10) terms of a Kohn-Sham result on the emulated device equal
    the host's, RKS (the result's density (1, nao, nao)) and UKS."""
    from hartree.gradients.scf_gradient import vv10_term, xc_term
    from hartree.scf.result import SCFResult

    mol, basis, _, dm = water_rhf if method == "rks" else water_cation_uhf
    density = dm[None] if method == "rks" else dm
    empty = dict.fromkeys(("mo_energy", "mo_coeff", "mo_occ", "dipole", "mulliken_charges", "s_squared"))
    result = SCFResult(  # what the two terms read: the density, functional and grids
        method=method, converged=True, energy=0.0, energy_components={}, iterations=0, history=[],
        wall_time=0.0, device="cpu", molecule=mol, basis=basis, density=density, xc="b97m-v",
        dft={"grid_level": 1, "vv10": {"grid_level": 1}}, **empty,
    )  # fmt: skip
    kernels = _emulated(nset=density.shape[0])
    np.testing.assert_allclose(xc_term(result, kernels=kernels), xc_term(result), rtol=0, atol=TOL)
    np.testing.assert_allclose(vv10_term(result, kernels=kernels), vv10_term(result), rtol=0, atol=1e-13)


# ---------------------------------------------------------------- on a GPU


def _cuda(nset=1):
    from hartree.device.backend import CudaBackend
    from hartree.dft.xc_gpu import GPUKernels

    return GPUKernels(CudaBackend(), nset=nset)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["svwn", "pbe", "b3lyp", "tpss", "r2scan"])
def test_gpu_gradient_equals_host(water_rhf, water_cation_uhf, name):
    """The XC gradient on the GPU (cupy, cuBLAS, ao_blocks2, contract_gradient, libxc for
    CUDA) equals the numpy reference to 1e-10 Eh/bohr, RKS and UKS; the VV10 one to 1e-12."""
    import cupy

    for mol, basis, _, dm in (water_rhf, water_cation_uhf):
        grid = make_grid(mol, level=1)
        ref = xc_gradient(mol, basis, grid, dm, name)
        got = xc_gradient(mol, basis, grid, cupy.asarray(dm), name, kernels=_cuda(np.ndim(dm) - 1))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)
    mol, basis, _, dm = water_rhf
    grid = make_grid(mol, level=1)
    ref = nlc_gradient(mol, basis, grid, dm, (6.0, 0.01))
    got = nlc_gradient(mol, basis, grid, cupy.asarray(dm), (6.0, 0.01), kernels=_cuda())
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


@pytest.mark.gpu
def test_gpu_scf_gradient_runs_the_xc_terms_on_the_gpu():
    """A b97m-v RKS gradient of water / cc-pVDZ with the GPU engine: its XC and VV10 components
    (computed on the GPU) equal the host's xc_term and vv10_term of the same SCF result to
    1e-10 Eh/bohr, and its notes say where they ran (no CPU SCF: its numba compile would
    dominate the device time)."""
    from hartree.gradients import gradient
    from hartree.gradients.scf_gradient import vv10_term, xc_term

    opts = {"xc": "b97m-v", "grid_level": 2, "conv_tol": 1e-10, "conv_tol_grad": 1e-7}
    g = gradient(water(), "cc-pvdz", "rks", device="gpu", **opts)
    assert str(g.scf.device).startswith("cuda")
    np.testing.assert_allclose(g.components["exchange_correlation"], xc_term(g.scf), rtol=0, atol=1e-10)
    np.testing.assert_allclose(g.components["vv10"], vv10_term(g.scf), rtol=0, atol=1e-10)
    assert any("XC gradient on the GPU" in n for n in g.notes)
