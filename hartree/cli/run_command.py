"""``hartree run``: one SCF calculation from a molecule file, with live output.

Order of work: check the arguments and output paths, read the molecule, load the
basis, check the requested file formats can hold it, then run the SCF with a live
progress callback, print the results tables and write the output files.  All
checks that can fail on user input happen before the SCF starts.
"""

import os
import sys

from rich.markup import escape

from .._version import __version__
from ..basis import load_basis
from ..constants import BOHR_IN_ANGSTROM
from ..device.selection import resolve_device
from ..errors import BasisError, ConvergenceError, InputError
from ..gradients import scf_gradient
from ..io.molden import check_molden_supported, write_molden
from ..io.paths import check_outputs
from ..io.qcschema import gradient_to_qcschema, result_to_qcschema, write_json
from ..io.qcschema_input import atomic_input_of
from ..molecule import Molecule
from ..scf import SCFOptions
from ..scf import run as run_scf
from ..scf.checkpoint import plan as checkpoint_plan
from ..scf.driver import (
    PREPARE_FALLBACK_NOTE,
    device_text,
    make_engine,
    not_converged_text,
    prepare_gpu_engine,
    resolve_gpus,
)
from ..scf.kernel import validate as validate_method
from . import first_run, run_options
from .dft_report import print_dft_report
from .gradient_report import print_gradient_report
from .progress import ScfProgress
from .report import (
    final_energy_line,
    formula,
    mp2_energy_line,
    not_converged_banner,
    print_mp2_report,
    print_report,
)
from .run_arguments import DESCRIPTION, EPILOG, add_arguments  # noqa: F401  (the command module's members)
from .run_options import RECORDED, molecule_of, resolve, scf_method, scf_precision


def input_files(args):
    """(what, path) of every file ``hartree run`` reads: outputs may not replace them."""
    files = [("molecule file", args.file), ("--guess-from checkpoint", args.guess_from)]
    for flag, value in (("--basis", args.basis), ("--aux", args.aux)):
        if value is not None and os.path.isfile(value):
            files.append((f"{flag} file", value))
    return files


def check_paths(args):
    """Every output path of the run (module docstring of hartree.io.paths), before any work."""
    check_outputs(
        (("--json", args.json), ("--molden", args.molden), ("--checkpoint", args.checkpoint, True)),
        inputs=input_files(args),
        overwrite=args.overwrite,
    )


def warn_isolated_atoms(molecule):
    """One warning line (stderr) per atom far from all others: usually a unit mistake."""
    for index, distance in molecule.isolated_atoms()[:5]:
        print(
            f"hartree: warning: atom {index + 1} ({molecule.symbols[index]}) is "
            f"{distance * BOHR_IN_ANGSTROM:.4g} Angstrom from the nearest other atom; check "
            "the geometry and its units",
            file=sys.stderr,
            flush=True,
        )


def convergence_hint(error, method):
    """The ConvergenceError of an unconverged SCF, with hints naming the command's flags."""
    result = getattr(error, "result", None)
    if result is None or not result.history:
        return error
    return ConvergenceError(
        not_converged_text(method, result, f"--max-cycle {2 * result.iterations}, --level-shift 0.3 or --guess core"),
        result=result,
    )


def scf_keywords(args):
    """The SCF settings of a run as a JSON-able dict (recorded in the QCSchema keywords):
    method, basis and the SCF options of :func:`hartree.cli.run_options.resolve` (for
    --gradient tightened to GRADIENT_SCF_DEFAULTS), those an AtomicInput added included, and
    ``precision`` of a fitted SCF run with --precision mixed."""
    options = args.scf_options
    recorded = {name: options[name] for name in RECORDED}
    extra = {"precision": args.precision} if args.method != "mp2" and args.precision != "fp64" else {}
    return {"method": args.method, "basis": args.basis, **recorded, **options, **extra}


def mp2_keywords(args, mp2):
    """The RI-MP2 settings of a run (recorded in the QCSchema keywords with --method mp2)."""
    return {
        "reference": mp2.reference,
        "aux_basis": str(mp2.aux_basis),
        "frozen_core": bool(args.frozen_core),
        "precision": args.precision,
    }


def scf_reference(args, molecule):
    """(method, options) of the SCF to run (:func:`hartree.cli.run_options.scf_method`): from
    --method (a functional: RKS or UKS), or for mp2 the --reference (default rhf for
    singlets, uhf otherwise).  InputError for correlation options without --method mp2 and for
    --precision where it means nothing (:func:`scf_precision`; with mp2 it is RI-MP2's)."""
    if args.method != "mp2":
        given = [
            flag
            for flag, value in (
                ("--reference", args.reference),
                ("--aux", args.aux),
                ("--frozen-core", args.frozen_core),
            )
            if value
        ]
        if given:
            raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only with --method mp2")
        method, options = scf_method(args, molecule)
        return method, {**options, **scf_precision(args)}
    reference = args.reference or ("rhf" if molecule.multiplicity == 1 else "uhf")
    try:
        validate_method(molecule, reference)
    except InputError:
        raise InputError(
            f"an RHF reference needs a closed-shell singlet (the molecule has "
            f"{molecule.nelectron} electrons, multiplicity {molecule.multiplicity}); "
            "use --reference uhf"
        ) from None
    return scf_method(args, molecule, reference)


def load_aux(molecule, basis, args):
    """The auxiliary basis for --method mp2, loaded before the SCF so that a bad --aux (or an
    orbital basis without a default) fails at once."""
    from ..mp2 import default_aux_name, load_aux_basis  # RI-MP2 (numba, scipy) only for --method mp2

    aux = args.aux
    if aux is None:
        try:
            aux = default_aux_name(basis.name, [int(z) for z in molecule.numbers])
        except BasisError:
            raise BasisError(
                f"no default auxiliary basis for --basis {basis.name}; name one with --aux (e.g. --aux def2-svp-rifit)"
            ) from None
    try:
        return load_aux_basis(molecule, basis, aux)
    except BasisError as error:
        raise BasisError(f"--aux: {error}") from None


def _print_header(console, molecule, basis, args):
    kind = "cartesian" if not basis.pure else "spherical"
    console.print(
        f"[bold]hartree {__version__}[/bold]: {args.method.upper()}/{escape(basis.name)} on {escape(args.file)}",
        highlight=False,
    )
    console.print(
        f"molecule: {formula(molecule.symbols)}, {molecule.natm} atoms, "
        f"{molecule.nelectron} electrons, charge {molecule.charge}, "
        f"multiplicity {molecule.multiplicity}",
        highlight=False,
        markup=False,
    )
    console.print(f"basis:    {basis.name}, {basis.nao} {kind} functions", highlight=False, markup=False)


def _write_outputs(console, args, result, mp2=None, gradient=None):
    """Write the --json and --molden files that were asked for and say so (unless --quiet);
    with an MP2Result the JSON carries the MP2 energies too, with a GradientResult it is a
    driver 'gradient' document."""
    if args.json:
        keywords = scf_keywords(args)
        if mp2 is not None:
            keywords.update(mp2_keywords(args, mp2))
        if gradient is not None:
            doc = gradient_to_qcschema(gradient, input_file=args.file, keywords=keywords)
        else:
            doc = result_to_qcschema(result, input_file=args.file, keywords=keywords, mp2=mp2)
        write_json(args.json, doc)
    if args.molden:
        write_molden(args.molden, result)
    if not args.quiet:
        for kind, path in (("QCSchema JSON", args.json), ("Molden", args.molden)):
            if path:
                console.print(f"wrote {kind}: {path}", markup=False)


def _cached_kernels():
    """Number of compiled kernel files in the on-disk cache (hartree.device.compile)."""
    from ..device.compile import cache_dir

    try:
        return sum(1 for f in os.listdir(cache_dir()) if f.endswith(".cubin"))
    except OSError:
        return 0


def prepare_gpu(console, engine, quiet):
    """Compile (or load from the disk cache) the engine's kernels before the SCF, saying
    so: a status line while it works, then how many kernels were newly compiled."""
    import time

    before = _cached_kernels()
    t0 = time.perf_counter()
    if quiet:
        engine.prepare()
        return
    with console.status("GPU: compiling kernels not yet in the cache (NVRTC) ..."):
        engine.prepare()
    new = _cached_kernels() - before
    what = (
        f"compiled {new} new kernel module{'s' if new != 1 else ''}" if new > 0 else "all kernels loaded from the cache"
    )
    console.print(f"GPU:      {what} in {time.perf_counter() - t0:.1f} s", highlight=False, markup=False)


def execute(args, console):
    """Run ``hartree run`` with parsed arguments; returns the exit code (errors raise)."""
    check_paths(args)
    record = atomic_input_of(args.file)  # None unless FILE is a QCSchema AtomicInput
    args = resolve(args, record)  # the command line over the file over the defaults
    requested = args.device
    device = resolve_device(requested)  # DeviceError before any work
    gpus_arg = getattr(args, "gpus", None)
    if requested == "cpu" and gpus_arg is not None:
        raise InputError("--gpus applies only to GPU runs (--device gpu or auto)")
    if args.gradient and args.method == "mp2":
        raise InputError("--gradient: RI-MP2 has no analytic gradient yet (use Hartree-Fock or a functional)")
    if args.gradient and args.allow_unconverged:
        raise InputError("--gradient needs a converged SCF; --allow-unconverged does not apply")
    if record is not None:
        molecule = molecule_of(record, charge=args.charge, multiplicity=args.multiplicity)
    else:
        molecule = Molecule.from_file(args.file, charge=args.charge, multiplicity=args.multiplicity)
    method, options = scf_reference(args, molecule)  # the SCF to run (the MP2 reference for mp2)
    basis = load_basis(molecule, args.basis, cartesian=args.cartesian)
    gpus = resolve_gpus(gpus_arg, basis.nao) if device == "gpu" else None
    aux_basis = load_aux(molecule, basis, args) if args.method == "mp2" else None
    fitting = run_options.density_fitting_line(molecule, basis, options)  # the J/K fitting basis: BasisError now
    if args.molden:
        check_molden_supported(basis)
    validate_method(molecule, method)
    checkpoint_plan(
        molecule,
        basis,
        method,
        checkpoint=args.checkpoint,
        guess=args.guess,
        guess_from=args.guess_from,
        overwrite=args.overwrite,
    )  # refusals: now
    warn_isolated_atoms(molecule)
    if not args.quiet:
        _print_header(console, molecule, basis, args)
        console.print(f"device:   {device_text(device, gpus)}", highlight=False, markup=False)
        if fitting:
            console.print(fitting, highlight=False, markup=False)
        if aux_basis is not None:
            console.print(
                f"RI-MP2:   {method.upper()} reference, auxiliary basis {aux_basis.name}, {aux_basis.nao} functions",
                highlight=False,
                markup=False,
            )
    engine = None
    if device == "gpu":
        screening = options.get("screening_threshold", SCFOptions().screening_threshold)
        engine = make_engine(molecule, basis, screening, "gpu", gpus)
        # out of GPU memory while compiling: None ('auto': run on the CPU) or one line (the driver decides)
        engine = prepare_gpu_engine(engine, requested, lambda eng: prepare_gpu(console, eng, args.quiet))
        if engine is None:
            console.print(f"note: {PREPARE_FALLBACK_NOTE}", markup=False)
            requested, gpus_arg, device = "cpu", None, "cpu"
    if device == "cpu" and not args.quiet:
        first_run.announce(console, "scf-cpu")
    progress = ScfProgress(console, show_lines=not args.quiet, label=method.upper())
    try:
        with progress:
            result = run_scf(
                molecule,
                basis,
                method,
                device=requested,
                gpus=gpus_arg,
                engine=engine,
                allow_unconverged=args.allow_unconverged,
                checkpoint=args.checkpoint,
                overwrite_checkpoint=args.overwrite,
                guess_from=args.guess_from,
                callback=progress,
                **options,
            )
    except ConvergenceError as error:
        error = convergence_hint(error, method)
        if not args.quiet:
            console.print(
                not_converged_banner(
                    f"{error}\nNo output files were written; --allow-unconverged reports the last state."
                )
            )
        raise error from None
    if device == "cpu":
        first_run.mark_done("scf-cpu")
    mp2 = None
    if aux_basis is not None:
        if not result.converged:
            message = (
                f"the {method.upper()} reference did not converge in {result.iterations} "
                "cycles; RI-MP2 needs a converged reference (--allow-unconverged does not "
                "apply to --method mp2)"
            )
            if not args.quiet:
                console.print(not_converged_banner(message + "\nNo output files were written."))
            raise ConvergenceError(message, result=result)
        from ..mp2 import run as run_mp2

        mp2 = run_mp2(
            result, aux=aux_basis, frozen_core=bool(args.frozen_core), precision=args.precision, device=device
        )  # GPU RI-MP2 on GPU runs
    gradient = None
    if args.gradient:  # on the SCF's GPU engine when the SCF ran there (not after a fallback to the CPU)
        on_gpu = engine is not None and str(result.device).startswith("cuda")
        gradient = scf_gradient(result, engine if on_gpu else None, grid_response=bool(args.grid_response))
    if args.quiet:
        console.print(mp2_energy_line(mp2, basis.name) if mp2 is not None else final_energy_line(result), markup=False)
    else:
        print_report(console, result)
        print_dft_report(console, result)
        for note in getattr(result, "notes", ()) or ():
            console.print(f"note: {note}", markup=False)
        if mp2 is not None:
            print_mp2_report(console, mp2)
        if gradient is not None:
            print_gradient_report(console, gradient)
    _write_outputs(console, args, result, mp2=mp2, gradient=gradient)
    if not args.quiet:
        console.print(final_energy_line(result), markup=False, style="bold")
        if mp2 is not None:
            console.print(mp2_energy_line(mp2, basis.name), markup=False, style="bold")
    if not result.converged and not args.quiet:
        console.print(
            not_converged_banner(
                f"{method.upper()} stopped after {result.iterations} cycles without converging; "
                "the numbers above are NOT a converged result (--allow-unconverged)."
            )
        )
    return 0
