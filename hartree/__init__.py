"""hartree: Hartree-Fock and friends on CPUs and NVIDIA GPUs.

>>> import hartree
>>> mol = hartree.Molecule.from_xyz("examples/water.xyz")
>>> res = hartree.scf.run(mol, basis="cc-pvdz", method="rhf")
"""

__version__ = "0.1.0"

from .errors import HartreeError, InputError, BasisError, ConvergenceError, DeviceError  # noqa: E402
from .molecule import Molecule  # noqa: E402
from . import scf  # noqa: E402
from . import linalg, mp2  # noqa: E402
