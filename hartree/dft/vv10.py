"""VV10 non-local correlation on a grid (Vydrov and Van Voorhis, J. Chem. Phys. 133, 244103 (2010)).

    nl = NonLocal(basis, make_grid(molecule, level=1), (b, C))    # once per SCF
    e_nlc, v_nlc, nelec = nl(dm)                                  # every cycle
    g = nlc_gradient(molecule, basis, grid, dm, (b, C))           # (natm, 3) Eh/bohr
    g = nlc_gradient(molecule, basis, grid, dm, (b, C), grid_response=True)

dm is the total density matrix (nao, nao) (UKS: D_α + D_β; VV10 depends on the total
density only, so its potential enters both spins' Fock matrices).  b and C are libxc's
parameters of the functional's VV10 part (:attr:`hartree.dft.Functional.vv10`: 6.0 and
0.01 for b97m-v, ωB97X-V and ωB97M-V; 5.9 and 0.0093 for libxc's GGA_XC_VV10).

**Energy** (the VV10 paper's kernel).  With n the density, σ = |∇n|² and R = |r - r'|,

    E_nlc = ∫ n(r) [β + ½ ∫ n(r') Φ(r, r') dr'] dr,
    Φ = -3 / (2 g g' (g + g')),   g = ω0(r) R² + κ(r),   g' = ω0(r') R² + κ(r'),
    ω0 = sqrt(ω_g² + ω_p²/3),   ω_g² = C σ² / n⁴,   ω_p²/3 = 4π n / 3,
    κ = b v_F² / ω_p = b (3/2) π (9π)^(-1/6) n^(1/6),   β = (3 / b²)^(3/4) / 32,

on one grid for both integrals (the NLC grid, coarser than the semilocal one): with weights
w and the pair sums over the points j of the grid

    F_i = -3/2 Σ_j w_j n_j / (g_ij g'_ij (g_ij + g'_ij)),
    U_i = Σ_j w_j n_j / (g g' (g + g')) (1/g + 1/(g + g')),   W_i = Σ_j (same) R_ij²,

the energy is E_nlc = Σ_i w_i n_i (β + F_i / 2).  Points where n < :data:`THRESHOLD` take no
part on either side (PySCF's ``_vv10nlc`` drops the same points, so that energies agree).

**Potential.**  E_nlc is a double integral symmetric in r and r', so its derivative by the
density at a point takes the kernel's dependence on that point twice (the ½ cancels), and
∂Φ/∂g = -Φ (1/g + 1/(g + g')):

    v_n = ∂E/∂n_i = β + F_i + 3/2 (U_i n ∂κ/∂n + W_i n ∂ω0/∂n),
    v_σ = ∂E/∂σ_i = 3/2 W_i n ∂ω0/∂σ,
    n ∂κ/∂n = κ/6,   n ∂ω0/∂n = (2π n/3 - 2 ω_g²) / ω0,   n ∂ω0/∂σ = C σ / (n³ ω0),

per unit weight, i.e. the (v_ρ, v_σ) of a GGA: V_nlc is formed by the same block loop and
GEMMs as the semilocal V_xc (:mod:`hartree.dft.xc_integrate`), on the NLC grid's own AO
cache.  The pair sums (O(N²) in the NLC points) are the one non-local step: numba, parallel
over the points i, on the CPU (:func:`pair_sums`); one CUDA thread per point i on a GPU
(``vv10.cu``, compiled and launched through :mod:`hartree.device`, emulated by
:class:`hartree.device.emulator.EmulatedBackend`).  The pointwise terms around them are
written once for numpy and cupy.

**Gradient** (:func:`nlc_gradient`), the grid held fixed (PySCF's default): the points do
not move, so E_nlc changes with the nuclei only through the density, and its derivative is
the basis-function term of a GGA (:mod:`hartree.dft.xc_gradient`, eq. (1) there) with the
v_n, v_σ above on the NLC grid and the total density.  ``grid_response=True`` adds the
derivatives of the NLC grid's points and weights (:mod:`hartree.dft.vv10_response`, the
derivation in its docstring): the weights' (Johnson, Gill and Pople 1993), the density's
values at the moved points, and the kernel's explicit dependence on them, on the host.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..device import cuda_source
from ..errors import InputError
from .ao_cache import AOCache
from .numint import ao_values, densities, shell_radii
from .xc_gradient import per_ao_terms, point_ranges
from .xc_integrate import check_dm, chunk_densities, chunk_potential, chunks_with_spans

__all__ = [
    "NLC_GRID_LEVEL",
    "THRESHOLD",
    "NonLocal",
    "nlc_gradient",
    "pair_sums",
    "vv10_beta",
    "vv10_parameters",
    "vv10_terms",
]

#: Densities (bohr^-3) below which a point takes no part in VV10 (as PySCF's).
THRESHOLD = 1e-8
#: Default grid level of the NLC grid (:func:`hartree.dft.make_grid`).
NLC_GRID_LEVEL = 1
#: Threads per CUDA block of vv10.cu's pair kernel.
THREADS = 128
#: Version of vv10.cu's interface (part of the compile key).
KERNEL_VERSION = "1"

_PAIR_PARAMS = [
    ("const double*", "outer"),
    ("int", "n"),
    ("const double*", "inner"),
    ("int", "m"),
    ("double*", "fuw"),
]


def vv10_parameters(functional) -> tuple[float, float]:
    """(b, C) of a :class:`hartree.dft.Functional`'s VV10 part, or of a (b, C) pair;
    InputError (one line) for a functional without VV10."""
    vv10 = getattr(functional, "vv10", functional)
    if vv10 is None:
        raise InputError(f"functional {getattr(functional, 'name', functional)!r} has no VV10 non-local correlation")
    b, c = (float(x) for x in vv10)
    if not (b > 0.0 and c > 0.0):
        raise InputError(f"VV10 parameters b = {b:g}, C = {c:g}: both must be positive")
    return b, c


def vv10_beta(b: float) -> float:
    """β = (3 / b²)^(3/4) / 32 (Eh per electron) of the module docstring."""
    return (3.0 / (b * b)) ** 0.75 / 32.0


def _local(rho, sigma, b: float, c: float, xp):
    """ω0, κ and n ∂ω0/∂n, n ∂ω0/∂σ at points with n > 0 (module docstring), arrays of xp."""
    wg2 = c * (sigma / (rho * rho)) ** 2
    w0 = xp.sqrt(wg2 + (4.0 * math.pi / 3.0) * rho)
    kappa = (b * 1.5 * math.pi * (9.0 * math.pi) ** (-1.0 / 6.0)) * rho ** (1.0 / 6.0)
    dw0_dn = ((2.0 * math.pi / 3.0) * rho - 2.0 * wg2) / w0
    dw0_ds = c * sigma / (rho * rho * rho * w0)
    return w0, kappa, dw0_dn, dw0_ds


def vv10_terms(coords, weights, rho, b: float, c: float, pairs):
    """Per point of a grid: (ε (n,), v_n (n,), v_σ (n,)) of VV10 (module docstring), with
    E_nlc = Σ w n ε.

    coords (n, 3) bohr, weights (n,) bohr³, rho (4, n) n and ∇n (bohr^-3, bohr^-4), all of
    one array module xp (numpy or cupy); pairs: the pair-sum function of that module
    (:func:`pair_sums` for numpy, :meth:`CudaPairs.__call__` for a device), called with
    (outer (5, n_i), inner (6, n_j)) and returning (3, n_i) F, U, W.  Points with n below
    :data:`THRESHOLD` get 0.
    """
    xp = _module(rho)
    n = rho.shape[1]
    keep = xp.flatnonzero(rho[0] >= THRESHOLD)
    r = rho[0].take(keep)
    grad = rho[1:4].take(keep, axis=1)
    sigma = (grad * grad).sum(axis=0)
    w0, kappa, dw0_dn, dw0_ds = _local(r, sigma, b, c, xp)
    xyz = coords.take(keep, axis=0)
    outer = xp.ascontiguousarray(xp.concatenate([xyz.T, w0[None], kappa[None]], axis=0))
    inner = xp.ascontiguousarray(xp.concatenate([outer, (r * weights.take(keep))[None]], axis=0))
    f, u, w = pairs(outer, inner)
    beta = vv10_beta(b)
    eps, vn, vs = xp.zeros(n), xp.zeros(n), xp.zeros(n)
    eps[keep] = beta + 0.5 * f
    vn[keep] = beta + f + 1.5 * (u * kappa / 6.0 + w * dw0_dn)
    vs[keep] = 1.5 * w * dw0_ds
    return eps, vn, vs


def _module(a):
    from ..arrays import array_module

    return array_module(a)


@numba.njit(parallel=True, cache=True, fastmath={"reassoc", "contract"})
def _pair_kernel(outer, inner, out):  # pragma: no cover - compiled by numba
    """F, U, W (module docstring) of each outer point over all inner points, one thread per
    outer point.  One division per pair: with d = 1/(g g' (g + g')), T = w n d and
    T (1/g + 1/(g + g')) = T d g' (2g + g').  fastmath's reassociation lets LLVM vectorise
    the sums over j (3.1 times faster on a 10,000-point grid); vv10.cu sums in order, the
    two agree to 1e-14 relative."""
    n, m = outer.shape[1], inner.shape[1]
    ix, iy, iz, iw0, ikap, irw = inner[0], inner[1], inner[2], inner[3], inner[4], inner[5]
    for i in numba.prange(n):
        x, y, z, w0, kap = outer[0, i], outer[1, i], outer[2, i], outer[3, i], outer[4, i]
        f = 0.0
        u = 0.0
        w = 0.0
        for j in range(m):
            dx = ix[j] - x
            dy = iy[j] - y
            dz = iz[j] - z
            r2 = dx * dx + dy * dy + dz * dz
            gp = r2 * iw0[j] + ikap[j]
            g = r2 * w0 + kap
            gt = g + gp
            d = 1.0 / (g * gp * gt)
            t = irw[j] * d
            f += t
            t = t * d * gp * (gt + g)
            u += t
            w += t * r2
        out[0, i] = -1.5 * f
        out[1, i] = u
        out[2, i] = w


def pair_sums(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """F, U, W (3, n) of the outer points (5, n: x, y, z bohr, ω0, κ) over the inner points
    (6, m: x, y, z, ω0, κ, w n) on the CPU (numba, parallel over the outer points)."""
    outer = np.ascontiguousarray(outer, dtype=np.float64)
    inner = np.ascontiguousarray(inner, dtype=np.float64)
    out = np.empty((3, outer.shape[1]))
    _pair_kernel(outer, inner, out)
    return out


class CudaPairs:
    """The pair sums of :func:`pair_sums` on a device (``vv10.cu``): backend a
    :class:`hartree.device.backend.CudaBackend` (cupy arrays) or
    :class:`hartree.device.emulator.EmulatedBackend` (numpy, the same CUDA run by g++)."""

    def __init__(self, backend):
        self.backend = backend
        self._module = None

    def __call__(self, outer, inner):
        xp = self.backend.xp
        if self._module is None:
            key = {"kind": "vv10", "version": KERNEL_VERSION}
            text = cuda_source.read("hartree.dft", "vv10.cu")
            with self.backend.use():
                (self._module,) = self.backend.compile([(text, key, {"vv10_pairs": _PAIR_PARAMS})])
        n, m = int(outer.shape[1]), int(inner.shape[1])
        out = xp.empty((3, n))
        if n:
            args = [xp.ascontiguousarray(outer), np.int32(n), xp.ascontiguousarray(inner), np.int32(m), out]
            with self.backend.use():
                self._module.launch("vv10_pairs", ((n + THREADS - 1) // THREADS,), THREADS, args)
        return out


def _pairs_for(kernels):
    """The pair-sum function of an XC kernels object: numba for the CPU's, vv10.cu on its
    backend for a device's."""
    if kernels.xp is np and kernels.name == "cpu":
        return pair_sums
    return CudaPairs(kernels.backend)


class NonLocal:
    """E_nlc, V_nlc of total density matrices on one NLC grid (module docstring).

    basis; grid: the NLC grid (:func:`hartree.dft.make_grid`, level :data:`NLC_GRID_LEVEL`
    by default in an SCF); vv10: (b, C) or a Functional with VV10; kernels: the
    :class:`hartree.dft.xc_integrate.XCKernels` of the device (None: the CPU's), whose AO
    cache of this grid (values and gradients) is built now and kept; memory_budget: bytes
    of AO values kept (None: the kernels' default).  Call with dm (nao, nao), the total
    density, in the kernels' array module; returns (E_nlc Eh, V_nlc (nao, nao) Eh, the
    electron count the grid integrates).
    """

    def __init__(self, basis, grid, vv10, kernels=None, memory_budget=None):
        self.b, self.c = vv10_parameters(vv10)
        self.basis, self.grid = basis, grid
        self.cache = AOCache(basis, grid, 1, shell_radii(basis), memory_budget, kernels=kernels)
        xp = self.cache.kernels.xp
        self.coords = xp.asarray(self.cache.coords)
        self._pairs = _pairs_for(self.cache.kernels)

    def __call__(self, dm):
        cache = self.cache
        xp = cache.kernels.xp
        dms, _ = check_dm(self.basis, dm, xp)
        rho = xp.concatenate(
            [
                chunk_densities(cache, blocks, arrays, spans, dms, "GGA")[0]
                for blocks, arrays, spans in chunks_with_spans(cache)
            ],
            axis=1,
        )
        weights = cache.weights
        eps, vn, vs = vv10_terms(self.coords, weights, rho, self.b, self.c, self._pairs)
        energy = float(weights @ (rho[0] * eps))
        nelec = float(weights @ rho[0])
        coef = xp.empty((4, weights.size))  # the GGA rows of potential_rows (restricted)
        coef[0] = 0.5 * weights * vn
        coef[1:4] = 2.0 * weights * vs * rho[1:4]
        nao = self.basis.nao
        vhalf = xp.zeros((nao, nao))
        for blocks, arrays, spans in chunks_with_spans(cache):  # the blocks past the budget are computed again
            q0, q1 = int(cache.starts[blocks.start]), int(cache.starts[blocks.stop])
            chunk_potential(cache, blocks, arrays, spans, coef[:, q0:q1], None, vhalf)
        return energy, vhalf + vhalf.T, nelec


def nlc_gradient(
    molecule,
    basis,
    grid,
    dm,
    vv10,
    block_points: int = 0,
    kernels=None,
    grid_response: bool = False,
    *,
    partition: str = "becke",
    size_adjust: str | None = "treutler",
) -> np.ndarray:
    """∂E_nlc/∂R of the total density matrix dm (nao, nao) on the NLC ``grid``: float64
    (natm, 3), Eh/bohr (module docstring).

    The density on the whole grid first (the pair sums need it), then per block the GGA
    basis-function term of :mod:`hartree.dft.xc_gradient` with VV10's v_n and v_σ.
    grid_response: add the derivatives of the grid's points and weights
    (:mod:`hartree.dft.vv10_response`); ``partition`` and ``size_adjust`` must then be those
    the grid was made with (make_grid's defaults here).  kernels: None, numpy and numba on
    the host, here (the reference); an :class:`hartree.dft.xc_integrate.XCKernels`, the
    fixed-grid gradient on its device (:func:`_nlc_gradient_on`; dm may then be an array of
    its module); grid_response with kernels is refused (InputError): it runs on the host only.
    """
    b, c = vv10_parameters(vv10)
    if kernels is not None:
        if grid_response:
            raise InputError(
                "the VV10 gradient's grid response runs on the host only: call nlc_gradient without kernels"
            )
        return _nlc_gradient_on(molecule, basis, grid, dm, b, c, block_points, kernels)
    dms, unrestricted = check_dm(basis, dm, np)
    if unrestricted:
        raise InputError("nlc_gradient takes the total density matrix (nao, nao), not alpha and beta")
    dm = dms[0]
    nao = basis.nao
    if block_points <= 0:
        block_points = int(min(8192, max(128, (32 * 1024 * 1024) // (10 * 8 * max(nao, 1)))))
    radii = shell_radii(basis, deriv=2)
    centres = np.asarray(basis.shell_center)
    ao_atom = np.repeat(np.asarray(basis.shell_atom), np.diff(basis.ao_loc))
    blocks = []
    for p0, p1 in point_ranges(grid, block_points, grid_response):  # with the response, one atom's points a block
        pts = grid.coords[p0:p1]
        nearest = np.sqrt(((pts[None, :, :] - centres[:, None, :]) ** 2).sum(-1).min(axis=1))
        shells = np.flatnonzero(nearest <= radii)
        idx = np.concatenate([np.arange(basis.ao_loc[s], basis.ao_loc[s + 1]) for s in shells]) if shells.size else None
        blocks.append((p0, p1, shells, idx))
    rho = np.zeros((4, grid.npoints))
    for p0, p1, shells, idx in blocks:
        if idx is not None:
            ao = ao_values(basis, grid.coords[p0:p1], 1, shells)
            rho[:, p0:p1] = densities(ao, dm[np.ix_(idx, idx)], "GGA")
    eps, vn, vs = vv10_terms(grid.coords, grid.weights, rho, b, c, pair_sums)
    grad = np.zeros((int(molecule.natm), 3))
    for p0, p1, shells, idx in blocks:
        if idx is None:
            continue
        w = grid.weights[p0:p1]
        ao = ao_values(basis, grid.coords[p0:p1], 2, shells)
        per_ao = per_ao_terms(ao, dm[np.ix_(idx, idx)], w * vn[p0:p1], 2.0 * w * vs[p0:p1] * rho[1:4, p0:p1], None)
        block = np.zeros_like(grad)
        np.add.at(block, ao_atom[idx], -2.0 * per_ao.T)  # xc_gradient's eq. (1)
        grad += block
        if grid_response:  # n and ∇n at the moved points (as the XC grid response, Johnson, Gill and Pople 1993)
            grad[int(grid.atoms[p0])] -= block.sum(axis=0)
    if grid_response:  # the weights (Johnson, Gill and Pople 1993) and Φ's explicit point dependence
        from .vv10_response import weight_and_kernel_terms

        kept = np.flatnonzero(rho[0] >= THRESHOLD)
        n = rho[0, kept]
        w0, kappa, _, _ = _local(n, (rho[1:4, kept] ** 2).sum(axis=0), b, c, np)
        inner = np.stack([*grid.coords[kept].T, w0, kappa, n * grid.weights[kept]])
        de_dw = np.zeros(grid.npoints)
        de_dw[kept] = n * (2.0 * eps[kept] - vv10_beta(b))  # n (β + F), with ε = β + F/2
        grad += weight_and_kernel_terms(molecule, grid, kept, inner, de_dw, partition, size_adjust, block_points)
    return grad


def _nlc_gradient_on(molecule, basis, grid, dm, b: float, c: float, block_points: int, kernels) -> np.ndarray:
    """nlc_gradient on a device, written once for numpy and cupy: the AO values with second
    derivatives of the gradient's cache (:func:`hartree.dft.xc_grad_integrate.gradient_cache`,
    none kept) give n and ∇n on every point (pass 1), the pair sums v_n and v_σ on the device
    (:func:`vv10_terms` with the kernels' pair function), and pass 2 computes the values again
    for the per-AO sums of the GGA's eq. (1) (:func:`hartree.dft.xc_grad_integrate.chunk_gradient`);
    only the (natm, 3) result comes to the host."""
    from .xc_grad_integrate import atom_gradient, block_index, chunk_gradient, gradient_cache

    xp = kernels.xp
    dms, unrestricted = check_dm(basis, dm, xp)
    if unrestricted:
        raise InputError("nlc_gradient takes the total density matrix (nao, nao), not alpha and beta")
    cache = gradient_cache(basis, grid, "GGA", kernels, block_points)
    rho = xp.concatenate(
        [
            chunk_densities(cache, blocks, arrays, spans, dms, "GGA")[0]
            for blocks, arrays, spans in chunks_with_spans(cache)
        ],
        axis=1,
    )
    weights = cache.weights
    _, vn, vs = vv10_terms(xp.asarray(cache.coords), weights, rho, b, c, _pairs_for(kernels))
    coef = xp.empty((4, weights.size))  # w_ρ, w_∇ of the GGA (xc_integrate.potential_rows, restricted)
    coef[0] = weights * vn
    coef[1:4] = 2.0 * weights * vs * rho[1:4]
    out = xp.zeros((3, basis.nao))
    index = block_index(cache)
    for blocks, arrays, spans in chunks_with_spans(cache):  # the values computed again, chunk by chunk
        q0, q1 = int(cache.starts[blocks.start]), int(cache.starts[blocks.stop])
        chunk_gradient(cache, blocks, arrays, spans, dms, [xp.ascontiguousarray(coef[:, q0:q1])], index, out)
    return atom_gradient(basis, int(molecule.natm), out)
