"""hartree.scf: RHF, UHF and ROHF (and Kohn-Sham RKS, UKS) with DIIS/ADIIS/EDIIS, SAD
guess, checkpoints.

>>> from hartree.scf import run
>>> res = run(mol, basis="cc-pvdz", method="uhf")       # raises ConvergenceError if not converged
>>> res.energy, res.converged, res.dipole, res.s_squared
>>> res = run(mol, basis="6-31g*", method="rks", xc="b3lyp")   # Kohn-Sham DFT, docs/dft.md

The pure function is ``kernel(molecule, basis, options, engine)``; ``run`` and the
``RHF/UHF/ROHF/RKS/UKS`` drivers wrap it.
"""

from .checkpoint import read_checkpoint, write_checkpoint
from .driver import RHF, RKS, ROHF, UHF, UKS, run
from .kernel import kernel
from .options import IterationRecord, SCFOptions
from .result import SCFResult

__all__ = [
    "SCFOptions",
    "IterationRecord",
    "SCFResult",
    "kernel",
    "run",
    "RHF",
    "UHF",
    "ROHF",
    "RKS",
    "UKS",
    "read_checkpoint",
    "write_checkpoint",
]
