"""Physical constants and the periodic table used at hartree's boundaries.

Everything inside hartree is in atomic units (bohr, hartree); Angstrom appears
only when reading or writing files, converted with the CODATA 2018 value below.
"""

from .errors import InputError

#: Bohr radius in Angstrom (CODATA 2018).
BOHR_IN_ANGSTROM = 0.529177210903
#: One Angstrom in bohr.
ANGSTROM_IN_BOHR = 1.0 / BOHR_IN_ANGSTROM

#: Element symbols indexed by atomic number; index 0 is a placeholder for "no element".
ELEMENT_SYMBOLS = (
    "X",
    "H",
    "He",
    "Li",
    "Be",
    "B",
    "C",
    "N",
    "O",
    "F",
    "Ne",
    "Na",
    "Mg",
    "Al",
    "Si",
    "P",
    "S",
    "Cl",
    "Ar",
    "K",
    "Ca",
    "Sc",
    "Ti",
    "V",
    "Cr",
    "Mn",
    "Fe",
    "Co",
    "Ni",
    "Cu",
    "Zn",
    "Ga",
    "Ge",
    "As",
    "Se",
    "Br",
    "Kr",
    "Rb",
    "Sr",
    "Y",
    "Zr",
    "Nb",
    "Mo",
    "Tc",
    "Ru",
    "Rh",
    "Pd",
    "Ag",
    "Cd",
    "In",
    "Sn",
    "Sb",
    "Te",
    "I",
    "Xe",
    "Cs",
    "Ba",
    "La",
    "Ce",
    "Pr",
    "Nd",
    "Pm",
    "Sm",
    "Eu",
    "Gd",
    "Tb",
    "Dy",
    "Ho",
    "Er",
    "Tm",
    "Yb",
    "Lu",
    "Hf",
    "Ta",
    "W",
    "Re",
    "Os",
    "Ir",
    "Pt",
    "Au",
    "Hg",
    "Tl",
    "Pb",
    "Bi",
    "Po",
    "At",
    "Rn",
    "Fr",
    "Ra",
    "Ac",
    "Th",
    "Pa",
    "U",
    "Np",
    "Pu",
    "Am",
    "Cm",
    "Bk",
    "Cf",
    "Es",
    "Fm",
    "Md",
    "No",
    "Lr",
    "Rf",
    "Db",
    "Sg",
    "Bh",
    "Hs",
    "Mt",
    "Ds",
    "Rg",
    "Cn",
    "Nh",
    "Fl",
    "Mc",
    "Lv",
    "Ts",
    "Og",
)

#: Largest supported atomic number (Og).
MAX_Z = len(ELEMENT_SYMBOLS) - 1

#: Largest |MO coefficient| (and density-matrix element) accepted from a file: real ones
#: stay below ~1e4 even in nearly linearly dependent bases; far larger values mean damage,
#: and squares of them would overflow.
MAX_MO_COEFFICIENT = 1e8

_Z_BY_SYMBOL = {s.lower(): z for z, s in enumerate(ELEMENT_SYMBOLS) if z > 0}


def atomic_number(symbol):
    """Atomic number Z of an element symbol (case-insensitive, e.g. "o", "CL").

    Also accepts the number itself as int or digit string ("8" -> 8).
    Raises InputError for anything that is not an element H..Og.
    """
    if isinstance(symbol, int) and not isinstance(symbol, bool):
        z = int(symbol)
    else:
        text = str(symbol).strip()
        if text.isascii() and text.isdigit():
            z = int(text)
        else:
            z = _Z_BY_SYMBOL.get(text.lower())
            if z is None:
                raise InputError(f"unknown element symbol {text!r}")
    if not 1 <= z <= MAX_Z:
        raise InputError(f"unknown element: atomic number {z} is outside 1..{MAX_Z}")
    return z


def element_symbol(z):
    """Element symbol with normalised capitalisation ("O", "Cl") for atomic number z."""
    z = int(z)
    if not 1 <= z <= MAX_Z:
        raise InputError(f"unknown element: atomic number {z} is outside 1..{MAX_Z}")
    return ELEMENT_SYMBOLS[z]
