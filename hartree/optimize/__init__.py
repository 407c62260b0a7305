"""hartree.optimize: geometry optimization by geomeTRIC on hartree's analytic SCF gradients.

>>> from hartree.optimize import optimize
>>> res = optimize(mol, basis="6-31g**", method="rhf")      # convergence="gau" by default
>>> res.converged, res.energy, res.molecule                  # Eh; final geometry in bohr
>>> res.energies, res.trajectory, res.gradients              # one entry per step
>>> optimize(mol, "def2-svp", "rks", xc="b3lyp", grid_level=3)   # Kohn-Sham DFT

geomeTRIC (``pip install 'hartree[opt]'``) is imported only when an optimization runs.
"""

from .criteria import CONVERGENCE_SETS, COORDINATE_SYSTEMS, ConvergenceCriteria
from .driver import DEFAULT_MAX_STEPS, GRADIENT_METHODS, optimize
from .result import OptimizationResult, OptimizationStep

__all__ = [
    "optimize",
    "OptimizationResult",
    "OptimizationStep",
    "ConvergenceCriteria",
    "CONVERGENCE_SETS",
    "COORDINATE_SYSTEMS",
    "DEFAULT_MAX_STEPS",
    "GRADIENT_METHODS",
]
