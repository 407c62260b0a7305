"""``hartree opt``: geometry optimization by geomeTRIC on hartree's analytic gradients.

Order of work: refuse methods without analytic gradients, check every output path and the
device, read the molecule (and the last frame of --restart), the constraints and the
basis, then optimize, printing one line per step and writing the trajectory after every
step; at the end print the summary and the final geometry and write the outputs.  An
optimization that does not converge within --max-steps still writes its outputs (the last
geometry to --xyz) and ends with exit code 3.  SIGINT/SIGTERM stop it with the trajectory
of the finished steps on disk (exit codes 130/143, hartree.cli.main).
"""

import os

from .._version import __version__
from ..basis import load_basis
from ..device.selection import DEVICES, resolve_device
from ..errors import ConvergenceError, InputError
from ..gradients import GRADIENT_SCF_DEFAULTS
from ..io.files import read_text, write_text
from ..io.paths import check_outputs, same_file
from ..molecule import Molecule
from ..optimize.criteria import (
    CONVERGENCE_SETS,
    COORDINATE_SYSTEMS,
    DEFAULT_CONVERGENCE,
    DEFAULT_COORDINATES,
    convergence_set,
    criteria_help,
)
from ..optimize.driver import DEFAULT_MAX_STEPS, optimize, require_geometric
from ..scf.driver import device_text
from ..scf.kernel import validate as validate_method
from . import first_run
from .argtypes import integer, positive_int
from .dft_report import dft_line
from .opt_report import (
    STEP_HEADER,
    STEP_UNITS,
    criteria_text,
    final_energy_line,
    geometry_table,
    step_line,
    steps_text,
    summary_table,
)
from .report import formula, not_converged_banner
from .run_command import warn_isolated_atoms
from .run_options import add_dft_arguments, dft_keywords, gradient_method

DESCRIPTION = """\
Optimize the geometry of the molecule in FILE with geomeTRIC (translation-rotation
internal coordinates, TRIC) on hartree's SCF energies and analytic gradients (RHF, UHF,
ROHF, and Kohn-Sham DFT with --method FUNCTIONAL: RKS or UKS on the grid of --grid at every
step; --grid-response adds the grid's derivative, recommended on coarse grids), in this
process: no input files are written and nothing is left in the working directory but the
outputs asked for.  Each step's SCF starts from the orbitals of the
previous one.  One line per step shows the energy, its change, the RMS and largest atomic
gradient (Eh/bohr), the RMS and largest displacement (Angstrom) and the seconds it took;
a summary table and the final geometry follow.

The optimization has converged when the energy change, both gradient and both
displacement numbers are all below the thresholds of the --convergence set."""

EPILOG = f"""\
convergence sets (--convergence; geomeTRIC's):
{criteria_help()}

outputs:
  --xyz          the final geometry (XYZ, Angstrom); the last one when not converged
  --trajectory   every step as one frame of a multi-frame XYZ, rewritten after each step
  --json         a QCSchema OptimizationResult (energies, trajectory of gradient results,
                 initial and final molecule in bohr, success)
  --plot         a PNG of the energy and the largest gradient against the step

examples:
  hartree opt water.xyz --basis 6-31g** --xyz water-opt.xyz
  hartree opt water.xyz -b 6-31g** --convergence gau_tight --json water-opt.json --plot water-opt.png
  hartree opt oh.xyz -b 6-31g* --method uhf --multiplicity 2 --trajectory oh-traj.xyz
  hartree opt water.xyz -b def2-svp --method b3lyp --xyz water-b3lyp.xyz      # RKS, grid 3
  hartree opt water.xyz -b def2-svp -m pbe --grid 1 --grid-response           # coarse grid
  hartree opt big.xyz -b 6-31g* --trajectory big-traj.xyz --max-steps 50
  hartree opt big.xyz -b 6-31g* --restart big-traj.xyz --trajectory big-traj.xyz   # continue
  hartree opt ts-guess.xyz -b 6-31g* --transition-state --xyz ts.xyz
  hartree opt butane.xyz -b 6-31g --constraints dihedral.txt   # geomeTRIC's constraint format"""


def add_arguments(parser):
    """Add the ``opt`` arguments to an argparse parser."""
    parser.add_argument("file", metavar="FILE", help="molecule file (.xyz in Angstrom or QCSchema .json)")
    model = parser.add_argument_group("model")
    model.add_argument(
        "-b",
        "--basis",
        required=True,
        metavar="NAME",
        help="basis set: a basis-set-exchange name or a path to an NWChem/Gaussian94 basis file",
    )
    model.add_argument(
        "-m",
        "--method",
        default="rhf",
        type=str.lower,
        metavar="METHOD",
        help="rhf, uhf, rohf or a DFT functional (b3lyp, pbe, svwn, ...: RKS or UKS); "
        "mp2 is refused (no analytic gradient yet) (default: rhf)",
    )
    model.add_argument(
        "-c", "--charge", type=integer, default=None, metavar="Q", help="total charge (default: from the file, else 0)"
    )
    model.add_argument(
        "-s",
        "--multiplicity",
        type=positive_int,
        default=None,
        metavar="M",
        help="spin multiplicity 2S+1 (default: from the file, else 1 or 2)",
    )
    model.add_argument(
        "--cartesian", action="store_true", help="use cartesian (6d, 10f, ...) instead of spherical basis functions"
    )
    add_dft_arguments(model)
    opt = parser.add_argument_group("optimizer (geomeTRIC)")
    opt.add_argument(
        "--convergence",
        choices=tuple(CONVERGENCE_SETS),
        default=DEFAULT_CONVERGENCE,
        type=str.lower,
        metavar="SET",
        help=f"convergence criteria: {', '.join(CONVERGENCE_SETS)} (thresholds below)",
    )
    opt.add_argument(
        "--max-steps",
        type=positive_int,
        default=DEFAULT_MAX_STEPS,
        metavar="N",
        help="most steps after the start geometry; not converged by then: exit code 3, last geometry written",
    )
    opt.add_argument(
        "--coordsys",
        choices=tuple(COORDINATE_SYSTEMS),
        default=DEFAULT_COORDINATES,
        type=str.lower,
        help="coordinates of the optimizer: tric (translation-rotation internal), dlc (delocalized "
        "internal), hdlc (hybrid delocalized), prim (primitive internal), tric-p (primitive TRIC), cart",
    )
    opt.add_argument(
        "--constraints",
        metavar="FILE",
        default=None,
        help="constraints in geomeTRIC's format ($freeze / $set blocks of distance, angle, dihedral, "
        "xyz ... lines, atoms from 1, Angstrom and degrees); the file is only read",
    )
    opt.add_argument(
        "--transition-state",
        action="store_true",
        help="search a transition state (first-order saddle point); the Hessian at the start is computed "
        "by finite differences of analytic gradients (6 per atom)",
    )
    opt.add_argument(
        "--restart",
        metavar="TRAJ",
        default=None,
        help="start from the last frame of this trajectory (XYZ); when --trajectory names the same file "
        "the new steps are appended to its frames",
    )
    scf = parser.add_argument_group("SCF")
    scf.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        help="where the SCFs and gradients run: a CUDA GPU, the CPU, or auto (the GPU when usable)",
    )
    scf.add_argument("--gpus", metavar="LIST", default=None, help="GPUs of a GPU run: 'all' or numbers such as 0,1")
    out = parser.add_argument_group("output files")
    out.add_argument("--xyz", metavar="OUT", default=None, help="write the final geometry (XYZ, Angstrom)")
    out.add_argument(
        "--trajectory", metavar="OUT", default=None, help="write every step as a frame of a multi-frame XYZ file"
    )
    out.add_argument("--json", metavar="OUT", default=None, help="write a QCSchema OptimizationResult JSON document")
    out.add_argument("--plot", metavar="PNG", default=None, help="write a PNG of the energy profile")
    out.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing output files (otherwise an error, raised before the optimization starts)",
    )


def _appends(args):
    """True when --restart and --trajectory name the same file (the new steps are appended)."""
    return bool(args.restart and args.trajectory and os.path.exists(args.restart)) and same_file(
        args.restart, args.trajectory
    )


def check_paths(args):
    """Every output path, before any work (hartree.io.paths)."""
    appends = _appends(args)
    inputs = [("molecule file", args.file), ("constraints file", args.constraints)]
    if not appends:
        inputs.append(("--restart trajectory", args.restart))
    if os.path.isfile(args.basis):
        inputs.append(("--basis file", args.basis))
    check_outputs(
        (
            ("--xyz", args.xyz),
            ("--trajectory", args.trajectory, appends),
            ("--json", args.json),
            ("--plot", args.plot),
        ),
        inputs=inputs,
        overwrite=args.overwrite,
    )


def scf_keywords(args, options=None, grid_response=False):
    """The SCF settings of every gradient (recorded in the JSON's input_specification);
    ``options``, ``grid_response``: those of :func:`gradient_method` (DFT: xc, grid_level)."""
    return {
        "method": args.method,
        "basis": args.basis,
        "cartesian": bool(args.cartesian),
        "conv_tol": GRADIENT_SCF_DEFAULTS["conv_tol"],
        "conv_tol_grad": GRADIENT_SCF_DEFAULTS["conv_tol_grad"],
        "guess": "sad, then the orbitals of the previous step",
        **dft_keywords(options or {}, grid_response),
    }


class StepWriter:
    """The optimize() callback of the command: prints each step's line (unless --quiet) and
    rewrites --trajectory (atomically) with every step so far, after earlier frames
    ``before`` (a restart appending to its own trajectory), numbering from ``first``."""

    def __init__(self, console, args, before=(), first=None):
        self.console = console
        self.args = args
        self.before = list(before)
        self.first = first
        self.steps = []

    def __call__(self, step):
        from ..optimize.trajectory import trajectory_text

        self.steps.append(step)
        if not self.args.quiet:
            if len(self.steps) == 1:
                self.console.print(STEP_HEADER, markup=False, highlight=False, style="bold", soft_wrap=True)
                self.console.print(STEP_UNITS, markup=False, highlight=False, soft_wrap=True)
            self.console.print(step_line(step), markup=False, highlight=False, soft_wrap=True)
        if self.args.trajectory:
            write_text(self.args.trajectory, trajectory_text(self.steps, self.first, self.before))


def _print_header(console, args, molecule, basis, device, gpus, constraints, dft=None):
    kind = "cartesian" if not basis.pure else "spherical"
    what = "transition-state search" if args.transition_state else "geometry optimization"
    print_line = lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    print_line(f"hartree {__version__}: {what}, {args.method.upper()}/{basis.name} on {args.file}")
    if dft:
        print_line(dft)
    print_line(
        f"molecule: {formula(molecule.symbols)}, {molecule.natm} atoms, {molecule.nelectron} electrons, "
        f"charge {molecule.charge}, multiplicity {molecule.multiplicity}"
    )
    if args.restart:
        print_line(f"restart:  from the last frame of {args.restart}")
    print_line(f"basis:    {basis.name}, {basis.nao} {kind} functions")
    print_line(f"device:   {device_text(device, gpus)}")
    import geometric

    print_line(
        f"optimizer: geomeTRIC {geometric.__version__}, {args.coordsys} coordinates, at most {args.max_steps} steps"
    )
    print_line(f"converged when {criteria_text(convergence_set(args.convergence))}")
    if constraints is not None:
        print_line(f"constraints: {args.constraints}")
    if args.transition_state:
        print_line(f"Hessian:  finite differences of {6 * molecule.natm} analytic gradients at the start")


def _restart(args, molecule):
    """(molecule at the restart geometry, earlier frames kept, first step number)."""
    from ..optimize.trajectory import read_frames, restart_geometry

    if not args.restart:
        return molecule, (), None
    molecule = restart_geometry(args.restart, molecule)
    if _appends(args):
        frames = read_frames(args.restart, "--restart trajectory")
        return molecule, frames[:-1], len(frames) - 1
    return molecule, (), None


def _write_outputs(console, args, result, keywords):
    from ..optimize.plot import plot_optimization
    from ..optimize.qcschema import write_optimization_json
    from ..optimize.trajectory import frame_comment

    if args.xyz:
        write_text(args.xyz, result.molecule.to_xyz(comment=frame_comment(result.steps[-1])))
    if args.json:
        write_optimization_json(args.json, result, scf_keywords=keywords, input_file=args.file)
    if args.plot:
        plot_optimization(result, args.plot)
    if not args.quiet:
        for kind, path in (
            ("final geometry (XYZ)", args.xyz),
            ("trajectory (XYZ)", args.trajectory),
            ("QCSchema JSON", args.json),
            ("energy profile (PNG)", args.plot),
        ):
            if path:
                console.print(f"wrote {kind}: {path}", markup=False, highlight=False, soft_wrap=True)


def execute(args, console):
    """Run ``hartree opt`` with parsed arguments; returns the exit code (errors raise)."""
    if args.method == "mp2":
        raise InputError(
            "--method mp2: RI-MP2 has no analytic gradient yet, so it cannot be optimized; "
            "use Hartree-Fock (rhf, uhf, rohf) or a DFT functional"
        )
    from ..keywords import check_gradient_method

    check_gradient_method(args.method, "hartree opt")  # ROKS, unknown names: one line, exit code 2
    check_paths(args)
    requested = args.device
    device = resolve_device(requested)  # DeviceError before any work
    if requested == "cpu" and args.gpus is not None:
        raise InputError("--gpus applies only to GPU runs (--device gpu or auto)")
    if args.constraints is not None and args.coordsys in ("cart", "prim", "tric-p"):
        raise InputError("--constraints need delocalized internal coordinates (--coordsys tric, dlc or hdlc)")
    require_geometric()
    molecule = Molecule.from_file(args.file, charge=args.charge, multiplicity=args.multiplicity)
    if molecule.natm < 2:
        raise InputError(f"{args.file}: a geometry optimization needs at least two atoms")
    molecule, before, first = _restart(args, molecule)
    constraints = None
    if args.constraints is not None:
        from ..optimize.constraints import check as check_constraints

        text = read_text(args.constraints, "constraints file")
        constraints = check_constraints(molecule, text, f"constraints file {args.constraints}")
    method, options, grid_response = gradient_method(args, molecule)  # a functional: rks or uks
    basis = load_basis(molecule, args.basis, cartesian=args.cartesian)
    validate_method(molecule, method)
    warn_isolated_atoms(molecule)
    gpus = None
    if device == "gpu":
        from ..scf.driver import resolve_gpus

        gpus = resolve_gpus(args.gpus, basis.nao)
    if not args.quiet:
        _print_header(
            console, args, molecule, basis, device, gpus, constraints, dft_line(method, options, grid_response)
        )
        if device == "cpu":
            first_run.announce(console, "scf-cpu")
    writer = StepWriter(console, args, before, first)
    try:
        result = optimize(
            molecule,
            basis,
            method,
            convergence=args.convergence,
            max_steps=args.max_steps,
            coordinates=args.coordsys,
            constraints=constraints,
            transition_state=args.transition_state,
            device=requested,
            gpus=args.gpus,
            callback=writer,
            allow_unconverged=True,
            grid_response=grid_response,
            **options,
        )
    except ConvergenceError as error:  # an SCF that did not converge at some step
        if not args.quiet:
            kept = f"; the trajectory of the finished steps is in {args.trajectory}" if args.trajectory else ""
            console.print(not_converged_banner(f"{error}{kept}"))
        raise
    if device == "cpu":
        first_run.mark_done("scf-cpu")
    if args.quiet:
        console.print(final_energy_line(result), markup=False, highlight=False)
    else:
        console.print()
        console.print(summary_table(result))
        console.print()
        console.print(geometry_table(result.molecule))
        for note in result.notes:
            console.print(f"note: {note}", markup=False)
    _write_outputs(console, args, result, scf_keywords(args, options, grid_response))
    if not args.quiet:
        console.print(final_energy_line(result), markup=False, highlight=False, style="bold")
    if not result.converged:
        where = f"; the last geometry is in {args.xyz}" if args.xyz else ""
        message = (
            f"the geometry optimization did not converge in {steps_text(args.max_steps)}{where}; "
            f"try --max-steps {2 * args.max_steps}, --restart from a --trajectory, or a looser --convergence set"
        )
        if not args.quiet:
            console.print(not_converged_banner(message))
        raise ConvergenceError(message, result=result)
    return 0
