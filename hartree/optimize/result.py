"""Result objects of a geometry optimization: results only, no methods that compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..molecule import Molecule
from .criteria import ConvergenceCriteria


@dataclass(frozen=True)
class OptimizationStep:
    """One energy and gradient evaluation of the optimization (one line of ``hartree opt``).

    step              geomeTRIC's iteration number: 0 for the start geometry, then 1, 2, ...
    molecule          the geometry evaluated (coordinates in bohr)
    energy            SCF energy, Eh
    gradient          (natm, 3) analytic gradient dE/dR, Eh/bohr (as computed, before any
                      projection the optimizer applies)
    delta_energy      energy minus that of the last accepted geometry, Eh (None at step 0)
    rms_gradient      RMS over atoms of the atomic gradient norm |g_A|, Eh/bohr (projected
    max_gradient      on the constraints when there are any: the quantities geomeTRIC tests)
    rms_displacement  RMS and max over atoms of the step |dR_A| from the last accepted
    max_displacement  geometry after alignment, Angstrom (geomeTRIC's unit; None at step 0)
    rejected          True when geomeTRIC rejected the step and went back to the previous
                      geometry (the step still counts)
    converged         True for the step that met every criterion
    scf_iterations    SCF cycles of this evaluation
    dipole            (3,) dipole moment, e bohr, about the origin
    wall_time         seconds since the previous step was reported (step 0: since the start,
                      including a finite-difference Hessian for transition-state searches)
    """

    step: int
    molecule: Molecule
    energy: float
    gradient: np.ndarray
    delta_energy: float | None
    rms_gradient: float
    max_gradient: float
    rms_displacement: float | None
    max_displacement: float | None
    rejected: bool
    converged: bool
    scf_iterations: int
    dipole: np.ndarray
    wall_time: float


@dataclass
class OptimizationResult:
    """Outcome of :func:`hartree.optimize.optimize` (atomic units unless stated).

    method           'rhf' | 'uhf' | 'rohf' | 'rks' | 'uks' (the functional: final.scf.xc)
    basis            basis name (as given)
    converged        True when geomeTRIC's criteria were all met within ``max_steps``
    steps            list of :class:`OptimizationStep`, in the order evaluated
    molecule         the final geometry (the last one evaluated; bohr)
    energy           its energy, Eh
    final            the :class:`hartree.gradients.GradientResult` at the final geometry,
                     with its full SCF result (orbitals, density, dipole, ...)
    criteria         the :class:`ConvergenceCriteria` used
    coordinates      coordinate system name ('tric', 'dlc', ...)
    transition_state True for a transition-state search
    constraints      the constraint text given (geomeTRIC's format), or None
    max_steps        the step limit
    gradient_evaluations  energy+gradient evaluations, including those of a finite-difference
                     Hessian (transition-state searches)
    wall_time        seconds for the whole optimization
    device           where the SCFs ran
    notes            sentences for the user
    """

    method: str
    basis: str
    converged: bool
    steps: list
    molecule: Molecule
    energy: float
    final: Any
    criteria: ConvergenceCriteria
    coordinates: str
    transition_state: bool
    constraints: str | None
    max_steps: int
    gradient_evaluations: int
    wall_time: float
    device: str
    notes: tuple = field(default=())

    @property
    def iterations(self) -> int:
        """geomeTRIC's iteration count: the step number of the last evaluation."""
        return int(self.steps[-1].step) if self.steps else 0

    @property
    def energies(self) -> list[float]:
        """Energy of every step, Eh."""
        return [float(s.energy) for s in self.steps]

    @property
    def trajectory(self) -> list[Molecule]:
        """The geometry of every step (bohr), in order."""
        return [s.molecule for s in self.steps]

    @property
    def gradients(self) -> list[np.ndarray]:
        """The (natm, 3) gradient of every step, Eh/bohr."""
        return [s.gradient for s in self.steps]

    @property
    def initial_molecule(self) -> Molecule:
        """The start geometry."""
        return self.steps[0].molecule
