"""CPU (numba) kernel: values of all basis functions at arbitrary points.

This is the general kernel, the CPU counterpart of VMD's MO kernel
(Stone et al., "High performance computation and interactive display of
molecular orbitals on GPUs and multi-core CPUs", Algorithm 1): for each point,
loop over shells (grouped by atom), sum the contracted radial part
R(r) = sum_p c_p exp(-a_p r^2) over the shell's primitives, then multiply by the
cartesian monomials x^i y^j z^k (i+j+k = l).  Unlike Algorithm 1, which folds the
MO coefficients into the loop, we store the basis-function values of a block
of points, so that several orbitals (or a density) reuse them through one GEMM
(the methods of :mod:`hartree.grid.evaluate`, run on the CPU by
:class:`hartree.grid.cpu_device.CPUGrid`).

Screening: each shell gets a cut-off radius beyond which every one of its
functions is below ``threshold`` in absolute value (:func:`shell_cutoffs`);
points outside it skip the shell (its values stay 0).  The cost thus grows
linearly with molecule size for large molecules.

The GPU's counterpart is the generated ``orb_ao`` kernel of :mod:`hartree.grid.gpu_codegen`
(same screening radii, :func:`shell_cutoffs`); both sit behind the point kernels of
:class:`hartree.grid.device.GridDevice`.
"""

from dataclasses import dataclass

import numba
import numpy as np

from ..basis import cart2sph, cart_components, ncart
from ..basis.angular import MAX_L
from ..integrals.gaussian_product import angular_factors

#: Default screening threshold: functions below this value (a.u.) are taken as 0.
DEFAULT_THRESHOLD = 1e-15

#: Points per work item of the parallel loop.
_BLOCK = 64


#: libcint's f(l) by l (hartree.integrals.gaussian_product: the one definition)
ANGULAR_FACTOR = angular_factors(MAX_L + 1)


@dataclass(frozen=True, eq=False)
class PreparedBasis:
    """Flat arrays the kernels read (derived from a Basis once; bohr and a.u.).

    shell_l, shell_nprim, shell_prim_start, ao_loc, cart_loc  int64 (nshell[+1],)
    shell_center  float64 (nshell, 3)
    exponents     float64 (nprim,)
    coefficients  float64 (nprim,)  c_p N(l, a_p) f(l): multiplies r^l-free exp(-a r^2)
    rcut2         float64 (nshell,) squared screening radius, bohr^2
    c2s           float64 flat cart->sph matrices, l = 0..MAX_L, ``c2s_loc`` offsets
    comp          int64 (ncomp_total, 3) cartesian exponents (i, j, k), ``comp_loc`` offsets
    """

    pure: bool
    nao: int
    ncart: int
    shell_l: np.ndarray
    shell_nprim: np.ndarray
    shell_prim_start: np.ndarray
    shell_center: np.ndarray
    exponents: np.ndarray
    coefficients: np.ndarray
    ao_loc: np.ndarray
    cart_loc: np.ndarray
    rcut2: np.ndarray
    c2s: np.ndarray
    c2s_loc: np.ndarray
    comp: np.ndarray
    comp_loc: np.ndarray


def shell_cutoffs(basis, threshold=DEFAULT_THRESHOLD):
    """Squared radius (bohr^2) per shell beyond which |every function| < threshold.

    Bound: |x^i y^j z^k| <= r^l, and a spherical function is a combination of
    cartesian ones whose absolute coefficients sum to less than K_l = 2^l (2l+1)
    (the largest column sums of cart2sph(l) are 1.26, 2.99, 7.57 for d, f, g), so
    |phi(r)| <= K_l f(l) sum_p |c_p| r^l exp(-a_p r^2).  We take the last radius on a
    0.01-bohr grid where this bound reaches the threshold.
    """
    r = np.linspace(0.0, 60.0, 6001)  # bohr; Gaussians are negligible far before 60 bohr
    out = np.empty(basis.nshell)
    memo = {}  # the same shell on many atoms is bounded once
    for ish in range(basis.nshell):
        l = int(basis.shell_l[ish])
        key = (l, basis.shell_exponents(ish).tobytes(), basis.shell_coefficients(ish).tobytes())
        if key in memo:
            out[ish] = memo[key]
            continue
        a = basis.shell_exponents(ish)[:, None]
        c = np.abs(basis.shell_coefficients(ish))[:, None] * ANGULAR_FACTOR[l] * 2.0**l * (2 * l + 1)
        bound = (c * r**l * np.exp(-a * r * r)).sum(axis=0)
        above = np.flatnonzero(bound >= threshold)
        rmax = r[min(above[-1] + 1, r.size - 1)] if above.size else 0.0
        out[ish] = memo[key] = rmax * rmax if rmax < r[-1] else np.inf
    return out


def prepare_basis(basis, threshold=DEFAULT_THRESHOLD):
    """PreparedBasis for the kernels (pure function of the Basis and threshold)."""
    factors = ANGULAR_FACTOR[np.asarray(basis.shell_l, dtype=np.int64)]
    per_prim = np.repeat(factors, basis.shell_nprim)
    # primitives are stored shell by shell, so repeat() lines them up
    order = np.concatenate(
        [np.arange(p0, p0 + n) for p0, n in zip(basis.shell_prim_start, basis.shell_nprim)] or [[]]
    ).astype(np.int64)
    coefficients = np.array(basis.coefficients, dtype=np.float64)
    coefficients[order] *= per_prim
    c2s_blocks, c2s_loc, comps, comp_loc = [], [0], [], [0]
    for l in range(MAX_L + 1):
        c2s_blocks.append(np.ascontiguousarray(cart2sph(l)).ravel())
        c2s_loc.append(c2s_loc[-1] + c2s_blocks[-1].size)
        comps += cart_components(l)
        comp_loc.append(comp_loc[-1] + ncart(l))
    return PreparedBasis(
        pure=bool(basis.pure),
        nao=int(basis.nao),
        ncart=int(basis.ncart),
        shell_l=np.asarray(basis.shell_l, dtype=np.int64),
        shell_nprim=np.asarray(basis.shell_nprim, dtype=np.int64),
        shell_prim_start=np.asarray(basis.shell_prim_start, dtype=np.int64),
        shell_center=np.ascontiguousarray(basis.shell_center, dtype=np.float64),
        exponents=np.asarray(basis.exponents, dtype=np.float64),
        coefficients=coefficients,
        ao_loc=np.asarray(basis.ao_loc, dtype=np.int64),
        cart_loc=np.asarray(basis.cart_loc, dtype=np.int64),
        rcut2=shell_cutoffs(basis, threshold),
        c2s=np.concatenate(c2s_blocks),
        c2s_loc=np.array(c2s_loc, dtype=np.int64),
        comp=np.array(comps, dtype=np.int64).reshape(-1, 3),
        comp_loc=np.array(comp_loc, dtype=np.int64),
    )


@numba.njit(parallel=True, cache=True)
def _eval_ao_kernel(
    points,
    shell_l,
    shell_nprim,
    shell_prim_start,
    shell_center,
    exponents,
    coefficients,
    ao_loc,
    rcut2,
    pure,
    c2s,
    c2s_loc,
    comp,
    comp_loc,
    out,
):
    """out[p, mu] = value of basis function mu at points[p] (out zeroed by the caller).

    Loop order per point (VMD Algorithm 1, without the MO coefficients):
    shell -> screening test -> contracted radial sum -> cartesian monomials ->
    (spherical) transformation C_l^T.
    """
    npts = points.shape[0]
    nshell = shell_l.shape[0]
    nblock = (npts + _BLOCK - 1) // _BLOCK
    for blk in numba.prange(nblock):
        cart = np.empty(32)
        px = np.empty(8)
        py = np.empty(8)
        pz = np.empty(8)
        for p in range(blk * _BLOCK, min(npts, (blk + 1) * _BLOCK)):
            for sh in range(nshell):
                dx = points[p, 0] - shell_center[sh, 0]
                dy = points[p, 1] - shell_center[sh, 1]
                dz = points[p, 2] - shell_center[sh, 2]
                r2 = dx * dx + dy * dy + dz * dz
                if r2 > rcut2[sh]:
                    continue
                radial = 0.0
                p0 = shell_prim_start[sh]
                for q in range(p0, p0 + shell_nprim[sh]):
                    radial += coefficients[q] * np.exp(-exponents[q] * r2)
                l = shell_l[sh]
                px[0] = 1.0
                py[0] = 1.0
                pz[0] = 1.0
                for n in range(1, l + 1):
                    px[n] = px[n - 1] * dx
                    py[n] = py[n - 1] * dy
                    pz[n] = pz[n - 1] * dz
                c0 = comp_loc[l]
                nc = comp_loc[l + 1] - c0
                for c in range(nc):
                    cart[c] = radial * px[comp[c0 + c, 0]] * py[comp[c0 + c, 1]] * pz[comp[c0 + c, 2]]
                a0 = ao_loc[sh]
                if pure and l >= 2:
                    ns = 2 * l + 1
                    m0 = c2s_loc[l]
                    for m in range(ns):
                        s = 0.0
                        for c in range(nc):
                            s += c2s[m0 + c * ns + m] * cart[c]
                        out[p, a0 + m] = s
                else:
                    for c in range(nc):
                        out[p, a0 + c] = cart[c]


def eval_ao(points, prepared, dtype=np.float64, out=None):
    """Basis-function values, (npts, nao) array of ``dtype``, at points (npts, 3) in bohr.

    Arithmetic is FP64; ``dtype=np.float32`` stores FP32 values (relative error
    about 6e-8 of each value).  ``out``: optional zeroed array to fill.
    """
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    if out is None:
        out = np.zeros((points.shape[0], prepared.nao), dtype=dtype)
    pb = prepared
    _eval_ao_kernel(
        points,
        pb.shell_l,
        pb.shell_nprim,
        pb.shell_prim_start,
        pb.shell_center,
        pb.exponents,
        pb.coefficients,
        pb.ao_loc,
        pb.rcut2,
        pb.pure,
        pb.c2s,
        pb.c2s_loc,
        pb.comp,
        pb.comp_loc,
        out,
    )
    return out
