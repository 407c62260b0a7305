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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hartree.arrays import to_numpy

from .metric import density_factors, padded_metric_factor

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.engine import IntegralEngine

__all__ = ["fitted_two_electron_gradient", "fitted_two_electron_term"]

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
) -> np.ndarray:
    """dE_2/dR of eq. (2), numpy (natm, 3), hartree/bohr: fitted J, and fitted K when
    ``exchange_factor`` != 0 (0: J only, e.g. for exact_k, whose K term the caller adds).

    engine: an engine on the orbital basis (its int2c2e, int3c2e and their gradients, in its
    array module); aux: the auxiliary Basis of the energy; coulomb_density (nao, nao) the total
    D; exchange_densities (nset, nao, nao) the D^s and exchange_factor k of eq. (1) (numpy or
    the engine's module); block_bytes: the size of one (mn|P) or Gamma_mnP aux-shell batch (at
    least one shell a batch; default BLOCK_BYTES on the host, DEVICE_BLOCK_BYTES on a GPU).
    """
    from hartree.integrals.three_center import aux_shell_batches

    xp = engine.array_module()
    if block_bytes is None:
        block_bytes = BLOCK_BYTES if xp is np else DEVICE_BLOCK_BYTES
    basis = engine.basis
    nao, naux = int(basis.nao), int(aux.nao)
    k = float(exchange_factor)
    loc = np.asarray(aux.ao_loc)
    batches = aux_shell_batches(aux, max(1, int(block_bytes) // (8 * nao * nao)))
    with engine.use():
        dj = xp.asarray(coulomb_density, dtype=np.float64)
        dk = xp.asarray(exchange_densities, dtype=np.float64).reshape(-1, nao, nao)
        factors = density_factors(xp, dk) if k else []
        m = padded_metric_factor(xp, xp.asarray(engine.int2c2e(aux), dtype=np.float64))
        d = xp.zeros(naux)
        low = [xp.zeros((naux, u.shape[1], u.shape[1])) for u, _ in factors]  # L^P = U^T (mn|P) U
        for s0, s1 in batches:
            j3 = xp.asarray(engine.int3c2e(aux, (s0, s1)), dtype=np.float64)  # (nao, nao, nP)
            p0, p1 = int(loc[s0]), int(loc[s1])
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
        grad = np.asarray(to_numpy(engine.int2c2e_gradient(aux, 0.5 * (gamma2 + gamma2.T))), dtype=np.float64)
        for s0, s1 in batches:
            p0, p1 = int(loc[s0]), int(loc[s1])
            gamma = dj[:, :, None] * c[None, None, p0:p1]
            for zw, (u, _) in zip(zs, factors):
                half = xp.tensordot(u, zw[p0:p1], axes=(1, 1))  # (nao, nP, k)
                gamma -= k * xp.matmul(half, u.T).transpose(0, 2, 1)  # eq. (3), (nao, nao, nP)
            grad += np.asarray(to_numpy(engine.int3c2e_gradient(aux, gamma, (s0, s1))), dtype=np.float64)
            del gamma
    return grad


def fitted_two_electron_term(
    engine: Any, coulomb_density: np.ndarray, exchange_densities: np.ndarray, exchange_factor: float, exchange: dict
) -> np.ndarray:
    """The two-electron gradient term of a density-fitted energy, (natm, 3), hartree/bohr, on
    a FittedEngine (:func:`as_fitted_engine`): eq. (2) with fitted K, or with ``exact_k``
    fitted J plus the exact-integral exchange gradient of the wrapped engine.

    exchange: {omega: c} of :func:`hartree.scf.ks.exchange_terms` ({0.0: 1.0} for
    Hartree-Fock); exchange_factor: the k of eq. (1) before c (RHF 1/2, UHF/ROHF 1)."""
    from hartree.errors import InputError

    exchange = {float(o): float(c) for o, c in exchange.items() if c != 0.0}
    if engine.exact_k:
        two = fitted_two_electron_gradient(engine.inner, engine.aux, coulomb_density, exchange_densities, 0.0)
        zeros = np.zeros_like(to_numpy(coulomb_density))
        for omega, c in exchange.items():
            two = two + np.asarray(
                to_numpy(engine.inner.two_electron_gradient(zeros, exchange_densities, exchange_factor * c, omega))
            )
        return two
    if set(exchange) - {0.0}:
        raise InputError("range-separated exchange with a density-fitted K has no gradient; use exact_k")
    k = exchange_factor * exchange.get(0.0, 0.0)
    return fitted_two_electron_gradient(engine.inner, engine.aux, coulomb_density, exchange_densities, k)
