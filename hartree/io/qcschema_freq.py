"""A frequency job as a QCSchema v1 ``AtomicResult`` with driver ``hessian``.

The document is that of the reference SCF (:func:`hartree.io.qcschema.result_to_qcschema`:
molecule in bohr, model, keywords, properties, wavefunction) with

* ``driver: hessian``; ``return_result`` and ``properties.return_hessian`` the cartesian
  Hessian, 3N x 3N nested lists, Eh/bohr^2, rows and columns atom by atom (x, y, z);
  ``properties.return_gradient`` the gradient at the reference geometry (N x 3, Eh/bohr);
* ``extras.hartree`` (beside the SCF's entries) holding the analysis, in the units its
  key names or says:

  ``frequencies_cm-1`` (3N-6 or 3N-5, unscaled, ascending; imaginary ones negative),
  ``scaled_frequencies_cm-1`` and ``frequency_scale_factor``, ``zero_point_energy`` (Eh,
  from the scaled real frequencies), ``ir_intensities_km_mol``, ``normal_modes``
  (per mode N x 3 cartesian displacements, unit length), ``reduced_masses_amu``,
  ``force_constants_mdyn_angstrom``, ``dipole_derivatives`` (3N x 3, d mu_a / d x_i, e),
  ``masses_amu``, ``point_group``, ``symmetry_number``, ``rotor``,
  ``moments_of_inertia_amu_bohr2``, ``thermochemistry`` (temperature_K, pressure_Pa and
  every total and contribution: energies in Eh, entropies and heat capacities in Eh/K),
  ``finite_differences`` (step_bohr, displacements, resumed, hessian_asymmetry, executor).

The writer is a pure function of a :class:`hartree.vibrations.FrequencyResult`.
"""

from __future__ import annotations

import numpy as np

from .qcschema import result_to_qcschema


def _floats(array):
    return [float(x) for x in np.asarray(array, dtype=float).ravel()]


def _rows(array, width):
    return [_floats(row) for row in np.asarray(array, dtype=float).reshape(-1, width)]


def thermochemistry_record(thermo):
    """``extras.hartree.thermochemistry``: plain numbers (Eh, Eh/K, K, Pa)."""
    parts = {
        name: {
            "energy": float(p.energy),
            "enthalpy": float(p.enthalpy),
            "entropy": float(p.entropy),
            "cv": float(p.cv),
            "cp": float(p.cp),
            "gibbs_free_energy": float(p.gibbs),
        }
        for name, p in thermo.contributions.items()
    }
    return {
        "model": "ideal gas, rigid rotor, harmonic oscillator",
        "temperature_K": float(thermo.temperature),
        "pressure_Pa": float(thermo.pressure),
        "units": "energies Eh per molecule, entropies and heat capacities Eh/K per molecule",
        "electronic_energy": float(thermo.electronic_energy),
        "zero_point_energy": float(thermo.zero_point_energy),
        "internal_energy": float(thermo.internal_energy),
        "enthalpy": float(thermo.enthalpy),
        "entropy": float(thermo.entropy),
        "gibbs_free_energy": float(thermo.gibbs_free_energy),
        "cv": float(thermo.cv),
        "cp": float(thermo.cp),
        "contributions": parts,
        "symmetry_number": int(thermo.symmetry_number),
        "multiplicity": int(thermo.multiplicity),
        "imaginary_frequencies_excluded_cm-1": _floats(thermo.imaginary_frequencies),
        "qrrho": thermo.qrrho,
        "qrrho_cutoff_cm-1": float(thermo.qrrho_cutoff) if thermo.qrrho else None,
        "constants": str(thermo.constants_source),
    }


def frequency_to_qcschema(result, *, input_file=None, keywords=None):
    """AtomicResult dict (QCSchema v1, driver ``hessian``) of a FrequencyResult (module
    docstring); nothing is written."""
    analysis = result.analysis
    natm = result.molecule.natm
    doc = result_to_qcschema(result.gradient.scf, input_file=input_file, keywords=keywords)
    hessian = _rows(result.hessian, 3 * natm)
    doc["driver"] = "hessian"
    doc["return_result"] = hessian
    doc["properties"]["return_hessian"] = hessian
    doc["properties"]["return_gradient"] = _rows(result.gradient.gradient, 3)
    doc["provenance"]["routine"] = "hartree.vibrations.frequencies"
    extras = doc["extras"]["hartree"]
    extras.update(
        {
            "frequencies_cm-1": _floats(analysis.frequencies),
            "frequency_scale_factor": float(analysis.scale_factor),
            "scaled_frequencies_cm-1": _floats(analysis.scaled_frequencies),
            "zero_point_energy": float(result.thermochemistry.zero_point_energy),
            "ir_intensities_km_mol": None if analysis.ir_intensities is None else _floats(analysis.ir_intensities),
            "normal_modes": [_rows(mode, 3) for mode in analysis.normal_modes],
            "normal_modes_convention": "cartesian displacements (bohr), unit length per mode",
            "reduced_masses_amu": _floats(analysis.reduced_masses),
            "force_constants_mdyn_angstrom": _floats(analysis.force_constants),
            "dipole_derivatives": None
            if analysis.dipole_derivatives is None
            else _rows(analysis.dipole_derivatives, 3),
            "masses_amu": _floats(analysis.masses),
            "point_group": str(analysis.point_group),
            "symmetry_number": int(analysis.symmetry_number),
            "rotor": str(analysis.rotor),
            "moments_of_inertia_amu_bohr2": _floats(analysis.moments_of_inertia),
            "thermochemistry": thermochemistry_record(result.thermochemistry),
            "finite_differences": {
                "step_bohr": float(result.step),
                "displacements": int(result.displacements),
                "resumed": int(result.resumed),
                "hessian_asymmetry": float(result.hessian_asymmetry),
                "executor": str(result.executor),
            },
            "frequency_wall_time": float(result.wall_time),
            "frequency_notes": [str(n) for n in result.notes],
        }
    )
    return doc
