"""QCSchema result documents read back and checked (``hartree orbitals result.json``).

Reading (:func:`read_result_json`, :func:`wavefunction_arrays`, :func:`basis_from_qcschema`,
:func:`read_wavefunction`): every field used is checked (types, lengths against
calcinfo_nbasis/nmo and the molecule, finite numbers, exponents > 0, l in 0..6,
occupations per spin in [0, 1]); a document that fails raises one
:class:`~hartree.errors.InputError` naming the field, never another exception.

The writer, and what the document holds, is :mod:`hartree.io.qcschema`.
"""

import json
import math

import numpy as np

from ..basis import Basis, normalized_coefficients
from ..basis.angular import MAX_L
from ..constants import MAX_MO_COEFFICIENT
from ..errors import InputError
from .files import read_json
from .shells import ao_count

# ------------------------------------------------------------------------------ reading
_DOC = "QCSchema result"


def _show(value):
    """A short text of a (JSON) value for an error message."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object(value, where, field):
    if not isinstance(value, dict):
        raise InputError(f"{where}: {field} must be a JSON object, got {_show(value)}")
    return value


def _member(obj, key, where, field):
    if key not in obj:
        raise InputError(f"{where}: {field} is missing")
    return obj[key]


def _count(value, where, field, minimum=0):
    """A JSON integer >= minimum (a float with an integral value is accepted)."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
        return value
    raise InputError(f"{where}: {field} must be an integer >= {minimum}, got {_show(value)}")


def _numbers(value, where, field, length=None, expected=""):
    """Float array (n,) of a JSON list of finite numbers, of ``length`` when given."""
    if not isinstance(value, list) or not set(map(type, value)) <= {int, float}:
        raise InputError(f"{where}: {field} must be a list of numbers, got {_show(value)}")
    try:
        array = np.array(value, dtype=float)
    except OverflowError:
        array = np.array([math.inf])
    if not np.all(np.isfinite(array)):
        raise InputError(f"{where}: {field} holds a number that is not finite in double precision")
    if length is not None and array.size != length:
        raise InputError(f"{where}: {field} has {array.size} numbers, expected {expected or length}")
    return array


def _header(doc, where):
    if not isinstance(doc, dict) or doc.get("schema_name") != "qcschema_output":
        raise InputError(f"{where}: not a QCSchema result (schema_name 'qcschema_output' expected)")
    if doc.get("schema_version", 1) != 1:
        raise InputError(
            f"{where}: schema_version must be 1 (QCSchema v1 AtomicResult), got {_show(doc.get('schema_version'))}"
        )
    for key in ("molecule", "properties", "model"):
        _object(_member(doc, key, where, key), where, key)
    props = doc["properties"]
    for key, value in props.items():
        if key.startswith("calcinfo_") and value is not None:
            _count(value, where, f"properties.{key}", 1 if key in ("calcinfo_nbasis", "calcinfo_nmo") else 0)
        elif not (value is None or _is_number(value) or isinstance(value, list)):
            raise InputError(f"{where}: properties.{key} must be a number or a list of numbers, got {_show(value)}")


def _geometry(doc, where):
    """(symbols, coordinates (natoms, 3) in bohr) of the document's molecule, checked."""
    mol = _object(_member(doc, "molecule", where, "molecule"), where, "molecule")
    symbols = _member(mol, "symbols", where, "molecule.symbols")
    if not isinstance(symbols, list) or not symbols or not all(isinstance(s, str) for s in symbols):
        raise InputError(f"{where}: molecule.symbols must be a non-empty list of element symbols")
    natoms = len(symbols)
    coords = _numbers(
        _member(mol, "geometry", where, "molecule.geometry"),
        where,
        "molecule.geometry",
        3 * natoms,
        f"3 x {natoms} atoms = {3 * natoms}",
    )
    props = doc.get("properties")
    natom = props.get("calcinfo_natom") if isinstance(props, dict) else None
    if natom is not None and natom != natoms:
        raise InputError(f"{where}: properties.calcinfo_natom is {_show(natom)} but the molecule has {natoms} atoms")
    return symbols, coords.reshape(natoms, 3)


def _molecule(doc, where):
    """The hartree Molecule of a result document (InputError naming the file otherwise)."""
    from ..molecule import Molecule

    _geometry(doc, where)
    try:
        return Molecule.from_qcschema(doc["molecule"])
    except InputError as exc:
        raise InputError(f"{where}: molecule: {str(exc).removeprefix('QCSchema input: ')}") from None
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        raise InputError(f"{where}: molecule is not a usable QCSchema molecule ({exc})") from None


def check_result_document(doc, where=_DOC):
    """Check a result document (header, molecule, properties and, when present, the
    wavefunction with its basis); returns it, or raises InputError naming the field."""
    _header(doc, where)
    _molecule(doc, where)
    if doc.get("wavefunction") is not None:
        _orbital_sets(doc, where)
        _basis_shells(doc, where)
    return doc


def read_result_json(path):
    """Read and check a hartree/QCSchema result document (:func:`check_result_document`);
    InputError for a missing or unreadable file, invalid JSON or a damaged document."""
    doc = read_json(path, "result file")
    return check_result_document(doc, str(path))


def _wavefunction_block(doc, where):
    _object(doc, where, "the document")
    wfn = doc.get("wavefunction")
    if not wfn:
        raise InputError(f"{where}: the QCSchema result has no wavefunction")
    return _object(wfn, where, "wavefunction")


def _shape(doc, where):
    """(nbasis, nmo) from properties.calcinfo_nbasis / calcinfo_nmo."""
    props = _object(_member(doc, "properties", where, "properties"), where, "properties")
    nbasis = _count(
        _member(props, "calcinfo_nbasis", where, "properties.calcinfo_nbasis"), where, "properties.calcinfo_nbasis", 1
    )
    nmo = _count(_member(props, "calcinfo_nmo", where, "properties.calcinfo_nmo"), where, "properties.calcinfo_nmo", 1)
    if nmo > nbasis:
        raise InputError(f"{where}: properties.calcinfo_nmo ({nmo}) exceeds calcinfo_nbasis ({nbasis})")
    return nbasis, nmo


def _orbital_sets(doc, where):
    """(restricted, ((energies (nmo,), coefficients (nbasis, nmo), occupations (nmo,)) for
    alpha and beta)), checked; a restricted document without beta arrays uses alpha's."""
    wfn = _wavefunction_block(doc, where)
    nbasis, nmo = _shape(doc, where)
    restricted = _member(wfn, "restricted", where, "wavefunction.restricted")
    if not isinstance(restricted, bool):
        raise InputError(f"{where}: wavefunction.restricted must be true or false, got {_show(restricted)}")
    sets = []
    for spin in ("a", "b"):
        arrays = []
        for name, size, expected in (
            ("eigenvalues", nmo, f"calcinfo_nmo = {nmo}"),
            ("orbitals", nbasis * nmo, f"calcinfo_nbasis x calcinfo_nmo = {nbasis} x {nmo}"),
            ("occupations", nmo, f"calcinfo_nmo = {nmo}"),
        ):
            key = f"scf_{name}_{spin}"
            if spin == "b" and restricted and (name != "occupations" or key not in wfn):
                arrays.append(sets[0][len(arrays)])  # QCSchema: beta skipped = alpha
                continue
            arrays.append(
                _numbers(_member(wfn, key, where, f"wavefunction.{key}"), where, f"wavefunction.{key}", size, expected)
            )
        energies, coeff, occ = arrays
        bad = np.flatnonzero((occ < -1e-8) | (occ > 1.0 + 1e-8))
        if bad.size:
            raise InputError(
                f"{where}: wavefunction.scf_occupations_{spin}[{bad[0]}] = {occ[bad[0]]:g} "
                "is outside [0, 1] (electrons per spin orbital)"
            )
        sets.append((energies, coeff.reshape(nbasis, nmo), np.clip(occ, 0.0, 1.0)))
    return restricted, sets


def _rohf_layout(doc, sets):
    """Whether an unrestricted-layout document is hartree's ROHF (same orbitals for both spins)."""
    extras = doc.get("extras")
    hartree = extras.get("hartree") if isinstance(extras, dict) else None
    method = hartree.get("scf_method") if isinstance(hartree, dict) else None
    (ea, ca, _), (eb, cb, _) = sets
    return method == "rohf" and np.array_equal(ea, eb) and np.array_equal(ca, cb)


def wavefunction_arrays(doc, where=_DOC):
    """(mo_energy, mo_coeff, mo_occ) numpy arrays from a result document, checked.

    Restricted (RHF, and hartree's ROHF): (nmo,) Eh, (nbasis, nmo), (nmo,) total
    occupations 0..2; unrestricted: leading axis 2 (alpha, beta), as in SCFResult.
    """
    restricted, sets = _orbital_sets(doc, where)
    (ea, ca, oa), (eb, cb, ob) = sets
    for spin, c in (("a", ca), ("b", cb)):
        if c.size and np.abs(c).max() > MAX_MO_COEFFICIENT:
            raise InputError(
                f"{where}: wavefunction.scf_orbitals_{spin} holds coefficients "
                f"above {MAX_MO_COEFFICIENT:g}: not a wavefunction"
            )
    if restricted or _rohf_layout(doc, sets):
        return ea, ca, oa + ob
    return np.stack([ea, eb]), np.stack([ca, cb]), np.stack([oa, ob])


_SHELL_KEYS = {"angular_momentum", "harmonic_type", "exponents", "coefficients", "function_type"}
_CENTER_KEYS = {"electron_shells", "ecp_electrons", "ecp_potentials"}


def _shell_data(shell, where, field):
    """(pure, [(l, exponents (nprim,), coefficients for normalised primitives (nprim,))])."""
    _object(shell, where, field)
    unknown = sorted(set(shell) - _SHELL_KEYS)
    if unknown:
        raise InputError(f"{where}: {field} has an unknown key {unknown[0]!r}")
    if shell.get("function_type", "gto") != "gto":
        raise InputError(f"{where}: {field}.function_type must be 'gto', got {_show(shell['function_type'])}")
    harmonic = _member(shell, "harmonic_type", where, f"{field}.harmonic_type")
    if harmonic not in ("spherical", "cartesian"):
        raise InputError(f"{where}: {field}.harmonic_type must be 'spherical' or 'cartesian', got {_show(harmonic)}")
    momenta = _member(shell, "angular_momentum", where, f"{field}.angular_momentum")
    if (
        not isinstance(momenta, list)
        or not momenta
        or not all(isinstance(l, int) and not isinstance(l, bool) and 0 <= l <= MAX_L for l in momenta)
    ):
        raise InputError(
            f"{where}: {field}.angular_momentum must be a non-empty list of integers "
            f"in 0..{MAX_L}, got {_show(momenta)}"
        )
    exps = _numbers(_member(shell, "exponents", where, f"{field}.exponents"), where, f"{field}.exponents")
    if exps.size == 0 or np.any(exps <= 0):
        raise InputError(f"{where}: {field}.exponents must be a non-empty list of positive numbers (bohr^-2)")
    columns = _member(shell, "coefficients", where, f"{field}.coefficients")
    if not isinstance(columns, list) or not columns:
        raise InputError(f"{where}: {field}.coefficients must be a non-empty list of coefficient lists")
    columns = [
        _numbers(c, where, f"{field}.coefficients[{i}]", exps.size, f"one per exponent = {exps.size}")
        for i, c in enumerate(columns)
    ]
    if len(momenta) not in (1, len(columns)):
        raise InputError(
            f"{where}: {field}.angular_momentum has {len(momenta)} entries for {len(columns)} coefficient lists"
        )
    momenta = momenta * len(columns) if len(momenta) == 1 else momenta
    return harmonic == "spherical", [(l, exps, c) for l, c in zip(momenta, columns)]


def _basis_shells(doc, where):
    """(pure, name, [(atom, l, exponents, hartree coefficients)]) of the wavefunction basis, checked
    against the molecule (atom_map), its own nbf and properties.calcinfo_nbasis."""
    wfn = _wavefunction_block(doc, where)
    basis_doc = _object(_member(wfn, "basis", where, "wavefunction.basis"), where, "wavefunction.basis")
    symbols, _ = _geometry(doc, where)
    atom_map = _member(basis_doc, "atom_map", where, "wavefunction.basis.atom_map")
    if not isinstance(atom_map, list) or not all(isinstance(k, str) for k in atom_map):
        raise InputError(f"{where}: wavefunction.basis.atom_map must be a list of center_data keys")
    if len(atom_map) != len(symbols):
        raise InputError(f"{where}: wavefunction.basis.atom_map has {len(atom_map)} entries for {len(symbols)} atoms")
    center_data = _object(
        _member(basis_doc, "center_data", where, "wavefunction.basis.center_data"),
        where,
        "wavefunction.basis.center_data",
    )
    name = basis_doc.get("name", "")
    if not isinstance(name, str):
        raise InputError(f"{where}: wavefunction.basis.name must be a string, got {_show(name)}")
    pure, shells = None, []
    for atom, key in enumerate(atom_map):
        if key not in center_data:
            raise InputError(f"{where}: wavefunction.basis.atom_map[{atom}] is {key!r}, which center_data lacks")
        field = f"wavefunction.basis.center_data.{key}"
        center = _object(center_data[key], where, field)
        unknown = sorted(set(center) - _CENTER_KEYS)
        if unknown:
            raise InputError(f"{where}: {field} has an unknown key {unknown[0]!r}")
        if center.get("ecp_electrons", 0) not in (0, None) or center.get("ecp_potentials"):
            raise InputError(f"{where}: {field} has an ECP, which hartree does not support")
        entries = _member(center, "electron_shells", where, f"{field}.electron_shells")
        if not isinstance(entries, list):
            raise InputError(f"{where}: {field}.electron_shells must be a list of shells")
        for index, entry in enumerate(entries):
            shell_pure, parts = _shell_data(entry, where, f"{field}.electron_shells[{index}]")
            if pure is not None and shell_pure != pure:
                raise InputError(
                    f"{where}: {field}.electron_shells[{index}].harmonic_type mixes "
                    "spherical and cartesian shells, which hartree does not support"
                )
            pure = shell_pure
            for l, exps, coeffs in parts:
                with np.errstate(all="ignore"):
                    try:
                        scaled = normalized_coefficients(l, exps, coeffs)
                    except (ValueError, ZeroDivisionError, OverflowError):
                        scaled = np.array([math.nan])
                if not np.all(np.isfinite(scaled)):
                    raise InputError(
                        f"{where}: {field}.electron_shells[{index}] cannot be normalised "
                        "(zero coefficients or exponents out of range)"
                    )
                shells.append((atom, l, exps, scaled))
    if not shells:
        raise InputError(f"{where}: wavefunction.basis has no shells")
    nao = sum(ao_count(l, pure) for _, l, _, _ in shells)
    nbf = basis_doc.get("nbf")
    if nbf is not None and _count(nbf, where, "wavefunction.basis.nbf") != nao:
        raise InputError(f"{where}: wavefunction.basis.nbf is {nbf} but its shells hold {nao} functions")
    props = doc.get("properties")
    nbasis = props.get("calcinfo_nbasis") if isinstance(props, dict) else None
    if nbasis is not None and _count(nbasis, where, "properties.calcinfo_nbasis", 1) != nao:
        raise InputError(
            f"{where}: properties.calcinfo_nbasis is {nbasis} but wavefunction.basis holds {nao} functions"
        )
    return pure, name, shells


def basis_from_qcschema(doc, where=_DOC):
    """The hartree Basis of a result document (shell centres from the molecule, bohr), checked."""
    symbols, coords = _geometry(doc, where)
    pure, name, shells = _basis_shells(doc, where)
    nprim = [len(exps) for _, _, exps, _ in shells]
    try:
        return Basis(
            name=name,
            pure=pure,
            shell_atom=[s[0] for s in shells],
            shell_l=[s[1] for s in shells],
            shell_nprim=nprim,
            shell_prim_start=np.concatenate([[0], np.cumsum(nprim)[:-1]]),
            shell_center=coords[[s[0] for s in shells]],
            exponents=np.concatenate([s[2] for s in shells]),
            coefficients=np.concatenate([s[3] for s in shells]),
            atom_symbols=tuple(symbols),
        )
    except ValueError as exc:
        raise InputError(f"{where}: wavefunction.basis is not a basis hartree can use ({exc})") from None


def read_wavefunction(path):
    """(molecule, basis, mo_energy, mo_coeff, mo_occ) of a result JSON file, every part
    checked (InputError naming the file and field otherwise); arrays as for
    :func:`wavefunction_arrays`, and the occupations must hold the molecule's electrons."""
    where = str(path)
    doc = read_result_json(path)
    molecule = _molecule(doc, where)
    mo_energy, mo_coeff, mo_occ = wavefunction_arrays(doc, where)
    basis = basis_from_qcschema(doc, where)
    electrons = float(np.sum(mo_occ))
    if abs(electrons - molecule.nelectron) > 1e-6:
        raise InputError(
            f"{where}: the wavefunction occupations hold {electrons:g} electrons, but the "
            f"molecule has {molecule.nelectron}"
        )
    return molecule, basis, mo_energy, mo_coeff, mo_occ
