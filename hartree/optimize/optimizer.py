"""geomeTRIC's optimizer with one report per step, and its pieces built in memory.

geomeTRIC's own driver (``geometric.optimize.run_optimizer``) writes a log file and a
``<prefix>.tmp`` folder beside the input; hartree calls the lower-level pieces instead:
``OptParams``, the internal-coordinate object (TRIC by default) and the ``Optimizer``
loop that ``geometric.optimize.Optimize`` wraps.  :class:`ReportingOptimizer` subclasses
that loop only to hand every evaluated step to a callback with the quantities geomeTRIC
tests for convergence (its :meth:`calcGradNorm` and ``calc_drms_dmax``), so that hartree
prints its own lines and keeps the trajectory; the optimization itself is geomeTRIC's.

This module imports geomeTRIC (see :mod:`hartree.optimize.engine`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

import numpy as np
from geometric import internal
from geometric.optimize import OPT_STATE, Optimizer
from geometric.params import OptParams
from geometric.step import calc_drms_dmax

from .criteria import COORDINATE_SYSTEMS
from .result import OptimizationStep


@contextlib.contextmanager
def silent_geometric():
    """Switch off geomeTRIC's log messages (its loggers are named 'geometric.*') while an
    optimization runs, whatever handlers a program (or an earlier geomeTRIC driver run in
    the same process) attached; the previous state is restored afterwards."""
    names = ["geometric"] + [n for n in logging.root.manager.loggerDict if n.startswith("geometric.")]
    loggers = [logging.getLogger(n) for n in names]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, state in zip(loggers, before):
            lg.disabled = state


@contextlib.contextmanager
def working_directory(path):
    """Run the block in directory ``path`` (``os.chdir``, process-wide) and go back to the
    previous one afterwards, also on errors and signals; yields the previous directory.

    geomeTRIC writes a few files by relative paths in rare cases (a matrix whose SVD
    failed, ``HT.v_*.txt``, also when an interrupt lands in that SVD); run inside the
    optimization's temporary folder they are removed with it.  hartree's own code (the
    SCFs and the step callback) runs back in the caller's directory."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield before
    finally:
        os.chdir(before)


def make_params(criteria, max_steps, transition_state):
    """geomeTRIC's OptParams: the convergence set, the step limit (geomeTRIC's maxiter),
    and for a transition-state search ``transition=True`` with the Hessian computed at the
    first step (by finite differences of the engine's gradients, in process); no
    frequency analysis, no trajectory or qdata files (hartree writes its own)."""
    return OptParams(
        convergence_set=criteria.geometric_name,
        maxiter=int(max_steps),
        transition=bool(transition_state),
        hessian="first" if transition_state else "never",
        frequency=False,
        xyzout=None,
        qdata=False,
    )


def make_coordinates(geometric_mol, coordinates, constraints=None, constraint_values=None):
    """geomeTRIC's internal-coordinate object for ``coordinates`` (a COORDINATE_SYSTEMS
    key), built the way geomeTRIC's driver builds it; constraints and their values from
    :func:`hartree.optimize.constraints.parse`."""
    class_name, connect, addcart = COORDINATE_SYSTEMS[coordinates]
    coordinate_class = getattr(internal, class_name)
    return coordinate_class(
        geometric_mol,
        build=True,
        connect=connect,
        addcart=addcart,
        constraints=constraints,
        cvals=constraint_values,
    )


class ReportingOptimizer(Optimizer):
    """geomeTRIC's Optimizer that calls ``on_step(OptimizationStep)`` after the start
    geometry and after every later evaluation (accepted or rejected).

    engine: a :class:`hartree.optimize.engine.HartreeEngine` (its evaluations give the
    analytic gradient, SCF cycles and dipole of each geometry).
    """

    def __init__(self, coords, geometric_mol, coordinates, engine, dirname, params, on_step):
        self.on_step = on_step
        self.reported = []
        self._clock = time.perf_counter()
        super().__init__(coords, geometric_mol, coordinates, engine, dirname, params, print_info=False)

    def _report(self, X, energy, rms_g, max_g, delta_e=None, rms_d=None, max_d=None, rejected=False, converged=False):
        evaluation = self.engine.evaluation(X)
        now = time.perf_counter()
        step = OptimizationStep(
            step=int(self.Iteration),
            molecule=evaluation.molecule,
            energy=float(energy),
            gradient=evaluation.gradient,
            delta_energy=None if delta_e is None else float(delta_e),
            rms_gradient=float(rms_g),
            max_gradient=float(max_g),
            rms_displacement=None if rms_d is None else float(rms_d),
            max_displacement=None if max_d is None else float(max_d),
            rejected=bool(rejected),
            converged=bool(converged),
            scf_iterations=evaluation.scf_iterations,
            dipole=evaluation.dipole,
            wall_time=now - self._clock,
        )
        self._clock = now
        self.reported.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def prepareFirstStep(self):
        """geomeTRIC's set-up after the first evaluation, then the report of step 0."""
        super().prepareFirstStep()
        rms_g, max_g = self.calcGradNorm()
        self._report(self.X, self.E, rms_g, max_g)

    def evaluateStep(self):
        """geomeTRIC's evaluation of a new geometry (convergence test, trust radius,
        rejection), then the report of that geometry."""
        X, energy = self.X.copy(), self.E
        rms_g, max_g = self.calcGradNorm()
        rms_d, max_d = calc_drms_dmax(self.X, self.Xprev)
        delta_e = self.E - self.Eprev
        super().evaluateStep()
        converged = self.state == OPT_STATE.CONVERGED
        rejected = not converged and not np.array_equal(self.X, X)
        self._report(X, energy, rms_g, max_g, delta_e, rms_d, max_d, rejected=rejected, converged=converged)
