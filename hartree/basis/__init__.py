"""hartree.basis: Gaussian basis sets as flat, immutable shell arrays.

>>> from hartree.basis import load_basis
>>> basis = load_basis(mol, "cc-pvdz")          # spherical, PySCF AO order
>>> basis.nao, basis.ao_loc, basis.ao_labels()[:3]
"""

from .angular import MAX_L, cart2sph, cart2sph_matrix, cart_components, ncart, nsph
from .loader import load_basis, resolve_basis_name
from .shells import Basis, gaussian_integral, normalized_coefficients, primitive_norm

__all__ = [
    "Basis",
    "load_basis",
    "resolve_basis_name",
    "cart2sph",
    "cart2sph_matrix",
    "cart_components",
    "ncart",
    "nsph",
    "MAX_L",
    "primitive_norm",
    "gaussian_integral",
    "normalized_coefficients",
]
