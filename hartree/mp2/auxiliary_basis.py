"""Auxiliary (RI / density-fitting) basis for MP2: default per orbital basis, and loading.

Defaults (basis-set-exchange names; RI-MP2 fitting sets, not the JK sets):

  cc-pVXZ, cc-pwCVXZ (+ aug-, -PP)  ->  the same name + "-RIFIT" (X = D, T, Q, 5, 6)
  def2-SVP, -SV(P), -TZVP, -TZVPP, -QZVP, -QZVPP (+ D) -> the same name + "-RIFIT";
      def2-mSVP/mTZVP(P) use the def2-SVP/TZVP(P) sets
  6-31G family without diffuse functions (6-31G, 6-31G*, 6-31G**, 6-31G(d,p))
      -> 6-31G**-RIFIT for H-Ar, def2-SVP-RIFIT for heavier elements
  6-311G family without diffuse functions -> 6-311G**-RIFIT for H-Ar, def2-TZVP-RIFIT beyond
  6-31+G*, 6-31++G** ... -> aug-cc-pVDZ-RIFIT;  6-311+G* ... -> aug-cc-pVTZ-RIFIT
  STO-3G, 3-21G -> def2-SVP-RIFIT

(PySCF's table maps 6-31G* to cc-pVDZ-RI; basis-set-exchange carries RIFIT sets fitted to the
Pople bases themselves, which we prefer where they exist.)  Other orbital bases need an
explicit ``aux``.  "def2-universal-jkfit" is a Coulomb/exchange fitting set, not for MP2.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from hartree.basis import Basis, load_basis
from hartree.errors import BasisError

if TYPE_CHECKING:
    from hartree.molecule import Molecule

__all__ = ["default_aux_name", "load_aux_basis"]

_LAST_POPLE_RIFIT_Z = 18  # 6-31G**-RIFIT and 6-311G**-RIFIT cover H-Ar


def _squash(name):
    return re.sub(r"[\s_\-]", "", name.lower())


def default_aux_name(orbital_basis_name: str, numbers: Collection[int] = ()) -> str | dict[str, str]:
    """Default auxiliary basis for an orbital basis name: a basis-set-exchange name, or a dict
    {element symbol or "default": name} when elements need different sets.

    numbers: atomic numbers present (only the Pople rule looks at them).
    Raises BasisError when there is no default (pass ``aux`` explicitly).
    """
    from hartree.constants import element_symbol

    s = _squash(orbital_basis_name)
    m = re.fullmatch(r"(aug)?ccp(wc)?v([dtq56])z(pp)?", s)
    if m:
        aug, wc, x, pp = m.groups()
        return f"{'aug-' if aug else ''}cc-p{'wC' if wc else ''}V{x.upper()}Z{'-PP' if pp else ''}-RIFIT"
    m = re.fullmatch(r"def2(m?)(sv\(p\)|svp|tzvpp|tzvp|qzvpp|qzvp)(d?)", s)
    if m:
        mflag, core, diffuse = m.groups()
        core = core.upper()
        if mflag and diffuse:
            raise BasisError(f"no default auxiliary basis for {orbital_basis_name!r}; pass aux")
        return f"def2-{core}{'D' if diffuse else ''}-RIFIT"
    if s in ("sto3g", "321g"):
        return "def2-SVP-RIFIT"
    m = re.fullmatch(r"6(31|311)(\+{0,2})g(\*{0,2}|\(.*\))", s)
    if m:
        triple = m.group(1) == "311"
        if m.group(2):
            return "aug-cc-pVTZ-RIFIT" if triple else "aug-cc-pVDZ-RIFIT"
        pople = "6-311G**-RIFIT" if triple else "6-31G**-RIFIT"
        heavy = "def2-TZVP-RIFIT" if triple else "def2-SVP-RIFIT"
        if all(z <= _LAST_POPLE_RIFIT_Z for z in numbers):
            return pople
        spec = {element_symbol(int(z)): pople for z in set(numbers) if z <= _LAST_POPLE_RIFIT_Z}
        spec["default"] = heavy
        return spec
    raise BasisError(
        f"no default auxiliary basis for orbital basis {orbital_basis_name!r}; "
        "pass one with aux= (e.g. 'cc-pvdz-rifit')"
    )


def load_aux_basis(molecule: Molecule, orbital_basis: Basis, aux: object = None) -> Basis:
    """The auxiliary Basis for ``molecule``: ``aux`` may be None (default for the orbital basis),
    a basis-set-exchange name, a file path, a per-element dict, or a Basis.  Spherical or
    cartesian as the orbital basis is."""
    if isinstance(aux, Basis):
        if aux.pure != orbital_basis.pure:
            raise BasisError("the auxiliary basis must be spherical/cartesian like the orbital basis")
        return aux
    if aux is None:
        aux = default_aux_name(orbital_basis.name, [int(z) for z in molecule.numbers])
    return load_basis(molecule, aux, cartesian=not orbital_basis.pure)
