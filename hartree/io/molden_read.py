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
* MO coefficient lines may skip zero coefficients (the index is read, not assumed);
* ``Spin= Beta`` orbitals make an unrestricted result (arrays with a leading axis 2).

Not handled yet: ORCA's extra sign/normalisation quirks of f and g functions, ECP
``[Core]`` electron counts (the charge is then inferred from the occupations only).
"""

import re
from dataclasses import dataclass

import numpy as np

from ..basis import Basis, cart2sph, normalized_coefficients
from ..constants import ANGSTROM_IN_BOHR
from ..errors import InputError
from ..molecule import Molecule
from .molden import MOLDEN_MAX_L, cartesian_shell_order_and_scale, spherical_shell_order

_L_OF = {"s": 0, "p": 1, "d": 2, "f": 3, "g": 4}
_SECTION = re.compile(r"^\s*\[([^\]]*)\]\s*(.*)$")


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


def _float(text):
    return float(text.replace("D", "E").replace("d", "e"))


def _sections(text):
    """{upper-case name: (rest of header line, [lines])}, plus the set of flag sections."""
    sections, flags, current = {}, set(), None
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            name = match.group(1).strip().upper()
            if name in sections and name != "MO":
                raise InputError(f"Molden file has two [{name}] sections")
            current = sections.setdefault(name, (match.group(2).strip(), []))[1]
            flags.add(name)
            continue
        if current is not None:
            current.append(line)
    return sections, flags


def _atoms(header, lines):
    unit = 1.0 if "AU" in header.upper() and "ANG" not in header.upper() else ANGSTROM_IN_BOHR
    if "ANG" not in header.upper() and "AU" not in header.upper():
        raise InputError("Molden [Atoms] section must say AU or Angs")
    numbers, coords = [], []
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 6:
            raise InputError(f"Molden [Atoms] line not understood: {line.strip()!r}")
        z = int(fields[2])
        if z < 1:
            raise InputError("Molden files with dummy or ghost atoms (Z < 1) are not supported")
        numbers.append(z)
        coords.append([_float(v) * unit for v in fields[3:6]])
    if not numbers:
        raise InputError("Molden [Atoms] section has no atoms")
    return np.array(numbers), np.array(coords)


def _gto(lines, natm):
    """[(atom, l, exponents, raw coefficients)] in file order (sp shells split)."""
    shells, atom, n = [], None, 0
    while n < len(lines):
        fields = lines[n].split()
        n += 1
        if not fields:
            continue
        if fields[0].isdigit():
            atom = int(fields[0]) - 1
            if not 0 <= atom < natm:
                raise InputError(f"Molden [GTO] refers to atom {atom + 1}, but [Atoms] has {natm}")
            continue
        kind = fields[0].lower()
        if atom is None or kind not in ("s", "p", "d", "f", "g", "sp") or len(fields) < 2:
            raise InputError(f"Molden [GTO] line not understood: {lines[n - 1].strip()!r}")
        nprim = int(fields[1])
        scale = _float(fields[2]) if len(fields) > 2 else 1.0
        scale = scale if scale != 0.0 else 1.0
        rows = [[_float(v) for v in lines[n + k].split()] for k in range(nprim)]
        n += nprim
        exps = np.array([r[0] for r in rows]) * scale * scale
        if kind == "sp":
            shells.append((atom, 0, exps, np.array([r[1] for r in rows])))
            shells.append((atom, 1, exps, np.array([r[2] for r in rows])))
        else:
            shells.append((atom, _L_OF[kind], exps, np.array([r[1] for r in rows])))
    if not shells:
        raise InputError("Molden [GTO] section has no shells")
    return shells


def _pure_flags(flags):
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
    return pure


def _mo_blocks(lines):
    """[(dict of keys, [(ao index (0-based), coefficient)])] for each orbital."""
    orbitals, keys, coeffs = [], {}, []
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if "=" in text:
            if coeffs:
                orbitals.append((keys, coeffs))
                keys, coeffs = {}, []
            key, value = text.split("=", 1)
            keys[key.strip().lower()] = value.strip()
            continue
        fields = text.split()
        if len(fields) < 2:
            raise InputError(f"Molden [MO] line not understood: {text!r}")
        coeffs.append((int(fields[0]) - 1, _float(fields[1])))
    if coeffs:
        orbitals.append((keys, coeffs))
    if not orbitals:
        raise InputError("Molden file has no orbitals in [MO]")
    return orbitals


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
    out[rows[direct]] = raw[direct] / scale[direct, None]
    for m0, h0, l, order in mixed:
        sph = np.zeros((2 * l + 1, raw.shape[1]))
        sph[order] = raw[m0:m0 + 2 * l + 1]
        out[h0:h0 + (l + 1) * (l + 2) // 2] = cart2sph(l) @ sph
    return out


def _molecule(numbers, coords, occ_alpha, occ_beta):
    nelec = int(round(float(occ_alpha.sum() + occ_beta.sum())))
    unpaired = abs(int(round(float(occ_alpha.sum() - occ_beta.sum()))))
    return Molecule(numbers=numbers, coords=coords, charge=int(numbers.sum()) - nelec,
                    multiplicity=unpaired + 1)


def parse_molden(text, name="Molden file"):
    """MoldenData from the text of a Molden file (pure function); InputError on bad input."""
    sections, flags = _sections(text)
    for needed in ("ATOMS", "GTO", "MO"):
        if needed not in sections:
            raise InputError(f"{name} has no [{needed.title()}] section")
    numbers, coords = _atoms(*sections["ATOMS"])
    shells = _gto(sections["GTO"][1], len(numbers))
    if max(l for _, l, _, _ in shells) > MOLDEN_MAX_L:
        raise InputError(f"{name}: shells above g are not defined in Molden files")
    pure = _pure_flags(flags)
    basis_pure, rows, scale, mixed, nmolden, nhartree = _conversion(shells, pure)
    basis = Basis(
        name=f"from {name}", pure=basis_pure,
        shell_atom=[s[0] for s in shells], shell_l=[s[1] for s in shells],
        shell_nprim=[len(s[2]) for s in shells],
        shell_prim_start=np.concatenate([[0], np.cumsum([len(s[2]) for s in shells])[:-1]]),
        shell_center=np.array([coords[s[0]] for s in shells]),
        exponents=np.concatenate([s[2] for s in shells]),
        coefficients=np.concatenate([normalized_coefficients(s[1], s[2], s[3]) for s in shells]))
    orbitals = _mo_blocks(sections["MO"][1])
    raw = np.zeros((nmolden, len(orbitals)))
    energy, occ, spin, sym = [], [], [], []
    for n, (keys, coeffs) in enumerate(orbitals):
        index = np.array([c[0] for c in coeffs])
        if index.min() < 0 or index.max() >= nmolden:
            raise InputError(f"{name}: orbital {n + 1} refers to basis function {index.max() + 1}, "
                             f"but [GTO] defines {nmolden}")
        raw[index, n] = [c[1] for c in coeffs]
        energy.append(_float(keys.get("ene", "0")))
        occ.append(_float(keys.get("occup", "0")))
        spin.append(keys.get("spin", "alpha").lower().startswith("b"))
        sym.append(keys.get("sym", "A"))
    coeff = _convert_coefficients(raw, rows, scale, mixed, nhartree)
    energy, occ, spin = np.array(energy), np.array(occ), np.array(spin)
    if spin.any():
        a, b = np.flatnonzero(~spin), np.flatnonzero(spin)
        if a.size != b.size:
            raise InputError(f"{name}: {a.size} alpha and {b.size} beta orbitals; expected equal counts")
        molecule = _molecule(numbers, coords, occ[a], occ[b])
        return MoldenData(molecule, basis, np.stack([energy[a], energy[b]]),
                          np.stack([coeff[:, a], coeff[:, b]]), np.stack([occ[a], occ[b]]),
                          [[sym[i] for i in a], [sym[i] for i in b]], _title(sections))
    alpha = np.minimum(occ, 1.0)
    molecule = _molecule(numbers, coords, alpha, occ - alpha)
    return MoldenData(molecule, basis, energy, coeff, occ, sym, _title(sections))


def _title(sections):
    lines = sections.get("TITLE", ("", []))[1]
    return " ".join(line.strip() for line in lines if line.strip())


def read_molden(path):
    """Read a Molden file into MoldenData; InputError when it is missing or malformed."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return parse_molden(text, name=str(path))
    except (ValueError, IndexError) as exc:
        raise InputError(f"{path}: not a valid Molden file ({exc})") from None
