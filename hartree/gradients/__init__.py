"""hartree.gradients: analytic nuclear gradients of SCF energies.

>>> import hartree
>>> g = hartree.gradients.gradient(mol, basis="6-31g**", method="rhf")
>>> g.energy, g.gradient            # Eh, (natm, 3) Eh/bohr
>>> hartree.gradients.scf_gradient(scf_result)   # from a converged SCFResult
"""

from .result import GradientResult
from .scf_gradient import GRADIENT_SCF_DEFAULTS, gradient, scf_gradient

__all__ = ["GradientResult", "gradient", "scf_gradient", "GRADIENT_SCF_DEFAULTS"]
