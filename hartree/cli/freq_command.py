"""``hartree freq``: harmonic frequencies, IR intensities and thermochemistry from the
Hessian by central differences of analytic gradients.

Order of work: refuse what cannot work (a method without analytic gradients, --workers
with --scheduler, --gpus with --device cpu, --workers or --scheduler), check every output
path, read the molecule, parse --masses, load the basis, open the checkpoint (another job's
is refused), start the GPU worker processes (--gpus naming several), then run the
reference SCF, the 6N displaced gradients (one line each; finished ones are in the
checkpoint), and print the tables and write the files.  All checks that can fail on user
input happen before the first SCF.
"""

import os

from .._version import __version__
from ..basis import load_basis
from ..device.selection import DEVICES, resolve_device
from ..errors import InputError
from ..io.molden_freq import write_molden_frequencies
from ..io.paths import check_outputs
from ..io.qcschema import write_json
from ..io.qcschema_freq import frequency_to_qcschema
from ..molecule import Molecule
from ..scf.driver import device_text, resolve_gpus
from ..scf.kernel import validate as validate_method
from ..vibrations.driver import check_method, frequencies, open_checkpoint, open_gpu_workers, worker_gpus
from ..vibrations.executors import open_executor
from ..vibrations.hessian import DEFAULT_STEP, FREQUENCY_SCF_DEFAULTS, STEP_RANGE
from ..vibrations.masses import masses_from_text
from ..vibrations.thermo import QRRHO_CUTOFF, QRRHO_MODES, STANDARD_PRESSURE, STANDARD_TEMPERATURE
from .argtypes import integer, positive_float, positive_int
from .dft_report import dft_line
from .freq_report import final_line, print_frequency_report, progress_line
from .report import formula
from .run_command import warn_isolated_atoms
from .run_options import add_dft_arguments, dft_keywords, gradient_method

DESCRIPTION = """\
Compute the Hessian of the SCF energy of the molecule in FILE by central differences of
analytic gradients (6N gradients for N atoms, each SCF started from the reference
orbitals), then the harmonic frequencies (cm-1; imaginary ones as negative numbers),
normal modes, IR intensities from the dipole derivatives, the zero-point energy and the
ideal-gas rigid-rotor harmonic-oscillator thermochemistry (E, H, S, G at --temperature and
--pressure) with translations and rotations projected out, linear molecules, the point
group and rotational symmetry number.  The displaced gradients run in this process, on one
worker process per GPU (--gpus naming several GPUs: the reference SCF runs here on the
first), on a local Dask cluster (--workers N) or on an existing Dask scheduler
(--scheduler ADDRESS), and are checkpointed: a run interrupted and started again with the
same checkpoint computes only the missing ones.  Methods: RHF, UHF, ROHF and Kohn-Sham DFT
(--method FUNCTIONAL: RKS or UKS, every SCF on the grid of --grid; --grid-response adds the
grid's derivative to each gradient).  RI-MP2 has no analytic gradient yet and is refused."""

EPILOG = f"""\
masses (--masses, repeatable, comma-separated items, applied left to right):
  ATOM:MASS    atom number (1-based, as in the tables) and mass in u, e.g. 2:2.01410177812
  SYMBOL=MASS  every atom of an element, e.g. H=D
  MASS may be D or T.  Default: the most abundant isotope of each element.

checkpoint:
  --checkpoint FILE (default: next to --json or --molden, e.g. water.json ->
  water.freq-checkpoint.json; without either, none) records every finished displaced
  gradient.  The same command run again resumes from it (also after SIGINT/SIGTERM); a
  file of another job (molecule, basis, method, step, SCF tolerances) is refused unless
  --overwrite.  It is kept after success: the analysis can be redone at another
  temperature, pressure, masses or scale factor without new gradients.

units: frequencies cm-1, IR intensities km/mol, reduced masses u, force constants
mdyn/Angstrom, energies Eh (and kcal/mol), entropies cal/(mol K); the JSON holds the
Hessian in Eh/bohr^2 and the analysis in extras.hartree (docs/frequencies.md).

examples:
  hartree freq water.xyz --basis 6-31g* --json water-freq.json --molden water-freq.molden
  hartree freq water.xyz -b 6-31g* --temperature 373.15 --pressure 1e5 --qrrho grimme
  hartree freq water.xyz -b 6-31g* --masses H=D --scale 0.8953
  hartree freq water.xyz -b def2-svp --method b3lyp --grid 4 --json water-b3lyp-freq.json
  hartree freq radical.xyz -b def2-svp -m uhf --multiplicity 2 --workers 4
  hartree freq vitamin-c.xyz -b 6-31g** --device gpu --gpus 0,1
  hartree freq big.xyz -b 6-31g* --scheduler tcp://head-node:8786 --checkpoint big-freq.json
default step: {DEFAULT_STEP} bohr."""


def add_arguments(parser):
    """Add the ``freq`` arguments to an argparse parser."""
    parser.add_argument("file", metavar="FILE", help="molecule file (.xyz in Angstrom or QCSchema .json)")
    model = parser.add_argument_group("model")
    model.add_argument("-b", "--basis", required=True, metavar="NAME", help="basis set name or basis file")
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
        "-c", "--charge", type=integer, default=None, metavar="Q", help="total charge (default: file, 0)"
    )
    model.add_argument(
        "-s", "--multiplicity", type=positive_int, default=None, metavar="M", help="spin multiplicity 2S+1"
    )
    model.add_argument("--cartesian", action="store_true", help="cartesian (6d, 10f) instead of spherical functions")
    add_dft_arguments(model)
    model.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        help="where the SCFs run: a CUDA GPU, the CPU, or auto (the GPU when one is usable)",
    )
    model.add_argument(
        "--gpus",
        metavar="LIST",
        default=None,
        help="GPUs of a GPU run: 'all' or numbers such as 0,1; with several, the displaced "
        "gradients run on one worker process per GPU (the reference SCF on the first); "
        "default: as hartree run (each SCF shares its J/K between the GPUs)",
    )
    vib = parser.add_argument_group("vibrations")
    vib.add_argument(
        "--step",
        type=positive_float,
        default=DEFAULT_STEP,
        metavar="H",
        help=f"central-difference step in bohr ({STEP_RANGE[0]:g} to {STEP_RANGE[1]:g})",
    )
    vib.add_argument(
        "--masses", action="append", default=None, metavar="SPEC", help="isotopic masses, e.g. 2:D or H=2.014 (below)"
    )
    vib.add_argument("--scale", type=positive_float, default=1.0, metavar="F", help="frequency scale factor")
    thermo = parser.add_argument_group("thermochemistry")
    thermo.add_argument(
        "--temperature", type=positive_float, default=STANDARD_TEMPERATURE, metavar="K", help="temperature in K"
    )
    thermo.add_argument(
        "--pressure", type=positive_float, default=STANDARD_PRESSURE, metavar="PA", help="pressure in Pa"
    )
    thermo.add_argument(
        "--qrrho",
        choices=QRRHO_MODES,
        default=None,
        type=str.lower,
        help="quasi-RRHO for low modes: grimme (free-rotor entropy, Grimme 2012) or head-gordon "
        "(and the energy too, Li et al. 2015)",
    )
    thermo.add_argument(
        "--qrrho-cutoff",
        type=positive_float,
        default=QRRHO_CUTOFF,
        metavar="CM",
        help="frequency (cm-1) where the qRRHO weight is one half",
    )
    par = parser.add_argument_group("parallel displaced gradients")
    where = par.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, default=None, metavar="N", help="local Dask worker processes")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS", help="existing Dask scheduler, tcp://host:port")
    out = parser.add_argument_group("output files")
    out.add_argument("--json", metavar="OUT", default=None, help="QCSchema AtomicResult (driver hessian)")
    out.add_argument("--molden", metavar="OUT", default=None, help="Molden file with the normal modes ([FREQ])")
    out.add_argument("--checkpoint", metavar="FILE", default=None, help="checkpoint of the displaced gradients")
    out.add_argument("--no-checkpoint", action="store_true", help="keep no checkpoint")
    out.add_argument(
        "--overwrite", action="store_true", help="replace existing --json/--molden files and another job's checkpoint"
    )


def checkpoint_path(args):
    """The checkpoint of the run: --checkpoint, else next to --json or --molden, else None."""
    if args.no_checkpoint:
        if args.checkpoint:
            raise InputError("--checkpoint and --no-checkpoint exclude each other")
        return None
    if args.checkpoint:
        return args.checkpoint
    for output in (args.json, args.molden):
        if output:
            stem, _ = os.path.splitext(output)
            return f"{stem}.freq-checkpoint.json"
    return None


def _keywords(args, masses, options, grid_response):
    return {
        "method": args.method,
        "basis": args.basis,
        "cartesian": bool(args.cartesian),
        **FREQUENCY_SCF_DEFAULTS,
        **dft_keywords(options, grid_response),
        "step_bohr": args.step,
        "temperature_K": args.temperature,
        "pressure_Pa": args.pressure,
        "frequency_scale_factor": args.scale,
        "qrrho": args.qrrho,
        "qrrho_cutoff_cm-1": args.qrrho_cutoff,
        "masses_amu": [float(m) for m in masses],
    }


def _header(console, args, molecule, basis, device, gpus, executor, store, dft=None):
    lines = [
        f"hartree {__version__}: frequencies {args.method.upper()}/{basis.name} on {args.file}",
        *([dft] if dft else []),
        f"molecule: {formula(molecule.symbols)}, {molecule.natm} atoms, {molecule.nelectron} electrons, "
        f"charge {molecule.charge}, multiplicity {molecule.multiplicity}",
        f"basis:    {basis.name}, {basis.nao} {'spherical' if basis.pure else 'cartesian'} functions",
        f"device:   {device_text(device, gpus)}",
        f"Hessian:  {6 * molecule.natm} displaced analytic gradients (central differences, "
        f"step {args.step:g} bohr), {executor.description}",
    ]
    if store is not None:
        lines.append(f"checkpoint: {store.path} ({len(store.records)} displacements already done)")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _progress(console, quiet):
    def show(event):
        if quiet:
            return
        if event.stage == "start":
            if event.resumed:
                console.print(
                    f"resumed {event.resumed} of {event.total} displacements from the checkpoint",
                    markup=False,
                    soft_wrap=True,
                )
            return
        console.print(progress_line(event), markup=False, highlight=False)

    return show


def execute(args, console):
    """Run ``hartree freq`` with parsed arguments; returns the exit code (errors raise)."""
    from ..keywords import check_gradient_method, is_functional

    check_gradient_method(args.method, "hartree freq")  # ROKS, unknown names: one line, exit code 2
    if not is_functional(args.method):
        check_method(args.method)  # RI-MP2, unknown: one line, exit code 2
    if args.gpus is not None:
        if args.device == "cpu":
            raise InputError("--gpus applies only to GPU runs (--device gpu or auto)")
        if args.workers is not None or args.scheduler is not None:
            raise InputError(
                "--gpus runs the displaced gradients on one worker process per GPU and excludes "
                "--workers and --scheduler (Dask workers)"
            )
    store_path = checkpoint_path(args)
    check_outputs(
        (("--json", args.json), ("--molden", args.molden), ("--checkpoint", store_path, True)),
        inputs=input_files_of(args),
        overwrite=args.overwrite,
    )
    device = resolve_device(args.device)
    molecule = Molecule.from_file(args.file, charge=args.charge, multiplicity=args.multiplicity)
    method, options, grid_response = gradient_method(args, molecule)  # a functional: rks or uks
    validate_method(molecule, method)
    masses = masses_from_text(molecule, args.masses)
    basis = load_basis(molecule, args.basis, cartesian=args.cartesian)
    scf = {**FREQUENCY_SCF_DEFAULTS, **options}
    store = open_checkpoint(store_path, molecule, basis, method, args.step, scf, args.overwrite, grid_response)
    warn_isolated_atoms(molecule)
    gpus = resolve_gpus(args.gpus, basis.nao) if device == "gpu" else None  # DeviceError before any work
    workers = worker_gpus(args.device, args.gpus)  # several GPUs: one worker process each
    if workers is not None:
        opened = open_gpu_workers(workers)  # started now: their start-up overlaps the reference SCF
    else:
        opened = open_executor(workers=args.workers, scheduler=args.scheduler)
    with opened as executor:
        if not args.quiet:
            _header(
                console, args, molecule, basis, device, gpus, executor, store, dft_line(method, options, grid_response)
            )
        result = frequencies(
            molecule,
            basis,
            method,
            device=args.device,
            gpus=workers[:1] if workers is not None else args.gpus,
            step=args.step,
            masses=masses,
            temperature=args.temperature,
            pressure=args.pressure,
            scale=args.scale,
            qrrho=args.qrrho,
            qrrho_cutoff=args.qrrho_cutoff,
            checkpoint=store_path,
            overwrite_checkpoint=args.overwrite,
            executor=executor,
            progress=_progress(console, args.quiet),
            grid_response=grid_response,
            **options,
        )
    if not args.quiet:
        print_frequency_report(console, result)
    if args.json:
        keywords = _keywords(args, masses, options, grid_response)
        write_json(args.json, frequency_to_qcschema(result, input_file=args.file, keywords=keywords))
    if args.molden:
        write_molden_frequencies(args.molden, result)
    if not args.quiet:
        for kind, path in (("QCSchema JSON", args.json), ("Molden", args.molden)):
            if path:
                console.print(f"wrote {kind}: {path}", markup=False)
    console.print(final_line(result), markup=False, style=None if args.quiet else "bold", soft_wrap=True)
    return 0


def input_files_of(args):
    """(what, path) of every file ``hartree freq`` reads (outputs may not replace them)."""
    files = [("molecule file", args.file)]
    if os.path.isfile(args.basis):
        files.append(("--basis file", args.basis))
    return files
