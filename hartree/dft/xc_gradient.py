"""Nuclear gradient of the exchange-correlation energy of a density matrix on a grid.

    g = xc_gradient(molecule, basis, grid, dm, "pbe")                  # (natm, 3) Eh/bohr
    g = xc_gradient(molecule, basis, grid, dm, "pbe", grid_response=True)
    g = xc_gradient(molecule, basis, grid, dm, "pbe", kernels=GPUKernels(CudaBackend()))

Without ``kernels`` the gradient is computed here, with numpy on the host, block by block of
the grid's points (the reference).  With an :class:`hartree.dft.xc_integrate.XCKernels`
(the GPU's, its emulation, or the CPU's numba kernels) the basis-function term, eq. (1), runs
on that device, written once for numpy and cupy (:mod:`hartree.dft.xc_grad_integrate`); the
grid response, eq. (2), is computed on the host only.

dm as in :func:`hartree.dft.xc_energy_potential`: (nao, nao) total density (restricted) or
(2, nao, nao) alpha and beta (unrestricted).  The density matrix is held fixed: in an SCF
gradient its response is the energy-weighted density's business (the one-electron term).

**Basis-function term** (Pople, Gill and Johnson, Chem. Phys. Lett. 199, 557 (1992);
Johnson, Gill and Pople, J. Chem. Phys. 98, 5612 (1993), eqs. 11-14).  A function φ_μ on atom A
moves with it, ∂φ_μ/∂R_A = -∇φ_μ, so with the weighted derivatives of the functional that
:mod:`hartree.dft.numint` uses for V_xc per spin s (w_ρ = w ∂f/∂ρ_s, the vector
w_∇ = w (2 ∂f/∂σ_ss ∇ρ_s + ∂f/∂σ_αβ ∇ρ_s'), w_τ = w ∂f/∂τ_s / 2; restricted: w_∇ = 2 w ∂f/∂σ ∇ρ
of the total density) and the points held fixed,

    ∂E_xc/∂R_A,x = -2 Σ_s Σ_{μ∈A} Σ_ν D^s_μν Σ_g [ w_ρ ∂_xφ_μ φ_ν
                      + Σ_y w_∇y (∂_xyφ_μ φ_ν + ∂_xφ_μ ∂_yφ_ν) + w_τ Σ_y ∂_xyφ_μ ∂_yφ_ν ],     (1)

from ∂ρ/∂R_A,x = -2 Σ_{μ∈A,ν} D_μν ∂_xφ_μ φ_ν, ∂(∂_yρ)/∂R_A,x = -2 Σ_{μ∈A,ν} D_μν
∂_y(∂_xφ_μ φ_ν) and ∂τ/∂R_A,x = -Σ_{μ∈A,ν} D_μν Σ_y ∂_xyφ_μ ∂_yφ_ν (τ = ½ Σ D ∇φ·∇φ).  The
ν sums are done first, c = φ D and c_y = ∂_yφ D per point, so (1) costs four (LDA: one)
GEMMs of the points by the AOs per spin and block.  This is PySCF's ``grid_response=False``
gradient (``pyscf.grad.rks.get_vxc``): the points and weights do not move with the atoms, so
its sum over atoms is not zero (by an amount of the grid's integration error).

**Grid response** (``grid_response=True``; Johnson, Gill and Pople 1993, appendix B).  A point
of atom A's grid moves with A and its weight changes with every nucleus
(:func:`hartree.dft.grid_response.partition_weight_gradient`), which adds

    Σ_g (∂w_g/∂R_B) f(r_g)   and, for B the point's own atom,   Σ_g w_g ∇f(r_g)·,          (2)

f = ρ ε the energy density.  The functional is local, so ∇f at a point is minus the sum over
all atoms of the point's share of (1): the second term of (2) is that sum, moved to the
point's own atom with its sign flipped.  With it the gradient is the derivative of the energy
on the molecule's grid (which moves with the molecule) and its sum over atoms is zero.
Needs the partition and size adjustment the grid was made with (the defaults of
:func:`hartree.dft.make_grid` unless given).
"""

from __future__ import annotations

import numpy as np

from .functionals import Functional, libxc, parse_functional
from .grids import Grid, size_adjustment
from .numint import _check_dm, _potential_rows, ao_values, densities, shell_radii

__all__ = ["per_ao_terms", "point_ranges", "xc_gradient"]

#: Bytes of AO values (10 rows for GGA and meta-GGA) per block of points.
_BLOCK_BYTES = 32 * 1024 * 1024
#: Row of ∂_x∂_y φ in :func:`hartree.dft.numint.ao_values` (deriv 2), by (x, y).
_SECOND = ((4, 5, 6), (5, 7, 8), (6, 8, 9))


def point_ranges(grid: Grid, block_points: int, by_atom: bool):
    """(p0, p1) ranges of at most block_points points; with by_atom none spans two atoms' grids."""
    if not by_atom:
        return [(p0, min(p0 + block_points, grid.npoints)) for p0 in range(0, grid.npoints, block_points)]
    cuts = np.flatnonzero(np.diff(grid.atoms)) + 1
    edges = np.concatenate([[0], cuts, [grid.npoints]])
    return [
        (p0, min(p0 + block_points, b1)) for b0, b1 in zip(edges[:-1], edges[1:]) for p0 in range(b0, b1, block_points)
    ]


def per_ao_terms(ao: np.ndarray, dm: np.ndarray, wr, wg, wt) -> np.ndarray:
    """Σ_g [...] of eq. (1) contracted with D over ν, per AO μ of the block: (3, nao_block).

    ao (1 or 10, m, k) values and derivatives, dm (k, k) one spin's density, wr (m,), wg
    (3, m) or None, wt (m,) or None (numint's weighted derivatives of the functional)."""
    c0 = ao[0] @ dm
    u = c0 * wr[:, None]  # w_ρ c + Σ_y w_∇y c_y
    cy = None
    if wg is not None:
        cy = [ao[1 + y] @ dm for y in range(3)]
        for y in range(3):
            u += cy[y] * wg[y][:, None]
    out = np.empty((3, ao.shape[2]))
    for x in range(3):
        out[x] = np.einsum("pi,pi->i", ao[1 + x], u)
    if wg is None:
        return out
    for y in range(3):
        v = c0 * wg[y][:, None]  # w_∇y c (+ w_τ c_y), paired with ∂_xyφ_μ
        if wt is not None:
            v += cy[y] * wt[:, None]
        for x in range(3):
            out[x] += np.einsum("pi,pi->i", ao[_SECOND[x][y]], v)
    return out


def xc_gradient(
    molecule,
    basis,
    grid: Grid,
    dm: np.ndarray,
    functional: str | Functional,
    grid_response: bool = False,
    *,
    partition: str = "becke",
    size_adjust: str | None = "treutler",
    block_points: int = 0,
    kernels=None,
) -> np.ndarray:
    """∂E_xc/∂R of density matrix dm on ``grid``: float64 (natm, 3), Eh/bohr (module docstring).

    molecule: the :class:`hartree.molecule.Molecule` of ``basis`` and ``grid`` (coordinates,
    bohr); dm (nao, nao) total or (2, nao, nao) alpha and beta; functional: a name or a
    :class:`Functional` (its semilocal part; exact exchange and VV10 are not here).
    grid_response: add the derivatives of the points and weights, eq. (2); ``partition`` and
    ``size_adjust`` must then be those the grid was made with (make_grid's defaults here).
    block_points: points per block (0: chosen from nao; with kernels, the kernels' default).
    kernels: the :class:`hartree.dft.xc_integrate.XCKernels` to compute eq. (1) with
    (:mod:`hartree.dft.xc_grad_integrate`; dm may then be an array of their module, and only
    the (natm, 3) result comes to the host); None: numpy on the host, here.  grid_response
    with kernels is refused (InputError): it runs on the host only.
    """
    functional = parse_functional(functional)
    if kernels is not None:
        return _on_device(molecule, basis, grid, dm, functional, grid_response, block_points, kernels)
    family = functional.family
    dms, unrestricted = _check_dm(basis, dm)
    nset = dms.shape[0]
    natm = int(molecule.natm)
    nao = basis.nao
    xc = libxc()
    deriv = 1 if family == "LDA" else 2
    if block_points <= 0:
        block_points = int(min(8192, max(128, _BLOCK_BYTES // ((1 + 3 * deriv) * 8 * max(nao, 1)))))
    radii = shell_radii(basis, deriv=deriv)
    centres = np.asarray(basis.shell_center)
    ao_atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    atom_coords = np.asarray(molecule.coords, dtype=np.float64)
    if grid_response:
        from .grid_response import partition_weight_gradient

        adjust = size_adjustment(np.asarray(molecule.numbers), size_adjust)
    grad = np.zeros((natm, 3))
    for p0, p1 in point_ranges(grid, block_points, grid_response):
        pts = grid.coords[p0:p1]
        weights = grid.weights[p0:p1]
        nearest = np.sqrt(((pts[None, :, :] - centres[:, None, :]) ** 2).sum(-1).min(axis=1))
        shells = np.flatnonzero(nearest <= radii)
        if shells.size == 0:
            continue
        idx = np.concatenate([np.arange(basis.ao_loc[s], basis.ao_loc[s + 1]) for s in shells])
        ao = ao_values(basis, pts, deriv, shells)  # (1 + 3 deriv..., m, len(idx))
        sub = dms[:, idx[:, None], idx[None, :]]
        rhos = [densities(ao[:4], sub[s], family) for s in range(nset)]
        rho_in = (rhos[0], rhos[1]) if unrestricted else rhos[0]
        eps, v = xc.eval_xc(functional.xc_code, rho_in, spin=int(unrestricted), deriv=1)[:2]
        vrho, vsigma, _, vtau = (*v, None, None, None)[:4]
        per_ao = np.zeros((3, idx.size))
        for s in range(nset):
            wr, wg, wt = _potential_rows(
                family, rhos if unrestricted else rhos[0], vrho, vsigma, vtau, weights, s, unrestricted
            )
            per_ao += per_ao_terms(ao, sub[s], wr, wg, wt)
        block = np.zeros((natm, 3))
        np.add.at(block, ao_atom[idx], -2.0 * per_ao.T)  # eq. (1)
        grad += block
        if grid_response:
            owner = int(grid.atoms[p0])
            grad[owner] -= block.sum(axis=0)  # the points move with their atom, eq. (2)
            total = sum(r if family == "LDA" else r[0] for r in rhos)
            dw = partition_weight_gradient(pts, weights, grid.atoms[p0:p1], atom_coords, adjust, partition)
            grad += dw @ (total * eps)  # the weights move, eq. (2)
    return grad


def _on_device(molecule, basis, grid, dm, functional, grid_response, block_points, kernels) -> np.ndarray:
    """Eq. (1) on the kernels' device (:mod:`hartree.dft.xc_grad_integrate`)."""
    from ..errors import InputError
    from .xc_grad_integrate import atom_gradient, gradient_cache, per_ao_gradient
    from .xc_integrate import check_dm

    if grid_response:
        raise InputError("the XC gradient's grid response runs on the host only: call xc_gradient without kernels")
    dms, unrestricted = check_dm(basis, dm, kernels.xp)
    cache = gradient_cache(basis, grid, functional.family, kernels, block_points)
    return atom_gradient(basis, int(molecule.natm), per_ao_gradient(cache, dms, functional, unrestricted))
