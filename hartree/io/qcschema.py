"""SCF results as QCSchema ``AtomicResult`` JSON documents, and back.

The document follows QCSchema v1 (``schema_name: qcschema_output``): the
molecule (bohr), driver ``energy``, model {method, basis}, keywords, the standard
``properties`` and a ``wavefunction`` with the basis (QCSchema basis layout,
coefficients for normalised primitives) and the orbitals, enough to rebuild
orbitals later for plotting (:func:`basis_from_qcschema`, :func:`wavefunction_arrays`).

Orbital arrays are flat, row-major (nbasis, nmo) lists as qcelemental writes
them; ``calcinfo_nbasis`` and ``calcinfo_nmo`` give the shape.  AOs are in
hartree's (PySCF's) order, stated in ``wavefunction.extras.hartree_ao_order``.
"""

import json

import numpy as np

from .. import __version__
from ..basis import Basis, normalized_coefficients
from ..constants import element_symbol
from ..errors import InputError
from .shells import shell_primitives, shells_by_atom

AO_ORDER_NOTE = ("PySCF order: shells as in the basis (grouped by atom); spherical m = -l..l "
                 "except p = x, y, z; cartesian xx, xy, xz, yy, yz, zz, ... with a common "
                 "radial factor (x^2 and xy differ in norm)")


def _floats(array):
    return [float(x) for x in np.asarray(array, dtype=float).ravel()]


def electron_counts(mo_occ):
    """(nalpha, nbeta) from occupations: UHF (2, nmo) or restricted (nmo,) with 0/1/2."""
    occ = np.asarray(mo_occ, dtype=float)
    if occ.ndim == 2:
        return int(round(occ[0].sum())), int(round(occ[1].sum()))
    return int(round(np.minimum(occ, 1.0).sum())), int(round(np.clip(occ - 1.0, 0.0, 1.0).sum()))


def basis_to_qcschema(basis, molecule):
    """QCSchema ``BasisSet`` dict: one ``center_data`` entry per atom, listed in ``atom_map``."""
    harmonic = "spherical" if basis.pure else "cartesian"
    center_data, atom_map = {}, []
    for atom, shells in enumerate(shells_by_atom(basis, len(molecule.numbers))):
        key = f"{element_symbol(int(molecule.numbers[atom]))}{atom + 1}"
        electron_shells = []
        for shell in shells:
            exponents, coefficients = shell_primitives(basis, shell)
            electron_shells.append({
                "function_type": "gto",
                "harmonic_type": harmonic,
                "angular_momentum": [int(basis.shell_l[shell])],
                "exponents": _floats(exponents),
                "coefficients": [_floats(coefficients)],
            })
        center_data[key] = {"electron_shells": electron_shells}
        atom_map.append(key)
    return {
        "schema_name": "qcschema_basis",
        "schema_version": 1,
        "name": str(basis.name),
        "description": "coefficients are for normalised primitives",
        "center_data": center_data,
        "atom_map": atom_map,
        "nbf": int(basis.nao),
    }


def _spin_sets(result):
    """[(suffix, coefficients, energies, per-spin occupations)] for the alpha ("a") and beta ("b") sets.

    Restricted results (RHF/ROHF) share coefficients and energies; their 0/1/2
    occupations are split into alpha (min(occ, 1)) and beta (occ - 1, clipped).
    """
    mo_coeff = np.asarray(result.mo_coeff)
    mo_energy = np.asarray(result.mo_energy)
    mo_occ = np.asarray(result.mo_occ, dtype=float)
    if mo_coeff.ndim == 3:
        return [("a", mo_coeff[0], mo_energy[0], mo_occ[0]), ("b", mo_coeff[1], mo_energy[1], mo_occ[1])]
    return [("a", mo_coeff, mo_energy, np.minimum(mo_occ, 1.0)),
            ("b", mo_coeff, mo_energy, np.clip(mo_occ - 1.0, 0.0, 1.0))]


def _wavefunction(result, basis_doc):
    wfn = {"basis": basis_doc, "restricted": np.asarray(result.mo_coeff).ndim == 2}
    for spin, coeff, energy, occ in _spin_sets(result):
        wfn[f"scf_orbitals_{spin}"] = _floats(coeff)
        wfn[f"scf_eigenvalues_{spin}"] = _floats(energy)
        wfn[f"scf_occupations_{spin}"] = _floats(occ)
        wfn[f"orbitals_{spin}"] = f"scf_orbitals_{spin}"
        wfn[f"eigenvalues_{spin}"] = f"scf_eigenvalues_{spin}"
        wfn[f"occupations_{spin}"] = f"scf_occupations_{spin}"
    wfn["extras"] = {"hartree_ao_order": AO_ORDER_NOTE, "hartree_ao_labels": list(result.basis.ao_labels())}
    return wfn


def _json_count(value):
    """An orbital count as JSON: int, or [alpha, beta] for UHF tuples."""
    if isinstance(value, (tuple, list)):
        return [int(v) for v in value]
    return int(value)


def mp2_extras(mp2):
    """The ``extras.hartree.mp2`` record of an MP2Result: settings, sizes, device, timings."""
    return {
        "reference": str(mp2.reference),
        "aux_basis": str(mp2.aux_basis),
        "naux": int(mp2.naux),
        "frozen_core": int(mp2.frozen_core),
        "nocc": _json_count(mp2.nocc),
        "nvir": _json_count(mp2.nvir),
        "precision": str(mp2.precision),
        "device": str(mp2.device),
        "wall_time": float(mp2.wall_time),
        "timings": {str(k): float(v) for k, v in dict(mp2.timings).items()},
        # run-time decisions (e.g. the GPU "mixed" precision's slice calibration)
        "notes": [str(n) for n in mp2.notes],
    }


def result_to_qcschema(result, *, input_file=None, keywords=None, mp2=None):
    """AtomicResult-style dict for an SCFResult (pure function; nothing is written).

    input_file: recorded in ``extras`` when given.  keywords: the options the run
    used (a dict of JSON-able values), recorded as ``keywords``.  mp2: an
    MP2Result computed on ``result``; its energies join ``properties`` (QCSchema
    names: mp2_total_energy, mp2_correlation_energy, scs_mp2_*, ...), the MP2
    total becomes ``return_energy``/``return_result``, ``model.method`` is "mp2"
    and the MP2 settings go to ``extras.hartree.mp2``.
    """
    molecule, basis = result.molecule, result.basis
    components = result.energy_components
    nalpha, nbeta = electron_counts(result.mo_occ)
    mo_coeff = np.asarray(result.mo_coeff)
    properties = {
        "return_energy": float(result.energy),
        "scf_total_energy": float(result.energy),
        "nuclear_repulsion_energy": float(components["nuclear_repulsion"]),
        "scf_one_electron_energy": float(components["one_electron"]),
        "scf_two_electron_energy": float(components["coulomb"] + components["exchange"]),
        "scf_iterations": int(result.iterations),
        "scf_dipole_moment": _floats(result.dipole),
        "calcinfo_nbasis": int(mo_coeff.shape[-2]),
        "calcinfo_nmo": int(mo_coeff.shape[-1]),
        "calcinfo_nalpha": nalpha,
        "calcinfo_nbeta": nbeta,
        "calcinfo_natom": int(len(molecule.numbers)),
    }
    extras = {
        "hartree": {
            "converged": bool(result.converged),
            "coulomb_energy": float(components["coulomb"]),
            "exchange_energy": float(components["exchange"]),
            "mulliken_charges": _floats(result.mulliken_charges),
            "s_squared": None if result.s_squared is None else float(result.s_squared),
            "wall_time": float(result.wall_time),
            "timings": {k: (int(v) if k.endswith("_builds") else float(v))
                        for k, v in (getattr(result, "timings", None) or {}).items()},
            "cartesian": not basis.pure,
        }
    }
    if input_file is not None:
        extras["hartree"]["input_file"] = str(input_file)
    method, energy, routine = str(result.method).lower(), float(result.energy), "hartree.scf.run"
    if mp2 is not None:
        properties.update({k: float(v) for k, v in mp2.properties().items()})
        method, energy, routine = "mp2", float(mp2.total_energy), "hartree.mp2.run"
        properties["return_energy"] = energy
        extras["hartree"]["scf_method"] = str(result.method).lower()
        extras["hartree"]["mp2"] = mp2_extras(mp2)
    return {
        "schema_name": "qcschema_output",
        "schema_version": 1,
        "molecule": molecule.to_qcschema(),
        "driver": "energy",
        "model": {"method": method, "basis": str(basis.name)},
        "keywords": dict(keywords or {}),
        "properties": properties,
        "return_result": energy,
        "success": bool(result.converged),
        "provenance": {"creator": "hartree", "version": __version__,
                       "routine": routine, "device": str(result.device)},
        "wavefunction": _wavefunction(result, basis_to_qcschema(basis, molecule)),
        "extras": extras,
    }


def _dumps(value, indent, level):
    """JSON text with dicts spread over lines and lists of scalars kept on one line."""
    pad = " " * (indent * (level + 1))
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(str(k))}: {_dumps(v, indent, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "}"
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return "[" + ", ".join(json.dumps(v) for v in value) + "]"
        items = [pad + _dumps(v, indent, level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "]"
    return json.dumps(value)


def dumps(doc, indent=2):
    """Serialise a document to JSON text (floats written with full precision)."""
    return _dumps(doc, indent, 0) + "\n"


def write_json(path, doc):
    """Write a JSON document (e.g. from :func:`result_to_qcschema`) to ``path``."""
    text = dumps(doc)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read_result_json(path):
    """Read a hartree/QCSchema result document; raises InputError if it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        raise InputError(f"file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    if not isinstance(doc, dict) or doc.get("schema_name") != "qcschema_output":
        raise InputError(f"{path}: not a QCSchema result (schema_name 'qcschema_output' expected)")
    for key in ("molecule", "properties", "model"):
        if key not in doc:
            raise InputError(f"{path}: QCSchema result lacks {key!r}")
    return doc


def wavefunction_arrays(doc):
    """(mo_energy, mo_coeff, mo_occ) numpy arrays from a result document.

    Restricted: (nmo,), (nbasis, nmo), (nmo,) with total occupations (0/1/2);
    unrestricted: leading axis 2, as in SCFResult.
    """
    wfn = doc.get("wavefunction")
    if not wfn:
        raise InputError("the QCSchema result has no wavefunction")
    shape = (doc["properties"]["calcinfo_nbasis"], doc["properties"]["calcinfo_nmo"])
    arrays = {}
    for spin in ("a", "b"):
        arrays[spin] = (np.array(wfn[f"scf_eigenvalues_{spin}"]),
                        np.array(wfn[f"scf_orbitals_{spin}"]).reshape(shape),
                        np.array(wfn[f"scf_occupations_{spin}"]))
    (ea, ca, oa), (eb, cb, ob) = arrays["a"], arrays["b"]
    if wfn.get("restricted", True):
        return ea, ca, oa + ob
    return np.stack([ea, eb]), np.stack([ca, cb]), np.stack([oa, ob])


def basis_from_qcschema(doc):
    """Rebuild the hartree Basis of a result document (shell centres from the molecule)."""
    wfn = doc.get("wavefunction")
    if not wfn or "basis" not in wfn:
        raise InputError("the QCSchema result has no wavefunction basis")
    basis_doc = wfn["basis"]
    coords = np.array(doc["molecule"]["geometry"], dtype=float).reshape(-1, 3)
    shell_atom, shell_l, shell_nprim, centers, exponents, coefficients = [], [], [], [], [], []
    pure = None
    for atom, key in enumerate(basis_doc["atom_map"]):
        for shell in basis_doc["center_data"][key]["electron_shells"]:
            harmonic_pure = shell.get("harmonic_type", "spherical") == "spherical"
            if pure is not None and harmonic_pure != pure:
                raise InputError("mixed spherical/cartesian bases are not supported")
            pure = harmonic_pure
            exps = np.array(shell["exponents"], dtype=float)
            for l, coeffs in zip(_shell_momenta(shell), shell["coefficients"]):
                shell_atom.append(atom)
                shell_l.append(l)
                shell_nprim.append(len(exps))
                centers.append(coords[atom])
                exponents.extend(exps)
                coefficients.extend(normalized_coefficients(l, exps, coeffs))
    starts = np.concatenate([[0], np.cumsum(shell_nprim)[:-1]]) if shell_nprim else []
    symbols = tuple(doc["molecule"].get("symbols", ()))
    return Basis(name=basis_doc.get("name", ""), pure=bool(pure) if pure is not None else True,
                 shell_atom=shell_atom, shell_l=shell_l, shell_nprim=shell_nprim,
                 shell_prim_start=starts, shell_center=np.array(centers).reshape(-1, 3),
                 exponents=exponents, coefficients=coefficients, atom_symbols=symbols)


def _shell_momenta(shell):
    """Angular momentum of each contraction of a QCSchema shell (one l, or one per column for sp)."""
    momenta = [int(l) for l in shell["angular_momentum"]]
    ncontr = len(shell["coefficients"])
    if len(momenta) == 1:
        return momenta * ncontr
    if len(momenta) != ncontr:
        raise InputError("QCSchema shell: angular_momentum and coefficients disagree")
    return momenta
