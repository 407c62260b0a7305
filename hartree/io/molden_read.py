"""Read Molden files (hartree, PySCF, ORCA, Molpro, Psi4, ...) into hartree's data model.

Sections used: ``[Atoms]`` (``AU`` or ``Angs``), ``[GTO]``, the flags ``[5D]``,
``[5D7F]``, ``[5D10F]``, ``[7F]``, ``[9G]`` (and the explicit cartesian ``[6D]``,
``[10F]``, ``[15G]``), and ``[MO]``.  Everything else is skipped.

Conventions handled (the inverse of :mod:`hartree.io.molden`):

* contraction coefficients are for normalised primitives; the contraction is
  renormalised on reading (as every Molden reader does, so files whose
  contractions are off by a constant factor still give normalised functions);
  a shell's scale factor multiplies the exponents by its square (Gaussian's rule);
  ``sp`` shells (three numbers per primitive line) become an s and a p shell;
* Molden's cartesian functions are each normalised to 1 and listed in Molden's
  order; hartree's are not (``shells.cartesian_norm``) -- MO coefficients are
  divided by that norm and permuted;
* spherical components come in the order 0, +1, -1, +2, -2, ...; p is x, y, z;
* flags per angular momentum: ``[5D]`` means spherical d and f, ``[5D10F]``
  spherical d and cartesian f, ``[7F]`` spherical f, ``[9G]`` spherical g.
  When spherical and cartesian shells are mixed, the basis is read as cartesian
  and the spherical coefficients are turned into cartesian ones (C_l C), which
  gives the same orbital values;
* MO coefficient lines may skip zero coefficients (the index is read, not assumed),
  but only in files where no orbital lists every basis function (see below);
* ``Spin= Beta`` orbitals make an unrestricted result (arrays with a leading axis 2).

Validation: a damaged or truncated file raises :class:`~hartree.errors.InputError`
(one sentence naming the file, and the line where there is one); no other exception
leaves :func:`parse_molden` or :func:`read_molden`, and nothing is guessed:

* every number is read whole (Fortran ``D`` exponents allowed) and must be finite:
  ``nan``, ``inf``, ``1e999``, ``-4.3x`` or a line with a missing or extra field are
  refused; integers (indices, Z, primitive counts) must be integers;
* a text that does not end with a line break, and whose last line is not blank or a
  section header, was cut off in the middle of a line: refused as truncated;
* ``[Atoms]``: lines ``symbol index Z x y z`` with indices 1, 2, 3, ... in order,
  Z in 1..118 and coordinates within 1e6 bohr;
* ``[GTO]``: one block per atom of ``[Atoms]`` (header ``index [0]``; a missing or
  repeated block is refused); shell headers ``l nprim [scale]`` (l up to g, or sp)
  followed by exactly nprim lines of 2 numbers (3 for sp); exponents > 0; contractions
  that can be normalised; a last atom header without shells (a cut-off section) is
  refused; contradictory flags (``[5D]`` with ``[6D]``) are refused;
* ``[MO]``: every orbital has ``Ene=``, ``Occup=`` (in [0, 2], or [0, 1] when the
  file has ``Spin= Beta`` orbitals; 1e-5 is allowed for rounding) and coefficients;
  ``Spin=`` is Alpha or Beta; key lines are not repeated; AO indices lie in range and
  are not repeated; if any orbital lists every basis function, all must (otherwise an
  orbital was cut short); in a file that skips zeros, a last orbital that lists just
  the first k functions is taken as cut short; at most as many orbitals per spin as
  basis functions, and as many beta orbitals as alpha ones;
* the occupations add up to a whole number of electrons (within 1e-6, plus 5e-6 per
  fractional occupation for the rounding of a 5-decimal print), at least one, and the
  charge and multiplicity inferred from them must fit the atoms
  (:class:`~hartree.molecule.Molecule` checks the rest of the geometry).

What cannot be caught: a file cut exactly at the end of an orbital's last line looks
like a file with fewer orbitals (linearly dependent bases give such files), unless it
is unrestricted and loses beta orbitals (unequal counts); likewise a changed digit.

Not handled yet: ORCA's extra sign/normalisation quirks of f and g functions, ECP
``[Core]`` electron counts (the charge is then inferred from the occupations only).
"""

import math
import re
from dataclasses import dataclass

import numpy as np

from ..basis import Basis, cart2sph, normalized_coefficients
from ..constants import ANGSTROM_IN_BOHR, MAX_MO_COEFFICIENT
from ..errors import InputError
from ..molecule import Molecule
from .files import read_text
from .molden import cartesian_shell_order_and_scale, spherical_shell_order

_L_OF = {"s": 0, "p": 1, "d": 2, "f": 3, "g": 4}
_SECTION = re.compile(r"^\s*\[([^\]]*)\]\s*(.*)$")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[EeDd][+-]?\d+)?")
_INT = re.compile(r"[+-]?\d+")
_MAX_Z = 118
#: Largest coordinate (bohr) taken as a position rather than damage.
_MAX_COORD = 1e6
#: Allowed rounding of a single occupation outside [0, 2] (or [0, 1]).
_OCC_TOL = 1e-5
#: Allowed deviation of the electron count from an integer, plus _ROUNDING per
#: fractional occupation (half a unit of a 5-decimal print).
_NELEC_TOL, _ROUNDING = 1e-6, 5e-6


@dataclass(frozen=True, eq=False)
class MoldenData:
    """Contents of a Molden file in hartree's conventions (bohr, PySCF AO order).

    molecule: Molecule (charge and multiplicity inferred from the occupations);
    basis: Basis; mo_energy, mo_coeff, mo_occ: as SCFResult (restricted (nmo,),
    (nao, nmo), (nmo,); unrestricted with a leading axis 2); symmetry: labels
    per orbital (list, or two lists); title: the [Title] text.
    """

    molecule: Molecule
    basis: Basis
    mo_energy: np.ndarray
    mo_coeff: np.ndarray
    mo_occ: np.ndarray
    symmetry: list
    title: str


def _bad(name, lineno, what):
    """InputError for line ``lineno`` of the file ``name``."""
    return InputError(f"{name} line {lineno}: {what}")


def _number(text, name, lineno):
    """The finite float written whole in ``text`` (Fortran D exponents allowed)."""
    if not _FLOAT.fullmatch(text):
        raise _bad(name, lineno, f"{text!r} is not a number")
    value = float(text.replace("D", "E").replace("d", "e"))
    if not math.isfinite(value):
        raise _bad(name, lineno, f"{text} is too large for a double")
    return value


def _integer(text, name, lineno):
    """The int written whole in ``text`` (at most 18 digits)."""
    if not _INT.fullmatch(text):
        raise _bad(name, lineno, f"{text!r} is not an integer")
    if len(text.lstrip("+-")) > 18:
        raise _bad(name, lineno, f"the integer {text} is too large")
    return int(text)


def _sections(text, name):
    """{upper-case name: (rest of header line, [(line number, line)])}, plus the flag set."""
    sections, flags, current = {}, set(), None
    lines = text.splitlines()
    if text and not text.endswith(("\n", "\r")) and lines[-1].strip() and not _SECTION.match(lines[-1]):
        raise InputError(f"{name} ends in the middle of line {len(lines)}: the file looks truncated")
    for lineno, line in enumerate(lines, 1):
        match = _SECTION.match(line)
        if match:
            key = match.group(1).strip().upper()
            if key in sections and key != "MO":
                raise _bad(name, lineno, f"a second [{key}] section")
            current = sections.setdefault(key, (match.group(2).strip(), []))[1]
            flags.add(key)
            continue
        if current is not None:
            current.append((lineno, line))
    return sections, flags


def _atoms(header, lines, name):
    """(atomic numbers, coordinates in bohr) from the [Atoms] section."""
    upper = header.upper()
    if "ANG" in upper:
        unit = ANGSTROM_IN_BOHR
    elif "AU" in upper or "BOHR" in upper:
        unit = 1.0
    else:
        raise InputError(f"{name}: the [Atoms] section must say AU or Angs")
    numbers, coords = [], []
    for lineno, line in lines:
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise _bad(name, lineno, f"[Atoms] line {line.strip()!r} does not have the 6 fields 'symbol index Z x y z'")
        index, z = _integer(fields[1], name, lineno), _integer(fields[2], name, lineno)
        if index != len(numbers) + 1:
            raise _bad(name, lineno, f"atom index {index} where {len(numbers) + 1} was expected")
        if not 1 <= z <= _MAX_Z:
            raise _bad(
                name, lineno, f"atomic number {z} is outside 1..{_MAX_Z} (dummy and ghost atoms are not supported)"
            )
        xyz = [_number(v, name, lineno) * unit for v in fields[3:6]]
        if not all(abs(v) <= _MAX_COORD for v in xyz):
            raise _bad(name, lineno, f"a coordinate is larger than {_MAX_COORD:g} bohr")
        numbers.append(z)
        coords.append(xyz)
    if not numbers:
        raise InputError(f"{name}: the [Atoms] section has no atoms")
    return np.array(numbers), np.array(coords)


def _primitives(lines, n, width, nprim, name, header):
    """nprim rows of ``width`` numbers from lines[n:], checked (exponent > 0)."""
    rows = []
    for k in range(nprim):
        if n + k >= len(lines):
            raise _bad(name, header, f"the shell announces {nprim} primitives but the [GTO] section ends after {k}")
        lineno, line = lines[n + k]
        fields = line.split()
        if len(fields) != width:
            raise _bad(
                name,
                lineno,
                f"primitive line {line.strip()!r} does not have "
                f"{width} numbers (shell on line {header} "
                f"announces {nprim} primitives)",
            )
        row = [_number(v, name, lineno) for v in fields]
        if row[0] <= 0:
            raise _bad(name, lineno, f"exponent {fields[0]} is not positive")
        rows.append(row)
    return np.array(rows)


def _contraction(l, exps, raw, name, lineno):
    """normalized_coefficients, or InputError when the contraction has no finite norm."""
    try:
        with np.errstate(all="ignore"):
            coefs = normalized_coefficients(l, exps, raw)
    except (ValueError, ArithmeticError):
        coefs = None
    if coefs is None or not np.all(np.isfinite(coefs)) or not np.any(coefs):
        raise _bad(
            name,
            lineno,
            "the contraction of this shell cannot be normalised (zero coefficients or exponents out of range)",
        )
    return coefs


def _gto(lines, natm, name):
    """[(atom, l, exponents, normalised coefficients)] in file order (sp shells split)."""
    shells, seen, atom, open_header, n = [], set(), None, None, 0
    while n < len(lines):
        lineno, line = lines[n]
        fields = line.split()
        n += 1
        if not fields:
            continue
        if _INT.fullmatch(fields[0]):
            if len(fields) > 2 or (len(fields) == 2 and not _INT.fullmatch(fields[1])):
                raise _bad(name, lineno, f"[GTO] atom line {line.strip()!r} is not 'index 0'")
            atom = _integer(fields[0], name, lineno) - 1
            if not 0 <= atom < natm:
                raise _bad(name, lineno, f"[GTO] refers to atom {atom + 1}, but [Atoms] has {natm}")
            if atom in seen:
                raise _bad(name, lineno, f"atom {atom + 1} has a second basis block in [GTO]")
            seen.add(atom)
            open_header = lineno
            continue
        kind = fields[0].lower()
        if kind in ("h", "i", "k"):
            raise _bad(name, lineno, "shells above g are not defined in Molden files")
        if (kind not in _L_OF and kind != "sp") or len(fields) not in (2, 3):
            raise _bad(name, lineno, f"[GTO] line {line.strip()!r} is not 'l nprim [scale]'")
        if atom is None:
            raise _bad(name, lineno, "a shell comes before the first atom line of [GTO]")
        nprim = _integer(fields[1], name, lineno)
        if nprim < 1:
            raise _bad(name, lineno, f"a shell with {nprim} primitives")
        scale = _number(fields[2], name, lineno) if len(fields) == 3 else 1.0
        rows = _primitives(lines, n, 3 if kind == "sp" else 2, nprim, name, lineno)
        n += nprim
        with np.errstate(all="ignore"):
            exps = rows[:, 0] * (scale * scale if scale != 0.0 else 1.0)
        if not np.all(np.isfinite(exps) & (exps > 0)):
            raise _bad(name, lineno, "the scale factor makes an exponent too large or zero")
        for l, column in ((0, 1), (1, 2)) if kind == "sp" else ((_L_OF[kind], 1),):
            shells.append((atom, l, exps, _contraction(l, exps, rows[:, column], name, lineno)))
        open_header = None
    if open_header is not None:
        raise _bad(name, open_header, "the last atom of [GTO] has no shells: the section looks truncated")
    if not shells:
        raise InputError(f"{name}: the [GTO] section has no shells")
    if len(seen) < natm:
        missing = min(set(range(natm)) - seen) + 1
        raise InputError(
            f"{name}: atom {missing} of [Atoms] has no basis block in [GTO] (a missing or damaged 'index 0' line)"
        )
    return shells


def _pure_flags(flags, name):
    """{l: True if spherical} for l = 2, 3, 4 from the flag sections (Molden's defaults: cartesian)."""
    pure = {2: False, 3: False, 4: False}
    if "5D" in flags or "5D7F" in flags:
        pure[2] = pure[3] = True
    if "5D10F" in flags:
        pure[2], pure[3] = True, False
    if "7F" in flags:
        pure[3] = True
    if "9G" in flags:
        pure[4] = True
    for l, flag in ((2, "6D"), (3, "10F"), (4, "15G")):
        if flag in flags and pure[l]:
            raise InputError(f"{name} says both spherical and cartesian ([{flag}]) {'dfg'[l - 2]} functions")
    return pure


def _mo_blocks(lines, name):
    """[(line, {key: (line, value)}, [(line, ao index (0-based), coefficient)])] per orbital."""
    orbitals, current = [], None
    for lineno, line in lines:
        text = line.strip()
        if not text:
            continue
        if "=" in text:
            if current is None or current[2]:
                current = (lineno, {}, [])
                orbitals.append(current)
            key, value = text.split("=", 1)
            key = key.strip().lower()
            if key in current[1]:
                raise _bad(name, lineno, f"orbital {len(orbitals)} has a second {key.title()}= line")
            current[1][key] = (lineno, value.strip())
            continue
        if current is None:
            raise _bad(name, lineno, "a coefficient line comes before the first orbital's Ene= and Occup= lines")
        fields = text.split()
        if len(fields) != 2:
            raise _bad(name, lineno, f"[MO] line {text!r} is not 'index coefficient'")
        current[2].append((lineno, _integer(fields[0], name, lineno) - 1, _number(fields[1], name, lineno)))
    if not orbitals:
        raise InputError(f"{name} has no orbitals in [MO]")
    return orbitals


def _key_number(keys, key, n, line, name):
    """The one number of the ``key=`` line of orbital n, which must be present."""
    if key not in keys:
        raise _bad(name, line, f"orbital {n} has no {key.title()}= line")
    lineno, value = keys[key]
    fields = value.split()
    if len(fields) != 1:
        raise _bad(name, lineno, f"{key.title()}= must be followed by one number")
    return _number(fields[0], name, lineno)


def _orbitals(lines, nmolden, name):
    """(raw (nmolden, nmo) coefficients, energies, occupations, beta flags, symmetries)."""
    orbitals = _mo_blocks(lines, name)
    energy, occ, beta, sym, indices = [], [], [], [], []
    for n, (line, keys, coeffs) in enumerate(orbitals, 1):
        if not coeffs:
            raise _bad(name, line, f"orbital {n} has no coefficients")
        energy.append(_key_number(keys, "ene", n, line, name))
        occ.append(_key_number(keys, "occup", n, line, name))
        spin = keys.get("spin", (line, "Alpha"))
        if spin[1].lower() not in ("alpha", "beta"):
            raise _bad(name, spin[0], f"Spin= {spin[1]!r} is neither Alpha nor Beta")
        beta.append(spin[1].lower() == "beta")
        sym.append(keys.get("sym", (line, "A"))[1])
        index = np.array([c[1] for c in coeffs])
        if index.min() < 0 or index.max() >= nmolden:
            wrong = coeffs[int(np.argmax((index < 0) | (index >= nmolden)))]
            raise _bad(
                name, wrong[0], f"orbital {n} refers to basis function {wrong[1] + 1}, but [GTO] defines {nmolden}"
            )
        if np.unique(index).size != index.size:
            raise _bad(name, line, f"orbital {n} lists a basis function twice")
        indices.append(index)
    counts = [index.size for index in indices]
    complete = [c == nmolden for c in counts]
    if any(complete) and not all(complete):
        n = complete.index(False)
        raise _bad(
            name,
            orbitals[n][0],
            f"orbital {n + 1} has {counts[n]} of the {nmolden} "
            "coefficients that the other orbitals list: the "
            "file is truncated or damaged",
        )
    last = [c[1] for c in orbitals[-1][2]]
    if len(last) < nmolden and last == list(range(len(last))):  # zeros skipped only at the end
        raise _bad(
            name,
            orbitals[-1][2][-1][0],
            f"the last orbital stops after basis function {len(last)} of {nmolden}: the file looks truncated",
        )
    beta = np.array(beta)
    occ = np.array(occ)
    top = 1.0 if beta.any() else 2.0
    bad = np.flatnonzero((occ < -_OCC_TOL) | (occ > top + _OCC_TOL))
    if bad.size:
        raise _bad(name, orbitals[bad[0]][0], f"orbital {bad[0] + 1} has occupation {occ[bad[0]]}, outside 0..{top:g}")
    for label, count in (("alpha", np.count_nonzero(~beta)), ("beta", np.count_nonzero(beta))):
        if count > nmolden:
            raise InputError(f"{name} has {count} {label} orbitals but only {nmolden} basis functions")
    raw = np.zeros((nmolden, len(orbitals)))
    for n, (index, (_, _, coeffs)) in enumerate(zip(indices, orbitals)):
        raw[index, n] = [c[2] for c in coeffs]
    return raw, np.array(energy), occ, beta, sym


def _conversion(shells, pure):
    """(rows, scale, c2s blocks) taking Molden MO rows to hartree's basis.

    For each Molden AO k: hartree row ``rows[k]`` gets ``coefficient / scale[k]``;
    spherical shells inside a cartesian basis are listed in ``mixed`` as
    (first molden AO, first hartree row, l) and transformed with C_l.
    """
    basis_pure = all(pure[l] for _, l, _, _ in shells if l >= 2)
    rows, scale, mixed = [], [], []
    nmolden, nhartree = 0, 0
    for _, l, _, _ in shells:
        spherical = l < 2 or pure[l]
        if spherical and (basis_pure or l < 2):
            order = spherical_shell_order(l)
            rows += [nhartree + p for p in order]
            scale += [1.0] * len(order)
            nmolden += len(order)
            nhartree += 2 * l + 1 if l >= 2 or basis_pure else (l + 1) * (l + 2) // 2
        elif spherical:  # spherical shell in a cartesian basis: C_cart = C_l C_sph
            order = spherical_shell_order(l)
            mixed.append((nmolden, nhartree, l, order))
            rows += [-1] * len(order)
            scale += [1.0] * len(order)
            nmolden += len(order)
            nhartree += (l + 1) * (l + 2) // 2
        else:
            positions, norms = cartesian_shell_order_and_scale(l)
            rows += [nhartree + p for p in positions]
            scale += norms
            nmolden += len(positions)
            nhartree += len(positions)
    return basis_pure, np.array(rows), np.array(scale), mixed, nmolden, nhartree


def _convert_coefficients(raw, rows, scale, mixed, nhartree):
    """hartree (nhartree, nmo) coefficients from Molden ones (nmolden, nmo)."""
    out = np.zeros((nhartree, raw.shape[1]))
    direct = rows >= 0
    with np.errstate(all="ignore"):
        out[rows[direct]] = raw[direct] / scale[direct, None]
        for m0, h0, l, order in mixed:
            sph = np.zeros((2 * l + 1, raw.shape[1]))
            sph[order] = raw[m0 : m0 + 2 * l + 1]
            out[h0 : h0 + (l + 1) * (l + 2) // 2] = cart2sph(l) @ sph
    return out


def _molecule(numbers, coords, occ_alpha, occ_beta, name):
    """Molecule with the charge and multiplicity the occupations imply (checked)."""
    occ = np.concatenate([occ_alpha, occ_beta])
    total = float(occ_alpha.sum() + occ_beta.sum())
    fractional = np.count_nonzero(np.abs(occ - np.round(occ)) > 1e-12)
    if abs(total - round(total)) > _NELEC_TOL + _ROUNDING * fractional:
        raise InputError(f"{name}: the occupations add up to {total:.8g} electrons, not a whole number")
    nelec = round(total)
    if nelec < 1:
        raise InputError(f"{name}: the occupations add up to {nelec} electrons")
    unpaired = abs(round(float(occ_alpha.sum() - occ_beta.sum())))
    try:
        return Molecule(numbers=numbers, coords=coords, charge=int(numbers.sum()) - nelec, multiplicity=unpaired + 1)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


def _parse(text, name):
    """parse_molden without the last-resort conversion of unexpected errors."""
    sections, flags = _sections(text, name)
    for needed, label in (("ATOMS", "[Atoms]"), ("GTO", "[GTO]"), ("MO", "[MO]")):
        if needed not in sections:
            raise InputError(f"{name} has no {label} section")
    numbers, coords = _atoms(*sections["ATOMS"], name)
    shells = _gto(sections["GTO"][1], len(numbers), name)
    pure = _pure_flags(flags, name)
    basis_pure, rows, scale, mixed, nmolden, nhartree = _conversion(shells, pure)
    raw, energy, occ, spin, sym = _orbitals(sections["MO"][1], nmolden, name)
    coeff = _convert_coefficients(raw, rows, scale, mixed, nhartree)
    if not np.all(np.isfinite(coeff)) or (coeff.size and np.abs(coeff).max() > MAX_MO_COEFFICIENT):
        raise InputError(f"{name}: MO coefficients above {MAX_MO_COEFFICIENT:g}: not a wavefunction")
    basis = Basis(
        name=f"from {name}",
        pure=basis_pure,
        shell_atom=[s[0] for s in shells],
        shell_l=[s[1] for s in shells],
        shell_nprim=[len(s[2]) for s in shells],
        shell_prim_start=np.concatenate([[0], np.cumsum([len(s[2]) for s in shells])[:-1]]),
        shell_center=np.array([coords[s[0]] for s in shells]),
        exponents=np.concatenate([s[2] for s in shells]),
        coefficients=np.concatenate([s[3] for s in shells]),
    )
    title = " ".join(line.strip() for _, line in sections.get("TITLE", ("", []))[1] if line.strip())
    if spin.any():
        a, b = np.flatnonzero(~spin), np.flatnonzero(spin)
        if a.size != b.size:
            raise InputError(f"{name} has {a.size} alpha and {b.size} beta orbitals; expected equal counts")
        molecule = _molecule(numbers, coords, occ[a], occ[b], name)
        return MoldenData(
            molecule,
            basis,
            np.stack([energy[a], energy[b]]),
            np.stack([coeff[:, a], coeff[:, b]]),
            np.stack([occ[a], occ[b]]),
            [[sym[i] for i in a], [sym[i] for i in b]],
            title,
        )
    alpha = np.minimum(occ, 1.0)
    molecule = _molecule(numbers, coords, alpha, occ - alpha, name)
    return MoldenData(molecule, basis, energy, coeff, occ, sym, title)


def parse_molden(text, name="Molden file"):
    """MoldenData from the text of a Molden file (pure function); InputError on bad input.

    ``name`` starts every error message (``read_molden`` passes "Molden file PATH").
    """
    if not isinstance(text, str):
        raise InputError(f"{name}: expected text, got {type(text).__name__}")
    try:
        return _parse(text, name)
    except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as exc:
        # Last resort: a fault the checks above missed still ends as one line.
        raise InputError(f"{name} is not a valid Molden file ({type(exc).__name__}: {exc})") from None


def read_molden(path):
    """Read a Molden file into MoldenData; InputError when it is missing, not UTF-8 text,
    malformed or truncated (see the module docstring)."""
    return parse_molden(read_text(path, "Molden file"), name=f"Molden file {path}")
