"""Nuclear masses of the vibrational analysis (unified atomic mass units, u = Da).

Default: the mass of each element's most abundant isotope (for elements without a stable
isotope, the isotope NIST lists for the element), the convention of Gaussian, Psi4 and
ORCA.  Values: NIST "Atomic Weights and Isotopic Compositions with Relative Atomic
Masses" (Coursey, Schwab, Tsai & Dragoset), as tabulated by qcelemental 0.51
(``qcelemental.periodictable.to_mass``, H..Ts); Og is 294Og from the same NIST table.
tests/vibrations/test_masses.py checks every entry against qcelemental.

PySCF's ``hessian.thermo`` uses isotope-averaged standard atomic weights instead (H 1.008,
O 15.999): compare with it only at equal masses.

Isotopic substitution on the command line (``--masses``, :func:`masses_from_text`):
comma-separated items, each ``ATOM:MASS`` (ATOM the 1-based atom number as printed in
the tables) or ``SYMBOL=MASS`` (every atom of that element); MASS is a number in u or
``D`` / ``T`` (2H, 3H).  Items are applied left to right, so ``H=D,3:1.00782503223``
deuterates every hydrogen except atom 3.
"""

from __future__ import annotations

import numpy as np

from ..constants import MAX_Z, atomic_number, element_symbol
from ..errors import InputError

#: Mass (u) of the most abundant isotope of each element, indexed by atomic number
#: (index 0 is a placeholder); sources in the module docstring.
# fmt: off
ISOTOPE_MASSES = (
    0.0,
    1.00782503223, 4.00260325413, 7.0160034366, 9.012183065, 11.00930536,  # H-B
    12.0, 14.00307400443, 15.99491461957, 18.99840316273, 19.9924401762,  # C-Ne
    22.989769282, 23.985041697, 26.98153853, 27.97692653465, 30.97376199842,  # Na-P
    31.9720711744, 34.968852682, 39.9623831237, 38.9637064864, 39.962590863,  # S-Ca
    44.95590828, 47.94794198, 50.94395704, 51.94050623, 54.93804391,  # Sc-Mn
    55.93493633, 58.93319429, 57.93534241, 62.92959772, 63.92914201,  # Fe-Zn
    68.9255735, 73.921177761, 74.92159457, 79.9165218, 78.9183376,  # Ga-Br
    83.9114977282, 84.9117897379, 87.9056125, 88.9058403, 89.9046977,  # Kr-Zr
    92.906373, 97.90540482, 97.9072124, 101.9043441, 102.905498,  # Nb-Rh
    105.9034804, 106.9050916, 113.90336509, 114.903878776, 119.90220163,  # Pd-Sn
    120.903812, 129.906222748, 126.9044719, 131.9041550856, 132.905451961,  # Sb-Cs
    137.905247, 138.9063563, 139.9054431, 140.9076576, 141.907729,  # Ba-Nd
    144.9127559, 151.9197397, 152.921238, 157.9241123, 158.9253547,  # Pm-Tb
    163.9291819, 164.9303288, 165.9302995, 168.9342179, 173.9388664,  # Dy-Yb
    174.9407752, 179.946557, 180.9479958, 183.95093092, 186.9557501,  # Lu-Re
    191.961477, 192.9629216, 194.9647917, 196.96656879, 201.9706434,  # Os-Hg
    204.9744278, 207.9766525, 208.9803991, 208.9824308, 209.9871479,  # Tl-At
    222.0175782, 223.019736, 226.0254103, 227.0277523, 232.0380558,  # Rn-Th
    231.0358842, 238.0507884, 237.0481736, 244.0642053, 243.0613813,  # Pa-Am
    247.0703541, 247.0703073, 251.0795886, 252.08298, 257.0951061,  # Cm-Fm
    258.0984315, 259.10103, 266.11983, 267.12179, 268.12567,  # Md-Db
    271.13393, 270.13336, 269.13375, 278.15631, 281.16451,  # Sg-Ds
    282.16912, 285.17712, 286.18221, 289.19042, 289.19363,  # Rg-Mc
    293.20449, 294.21046, 294.21392,  # Lv-Og
)
# fmt: on

#: Named isotopes accepted as a MASS in ``--masses`` (u; NIST, as qcelemental gives them).
NAMED_ISOTOPES = {"D": 2.01410177812, "T": 3.0160492779}

#: Smallest and largest mass (u) accepted for a nucleus: a positron-like 0.0005 u or a
#: mass above any nucleus is a typing error.
MASS_RANGE = (0.001, 1000.0)


def default_masses(numbers) -> np.ndarray:
    """(natm,) most-abundant-isotope masses (u) for atomic numbers ``numbers``."""
    z = np.asarray(numbers, dtype=np.int64).ravel()
    if z.size and (z.min() < 1 or z.max() > MAX_Z):
        raise InputError(f"no mass for atomic number outside 1..{MAX_Z}")
    return np.array([ISOTOPE_MASSES[int(k)] for k in z], dtype=np.float64)


def check_masses(masses, natm) -> np.ndarray:
    """``masses`` as a float64 (natm,) array in u; InputError unless every entry is a finite
    number in :data:`MASS_RANGE`."""
    try:
        values = np.array(masses, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError("masses must be numbers (u)") from None
    if values.shape != (natm,):
        raise InputError(f"masses: expected {natm} values (one per atom), got {values.size}")
    low, high = MASS_RANGE
    bad = ~np.isfinite(values) | (values < low) | (values > high)
    if np.any(bad):
        atom = int(np.flatnonzero(bad)[0])
        raise InputError(f"mass of atom {atom + 1} must lie between {low:g} and {high:g} u, got {values[atom]!r}")
    return values


def _mass_value(text, item):
    named = NAMED_ISOTOPES.get(text.strip().upper())
    if named is not None:
        return named
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--masses {item!r}: {text!r} is not a mass in u (or D, T)") from None
    low, high = MASS_RANGE
    if not (np.isfinite(value) and low <= value <= high):
        raise InputError(f"--masses {item!r}: a mass must lie between {low:g} and {high:g} u")
    return value


def masses_from_text(molecule, specs) -> np.ndarray:
    """(natm,) masses (u): the defaults with the overrides of ``specs`` applied (module
    docstring); ``specs`` is one string or a list of them (repeated ``--masses`` flags).
    InputError names the item that is wrong."""
    masses = default_masses(molecule.numbers)
    if isinstance(specs, str):
        specs = [specs]
    for spec in specs or ():
        for item in str(spec).split(","):
            item = item.strip()
            if not item:
                continue
            if ":" in item:
                atom_text, value_text = item.split(":", 1)
                try:
                    atom = int(atom_text)
                except ValueError:
                    raise InputError(f"--masses {item!r}: {atom_text!r} is not an atom number") from None
                if not 1 <= atom <= molecule.natm:
                    raise InputError(f"--masses {item!r}: atom numbers run from 1 to {molecule.natm}")
                masses[atom - 1] = _mass_value(value_text, item)
            elif "=" in item:
                symbol_text, value_text = item.split("=", 1)
                try:
                    z = atomic_number(symbol_text)
                except InputError:
                    raise InputError(f"--masses {item!r}: {symbol_text!r} is not an element symbol") from None
                chosen = np.asarray(molecule.numbers) == z
                if not np.any(chosen):
                    raise InputError(f"--masses {item!r}: the molecule has no {element_symbol(z)} atom")
                masses[chosen] = _mass_value(value_text, item)
            else:
                raise InputError(f"--masses {item!r}: expected ATOM:MASS (e.g. 2:D) or SYMBOL=MASS (e.g. H=2.014)")
    return masses
