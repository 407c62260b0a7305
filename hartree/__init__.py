"""hartree: Hartree-Fock and friends on CPUs and NVIDIA GPUs.

>>> import hartree
>>> mol = hartree.Molecule.from_xyz("examples/water.xyz")
>>> res = hartree.scf.run(mol, basis="cc-pvdz", method="rhf")
"""

from . import linalg, mp2, scf
from ._version import __version__
from .errors import BasisError, ConvergenceError, DeviceError, HartreeError, InputError
from .molecule import Molecule

__all__ = [
    "__version__",
    "Molecule",
    "scf",
    "mp2",
    "linalg",
    "HartreeError",
    "InputError",
    "BasisError",
    "ConvergenceError",
    "DeviceError",
]
