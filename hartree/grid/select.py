"""Orbital selection by name: ``homo``, ``lumo``, ``homo-N``, ``lumo+N``, numbers, spins.

Grammar of one item (case-insensitive), items separated by commas::

    [alpha: | beta: | a: | b:] ( homo[-N] | lumo[+N] | N )

N alone is a 1-based orbital number in energy order (the numbering of Molden and
cube files).  Without a spin prefix an unrestricted wavefunction means alpha.
For restricted wavefunctions, per-spin occupations are min(occ, 1) (alpha) and
occ - alpha (beta), so ``homo`` of ROHF is the highest singly occupied orbital
and ``beta:homo`` the highest doubly occupied one.
"""

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

_ITEM = re.compile(r"^(?:(alpha|beta|a|b):)?(?:(homo)(?:-(\d+))?|(lumo)(?:\+(\d+))?|(\d+))$")


@dataclass(frozen=True)
class OrbitalChoice:
    """One selected orbital: ``label`` for file names, ``spin`` 0/1, 0-based ``index``."""

    label: str
    spin: int
    index: int

    @property
    def number(self):
        """1-based orbital number (cube files, Molden)."""
        return self.index + 1


def spin_occupations(mo_occ):
    """(2, nmo) per-spin occupations from restricted (nmo,) or unrestricted (2, nmo) ones."""
    occ = np.asarray(mo_occ, dtype=float)
    if occ.ndim == 2:
        return occ
    alpha = np.minimum(occ, 1.0)
    return np.stack([alpha, np.clip(occ - alpha, 0.0, None)])


def _homo(occ_spin, spin_name):
    occupied = np.flatnonzero(occ_spin > 1e-8)
    if occupied.size == 0:
        raise InputError(f"there is no occupied {spin_name} orbital")
    return int(occupied[-1])


def select_orbitals(spec, mo_occ):
    """Parse a selection like "homo,lumo,homo-1,beta:lumo+2,12" -> list of OrbitalChoice.

    mo_occ: restricted (nmo,) or unrestricted (2, nmo) occupations.  Raises
    InputError for unknown names or orbitals outside 1..nmo.
    """
    occ = np.asarray(mo_occ, dtype=float)
    unrestricted = occ.ndim == 2
    per_spin = spin_occupations(occ)
    nmo = per_spin.shape[1]
    choices = []
    for raw in str(spec).split(","):
        item = raw.strip().lower().replace(" ", "")
        if not item:
            continue
        match = _ITEM.match(item)
        if not match:
            raise InputError(
                f"cannot understand orbital {raw.strip()!r}; use homo, lumo, homo-N, "
                "lumo+N, an orbital number, with an optional alpha:/beta: prefix"
            )
        prefix, homo, minus, lumo, plus, number = match.groups()
        spin = 1 if prefix in ("beta", "b") else 0
        spin_name = "beta" if spin else "alpha"
        if homo:
            index = _homo(per_spin[spin], spin_name) - int(minus or 0)
            label = "homo" + (f"-{int(minus)}" if minus and int(minus) else "")
        elif lumo:
            index = _homo(per_spin[spin], spin_name) + 1 + int(plus or 0)
            label = "lumo" + (f"+{int(plus)}" if plus and int(plus) else "")
        else:
            index = int(number) - 1
            label = f"mo{int(number)}"
        if not 0 <= index < nmo:
            raise InputError(f"orbital {raw.strip()!r} is orbital {index + 1}, outside 1..{nmo}")
        if prefix and (unrestricted or spin == 1):
            label = f"{spin_name}_{label}"
        choices.append(OrbitalChoice(label=label, spin=spin if unrestricted else 0, index=index))
    if not choices:
        raise InputError("no orbital was selected")
    return choices
