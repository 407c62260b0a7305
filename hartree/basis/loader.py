"""Build a `Basis` for a molecule from basis-set-exchange names, basis files, or
per-element dicts.

Shell order per atom follows PySCF: shells are taken in file order, combined
SP(D) shells and general contractions are split into segmented shells (one per
contraction column, zero-coefficient primitives dropped), then shells are sorted
stably by angular momentum -- exactly what ``pyscf.gto.format_basis`` does -- so
AO indices equal PySCF's.
"""

from __future__ import annotations

import difflib
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..constants import atomic_number, element_symbol
from ..errors import BasisError, InputError
from ..io.files import read_text
from .angular import MAX_L
from .shells import Basis, normalized_coefficients

if TYPE_CHECKING:
    from ..molecule import Molecule

_FILE_FORMATS = {
    ".nw": "nwchem",
    ".nwchem": "nwchem",
    ".gbs": "gaussian94",
    ".g94": "gaussian94",
    ".gaussian94": "gaussian94",
}
_GTO_TYPES = ("gto", "gto_spherical", "gto_cartesian")


def load_basis(molecule: Molecule, basis: str | os.PathLike | dict, cartesian: bool = False) -> Basis:
    """Basis for `molecule` (a hartree.Molecule).

    basis: a basis-set-exchange name (case-insensitive: "cc-pVDZ", "6-31g**",
      "def2-svp"; spellings without dashes such as "ccpvdz" also work), a path to an
      NWChem or Gaussian94 basis file, or a dict {element symbol: name or path}
      with an optional "default" entry used for the other elements.
    cartesian: cartesian (6d, 10f, ...) instead of spherical functions, for all shells
      (as in PySCF; a basis's own spherical/cartesian preference is ignored).
    Raises BasisError for unknown names, missing elements, ECP bases, l > 6.
    """
    if isinstance(basis, os.PathLike):
        basis = os.fspath(basis)
    specs = _assign(molecule.symbols, basis)
    shells_of = {}
    for sym, spec in specs.items():
        shells_of[sym] = _element_shells(spec, sym)
    atom, ls, nprim, start, center, exps, coefs = [], [], [], [], [], [], []
    offset = 0
    for ia, sym in enumerate(molecule.symbols):
        for l, e, c in shells_of[sym]:
            atom.append(ia)
            ls.append(l)
            nprim.append(len(e))
            start.append(offset)
            center.append(molecule.coords[ia])
            exps.extend(e)
            coefs.extend(c)
            offset += len(e)
    name = basis if isinstance(basis, str) else _describe(basis)
    return Basis(
        name=name,
        pure=not cartesian,
        shell_atom=atom,
        shell_l=ls,
        shell_nprim=nprim,
        shell_prim_start=start,
        shell_center=np.reshape(center, (-1, 3)),
        exponents=exps,
        coefficients=coefs,
        atom_symbols=tuple(molecule.symbols),
    )


def _describe(basis):
    return ", ".join(f"{k}: {v}" for k, v in basis.items())


def _assign(symbols, basis):
    """{element symbol: basis spec (name or path)} for every element present."""
    if isinstance(basis, str):
        return {s: basis for s in symbols}
    if not isinstance(basis, dict):
        raise BasisError(f"basis must be a name, a file path or a dict, not {type(basis).__name__}")
    lookup = {}
    for key, value in basis.items():
        value = os.fspath(value) if isinstance(value, os.PathLike) else value
        if not isinstance(value, str):
            raise BasisError(f"basis for {key!r} must be a name or a file path")
        if str(key).lower() == "default":
            lookup["default"] = value
            continue
        try:  # keys may be symbols in any case or atomic numbers
            lookup[element_symbol(atomic_number(key)).lower()] = value
        except InputError:
            raise BasisError(f"basis dict key {key!r} is not an element symbol") from None
    out = {}
    for sym in symbols:
        spec = lookup.get(sym.lower(), lookup.get("default"))
        if spec is None:
            raise BasisError(f"no basis given for element {sym} (add it or a 'default' entry)")
        out[sym] = spec
    return out


def _element_shells(spec, sym):
    """Segmented shells (l, exponents, normalised coefficients) of one element."""
    z = atomic_number(sym)
    if os.path.isfile(spec):
        stat = os.stat(spec)
        data = _read_file(os.path.abspath(spec), stat.st_mtime_ns, stat.st_size).get(str(z))
        label = f"basis file {spec}"
    else:
        try:
            key = resolve_basis_name(spec)
        except BasisError:
            if _looks_like_path(spec):  # names may contain '/', e.g. "cc-pVDZ(fi/sf/fw)"
                raise BasisError(f"basis file not found: {spec}") from None
            raise
        data = _bse_element(key, z)
        label = f"basis {spec}"
    if data is not None and (data.get("ecp_potentials") or data.get("ecp_electrons")):
        raise BasisError(f"{label} uses an effective core potential for {sym}; ECPs are not supported yet")
    if data is None or not data.get("electron_shells"):
        raise BasisError(f"{label} has no functions for element {sym}")
    return _segment(data["electron_shells"], label, sym)


def _segment(electron_shells, label, sym):
    """Split general / SP shells into segmented ones, sorted stably by l (PySCF order)."""
    shells = []
    for shell in electron_shells:
        if shell.get("function_type", "gto") not in _GTO_TYPES:
            raise BasisError(f"{label}: function type {shell['function_type']!r} for {sym} is not supported")
        am = [int(l) for l in shell["angular_momentum"]]
        exps = np.array([float(e) for e in shell["exponents"]])
        rows = shell["coefficients"]
        if len(am) > 1 and len(am) != len(rows):
            raise BasisError(f"{label}: malformed combined shell for {sym}")
        for r, row in enumerate(rows):
            l = am[r] if len(am) > 1 else am[0]
            if l > MAX_L:
                raise BasisError(f"{label} has angular momentum l={l} for {sym}; hartree supports l <= {MAX_L}")
            c = np.array([float(x) for x in row])
            keep = c != 0.0
            if not keep.any():
                continue
            e_keep = exps[keep]
            shells.append((l, tuple(e_keep), tuple(normalized_coefficients(l, e_keep, c[keep]))))
    shells.sort(key=lambda s: s[0])  # stable: same as pyscf.gto.format_basis
    return tuple(shells)


# ---------------------------------------------------------------- basis-set-exchange
def _squash(name):
    return re.sub(r"[\s\-_]", "", name.lower())


@lru_cache(maxsize=1)
def _name_table():
    """({lookup key: BSE display name}, [display names])."""
    import basis_set_exchange as bse
    from basis_set_exchange.misc import transform_basis_name

    meta = bse.get_metadata()
    exact, squashed, clashes = {}, {}, set()
    for key, info in meta.items():
        names = [info["display_name"], *info.get("other_names", [])]
        for n in names:
            exact[n.lower()] = info["display_name"]
            exact[transform_basis_name(n)] = info["display_name"]
        exact[key] = info["display_name"]
        for n in names:
            s = _squash(n)
            if s in squashed and squashed[s] != info["display_name"]:
                clashes.add(s)
            squashed[s] = info["display_name"]
    for s in clashes:
        squashed.pop(s)
    return exact, squashed, sorted(info["display_name"] for info in meta.values())


def resolve_basis_name(name: str) -> str:
    """The basis-set-exchange display name for a user's spelling, or BasisError with hints."""
    exact, squashed, display = _name_table()
    hit = exact.get(name.strip().lower()) or squashed.get(_squash(name))
    if hit is not None:
        return hit
    lower = {d.lower(): d for d in display}
    close = difflib.get_close_matches(name.strip().lower(), list(lower), n=3, cutoff=0.75)
    hint = f" (did you mean {', '.join(lower[c] for c in close)}?)" if close else ""
    raise BasisError(f"unknown basis set {name!r}{hint}")


@lru_cache(maxsize=512)
def _bse_element(display_name, z):
    """Element data dict from basis-set-exchange, or None when the basis lacks element z."""
    import basis_set_exchange as bse

    try:
        data = bse.get_basis(display_name, elements=[z], header=False)
    except KeyError:
        return None
    return data["elements"].get(str(z))


# ---------------------------------------------------------------- files
def _looks_like_path(spec):
    return os.sep in spec or "/" in spec or os.path.splitext(spec)[1].lower() in _FILE_FORMATS


def _file_format(path, text):
    ext = os.path.splitext(path)[1].lower()
    if ext in _FILE_FORMATS:
        return _FILE_FORMATS[ext]
    if re.search(r"^\s*BASIS\b", text, re.M | re.I):
        return "nwchem"
    if "****" in text:
        return "gaussian94"
    raise BasisError(f"cannot tell the format of basis file {path}; use NWChem (.nw) or Gaussian94 (.gbs) format")


@lru_cache(maxsize=32)
def _read_file(path, mtime_ns, size):
    """{str(Z): element data} parsed by basis-set-exchange's NWChem/Gaussian94 readers.

    mtime_ns and size only key the cache, so an edited file is read again.
    """
    from basis_set_exchange.readers import read_formatted_basis_str

    text = read_text(path, "basis file")
    fmt = _file_format(path, text)
    try:
        data = read_formatted_basis_str(text, basis_fmt=fmt)
    except Exception as exc:  # BSE readers raise bare RuntimeError/ValueError/...
        raise BasisError(f"cannot parse basis file {path} as {fmt}: {exc}") from None
    return data.get("elements", {})
