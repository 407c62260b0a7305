"""The lattice methods, written once for every device: orbitals, densities and basis-function
values block by block, over the array module of a :class:`hartree.grid.device.GridDevice`.

    values = orbitals(device, basis, coeff, where, np.float64, "auto")   # (norb, npoints) numpy
    rho = density(device, basis, sets, where, np.float64)                # (npoints,)

Methods (after VMD: Stone et al., GPU Computing Gems (2011), Algorithm 1; and the
separable expansion of :mod:`hartree.grid.separable`):

* "ao": per block of points, the basis-function values phi (nao, npts) from the device's
  kernel, then one GEMM psi = C^T phi with the coefficients of all requested orbitals;
* "direct": the device's fused kernel gives a few orbitals per block at once
  (GPU only: every phi_mu serves all of them without being stored);
* "separable" (rectilinear lattices): per orbital and slab of x planes,
  psi(x_a, y_b, z_c) = sum_t B_t(x_a, y_b) Z_t(z_c), the B table from the device's kernel,
  then one GEMM (na ny, nterm) @ (nterm, nz) written in the lattice's C order;
* densities: rho(r) = sum_sets sum_i n_i psi_i(r)^2 with psi = C_occ^T phi per block.

"auto" takes "separable" on rectilinear lattices when the device prefers it, else "direct"
when the device has a fused kernel for that many orbitals, else "ao".  Blocks are cut by
:meth:`hartree.grid.geometry.Geometry.blocks` with the device's sizes and spread over its
workers; each block's values land in its columns of the host output.  Values are in
atomic units (bohr^-3/2 orbitals, bohr^-3 densities).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from .device import GridDevice, SeparableKernels
from .geometry import Geometry
from .lattice import Lattice
from .separable import SeparablePlan, cartesian_coefficients, lattice_tables, make_plan

__all__ = ["orbitals", "density", "ao_values", "choose_method", "SeparableRunner", "separable_weights"]


def _pieces(device: GridDevice) -> int:
    """Blocks per worker asked for when several workers share them (dynamic balance)."""
    return 4 * device.workers if device.workers > 1 else 1


def _point_blocks(device: GridDevice, prepared: Any, geometry: Geometry, dtype: np.dtype, rows: int):
    """Blocks of the point kernels holding ``rows`` values per point."""
    unit, align = device.block_layout(geometry)
    max_points = device.slab_points or device.block_points(prepared, dtype, rows)
    return geometry.blocks(max_points, _pieces(device), unit, align)


def choose_method(device: GridDevice, basis: Any, geometry: Geometry, norb: int, dtype: np.dtype, method: str) -> str:
    """The method that runs: ``method``, or for "auto" separable / direct / ao (module
    docstring).  InputError for a method the device lacks or a separable run off a
    rectilinear lattice."""
    if method == "auto":
        if geometry.rectilinear and device.prefers_separable(basis, dtype):
            method = "separable"
        else:
            method = "direct" if norb <= device.fused_max_orbitals else "ao"
    if method not in device.methods:
        names = ", ".join(("auto",) + device.methods[:-1]) + " or " + device.methods[-1]
        raise InputError(f"unknown evaluation method {method!r}; use {names}")
    if method == "separable" and not geometry.rectilinear:
        raise InputError("the separable method needs a lattice with axes along x, y and z")
    return method


def orbitals(
    device: GridDevice,
    basis: Any,
    coeff: np.ndarray,
    where: Lattice | np.ndarray | Geometry,
    dtype: Any = np.float64,
    method: str = "auto",
) -> np.ndarray:
    """Orbital values, numpy (norb, npoints) in the device's precision, at a Lattice (C order
    of points) or (n, 3) points in bohr; coeff (nao,) or (nao, norb) host coefficients."""
    coeff = np.asarray(coeff, dtype=np.float64)
    if coeff.ndim == 1:
        coeff = coeff[:, None]
    if coeff.shape[0] != basis.nao:
        raise InputError(f"orbital coefficients have {coeff.shape[0]} rows; the basis has {basis.nao} functions")
    geometry = Geometry.of(where)
    dtype = device.value_dtype(dtype)
    norb = coeff.shape[1]
    method = choose_method(device, basis, geometry, norb, dtype, method)
    out = np.empty((norb, geometry.npoints), dtype=dtype)
    if method == "separable":
        _separable(device, basis, coeff, geometry, dtype, out)
        return out
    prepared = device.prepare(basis, geometry, dtype)
    if method == "direct":
        step = device.fused_max_orbitals
        for m0 in range(0, norb, step):
            chunk = coeff[:, m0 : m0 + step]
            rows = out[m0 : m0 + chunk.shape[1]]
            device.run(
                _point_blocks(device, prepared, geometry, dtype, chunk.shape[1]),
                lambda worker, chunk=chunk: device.point_kernels(worker, prepared, geometry, dtype, chunk),
                lambda k, b, rows=rows: k.to_host(k.evaluate(b), rows[:, b.start : b.start + b.count]),
            )
        return out
    ct = coeff.T

    def gemm(k, b):
        phi = k.evaluate(b)  # (nao, npts)
        k.to_host(k.upload("ct", ct) @ phi, out[:, b.start : b.start + b.count])

    device.run(
        _point_blocks(device, prepared, geometry, dtype, basis.nao),
        lambda worker: device.point_kernels(worker, prepared, geometry, dtype),
        gemm,
    )
    return out


def density(
    device: GridDevice,
    basis: Any,
    sets: list[tuple[np.ndarray, np.ndarray]],
    where: Lattice | np.ndarray | Geometry,
    dtype=np.float64,
) -> np.ndarray:
    """sum over sets of sum_i n_i psi_i^2, numpy (npoints,): sets = [(C_occ^T (nocc, nao),
    n (nocc,))] host arrays (one per spin; n negative for the beta part of a spin density)."""
    geometry = Geometry.of(where)
    dtype = device.value_dtype(dtype)
    prepared = device.prepare(basis, geometry, dtype)
    out = np.empty(geometry.npoints, dtype=dtype)

    def rho_of_block(k, b):
        phi = k.evaluate(b)  # (nao, npts)
        rho = k.xp.zeros(b.count, dtype=dtype)
        for s, (ct, n) in enumerate(sets):
            if len(n):
                psi = k.upload(f"c{s}", ct) @ phi  # (nocc, npts)
                rho += k.upload(f"n{s}", n) @ (psi * psi)
        k.to_host(rho, out[b.start : b.start + b.count])

    device.run(
        _point_blocks(device, prepared, geometry, dtype, basis.nao),
        lambda worker: device.point_kernels(worker, prepared, geometry, dtype),
        rho_of_block,
    )
    return out


def ao_values(device: GridDevice, basis: Any, where: Lattice | np.ndarray | Geometry, dtype=np.float64) -> np.ndarray:
    """Basis-function values, numpy (nao, npoints) (AO-major), as the device's kernel makes them."""
    geometry = Geometry.of(where)
    dtype = device.value_dtype(dtype)
    prepared = device.prepare(basis, geometry, dtype)
    out = np.empty((basis.nao, geometry.npoints), dtype=dtype)
    device.run(
        _point_blocks(device, prepared, geometry, dtype, basis.nao),
        lambda worker: device.point_kernels(worker, prepared, geometry, dtype),
        lambda k, b: k.to_host(k.evaluate(b), out[:, b.start : b.start + b.count]),
    )
    return out


def separable_weights(plan: SeparablePlan, coeff_cart: np.ndarray) -> np.ndarray:
    """Weight of each entry (t, i, j) of the expansion, float64 (nentry,): the sum over its
    sources s of c_p f(l) C_cart[row_s] (coeff_cart (ncart,) of one orbital)."""
    return np.bincount(plan.src_entry, weights=plan.src_coef * coeff_cart[plan.src_row], minlength=plan.entry_term.size)


class SeparableRunner:
    """One orbital on a rectilinear lattice by the separable expansion, on one worker.

    runner = SeparableRunner(kernels, plan, tables, lattice, dtype, planes)
    values = runner.run_slab(ix0, na)      # x planes ix0..ix0+na-1, (na * ny * nz,) of xp
    values = runner.run()                  # the whole lattice, lattice.shape
    """

    def __init__(
        self, kernels: SeparableKernels, plan: SeparablePlan, tables: tuple, lattice: Lattice, dtype, planes: int
    ):
        self.kernels, self.lattice, self.dtype = kernels, lattice, np.dtype(dtype)
        self.nterm, self.planes = plan.nterm, planes
        ztab = tables[2]
        self.zmat = kernels.upload("zmat", ztab[plan.term_group, plan.term_k, :])  # (nterm, nz)
        self.b = kernels.xp.empty(planes * lattice.shape[1] * self.nterm, dtype=self.dtype)

    def run_slab(self, ix0: int, na: int, out: Any = None) -> Any:
        """Values of x planes ix0..ix0+na-1 (na <= self.planes), (na * ny * nz,) of xp; written
        into ``out`` when given."""
        _, ny, nz = self.lattice.shape
        if out is None:
            out = self.kernels.xp.empty(na * ny * nz, dtype=self.dtype)
        b = self.b[: na * ny * self.nterm]
        self.kernels.build_b(ix0, na, b)
        self.kernels.xp.matmul(b.reshape(na * ny, self.nterm), self.zmat, out=out.reshape(na * ny, nz))
        return out

    def run(self, out: Any = None) -> Any:
        """Array of xp, lattice.shape, with the orbital's values (a.u.)."""
        nx, ny, nz = self.lattice.shape
        if out is None:
            out = self.kernels.xp.empty((nx, ny, nz), dtype=self.dtype)
        flat = out.reshape(-1)
        for ix0 in range(0, nx, self.planes):
            na = min(self.planes, nx - ix0)
            self.run_slab(ix0, na, out=flat[ix0 * ny * nz : (ix0 + na) * ny * nz])
        return out


def _separable(device: GridDevice, basis, coeff, geometry, dtype, out):
    """Orbitals by the separable expansion into out (norb, npoints) host; one pass of slabs of
    x planes per orbital, spread over the workers."""
    lattice = geometry.lattice
    plan = make_plan(basis)
    tables = lattice_tables(plan, lattice)
    planes = device.separable_planes(plan.nterm, lattice.shape, dtype)
    budget = planes * lattice.shape[1] * lattice.shape[2]
    slabs = geometry.blocks(min(budget, device.slab_points or budget), _pieces(device), "plane")
    for m in range(coeff.shape[1]):
        cart = cartesian_coefficients(basis, coeff[:, m].reshape(-1, 1))[:, 0]
        weight = separable_weights(plan, cart)

        def setup(worker, weight=weight):
            kernels = device.separable_kernels(worker, plan, tables, weight, geometry, dtype)
            return SeparableRunner(kernels, plan, tables, lattice, dtype, planes)

        def work(runner, b, row=out[m]):
            target = row[b.start : b.start + b.count]
            values = runner.run_slab(b.plane, b.planes, out=runner.kernels.staging(target))
            runner.kernels.to_host(values, target)

        device.run(slabs, setup, work)
