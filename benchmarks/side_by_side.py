"""Shared pieces of the side-by-side benchmarks: hartree against an anchor code on the same
molecule and basis data, each code in a process of its own.

    from benchmarks.side_by_side import Side, anchor_rhf, case_molecule, write_record

Used by gpu_gradient_alanine.py, gpu_dft.py, gpu_opt.py and gpu_freq.py; the last three
measure and merge their records with :func:`run_cases` and :func:`report_records`.

One process per code (:class:`Side`): GPU4PySCF and hartree each keep a cupy memory pool
that the other cannot use, and PySCF's geomeTRIC interface rewrites geomeTRIC's unit
constants for the whole process when it is imported (pyscf.geomopt.geometric_solver), so
the two codes never share a process.  Each side is one child process (started by
``spawn``: no CUDA state is inherited) that lives for the whole run, so its kernels are
compiled or loaded once; the parent asks one side at a time, so the two never use the GPU
at the same moment, and writes the record after every case (a run cut off by a time limit
keeps the cases it finished).

Anchors: 'gpu4pyscf' (GPU4PySCF's RHF on the GPU; ``import g4stub`` first where it is on
the path, as in gpu_gradient.py) and 'pyscf' (PySCF's RHF on the CPU: the drivers' test on
a machine without a GPU).  A record names the anchor that ran and its version.

Molecules of a case (:func:`case_molecule`): 'water' (built in), 'A<n>' / 'G<n>'
((alanine)n / (glycine)n of benchmarks/peptides.py), or the name of a shared geometry
(benchmarks/molecules.py), e.g. '057_Tamoxifen'.
"""

import concurrent.futures
import json
import multiprocessing
import os
import platform
import re
import subprocess
import time
from pathlib import Path

import numpy as np

from benchmarks.records import device_slug, record_path

ROOT = Path(__file__).resolve().parents[1]

ANCHORS = ("gpu4pyscf", "pyscf")
DEVICES = ("gpu", "cpu")
#: the water of the warm-up jobs (Angstrom)
WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"
#: two-electron screening of both codes (hartree's engine threshold, PySCF's direct_scf_tol)
SCREENING = 1e-13


# ----------------------------------------------------------------------- cases
def case_molecule(name):
    """The hartree Molecule of a case name (module docstring); FileNotFoundError for an
    unknown geometry name."""
    from benchmarks.molecules import molecule_path
    from benchmarks.peptides import peptide
    from hartree.molecule import Molecule

    if name.lower() == "water":
        return Molecule.from_string(WATER)
    chain = re.fullmatch(r"([AG])(\d+)", name)
    if chain:
        return peptide(chain.group(1) * int(chain.group(2)))
    return Molecule.from_xyz(molecule_path(name))


def parse_cases(text):
    """'name:basis,name:basis' -> [(name, basis)]; ValueError for an entry without a basis."""
    cases = []
    for entry in text.split(","):
        name, sep, basis = entry.strip().partition(":")
        if not sep or not name or not basis:
            raise ValueError(f"case {entry!r}: write molecule:basis, e.g. 057_Tamoxifen:6-31g**")
        cases.append((name, basis))
    return cases


# ----------------------------------------------------------------------- hartree
def hartree_engine(mol, basis, device):
    """hartree's integral engine on ``device`` ('gpu': GPUEngine on the current GPU,
    'cpu': the numba engine), screening SCREENING."""
    if device == "gpu":
        from hartree.gpu import GPUEngine

        return GPUEngine(mol, basis, screening_threshold=SCREENING)
    from hartree.integrals.engine import CPUEngine

    return CPUEngine(mol, basis, screening_threshold=SCREENING)


def synchronize(device):
    """Wait for the current GPU's queued work ('gpu'); nothing on the CPU."""
    if device == "gpu":
        import cupy

        cupy.cuda.Device().synchronize()


def free_gpu_memory(device):
    """Hand this process's cached cupy blocks back to the driver, so that the side that
    waits holds no memory the other side could use (after a garbage collection: PySCF's
    objects keep reference cycles)."""
    if device == "gpu":
        import gc

        import cupy

        gc.collect()

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def warm_up_hartree(basis_name, device, done=set()):  # noqa: B006 (one set per process: a cache)
    """Water RHF and gradient in ``basis_name`` (once per basis and process), so that the
    timed jobs run compiled kernels; returns its seconds (0.0 when done before)."""
    if (basis_name, device) in done:
        return 0.0
    import hartree
    from hartree.gradients import scf_gradient
    from hartree.gradients.scf_gradient import gradient_engine

    t0 = time.perf_counter()
    water = case_molecule("water")
    res = hartree.scf.run(water, basis_name, "rhf", device=device)
    scf_gradient(res, gradient_engine(res))
    synchronize(device)
    done.add((basis_name, device))
    return time.perf_counter() - t0


def hartree_info(device):
    """{'device', 'versions'} of this process's hartree side."""
    import hartree

    versions = {"hartree": hartree.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if device == "gpu":
        import cupy

        versions["cupy"] = cupy.__version__
        versions["cuda_runtime"] = int(cupy.cuda.runtime.runtimeGetVersion())
        return {"device": gpu_name(), "gpus_visible": gpu_count(), "versions": versions}
    import numba

    versions["numba"] = numba.__version__
    return {"device": cpu_name(), "threads": numba.get_num_threads(), "versions": versions}


# ----------------------------------------------------------------------- anchors
def anchor_device(anchor):
    return "gpu" if anchor == "gpu4pyscf" else "cpu"


def anchor_scf_module(anchor):
    """The scf module of ``anchor`` (GPU4PySCF's after ``import g4stub`` where present)."""
    if anchor == "gpu4pyscf":
        try:
            import g4stub  # noqa: F401  (stands in for GPU4PySCF's GPU libxc; gpu_gradient.py)
        except ImportError:
            pass
        from gpu4pyscf import scf

        return scf
    if anchor == "pyscf":
        from pyscf import scf

        return scf
    raise ValueError(f"unknown anchor {anchor!r}; choose one of {', '.join(ANCHORS)}")


def anchor_rhf(mol, basis, anchor, conv_tol, conv_tol_grad):
    """The anchor's RHF object (not run) on a pyscf Mole with exactly hartree's basis data
    (tests.helpers.to_pyscf): conv_tol (Eh), conv_tol_grad (orbital gradient), screening
    SCREENING, at most 100 cycles, silent."""
    from tests.helpers import to_pyscf

    mf = anchor_scf_module(anchor).RHF(to_pyscf(mol, basis))
    mf.conv_tol, mf.conv_tol_grad = conv_tol, conv_tol_grad
    mf.direct_scf_tol = SCREENING
    mf.max_cycle = 100
    mf.verbose = 0
    return mf


def warm_up_anchor(basis_name, anchor, hessian=False, done=set()):  # noqa: B006 (a per-process cache)
    """Water RHF and gradient (and Hessian) of the anchor in ``basis_name``, once per basis
    and process; returns its seconds (0.0 when done before)."""
    if (basis_name, anchor, hessian) in done:
        return 0.0
    from hartree.basis import load_basis

    t0 = time.perf_counter()
    water = case_molecule("water")
    mf = anchor_rhf(water, load_basis(water, basis_name), anchor, 1e-9, 1e-7)
    mf.kernel()
    mf.nuc_grad_method().kernel()
    if hessian:
        mf.Hessian().kernel()
    synchronize(anchor_device(anchor))
    done.add((basis_name, anchor, hessian))
    return time.perf_counter() - t0


def anchor_info(anchor):
    """{'anchor', 'device', 'versions'} of this process's anchor side."""
    import pyscf

    versions = {"pyscf": pyscf.__version__, "numpy": np.__version__, "python": platform.python_version()}
    anchor_scf_module(anchor)
    if anchor == "gpu4pyscf":
        import cupy
        import gpu4pyscf

        versions |= {"gpu4pyscf": gpu4pyscf.__version__, "cupy": cupy.__version__}
        return {"anchor": anchor, "device": gpu_name(), "gpus_visible": gpu_count(), "versions": versions}
    from pyscf import lib

    return {"anchor": anchor, "device": cpu_name(), "threads": lib.num_threads(), "versions": versions}


def anchor_label(anchor):
    """The anchor's name in tables."""
    return {"gpu4pyscf": "GPU4PySCF", "pyscf": "PySCF (CPU)"}.get(anchor, str(anchor))


# ----------------------------------------------------------------------- devices
def gpu_name():
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def gpu_count():
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def cpu_name():
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def git_commit():
    """The checkout's commit (short hash, '+' when files differ from it), or None."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True)  # fmt: skip
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


# ----------------------------------------------------------------------- side processes
def _call_and_free(fn, device, args):
    """``fn(*args)`` in a side process, then that process's cached GPU memory handed back."""
    try:
        return fn(*args)
    finally:
        free_gpu_memory(device)


class Side:
    """One code's child process for a whole run: ``side.call(fn, *args)`` runs the
    module-level function ``fn`` there and returns its result (exceptions raised there are
    raised here); afterwards the process hands its cached GPU memory back when ``device``
    is 'gpu'.  A child that dies (a crash, not an exception) is started afresh for the
    next call.  Use as a context manager."""

    def __init__(self, name, device):
        self.name = name
        self.device = device
        self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _executor(self):
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context)
        return self._pool

    def call(self, fn, *args):
        try:
            return self._executor().submit(_call_and_free, fn, self.device, args).result()
        except concurrent.futures.process.BrokenProcessPool:
            self.close()
            raise RuntimeError(f"the {self.name} process died (see its output above)") from None

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def attempt(side, fn, *args):
    """``side.call(fn, *args)``, or {'error': one line} when it raised: a case that fails on
    one side is recorded and the run goes on."""
    try:
        return side.call(fn, *args)
    except Exception as error:  # noqa: BLE001 (recorded in the row, shown in the table)
        text = " ".join(str(error).split()) or type(error).__name__
        print(f"  {side.name}: {type(error).__name__}: {text}", flush=True)
        return {"error": f"{type(error).__name__}: {text}"}


# ----------------------------------------------------------------------- the run
def add_run_arguments(ap, cases, benchmark):
    """Add the options every two-sided script shares: --cases (default ``cases``), --device,
    --anchor, --sides, --out (default results/<benchmark>_<gpu>), --report and --note."""
    ap.add_argument("--cases", default=cases, help=f"molecule:basis,... (default {cases})")
    ap.add_argument("--device", default="gpu", choices=DEVICES, help="hartree's device (cpu: testing)")
    ap.add_argument("--anchor", default="gpu4pyscf", choices=ANCHORS)
    ap.add_argument("--sides", default="hartree,anchor", help="which codes run: hartree, anchor or both")
    ap.add_argument("--out", default=None, help=f"record path without extension (default: results/{benchmark}_<gpu>)")
    ap.add_argument("--report", nargs="+", default=None, metavar="JSON", help="merge these records; no measurement")
    ap.add_argument(
        "--note", action="append", default=[], metavar="TEXT", help="with --report: a line for the record's notes"
    )


def check_run_arguments(ap, args):
    """After parsing (not with --report): args.sides becomes a list; ap.error (one line,
    exit code 2) for bad --sides or --cases, and for --device cpu without --out; a note when
    the anchor is PySCF on the CPU while hartree runs on the GPU."""
    args.sides = [s.strip() for s in args.sides.split(",")]
    if not args.sides or set(args.sides) - {"hartree", "anchor"}:
        ap.error("--sides: hartree, anchor or hartree,anchor")
    try:
        parse_cases(args.cases)
    except ValueError as error:
        ap.error(str(error))
    if args.device == "cpu" and not args.out:
        ap.error("--device cpu tests the driver: give --out")
    if args.device == "gpu" and args.anchor == "pyscf" and "anchor" in args.sides:
        print("note: the anchor is PySCF on the CPU (--anchor pyscf), not GPU4PySCF", flush=True)


def run_cases(args, benchmark, meta, calls, summarise, *, row_fields=None, describe=None, after_case=None):
    """Measure every case of ``args.cases`` on the sides of ``args.sides``, each code in its
    own :class:`Side` process, and rewrite the record after each side of each case.

    calls: {'hartree' | 'anchor': (fn, extra)}: the side runs ``fn(name, basis, *extra)``;
    summarise: (compare(row) -> row, table(rows, meta) -> Markdown, versions(rows) -> str),
    the script's own; row_fields: entries put in every row after molecule and basis;
    describe(res) -> the line printed after a side (default: its error or nothing);
    after_case(row): called when both sides of a case are done.  The record is
    results/<benchmark>_<device> unless --out; ``meta['device']`` and ``meta['versions']``
    are filled in from the results.  Returns the rows."""
    from hartree.basis import load_basis

    compare, table, versions = summarise
    rows, stem = [], args.out
    with Side("hartree", args.device) as hartree_side, Side(args.anchor, anchor_device(args.anchor)) as anchor_side:
        processes = {"hartree": hartree_side, "anchor": anchor_side}
        for name, basis_name in parse_cases(args.cases):
            mol = case_molecule(name)
            row = {"molecule": name, "basis": basis_name, **(row_fields or {})}
            row |= {"natm": mol.natm, "nao": load_basis(mol, basis_name).nao}
            rows.append(row)
            print(f"{name} {basis_name}: {mol.natm} atoms, {row['nao']} functions", flush=True)
            for side in ("hartree", "anchor"):
                if side not in args.sides:
                    continue
                fn, extra = calls[side]
                res = attempt(processes[side], fn, name, basis_name, *extra)
                row[side] = res
                compare(row)
                if "error" not in res and describe is not None:
                    print(f"  {side}: {describe(res)}", flush=True)
                if side == "hartree" and "device" in res:
                    meta["device"] = res["device"]
                meta["versions"] = versions(rows)
                if stem is None and "device" in res:
                    stem = record_path(benchmark, device_slug(res["device"]))
                if stem is not None:
                    write_record(stem, {"meta": meta, "rows": rows}, table(rows, meta))
            if after_case is not None:
                after_case(row)
    print(table(rows, meta), flush=True)
    print(f"wrote {stem}.json and .md" if stem else "no record written", flush=True)
    return rows


def report_records(args, benchmark, key, summarise):
    """--report: merge the records ``args.report`` (:func:`merge_records` by ``key``),
    compare and tabulate the rows again with ``summarise`` (as in :func:`run_cases`) and
    write them to --out or results/<benchmark>_<device>."""
    compare, table, versions = summarise
    meta, rows = merge_records(args.report, key)
    rows = [compare(r) for r in rows]
    device = next((r[s]["device"] for r in rows for s in ("hartree", "anchor") if "device" in (r.get(s) or {})), "gpu")
    meta |= {"device": device, "versions": versions(rows)}
    notes = [n for part in meta["parts"] for n in part.get("notes", [])] + args.note
    if notes:
        meta["notes"] = list(dict.fromkeys(notes))  # a merged record's notes and the new ones, once each
        meta["parts"][-1]["notes"] = meta["notes"]  # kept when this record is merged again
    stem = args.out or record_path(benchmark, device_slug(device))
    write_record(stem, {"meta": meta, "rows": rows}, table(rows, meta))
    print(table(rows, meta))
    print(f"wrote {stem}.json and .md")


# ----------------------------------------------------------------------- records
def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def _write_atomic(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_record(stem, record, markdown):
    """Write ``<stem>.json`` (the record, numpy converted) and ``<stem>.md``, each
    atomically (a reader never sees half a file)."""
    _write_atomic(str(stem) + ".json", json.dumps(_jsonable(record), indent=1) + "\n")
    _write_atomic(str(stem) + ".md", markdown)


def merge_records(paths, key):
    """(meta, rows) of several records of one benchmark (e.g. one per device call): rows
    with the same ``key(row)`` are merged, a later file's entries replacing an earlier
    one's; the meta of the last file, with the metas of all under 'parts'."""
    rows, metas = {}, []
    for path in paths:
        record = json.loads(Path(path).read_text())
        meta = record.get("meta", {})
        metas += meta.get("parts") or [meta]  # a merged record brings its parts
        for row in record.get("rows", []):
            rows.setdefault(key(row), {}).update(row)
    meta = {k: v for k, v in metas[-1].items() if k != "parts"} if metas else {}
    meta["parts"] = metas
    return meta, list(rows.values())


def now():
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def kabsch_rmsd(a, b):
    """RMSD (same unit as the input) of two (N, 3) geometries after the best translation
    and rotation of ``a`` onto ``b`` (Kabsch, Acta Cryst. A32, 922 (1976)), from the
    differences of the aligned coordinates (no cancellation for nearly equal geometries)."""
    a = np.asarray(a, dtype=float) - np.mean(a, axis=0)
    b = np.asarray(b, dtype=float) - np.mean(b, axis=0)
    u, _, vt = np.linalg.svd(a.T @ b)
    d = np.sign(np.linalg.det(u @ vt)) or 1.0
    rotation = u @ np.diag([1.0, 1.0, d]) @ vt  # a @ rotation is a aligned onto b
    return float(np.sqrt(np.mean(np.sum((a @ rotation - b) ** 2, axis=1))))
