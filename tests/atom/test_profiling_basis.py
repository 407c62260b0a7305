"""The thesis' profiling basis (WTBS α=6.87e-2, β=1.83, δ=3.97, γ=0.78; exponents to 1.2e13).

Conditioning: the canonical orthogonalization works on the normalized overlap, so the
large and small component blocks, whose scales differ by ζ_max/c² ≈ 1e9, keep all their
functions; the one-electron Dirac spectrum of hydrogen-like Rn⁸⁵⁺ (point nucleus) then
approaches the exact Dirac energies E = c²[(1 + (Z/c)²/(n_r + γ)²)^{-1/2} - 1],
γ = sqrt(κ² - (Z/c)²).  Nonrelativistic SCF energies in the same WTBS approach the
numerical Hartree-Fock limits (Bunge, Barrientos, Bunge, Cogordan, PRA 46, 3691 (1992)).
"""

import math

import numpy as np
import pytest

from hartree.atom import WTBSParameters, make_nucleus, parse_nbs, run, wtbs_exponents
from hartree.atom.operators import build_one_electron
from hartree.atom.options import DEFAULT_LIGHT_SPEED
from hartree.atom.scf import _orthogonalizer

PROFILING = WTBSParameters(6.87e-2, 1.83, 3.97, 0.78)


def _exponents(n, letters):
    return wtbs_exponents([PROFILING], parse_nbs(",".join(f"{x}:1:{n}" for x in letters)))


def _dirac_exact(z, kappa, c, nr):
    gam = math.sqrt(kappa * kappa - (z / c) ** 2)
    return c * c * (1.0 / math.sqrt(1.0 + (z / c) ** 2 / (nr + gam) ** 2) - 1.0)


def test_hydrogen_like_radon_in_profiling_basis():
    z, c = 86, DEFAULT_LIGHT_SPEED
    ops = build_one_electron(_exponents(45, "sp"), make_nucleus(z), c, True)
    assert max(ops.s[0].diagonal()) / min(ops.s[0].diagonal()) > 1e8  # badly scaled
    tolerance = {"s1/2": 1e-4, "p1/2": 1e-5, "p3/2": 1e-5}
    for block, h, s in zip(ops.blocks, ops.h, ops.s):
        x = _orthogonalizer(s, 1e-14)
        assert x.shape == (90, 90)  # nothing dropped
        np.testing.assert_allclose(x.T @ s @ x, np.eye(90), atol=1e-9)
        e = np.linalg.eigvalsh(x.T @ h @ x)
        e = e[e > -c * c]
        for nr in range(2):  # the two lowest bound states of this κ
            exact = _dirac_exact(z, block.kappa, c, nr + (block.kappa > 0))
            assert 0 <= e[nr] - exact < tolerance[block.label] * (1 + 9 * nr), (block.label, nr)


@pytest.mark.parametrize("element,limit,tol", [("Kr", -2752.054977, 2e-5), ("Xe", -7232.138364, 2e-4)])
def test_nonrelativistic_profiling_basis_near_hf_limit(element, limit, tol):
    result = run(element, exponents=_exponents(30, "spd"), relativistic=False, device="cpu")
    assert result.converged
    assert 0 < result.energy - limit < tol


def test_refined_eigensolver_hydrogen_like_nonrelativistic():
    # Nonrelativistic Rn85+ in the n=45 profiling basis: ‖X^T h X‖ ~ 1e13 Eh (kinetic energy
    # of ζ = 1.2e13), so a plain eigh leaves residuals ~1e-3 and puts 1s *below* the exact
    # -Z²/2 (rounding); the cascade of refinements gives residuals ~1e-11 and variational energies.
    from hartree.atom.scf import _refined_eigh

    z = 86
    ops = build_one_electron(_exponents(45, "sp"), make_nucleus(z), DEFAULT_LIGHT_SPEED, False)
    for l, (h, s) in enumerate(zip(ops.h, ops.s)):
        e, c = _refined_eigh(h, _orthogonalizer(s, 1e-14), -np.inf)
        exact = -z * z / (2.0 * np.arange(l + 1, l + 4) ** 2)  # n = l+1 .. l+3
        assert np.all(e[:3] > exact) and np.all(e[:3] - exact < [1e-5, 1e-4, 1e-3])
        resid = c[:, :3].T @ (h @ c[:, :3] - s @ c[:, :3] * e[:3])
        assert np.abs(resid).max() < 1e-9
        np.testing.assert_allclose(c[:, :3].T @ s @ c[:, :3], np.eye(3), atol=1e-11)


def test_nonrelativistic_radon_n45_converges():
    # The thesis' profiling basis (7 symmetries nonrelativistically s..f, n = 45, ζ to 1.2e13):
    # with a single refinement stage the eigenvectors carried ~1e-6 noise (ε‖F‖/gap at the
    # window cut) and |ΔE| fluctuated at 1e-7 Eh forever; the cascade converges.  The energy
    # lies above the numerical HF limit -21866.772241 (Bunge et al. 1992) by the basis'
    # incompleteness, 2.34e-4 Eh (1.1e-8 relative).
    result = run("Rn", exponents=_exponents(45, "spdf"), relativistic=False, device="cpu", max_iterations=30)
    assert result.converged and result.iterations <= 20
    assert 2.0e-4 < result.energy - (-21866.772241) < 2.6e-4
    assert all(abs(h["delta_e"]) < 1e-9 for h in result.history[-2:])
