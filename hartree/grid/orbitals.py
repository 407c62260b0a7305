"""Orbitals and densities on lattices or point lists: the Python API.

>>> from hartree.grid import lattice_around, evaluate_orbitals, evaluate_density
>>> lat = lattice_around(mol.coords, spacing=0.1, margin=4.0)        # Angstrom
>>> psi = evaluate_orbitals(basis, mo_coeff[:, [homo, homo + 1]], lat)   # (2, nx, ny, nz)
>>> rho = evaluate_density(basis, mo_coeff, mo_occ, lat)                # (nx, ny, nz)

Two evaluation paths, same results to rounding:

* "ao": basis-function values of a block of points, then one GEMM with the
  coefficients of all requested orbitals -- any points, any lattice; also how
  densities are made.  The values come from the general exp kernel
  (:mod:`hartree.grid.cpu`), or, on rectilinear lattices, from products of 1-D
  Gaussian tables (:func:`hartree.grid.separable.ao_rows`, no exponentials);
  rho(r) = sum_i n_i |psi_i(r)|^2 with the occupied orbitals of each spin.
* "separable": rectilinear lattices only; each orbital as a sum of products of
  1-D Gaussian tables (:mod:`hartree.grid.separable`), much faster for one or a few
  orbitals on large lattices.

``method="auto"`` takes "separable" for orbitals on rectilinear lattices and
"ao" otherwise.  ``device="gpu"`` (or "auto" with cupy and a CUDA device present) runs
the CUDA kernels of :mod:`hartree.grid.gpu` instead (the separable expansion on
rectilinear lattices, else the fused orbital kernel, or AO values per slab + GEMM for
many orbitals and densities); results are numpy arrays either way.  Values are in
atomic units (bohr^-3/2 for orbitals, bohr^-3 for densities).  ``dtype=np.float32`` gives single
precision (errors about 1e-6 of
the largest value; see the tests).
"""

import numpy as np

from ..device.selection import resolve_device
from ..errors import InputError
from .cpu import DEFAULT_THRESHOLD, eval_ao, prepare_basis
from .lattice import Lattice
from .select import spin_occupations
from .separable import ao_rows, cartesian_coefficients, lattice_tables, make_plan, orbital_on_lattice

#: Points per block in the "ao" path (block x nao values held at once).
POINT_BLOCK = 4096


def _points_and_shape(where):
    """(points (n, 3) bohr or None, output shape, lattice or None) of a Lattice or point array."""
    if isinstance(where, Lattice):
        return None, where.shape, where
    points = np.asarray(where, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise InputError(f"points must have shape (n, 3), got {points.shape}")
    return points, (points.shape[0],), None


def ao_blocks(basis, where, dtype=np.float64, threshold=DEFAULT_THRESHOLD):
    """Yield (start, stop, AO values (nao, stop - start), AO-major) over a lattice or point array.

    Rectilinear lattices go by whole rows (ix, iy) through the exp-free 1-D-table kernel
    (:func:`hartree.grid.separable.ao_rows`); other lattices and point arrays through the
    general kernel (:func:`hartree.grid.cpu.eval_ao`).  About POINT_BLOCK points per block.
    """
    points, shape, lattice = _points_and_shape(where)
    prepared = prepare_basis(basis, threshold)
    npoints = int(np.prod(shape))
    if lattice is not None and lattice.is_rectilinear:
        plan = make_plan(basis)
        tables = lattice_tables(plan, lattice)
        nz = lattice.shape[2]
        rows = max(1, POINT_BLOCK // nz)
        nrow_total = lattice.shape[0] * lattice.shape[1]
        for row0 in range(0, nrow_total, rows):
            nrow = min(rows, nrow_total - row0)
            yield row0 * nz, (row0 + nrow) * nz, ao_rows(plan, prepared, tables, row0, nrow, dtype, threshold)
        return
    for start in range(0, npoints, POINT_BLOCK):
        stop = min(npoints, start + POINT_BLOCK)
        block = lattice.points(start, stop) if lattice is not None else points[start:stop]
        yield start, stop, eval_ao(block, prepared, dtype=dtype).T


def evaluate_ao(basis, where, dtype=np.float64, threshold=DEFAULT_THRESHOLD):
    """Basis-function values (npoints, nao) at a Lattice (C-order points) or (n, 3) points, bohr."""
    points, shape, lattice = _points_and_shape(where)
    if lattice is not None:
        points = lattice.points()
    return eval_ao(points, prepare_basis(basis, threshold), dtype=dtype)


def evaluate_orbitals(
    basis,
    mo_coeff,
    where,
    dtype=np.float64,
    method="auto",
    threshold=DEFAULT_THRESHOLD,
    device="cpu",
    gpu_kernel="auto",
):
    """Orbital values, (norb, *shape): shape = lattice.shape, or (n,) for a point array.

    mo_coeff: (nao,) or (nao, norb) coefficients in hartree's AO order.
    method: "auto", "ao" or "separable" (rectilinear lattices only; CPU).
    device: "cpu", "gpu" or "auto"; gpu_kernel: "auto", "general" or "jit" (GPU only;
    on the GPU FP32 runs screen at hartree.grid.gpu.FP32_THRESHOLD unless told).
    """
    coeff = np.asarray(mo_coeff, dtype=np.float64)
    if coeff.ndim == 1:
        coeff = coeff[:, None]
    if coeff.shape[0] != basis.nao:
        raise InputError(f"orbital coefficients have {coeff.shape[0]} rows; the basis has {basis.nao} functions")
    points, shape, lattice = _points_and_shape(where)
    if resolve_device(device) == "gpu":
        from . import gpu

        gpu_threshold = None if threshold == DEFAULT_THRESHOLD else threshold
        values = gpu.orbitals(basis, coeff, where, dtype=dtype, kernel=gpu_kernel, threshold=gpu_threshold)
        return values.reshape((coeff.shape[1],) + tuple(shape))
    if method == "auto":
        method = "separable" if lattice is not None and lattice.is_rectilinear else "ao"
    if method == "separable":
        if lattice is None or not lattice.is_rectilinear:
            raise InputError("the separable method needs a lattice with axes along x, y and z")
        plan = make_plan(basis)
        cart = cartesian_coefficients(basis, coeff)
        return np.stack([orbital_on_lattice(plan, lattice, cart[:, m], dtype=dtype) for m in range(cart.shape[1])])
    if method != "ao":
        raise InputError(f"unknown evaluation method {method!r}; use auto, ao or separable")
    npoints = int(np.prod(shape))
    out = np.empty((coeff.shape[1], npoints), dtype=dtype)
    c = coeff.astype(dtype)
    ct = np.ascontiguousarray(c.T)
    for start, stop, ao in ao_blocks(basis, where, dtype, threshold):
        out[:, start:stop] = ct @ ao
    return out.reshape((coeff.shape[1],) + tuple(shape))


def evaluate_density(
    basis,
    mo_coeff,
    mo_occ,
    where,
    spin=False,
    dtype=np.float64,
    threshold=DEFAULT_THRESHOLD,
    device="cpu",
    gpu_kernel="auto",
):
    """Total electron density (or, with spin=True, alpha minus beta), shape of the lattice/points.

    mo_coeff/mo_occ: restricted (nao, nmo)/(nmo,) or unrestricted (2, nao, nmo)/(2, nmo).
    Per block: AO values once, then psi = AO @ C_occ and rho = sum_i n_i psi_i^2 per spin.
    device, gpu_kernel: as in :func:`evaluate_orbitals` (the GPU does the same per slab).
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
    _, shape, _ = _points_and_shape(where)
    if resolve_device(device) == "gpu":
        from . import gpu

        gpu_threshold = None if threshold == DEFAULT_THRESHOLD else threshold
        return gpu.density(basis, used, where, dtype=dtype, kernel=gpu_kernel, threshold=gpu_threshold).reshape(shape)
    out = np.empty(int(np.prod(shape)), dtype=dtype)
    for start, stop, ao in ao_blocks(basis, where, dtype, threshold):
        rho = np.zeros(stop - start, dtype=dtype)
        for ct, n in used:
            if ct.shape[0]:
                psi = ct @ ao  # (nocc, npts)
                rho += n @ (psi * psi)
        out[start:stop] = rho
    return out.reshape(shape)
