"""Exchange-correlation energy and potential matrix of a density matrix on a grid (CPU).

    exc, vxc, nelec = xc_energy_potential(basis, grid, dm, "pbe")
    cache = make_xc_cache(basis, grid, "pbe")                        # once per SCF
    exc, vxc, nelec = xc_energy_potential(basis, grid, dm, "pbe", cache=cache)

Restricted: dm (nao, nao) is the total density matrix, vxc (nao, nao), nelec a float.
Unrestricted: dm (2, nao, nao) holds the alpha and beta matrices, vxc (2, nao, nao) and
nelec (2,).  Energies in hartree; the AO order is PySCF's (hartree's) order.

With AO values φ_μ and their gradients at the points (block by block), the densities are

    ρ = Σ_μν D_μν φ_μ φ_ν,   ∇ρ = 2 Σ_μν D_μν φ_ν ∇φ_μ,   τ = ½ Σ_μν D_μν ∇φ_μ·∇φ_ν

(libxc's τ = ½ Σ_i n_i |∇ψ_i|², the same with the 1/2; D symmetric).  libxc
(through :mod:`hartree.dft.functionals`) gives the energy per particle ε and the partial
derivatives v_ρ = ∂f/∂ρ, v_σ = ∂f/∂σ (σ = ∇ρ·∇ρ), v_τ = ∂f/∂τ of f = ρ ε, and

    E_xc = Σ_g w_g ρ_g ε_g,
    V_μν = ∂E_xc/∂D_μν = Σ_g w_g [ v_ρ φ_μ φ_ν + 2 v_σ ∇ρ·∇(φ_μ φ_ν) + ½ v_τ ∇φ_μ·∇φ_ν ]

(e.g. Pople, Gill and Johnson, Chem. Phys. Lett. 199, 557 (1992), eqs. 10-12, for the GGA
term; the τ term follows from ∂τ/∂D_μν).  Spin-polarised: σ_αα, σ_αβ, σ_ββ, and the α
gradient term becomes (2 v_σαα ∇ρ_α + v_σαβ ∇ρ_β)·∇(φ_μ φ_ν).  Only the semilocal part is
evaluated here; exact exchange and VV10 are the callers' (see :class:`Functional`).

Evaluation (:func:`xc_energy_potential`).  The points are taken in compact blocks
(:mod:`hartree.dft.ao_cache`), and a shell whose functions and gradients stay below
:data:`AO_THRESHOLD` on every point of a block is skipped there (:func:`shell_radii`).  On a
block's k functions and m points, with φ (k, m) AO-major (:mod:`hartree.dft.ao_kernels`),

    c = D_kk φ (GEMM),   ρ_p = Σ_μ c_μp φ_μp,   ∇ρ_p = 2 Σ_μ c_μp ∇φ_μp,
    H_kk += φ (w_ρ φ/2 + Σ_x w_∇x ∂_xφ)^T (GEMM),   V = H + H^T once at the end,

with one libxc call for all cached points.  The loop is written once for numpy and cupy
(:mod:`hartree.dft.xc_integrate`); the AO values, the pointwise sums and the functional are
the device's kernels (:mod:`hartree.dft.xc_kernels`: numba and PySCF's libxc on the CPU;
:mod:`hartree.dft.xc_gpu`: CUDA and libxc built for CUDA on a GPU).  The AO values are the
same in every SCF cycle: :func:`make_xc_cache` computes them once and keeps them within a
memory budget; without a cache they are computed for the call, chunk by chunk.
:func:`ao_values` is the numpy reference of the AO values (and their second derivatives,
for :mod:`hartree.dft.xc_gradient`).
"""

from __future__ import annotations

import numpy as np

from ..basis import cart2sph, cart_components
from ..errors import InputError
from ..integrals.gaussian_product import angular_factors
from .ao_cache import AOCache
from .functionals import Functional, parse_functional
from .grids import Grid
from .xc_integrate import XCKernels, check_dm, integrate, potential_rows

__all__ = ["AO_THRESHOLD", "shell_radii", "ao_values", "densities", "make_xc_cache", "xc_energy_potential"]

#: Functions and gradient components below this (a.u.) on a whole block are skipped.
AO_THRESHOLD = 1e-15


def shell_radii(basis, threshold: float = AO_THRESHOLD, deriv: int = 1) -> np.ndarray:
    """Radius (bohr) per shell, (nshell,), beyond which every function of the shell and every
    component of its derivatives up to order ``deriv`` (1 or 2) is below ``threshold``.

    Bound: |x^i y^j z^k| <= r^l, |∂_x (x^i y^j z^k e^{-a r²})| <= (l r^(l-1) + 2a r^(l+1)) e^{-a r²},
    |∂_x∂_y (...)| <= (l(l-1) r^(l-2) + (2l+1) 2a r^l + 4a² r^(l+2)) e^{-a r²} (the second
    derivative of :func:`ao_values`), and a spherical function's cartesian coefficients sum
    to less than 2^l (2l+1) in absolute value (:func:`hartree.grid.cpu.shell_cutoffs`), so
    every value is at most 2^l (2l+1) f(l) Σ_p |c_p| (r^l + l r^(l-1) + 2 a_p r^(l+1) [+ the
    second-derivative terms]) e^{-a_p r²}; the radius is the last point of a 0.01-bohr grid
    where this bound reaches the threshold (inf past 60 bohr).
    """
    r = np.linspace(0.0, 60.0, 6001)[1:]
    factors = angular_factors(int(basis.max_l) + 1) if basis.nshell else np.ones(1)
    out = np.empty(basis.nshell)
    for ish in range(basis.nshell):
        l = int(basis.shell_l[ish])
        a = basis.shell_exponents(ish)[:, None]
        c = np.abs(basis.shell_coefficients(ish))[:, None] * factors[l] * 2.0**l * (2 * l + 1)
        poly = r**l + l * r ** max(l - 1, 0) + 2.0 * a * r ** (l + 1)
        if deriv >= 2:
            poly = poly + l * (l - 1) * r ** max(l - 2, 0) + (2 * l + 1) * 2.0 * a * r**l + 4.0 * a * a * r ** (l + 2)
        bound = (c * poly * np.exp(-a * r * r)).sum(axis=0)
        above = np.flatnonzero(bound >= threshold)
        out[ish] = np.inf if above.size and above[-1] == r.size - 1 else (r[above[-1] + 1] if above.size else r[0])
    return out


def ao_values(basis, points: np.ndarray, deriv: int = 1, shells: np.ndarray | None = None) -> np.ndarray:
    """AO values (deriv 0), gradients (deriv 1) and second derivatives (deriv 2) at points
    (n, 3) bohr.

    Returns float64 (1, n, nao), (4, n, nao) or (10, n, nao): φ_μ(r_p), then ∂φ_μ/∂x, ∂y, ∂z
    (bohr^-5/2), then ∂xx, ∂xy, ∂xz, ∂yy, ∂yz, ∂zz (bohr^-7/2; PySCF's ``GTOval_*_deriv2``
    order); φ in bohr^-3/2; AO order and normalisation of the basis (PySCF's).  ``shells``:
    evaluate only these shells; the last axis then holds their functions only, shell after
    shell in the order given.

    With P = x^i y^j z^k and R = Σ_p c_p e^{-a_p r²}, R1 = Σ_p (-2a_p) c_p e^{-a_p r²},
    R2 = Σ_p 4a_p² c_p e^{-a_p r²} (so ∂_x R = x R1, ∂_x R1 = x R2):

        ∂_a (P R) = (∂_a P) R + x_a P R1,
        ∂_a∂_b (P R) = (∂_a∂_b P) R + [(∂_a P) x_b + (∂_b P) x_a + δ_ab P] R1 + x_a x_b P R2.
    """
    if deriv not in (0, 1, 2):
        raise InputError(f"AO derivatives of order {deriv!r}: only 0, 1 and 2 are available")
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    ncomp = (1, 4, 10)[int(deriv)]
    shells = np.arange(basis.nshell) if shells is None else np.asarray(shells, dtype=np.int64)
    sizes = basis.ao_loc[shells + 1] - basis.ao_loc[shells]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = np.empty((ncomp, points.shape[0], int(starts[-1])))
    factors = angular_factors(max(int(basis.max_l), 0) + 2)
    for ish, a0, a1 in zip(shells, starts[:-1], starts[1:]):
        l = int(basis.shell_l[ish])
        d = points - basis.shell_center[ish]
        a = basis.shell_exponents(ish)
        c = basis.shell_coefficients(ish) * factors[l]
        e = np.exp(-(d * d).sum(axis=1)[:, None] * a[None, :])  # (n, nprim)
        radial = [e @ c]  # R, then R1 and R2 (docstring)
        if deriv:
            radial.append(-2.0 * (e @ (c * a)))
        if deriv == 2:
            radial.append(4.0 * (e @ (c * a * a)))
        powers = [np.ones((3, points.shape[0])), d.T]
        for _ in range(l + max(deriv, 1)):
            powers.append(powers[-1] * d.T)

        def mono(ijk, shift, _powers=powers):
            """x^i' y^j' z^k' with (i', j', k') = ijk + shift; None when an exponent is negative."""
            n = [ijk[x] + shift[x] for x in range(3)]
            return None if min(n) < 0 else _powers[n[0]][0] * _powers[n[1]][1] * _powers[n[2]][2]

        comps = cart_components(l)
        cart = np.empty((ncomp, points.shape[0], len(comps)))
        unit = np.eye(3, dtype=np.int64)
        for k, ijk in enumerate(comps):
            cart[0, :, k] = mono(ijk, (0, 0, 0)) * radial[0]
            if not deriv:
                continue
            for x in range(3):
                value = mono(ijk, unit[x]) * radial[1]  # x_a P R1
                if ijk[x]:
                    value += ijk[x] * mono(ijk, -unit[x]) * radial[0]  # (∂_a P) R
                cart[1 + x, :, k] = value
            if deriv < 2:
                continue
            for n, (x, y) in enumerate(((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
                value = mono(ijk, unit[x] + unit[y]) * radial[2]  # x_a x_b P R2
                r1 = mono(ijk, (0, 0, 0)) if x == y else 0.0  # δ_ab P
                if ijk[x]:
                    r1 = r1 + ijk[x] * mono(ijk, unit[y] - unit[x])  # (∂_a P) x_b
                if ijk[y]:
                    r1 = r1 + ijk[y] * mono(ijk, unit[x] - unit[y])  # (∂_b P) x_a
                value += r1 * radial[1]
                second = ijk[x] * (ijk[y] - (x == y))  # ∂_a∂_b P = n_a (n_b - δ_ab) x^(ijk - e_a - e_b)
                if second:
                    value += second * mono(ijk, -unit[x] - unit[y]) * radial[0]
                cart[4 + n, :, k] = value
        out[:, :, a0:a1] = cart @ cart2sph(l) if basis.pure else cart
    return out


def densities(ao: np.ndarray, dm: np.ndarray, family: str) -> np.ndarray:
    """ρ and what the family needs, in libxc's (PySCF's ``eval_xc``) layout.

    ao (4, n, nao) from :func:`ao_values` (1 row is enough for "LDA"), dm (nao, nao)
    symmetric.  Returns (n,) for "LDA"; (4, n) ρ, ∂xρ, ∂yρ, ∂zρ for "GGA"; (6, n) for
    "MGGA" with rows 4 (the Laplacian, not used: 0) and 5 τ = ½ Σ D_μν ∇φ_μ·∇φ_ν (bohr^-5).
    """
    c0 = ao[0] @ dm
    rho = np.einsum("pi,pi->p", c0, ao[0])
    if family == "LDA":
        return rho
    out = np.zeros((4 if family == "GGA" else 6, rho.shape[0]))
    out[0] = rho
    for x in range(3):
        out[1 + x] = 2.0 * np.einsum("pi,pi->p", c0, ao[1 + x])
    if family == "MGGA":
        for x in range(3):
            out[5] += 0.5 * np.einsum("pi,pi->p", ao[1 + x] @ dm, ao[1 + x])
    return out


def _check_dm(basis, dm) -> tuple[np.ndarray, bool]:
    """(ndm, nao, nao) symmetrised float64 numpy density matrices and whether they are
    spin-resolved (:func:`hartree.dft.xc_integrate.check_dm`)."""
    return check_dm(basis, dm, np)


#: weighted coefficients of one spin's potential (:func:`hartree.dft.xc_integrate.potential_rows`)
_potential_rows = potential_rows


def make_xc_cache(
    basis,
    grid: Grid,
    functional: str | Functional,
    memory_budget: int | None = None,
    block_points: int = 0,
    kernels: XCKernels | None = None,
) -> AOCache:
    """The :class:`hartree.dft.ao_cache.AOCache` that :func:`xc_energy_potential` reuses for
    every density on this basis and grid: values (LDA) or values and gradients (GGA,
    meta-GGA) of the screened shells per block, built now.  memory_budget: bytes kept (None:
    the kernels' default, on the CPU :func:`hartree.dft.ao_cache.default_budget`, min(2 GiB,
    available / 4); 0: none); block_points: points per block (0: the kernels' default);
    kernels: the device's :class:`hartree.dft.xc_integrate.XCKernels` (None: the CPU's,
    numba and PySCF's libxc; :class:`hartree.dft.xc_gpu.GPUKernels` for a GPU)."""
    deriv = 0 if parse_functional(functional).family == "LDA" else 1
    return AOCache(basis, grid, deriv, shell_radii(basis), memory_budget, block_points, kernels=kernels)


def xc_energy_potential(
    basis, grid: Grid, dm, functional: str | Functional, block_points: int = 0, cache: AOCache | None = None
):
    """E_xc (hartree), V_xc and the integrated electron count of density matrix dm.

    dm (nao, nao) total density (restricted) or (2, nao, nao) alpha and beta (unrestricted);
    only its symmetric part counts.  Returns (exc, vxc, nelec): vxc (nao, nao) or
    (2, nao, nao) hartree, nelec float or (2,).  functional: a name or a
    :class:`Functional`; its semilocal part only (module docstring).  block_points: points
    per block (0: :data:`hartree.dft.ao_cache.BLOCK_POINTS`).  cache: the
    :func:`make_xc_cache` of this basis and grid, whose values are reused (an SCF builds it
    once); without it the values are computed for this call only, chunk by chunk, on the
    CPU.  dm and vxc are arrays of the cache's kernels (numpy on the CPU, cupy for
    :class:`hartree.dft.xc_gpu.GPUKernels` on a GPU).

    The evaluation (:func:`hartree.dft.xc_integrate.integrate`), per chunk of blocks
    (:meth:`AOCache.chunks`; all cached blocks form one): pass 1 forms ρ (and ∇ρ, τ) block
    by block with one GEMM c = D_kk φ (k, m) on the block's k screened functions and
    pointwise sums ρ = Σ_μ c_μ φ_μ, ∇ρ = 2 Σ_μ c_μ ∇φ_μ; one libxc call takes the chunk's
    points; pass 2 adds, per block, φ (w_ρ φ/2 + Σ_x w_∇x ∂_xφ)^T (one GEMM) to half of V,
    which is symmetrised once at the end.
    """
    functional = parse_functional(functional)
    deriv = 0 if functional.family == "LDA" else 1
    if cache is None:
        cache = AOCache(basis, grid, deriv, shell_radii(basis), memory_budget=0, block_points=block_points)
    elif cache.basis is not basis or cache.grid is not grid or cache.deriv < deriv:
        raise InputError(
            f"the AO cache was built for another basis or grid, or holds derivatives of order {cache.deriv}, "
            f"{deriv} needed; build it with make_xc_cache for this functional, basis and grid"
        )
    dms, unrestricted = check_dm(basis, dm, cache.kernels.xp)
    exc, vxc, nelec = integrate(cache, dms, functional, unrestricted)
    if unrestricted:
        return exc, vxc, nelec
    return exc, vxc[0], float(nelec[0])
