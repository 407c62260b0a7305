"""One- and two-electron operators of an atom in l-blocked radial Gaussians.

Each symmetry block b (see :mod:`hartree.atom.angular`) has n_b radial functions, and
its supermatrix basis is (P_1..P_n) nonrelativistically or (P_1..P_n, Q_1..Q_n) for
Dirac-Fock with restricted kinetic balance (RKB, :func:`hartree.atom.radial.small_set`).
In that basis (Dyall's modified Dirac equation, energies relative to +c²):

    h = [[V, T], [T, W - T]]      S = [[S_LL, 0], [0, T/(2c²)]]

where V_ij = ∫P_i V P_j, T_ij = ½∫Q'_i Q'_j (Q' = 2c Q), W_ij = ∫Q_i V Q_j.  The
nonrelativistic block is h = T + V + l(l+1)/2r² (inside T), S = S_LL.

Two-electron part of the Fock supermatrix (the P supermatrix of the thesis, eq. 3.9,
written per component pair X, Y ∈ {L, S}):

    G^XX_b[p,q] += Σ_{b',Y} Σ_{rs} R^0(f^X_p f^X_q; f^Y_r f^Y_s) D^YY_{b'}[r,s]   (Coulomb)
    G^XY_b[p,q] -= Σ_{b'} Σ_k c_k(b,b') Σ_{rs} R^k(f^X_p f^X_r; f^Y_q f^Y_s) D^XY_{b'}[r,s]

with D_b = Σ_a q_a c_a c_a^T (the occupation q_a folded in, thesis eq. 3.6), the
coupling c_k from :func:`hartree.atom.angular.exchange_coefficients`, and r ∈ b', p ∈ b.
The exchange kernels are stored per block pair b ≤ b' as E^XY[(p,q),(r,s)] =
Σ_k c_k R^k(f^X_p f^X_r; f^Y_q f^Y_s) with the k-sum folded in (the thesis' X^1..X^8 idea),
so that each Fock contribution is one matrix-vector product.  Coulomb needs only the total radial density,
so R^0 is stored between the unique primitives r^n e^{-(ζ_p+ζ_q) r²} of all pair densities
(few, as every block draws on one WTBS pool): J = gather(R^0 · scatter(D)).
:class:`CPUTwoElectron` wraps this (numba) path behind the engine interface that
:class:`hartree.atom.gpu.DeviceTwoElectron` shares (``two_electron``, ``two_electron_block``,
``timings``, ``device``).
"""

import time
from dataclasses import dataclass

import numpy as np

from . import radial
from .angular import blocks_for, exchange_coefficients


@dataclass
class Operators:
    """Everything the SCF needs (numpy); the GPU engine (:mod:`hartree.atom.gpu`) builds its
    own two-electron matrices from ``sets`` and leaves coulomb/exchange None.

    blocks: tuple of Block; sizes: n_b; dims: supermatrix size per block (n_b or 2n_b);
    h, s: per-block (dim, dim) lists; v: per-block nuclear-attraction part of h;
    coulomb: (U, U) R^0 between the unique primitive pair densities r^n e^{-p r²} (U of them);
    coulomb_map: {(b, X): (index (n², T) into U, coefficient (n², T))}, the expansion of
    each pair density f^X_p f^X_q of block b in those primitives;
    exchange: {(b1, b2): {XY: (n1², n2²)}} for b1 ≤ b2, rows (p,q) ∈ b1, columns (r,s) ∈ b2:
    K^XY_b1[p,q] = Σ_rs E[(p,q),(r,s)] D^XY_b2[r,s], and the transpose for b2.
    sets: per block {'L': RadialSet, 'S': RadialSet} (the functions of the supermatrix basis).
    """

    blocks: tuple
    sizes: tuple
    dims: tuple
    relativistic: bool
    light_speed: float
    h: list
    s: list
    v: list
    coulomb: np.ndarray = None
    coulomb_map: dict = None
    exchange: dict = None
    sets: list = None

    @property
    def components(self):
        return ("L", "S") if self.relativistic else ("L",)

    def comp_slice(self, b, comp):
        n = self.sizes[b]
        return slice(0, n) if comp == "L" else slice(n, 2 * n)


def radial_sets(block, zeta, light_speed):
    """{'L': large set, 'S': small set} for a block (S only for Dirac-Fock)."""
    sets = {"L": radial.large_set(block.l, zeta)}
    if block.relativistic:
        sets["S"] = radial.small_set(block.l, block.kappa, zeta, 1.0 / (2.0 * light_speed))
    return sets


def one_electron(block, sets, nucleus, light_speed):
    """(h, s, v) supermatrices of one block (module docstring)."""
    big = sets["L"]
    t = radial.kinetic(block.l, big.zeta)
    v = radial.potential(big, big, nucleus)
    if not block.relativistic:
        return t + v, radial.overlap(big, big), v
    small = sets["S"]
    w = radial.potential(small, small, nucleus)  # already carries 1/(4c²)
    n = big.n
    h = np.zeros((2 * n, 2 * n))
    s = np.zeros((2 * n, 2 * n))
    vv = np.zeros((2 * n, 2 * n))
    h[:n, :n] = v
    h[:n, n:] = t
    h[n:, :n] = t
    h[n:, n:] = w - t
    s[:n, :n] = radial.overlap(big, big)
    s[n:, n:] = t / (2.0 * light_speed**2)
    vv[:n, :n] = v
    vv[n:, n:] = w
    return h, s, vv


def _is_pair(entry):
    """True for a per-κ entry (two exponent lists), False for one list of numbers."""
    return isinstance(entry, (tuple, list)) and len(entry) == 2 and all(np.ndim(x) == 1 for x in entry)


def block_exponents(exponents, relativistic):
    """Exponents per symmetry block (κ order of :func:`blocks_for`), 1-D float arrays.

    exponents: per l = 0..lmax either one 1-D list (shared by both κ of l, and the only
    form nonrelativistically) or a pair (j = l-1/2 list, j = l+1/2 list) for l ≥ 1.
    Returns (blocks, [array per block]).
    """
    from ..errors import InputError

    blocks = blocks_for(len(exponents) - 1, relativistic)
    out = []
    for b in blocks:
        entry = exponents[b.l]
        if _is_pair(entry):
            if not relativistic or b.l == 0:
                raise InputError(f"l = {b.l}: separate exponents per κ need Dirac-Fock and l ≥ 1")
            entry = entry[0] if b.kappa > 0 else entry[1]  # κ = l: j = l-1/2; κ = -l-1: j = l+1/2
        arr = np.asarray(entry, dtype=float)
        if arr.ndim != 1 or not arr.size:
            raise InputError(f"symmetry {b.label}: exponents must be a non-empty list of numbers")
        out.append(arr)
    return blocks, out


def build_one_electron(exponents, nucleus, light_speed, relativistic):
    """Operators with h, S, V and the radial sets only (two-electron fields None).

    exponents: per l (l = 0..lmax, bohr^-2): a 1-D array shared by both κ of l, or a
    pair of arrays (j = l-1/2, j = l+1/2), see :func:`block_exponents`.
    """
    blocks, per_block = block_exponents(exponents, relativistic)
    sets = [radial_sets(b, e, light_speed) for b, e in zip(blocks, per_block)]
    sizes = tuple(len(e) for e in per_block)
    dims = tuple(n * (2 if relativistic else 1) for n in sizes)
    h, s, v = [], [], []
    for b, st in zip(blocks, sets):
        hb, sb, vb = one_electron(b, st, nucleus, light_speed)
        h.append(hb)
        s.append(sb)
        v.append(vb)
    return Operators(blocks, sizes, dims, relativistic, light_speed, h, s, v, sets=sets)


def coulomb_primitives(ops):
    """Unique primitive pair densities of all same-component pairs and the map to them.

    Returns (unique (U, 2) [power n, exponent p], {(b, X): (index (n², T) into U,
    coefficient (n², T))}): the pair density f^X_p f^X_q of block b is
    Σ_t coef[pq, t] r^{n_u} e^{-p_u r²} with u = index[pq, t].  Exponents drawn from one
    WTBS pool repeat across blocks, so U is small.
    """
    keys = [(ib, x) for ib in range(len(ops.blocks)) for x in ops.components]
    pairs = {key: radial.PairSet(ops.sets[key[0]][key[1]], ops.sets[key[0]][key[1]]) for key in keys}
    prim_n = np.concatenate([np.repeat(pairs[k].powers[None, :], pairs[k].zeta.size, 0).ravel() for k in keys])
    prim_p = np.concatenate([np.repeat(pairs[k].zeta[:, None], pairs[k].powers.size, 1).ravel() for k in keys])
    # unique rows of (n, p), sorted by n then p (np.unique(axis=0) order, 5x faster)
    order = np.lexsort((prim_p, prim_n))
    sn, sp = prim_n[order], prim_p[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (sn[1:] != sn[:-1]) | (sp[1:] != sp[:-1])
    unique = np.stack([sn[new].astype(float), sp[new]], axis=1)
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    coulomb_map, start = {}, 0
    for k in keys:
        shape = pairs[k].coef.shape
        coulomb_map[k] = (inverse[start : start + shape[0] * shape[1]].reshape(shape), pairs[k].coef)
        start += shape[0] * shape[1]
    return unique, coulomb_map


def add_two_electron_(ops):
    """Fill ops.coulomb, ops.coulomb_map, ops.exchange (CPU, numba); returns ops."""
    unique, ops.coulomb_map = coulomb_primitives(ops)
    powers = np.unique(unique[:, 0]).astype(np.int64)
    groups = {}
    for n in powers:  # one PairSet-like group per power
        rows = np.nonzero(unique[:, 0] == n)[0]
        groups[n] = (rows, radial.PrimitiveSet(unique[rows, 1], n))
    coulomb = np.empty((len(unique), len(unique)))
    for i, ni in enumerate(powers):
        ri, gi = groups[ni]
        for nj in powers[i:]:
            rj, gj = groups[nj]
            block = radial.rk_matrix(gi, gi if ni == nj else gj, 0)
            coulomb[np.ix_(ri, rj)] = block
            coulomb[np.ix_(rj, ri)] = block.T
    ops.coulomb = coulomb

    # Exchange kernels with the k-sum folded in
    blocks, sets, sizes, comps = ops.blocks, ops.sets, ops.sizes, ops.components
    exchange = {}
    combos = (("L", "L"), ("L", "S"), ("S", "S")) if ops.relativistic else (("L", "L"),)
    for b1 in range(len(blocks)):
        for b2 in range(b1, len(blocks)):
            coefs = exchange_coefficients(blocks[b1], blocks[b2])
            cross = {x: radial.PairSet(sets[b1][x], sets[b2][x]) for x in comps}
            kernels = {}
            for x, y in combos:
                acc = np.zeros((cross[x].zeta.size, cross[y].zeta.size))
                for k, c in coefs:
                    acc += c * radial.rk_matrix(cross[x], cross[y], k)
                # reorder once to [(p,q),(r,s)]: the Fock contraction becomes a GEMV (eq. 3.9)
                n1, n2 = sizes[b1], sizes[b2]
                kernels[x + y] = np.ascontiguousarray(
                    acc.reshape(n1, n2, n1, n2).transpose(0, 2, 1, 3).reshape(n1 * n1, n2 * n2)
                )
            exchange[(b1, b2)] = kernels
    ops.exchange = exchange
    return ops


def build_operators(exponents, nucleus, light_speed, relativistic):
    """Operators (one- and two-electron, CPU) for exponents per l (bohr^-2)."""
    return add_two_electron_(build_one_electron(exponents, nucleus, light_speed, relativistic))


class CPUTwoElectron:
    """The CPU (numba) two-electron engine; same interface as :class:`hartree.atom.gpu.DeviceTwoElectron`."""

    device = "cpu"

    def __init__(self, ops):
        t0 = time.perf_counter()
        self.ops = ops if ops.exchange is not None else add_two_electron_(ops)
        self.timings = {"integrals": time.perf_counter() - t0}

    def two_electron(self, dms):
        t0 = time.perf_counter()
        out = two_electron(self.ops, dms)
        self.timings["fock"] = time.perf_counter() - t0
        return out

    def two_electron_block(self, b, dm):
        return two_electron_block(self.ops, b, dm)


def _coulomb_(ops, dms, keys, js):
    """Add the Coulomb matrices of the densities of ``keys`` ((b, X) pairs) to js[b][X, X].

    ρ_u = Σ D^XX_b[p,q] c[pq,t] over the primitives u(b,X,pq,t) (scatter), V = R⁰ ρ (one
    GEMV), J^X_b[p,q] = Σ_t c[pq,t] V[u(b,X,pq,t)] (gather).
    """
    rho = np.zeros(ops.coulomb.shape[0])
    for b, x in keys:
        idx, coef = ops.coulomb_map[(b, x)]
        sl = ops.comp_slice(b, x)
        rho += np.bincount(idx.ravel(), weights=(coef * dms[b][sl, sl].reshape(-1, 1)).ravel(), minlength=rho.size)
    pot = ops.coulomb @ rho
    for b, x in keys:
        idx, coef = ops.coulomb_map[(b, x)]
        sl = ops.comp_slice(b, x)
        n = ops.sizes[b]
        js[b][sl, sl] += (coef * pot[idx]).sum(axis=1).reshape(n, n)


def two_electron(ops, dms):
    """Coulomb and exchange supermatrices (J_b, K_b) for block densities dms[b] (dim, dim).

    The Fock supermatrix is F_b = h_b + J_b - K_b (module docstring).
    """
    js = [np.zeros((d, d)) for d in ops.dims]
    ks = [np.zeros((d, d)) for d in ops.dims]
    _coulomb_(ops, dms, list(ops.coulomb_map), js)
    for (b1, b2), kernels in ops.exchange.items():
        n1, n2 = ops.sizes[b1], ops.sizes[b2]
        for xy, kern in kernels.items():
            x, y = xy
            sx1, sy1 = ops.comp_slice(b1, x), ops.comp_slice(b1, y)
            sx2, sy2 = ops.comp_slice(b2, x), ops.comp_slice(b2, y)
            k1 = (kern @ dms[b2][sx2, sy2].ravel()).reshape(n1, n1)
            ks[b1][sx1, sy1] += k1
            if x != y:
                ks[b1][sy1, sx1] += k1.T
            if b1 != b2:
                k2 = (dms[b1][sx1, sy1].ravel() @ kern).reshape(n2, n2)
                ks[b2][sx2, sy2] += k2
                if x != y:
                    ks[b2][sy2, sx2] += k2.T
    return js, ks


def two_electron_block(ops, b, dm):
    """(J, K) of block b from a density dm of the same block only (intra-block integrals).

    Used for the same-shell correction of an open shell (average of configuration).
    """
    d = ops.dims[b]
    js, ks = np.zeros((d, d)), np.zeros((d, d))
    n = ops.sizes[b]
    dms = [None] * len(ops.dims)
    dms[b] = dm
    jl = [None] * len(ops.dims)
    jl[b] = js
    _coulomb_(ops, dms, [(b, x) for x in ops.components], jl)
    for xy, kern in ops.exchange[(b, b)].items():
        x, y = xy
        sx, sy = ops.comp_slice(b, x), ops.comp_slice(b, y)
        k1 = (kern @ dm[sx, sy].ravel()).reshape(n, n)
        ks[sx, sy] += k1
        if x != y:
            ks[sy, sx] += k1.T
    return js, ks
