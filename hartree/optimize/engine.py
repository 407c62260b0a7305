"""hartree as a geomeTRIC engine: SCF energies and analytic gradients, in process.

geomeTRIC asks an ``Engine`` for the energy and gradient at Cartesian coordinates (bohr,
flat) through ``calc_new(coords, dirname)``.  :class:`HartreeEngine` answers with
:func:`hartree.scf.run` and :func:`hartree.gradients.scf_gradient` at those coordinates,
each SCF starting from the orbitals of the previous evaluation (``guess_orbitals``; the
first from the ordinary guess).  Nothing is written: ``dirname`` is not used, and the
"guess files" geomeTRIC saves after an accepted step and loads after a rejected one are
orbitals kept in memory.

This module imports geomeTRIC; :mod:`hartree.optimize.driver` imports it only when an
optimization runs (geomeTRIC is an optional dependency: ``pip install 'hartree[opt]'``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass

import numpy as np
from geometric.engine import Engine
from geometric.molecule import Molecule as GeometricMolecule

from ..constants import BOHR_IN_ANGSTROM
from ..gradients import scf_gradient
from ..gradients.scf_gradient import gradient_engine
from ..molecule import Molecule
from ..scf import run as run_scf
from .optimizer import working_directory

#: Beginnings of the SCF notes that describe the guess: every step after the first starts
#: from the previous orbitals, which is the optimizer's business, not news for the user.
_GUESS_NOTES = ("guess from", "initial guess")


@dataclass(frozen=True)
class Evaluation:
    """One energy and gradient evaluation (atomic units).

    molecule        the geometry (bohr)
    energy          SCF energy, Eh
    gradient        (natm, 3) analytic gradient, Eh/bohr
    scf_iterations  SCF cycles
    dipole          (3,) e bohr about the origin
    wall_time       seconds of the SCF and the gradient
    """

    molecule: Molecule
    energy: float
    gradient: np.ndarray
    scf_iterations: int
    dipole: np.ndarray
    wall_time: float


def geometric_molecule(molecule):
    """geomeTRIC's Molecule for a hartree Molecule, built in memory: element symbols and
    one frame of coordinates in Angstrom (geomeTRIC's unit for its Molecule)."""
    gm = GeometricMolecule()
    gm.elem = list(molecule.symbols)
    gm.xyzs = [np.array(molecule.coords, dtype=float) * BOHR_IN_ANGSTROM]
    return gm


def moved_basis(basis, coords):
    """``basis`` with its shell centres on the atoms at ``coords`` ((natm, 3), bohr)."""
    return dataclasses.replace(basis, shell_center=np.asarray(coords)[basis.shell_atom])


class HartreeEngine(Engine):
    """geomeTRIC Engine running hartree's SCF and analytic gradient.

    molecule: the start geometry (its atoms, charge and multiplicity are kept); basis: a
    loaded :class:`hartree.basis.Basis` (moved with the atoms); method: 'rhf' | 'uhf' |
    'rohf' | 'rks' | 'uks'; device, gpus: as :func:`hartree.scf.run`; scf_options: SCFOptions
    fields (Kohn-Sham: ``xc`` and ``grid_level``, one grid level for every step; a
    ``guess_orbitals`` entry starts the first SCF); home: the directory the SCFs run in
    (the caller's, while geomeTRIC runs in a temporary one; None: wherever it is);
    grid_response: Kohn-Sham gradients with the grid's derivative (:func:`scf_gradient`).

    After each evaluation: ``last`` is its GradientResult (with the full SCFResult),
    ``evaluations`` maps the coordinates' bytes to an :class:`Evaluation`, ``count`` is
    the number of SCF+gradient evaluations done, ``notes`` the notes of the SCFs and
    gradients (those about the guess left out), each once.
    """

    def __init__(
        self, molecule, basis, method, *, device="auto", gpus=None, scf_options=None, home=None, grid_response=False
    ):
        super().__init__(geometric_molecule(molecule))
        self.home = home
        self.molecule = molecule
        self.basis = basis
        self.method = method
        self.device = device
        self.gpus = gpus
        self.grid_response = bool(grid_response)
        options = dict(scf_options or {})
        self.guess = options.pop("guess_orbitals", None)
        self.scf_options = options
        self.saved_guess = self.guess
        self.last = None
        self.evaluations = {}
        self.count = 0
        self.notes = {}  # insertion-ordered set of the notes of every evaluation

    def calc_new(self, coords, dirname):
        """{'energy': Eh, 'gradient': flat (3 natm,) Eh/bohr} at ``coords`` (flat, bohr)."""
        with working_directory(self.home) if self.home is not None else contextlib.nullcontext():
            return self._evaluate(coords)

    def _evaluate(self, coords):
        xyz = np.array(coords, dtype=float).reshape(-1, 3)
        molecule = self.molecule.replace(coords=xyz)
        options = dict(self.scf_options)
        if self.guess is not None:
            options["guess_orbitals"] = self.guess
        t0 = time.perf_counter()
        result = run_scf(
            molecule, moved_basis(self.basis, xyz), self.method, device=self.device, gpus=self.gpus, **options
        )
        engine = gradient_engine(result, self.gpus)  # on the SCF's device
        gradient = scf_gradient(result, engine, grid_response=self.grid_response)
        self.guess = (result.mo_coeff, result.mo_energy)
        self.last = gradient
        self.count += 1
        for note in tuple(result.notes) + tuple(gradient.notes):
            if not note.startswith(_GUESS_NOTES):
                self.notes[note] = None
        self.evaluations[np.asarray(coords, dtype=float).tobytes()] = Evaluation(
            molecule=molecule,
            energy=float(gradient.energy),
            gradient=np.array(gradient.gradient, dtype=float),
            scf_iterations=int(result.iterations),
            dipole=np.array(result.dipole, dtype=float),
            wall_time=time.perf_counter() - t0,
        )
        return {"energy": float(gradient.energy), "gradient": np.array(gradient.gradient, dtype=float).ravel()}

    def evaluation(self, coords):
        """The :class:`Evaluation` at ``coords`` (flat, bohr): the one done at exactly these
        coordinates, else the one within 1e-10 bohr (geomeTRIC's finite-difference Hessian
        displaces its coordinate array in place and back, x + h - 2h + h, which can differ
        from x in the last bit); None when there is none."""
        x = np.asarray(coords, dtype=float)
        found = self.evaluations.get(x.tobytes())
        if found is not None:
            return found
        for key, evaluation in reversed(self.evaluations.items()):
            if np.max(np.abs(np.frombuffer(key) - x)) < 1e-10:
                return evaluation
        return None

    def save_guess_files(self, dirname):
        """geomeTRIC accepted a step: remember the current orbitals (in memory)."""
        self.saved_guess = self.guess

    def load_guess_files(self, dirname):
        """geomeTRIC rejected a step: start the next SCF from the accepted step's orbitals."""
        self.guess = self.saved_guess

    def copy_scratch(self, src, dest):
        """Nothing to copy: this engine keeps no files (the next SCF starts from the orbitals
        in memory)."""
