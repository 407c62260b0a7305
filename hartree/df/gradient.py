"""The two-electron part of the analytic gradient of a density-fitted SCF energy (RI-J, RI-JK),
auxiliary-basis derivative terms included, written once for numpy and cupy (the engine's array
module: on a GPU engine everything below stays on the device).

With the fitted integrals (mn|ls) ~ sum_PQ (mn|P) W_PQ (Q|ls), W = V^-1 = M^T M (the metric
factor of :mod:`hartree.df.metric`, as the energy uses), the two-electron energy of
:mod:`hartree.integrals.eri_deriv` eq. (1) is

    E_2 = 1/2 d^T W d - k/2 sum_s sum_PQ W_PQ sum_abcd D^s_ac D^s_bd (ab|P)(cd|Q),
    d_P = sum_mn D_mn (mn|P)                                                             (1)

(D the total density; D^s the exchange densities, k the exchange factor: RHF D^s = D, k = 1/2;
UHF/ROHF D^s = D_alpha, D_beta, k = 1; Kohn-Sham k times the exact-exchange fraction).  Its
derivative at fixed densities (the density response is the energy-weighted density's, as for
exact integrals), with dW = -W dV W:

    dE_2/dR = sum_mnP Gamma_mnP d(mn|P)/dR + sum_PQ Gamma_PQ d(P|Q)/dR                     (2)
    Gamma_mnP = D_mn c_P - k sum_s (D^s zeta^P D^s)_mn,         c = W d,  zeta^P = sum_Q W_PQ (Q|.)
    Gamma_PQ  = -1/2 c_P c_Q + k/2 sum_s tr(D^s zeta^P D^s zeta^Q)

(RI-J: Weigend, Häser, Patzelt & Ahlrichs, Chem. Phys. Lett. 294, 143 (1998); RI-K: the
fitted exchange of Weigend, Phys. Chem. Chem. Phys. 4, 4285 (2002) differentiated the same
way; cf. Köppl & Werner, J. Chem. Theory Comput. 12, 3122 (2016)).  With D^s = U w U^T (eigen-decomposition,
as :class:`hartree.df.jk.FittedJK`) and Z^P = U^T zeta^P U, (k, k) per P:

    (D^s zeta^P D^s)_mn = sum_ij U_mi w_i Z^P_ij w_j U_nj,   tr(..) = sum_ij w_i w_j Z^P_ij Z^Q_ij   (3)

The integrals (mn|P) are computed once more in aux-shell batches (the engine's int3c2e) for d
and L^P = U^T (mn|P) U; Gamma_mnP is then built batch by batch for the engine's
``int3c2e_gradient`` (CPU: :func:`hartree.integrals.three_center_deriv.grad3c`; GPU: the
kernels of :mod:`hartree.gpu.eri3c_gradient`), so nothing of size nao^2 naux is held; the
arrays of size naux k^2 (L, Z) are.  With ``exact_k`` only J is fitted: the exchange part is
the exact-integral gradient of the wrapped engine (every omega of a range-separated hybrid).

Range-separated hybrids.  The SCF's exchange is sum_w c_w K(w) (:func:`hartree.scf.ks.exchange_terms`):
the w = 0 term is eq. (1)'s K with k c_0; each w != 0 (bohr^-1) is fitted on its own with the
attenuated integrals (mn|P)_w, (P|Q)_w = V^w and the factor of the energy
(:mod:`hartree.df.range_separated`), W^w = sum_(w_i > 1e-7) u_i u_i^T / w_i over the kept
eigenpairs (w_i, u_i) of V^w, and adds

    E_K^w = -k c_w/2 sum_s sum_PQ W^w_PQ sum_abcd D^s_ac D^s_bd (ab|P)_w (cd|Q)_w          (4)

which is eq. (1) without J (d = 0), with k c_w for k and the attenuated integrals: its
derivative is eqs. (2)-(3) with the same substitutions and the derivative integrals of the
operator (the engine's ``int3c2e_gradient``/``int2c2e_gradient`` with ``omega``).  For the
truncated W^w, at fixed rank (the eigenpairs' first-order changes dw_i = u_i^T dV u_i,
du_i = sum_(j != i) u_j (u_j^T dV u_i) / (w_i - w_j)),

    dW = -W dV W + sum_(i kept, j dropped) (u_i u_j^T + u_j u_i^T) (u_j^T dV u_i) / (w_i (w_i - w_j))   (5)

Eq. (2) takes the first term only, as for the full-rank 1/r12 metric (and as PySCF's
density-fitted gradient does with its truncated solver).  The second couples the kept
eigenvectors to the dropped ones, along which the fitted vectors have almost no component
(sum_ab C_ai C_bj (ab|P)_w, D = C C^T, of 1e-9 along the dropped u_j next to the threshold:
the kept ones fit the pair densities), and is divided by gaps w_i - w_j that vanish where an eigenvalue crosses the
threshold (where the truncated energy has no derivative).  Measured (water, wB97X, w = 0.3,
def2-universal-JKFIT: 34 of 113 eigenvectors dropped, some within a factor 2 of the
threshold): the second term, from the eigenpairs, would move the gradient by 1e-9 Eh/bohr
(STO-3G and def2-SVP); without it the gradient equals central differences of the fitted
long-range exchange energy at fixed density to 2e-10 Eh/bohr (h = 1e-4 bohr), and of the SCF
energy to 1.4e-7 (h = 1e-3, the h^2 error; tests/gradients/test_df_range_separated_gradient.py).

Order of the products: W^w has entries near 1e7 (1/w_i near the threshold), so Gamma_PQ is formed
as eq. (3) does, Z^P = sum_Q W_PQ L^Q first and then their products, never as W A W with
A_PQ = sum_s tr(D^s L^P D^s L^Q) formed first: A's rounding along the near-null eigenvectors,
amplified by W on both sides, moves that contraction by 1e-3 Eh/bohr (water / STO-3G; two
roundings of the same W^w, M^T M and U w^-1 U^T, then give different answers), while Z^P, like
the energy's M (mn|P), holds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hartree.arrays import to_numpy

from .metric import density_factors, padded_metric_factor
from .range_separated import truncated_metric_factor

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.engine import IntegralEngine

__all__ = ["fitted_two_electron_gradient"]

#: working memory of one Gamma_mnP / (mn|P) batch, bytes, at most: host, GPU
BLOCK_BYTES = 128 * 2**20
DEVICE_BLOCK_BYTES = 1024 * 2**20


def fitted_two_electron_gradient(
    engine: IntegralEngine,
    aux: Basis,
    coulomb_density: Any,
    exchange_densities: Any,
    exchange_factor: float,
    block_bytes: int | None = None,
    omega: float = 0.0,
) -> np.ndarray:
    """dE_2/dR of eq. (2), numpy (natm, 3), hartree/bohr: fitted J, and fitted K when
    ``exchange_factor`` != 0 (0: J only, e.g. for exact_k, whose K term the caller adds).

    engine: an engine on the orbital basis (its int2c2e, int3c2e and their gradients, in its
    array module); aux: the auxiliary Basis of the energy; coulomb_density (nao, nao) the total
    D, or None for no J (the long-range exchange alone); exchange_densities (nset, nao, nao)
    the D^s and exchange_factor k of eq. (1) (numpy or the engine's module); block_bytes: the
    size of one (mn|P) or Gamma_mnP aux-shell batch (at least one shell a batch; default
    BLOCK_BYTES on the host, DEVICE_BLOCK_BYTES on a GPU); omega (bohr^-1): the operator of
    the fit (0: 1/r12; else the attenuated fit of eq. (4), its truncated metric, eq. (5)).
    """
    from hartree.integrals.three_center import aux_shell_batches

    xp = engine.array_module()
    omega = float(omega)
    if block_bytes is None:
        block_bytes = BLOCK_BYTES if xp is np else DEVICE_BLOCK_BYTES
    basis = engine.basis
    nao, naux = int(basis.nao), int(aux.nao)
    k = float(exchange_factor)
    loc = np.asarray(aux.ao_loc)
    batches = aux_shell_batches(aux, max(1, int(block_bytes) // (8 * nao * nao)))
    with engine.use():
        dj = None if coulomb_density is None else xp.asarray(coulomb_density, dtype=np.float64)
        dk = xp.asarray(exchange_densities, dtype=np.float64).reshape(-1, nao, nao)
        factors = density_factors(xp, dk) if k else []
        v = xp.asarray(engine.int2c2e(aux, omega=omega), dtype=np.float64)
        if omega == 0.0:
            m = padded_metric_factor(xp, v)
        else:  # eq. (4)
            m, _ = truncated_metric_factor(xp, v)  # the energy's W^w; dW of eq. (5), its first term
        d = xp.zeros(naux)
        low = [xp.zeros((naux, u.shape[1], u.shape[1])) for u, _ in factors]  # L^P = U^T (mn|P) U
        for s0, s1 in batches:
            j3 = xp.asarray(engine.int3c2e(aux, (s0, s1), omega=omega), dtype=np.float64)  # (nao, nao, nP)
            p0, p1 = int(loc[s0]), int(loc[s1])
            if dj is not None:
                d[p0:p1] = xp.tensordot(dj, j3, axes=([0, 1], [0, 1]))
            for lp, (u, _) in zip(low, factors):
                half = xp.tensordot(u, j3, axes=(0, 0))  # (k, nao, nP)
                lp[p0:p1] = xp.matmul(half.transpose(2, 0, 1), u)  # (nP, k, k)
            del j3
        winv = m.T @ m
        c = winv @ d
        gamma2 = -0.5 * xp.outer(c, c)
        zs = []
        while low:
            lp = low.pop(0)
            w = factors[len(zs)][1]
            z = xp.tensordot(winv, lp, axes=(1, 0))  # Z^P = sum_Q W_PQ L^Q, (naux, k, k)
            del lp
            zw = z * w[None, :, None] * w[None, None, :]  # w_i Z^P_ij w_j
            gamma2 += 0.5 * k * zw.reshape(naux, -1) @ z.reshape(naux, -1).T  # eq. (3), trace term
            del z
            zs.append(zw)
        grad = np.asarray(
            to_numpy(engine.int2c2e_gradient(aux, 0.5 * (gamma2 + gamma2.T), omega=omega)), dtype=np.float64
        )
        for s0, s1 in batches:
            p0, p1 = int(loc[s0]), int(loc[s1])
            gamma = xp.zeros((nao, nao, p1 - p0)) if dj is None else dj[:, :, None] * c[None, None, p0:p1]
            for zw, (u, _) in zip(zs, factors):
                half = xp.tensordot(u, zw[p0:p1], axes=(1, 1))  # (nao, nP, k)
                gamma -= k * xp.matmul(half, u.T).transpose(0, 2, 1)  # eq. (3), (nao, nao, nP)
            grad += np.asarray(to_numpy(engine.int3c2e_gradient(aux, gamma, (s0, s1), omega=omega)), dtype=np.float64)
            del gamma
    return grad
