"""Orbitals and densities on lattices or point lists: the Python API.

>>> from hartree.grid import lattice_around, evaluate_orbitals, evaluate_density
>>> lat = lattice_around(mol.coords, spacing=0.1, margin=4.0)        # Angstrom
>>> psi = evaluate_orbitals(basis, mo_coeff[:, [homo, homo + 1]], lat)   # (2, nx, ny, nz)
>>> rho = evaluate_density(basis, mo_coeff, mo_occ, lat)                # (nx, ny, nz)

Evaluation paths, same results to rounding (the methods of :mod:`hartree.grid.evaluate`,
written once for the CPU and the GPU):

* "ao": basis-function values of a block of points, then one GEMM with the
  coefficients of all requested orbitals -- any points, any lattice; also how
  densities are made: rho(r) = sum_i n_i |psi_i(r)|^2 with the occupied orbitals of
  each spin.  On the CPU the values come from the general exp kernel
  (:mod:`hartree.grid.cpu`), or, on rectilinear lattices, from products of 1-D
  Gaussian tables (:func:`hartree.grid.separable.ao_rows`, no exponentials).
* "separable": rectilinear lattices only; each orbital as a sum of products of
  1-D Gaussian tables (:mod:`hartree.grid.separable`), much faster for one or a few
  orbitals on large lattices.
* "direct" (GPU only): the fused orbital kernel, a few orbitals per launch.

``method="auto"`` takes "separable" for orbitals on rectilinear lattices (on the GPU up
to gpu.SEPARABLE_MAX_TERMS rank terms), else "direct" for up to gpu_codegen.MAX_NORB
orbitals on the GPU, else "ao".  ``device="gpu"`` (or "auto" with cupy and a CUDA device
present) runs the CUDA kernels of :mod:`hartree.grid.gpu`; a
:class:`hartree.grid.device.GridDevice` (e.g. ``gpu.GPUGrid(devices=[0, 1])``) may be
passed as ``device`` too.  Results are numpy arrays either way.  Values are in atomic
units (bohr^-3/2 for orbitals, bohr^-3 for densities).  ``dtype=np.float32`` gives single
precision (errors about 1e-6 of the largest value; see the tests).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import DTypeLike

from ..basis import Basis
from ..device.selection import resolve_device
from . import evaluate
from .cpu import DEFAULT_THRESHOLD, eval_ao, prepare_basis
from .cpu_device import CPUGrid
from .device import GridDevice
from .geometry import Geometry
from .lattice import Lattice
from .select import spin_occupations


def grid_device(
    device: str | GridDevice = "cpu", threshold: float = DEFAULT_THRESHOLD, gpu_kernel: str = "auto"
) -> GridDevice:
    """The GridDevice of a device name ("cpu", "gpu", "auto"), or ``device`` itself.

    threshold: screening threshold (a.u.); on the GPU the default one means "the GPU's
    default" (hartree.grid.gpu.FP32_THRESHOLD in FP32).  gpu_kernel: "auto", "general" or
    "jit" (GPU only).
    """
    if not isinstance(device, str):
        return device
    if resolve_device(device) == "gpu":
        from .gpu import GPUGrid

        return GPUGrid(kernel=gpu_kernel, threshold=None if threshold == DEFAULT_THRESHOLD else threshold)
    return CPUGrid(threshold)


def ao_blocks(
    basis: Basis, where: Lattice | np.ndarray, dtype: DTypeLike = np.float64, threshold: float = DEFAULT_THRESHOLD
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield (start, stop, AO values (nao, stop - start), AO-major) over a lattice or point array (CPU).

    Rectilinear lattices go by whole rows (ix, iy) through the exp-free 1-D-table kernel
    (:func:`hartree.grid.separable.ao_rows`); other lattices and point arrays through the
    general kernel (:func:`hartree.grid.cpu.eval_ao`).  About POINT_BLOCK points per block.
    """
    device = CPUGrid(threshold)
    geometry = Geometry.of(where)
    prepared = device.prepare(basis, geometry, dtype)
    kernels = device.point_kernels(None, prepared, geometry, dtype)
    unit, align = device.block_layout(geometry)
    for block in geometry.blocks(device.block_points(prepared, dtype, basis.nao), 1, unit, align):
        yield block.start, block.start + block.count, kernels.evaluate(block)


def evaluate_ao(
    basis: Basis, where: Lattice | np.ndarray, dtype: DTypeLike = np.float64, threshold: float = DEFAULT_THRESHOLD
) -> np.ndarray:
    """Basis-function values (npoints, nao) at a Lattice (C-order points) or (n, 3) points, bohr (CPU).

    All points through the general kernel (:func:`hartree.grid.cpu.eval_ao`); values in a.u.
    """
    geometry = Geometry.of(where)
    points = geometry.lattice.points() if geometry.lattice is not None else geometry.points
    return eval_ao(points, prepare_basis(basis, threshold), dtype=dtype)


def evaluate_orbitals(
    basis: Basis,
    mo_coeff: np.ndarray,
    where: Lattice | np.ndarray,
    dtype: DTypeLike = np.float64,
    method: str = "auto",
    threshold: float = DEFAULT_THRESHOLD,
    device: str | GridDevice = "cpu",
    gpu_kernel: str = "auto",
) -> np.ndarray:
    """Orbital values, (norb, *shape): shape = lattice.shape, or (n,) for a point array.

    mo_coeff: (nao,) or (nao, norb) coefficients in hartree's AO order.
    method: "auto", "ao", "separable" (rectilinear lattices only) or "direct" (GPU only).
    device: "cpu", "gpu", "auto" or a GridDevice; gpu_kernel: "auto", "general" or "jit"
    (GPU only; on the GPU FP32 runs screen at hartree.grid.gpu.FP32_THRESHOLD unless told).
    """
    geometry = Geometry.of(where)
    values = evaluate.orbitals(grid_device(device, threshold, gpu_kernel), basis, mo_coeff, geometry, dtype, method)
    return values.reshape((values.shape[0],) + tuple(geometry.shape))


def evaluate_density(
    basis: Basis,
    mo_coeff: np.ndarray,
    mo_occ: np.ndarray,
    where: Lattice | np.ndarray,
    spin: bool = False,
    dtype: DTypeLike = np.float64,
    threshold: float = DEFAULT_THRESHOLD,
    device: str | GridDevice = "cpu",
    gpu_kernel: str = "auto",
) -> np.ndarray:
    """Total electron density (or, with spin=True, alpha minus beta), shape of the lattice/points.

    mo_coeff/mo_occ: restricted (nao, nmo)/(nmo,) or unrestricted (2, nao, nmo)/(2, nmo).
    Per block: AO values once, then psi = AO @ C_occ and rho = sum_i n_i psi_i^2 per spin.
    device, gpu_kernel: as in :func:`evaluate_orbitals`.
    """
    coeff = np.asarray(mo_coeff, dtype=np.float64)
    occ = spin_occupations(mo_occ)  # (2, nmo) per-spin occupations
    if coeff.ndim == 2 and not spin:
        # restricted total density: one orbital set weighted by the total occupations
        sets = [(coeff, occ[0] + occ[1])]
    else:
        pair = coeff if coeff.ndim == 3 else (coeff, coeff)
        sign = -1.0 if spin else 1.0
        sets = [(pair[0], occ[0]), (pair[1], sign * occ[1])]
    used = []  # [(C_occ^T (nocc, nao), weights (nocc,))]
    for c, n in sets:
        keep = np.flatnonzero(np.abs(n) > 1e-14)
        used.append((np.ascontiguousarray(c[:, keep].T, dtype=dtype), n[keep].astype(dtype)))
    geometry = Geometry.of(where)
    rho = evaluate.density(grid_device(device, threshold, gpu_kernel), basis, used, geometry, dtype)
    return rho.reshape(geometry.shape)
