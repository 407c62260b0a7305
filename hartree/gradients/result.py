"""The gradient result object: results only, no methods that compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class GradientResult:
    """Energy and nuclear gradient of one SCF determinant (atomic units).

    method      'rhf' | 'uhf' | 'rohf' | 'rks' | 'uks'
    energy      total energy, Eh (that of ``scf``)
    gradient    (natm, 3) dE/dR, Eh/bohr, atoms in the molecule's order
    components  dict of (natm, 3) arrays, Eh/bohr: nuclear_repulsion, one_electron
                (core Hamiltonian with the Hellmann-Feynman term, and overlap with the
                energy-weighted density), two_electron (Kohn-Sham: Coulomb and the exact
                exchange scaled by the functional's fraction), exchange_correlation
                (Kohn-Sham only: dE_xc/dR on the SCF's grid), vv10 (VV10 functionals
                only: dE_nlc/dR on the SCF's VV10 grid), dispersion (only with a
                dispersion correction: dE_disp/dR); they sum to ``gradient``
    scf         the converged :class:`hartree.scf.result.SCFResult` differentiated
    wall_time   seconds of the gradient alone (the SCF's time is in ``scf.wall_time``)
    device      where the derivative integrals ran, e.g. 'cpu (numba, 2 threads)'
    notes       sentences for the user (e.g. a GPU run whose gradient ran on the CPU)
    """

    method: str
    energy: float
    gradient: np.ndarray
    components: dict
    scf: Any
    wall_time: float
    device: str
    notes: tuple = field(default=())

    @property
    def molecule(self):
        """The molecule (``scf.molecule``), coordinates in bohr."""
        return self.scf.molecule

    def max_force(self) -> float:
        """Largest |dE/dR| component, Eh/bohr."""
        return float(np.max(np.abs(self.gradient)))

    def rms_force(self) -> float:
        """Root mean square of the gradient components, Eh/bohr."""
        return float(np.sqrt(np.mean(self.gradient**2)))
