"""hartree as an ASE calculator: energy, forces and dipole for ASE's optimizers and dynamics.

    from ase.build import molecule
    from hartree.ase import Hartree

    atoms = molecule("H2O")
    atoms.calc = Hartree(basis="def2-svp", method="rhf", charge=0, multiplicity=1, device="auto")
    atoms.get_potential_energy()      # eV
    atoms.get_forces()                # eV/Angstrom, (natm, 3)
    atoms.get_dipole_moment()         # e Angstrom (nuclear + electronic, about the origin)
    atoms.calc = Hartree(basis="def2-svp", method="b3lyp", grid_level=3)   # Kohn-Sham DFT
    atoms.calc = Hartree(basis="def2-svp", method="b3lyp", dispersion="d3bj")  # B3LYP-D3(BJ)

ASE's conventions (``ase.calculators.calculator.Calculator``): ``implemented_properties``,
``results``, parameters set at construction or with ``calc.set(...)`` (which clears the
results), a new calculation when the atoms change.  Each calculation runs
:func:`hartree.scf.run` and, when forces are asked for, :func:`hartree.gradients.scf_gradient`
on the SCF's device, with the SCF tolerances of a gradient
(:data:`hartree.gradients.GRADIENT_SCF_DEFAULTS`) always, so that energies and forces of a
trajectory belong together.  When only the positions changed since the last calculation
(same elements, charge, multiplicity, basis, method and DFT settings), the SCF starts from the
previous orbitals (``guess_orbitals``).  A functional as ``method`` ('b3lyp', 'pbe', ...) runs
RKS or UKS by :func:`hartree.keywords.method_options`, the mapping of ``hartree run``
(``grid_level``, ``unrestricted``); ``method='rks'``/``'uks'`` with ``xc=`` is
:func:`hartree.scf.run`'s own spelling; ``grid_response=True`` adds the grid's derivative to
the forces.  ASE is imported by this module only: ``import hartree`` does
not need it.

Units: positions come in Angstrom (converted with :data:`hartree.constants.ANGSTROM_IN_BOHR`,
as hartree's XYZ reader does); energies go out in eV and forces in eV/Angstrom with ASE's own
constants (``ase.units.Hartree``, ``ase.units.Bohr``), dipoles in e Angstrom.
"""

from __future__ import annotations

import numpy as np
from ase import units
from ase.calculators.calculator import Calculator, all_changes

from .constants import ANGSTROM_IN_BOHR
from .gradients import GRADIENT_SCF_DEFAULTS, scf_gradient
from .gradients.scf_gradient import gradient_engine
from .keywords import method_options
from .molecule import Molecule

#: parameters that define the model; every other parameter is an SCF option (SCFOptions;
#: for a functional also ``unrestricted``, :func:`hartree.keywords.method_options`)
_MODEL = ("basis", "method", "charge", "multiplicity", "device", "gpus", "grid_response")


class Hartree(Calculator):
    """ASE calculator running hartree's RHF, UHF, ROHF or Kohn-Sham DFT (module docstring).

    basis: a basis-set name, path or per-element dict (as :func:`hartree.scf.run`); method:
    'rhf' | 'uhf' | 'rohf', a functional ('b3lyp', 'pbe', ...: RKS for closed-shell singlets,
    else UKS) or 'rks' | 'uks' with ``xc=``; charge (e) and multiplicity (None: lowest for
    the electron count); device: 'auto' | 'cpu' | 'gpu'; gpus: as :func:`hartree.scf.run`;
    grid_response: DFT forces with the derivative of the integration grid (default False);
    other keywords are SCF options (``conv_tol``, ``max_cycle``, ``level_shift``,
    ``grid_level`` and ``xc`` for DFT, ``dispersion`` 'd3bj' | 'd3zero' | 'd4' (energy and
    forces), ...) and ``unrestricted`` (a functional's UKS).
    """

    implemented_properties = ["energy", "free_energy", "forces", "dipole"]
    default_parameters = {
        "basis": "6-31g*",
        "method": "rhf",
        "charge": 0,
        "multiplicity": None,
        "device": "auto",
        "gpus": None,
        "grid_response": False,
    }

    def __init__(self, **kwargs):
        Calculator.__init__(self, **kwargs)
        self._previous = None  # (model key, numbers, (mo_coeff, mo_energy)) of the last SCF
        #: the last SCFResult (and GradientResult when forces were computed), for inspection
        self.scf_result = None
        self.gradient_result = None

    def set(self, **kwargs):
        """Change parameters (ASE's ``set``); any change clears the results (every parameter
        enters the SCF).  Returns the changed ones."""
        changed = Calculator.set(self, **kwargs)
        if changed:
            self.reset()
        return changed

    def _model_key(self, numbers):
        p = self.parameters
        return (
            tuple(int(z) for z in numbers),
            repr(p["basis"]),
            str(p["method"]).lower(),
            p["charge"],
            p["multiplicity"],
            repr(sorted((k, repr(v)) for k, v in p.items() if k in ("xc", "grid_level", "unrestricted"))),
        )

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        """Run the SCF (and the gradient when 'forces' is asked for) on ``self.atoms``."""
        from .scf import run

        Calculator.calculate(self, atoms, properties, system_changes)
        p = self.parameters
        numbers = self.atoms.get_atomic_numbers()
        mol = Molecule(
            numbers=numbers,
            coords=np.asarray(self.atoms.get_positions(), dtype=np.float64) * ANGSTROM_IN_BOHR,
            charge=p["charge"],
            multiplicity=p["multiplicity"],
        )
        options = {**GRADIENT_SCF_DEFAULTS, **{k: v for k, v in p.items() if k not in _MODEL}}
        method = str(p["method"]).lower()
        if method not in ("rks", "uks"):  # rhf/uhf/rohf as they are, a functional: rks or uks
            method, options = method_options(method, mol, options)
        key = self._model_key(numbers)
        if self._previous is not None and self._previous[0] == key:
            options.setdefault("guess_orbitals", self._previous[1])
        res = run(mol, p["basis"], method, device=p["device"], gpus=p["gpus"], **options)
        self.scf_result = res
        self._previous = (key, (np.asarray(res.mo_coeff), np.asarray(res.mo_energy)))
        energy = float(res.energy) * units.Hartree
        self.results["energy"] = energy
        self.results["free_energy"] = energy
        self.results["dipole"] = np.asarray(res.dipole, dtype=np.float64) * units.Bohr
        if "forces" in properties:
            screening = options.get("screening_threshold", 1e-13)
            g = scf_gradient(res, gradient_engine(res, p["gpus"], screening), grid_response=bool(p["grid_response"]))
            self.gradient_result = g
            self.results["forces"] = -np.asarray(g.gradient) * (units.Hartree / units.Bohr)
