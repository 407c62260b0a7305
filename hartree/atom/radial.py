"""Closed-form radial integrals over functions r^m e^{-ζ r²} (atomic Dirac-Fock).

A *radial set* holds n functions φ_i(r) = Σ_t coef[i, t] r^{powers[t]} e^{-ζ_i r²};
φ is r times the radial factor of the orbital (the P(r) or Q(r) of Grant's radial
Dirac equations), so overlaps are plain ∫_0^∞ φ_i φ_j dr.  Large components are
P_i = N_i r^{l+1} e^{-ζ_i r²}; with restricted kinetic balance the small components are
Q_i = (d/dr + κ/r) P_i / (2c) = N_i/(2c) [(l+1+κ) r^l - 2ζ_i r^{l+2}] e^{-ζ_i r²}
(I. P. Grant, *Relativistic Quantum Theory of Atoms and Molecules*, ch. 5-6).

Two-electron radial integrals (Slater integrals over products of two functions each)

    R^k(n1, p1; n2, p2) = ∫∫ r1^{n1} e^{-p1 r1²} r2^{n2} e^{-p2 r2²} r<^k / r>^{k+1} dr1 dr2

are summed from the two regions r1 < r2 and r1 > r2.  Substituting r1 = t r2 and
t = tan θ · √(p2/p1) turns the region r1 < r2 into a regularized incomplete beta
function I_x(a, b) with a = (n1+k+1)/2 (half-integer) and b = (n2-k)/2 (a positive
integer, by the parity and triangle rules of the angular coupling), which is the finite
sum of positive terms  I_x(a, b) = x^a Σ_{j<b} (a)_j / j! (1-x)^j, so that

    R_< = Γ(a) Γ(b) / (4 p2^b (p1+p2)^a) Σ_{j=0}^{b-1} (a)_j/j! (p2/(p1+p2))^j      (R1)

with no cancellation, whatever the ratio of the exponents.  The other region is (R1)
with 1 <-> 2.
"""

import math

import numba
import numpy as np

from .nucleus import potential_moment


class RadialSet:
    """n radial functions sharing a power pattern: φ_i = Σ_t coef[i,t] r^powers[t] e^{-ζ_i r²}.

    zeta: (n,) bohr^-2; powers: (T,) int; coef: (n, T).
    """

    __slots__ = ("zeta", "powers", "coef")

    def __init__(self, zeta, powers, coef):
        self.zeta = np.ascontiguousarray(zeta, dtype=np.float64)
        self.powers = np.ascontiguousarray(powers, dtype=np.int64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64).reshape(len(self.zeta), len(self.powers))

    @property
    def n(self):
        return len(self.zeta)


def gaussian_moment(m, p):
    """∫_0^∞ r^m e^{-p r²} dr = Γ((m+1)/2) / (2 p^{(m+1)/2})."""
    a = 0.5 * (m + 1)
    return math.gamma(a) / (2.0 * np.asarray(p, dtype=float) ** a)


def norms(l, zeta):
    """N_i = 1/sqrt(∫ r^{2l+2} e^{-2ζ_i r²} dr), normalizing r^{l+1} e^{-ζ r²}."""
    return 1.0 / np.sqrt(gaussian_moment(2 * l + 2, 2.0 * np.asarray(zeta, dtype=float)))


def large_set(l, zeta):
    """Normalized large-component functions P_i = N_i r^{l+1} e^{-ζ_i r²}."""
    return RadialSet(zeta, [l + 1], norms(l, zeta)[:, None])


def small_set(l, kappa, zeta, scale):
    """Kinetically balanced small components scale·(d/dr + κ/r) P_i.

    scale = 1/(2c) for Dirac-Fock; scale = 1 gives the functions whose overlap is 2T.
    κ = -(l+1) (j = l+1/2): Q_i = -2ζ_i N_i r^{l+2}; κ = l (j = l-1/2):
    Q_i = N_i [(2l+1) r^l - 2ζ_i r^{l+2}].
    """
    zeta = np.asarray(zeta, dtype=float)
    nrm = norms(l, zeta) * scale
    if kappa < 0:
        return RadialSet(zeta, [l + 2], (-2.0 * zeta * nrm)[:, None])
    return RadialSet(zeta, [l, l + 2], np.stack([(l + 1 + kappa) * nrm, -2.0 * zeta * nrm], axis=1))


def overlap(a, b):
    """(n_a, n_b) matrix ∫ φ^a_i φ^b_j dr."""
    p = a.zeta[:, None] + b.zeta[None, :]
    out = np.zeros_like(p)
    for t, pa in enumerate(a.powers):
        for u, pb in enumerate(b.powers):
            out += np.outer(a.coef[:, t], b.coef[:, u]) * gaussian_moment(pa + pb, p)
    return out


def potential(a, b, nucleus):
    """(n_a, n_b) matrix ∫ φ^a_i V(r) φ^b_j dr for the nuclear potential V."""
    p = a.zeta[:, None] + b.zeta[None, :]
    out = np.zeros_like(p)
    for t, pa in enumerate(a.powers):
        for u, pb in enumerate(b.powers):
            out += np.outer(a.coef[:, t], b.coef[:, u]) * potential_moment(nucleus, int(pa + pb), p)
    return out


def kinetic(l, zeta):
    """Nonrelativistic kinetic matrix T_ij = <χ_i| -∇²/2 |χ_j> for normalized χ ~ r^l e^{-ζr²} Y_lm.

    Uses T = ½ ∫ (P_i' + κP_i/r)(P_j' + κP_j/r) dr, valid for either κ of l because
    κ(κ+1) = l(l+1) (integration by parts of the cross term).
    """
    q = small_set(l, -(l + 1), zeta, 1.0)
    return 0.5 * overlap(q, q)


class PairSet:
    """Products φ^a_i φ^b_j of two radial sets, flattened over (i, j) (row-major).

    zeta: (n_a n_b,) summed exponents; powers: (T_a T_b,); coef: (n_a n_b, T_a T_b).
    """

    __slots__ = ("zeta", "powers", "coef", "shape")

    def __init__(self, a, b):
        self.shape = (a.n, b.n)
        self.zeta = (a.zeta[:, None] + b.zeta[None, :]).ravel()
        self.powers = (a.powers[:, None] + b.powers[None, :]).ravel()
        self.coef = np.einsum("it,ju->ijtu", a.coef, b.coef).reshape(a.n * b.n, -1)


#: Γ(m + 1/2) for m = 0..63 and (m)! for m = 0..63: the only gamma values (R1) needs
_GAMMA_HALF = np.array([math.gamma(m + 0.5) for m in range(64)])
_FACTORIAL = np.array([math.gamma(m + 1.0) for m in range(64)])


class PrimitiveSet:
    """Single primitives r^n e^{-p_I r²} with one power n: the PairSet interface of rk_matrix."""

    __slots__ = ("zeta", "powers", "coef")

    def __init__(self, p, n):
        self.zeta = np.ascontiguousarray(p, dtype=np.float64)
        self.powers = np.array([int(n)], dtype=np.int64)
        self.coef = np.ones((self.zeta.size, 1))


@numba.njit(cache=True)
def _region(n1, p1, n2, p2, k, s, sqrt_s):
    """One region of R^k (r1 < r2), eq. (R1) of the module docstring, s = p1 + p2.

    a = m + 1/2 with m = (n1+k)/2, b = (n2-k)/2; Γ values come from tables.
    """
    m = (n1 + k) // 2
    b = (n2 - k) // 2
    a = m + 0.5
    y = p2 / s
    term = 1.0
    total = 1.0
    for j in range(1, b):
        term *= (a + j - 1.0) / j * y
        total += term
    return _GAMMA_HALF[m] * _FACTORIAL[b - 1] * total / (4.0 * p2**b * s**m * sqrt_s)


@numba.njit(cache=True)
def rk_prim(n1, p1, n2, p2, k):
    """R^k(n1, p1; n2, p2), module docstring; n1 - k and n2 - k even and ≥ 2."""
    s = p1 + p2
    sqrt_s = math.sqrt(s)
    return _region(n1, p1, n2, p2, k, s, sqrt_s) + _region(n2, p2, n1, p1, k, s, sqrt_s)


def _rk_matrix_body(z1, w1, c1, z2, w2, c2, k, symmetric, out):
    """out[I, J] = Σ_tu c1[I,t] c2[J,u] R^k(w1[t], z1[I]; w2[u], z2[J]).

    symmetric: both pair sets are the same, so only J ≥ I is computed and mirrored.
    """
    n1 = z1.shape[0]
    n2 = z2.shape[0]
    for i in numba.prange(n1):
        j0 = i if symmetric else 0
        for j in range(j0, n2):
            acc = 0.0
            for t in range(w1.shape[0]):
                ct = c1[i, t]
                if ct == 0.0:
                    continue
                for u in range(w2.shape[0]):
                    acc += ct * c2[j, u] * rk_prim(w1[t], z1[i], w2[u], z2[j], k)
            out[i, j] = acc
            if symmetric:
                out[j, i] = acc


# one body, two compilations: threads pay off only for large blocks (thread start-up costs
# ~ms on a loaded machine, more than a small block takes)
_rk_matrix_parallel = numba.njit(parallel=True, cache=True)(_rk_matrix_body)
_rk_matrix_serial = numba.njit(cache=True)(_rk_matrix_body)
_PARALLEL_MIN = 100_000  # matrix elements


def rk_matrix(pa, pb, k):
    """(len(pa), len(pb)) matrix of R^k between the pair densities of two PairSets.

    Passing the same PairSet object twice computes only one triangle (R^k is symmetric).
    """
    out = np.empty((pa.zeta.shape[0], pb.zeta.shape[0]))
    kernel = _rk_matrix_parallel if out.size >= _PARALLEL_MIN else _rk_matrix_serial
    kernel(pa.zeta, pa.powers, pa.coef, pb.zeta, pb.powers, pb.coef, int(k), pa is pb, out)
    return out
