"""``hartree batch``: many inputs (XYZ or QCSchema) as Dask tasks, one result file each.

Order of work: make the output directory, read every input and decide what runs (names,
options, fingerprints; hartree.batch.inputs), check the output paths, then start the
cluster (hartree.batch.cluster) only when something is left to run, submit the jobs and
write each result as it finishes (hartree.batch.runner) under a progress bar.  Exit 0 when
every input succeeded (or was finished before), :data:`EXIT_SOME_FAILED` when some failed
(each listed), 130/143 on SIGINT/SIGTERM with the finished results kept.  Dask is imported
only when the cluster starts.  docs/batch.md is the user's guide.
"""

import os
import sys

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .._version import __version__
from ..batch.cluster import open_client, plan_cluster
from ..batch.inputs import BatchOptions, plan
from ..batch.runner import SUMMARY_NAME, result_path, run_jobs
from ..batch.task import TASKS
from ..device.selection import DEVICES, resolve_device
from ..errors import InputError
from ..io.paths import check_outputs
from .argtypes import positive_int
from .main import EXIT_SOME_FAILED  # some inputs failed (the others' results are written)

QUIET_HELP = (
    "print only the closing line (finished, skipped and failed counts and the summary file); "
    "no progress, no line per input; the error line naming the failed inputs still goes to stderr"
)


DESCRIPTION = """\
Run every INPUT (an .xyz file, or a .json QCSchema AtomicInput or molecule) as one Dask
task, on a local cluster started here (one worker per GPU when GPUs are visible, through
dask-cuda's LocalCUDACluster when it is installed; else CPU worker processes, one per core
up to the number of inputs, with the cores shared out as numba threads) or on a running Dask
cluster (--scheduler). Each result is written, atomically, the moment it finishes, as
OUT/NAME.json (QCSchema; NAME is the input's file name without extension, made unique with
-2, -3, ... when inputs share one), and OUT/summary.csv lists every input. A failed input
(unreadable file, SCF not converged, ...) is recorded with its error and the batch goes
on; a worker process that dies has its task run again."""

EPILOG = f"""\
options and inputs:
  --task, --method, --basis and --device override what an AtomicInput says (driver,
  model.method, model.basis, keywords.device); without them: the file's, else task
  energy, method rhf, device auto. XYZ inputs need --basis. The charge and
  multiplicity are each file's own.

reruns:
  An input whose OUT/NAME.json holds a finished result of the same input content (bytes)
  and the same task, method, basis and keywords is skipped ("skipped N finished"); any
  change recomputes it and replaces the result. A file OUT/NAME.json that is not a batch
  result is replaced only with --overwrite.

summary.csv columns: name, input, formula, task, method, basis, energy_Eh, converged,
  wall_time_s, worker, status (finished, skipped, failed, cancelled), error

examples:
  hartree batch molecules/*.xyz --basis 6-31g* --out results
  hartree batch inputs/*.json --out results --workers 4            # AtomicInputs, 4 processes
  hartree batch *.xyz -b 6-31g** --task opt --out opt --scheduler tcp://head-node:8786
  hartree batch *.xyz -b sto-3g --task freq --out freq --device cpu
  hartree batch *.xyz -b def2-tzvp -m b3lyp --out df --density-fitting   # RI-JK (after the inputs)

exit code {EXIT_SOME_FAILED}: some inputs failed (listed; the others' results are written)."""


def add_arguments(parser):
    """Add the ``batch`` arguments to an argparse parser."""
    from .run_options import add_density_fitting_arguments  # (hartree.scf's options: only here)

    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="input files: .xyz, or .json QCSchema")
    model = parser.add_argument_group("what to compute")
    model.add_argument("--task", choices=TASKS, default=None, type=str.lower, help="what to compute (default: energy)")
    model.add_argument("-b", "--basis", metavar="NAME", default=None, help="basis set (name or file)")
    model.add_argument(
        "-m",
        "--method",
        default=None,
        type=str.lower,
        metavar="METHOD",
        help="rhf, uhf, rohf or a DFT functional such as b3lyp or pbe (RKS/UKS) (default: rhf)",
    )
    model.add_argument(
        "--device",
        choices=DEVICES,
        default=None,
        type=str.lower,
        help="where each task runs: a CUDA GPU, the CPU, or auto (default: auto)",
    )
    model.add_argument("--cartesian", action="store_true", help="cartesian (6d, 10f) instead of spherical functions")
    model.add_argument(
        "--dispersion",
        default=None,
        type=str.lower,
        metavar="MODEL",
        help="dispersion correction added to each SCF (energy and gradient): d3bj, d3zero or d4 (default: "
        "the input's keyword dispersion, else none)",
    )
    add_density_fitting_arguments(model)
    where = parser.add_argument_group("cluster").add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=positive_int, default=None, metavar="N", help="local worker processes (default: automatic)"
    )
    where.add_argument(
        "--scheduler", default=None, metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://host:8786"
    )
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--out", required=True, metavar="DIR", help="directory of the results (created if missing)")
    out.add_argument(
        "--overwrite", action="store_true", help="replace files in DIR named like a result that are not batch results"
    )


def _output_directory(path):
    """Create the output directory when missing; InputError when it cannot be used."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"--out {path} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot create the directory ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"--out {path}: the directory is not writable")


def _check_paths(args, batch):
    """Results and summary: writable, not a directory, never one of the inputs."""
    outputs = [(f"result of {name}", result_path(args.out, name), True) for name in batch.rows]
    outputs.append(("--out summary", os.path.join(args.out, SUMMARY_NAME), True))
    check_outputs(outputs, inputs=[("input", p) for p in args.inputs])


def _cluster_device(args, batch):
    """The device the local cluster is planned for: --device, else cpu when every job says so."""
    if args.device is not None:
        return args.device
    devices = {job.device for job in batch.jobs}
    return "cpu" if devices == {"cpu"} else "auto"


def _line(row):
    """One line for a finished or failed input."""
    if row["status"] == "finished":
        return (
            f"finished {row['name']}: E = {float(row['energy_Eh']):.10f} Eh, "
            f"{float(row['wall_time_s']):.1f} s on {row['worker']}"
        )
    return f"failed   {row['name']}: {row['error']}"


class _Display:
    """The progress bar (done, failed, running) and one line per completed input."""

    def __init__(self, console, batch, quiet):
        self.quiet = quiet
        self.total = len(batch.rows)
        self.done = batch.count("skipped")
        self.failed = batch.count("failed")
        self.running = 0
        self.progress = Progress(
            TextColumn("[bold]batch[/bold]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("done {task.fields[done]}  failed {task.fields[failed]}  running {task.fields[running]}"),
            TimeElapsedColumn(),
            console=console,
            disable=quiet,
        )
        self.task = self.progress.add_task(
            "batch", total=self.total, completed=self.done + self.failed, **self._fields()
        )

    def _fields(self):
        return {"done": self.done, "failed": self.failed, "running": self.running}

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def __call__(self, row, running):
        if row is None:
            self.running = running  # a fresh count from the scheduler
        else:
            if row["status"] == "finished":
                self.done += 1
            else:
                self.failed += 1
            self.running -= 1  # the count that came with the row was polled before it completed
            if not self.quiet:
                self.progress.console.print(_line(row), markup=False, highlight=False, soft_wrap=True)
        self.running = max(0, min(self.running, self.total - self.done - self.failed))
        self.progress.update(self.task, completed=self.done + self.failed, **self._fields())


def _inputs(n):
    """'1 input', 'N inputs'."""
    return f"{n} input{'s' if n != 1 else ''}"


def _header(console, args, batch, cluster):
    lines = [
        f"hartree {__version__}: batch of {_inputs(len(batch.rows))}, results in {args.out}",
        f"skipped {batch.count('skipped')} finished (same input and options)",
    ]
    if batch.count("failed"):
        failed = batch.count("failed")
        lines.append(f"{failed} input{'s' if failed != 1 else ''} cannot be run as given (listed at the end)")
    if cluster is not None:
        tasks = len(batch.jobs)
        lines.append(f"cluster:  {cluster.description()}, {tasks} task{'s' if tasks != 1 else ''}")
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _report(console, args, batch, quiet):
    """The closing lines; returns the exit code."""
    rows = list(batch.rows.values())
    failed = [row for row in rows if row["status"] == "failed"]
    summary = os.path.join(args.out, SUMMARY_NAME)
    console.print(
        f"batch: {batch.count('finished')} finished, {batch.count('skipped')} skipped, {len(failed)} failed "
        f"of {_inputs(len(rows))}; summary: {summary}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if not failed:
        return 0
    if not quiet:
        console.print("failed inputs:", markup=False)
        for row in failed:
            where = "" if row["error"].startswith(row["input"]) else f" ({row['input']})"
            console.print(f"  {row['name']}{where}: {row['error']}", markup=False, soft_wrap=True)
    names = ", ".join(row["name"] for row in failed)
    print(
        f"hartree: error: {len(failed)} of {_inputs(len(rows))} failed ({names}); see {summary}",
        file=sys.stderr,
        flush=True,
    )
    return EXIT_SOME_FAILED


def execute(args, console):
    """Run ``hartree batch`` with parsed arguments; returns the exit code (errors raise)."""
    if args.dispersion is not None:
        from ..scf.options import DISPERSION_MODELS

        if args.dispersion not in DISPERSION_MODELS:
            raise InputError(f"--dispersion must be one of {', '.join(DISPERSION_MODELS)}, got {args.dispersion!r}")
    if args.task not in (None, "energy") and args.method is not None:
        from ..keywords import check_gradient_method  # (the SCF's modules: only here)

        check_gradient_method(args.method, f"--task {args.task}")  # one line, before any work
    _output_directory(args.out)
    options = BatchOptions(
        task=args.task,
        method=args.method,
        basis=args.basis,
        device=args.device,
        cartesian=args.cartesian,
        dispersion=args.dispersion,
        density_fitting=args.density_fitting,
        exact_k=args.exact_k,
    )
    batch = plan(args.inputs, args.out, options, overwrite=args.overwrite)
    _check_paths(args, batch)
    cluster = None
    if batch.jobs:
        if args.scheduler is None and args.device == "gpu":
            resolve_device("gpu")  # DeviceError (exit 4) before starting workers
        cluster = plan_cluster(
            workers=args.workers,
            scheduler=args.scheduler,
            device=_cluster_device(args, batch),
            inputs=len(batch.jobs),
        )
    if not args.quiet:
        _header(console, args, batch, cluster)
    if cluster is None:
        run_jobs(None, batch, args.out)  # nothing to run: the summary only
    else:
        with open_client(cluster) as client, _Display(console, batch, args.quiet) as display:
            run_jobs(client, batch, args.out, notify=display)
    return _report(console, args, batch, args.quiet)
