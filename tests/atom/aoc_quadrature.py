"""Independent check of atomic SCF energies: the textbook average-of-configuration energy

    E = Σ_a q_a I_a + Σ_a q_a(q_a-1)/2 [F0(aa) - g_a/(g_a-1) Σ_{k>0} c_k F^k(aa)]
        + Σ_{a<b} q_a q_b [F0(ab) - Σ_k c_k G^k(ab)]

(Slater; Grant for Dirac-Fock) evaluated from converged orbitals on a radial grid: P and Q
tabulated from the Gaussian expansion, one-electron terms by quadrature, Slater integrals
through Hartree Y^k potentials (cumulative Simpson).  Shares no integral code with the SCF
(only the function definitions and the angular 3j factors).
"""

import numpy as np
from scipy.integrate import cumulative_simpson, simpson

from hartree.atom.angular import blocks_for, exchange_coefficients
from hartree.atom.operators import radial_sets

X = np.linspace(np.log(1e-7), np.log(60.0), 40001)
R = np.exp(X)


def _tabulate(rset):
    """Values and r-derivatives of each function of a RadialSet on the grid: (n, npts) x 2."""
    val = np.zeros((rset.n, R.size))
    der = np.zeros((rset.n, R.size))
    for t, m in enumerate(rset.powers):
        e = np.exp(-np.outer(rset.zeta, R**2))
        val += rset.coef[:, t, None] * R**m * e
        der += rset.coef[:, t, None] * (m * R ** (m - 1) - 2 * rset.zeta[:, None] * R ** (m + 1)) * e
    return val, der


def _integrate(f):
    return simpson(f * R, x=X)


def _yk(rho, k):
    inner = cumulative_simpson(R**k * rho * R, x=X, initial=0.0)
    outer_total = cumulative_simpson(rho / R ** (k + 1) * R, x=X, initial=0.0)
    outer = outer_total[-1] - outer_total
    return inner / R ** (k + 1) + R**k * outer


def shells_from_result(result, z):
    """[(block, q, g, P, dP, Q, dQ)] of every occupied radial shell of an AtomResult."""
    blocks = blocks_for(len(result.exponents) - 1, result.relativistic)
    out = []
    for b, coef, occ in zip(blocks, result.coefficients, result.occupations):
        sets = radial_sets(b, result.exponents[b.l], result.light_speed)
        lv, ld = _tabulate(sets["L"])
        n = len(result.exponents[b.l])
        if b.relativistic:
            sv, sd = _tabulate(sets["S"])
        for a, q in enumerate(occ):
            p, dp = coef[:n, a] @ lv, coef[:n, a] @ ld
            if b.relativistic:
                qq, dq = coef[n:, a] @ sv, coef[n:, a] @ sd
            else:
                qq = dq = np.zeros_like(p)
            out.append((b, q, float(b.degeneracy), p, dp, qq, dq))
    return out


def aoc_energy(result, z):
    """The textbook average-of-configuration energy of the converged orbitals (Eh)."""
    c = result.light_speed
    shells = shells_from_result(result, z)
    energy = 0.0
    for b, q, _g, p, dp, qq, _dq in shells:
        if b.relativistic:  # ∫ V(P²+Q²) + 2c Q(P' + κP/r) - 2c² Q²   (point nucleus)
            one = _integrate(-z / R * (p * p + qq * qq) + 2 * c * qq * (dp + b.kappa * p / R) - 2 * c * c * qq * qq)
        else:
            one = _integrate(0.5 * dp * dp + 0.5 * b.l * (b.l + 1) * p * p / R**2 - z / R * p * p)
            one += 0.5 * R[0] * dp[0] ** 2  # [0, r_min]: P' of an s function tends to a constant
        energy += q * one
    for ia, (ba, qa, ga, pa, _, sa, _) in enumerate(shells):
        rho_a = pa * pa + sa * sa
        for ib in range(ia, len(shells)):
            bb, qb, gb, pb, _, sb, _ = shells[ib]
            rho_b = pb * pb + sb * sb
            f0 = _integrate(rho_a * _yk(rho_b, 0))
            coefs = exchange_coefficients(ba, bb)
            if ia == ib:
                ex = sum(ck * _integrate(rho_a * _yk(rho_a, k)) for k, ck in coefs if k > 0)
                energy += qa * (qa - 1) / 2 * (f0 - ga / (ga - 1) * ex)
            else:
                rho_ab = pa * pb + sa * sb
                ex = sum(ck * _integrate(rho_ab * _yk(rho_ab, k)) for k, ck in coefs)
                energy += qa * qb * (f0 - ex)
    return energy
