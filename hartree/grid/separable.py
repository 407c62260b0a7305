"""Fast orbital values on rectilinear lattices: Gaussians factorise along x, y, z.

On a lattice whose step vectors lie along x, y and z, every cartesian primitive
factorises,

    (x-Ax)^i (y-Ay)^j (z-Az)^k exp(-a |r-A|^2) = X_i(x) Y_j(y) Z_k(z),
    X_i(x) = (x-Ax)^i exp(-a (x-Ax)^2),  likewise Y_j, Z_k,

so an orbital psi = sum_mu C_mu phi_mu is a sum of separable terms.  Group the
terms by g = (centre, exponent) and the z power k ("rank terms" t = (g, k)):

    psi(x_a, y_b, z_c) = sum_t B_t(x_a, y_b) Z_t(z_c),
    B_t(x_a, y_b)      = sum_{i, j} w_{t,i,j} X_{g,i}(x_a) Y_{g,j}(y_b),

with w_{t,i,j} = C_cart(shell, ijk) c_p f(l) summed over the shells and primitives
that share (g, i, j, k).  B is built per slab of x planes (no exponentials: the 1-D
tables hold them), and the last step is one GEMM, (nx ny, nterm) @ (nterm, nz),
per slab.  For C60/6-31G* (cartesian) there are ~1000 rank terms instead of
5 x 10^6 points x 900 basis functions x exp.

Spherical bases enter through C_cart = C_l C_sph (per shell), with C_l = cart2sph(l).

This module holds the expansion's data (plan, 1-D tables, weights' sources) and its CPU
kernels (:func:`build_b`, and :func:`ao_rows`: AO values of lattice rows from the same
tables); the slab loop and the GEMM are written once for every device in
:mod:`hartree.grid.evaluate`, the GPU's B kernel is :mod:`hartree.grid.gpu_separable`.
"""

from dataclasses import dataclass

import numba
import numpy as np

from ..basis import cart2sph, cart_components
from .cpu import ANGULAR_FACTOR


@dataclass(frozen=True, eq=False)
class SeparablePlan:
    """Index structure of the separable expansion of a basis (independent of the orbitals).

    group_center (ng, 3), group_exponent (ng,), group_lmax (ng,)
    term_group, term_k (nterm,)        rank term t = (group, z power k)
    entry_term, entry_i, entry_j (ne,)  unique (t, i, j) with a weight
    src_entry, src_row, src_coef (ns,)  weight of entry e = sum over sources s with
                                        src_entry[s] == e of src_coef[s] * C_cart[src_row[s]]
    prim_group (nprim_total,)           group of each primitive of the Basis
    """

    ncart: int
    group_center: np.ndarray
    group_exponent: np.ndarray
    group_lmax: np.ndarray
    term_group: np.ndarray
    term_k: np.ndarray
    entry_term: np.ndarray
    entry_i: np.ndarray
    entry_j: np.ndarray
    src_entry: np.ndarray
    src_row: np.ndarray
    src_coef: np.ndarray
    prim_group: np.ndarray

    @property
    def nterm(self):
        return int(self.term_group.size)


def make_plan(basis):
    """The SeparablePlan of a Basis (pure function; costs microseconds per primitive)."""
    groups, terms, entries = {}, {}, {}
    src_entry, src_row, src_coef = [], [], []
    prim_group = np.zeros(basis.exponents.size, dtype=np.int64)
    for sh in range(basis.nshell):
        l = int(basis.shell_l[sh])
        centre = tuple(float(v) for v in basis.shell_center[sh])
        comps = cart_components(l)
        p0 = int(basis.shell_prim_start[sh])
        for q, (a, c) in enumerate(zip(basis.shell_exponents(sh), basis.shell_coefficients(sh))):
            g = groups.setdefault((centre, float(a)), [len(groups), 0])
            g[1] = max(g[1], l)
            prim_group[p0 + q] = g[0]
            for n, (i, j, k) in enumerate(comps):
                t = terms.setdefault((g[0], k), len(terms))
                e = entries.setdefault((t, i, j), len(entries))
                src_entry.append(e)
                src_row.append(int(basis.cart_loc[sh]) + n)
                src_coef.append(float(c) * ANGULAR_FACTOR[l])
    ng = len(groups)
    centre = np.zeros((ng, 3))
    exponent = np.zeros(ng)
    lmax = np.zeros(ng, dtype=np.int64)
    for (xyz, a), (g, l) in groups.items():
        centre[g], exponent[g], lmax[g] = xyz, a, l
    term_group = np.zeros(len(terms), dtype=np.int64)
    term_k = np.zeros(len(terms), dtype=np.int64)
    for (g, k), t in terms.items():
        term_group[t], term_k[t] = g, k
    entry = np.zeros((len(entries), 3), dtype=np.int64)
    for (t, i, j), e in entries.items():
        entry[e] = (t, i, j)
    return SeparablePlan(
        ncart=int(basis.ncart),
        group_center=centre,
        group_exponent=exponent,
        group_lmax=lmax,
        term_group=term_group,
        term_k=term_k,
        entry_term=entry[:, 0].copy(),
        entry_i=entry[:, 1].copy(),
        entry_j=entry[:, 2].copy(),
        src_entry=np.array(src_entry, dtype=np.int64),
        src_row=np.array(src_row, dtype=np.int64),
        src_coef=np.array(src_coef),
        prim_group=prim_group,
    )


def cartesian_coefficients(basis, mo_coeff):
    """MO coefficients over cartesian functions: C_cart = C_l C_sph per shell (nao -> ncart rows)."""
    mo_coeff = np.asarray(mo_coeff, dtype=np.float64)
    if not basis.pure:
        return mo_coeff
    out = np.zeros((basis.ncart,) + mo_coeff.shape[1:])
    for sh in range(basis.nshell):
        l = int(basis.shell_l[sh])
        c0, c1 = int(basis.cart_loc[sh]), int(basis.cart_loc[sh + 1])
        a0, a1 = int(basis.ao_loc[sh]), int(basis.ao_loc[sh + 1])
        out[c0:c1] = cart2sph(l) @ mo_coeff[a0:a1]
    return out


def axis_tables(coord, centres, exponents, lmax):
    """T[g, i, n] = (coord[n] - centres[g])^i exp(-exponents[g] (coord[n] - centres[g])^2).

    coord (n,), centres (ng,), exponents (ng,); i = 0..lmax.  float64 (ng, lmax+1, n).
    """
    d = coord[None, :] - centres[:, None]
    gauss = np.exp(-exponents[:, None] * d * d)
    powers = d[:, None, :] ** np.arange(lmax + 1)[None, :, None]
    return powers * gauss[:, None, :]


@numba.njit(parallel=True, cache=True)
def build_b(xtab, ytab_t, ix0, entry_term, entry_group, entry_i, entry_j, weight, b):
    """b[a, c, t] = sum_e [term(e) == t] weight[e] X[g_e, i_e, ix0 + a] Y[g_e, j_e, c] (b zeroed).

    ytab_t is Y transposed to (ny, ng, lmax+1), so the inner loop reads one row.
    Entries whose x factor vanishes on this plane (tight Gaussians far away) are dropped first.
    """
    na, ny = b.shape[0], b.shape[1]
    ne = entry_term.shape[0]
    for a in numba.prange(na):
        ix = ix0 + a
        wx = np.empty(ne)
        active = np.empty(ne, dtype=np.int64)
        nact = 0
        for e in range(ne):
            v = weight[e] * xtab[entry_group[e], entry_i[e], ix]
            if v != 0.0:
                wx[nact] = v
                active[nact] = e
                nact += 1
        for c in range(ny):
            for n in range(nact):
                e = active[n]
                b[a, c, entry_term[e]] += wx[n] * ytab_t[c, entry_group[e], entry_j[e]]


def lattice_tables(plan, lattice):
    """1-D tables of a rectilinear lattice: (X, Y, Z) each (ng, lmax+1, n), and screening bounds
    max_i |X| (ng, nx), max_j |Y| (ng, ny), max |Z| (ng,)."""
    lmax = int(plan.group_lmax.max()) if plan.group_lmax.size else 0
    c, a = plan.group_center, plan.group_exponent
    x, y, z = (axis_tables(coord, c[:, d], a, lmax) for d, coord in enumerate(lattice.coordinates_1d()))
    return (x, y, z, np.abs(x).max(axis=1), np.abs(y).max(axis=1), np.abs(z).max(axis=(1, 2)))


@numba.njit(parallel=True, cache=True)
def _ao_rows_kernel(
    xtab,
    ytab,
    ztab,
    row0,
    shell_l,
    shell_nprim,
    shell_prim_start,
    coefficients,
    prim_group,
    ao_loc,
    pure,
    c2s,
    c2s_loc,
    comp,
    comp_loc,
    xbound,
    ybound,
    zmax,
    threshold,
    out,
):
    """AO values of lattice rows row0.. (row = (ix, iy), all iz), from the 1-D tables (no exp).

    out: zeroed, AO-major (nao, nrow * nz).  phi_(ijk)(x, y, z) = sum_p c_p X_(g_p,i)(x)
    Y_(g_p,j)(y) Z_(g_p,k)(z): per shell and row the factors w = c_p X Y are formed once, then
    the innermost loop runs over z with unit stride.  A shell is skipped on a row when
    sum_p |c_p| max_i|X| max_j|Y| max|Z| 2^l (2l+1) < threshold.
    """
    ny, nz = ytab.shape[2], ztab.shape[2]
    nrow = out.shape[1] // nz
    nshell = shell_l.shape[0]
    for r in numba.prange(nrow):
        ix = (row0 + r) // ny
        iy = (row0 + r) % ny
        cart = np.empty((28, nz))
        z0 = r * nz
        for sh in range(nshell):
            l = shell_l[sh]
            p0 = shell_prim_start[sh]
            npr = shell_nprim[sh]
            bound = 0.0
            for q in range(npr):
                g = prim_group[p0 + q]
                bound += abs(coefficients[p0 + q]) * xbound[g, ix] * ybound[g, iy] * zmax[g]
            if bound * (2.0**l) * (2 * l + 1) < threshold:
                continue
            c0 = comp_loc[l]
            nc = comp_loc[l + 1] - c0
            a0 = ao_loc[sh]
            direct = not (pure and l >= 2)
            for n in range(nc):
                i, j, k = comp[c0 + n, 0], comp[c0 + n, 1], comp[c0 + n, 2]
                acc = cart[n]  # FP64 accumulation, stored in out's precision
                acc[:] = 0.0
                for q in range(npr):
                    g = prim_group[p0 + q]
                    wq = coefficients[p0 + q] * xtab[g, i, ix] * ytab[g, j, iy]
                    if wq != 0.0:
                        zrow = ztab[g, k]
                        for iz in range(nz):
                            acc[iz] += wq * zrow[iz]
                if direct:
                    row = out[a0 + n]
                    for iz in range(nz):
                        row[z0 + iz] = acc[iz]
            if not direct:
                ns = 2 * l + 1
                m0 = c2s_loc[l]
                for m in range(ns):
                    row = out[a0 + m]
                    for n in range(nc):
                        f = c2s[m0 + n * ns + m]
                        if f != 0.0:
                            for iz in range(nz):
                                row[z0 + iz] += f * cart[n, iz]


def ao_rows(plan, prepared, tables, row0, nrow, dtype=np.float64, threshold=1e-15):
    """AO values, AO-major (nao, nrow * nz), of lattice rows row0..row0+nrow-1 (C order of points)."""
    xtab, ytab, ztab, xbound, ybound, zmax = tables
    out = np.zeros((prepared.nao, nrow * ztab.shape[2]), dtype=dtype)
    _ao_rows_kernel(
        xtab,
        ytab,
        ztab,
        row0,
        prepared.shell_l,
        prepared.shell_nprim,
        prepared.shell_prim_start,
        prepared.coefficients,
        plan.prim_group,
        prepared.ao_loc,
        prepared.pure,
        prepared.c2s,
        prepared.c2s_loc,
        prepared.comp,
        prepared.comp_loc,
        xbound,
        ybound,
        zmax,
        threshold,
        out,
    )
    return out


def planes_per_slab(nterm, shape, dtype, b_bytes):
    """x planes per slab so that B (planes x ny x nterm values of dtype) stays within b_bytes."""
    nx, ny, _ = shape
    return max(1, min(nx, b_bytes // max(1, ny * nterm * np.dtype(dtype).itemsize)))


def separable_terms_bound(basis):
    """Upper bound of the separable expansion's rank terms: distinct (centre, exponent) x (lmax+1)."""
    rows = np.column_stack(
        [
            np.repeat(basis.shell_center, basis.shell_nprim, axis=0),
            np.concatenate([basis.shell_exponents(s) for s in range(basis.nshell)]),
        ]
    )
    return len(np.unique(rows, axis=0)) * (int(basis.max_l) + 1)
