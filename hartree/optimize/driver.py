"""``optimize()``: a geometry optimization by geomeTRIC on hartree's analytic gradients.

geomeTRIC (Wang & Song, J. Chem. Phys. 144, 214108 (2016)) runs in this process through its
Engine API: it proposes geometries in translation-rotation internal coordinates (TRIC) and
asks :class:`hartree.optimize.engine.HartreeEngine` for the SCF energy and the analytic
gradient at each.  Nothing is written where the caller works: geomeTRIC's working-folder
argument is a private temporary folder, removed when the optimization ends however it
ends (it holds only the finite-difference Hessian of a transition-state search), and its
log messages are switched off; the caller sees each step through ``callback``.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from ..errors import ConvergenceError, InputError
from ..gradients import GRADIENT_SCF_DEFAULTS
from .criteria import DEFAULT_CONVERGENCE, DEFAULT_COORDINATES, convergence_set, coordinate_system
from .result import OptimizationResult

#: SCF methods with analytic gradients (the only ones that can be optimized); Kohn-Sham
#: 'rks'/'uks' take the functional as ``xc=`` and the grid as ``grid_level=``.
GRADIENT_METHODS = ("rhf", "uhf", "rohf", "rks", "uks")

#: Default step limit (geomeTRIC's maxiter): steps after the start geometry.
DEFAULT_MAX_STEPS = 100

MISSING_GEOMETRIC = (
    "geometry optimization needs geomeTRIC (version 1.0 or later), which is not installed; "
    "install it with pip install 'hartree[opt]' (or pip install geometric)"
)


def check_method(method):
    """The lower-case method name; InputError for methods without analytic gradients."""
    name = str(method).strip().lower()
    if name == "mp2":
        raise InputError(
            "geometry optimization needs analytic gradients, which RI-MP2 does not have yet; "
            "use Hartree-Fock or a DFT functional"
        )
    if name not in GRADIENT_METHODS:
        raise InputError(
            f"unknown method {method!r} for a geometry optimization; choose one of {', '.join(GRADIENT_METHODS)}"
        )
    return name


def check_max_steps(max_steps):
    """``max_steps`` as an int >= 1; InputError otherwise."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise InputError(f"max_steps must be an integer of at least 1, got {max_steps!r}")
    return int(max_steps)


def require_geometric():
    """The geometric module; InputError with the install command when it is missing or
    older than 1.0."""
    try:
        import geometric
    except ImportError:
        raise InputError(MISSING_GEOMETRIC) from None
    major = str(getattr(geometric, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 1:
        raise InputError(MISSING_GEOMETRIC + f" (found version {geometric.__version__})")
    return geometric


def _basis(molecule, basis, cartesian):
    from ..basis import Basis, load_basis

    if isinstance(basis, Basis):
        if cartesian and basis.pure:
            raise InputError("cartesian=True but the given Basis is spherical; load it with cartesian=True")
        if basis.natm != molecule.natm:
            raise InputError(f"the given Basis is for {basis.natm} atoms, the molecule has {molecule.natm}")
        return basis
    return load_basis(molecule, basis, cartesian=cartesian)


def _not_converged_text(steps, max_steps, criteria):
    last = steps[-1]
    return (
        f"the geometry optimization did not converge in {max_steps} step{'' if max_steps == 1 else 's'} "
        f"(last energy {last.energy:.10f} Eh, "
        f"max gradient {last.max_gradient:.1e} Eh/bohr against {criteria.gmax:.1e})"
    )


def optimize(
    molecule,
    basis="6-31g**",
    method="rhf",
    *,
    convergence=DEFAULT_CONVERGENCE,
    max_steps=DEFAULT_MAX_STEPS,
    coordinates=DEFAULT_COORDINATES,
    constraints=None,
    transition_state=False,
    device="auto",
    gpus=None,
    cartesian=False,
    callback=None,
    allow_unconverged=False,
    grid_response=False,
    **scf_options,
) -> OptimizationResult:
    """Optimize the geometry of ``molecule`` (a :class:`hartree.Molecule`) and return an
    :class:`OptimizationResult`.

    basis: a basis name, file path, per-element dict or Basis; method: 'rhf' | 'uhf' |
    'rohf' | 'rks' | 'uks' (Kohn-Sham: the functional as ``xc=``, the grid as ``grid_level=``,
    the same at every step; RI-MP2 has no analytic gradient: InputError).  convergence: a set of
    :data:`hartree.optimize.criteria.CONVERGENCE_SETS` ('gau', 'gau_tight', ...);
    max_steps: steps after the start geometry (geomeTRIC's maxiter); coordinates: 'tric'
    (default), 'dlc', 'hdlc', 'prim', 'tric-p' or 'cart'; constraints: text in geomeTRIC's
    constraint format (:mod:`hartree.optimize.constraints`); transition_state: search a
    first-order saddle point (geomeTRIC's transition=True, starting from a Hessian by
    finite differences of the analytic gradients, 2 x 3N extra evaluations).
    device, gpus: as :func:`hartree.scf.run`; cartesian: cartesian basis functions.
    callback: called with each :class:`OptimizationStep` as it is evaluated.
    grid_response: Kohn-Sham only, gradients with the derivative of the integration grid
    (:func:`hartree.gradients.scf_gradient`): the exact derivative of the energy the
    optimizer minimizes, worth it on coarse grids (docs/optimization.md).  Other
    keywords are SCFOptions fields (default: ``GRADIENT_SCF_DEFAULTS`` tolerances); a
    ``guess_orbitals`` entry starts the first SCF, every later SCF starts from the
    orbitals of the previous geometry.

    Raises InputError for impossible input (before any SCF), ConvergenceError when an SCF
    does not converge, and ConvergenceError with ``.result`` (converged False) when the
    optimization does not converge within max_steps, unless ``allow_unconverged``.
    """
    method = check_method(method)
    criteria = convergence_set(convergence)
    coordinates = coordinate_system(coordinates)
    max_steps = check_max_steps(max_steps)
    if molecule.natm < 2:
        raise InputError("a geometry optimization needs at least two atoms")
    if constraints is not None and coordinates in ("cart", "prim", "tric-p"):
        raise InputError("constraints need delocalized internal coordinates (tric, dlc or hdlc)")
    if callback is not None and not callable(callback):
        raise InputError("callback must be callable")
    require_geometric()
    from geometric.errors import Error as GeometricError
    from geometric.errors import GeomOptNotConvergedError

    from ..scf.kernel import validate
    from .constraints import check_text, parse
    from .engine import HartreeEngine, geometric_molecule
    from .optimizer import ReportingOptimizer, make_coordinates, make_params, silent_geometric, working_directory

    validate(molecule, method)
    if grid_response and method not in ("rks", "uks"):
        raise InputError("grid_response is for Kohn-Sham gradients (rks, uks); Hartree-Fock has no grid")
    if constraints is not None:
        check_text(constraints)
    basis = _basis(molecule, basis, cartesian)
    home = os.getcwd()
    engine = HartreeEngine(
        molecule,
        basis,
        method,
        device=device,
        gpus=gpus,
        scf_options={**GRADIENT_SCF_DEFAULTS, **scf_options},
        home=home,
        grid_response=bool(grid_response),
    )

    def on_step(step):  # the caller's callback runs in the caller's directory
        if callback is not None:
            with working_directory(home):
                callback(step)

    t0 = time.perf_counter()
    with (
        silent_geometric(),
        tempfile.TemporaryDirectory(prefix="hartree-opt-") as scratch,
        working_directory(scratch),
    ):
        gm = geometric_molecule(molecule)
        cons, values = parse(gm, constraints) if constraints is not None else (None, None)
        ic = make_coordinates(gm, coordinates, cons, values)
        params = make_params(criteria, max_steps, transition_state)
        opt = ReportingOptimizer(
            np.array(molecule.coords, dtype=float).ravel(), gm, ic, engine, scratch, params, on_step
        )
        try:
            opt.optimizeGeometry()
            converged = True
        except GeomOptNotConvergedError:
            converged = False
        except ConvergenceError as error:
            raise ConvergenceError(
                f"the SCF did not converge at step {opt.Iteration} of the optimization: {error}",
                result=getattr(error, "result", None),
            ) from None
        except GeometricError as error:
            text = " ".join(str(error).split()) or type(error).__name__
            raise ConvergenceError(f"geomeTRIC stopped at step {opt.Iteration}: {text}") from None
    final = engine.last
    if final is None or not np.array_equal(np.asarray(final.molecule.coords).ravel(), opt.X):
        engine.calc_new(opt.X, None)  # not reached by geomeTRIC 1.1's loop: its last evaluation is the final one
        final = engine.last
    result = OptimizationResult(
        method=method,
        basis=str(basis.name),
        converged=converged,
        steps=list(opt.reported),
        molecule=final.molecule,
        energy=float(final.energy),
        final=final,
        criteria=criteria,
        coordinates=coordinates,
        transition_state=bool(transition_state),
        constraints=constraints,
        max_steps=max_steps,
        gradient_evaluations=engine.count,
        wall_time=time.perf_counter() - t0,
        device=str(final.scf.device),
        notes=tuple(engine.notes),
    )
    if not converged and not allow_unconverged:
        raise ConvergenceError(
            _not_converged_text(result.steps, max_steps, criteria)
            + "; try more steps (max_steps) or a looser convergence set",
            result=result,
        )
    return result
