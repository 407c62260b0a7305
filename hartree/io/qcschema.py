"""SCF (and RI-MP2) results as QCSchema ``AtomicResult`` JSON documents, and back.

Writing (:func:`result_to_qcschema`, :func:`write_json`): the document is a QCSchema v1
``AtomicResult`` (``schema_name: qcschema_output``, ``schema_version: 1``) that validates
with qcelemental's v1 models (``qcelemental.models.AtomicResult``, which is
``qcelemental.models.v1.AtomicResult`` in qcelemental >= 0.50).  It holds the molecule
(bohr), driver ``energy``, model {method, basis}, keywords, ``protocols: {wavefunction:
all}`` (so that a reader keeps the wavefunction), the standard ``properties`` and a
``wavefunction`` with the basis (QCSchema basis layout, coefficients for normalised
primitives) and the orbitals, enough to rebuild them for plotting.

* ``properties`` holds only AtomicResultProperties fields (energies in Eh, dipole in
  e a0).  Quantities QCSchema v1 has no field for keep their names in
  ``extras.hartree.properties`` (SCS-MP2: ``scs_mp2_correlation_energy``,
  ``scs_mp2_total_energy``); :func:`document_properties` merges both places (and reads
  documents of hartree <= 0.1, which had them in ``properties``).
* Orbital arrays are flat, row-major (nbasis, nmo) lists as qcelemental writes them;
  ``calcinfo_nbasis`` and ``calcinfo_nmo`` give the shape.  AOs are in hartree's (PySCF's)
  order, stated in ``extras.hartree.ao_order`` with one label per AO in
  ``extras.hartree.ao_labels``.
* Kohn-Sham DFT: ``model.method`` is the functional as named (e.g. "b3lyp"),
  ``extras.hartree.scf_method`` "rks" or "uks"; ``scf_two_electron_energy`` is the Coulomb
  energy plus the scaled exact exchange, ``scf_xc_energy`` E_xc (semilocal), for VV10
  functionals ``scf_vv10_energy`` the non-local correlation E_nlc, and ``extras.hartree.dft``
  the functional's libxc components and references, the grid (level, points) and the
  electron count it integrated (:meth:`hartree.scf.ks.KohnSham.summary`).
* A dispersion correction (D3(BJ), D3(zero), D4; :mod:`hartree.dft.dispersion`) is
  ``scf_dispersion_correction_energy`` and part of ``scf_total_energy`` and ``return_energy``
  (as Psi4's DFT-D energies are); ``extras.hartree.dispersion`` holds its model, parameters,
  package and version, and a gradient's ``extras.hartree.gradient_components.dispersion``
  its gradient (included in ``return_gradient``).
* A density-fitted SCF has ``extras.hartree.density_fitting``
  (:meth:`hartree.df.engine.FittedEngine.summary`: auxiliary basis, where the fitted tensor lived
  and, with ``--precision mixed``, ``precision``: the schemes of the mixed-precision K builds,
  the largest bound, the fallbacks to FP64 and the FP64 builds after the switch).
* ``wavefunction.restricted`` is True only when alpha and beta are the same in
  everything (RHF).  ROHF documents are ``restricted: false`` with equal alpha and beta
  orbitals and per-spin occupations; ``extras.hartree.scf_method`` says "rohf".
* An SCF that did not converge (``--allow-unconverged``) has ``success: false`` and an
  ``error`` record.  Non-finite numbers are written as ``null`` (JSON has no NaN).

Reading and checking documents is :mod:`hartree.io.qcschema_read`.
"""

import json
import math

import numpy as np

from .._version import __version__
from ..constants import element_symbol
from .files import write_text
from .shells import shell_primitives, shells_by_atom

AO_ORDER_NOTE = (
    "PySCF order: shells as in the basis (grouped by atom); spherical m = -l..l "
    "except p = x, y, z; cartesian xx, xy, xz, yy, yz, zz, ... with a common "
    "radial factor (x^2 and xy differ in norm)"
)

#: The AtomicResultProperties fields (QCSchema v1) hartree writes; any other property
#: goes to ``extras.hartree.properties`` under its own name.
QCSCHEMA_PROPERTIES = frozenset(
    {
        "calcinfo_nbasis",
        "calcinfo_nmo",
        "calcinfo_nalpha",
        "calcinfo_nbeta",
        "calcinfo_natom",
        "nuclear_repulsion_energy",
        "return_energy",
        "return_gradient",
        "scf_one_electron_energy",
        "scf_two_electron_energy",
        "scf_xc_energy",
        "scf_dispersion_correction_energy",
        "scf_total_energy",
        "scf_iterations",
        "scf_dipole_moment",
        "mp2_singles_energy",
        "mp2_doubles_energy",
        "mp2_correlation_energy",
        "mp2_total_energy",
        "mp2_same_spin_correlation_energy",
        "mp2_opposite_spin_correlation_energy",
    }
)


# ------------------------------------------------------------------------------ writing
def _floats(array):
    return [float(x) for x in np.asarray(array, dtype=float).ravel()]


def electron_counts(mo_occ):
    """(nalpha, nbeta) from occupations: UHF (2, nmo) or restricted (nmo,) with 0/1/2."""
    occ = np.asarray(mo_occ, dtype=float)
    if occ.ndim == 2:
        return int(np.rint(occ[0].sum())), int(np.rint(occ[1].sum()))
    return int(np.rint(np.minimum(occ, 1.0).sum())), int(np.rint(np.clip(occ - 1.0, 0.0, 1.0).sum()))


def basis_to_qcschema(basis, molecule):
    """QCSchema ``BasisSet`` dict: one ``center_data`` entry per atom, listed in ``atom_map``."""
    harmonic = "spherical" if basis.pure else "cartesian"
    center_data, atom_map = {}, []
    for atom, shells in enumerate(shells_by_atom(basis, len(molecule.numbers))):
        key = f"{element_symbol(int(molecule.numbers[atom]))}{atom + 1}"
        electron_shells = []
        for shell in shells:
            exponents, coefficients = shell_primitives(basis, shell)
            electron_shells.append(
                {
                    "harmonic_type": harmonic,
                    "angular_momentum": [int(basis.shell_l[shell])],
                    "exponents": _floats(exponents),
                    "coefficients": [_floats(coefficients)],
                }
            )
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
    return [
        ("a", mo_coeff, mo_energy, np.minimum(mo_occ, 1.0)),
        ("b", mo_coeff, mo_energy, np.clip(mo_occ - 1.0, 0.0, 1.0)),
    ]


def _wavefunction(result, basis_doc):
    """The ``wavefunction`` block; ``restricted`` only when alpha and beta are identical."""
    sets = _spin_sets(result)
    restricted = np.asarray(result.mo_coeff).ndim == 2 and np.array_equal(sets[0][3], sets[1][3])
    wfn = {"basis": basis_doc, "restricted": bool(restricted)}
    for spin, coeff, energy, occ in sets:
        wfn[f"scf_orbitals_{spin}"] = _floats(coeff)
        wfn[f"scf_eigenvalues_{spin}"] = _floats(energy)
        wfn[f"scf_occupations_{spin}"] = _floats(occ)
        wfn[f"orbitals_{spin}"] = f"scf_orbitals_{spin}"
        wfn[f"eigenvalues_{spin}"] = f"scf_eigenvalues_{spin}"
        wfn[f"occupations_{spin}"] = f"scf_occupations_{spin}"
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


def split_properties(values):
    """(QCSchema v1 properties, the rest) of a dict of property names -> values."""
    standard = {k: v for k, v in values.items() if k in QCSCHEMA_PROPERTIES}
    return standard, {k: v for k, v in values.items() if k not in QCSCHEMA_PROPERTIES}


def document_properties(doc):
    """All properties of a result document, QCSchema's and hartree's own (Eh), one dict:
    ``properties`` merged with ``extras.hartree.properties`` (where hartree >= 0.1.x puts
    the names QCSchema v1 lacks, e.g. scs_mp2_total_energy; older documents had them in
    ``properties``)."""
    extras = (doc.get("extras") or {}).get("hartree") or {}
    return {**dict(extras.get("properties") or {}), **dict(doc.get("properties") or {})}


def result_to_qcschema(result, *, input_file=None, keywords=None, mp2=None):
    """AtomicResult dict (QCSchema v1) for an SCFResult (pure function; nothing is written).

    input_file: recorded in ``extras.hartree`` when given.  keywords: the options the run
    used (a dict of JSON-able values), recorded as ``keywords``.  mp2: an MP2Result
    computed on ``result``; its QCSchema energies (mp2_total_energy, ...; Eh) join
    ``properties``, the SCS-MP2 ones go to ``extras.hartree.properties``, the MP2 total
    becomes ``return_energy``/``return_result``, ``model.method`` is "mp2" and the MP2
    settings go to ``extras.hartree.mp2``.
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
        **({"scf_xc_energy": float(components["xc"])} if "xc" in components else {}),
        **({"scf_vv10_energy": float(components["vv10"])} if "vv10" in components else {}),
        **({"scf_dispersion_correction_energy": float(components["dispersion"])} if "dispersion" in components else {}),
        "scf_dipole_moment": _floats(result.dipole),
        "calcinfo_nbasis": int(mo_coeff.shape[-2]),
        "calcinfo_nmo": int(mo_coeff.shape[-1]),
        "calcinfo_nalpha": nalpha,
        "calcinfo_nbeta": nbeta,
        "calcinfo_natom": len(molecule.numbers),
    }
    hartree = {
        "scf_method": str(result.method).lower(),
        "converged": bool(result.converged),
        "coulomb_energy": float(components["coulomb"]),
        "exchange_energy": float(components["exchange"]),
        "mulliken_charges": _floats(result.mulliken_charges),
        "s_squared": None if result.s_squared is None else float(result.s_squared),
        "wall_time": float(result.wall_time),
        "timings": {
            k: (int(v) if k.endswith("_builds") else float(v))
            for k, v in (getattr(result, "timings", None) or {}).items()
        },
        "cartesian": not basis.pure,
        "ao_order": AO_ORDER_NOTE,
        "ao_labels": list(basis.ao_labels()),
    }
    if getattr(result, "dft", None):
        hartree["dft"] = dict(result.dft)
    if getattr(result, "dispersion", None):
        hartree["dispersion"] = dict(result.dispersion)
    if getattr(result, "density_fitting", None):
        hartree["density_fitting"] = dict(result.density_fitting)
    if input_file is not None:
        hartree["input_file"] = str(input_file)
    method = str(getattr(result, "xc", None) or result.method).lower()  # DFT: the functional
    energy, routine = float(result.energy), "hartree.scf.run"
    if mp2 is not None:
        standard, own = split_properties({k: float(v) for k, v in mp2.properties().items()})
        properties.update(standard)
        if own:
            hartree["properties"] = own
        method, energy, routine = "mp2", float(mp2.total_energy), "hartree.mp2.run"
        properties["return_energy"] = energy
        hartree["mp2"] = mp2_extras(mp2)
    doc = {
        "schema_name": "qcschema_output",
        "schema_version": 1,
        "molecule": molecule.to_qcschema(),
        "driver": "energy",
        "model": {"method": method, "basis": str(basis.name)},
        "keywords": dict(keywords or {}),
        "protocols": {"wavefunction": "all"},
        "properties": properties,
        "return_result": energy,
        "success": bool(result.converged),
        "provenance": {"creator": "hartree", "version": __version__, "routine": routine, "device": str(result.device)},
        "wavefunction": _wavefunction(result, basis_to_qcschema(basis, molecule)),
        "extras": {"hartree": hartree},
    }
    if not result.converged:
        doc["error"] = {
            "error_type": "convergence_error",
            "error_message": f"the {str(result.method).upper()} SCF did not converge "
            f"in {int(result.iterations)} cycles; the values are "
            "those of the last cycle",
        }
    return doc


def gradient_to_qcschema(gradient, *, input_file=None, keywords=None):
    """AtomicResult dict (QCSchema v1) with driver ``gradient`` for a
    :class:`hartree.gradients.GradientResult`: the SCF document of :func:`result_to_qcschema`
    with ``return_result`` and ``properties.return_gradient`` the gradient (natm x 3 nested
    lists, Eh/bohr, atoms in the molecule's order), and in ``extras.hartree`` its components
    (``gradient_components``), wall time and device."""
    doc = result_to_qcschema(gradient.scf, input_file=input_file, keywords=keywords)
    rows = [_floats(row) for row in np.asarray(gradient.gradient)]
    doc["driver"] = "gradient"
    doc["return_result"] = rows
    doc["properties"]["return_gradient"] = rows
    doc["provenance"]["routine"] = "hartree.gradients.scf_gradient"
    doc["extras"]["hartree"]["gradient_components"] = {
        k: [_floats(row) for row in np.asarray(v)] for k, v in gradient.components.items()
    }
    doc["extras"]["hartree"]["gradient_wall_time"] = float(gradient.wall_time)
    doc["extras"]["hartree"]["gradient_device"] = str(gradient.device)
    return doc


def _scalar(value):
    if isinstance(value, float) and not math.isfinite(value):
        return "null"  # JSON has no NaN/Infinity
    return json.dumps(value)


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
            return "[" + ", ".join(_scalar(v) for v in value) + "]"
        items = [pad + _dumps(v, indent, level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "]"
    return _scalar(value)


def dumps(doc, indent=2):
    """Serialise a document to JSON text (floats with full precision, non-finite as null)."""
    return _dumps(doc, indent, 0) + "\n"


def write_json(path, doc):
    """Write a JSON document (e.g. from :func:`result_to_qcschema`) to ``path`` atomically
    (:func:`hartree.io.files.write_text`)."""
    write_text(path, dumps(doc))
