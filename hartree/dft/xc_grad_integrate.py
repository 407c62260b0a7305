"""The basis-function term of the XC energy's nuclear gradient, written once for numpy (CPU)
and cupy (GPU), on the blocks of an AO cache.

    kernels = GPUKernels(CudaBackend(), nset=1)                       # or CPUKernels(), or emulated
    g = xc_gradient(molecule, basis, grid, dm, "pbe", kernels=kernels)  # (natm, 3) Eh/bohr, host
                                                                        # (hartree.dft.xc_gradient)

This is eq. (1) of :mod:`hartree.dft.xc_gradient` (Pople, Gill and Johnson, Chem. Phys. Lett.
199, 557 (1992); Johnson, Gill and Pople, J. Chem. Phys. 98, 5612 (1993)) with the grid held
fixed, the same numbers as that module's numpy reference to rounding, evaluated as the XC
energy is (:mod:`hartree.dft.xc_integrate`): the points in the compact blocks of an
:class:`hartree.dft.ao_cache.AOCache`, each with its screened shells, and what differs between
devices behind :class:`hartree.dft.xc_integrate.XCKernels` (AO values with second derivatives,
the pointwise sums, libxc).  Per chunk of blocks (the AO values of the gradient are not kept:
one call per gradient, so each chunk's values are computed into scratch, at most the kernels'
``scratch_bytes`` at a time):

1. ρ (and ∇ρ, τ) block by block, as the energy's pass 1 (``xc_integrate.chunk_functional``);
2. one libxc call for the chunk's points and the weighted rows w_ρ, w_∇, w_τ of each spin
   (:func:`hartree.dft.xc_integrate.potential_rows`);
3. per block of k functions and m points and per spin, one batched GEMM
   c = D_kk [φ, ∂_xφ, ∂_yφ, ∂_zφ] (4, k, m) (LDA: c = D_kk φ) and one pointwise kernel
   (:meth:`XCKernels.contract_gradient`) that forms, per function μ of the block,

       Σ_p [∂_xφ_μp u_μp + Σ_y ∂_xyφ_μp v_y,μp],   u = w_ρ c_0 + Σ_y w_∇y c_y,
                                                  v_y = w_∇y c_0 + w_τ c_y,

   and adds it to a (3, nao) array of the device;

and at the end ∂E_xc/∂R_A = -2 Σ_{μ∈A} of it: one (natm, nao) x (nao, 3) product, so only
the (natm, 3) gradient comes to the host.  The cost is about that of two evaluations of
E_xc and V_xc with values computed afresh: the values with second derivatives (10 rows for
a GGA, 4 for LDA), the density GEMM twice (pass 1 and step 3) and three more GEMMs for the
gradient rows.

The grid response (eq. (2) there) is not here: :func:`hartree.dft.xc_gradient.xc_gradient`
computes it on the host.
"""

from __future__ import annotations

import numpy as np

from .ao_cache import AOCache
from .numint import shell_radii
from .xc_integrate import block_density, chunk_functional, chunks_with_spans, potential_rows

__all__ = ["BLOCK_SCRATCH", "atom_gradient", "block_index", "chunk_gradient", "gradient_cache", "per_ao_gradient"]

#: A block's AO values and GEMM results c may take this many times the kernels' scratch_bytes
#: (1 GiB on the GPU) with every function of the basis on it: the kernels' block size (16384
#: points on the GPU) is cut to fit for large bases.
BLOCK_SCRATCH = 4


def gradient_cache(basis, grid, family: str, kernels=None, block_points: int = 0, scratch_bytes=None) -> AOCache:
    """An :class:`hartree.dft.ao_cache.AOCache` for the gradient of a functional of
    ``family``: values and gradients (LDA) or values and first and second derivatives (GGA,
    meta-GGA) of the shells that reach each block (:func:`hartree.dft.numint.shell_radii`
    of the same order), none kept (every chunk computed when asked, at most scratch_bytes
    at a time, at least one block; None: the kernels').  kernels: the device's XCKernels
    (None: the CPU's).  block_points: points per block (0: the kernels', cut to what keeps
    (ncomp + nrow) 8 nao bytes a point within :data:`BLOCK_SCRATCH` scratch_bytes, but not
    below 256)."""
    from .xc_kernels import CPUKernels

    kernels = CPUKernels() if kernels is None else kernels
    deriv = 1 if family == "LDA" else 2
    if block_points <= 0:
        ncomp, nrow = (4, 1) if deriv == 1 else (10, 4)  # rows of the values and of c
        per_point = 8 * (ncomp + nrow)
        cap = BLOCK_SCRATCH * int(kernels.scratch_bytes if scratch_bytes is None else scratch_bytes)
        block_points = int(min(kernels.block_points, max(256, cap // (per_point * max(basis.nao, 1)))))
    radii = shell_radii(basis, deriv=deriv)
    return AOCache(basis, grid, deriv, radii, 0, block_points, scratch_bytes, kernels=kernels)


def block_index(cache):
    """A function b -> the (k_b,) int64 AO indices of block b in the kernels' array module
    (all blocks' indices put on the device once, then sliced)."""
    xp = cache.kernels.xp
    sizes = np.array([i.size for i in cache.ao_index], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = np.concatenate(cache.ao_index).astype(np.int64) if cache.ao_index else np.zeros(0, np.int64)
    flat = xp.asarray(flat)
    return lambda b: flat[int(offsets[b]) : int(offsets[b + 1])]


def chunk_gradient(cache, blocks, arrays, spans, dms, coefs, index, out) -> None:
    """Add the per-AO sums of eq. (1) of one chunk to out (3, nao) in place (step 3 of the
    module docstring).

    blocks, arrays: a chunk of :meth:`AOCache.chunks` (arrays (4 | 10, k, m)); spans: the
    blocks' point ranges in the chunk; dms (nset, nao, nao) symmetric; coefs: per density
    of dms, its weighted rows (1 | 4 | 5, m_chunk) w_ρ (, w_∇ (, w_τ)), C-contiguous;
    index: :func:`block_index` of the cache.  Every array in the kernels' module."""
    kernels = cache.kernels
    xp = kernels.xp
    nset = dms.shape[0]
    nrow = 1 if coefs[0].shape[0] == 1 else 4  # rows of c = D [φ, ∇φ]
    for b, ao, sl in zip(blocks, arrays, spans):
        if ao.shape[1] == 0:
            continue
        idx = index(b)
        for s in range(nset):
            sub = block_density(cache, b, dms, s)
            c = xp.matmul(sub, ao[:nrow])  # (nrow, k, m): one batched GEMM
            kernels.contract_gradient(ao, c, coefs[s], sl.start, idx, out)


def per_ao_gradient(cache, dms, functional, unrestricted: bool):
    """Σ_s Σ_ν D^s_μν Σ_p [...] of eq. (1) per AO μ, (3, nao) in the kernels' array module:
    the module docstring's steps 1-3 over every chunk of the gradient cache.  dms (nset,
    nao, nao) symmetric (restricted: the total density), in the kernels' module."""
    kernels = cache.kernels
    xp = kernels.xp
    family = functional.family
    nset, nao = dms.shape[0], dms.shape[1]
    index = block_index(cache)
    out = xp.zeros((3, nao))
    spin = int(unrestricted)
    for blocks, arrays, spans in chunks_with_spans(cache):
        rho, weights, _, (vrho, vsigma, vtau) = chunk_functional(cache, blocks, arrays, spans, dms, functional, spin)
        coefs = []
        for s in range(nset):
            wr, wg, wt = potential_rows(
                family, rho if unrestricted else rho[0], vrho, vsigma, vtau, weights, s, unrestricted
            )
            coef = xp.empty((1 if wg is None else (4 if wt is None else 5), weights.size))
            coef[0] = wr
            if wg is not None:
                coef[1:4] = wg
            if wt is not None:
                coef[4] = wt
            coefs.append(coef)
        chunk_gradient(cache, blocks, arrays, spans, dms, coefs, index, out)
    return out


def atom_gradient(basis, natm: int, per_ao) -> np.ndarray:
    """∂E/∂R_A,x = -2 Σ_{μ∈A} per_ao[x, μ] (eq. (1)): host float64 (natm, 3) from per_ao
    (3, nao) of any array module (one small product on its device)."""
    xp = _module(per_ao)
    ao_atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    onehot = xp.asarray((ao_atom[None, :] == np.arange(natm)[:, None]).astype(np.float64))
    grad = -2.0 * (onehot @ per_ao.T)
    return np.asarray(grad if xp is np else grad.get(), dtype=np.float64)


def _module(a):
    from ..arrays import array_module

    return array_module(a)
