"""The J/K fitting (auxiliary) basis of a density-fitted SCF: the default per orbital basis,
and loading.

Defaults (basis-set-exchange names; Coulomb/exchange fitting sets, not the RI-MP2 ones of
:mod:`hartree.mp2.auxiliary_basis`):

  def2 family (def2-SVP, def2-TZVP(P)(D), def2-QZVP(P), def2-mSVP, ...)  ->  def2-universal-JKFIT
      (Weigend, J. Comput. Chem. 29, 167 (2008): one fitting set for the whole family)
  cc-pVXZ, aug-cc-pVXZ with X = T, Q, 5  ->  cc-pVXZ-JKFIT (Weigend, Phys. Chem. Chem. Phys. 4,
      4285 (2002)) for the elements it covers (H, B-F, Al-Cl, Ga-Br), def2-universal-JKFIT
      for the others
  everything else (cc-pVDZ: the Basis Set Exchange has no cc-pVDZ-JKFIT; Pople bases,
      STO-3G, ...)  ->  def2-universal-JKFIT

def2-universal-JKFIT covers H-Rn (Z <= 86); a heavier element needs an explicit auxiliary
basis (BasisError naming it).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from hartree.basis import Basis, load_basis
from hartree.errors import BasisError

if TYPE_CHECKING:
    from hartree.molecule import Molecule

__all__ = ["UNIVERSAL_JKFIT", "default_jk_aux_name", "load_jk_aux", "result_aux_basis"]

#: the fitting set of the def2 family, and the fallback
UNIVERSAL_JKFIT = "def2-universal-JKFIT"
#: the last element def2-universal-JKFIT covers (Rn)
_UNIVERSAL_LAST_Z = 86
#: elements of cc-pVTZ/QZ/5Z-JKFIT in the Basis Set Exchange (H, B-F, Al-Cl, Ga-Br;
#: tests/scf/test_density_fitting.py checks it against the installed basis_set_exchange)
CC_JKFIT_ELEMENTS = frozenset([1, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 31, 32, 33, 34, 35])


def _squash(name):
    return re.sub(r"[\s_\-]", "", str(name).lower())


def default_jk_aux_name(orbital_basis_name: str, numbers: Collection[int] = ()) -> str | dict[str, str]:
    """The default J/K fitting basis for an orbital basis name (module docstring): a
    basis-set-exchange name, or {element symbol: name, "default": name} when the elements
    present (atomic ``numbers``) need different sets.  BasisError naming the element for
    one beyond def2-universal-JKFIT's reach."""
    from hartree.constants import element_symbol

    heavy = sorted({int(z) for z in numbers if int(z) > _UNIVERSAL_LAST_Z})
    if heavy:
        raise BasisError(
            f"no default density-fitting basis for element {element_symbol(heavy[0])} "
            f"({UNIVERSAL_JKFIT} ends at Rn); name one with --density-fitting AUX"
        )
    m = re.fullmatch(r"(aug)?ccpv([tq5])z", _squash(orbital_basis_name))
    if not m:
        return UNIVERSAL_JKFIT
    cc = f"cc-pV{m.group(2).upper()}Z-JKFIT"
    present = {int(z) for z in numbers}
    if present <= CC_JKFIT_ELEMENTS:
        return cc
    spec = {element_symbol(z): cc for z in sorted(present & CC_JKFIT_ELEMENTS)}
    spec["default"] = UNIVERSAL_JKFIT
    return spec


def load_jk_aux(molecule: Molecule, orbital_basis: Basis, aux: object = True) -> Basis:
    """The J/K fitting Basis for ``molecule``: ``aux`` True or None (the default for the
    orbital basis), a basis-set-exchange name, a file path, a per-element dict, or a Basis.
    Spherical or cartesian as the orbital basis is.  BasisError (one line) when it cannot
    be loaded."""
    if isinstance(aux, Basis):
        if aux.pure != orbital_basis.pure:
            raise BasisError("the density-fitting basis must be spherical/cartesian like the orbital basis")
        return aux
    if aux is None or aux is True:
        aux = default_jk_aux_name(orbital_basis.name, [int(z) for z in molecule.numbers])
    try:
        return load_basis(molecule, aux, cartesian=not orbital_basis.pure)
    except BasisError as error:
        raise BasisError(f"density-fitting basis: {error}") from None


def result_aux_basis(result, engine: object = None) -> Basis:
    """The auxiliary Basis of a density-fitted SCFResult: the FittedEngine's when ``engine``
    is one, else loaded again from ``result.density_fitting['aux_basis']`` (a name or path)."""
    from hartree.errors import InputError

    aux = getattr(engine, "aux", None)
    if aux is not None:
        return aux
    name = result.density_fitting.get("aux_basis")
    try:
        return load_jk_aux(result.molecule, result.basis, name)
    except BasisError:
        raise InputError(
            f"the density-fitting basis {name!r} of this result cannot be loaded again; "
            "pass its FittedEngine to scf_gradient"
        ) from None
