"""hartree: Hartree-Fock and friends on CPUs and NVIDIA GPUs.

>>> import hartree
>>> mol = hartree.Molecule.from_xyz("examples/water.xyz")
>>> res = hartree.scf.run(mol, basis="cc-pvdz", method="rhf")

``import hartree`` itself loads only the version and the exceptions: ``hartree.Molecule``,
``hartree.scf``, ``hartree.mp2`` and ``hartree.linalg`` are imported the first time they are
used (PEP 562 module ``__getattr__``), so that a command or a script pays only for what it
uses (``hartree run`` does not load RI-MP2, scipy or the atomic code).  Each name maps to
one fixed module in :data:`_LAZY`; nothing else is looked up.
"""

import importlib

from ._version import __version__
from .errors import BasisError, ConvergenceError, DeviceError, HartreeError, InputError

#: Public names imported on first use: name -> (module, attribute or None for the module).
_LAZY = {
    "Molecule": ("hartree.molecule", "Molecule"),
    "scf": ("hartree.scf", None),
    "mp2": ("hartree.mp2", None),
    "linalg": ("hartree.linalg", None),
}

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


def __getattr__(name):
    """``hartree.Molecule``, ``hartree.scf``, ``hartree.mp2``, ``hartree.linalg`` on first use."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'hartree' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # later look-ups find it directly
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
