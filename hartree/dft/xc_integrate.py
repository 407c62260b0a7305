"""The XC integration, written once for numpy (CPU) and cupy (GPU) arrays.

    exc, vxc, nelec = integrate(cache, dms, functional, unrestricted)

The block loop, the GEMMs and the bookkeeping are here; what differs between the devices
is behind the small protocol :class:`XCKernels` that the cache carries
(:attr:`hartree.dft.ao_cache.AOCache.kernels`):

* the AO values and gradients of a range of blocks (:meth:`XCKernels.block_values`;
  numba on the CPU, a CUDA kernel on the GPU),
* three pointwise sums around the GEMMs (:meth:`XCKernels.contract_rows`,
  :meth:`XCKernels.contract_tau`, :meth:`XCKernels.scale_rows`), and a fourth for the
  nuclear gradient (:meth:`XCKernels.contract_gradient`, :mod:`hartree.dft.xc_grad_integrate`),
* the functional: ε and v_ρ, v_σ, v_τ of libxc (:meth:`XCKernels.eval_xc`; PySCF's libxc
  on the host, libxc built for CUDA on the GPU).

Every array of one evaluation lives in the kernels' array module ``xp``: on the GPU the
density matrices, the AO values, ρ, the libxc outputs and V_xc stay on the device; only
E_xc and the electron counts (scalars) come to the host.

Equations (e.g. Pople, Gill and Johnson, Chem. Phys. Lett. 199, 557 (1992), eqs. 10-12;
:mod:`hartree.dft.numint` has the whole derivation).  On a block's k screened functions and
m points, with φ (k, m) AO-major,

    c = D_kk φ (GEMM),   ρ_p = Σ_μ c_μp φ_μp,   ∇ρ_p = 2 Σ_μ c_μp ∇φ_μp,
    τ_p = ½ Σ_x Σ_μ (D_kk ∂_xφ)_μp ∂_xφ_μp,
    H_kk += φ (w_ρ φ/2 + Σ_x w_∇x ∂_xφ)^T (GEMM) [+ ½ Σ_x ∂_xφ (w_τ ∂_xφ)^T],
    V = H + H^T once at the end.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..errors import InputError

__all__ = [
    "XCKernels",
    "check_dm",
    "chunk_densities",
    "chunk_functional",
    "chunk_potential",
    "chunks_with_spans",
    "integrate",
    "block_density",
    "potential_rows",
]


class XCKernels(Protocol):
    """What the XC integration needs of a device (:mod:`hartree.dft.xc_kernels` for the
    CPU, :mod:`hartree.dft.xc_gpu` for the GPU and its emulation).

    xp              the array module of every array below (numpy or cupy)
    name            'cpu', 'cuda' or 'emulated'
    block_points    default points per block
    scratch_bytes   values computed at once for the blocks past the cache's budget
    notes           sentences for SCFResult.notes (fallbacks, budgets)
    """

    xp: object
    name: str
    block_points: int
    scratch_bytes: int
    notes: list

    def default_budget(self, basis, nset: int) -> int:
        """Bytes of AO values the cache may keep on this device."""

    def prepare(self, cache) -> None:
        """Put what :meth:`block_values` reads on the device (once per cache)."""

    def block_values(self, cache, b0: int, b1: int):
        """(flat buffer, offsets (b1 - b0 + 1,) host int64) of blocks b0..b1-1: block
        b0 + j is ``buffer[offsets[j]:offsets[j+1]].reshape(ncomp, k, m)``."""

    def contract_rows(self, ao, c, nrow: int, out) -> None:
        """out[x, p] = Σ_i ao[x, i, p] c[i, p] for x < nrow."""

    def contract_tau(self, ao, c1, out) -> None:
        """out[p] = ½ Σ_x Σ_i ao[1 + x, i, p] c1[x, i, p]."""

    def scale_rows(self, ao, coef, nrow: int, out) -> None:
        """out[i, p] = Σ_{x<nrow} coef[x, p] ao[x, i, p]."""

    def contract_gradient(self, ao, c, coef, p0: int, index, out) -> None:
        """out[x, index[i]] += Σ_p [ao[1+x, i, p] u_ip + Σ_y ao[xy, i, p] v_y,ip] with
        u = coef_0 c_0 + Σ_y coef_1+y c_1+y, v_y = coef_1+y c_0 + coef_4 c_1+y (the XC
        gradient's per-AO sums, :mod:`hartree.dft.xc_grad_integrate`); coef (1 | 4 | 5, n)
        with this block's points at columns p0.., out (3, nao)."""

    def libxc_description(self) -> str:
        """Which libxc evaluated the functional (one phrase, for notes and records)."""

    def eval_xc(self, functional, rho, spin: int):
        """libxc's (ε (m,), (v_ρ, v_σ, v_lapl, v_τ)) in PySCF's ``eval_xc`` layout for rho
        as PySCF takes it (spin 0: (m,) or (4 | 6, m); spin 1: a pair of them)."""


def check_dm(basis, dm, xp=np):
    """(ndm, nao, nao) symmetrised float64 density matrices of module xp and whether they
    are spin-resolved; InputError (one line) for another shape or non-finite entries."""
    dm = xp.asarray(dm, dtype=xp.float64)
    nao = basis.nao
    if dm.shape == (nao, nao):
        unrestricted = False
        dm = dm[None]
    elif dm.shape == (2, nao, nao):
        unrestricted = True
    else:
        raise InputError(f"density matrix has shape {dm.shape}; expected ({nao}, {nao}) or (2, {nao}, {nao})")
    if not bool(xp.all(xp.isfinite(dm))):
        raise InputError("density matrix has non-finite entries")
    return 0.5 * (dm + dm.transpose(0, 2, 1)), unrestricted


def potential_rows(family: str, rho, vrho, vsigma, vtau, weights, spin: int, unrestricted: bool):
    """Weighted coefficients of one spin's potential on a set of points: (w_ρ (n,), w_∇
    (3, n) or None, w_τ (n,) or None) with V = φ^T [w_ρ φ / 2 + Σ_x w_∇x ∂xφ] + transpose
    + Σ_x ∂xφ^T w_τ ∂xφ (any array module).  rho: (nrow, n) restricted, the pair (or
    (2, nrow, n)) of spin densities unrestricted; v* in PySCF's eval_xc layout."""
    if not unrestricted:
        wr = weights * vrho
        wg = None if family == "LDA" else 2.0 * weights * vsigma * rho[1:4]
        wt = None if family != "MGGA" else 0.5 * weights * vtau
        return wr, wg, wt
    wr = weights * vrho[:, spin]
    wg = wt = None
    if family != "LDA":
        own, other = rho[spin], rho[1 - spin]
        vs_own = vsigma[:, 0] if spin == 0 else vsigma[:, 2]
        wg = weights * (2.0 * vs_own * own[1:4] + vsigma[:, 1] * other[1:4])
    if family == "MGGA":
        wt = 0.5 * weights * vtau[:, spin]
    return wr, wg, wt


def integrate(cache, dms, functional, unrestricted: bool):
    """E_xc, V_xc (nset, nao, nao) and electron counts (nset,) of dms (nset, nao, nao,
    symmetric, in ``cache.kernels.xp``) on the cache's grid.

    Per chunk of blocks (:meth:`hartree.dft.ao_cache.AOCache.chunks`; all cached blocks form
    one): pass 1 forms ρ (and ∇ρ, τ) block by block; one libxc call takes the chunk's
    points; pass 2 adds each block's share to half of V, symmetrised once at the end.
    Returns (exc float, vxc in xp, nelec host float64 (nset,)).
    """
    kernels = cache.kernels
    xp = kernels.xp
    family = functional.family
    nset, nao = dms.shape[0], dms.shape[1]
    ngrad = 1 if family == "LDA" else 4  # rows φ (, ∇φ) that enter ρ (, ∇ρ) and V
    vhalf = xp.zeros((nset, nao, nao))
    nelec = xp.zeros(nset)
    exc = xp.zeros(())
    spin = int(unrestricted)
    for blocks, arrays, spans in chunks_with_spans(cache):
        rho, weights, eps, (vrho, vsigma, vtau) = chunk_functional(cache, blocks, arrays, spans, dms, functional, spin)
        exc = exc + weights @ (rho[:, 0].sum(axis=0) * eps)
        nelec += rho[:, 0] @ weights
        for s in range(nset):
            wr, wg, wt = potential_rows(
                family, rho if unrestricted else rho[0], vrho, vsigma, vtau, weights, s, unrestricted
            )
            coef = xp.empty((ngrad, weights.size))
            coef[0] = 0.5 * wr
            if wg is not None:
                coef[1:4] = wg
            chunk_potential(cache, blocks, arrays, spans, coef, wt, vhalf[s])
    vxc = vhalf + vhalf.transpose(0, 2, 1)
    return float(exc), vxc, np.asarray(nelec if xp is np else nelec.get(), dtype=np.float64)


def chunks_with_spans(cache):
    """(blocks, arrays, spans) of every chunk of an AO cache (:meth:`AOCache.chunks`), spans[j]
    the slice of block blocks[j]'s points within the chunk's points."""
    for blocks, arrays in cache.chunks():
        q0 = int(cache.starts[blocks.start])
        yield blocks, arrays, [slice(int(cache.starts[b]) - q0, int(cache.starts[b + 1]) - q0) for b in blocks]


def chunk_functional(cache, blocks, arrays, spans, dms, functional, spin: int):
    """Pass 1 and the libxc call of one chunk: (ρ (nset, nrow, m) of :func:`chunk_densities`,
    the chunk's weights (m,), ε (m,), (v_ρ, v_σ or None, v_τ or None) in PySCF's eval_xc
    layout), all in the kernels' array module; spin 1 for spin-resolved dms."""
    family = functional.family
    rho = chunk_densities(cache, blocks, arrays, spans, dms, family)
    q0 = int(cache.starts[blocks.start])
    weights = cache.weights[q0 : q0 + rho.shape[2]]
    rows = rho[:, 0] if family == "LDA" else rho
    eps, v = cache.kernels.eval_xc(functional, (rows[0], rows[1]) if spin else rows[0], spin)
    vrho, vsigma, _, vtau = (*v, None, None, None)[:4]  # (vrho,) for LDA
    return rho, weights, eps, (vrho, vsigma, vtau)


def block_density(cache, b: int, dms, s: int):
    """Density s of dms (nset, nao, nao) on block b's k screened functions: (k, k), dms[s]
    itself when the block keeps every function."""
    fidx = cache.flat_index[b]
    if fidx is None:
        return dms[s]
    k = cache.ao_index[b].size
    nao = dms.shape[1]
    return dms[s].reshape(nao * nao).take(fidx).reshape(k, k)


def chunk_densities(cache, blocks, arrays, spans, dms, family: str):
    """ρ of each density of dms (nset, nao, nao) on a chunk's points in libxc's rows:
    (nset, 1 | 4 | 6, m_chunk) (ρ; ρ, ∇ρ; ρ, ∇ρ, 0, τ).  Points of a block that no function
    reaches keep ρ = 0."""
    kernels = cache.kernels
    xp = kernels.xp
    nset = dms.shape[0]
    ngrad = 1 if family == "LDA" else 4
    rho = xp.zeros((nset, {"LDA": 1, "GGA": 4, "MGGA": 6}[family], spans[-1].stop if spans else 0))
    for b, ao, sl in zip(blocks, arrays, spans):
        if ao.shape[1] == 0:
            continue
        out = xp.empty((ngrad, ao.shape[2]))  # contiguous for the kernels
        for s in range(nset):
            sub = block_density(cache, b, dms, s)
            kernels.contract_rows(ao, sub @ ao[0], ngrad, out)  # ρ and ½∇ρ
            rho[s, :ngrad, sl] = out
            if family == "MGGA":
                kernels.contract_tau(ao, sub @ ao[1:4], out[0])
                rho[s, 5, sl] = out[0]
    if family != "LDA":
        rho[:, 1:4] *= 2.0
    return rho


def chunk_potential(cache, blocks, arrays, spans, coef, wt, vhalf) -> None:
    """Add one spin's H = Σ_blocks φ (Σ_x coef_x φ_x)^T (+ ½ Σ_x ∂_xφ (w_τ ∂_xφ)^T) to vhalf
    (nao, nao) in place: coef (1 | 4, m_chunk) the weighted rows w_ρ/2, w_∇ of
    :func:`potential_rows`, wt (m_chunk,) or None its w_τ."""
    kernels = cache.kernels
    xp = kernels.xp
    nao = vhalf.shape[0]
    vflat = vhalf.reshape(nao * nao)
    for b, ao, sl in zip(blocks, arrays, spans):
        k = ao.shape[1]
        if k == 0:
            continue
        aow = xp.empty((k, ao.shape[2]))
        kernels.scale_rows(ao, xp.ascontiguousarray(coef[:, sl]), coef.shape[0], aow)
        block = ao[0] @ aow.T
        if wt is not None:  # ½ Σ_x ∂_xφ (w_τ ∂_xφ)^T, symmetric itself
            block += 0.5 * (ao[1:4] @ (ao[1:4] * wt[sl]).transpose(0, 2, 1)).sum(axis=0)
        fidx = cache.flat_index[b]
        if fidx is None:
            vhalf += block
        else:
            vflat[fidx] += block.ravel()
