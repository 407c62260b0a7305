"""`Molecule`: atomic numbers, coordinates (bohr), charge and multiplicity.

Readers for XYZ text/files (Angstrom) and QCSchema molecule JSON (bohr).
Every problem a user can cause raises `hartree.errors.InputError` with one
sentence that says where (file and line) and what.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .constants import ANGSTROM_IN_BOHR, BOHR_IN_ANGSTROM, atomic_number, element_symbol
from .errors import InputError
from .io.files import read_json, read_text

#: Atoms closer than this (bohr) are rejected as a broken geometry.
MIN_DISTANCE = 0.1
#: Largest coordinate accepted in a file (in its unit): far beyond any molecule, and far
#: below the overflow of the unit conversion and of distances.
MAX_COORDINATE = 1e10
#: An atom farther than this (bohr, 10 Angstrom) from every other atom is reported
#: (:meth:`Molecule.isolated_atoms`): usually a unit mistake or a stray line in the file.
ISOLATED_DISTANCE = 18.897261246257703
#: Up to this many atoms, the distance checks compare all pairs with numpy (for a small
#: molecule cheaper than importing scipy.spatial, ~0.3 s); above, a k-d tree.
KDTREE_ATOMS = 1000

_KEYVAL = re.compile(r"\b(charge|multiplicity|mult)\s*=\s*([-+]?\w+)", re.I)
_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, eq=False)
class Molecule:
    """An immutable molecule.

    numbers       int64 (natm,)     atomic numbers Z (1..118)
    coords        float64 (natm, 3) nuclear positions, bohr
    charge        int               total charge
    multiplicity  int               2S+1; None on construction means 1 for an even
                                    electron count and 2 for an odd one
    symbols       tuple[str]        element symbols (normalised capitalisation); derived
                                    from `numbers` when not given
    Arrays are read-only.  Construction validates everything and raises InputError.
    """

    numbers: np.ndarray
    coords: np.ndarray
    charge: int = 0
    multiplicity: int | None = None
    symbols: tuple[str, ...] | None = field(default=None)

    def __post_init__(self):
        set_ = object.__setattr__
        numbers = np.array(self.numbers, dtype=np.int64).ravel()
        if numbers.size == 0:
            raise InputError("molecule has no atoms")
        symbols = tuple(element_symbol(z) for z in numbers)  # raises for Z outside 1..118
        if self.symbols is not None:
            given = tuple(self.symbols)
            if len(given) != numbers.size or any(atomic_number(s) != z for s, z in zip(given, numbers)):
                raise InputError("molecule symbols do not match its atomic numbers")
        try:
            coords = np.array(self.coords, dtype=np.float64).reshape(numbers.size, 3)
        except ValueError:
            raise InputError(f"coordinates must have shape ({numbers.size}, 3)") from None
        if not np.all(np.isfinite(coords)):
            raise InputError("coordinates must be finite numbers")
        if np.abs(coords).max() > MAX_COORDINATE:
            raise InputError(f"coordinates must be at most {MAX_COORDINATE:g} bohr in size")
        charge = _as_int(self.charge, "charge")
        nelectron = int(numbers.sum()) - charge
        if nelectron < 0:
            raise InputError(f"charge {charge} leaves {nelectron} electrons; a molecule needs at least 0")
        mult = self.multiplicity
        mult = (1 if nelectron % 2 == 0 else 2) if mult is None else _as_int(mult, "multiplicity")
        _check_multiplicity(mult, nelectron)
        _check_distances(coords, symbols)
        numbers.flags.writeable = False
        coords.flags.writeable = False
        set_(self, "numbers", numbers)
        set_(self, "coords", coords)
        set_(self, "charge", charge)
        set_(self, "multiplicity", mult)
        set_(self, "symbols", symbols)

    # ------------------------------------------------------------ properties
    @property
    def natm(self) -> int:
        """Number of atoms."""
        return int(self.numbers.size)

    @property
    def formula(self) -> str:
        """Hill formula, e.g. 'H2O', 'CH4', 'C2H2ClN' (:func:`hill_formula`)."""
        return hill_formula(self.symbols)

    @property
    def nelectron(self) -> int:
        """Number of electrons: Σ Z - charge."""
        return int(self.numbers.sum()) - self.charge

    @property
    def nalpha(self) -> int:
        """Alpha electrons: (nelectron + multiplicity - 1) / 2."""
        return (self.nelectron + self.multiplicity - 1) // 2

    @property
    def nbeta(self) -> int:
        """Beta electrons: (nelectron - multiplicity + 1) / 2."""
        return (self.nelectron - self.multiplicity + 1) // 2

    def nuclear_repulsion(self) -> float:
        """E_nuc = Σ_{A<B} Z_A Z_B / |R_A - R_B| in hartree (point charges)."""
        z = self.numbers.astype(np.float64)
        total = 0.0
        for a in range(1, self.natm):  # row by row keeps memory O(natm)
            r = np.linalg.norm(self.coords[:a] - self.coords[a], axis=1)
            total += z[a] * float(np.sum(z[:a] / r))
        return total

    def nuclear_repulsion_gradient(self) -> np.ndarray:
        """dE_nuc/dR_A = -Σ_B Z_A Z_B (R_A - R_B) / |R_A - R_B|^3, (natm, 3), hartree/bohr."""
        z = self.numbers.astype(np.float64)
        out = np.zeros((self.natm, 3))
        for a in range(self.natm):  # row by row keeps memory O(natm)
            d = self.coords[a] - self.coords
            r = np.linalg.norm(d, axis=1)
            r[a] = np.inf
            out[a] = -z[a] * np.sum((z / r**3)[:, None] * d, axis=0)
        return out

    def isolated_atoms(self, limit: float = ISOLATED_DISTANCE) -> list[tuple[int, float]]:
        """[(atom index, distance to the nearest other atom in bohr)] for the atoms farther
        than ``limit`` bohr from every other atom (empty for one atom)."""
        if self.natm < 2:
            return []
        nearest, _ = _nearest_atoms(self.coords)
        return [(int(i), float(nearest[i])) for i in np.flatnonzero(nearest > limit)]

    def replace(self, **changes: Any) -> Molecule:
        """A copy with some fields changed (validated again), e.g. mol.replace(charge=1)."""
        kw = dict(
            numbers=self.numbers, coords=self.coords, charge=self.charge, multiplicity=self.multiplicity, symbols=None
        )
        if "charge" in changes and "multiplicity" not in changes:
            kw["multiplicity"] = None
        kw.update(changes)
        return Molecule(**kw)

    # ------------------------------------------------------------ XYZ
    @classmethod
    def from_string(
        cls, text: str, charge: int | None = None, multiplicity: int | None = None, unit: str = "angstrom"
    ) -> Molecule:
        """Molecule from inline text in Angstrom (or unit="bohr").

        `text` is a full XYZ block (count line, comment line, atom lines) or just atom
        lines `symbol x y z`, separated by newlines or ';'.  The symbol may be an atomic
        number.  An XYZ comment line may carry `charge=Q multiplicity=M`; explicit
        arguments override it.
        """
        return _from_text(text, "xyz text", charge, multiplicity, unit)

    @classmethod
    def from_xyz(cls, path: str | os.PathLike, charge: int | None = None, multiplicity: int | None = None) -> Molecule:
        """Molecule from an XYZ file (Angstrom); see `from_string` for the format."""
        return _from_text(_read_text(path), str(path), charge, multiplicity, "angstrom")

    def to_xyz(self, comment: str | None = None) -> str:
        """XYZ text in Angstrom; the comment line records charge and multiplicity."""
        if comment is None:
            comment = f"charge={self.charge} multiplicity={self.multiplicity}"
        lines = [str(self.natm), comment.replace("\n", " ")]
        for sym, xyz in zip(self.symbols, self.coords * BOHR_IN_ANGSTROM):
            x, y, z = (repr(float(v)) for v in xyz)
            lines.append(f"{sym:<2s} {x:>22} {y:>22} {z:>22}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ QCSchema
    @classmethod
    def from_qcschema(cls, source: str | os.PathLike | dict) -> Molecule:
        """Molecule from a QCSchema molecule (dict or JSON file path), or from the
        `molecule` entry of an AtomicInput.  Geometry is a flat list in bohr."""
        if isinstance(source, (str, os.PathLike)):
            data = read_json(source, "molecule file")
            where = str(source)
        else:
            data, where = source, "QCSchema input"
        return _from_qcschema_dict(data, where)

    def to_qcschema(self) -> dict:
        """QCSchema molecule dict (schema_version 2): symbols, geometry (bohr, flat)."""
        from ._version import __version__

        return {
            "schema_name": "qcschema_molecule",
            "schema_version": 2,
            "symbols": list(self.symbols),
            "atomic_numbers": [int(z) for z in self.numbers],
            "geometry": [float(x) for x in self.coords.ravel()],
            "molecular_charge": float(self.charge),
            "molecular_multiplicity": int(self.multiplicity),
            "provenance": {"creator": "hartree", "version": __version__, "routine": "hartree.Molecule.to_qcschema"},
        }

    @classmethod
    def from_file(cls, path: str | os.PathLike, charge: int | None = None, multiplicity: int | None = None) -> Molecule:
        """Read by extension: .xyz (Angstrom) or .json (QCSchema, bohr)."""
        ext = os.path.splitext(str(path))[1].lower()
        if ext == ".xyz":
            return cls.from_xyz(path, charge=charge, multiplicity=multiplicity)
        if ext == ".json":
            mol = cls.from_qcschema(path)
            if charge is None and multiplicity is None:
                return mol
            changes = {}
            if charge is not None:
                changes["charge"] = charge
            if multiplicity is not None:
                changes["multiplicity"] = multiplicity
            return mol.replace(**changes)
        raise InputError(f"cannot tell the format of {path}: use a .xyz or .json file")

    def __repr__(self):
        return f"Molecule({self.formula}, natm={self.natm}, charge={self.charge}, multiplicity={self.multiplicity})"


def hill_formula(symbols) -> str:
    """Hill formula of element symbols: with carbon, C then H first and the other elements
    alphabetically; without carbon, all alphabetically; counts of 1 left out.
    ('O', 'H', 'H') -> 'H2O'; ('Na', 'Cl') -> 'ClNa'."""
    counts = {}
    for symbol in symbols:
        counts[symbol] = counts.get(symbol, 0) + 1
    order = sorted(counts)
    if "C" in counts:
        order = ["C"] + (["H"] if "H" in counts else []) + [s for s in order if s not in ("C", "H")]
    return "".join(f"{s}{counts[s] if counts[s] > 1 else ''}" for s in order)


# ---------------------------------------------------------------- validation
def _as_int(value, what):
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        return int(value.strip())
    raise InputError(f"{what} must be an integer, got {value!r}")


def _check_multiplicity(mult, nelectron):
    if mult < 1:
        raise InputError(f"multiplicity must be at least 1, got {mult}")
    if mult > nelectron + 1:
        raise InputError(f"multiplicity {mult} is impossible with {nelectron} electrons (at most {nelectron + 1})")
    if (mult - 1) % 2 != nelectron % 2:
        raise InputError(
            f"multiplicity {mult} is incompatible with {nelectron} electrons "
            f"(an {'even' if nelectron % 2 == 0 else 'odd'} electron count needs "
            f"an {'odd' if nelectron % 2 == 0 else 'even'} multiplicity)"
        )


def _check_distances(coords, symbols):
    if len(coords) < 2:
        return
    nearest, partner = _nearest_atoms(coords)
    close = np.flatnonzero(nearest <= MIN_DISTANCE)
    if len(close):
        i, j = sorted((int(close[0]), int(partner[close[0]])))
        d = float(np.linalg.norm(coords[i] - coords[j]))
        raise InputError(
            f"atoms {i + 1} ({symbols[i]}) and {j + 1} ({symbols[j]}) are "
            f"{d:.3g} bohr apart (less than {MIN_DISTANCE} bohr)"
        )


def _nearest_atoms(coords, tree_above=None):
    """(distance in bohr, index) of each atom's nearest other atom, arrays of shape (natm,),
    for coords (natm, 3) with natm >= 2: all pair distances with numpy up to ``tree_above``
    atoms (default :data:`KDTREE_ATOMS`), a k-d tree (scipy.spatial, O(N log N)) above."""
    if len(coords) <= (KDTREE_ATOMS if tree_above is None else tree_above):
        dist = np.sqrt((np.square(coords[:, None, :] - coords[None, :, :])).sum(axis=-1))
        np.fill_diagonal(dist, np.inf)
        partner = dist.argmin(axis=1)
        return dist[np.arange(len(coords)), partner], partner
    from scipy.spatial import cKDTree

    dist, index = cKDTree(coords).query(coords, k=2)
    # two atoms at the same place: the query may list either first; the other is the partner
    own = index[:, 1] == np.arange(len(coords))
    return dist[:, 1], np.where(own, index[:, 0], index[:, 1])


# ---------------------------------------------------------------- parsing
def _read_text(path):
    return read_text(path, "molecule file")


def _from_text(text, source, charge, multiplicity, unit):
    if not isinstance(text, str):
        raise InputError(f"{source}: expected text, got {type(text).__name__}")
    scale = {"angstrom": ANGSTROM_IN_BOHR, "bohr": 1.0}.get(str(unit).lower())
    if scale is None:
        raise InputError(f"unit must be 'angstrom' or 'bohr', got {unit!r}")
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(f"{source}: no atoms found")
    header = lines[first].split()
    if len(header) == 1 and _INT.fullmatch(header[0]):
        # full XYZ block: count line, comment line, atom lines
        count = int(header[0])
        comment = lines[first + 1] if first + 1 < len(lines) else ""
        body = [(n + 1, line) for n, line in enumerate(lines[first + 2 :], start=first + 2) if line.strip()]
        if count != len(body):
            raise InputError(f"{source}: the count line says {count} atoms but {len(body)} atom lines follow")
        q, m = _comment_keys(comment, source, first + 2)
        charge = q if charge is None else charge
        multiplicity = m if multiplicity is None else multiplicity
    else:
        body = [(n + 1, part) for n, line in enumerate(lines) for part in line.split(";") if part.strip()]
    numbers, coords = [], []
    for lineno, line in body:
        z, xyz = _atom_line(line, source, lineno)
        numbers.append(z)
        coords.append(xyz)
    return Molecule(
        numbers=numbers,
        coords=np.array(coords) * scale,
        charge=0 if charge is None else charge,
        multiplicity=multiplicity,
    )


def _atom_line(line, source, lineno):
    parts = line.split()
    shown = line.strip()
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if len(parts) != 4:
        raise InputError(f"{source} line {lineno}: expected 'symbol x y z', got {shown!r}")
    try:
        z = atomic_number(parts[0])
    except InputError:
        raise InputError(f"{source} line {lineno}: unknown element {parts[0]!r}") from None
    try:
        xyz = [float(p) for p in parts[1:]]
    except ValueError:
        raise InputError(f"{source} line {lineno}: expected 'symbol x y z', got {shown!r}") from None
    if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in xyz):
        raise InputError(
            f"{source} line {lineno}: coordinates must be finite numbers of at "
            f"most {MAX_COORDINATE:g} in size, got {shown!r}"
        )
    return z, xyz


def _comment_keys(comment, source, lineno):
    """(charge, multiplicity) from `key=value` pairs in an XYZ comment line (None if absent)."""
    found = {}
    for key, value in _KEYVAL.findall(comment):
        key = "charge" if key.lower() == "charge" else "multiplicity"
        if not _INT.fullmatch(value):
            raise InputError(f"{source} line {lineno}: {key} must be an integer, got {value!r}")
        found[key] = int(value)
    return found.get("charge"), found.get("multiplicity")


def _from_qcschema_dict(data, where):
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object")
    if "molecule" in data and isinstance(data["molecule"], dict):
        data = data["molecule"]  # AtomicInput / AtomicResult
    symbols = data.get("symbols")
    geometry = data.get("geometry")
    if not isinstance(symbols, list) or not symbols or geometry is None:
        raise InputError(f"{where}: a QCSchema molecule needs 'symbols' and 'geometry'")
    real = data.get("real")
    if real is not None and (not isinstance(real, list) or not all(r is True for r in real)):
        raise InputError(f"{where}: ghost atoms (real=false) are not supported yet")
    if not all(isinstance(s, str) for s in symbols):
        raise InputError(f"{where}: 'symbols' must be a list of element symbols")
    try:
        numbers = [atomic_number(s) for s in symbols]
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    try:
        coords = np.array(geometry, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError(f"{where}: 'geometry' must be a list of numbers") from None
    if coords.size != 3 * len(numbers):
        raise InputError(f"{where}: 'geometry' has {coords.size} numbers, expected 3 x {len(numbers)} atoms")
    atomic_numbers = data.get("atomic_numbers")
    if atomic_numbers is not None and atomic_numbers != numbers:
        raise InputError(f"{where}: 'atomic_numbers' disagree with 'symbols'")
    charge = data.get("molecular_charge", 0)
    mult = data.get("molecular_multiplicity")
    try:
        return Molecule(
            numbers=numbers, coords=coords.reshape(-1, 3), charge=_as_int(charge, "molecular_charge"), multiplicity=mult
        )
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
