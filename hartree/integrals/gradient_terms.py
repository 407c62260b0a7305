"""The integral terms of an SCF gradient on the host, in the final AO basis: the
implementation behind ``one_electron_gradient`` and ``two_electron_gradient`` of
:class:`hartree.engine.IntegralEngine` (numba kernels of :mod:`.one_electron_deriv` and
:mod:`.eri_deriv`, which work on cartesian functions).

A final-basis density D enters the cartesian kernels as C D C^T
(:func:`hartree.basis.cart2sph_matrix`): sum_mn D_mn X_mn = sum_pq (C D C^T)_pq X_pq for
any integral X of the final functions m = sum_p C_pm p.
"""

from __future__ import annotations

import numpy as np

from hartree.basis import cart2sph_matrix
from hartree.integrals.eri_deriv import eri_gradient
from hartree.integrals.one_electron_deriv import one_electron_gradient


def to_cartesian(basis, dm) -> np.ndarray:
    """C D C^T for densities (..., nao, nao): (..., ncart, ncart)."""
    C = cart2sph_matrix(basis)
    return np.einsum("pi,...ij,qj->...pq", C, np.asarray(dm, dtype=np.float64), C, optimize=True)


def one_electron_term(molecule, basis, density, energy_weighted_density) -> np.ndarray:
    """sum D d(T + V)/dR - sum W dS/dR per atom, (natm, 3), hartree/bohr; the nuclei of V
    move with their atoms (Hellmann-Feynman term included).  density, energy_weighted_density:
    (nao, nao), symmetric."""
    return one_electron_gradient(
        basis,
        to_cartesian(basis, density),
        to_cartesian(basis, energy_weighted_density),
        molecule.numbers,
        molecule.coords,
        np.arange(molecule.natm),
        molecule.natm,
    )


def two_electron_term(
    molecule, basis, pairs, order, coulomb_density, exchange_densities, exchange_factor, threshold, omega=0.0
) -> np.ndarray:
    """1/2 sum Gamma d(mn|ls)/dR per atom, (natm, 3), hartree/bohr, with
    Gamma_mnls = DJ_mn DJ_ls - exchange_factor/2 sum_s (DK^s_ml DK^s_ns + DK^s_ms DK^s_nl) (RHF: DJ = D, DK = [D],
    factor 1/2; UHF and ROHF: DJ = Da + Db, DK = [Da, Db], factor 1); coulomb_density
    (nao, nao), exchange_densities (nset, nao, nao), symmetric; pairs, order: the basis's
    ShellPairs and their Schwarz order; threshold: hartree; omega (bohr^-1): 0 for 1/r12,
    > 0 for erf(omega r12)/r12 (:func:`hartree.integrals.eri_deriv.eri_gradient`)."""
    return eri_gradient(
        basis,
        pairs,
        order,
        to_cartesian(basis, coulomb_density),
        to_cartesian(basis, exchange_densities),
        exchange_factor,
        molecule.natm,
        threshold=threshold,
        omega=omega,
    )
