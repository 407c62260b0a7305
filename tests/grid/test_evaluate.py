"""The lattice methods written once (hartree.grid.evaluate) on both devices: the blocks cover
every point once, "auto" picks per device, the public API runs on any GridDevice (here the
GPU's through the g++ emulator), and the CPU's pieces give the values of its kernels
exactly (FP64 1e-10 absolute between devices, values are O(1); bitwise on one device)."""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.errors import InputError
from hartree.grid import evaluate, evaluate_density, evaluate_orbitals, gpu, lattice_around, lattice_from_axes
from hartree.grid.cpu_device import CPUGrid, CPUSeparableKernels
from hartree.grid.geometry import Geometry
from hartree.grid.orbitals import ao_blocks
from hartree.grid.separable import cartesian_coefficients, lattice_tables, make_plan

from .gpu_cases import CHAIN, WATER, coefficients, scattered_points, system

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="needs g++")
BE = emulator.EmulatedBackend(opt="-O1")


@pytest.fixture(scope="module")
def water():
    mol, basis = system(WATER, "cc-pvdz", False)
    return mol, basis, lattice_around(mol.coords, 0.5, 1.5, unit="bohr")


def _tilted(mol):
    angle = 0.4
    rot = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1.0]])
    return lattice_from_axes(mol.coords.min(axis=0) - 2.0, 0.5 * rot, (11, 12, 10))


@pytest.mark.parametrize(
    "unit,align,max_points,pieces",
    [("plane", 1, 500, 1), ("plane", 1, 10**6, 4), ("row", 1, 64, 1), ("point", 1, 300, 1), ("point", 128, 700, 3)],
)
def test_blocks_cover_every_point_once_in_whole_units(unit, align, max_points, pieces):
    lattice = lattice_from_axes([0, 0, 0], np.eye(3) * 0.3, (13, 7, 11))
    for geometry in (Geometry.of(lattice), Geometry.of(np.zeros((1000, 3)))):
        if unit != "point" and geometry.lattice is None:
            continue
        blocks = geometry.blocks(max_points, pieces, unit, align)
        assert [b.start for b in blocks] == list(np.cumsum([0] + [b.count for b in blocks[:-1]]))
        assert sum(b.count for b in blocks) == geometry.npoints
        size = {"plane": 7 * 11, "row": 11, "point": align}[unit]
        assert all(b.count % size == 0 for b in blocks[:-1]) and all(b.count >= 1 for b in blocks)
        assert all(b.count <= max(max_points, size) for b in blocks)
        if pieces > 1 and unit == "plane":
            assert len(blocks) >= pieces
        if unit == "plane":
            assert all(b.plane * size == b.start and b.planes * size == b.count for b in blocks)


@needs_gxx
def test_auto_method_per_device(water):
    mol, basis, lattice = water
    cpu, gpu_grid = CPUGrid(), gpu.GPUGrid(backend=BE)
    rect, tilt, points = Geometry.of(lattice), Geometry.of(_tilted(mol)), Geometry.of(scattered_points(seed=1))
    f64 = np.dtype(np.float64)
    assert evaluate.choose_method(cpu, basis, rect, 20, f64, "auto") == "separable"
    assert evaluate.choose_method(cpu, basis, tilt, 1, f64, "auto") == "ao"
    assert evaluate.choose_method(gpu_grid, basis, rect, 20, f64, "auto") == "separable"
    assert evaluate.choose_method(gpu_grid, basis, points, 8, f64, "auto") == "direct"
    assert evaluate.choose_method(gpu_grid, basis, tilt, 9, f64, "auto") == "ao"
    with pytest.raises(InputError, match="use auto, ao or separable"):
        evaluate.choose_method(cpu, basis, rect, 1, f64, "direct")
    with pytest.raises(InputError, match="axes along x, y and z"):
        evaluate.choose_method(gpu_grid, basis, tilt, 1, f64, "separable")


@needs_gxx
def test_public_api_on_the_emulated_gpu_device(water):
    """evaluate_orbitals/evaluate_density with device=GPUGrid run the same methods with the GPU kernels."""
    mol, basis = system(CHAIN, "6-31g*", True)
    coeff = coefficients(basis.nao, basis.nao, seed=5)
    occ = np.zeros((2, basis.nao))
    occ[0, :7], occ[1, :5] = 1.0, 1.0
    pair = np.stack([coeff, coeff[:, ::-1]])
    lattice = lattice_around(mol.coords, 0.6, 1.0, unit="bohr")
    for where in (lattice, _tilted(mol), scattered_points(seed=3)):
        device = gpu.GPUGrid(backend=BE, devices=[0, 0], slab_points=600, kernel="jit")
        for method in ("auto", "ao", "direct"):
            psi = evaluate_orbitals(basis, coeff[:, :3], where, method=method, device=device)
            np.testing.assert_allclose(psi, evaluate_orbitals(basis, coeff[:, :3], where), rtol=0, atol=1e-10)
        rho = evaluate_density(basis, pair, occ, where, spin=True, device=device)
        np.testing.assert_allclose(rho, evaluate_density(basis, pair, occ, where, spin=True), rtol=0, atol=1e-10)


def test_cpu_methods_are_the_gemm_of_the_kernels_values(water):
    """On the CPU, "ao" is C^T phi over the blocks of ao_blocks and "separable" the runner's
    slabs: the same arithmetic, so the same bits."""
    mol, basis, lattice = water
    coeff = coefficients(basis.nao, 2, seed=8)
    for where in (lattice, _tilted(mol)):
        ref = np.concatenate([coeff.T @ ao for _, _, ao in ao_blocks(basis, where)], axis=1)
        np.testing.assert_array_equal(evaluate_orbitals(basis, coeff, where, method="ao").reshape(2, -1), ref)
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    cart = cartesian_coefficients(basis, coeff[:, 1].reshape(-1, 1))[:, 0]
    geometry = Geometry.of(lattice)
    kernels = CPUSeparableKernels(plan, tables, evaluate.separable_weights(plan, cart), geometry, np.float64)
    planes = CPUGrid.separable_planes(plan.nterm, lattice.shape, np.float64)
    runner = evaluate.SeparableRunner(kernels, plan, tables, lattice, np.float64, planes)
    psi = evaluate_orbitals(basis, coeff, lattice, method="separable")[1]
    np.testing.assert_array_equal(runner.run(), psi)
    np.testing.assert_allclose(psi, evaluate_orbitals(basis, coeff, lattice, method="ao")[1], rtol=0, atol=1e-12)


def _members(protocol):
    return {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)


@needs_gxx
def test_both_devices_supply_every_member_of_the_contract(water):
    from hartree.grid.device import GridDevice, PointKernels, SeparableKernels
    from hartree.grid.gpu_separable import GPUSeparableKernels

    mol, basis, lattice = water
    geometry = Geometry.of(lattice)
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    weight = np.ones(plan.entry_term.size)
    for device in (CPUGrid(), gpu.GPUGrid(backend=BE)):
        assert _members(GridDevice) <= set(dir(device))
        worker = None if isinstance(device, CPUGrid) else BE  # what device.run hands to setup
        prepared = device.prepare(basis, geometry, np.dtype(np.float64))
        point = device.point_kernels(worker, prepared, geometry, np.float64)
        assert _members(PointKernels) <= set(dir(point))
        sep = device.separable_kernels(worker, plan, tables, weight, geometry, np.dtype(np.float64))
        assert isinstance(sep, CPUSeparableKernels if worker is None else GPUSeparableKernels)
        assert _members(SeparableKernels) <= set(dir(sep))
