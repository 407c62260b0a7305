"""QCSchema ``AtomicInput`` documents read and checked (``hartree run input.json``,
``hartree batch``, the QCEngine harness).

Two layouts, as qcelemental defines them:

* v1 (``qcelemental.models.v1.AtomicInput``): ``schema_name`` "qcschema_input",
  ``schema_version`` 1, and at the top ``molecule``, ``driver``, ``model`` {method, basis},
  ``keywords``, ``protocols``, ``extras``, ``id``, ``provenance``;
* v2 (``qcelemental.models.v2.AtomicInput``): ``schema_name`` "qcschema_atomic_input",
  ``schema_version`` 2, ``molecule``, ``id``, ``provenance`` and a ``specification`` that
  holds ``driver``, ``model``, ``keywords``, ``program``, ``protocols`` and ``extras``.

:func:`check_atomic_input` returns an :class:`AtomicInputRecord` with every field checked:
the header, no unknown member (qcelemental forbids them too), the molecule (a
:class:`hartree.Molecule`, geometry in bohr, charge and multiplicity from
``molecular_charge``/``molecular_multiplicity``), the driver (energy or gradient; hessian
and properties are refused with what to use instead), the method (a non-empty name: rhf,
uhf, rohf, mp2 or a functional, which :func:`hartree.keywords.method_options` checks, since
that needs libxc), the basis (a name, or absent), and the keywords: names from
:data:`KEYWORDS` with values of the JSON type listed there (their ranges are checked by
:class:`hartree.scf.SCFOptions` before any work).  Anything else ends in one
:class:`~hartree.errors.InputError` naming the file and the field.  How the keywords become
the options of a run: :func:`hartree.keywords.scf_options`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..errors import InputError
from .files import read_json

#: schema_name -> schema_version of the AtomicInput layouts read here
SCHEMA_NAMES = {"qcschema_input": 1, "qc_schema_input": 1, "qcschema_atomic_input": 2}
#: drivers hartree computes from an AtomicInput
DRIVERS = ("energy", "gradient")
#: drivers of QCSchema that hartree refuses, with what to use instead
OTHER_DRIVERS = {
    "hessian": "use 'hartree freq' for the Hessian and frequencies",
    "properties": "'hartree run' writes the SCF properties with driver energy",
}
#: methods an AtomicInput may name besides functionals (model.method, case-insensitive);
#: any other name is read as a functional (hartree.keywords.method_options checks it)
METHODS = ("rhf", "uhf", "rohf", "mp2")

#: Keywords an input may carry: name -> JSON type ("number", "integer", "boolean",
#: "string", "number or null", "string or boolean"; strings are taken in lower case, except
#: those of "string or boolean", which may name a file).  Every name but ``device``, ``unrestricted`` (a
#: functional's UKS; :func:`hartree.keywords.method_options`) and ``grid_response`` (a
#: functional's gradient with the grid's derivative; :func:`hartree.keywords.gradient_options`)
#: is a field of
#: :class:`hartree.scf.SCFOptions` (tests/cli/test_cli_atomic_input.py checks it); options
#: that name files (checkpoint, guess_from) are command-line options only.
KEYWORDS = {
    "device": "string",
    "conv_tol": "number",
    "conv_tol_grad": "number",
    "max_cycle": "integer",
    "diis_space": "integer",
    "guess": "string",
    "level_shift": "number",
    "damping": "number",
    "fallback": "boolean",
    "fallback_kind": "string",
    "incremental_fock": "boolean",
    "full_rebuild_every": "integer",
    "screening_threshold": "number",
    "early_screening": "number or null",
    "early_screening_gradient": "number",
    "lindep_threshold": "number",
    "cartesian": "boolean",
    "grid_level": "integer",
    "nlc_grid_level": "integer",
    "unrestricted": "boolean",
    "grid_response": "boolean",
    "dispersion": "string",  # 'd3bj' | 'd3zero' | 'd4' (SCFOptions.dispersion)
    "density_fitting": "string or boolean",  # true (default aux) or a J/K fitting basis name or path
    "exact_k": "boolean",
}

_V1_MEMBERS = {"schema_name", "schema_version", "id", "molecule", "driver", "model", "keywords"}
_V1_MEMBERS |= {"protocols", "extras", "provenance"}
_V2_MEMBERS = {"schema_name", "schema_version", "id", "molecule", "specification", "provenance"}
_SPEC_MEMBERS = {"schema_name", "keywords", "program", "driver", "model", "protocols", "extras"}
_MODEL_MEMBERS = {"method", "basis"}


@dataclass(frozen=True)
class AtomicInputRecord:
    """What an AtomicInput asks for, checked.

    molecule        :class:`hartree.Molecule` (bohr; charge and multiplicity of the file)
    driver          'energy' | 'gradient'
    method          'rhf' | 'uhf' | 'rohf' | 'mp2' or a functional name (lower case)
    basis           the basis name, or None when the document names none
    keywords        dict of :data:`KEYWORDS` entries (JSON values)
    schema_version  1 or 2 (the layout read)
    id              the document's ``id`` (str) or None
    extras          the document's ``extras`` (v2: the specification's), a dict
    """

    molecule: object
    driver: str
    method: str
    basis: str | None
    keywords: dict = field(default_factory=dict)
    schema_version: int = 1
    id: str | None = None
    extras: dict = field(default_factory=dict)


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return f"a JSON {'object' if isinstance(value, dict) else 'list' if isinstance(value, list) else 'value'}"


def _object(value, where, name):
    if not isinstance(value, dict):
        raise InputError(f"{where}: {name} must be a JSON object, got {_type_name(value)}")
    return value


def _no_unknown(obj, allowed, where, name):
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        prefix = f"{name}." if name else ""
        raise InputError(f"{where}: unknown member {prefix}{unknown[0]} (a QCSchema AtomicInput has no such field)")


def is_atomic_input(doc):
    """True when ``doc`` (a parsed JSON value) is meant as an AtomicInput: its schema_name
    says so, or it has none (qcelemental's default) and holds a driver, model or
    specification."""
    if not isinstance(doc, dict):
        return False
    if "schema_name" in doc:
        return isinstance(doc["schema_name"], str) and doc["schema_name"] in SCHEMA_NAMES
    return any(key in doc for key in ("driver", "model", "specification"))


def _keyword_value(name, value, where):
    kind = KEYWORDS[name]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "integer" and isinstance(value, float) and number and math.isfinite(value) and value == int(value):
        return int(value)
    ok = {
        "number": number,
        "number or null": number or value is None,
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "string": isinstance(value, str),
        "string or boolean": isinstance(value, (str, bool)),
    }[kind]
    if not ok:
        raise InputError(f"{where}: keywords.{name} must be {kind_text(kind)}, got {_type_name(value)}")
    if number and not math.isfinite(value):
        raise InputError(f"{where}: keywords.{name} must be a finite number")
    return value.lower() if kind == "string" else value


def kind_text(kind):
    """'a number', 'an integer', ... for a :data:`KEYWORDS` type."""
    return {"integer": "an integer", "number or null": "a number or null"}.get(kind, f"a {kind}")


def check_keywords(keywords, where="keywords"):
    """A copy of ``keywords`` (a JSON object of :data:`KEYWORDS` entries) with every name
    and value type checked (integral floats become ints, strings lower case); InputError
    naming the first bad entry and ``where``."""
    _object(keywords, where, "keywords")
    checked = {}
    for name, value in keywords.items():
        if name not in KEYWORDS:
            raise InputError(
                f"{where}: unknown keyword {str(name)[:40]!r}; hartree takes {', '.join(sorted(KEYWORDS))}"
            )
        checked[name] = _keyword_value(name, value, where)
    return checked


def _driver(value, where, field_name):
    if not isinstance(value, str):
        raise InputError(f"{where}: {field_name} must be a string, got {_type_name(value)}")
    driver = value.lower()
    if driver in OTHER_DRIVERS:
        raise InputError(
            f"{where}: {field_name} {driver!r}: hartree runs the drivers {', '.join(DRIVERS)} ({OTHER_DRIVERS[driver]})"
        )
    if driver not in DRIVERS:
        raise InputError(f"{where}: {field_name} must be one of {', '.join(DRIVERS)}, got {_type_name(value)}")
    return driver


def _model(value, where, field_name):
    model = _object(value, where, field_name)
    _no_unknown(model, _MODEL_MEMBERS, where, field_name)
    if "method" not in model:
        raise InputError(f"{where}: {field_name}.method is missing")
    method = model["method"]
    if not isinstance(method, str) or not method.strip():
        raise InputError(
            f"{where}: {field_name}.method must be {', '.join(METHODS)} or a functional name, got {_type_name(method)}"
        )
    basis = model.get("basis")
    if isinstance(basis, dict):
        raise InputError(f"{where}: {field_name}.basis must be a basis-set name (a basis-set object is not supported)")
    if basis is not None and (not isinstance(basis, str) or not basis.strip()):
        raise InputError(f"{where}: {field_name}.basis must be a basis-set name, got {_type_name(basis)}")
    return method.strip().lower(), (basis.strip() if basis is not None else None)


def _molecule(doc, where):
    from ..molecule import Molecule

    if "molecule" not in doc:
        raise InputError(f"{where}: molecule is missing")
    mol = _object(doc["molecule"], where, "molecule")
    try:
        return Molecule.from_qcschema(mol)
    except InputError as exc:
        raise InputError(f"{where}: molecule: {str(exc).removeprefix('QCSchema input: ')}") from None
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        raise InputError(f"{where}: molecule is not a usable QCSchema molecule ({exc})") from None


def _header(doc, where):
    """The schema version (1 or 2) of a document claiming to be an AtomicInput, checked."""
    _object(doc, where, "the document")
    name = doc.get("schema_name", "qcschema_atomic_input" if "specification" in doc else "qcschema_input")
    if not isinstance(name, str) or name not in SCHEMA_NAMES:
        raise InputError(
            f"{where}: not a QCSchema AtomicInput (schema_name 'qcschema_input' or 'qcschema_atomic_input' expected)"
        )
    version = SCHEMA_NAMES[name]
    given = doc.get("schema_version", version)
    if given != version or isinstance(given, bool):
        raise InputError(
            f"{where}: schema_version must be {version} for schema_name {name!r} "
            f"(QCSchema v{version} AtomicInput), got {_type_name(given)}"
        )
    return version


def check_atomic_input(doc, where="QCSchema input"):
    """The :class:`AtomicInputRecord` of a parsed AtomicInput document (v1 or v2), every
    field checked (module docstring); InputError naming ``where`` and the field otherwise."""
    version = _header(doc, where)
    if version == 1:
        _no_unknown(doc, _V1_MEMBERS, where, "")
        spec, prefix = doc, ""
    else:
        _no_unknown(doc, _V2_MEMBERS, where, "")
        if "specification" not in doc:
            raise InputError(
                f"{where}: specification is missing (a QCSchema v2 AtomicInput holds driver and model there)"
            )
        spec, prefix = _object(doc["specification"], where, "specification"), "specification."
        _no_unknown(spec, _SPEC_MEMBERS, where, "specification")
        program = spec.get("program")
        if program is not None and not isinstance(program, str):
            raise InputError(f"{where}: specification.program must be a string, got {_type_name(program)}")
    for key in ("driver", "model"):
        if key not in spec:
            raise InputError(f"{where}: {prefix}{key} is missing")
    driver = _driver(spec["driver"], where, f"{prefix}driver")
    method, basis = _model(spec["model"], where, f"{prefix}model")
    keywords = spec.get("keywords")
    keywords = {} if keywords is None else check_keywords(keywords, f"{where}: {prefix}keywords")
    for key in ("protocols", "extras"):
        if spec.get(key) is not None:
            _object(spec[key], where, f"{prefix}{key}")
    ident = doc.get("id")
    if ident is not None and not isinstance(ident, str):
        raise InputError(f"{where}: id must be a string or null, got {_type_name(ident)}")
    return AtomicInputRecord(
        molecule=_molecule(doc, where),
        driver=driver,
        method=method,
        basis=basis,
        keywords=keywords,
        schema_version=version,
        id=ident,
        extras=dict(spec.get("extras") or {}),
    )


def read_atomic_input(path):
    """The :class:`AtomicInputRecord` of the AtomicInput file ``path`` (InputError naming the
    file for a missing or unreadable file, invalid JSON or a bad field)."""
    return check_atomic_input(read_json(path, "input file"), str(path))


def atomic_input_of(path):
    """The :class:`AtomicInputRecord` of ``path`` when it is a ``.json`` AtomicInput, else
    None (an XYZ file, a QCSchema molecule or result: read as a molecule by the caller)."""
    if os.path.splitext(os.fspath(path))[1].lower() != ".json":
        return None
    doc = read_json(path, "molecule file")
    return check_atomic_input(doc, str(path)) if is_atomic_input(doc) else None
