"""An optimization as a QCSchema v1 ``OptimizationResult`` document (``hartree opt --json``).

The document validates with qcelemental's v1 model (``qcelemental.models.v1.
OptimizationResult``; ``qcelemental.models.OptimizationResult`` before qcelemental 0.50):

* ``initial_molecule`` and ``final_molecule`` (QCSchema molecules, geometry in bohr);
* ``energies``: the energy of every step, Eh, in order;
* ``trajectory``: one ``AtomicResult`` (driver ``gradient``) per step: its molecule, the
  energy and ``return_gradient`` (natm x 3, Eh/bohr), SCF cycles and dipole (e bohr);
  ``extras.hartree`` of each holds the step number, the convergence quantities
  (RMS/max gradient in Eh/bohr, RMS/max displacement in Angstrom) and the rejected and
  converged flags;
* ``success``: whether the optimization converged; an unconverged one has an ``error``
  record (``convergence_error``) and its last geometry as ``final_molecule``;
* ``input_specification``: the method, basis and SCF keywords of every gradient;
  ``keywords``: the optimizer's (convergence set and its criteria, coordinate system,
  step limit, transition state, constraints);
* ``extras.hartree``: iterations, gradient evaluations, wall time, device, geomeTRIC's
  version.
"""

from __future__ import annotations

import numpy as np

from .._version import __version__
from ..io.qcschema import write_json


def _floats(array):
    return [float(x) for x in np.asarray(array, dtype=float).ravel()]


def _rows(array):
    return [_floats(row) for row in np.asarray(array, dtype=float)]


def _none_or_float(value):
    return None if value is None else float(value)


def step_document(step, method, basis, keywords):
    """AtomicResult dict (QCSchema v1, driver gradient) of one :class:`OptimizationStep`."""
    mol = step.molecule
    gradient = _rows(step.gradient)
    return {
        "schema_name": "qcschema_output",
        "schema_version": 1,
        "molecule": mol.to_qcschema(),
        "driver": "gradient",
        "model": {"method": method, "basis": basis},
        "keywords": dict(keywords),
        "properties": {
            "return_energy": float(step.energy),
            "scf_total_energy": float(step.energy),
            "nuclear_repulsion_energy": float(mol.nuclear_repulsion()),
            "scf_iterations": int(step.scf_iterations),
            "scf_dipole_moment": _floats(step.dipole),
            "calcinfo_natom": int(mol.natm),
            "return_gradient": gradient,
        },
        "return_result": gradient,
        "success": True,
        "provenance": {"creator": "hartree", "version": __version__, "routine": "hartree.optimize.optimize"},
        "extras": {
            "hartree": {
                "step": int(step.step),
                "delta_energy": _none_or_float(step.delta_energy),
                "rms_gradient": float(step.rms_gradient),
                "max_gradient": float(step.max_gradient),
                "rms_displacement_angstrom": _none_or_float(step.rms_displacement),
                "max_displacement_angstrom": _none_or_float(step.max_displacement),
                "rejected": bool(step.rejected),
                "converged": bool(step.converged),
                "wall_time": float(step.wall_time),
            }
        },
    }


def optimizer_keywords(result):
    """The optimizer settings of ``result`` as a JSON-able dict."""
    c = result.criteria
    keywords = {
        "program": "geometric",
        "convergence_set": c.name,
        "convergence_energy": c.energy,
        "convergence_grms": c.grms,
        "convergence_gmax": c.gmax,
        "convergence_drms": c.drms,
        "convergence_dmax": c.dmax,
        "coordsys": result.coordinates,
        "maxiter": int(result.max_steps),
        "transition": bool(result.transition_state),
    }
    if result.constraints is not None:
        keywords["constraints"] = result.constraints
    return keywords


def optimization_to_qcschema(result, *, scf_keywords=None, input_file=None):
    """OptimizationResult dict (QCSchema v1) for an :class:`OptimizationResult` (pure
    function; nothing is written).  scf_keywords: the SCF settings of the gradients
    (recorded in ``input_specification.keywords`` and each trajectory entry)."""
    import geometric

    scf_keywords = dict(scf_keywords or {})
    xc = getattr(getattr(result.final, "scf", None), "xc", None)
    method = str(xc or result.method).lower()  # DFT: the functional, as hartree run's documents
    model = {"method": method, "basis": result.basis}
    hartree = {
        "converged": bool(result.converged),
        "iterations": int(result.iterations),
        "gradient_evaluations": int(result.gradient_evaluations),
        "wall_time": float(result.wall_time),
        "device": str(result.device),
        "geometric_version": str(geometric.__version__),
    }
    if input_file is not None:
        hartree["input_file"] = str(input_file)
    doc = {
        "schema_name": "qcschema_optimization_output",
        "schema_version": 1,
        "initial_molecule": result.initial_molecule.to_qcschema(),
        "final_molecule": result.molecule.to_qcschema(),
        "input_specification": {
            "schema_name": "qcschema_input",
            "schema_version": 1,
            "driver": "gradient",
            "model": model,
            "keywords": scf_keywords,
        },
        "keywords": optimizer_keywords(result),
        "protocols": {"trajectory": "all"},
        "energies": [float(e) for e in result.energies],
        "trajectory": [step_document(s, method, result.basis, scf_keywords) for s in result.steps],
        "success": bool(result.converged),
        "provenance": {"creator": "hartree", "version": __version__, "routine": "hartree.optimize.optimize"},
        "extras": {"hartree": hartree},
    }
    if not result.converged:
        doc["error"] = {
            "error_type": "convergence_error",
            "error_message": f"the geometry optimization did not converge in {result.max_steps} steps; "
            "final_molecule is the last geometry evaluated",
        }
    return doc


def write_optimization_json(path, result, *, scf_keywords=None, input_file=None):
    """Write the document of :func:`optimization_to_qcschema` to ``path`` atomically."""
    write_json(path, optimization_to_qcschema(result, scf_keywords=scf_keywords, input_file=input_file))
