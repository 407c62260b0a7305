"""Start-up and first-run cost: cold and warm runs of one job, time by stage.

Run:  python benchmarks/startup.py [--label after] [--tree PATH] [--molecule FILE] [--basis NAME]
                                   [--method rhf] [--cores 2] [--gpu] [--out DIR] [--no-cli]

CPU (default job: the README's, caffeine RHF/6-31G**): the job runs in fresh subprocesses,

* **driver cold / warm**: this script's own in-process driver (``--child``), which calls what
  ``hartree run`` calls, in its order, and times each stage; cold with empty
  ``HARTREE_CACHE_DIR``, ``NUMBA_CACHE_DIR`` and ``CUPY_CACHE_DIR`` in a temporary directory,
  warm with the same directories again;
* **CLI cold / warm**: ``python -m hartree run FILE --basis B --method M --device cpu`` end to
  end (wall time of the process, as ``time`` gives it), in directories of its own.

Stages of the driver (seconds; each also with the numba compile seconds inside it):
``import`` (``numba.core.event``, then ``hartree.cli.main`` and ``hartree.cli.run_command``: what
the command imports; with ``--gpu`` also cupy),
``basis`` (read the molecule, load the basis), ``one_electron`` (``engine.overlap()``,
``engine.hcore()``: the SCF uses the engine's cached copies), ``schwarz`` (``engine.shell_pairs()``:
pair data and Schwarz factors, which the first J/K build would otherwise make), then
``hartree.scf.run`` on that engine: ``guess``, ``scf_iterations`` (J/K builds and the rest of
the loop) and ``analysis`` from the SCF's own clock (``SCFResult.timings``); ``first_cycle``
is the time from the driver's start (before the imports) to the SCF's first iteration record
(the guess's Fock build).  ``compile`` is the time inside numba's compiler, from numba's
``numba:compile`` events in the measured process (top-level compilations only: a function
compiled while another compiles is not counted twice; a function loaded from numba's cache
raises no event).  ``interpreter`` is the process's wall time minus the driver's: Python's
start and exit.  Python's bytecode of the measured tree is compiled beforehand (pip install
does that; not counted).

``--tree PATH`` measures another checkout (``git worktree add /tmp/before <commit>``): the
children run with ``PYTHONPATH=PATH`` in ``PATH``; the record names its commit and the files
under ``hartree/`` with uncommitted changes.  ``--cores N`` pins the children to N CPUs and N
threads.  Writes ``<out>/startup_cpu.json`` (one entry per ``--label``, replaced when measured
again) and ``startup_cpu.md``.

``--gpu`` (default job: water RHF/6-31G**) does the same with ``--device gpu``; the stage
``gpu_compile`` is ``GPUEngine.prepare()`` (J/K, Schwarz and one-electron kernels compiled
with NVRTC or loaded from the ``cuda`` cache; the engine's own ``prepare_seconds`` and the
number of new cache entries are recorded); cupy's own kernels compile inside the SCF stages
and are not separated.  Writes ``startup_gpu_<device>.json`` and ``.md``.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREENING = 1e-13  # hartree run's default (SCFOptions.screening_threshold)
STAGES = ("import", "basis", "gpu_compile", "one_electron", "schwarz", "guess", "scf_iterations", "analysis")


# ----------------------------------------------------------------------------- the child
class _CompileClock:
    """Top-level numba compile seconds (numba:compile events); kept here, not imported from
    hartree.warm, so that older trees without it can be measured."""

    def __init__(self):
        from numba.core import event

        self.seconds, self.functions, self._depth, self._start, self._name = 0.0, {}, 0, 0.0, ""
        clock = self

        class Listener(event.Listener):
            def on_start(self, ev):
                clock._depth += 1
                if clock._depth == 1:
                    clock._start = time.perf_counter()
                    func = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
                    clock._name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"

            def on_end(self, ev):
                clock._depth = max(clock._depth - 1, 0)
                if clock._depth == 0:
                    spent = time.perf_counter() - clock._start
                    clock.seconds += spent
                    clock.functions[clock._name] = clock.functions.get(clock._name, 0.0) + spent

        event.register("numba:compile", Listener())


def child(args):
    """Run the job in this process, timing each stage; write a JSON document to args.child_out."""
    t0 = time.perf_counter()
    clock = _CompileClock()  # imports numba.core.event: counted in the stage "import"
    stages, compiled = {}, {}
    mark = [t0, 0.0]

    def lap(stage):
        now = time.perf_counter()
        stages[stage] = now - mark[0]
        compiled[stage] = clock.seconds - mark[1]
        mark[:] = [now, clock.seconds]

    import numba
    import numpy

    import hartree
    import hartree.cli.main  # noqa: F401  (what `hartree run` imports: the entry point,
    import hartree.cli.run_command  # noqa: F401  then the module of the command it runs)
    from hartree.basis import load_basis
    from hartree.molecule import Molecule

    if args.gpu:
        import cupy  # as `hartree run --device gpu` does before its work

    lap("import")
    mol = Molecule.from_file(args.molecule)
    basis = load_basis(mol, args.basis)
    lap("basis")
    info = {}
    if args.gpu:
        from hartree.gpu import GPUEngine

        engine = GPUEngine(mol, basis, screening_threshold=SCREENING, devices=[0])
        before = _cubins()
        engine.prepare()
        info.update(
            prepare_seconds=engine.prepare_seconds,
            new_cuda_entries=_cubins() - before,
            gpu_name=_text(cupy.cuda.runtime.getDeviceProperties(0)["name"]),
            cupy=cupy.__version__,
        )
        lap("gpu_compile")
    else:
        from hartree.integrals.engine import CPUEngine

        engine = CPUEngine(mol, basis, screening_threshold=SCREENING)
    _ = (engine.overlap(), engine.hcore())
    lap("one_electron")
    if not args.gpu:
        engine.shell_pairs()
        lap("schwarz")
    first = []

    def callback(record):
        if not first:
            first.append((time.perf_counter(), clock.seconds))

    t_scf, c_scf = time.perf_counter(), clock.seconds
    result = hartree.scf.run(mol, basis, args.method, engine=engine, callback=callback)
    t_end, c_end = time.perf_counter(), clock.seconds
    timings = getattr(result, "timings", {}) or {}
    for stage, keys in (("guess", ("guess",)), ("scf_iterations", ("jk", "other")), ("analysis", ("analysis",))):
        stages[stage] = sum(timings.get(k, 0.0) for k in keys)
    stages["scf_one_electron"] = timings.get("one_electron", 0.0)  # cached copies: ~0
    # numba compile seconds inside hartree.scf.run, split at the first iteration record (the
    # SCF's own stages have no compile clock): the guess's share includes the first Fock build
    compiled["guess"] = first[0][1] - c_scf if first else None
    compiled["scf_iterations"] = c_end - first[0][1] if first else None  # with the analysis
    doc = {
        "stages": stages,
        "compile_by_stage": compiled,
        "compile": clock.seconds,
        "compile_top": sorted(clock.functions.items(), key=lambda kv: -kv[1])[:15],
        "scf_call": t_end - t_scf,
        "first_cycle": first[0][0] - t0 if first else None,
        "in_process": time.perf_counter() - t0,
        "energy": float(result.energy),
        "converged": bool(result.converged),
        "iterations": int(result.iterations),
        "natm": int(mol.natm),
        "nao": int(basis.nao),
        "device": str(result.device),
        "hartree_file": hartree.__file__,
        "versions": {
            "hartree": hartree.__version__,
            "numba": numba.__version__,
            "numpy": numpy.__version__,
            "python": sys.version.split()[0],
        },
        "threads": numba.get_num_threads(),
        **info,
    }
    with open(args.child_out, "w", encoding="utf-8") as handle:  # scratch file of the parent
        json.dump(doc, handle)


def _cubins():
    from hartree import cache

    try:
        return sum(1 for p in cache.kind_dir("cuda").iterdir() if p.suffix == ".cubin")
    except OSError:
        return 0


def _text(name):
    return name.decode() if isinstance(name, bytes) else str(name)


# ----------------------------------------------------------------------------- the parent
def _environment(tree, dirs, cores):
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(tree),
        HARTREE_CACHE_DIR=dirs["hartree"],
        NUMBA_CACHE_DIR=dirs["numba"],
        CUPY_CACHE_DIR=dirs["cupy"],
        PYTHONUNBUFFERED="1",
    )
    if cores:
        for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(cores)
    return env


def _pin(cores):
    """preexec_fn pinning a child to the first ``cores`` CPUs it may use (None: all)."""
    if not cores:
        return None
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    return lambda: os.sched_setaffinity(0, cpus)


def _fresh_dirs(base, name):
    dirs = {k: os.path.join(base, name, k) for k in ("hartree", "numba", "cupy")}
    for d in dirs.values():
        os.makedirs(d, mode=0o700)
    return dirs


def _run(cmd, tree, env, cores, what):
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, preexec_fn=_pin(cores), check=False)
    wall = time.perf_counter() - t0
    if done.returncode:
        sys.exit(f"{what} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return wall, done


def run_driver(args, tree, dirs, work, kind):
    """One driver run (cold or warm): its JSON document plus the process's wall time."""
    out = os.path.join(work, f"driver_{kind}.json")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--child-out", out]
    cmd += ["--molecule", args.molecule, "--basis", args.basis, "--method", args.method] + (
        ["--gpu"] if args.gpu else []
    )
    wall, _ = _run(cmd, tree, _environment(tree, dirs, args.cores), args.cores, f"driver ({kind})")
    with open(out, encoding="utf-8") as handle:
        doc = json.load(handle)
    if not Path(doc["hartree_file"]).resolve().is_relative_to(Path(tree).resolve()):
        sys.exit(f"the child imported hartree from {doc['hartree_file']}, not from {tree}")
    doc["wall"] = wall
    doc["interpreter"] = wall - doc["in_process"]
    return doc


def run_cli(args, tree, dirs, kind):
    """`python -m hartree run ...` end to end: wall time, energy, first-run and GPU lines."""
    device = "gpu" if args.gpu else "cpu"
    cmd = [sys.executable, "-m", "hartree", "run", args.molecule, "--basis", args.basis, "--method", args.method]
    cmd += ["--device", device]
    wall, done = _run(cmd, tree, _environment(tree, dirs, args.cores), args.cores, f"hartree run ({kind})")
    energies = re.findall(r"^E\(\w+/\S+\) = (\S+) Eh", done.stdout, re.MULTILINE)
    gpu = re.findall(r"^GPU: +(.*)$", done.stdout, re.MULTILINE)
    return {
        "wall": wall,
        "energy": float(energies[-1]) if energies else None,
        "first_run_note": "compiled on the first run" in done.stdout,
        "gpu_line": gpu[0] if gpu else None,
    }


def _git(tree, *argv):
    """stdout of ``git -C tree argv`` (None when git fails)."""
    done = subprocess.run(["git", "-C", str(tree), *argv], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def _tree(tree):
    """Commit of the measured tree and its files under hartree/ with uncommitted changes."""
    status = _git(tree, "status", "--porcelain", "--", "hartree") or ""
    commit = _git(tree, "rev-parse", "HEAD")
    return {
        "path": str(tree),
        "commit": commit.strip() if commit else None,
        "uncommitted": [line[3:] for line in status.splitlines() if len(line) > 3],
    }


def machine(cores):
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None)
    except OSError:
        pass
    allowed = len(os.sched_getaffinity(0))
    return {"cpu": model, "logical_cpus": os.cpu_count(), "cpus_allowed": allowed, "cores_used": cores or allowed}


HOW = (
    "Each run is a fresh process. cold: empty HARTREE_CACHE_DIR, NUMBA_CACHE_DIR and CUPY_CACHE_DIR; "
    "warm: the same directories again. driver: benchmarks/startup.py --child calls what `hartree run` "
    "calls and times each stage (import: numba.core.event + hartree.cli.main + run_command; basis: molecule file + "
    "load_basis; one_electron: engine.overlap()+hcore(); schwarz: engine.shell_pairs(); gpu_compile: "
    "GPUEngine.prepare(); guess, scf_iterations (jk+other), analysis: SCFResult.timings of "
    "hartree.scf.run on that engine); compile: seconds inside numba's compiler (numba:compile events, "
    "top level only) in the measured process (inside hartree.scf.run split at the first iteration "
    "record: guess's share includes the first Fock build, scf_iterations' the analysis); first_cycle: "
    "from before the imports to the SCF's first iteration record; interpreter: process wall minus the "
    "driver's own time. cli: `python -m hartree run` wall time end to end. Bytecode compiled "
    "beforehand (as pip install does)."
)


def _fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def table(record):
    """Markdown: one row per label, then the stages of each label (cold | warm)."""
    entries = record["entries"]
    any_entry = next(iter(entries.values()))
    job = any_entry["job"]
    device = "the GPU" if record["device"] != "cpu" else "the CPU"
    lines = [
        f"# Start-up: {job['method'].upper()}/{job['basis']} on {Path(job['molecule']).name} on {device}",
        "",
        HOW,
        "",
        "| label | commit | date | cores | driver cold (s) | driver warm (s) | cold - warm (s) "
        "| numba compile cold (s) | first cycle warm (s) | CLI cold (s) | CLI warm (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, e in entries.items():
        r = e["runs"]
        cc, cw = r["driver_cold"], r["driver_warm"]
        commit = (e["tree"]["commit"] or "?")[:10] + (" + changes" if e["tree"]["uncommitted"] else "")
        lines.append(
            f"| {label} | {commit} | {e['date'][:10]} | {e['machine']['cores_used']} | {_fmt(cc['wall'])} | "
            f"{_fmt(cw['wall'])} | {_fmt(cc['wall'] - cw['wall'])} | {_fmt(cc['compile'])} | "
            f"{_fmt(cw['first_cycle'], 2)} | {_fmt(r.get('cli_cold', {}).get('wall'))} | "
            f"{_fmt(r.get('cli_warm', {}).get('wall'))} |"
        )
    for label, e in entries.items():
        cc, cw = e["runs"]["driver_cold"], e["runs"]["driver_warm"]
        lines += [
            "",
            f"{label}: stages in seconds (of which numba compiling), {e['machine']['cpu']}, "
            f"{e['job']['nao']} functions, {cc['iterations']} cycles",
            "",
            "| stage | cold | warm |",
            "|---|---|---|",
        ]
        for stage in STAGES:
            if stage in cc["stages"]:
                lines.append(
                    f"| {stage} | {_fmt(cc['stages'][stage], 2)} ({_fmt(cc['compile_by_stage'].get(stage), 2)}) | "
                    f"{_fmt(cw['stages'][stage], 2)} ({_fmt(cw['compile_by_stage'].get(stage), 2)}) |"
                )
        lines.append(f"| compile (total) | {_fmt(cc['compile'], 2)} | {_fmt(cw['compile'], 2)} |")
        lines.append(f"| first cycle | {_fmt(cc['first_cycle'], 2)} | {_fmt(cw['first_cycle'], 2)} |")
        lines.append(f"| interpreter | {_fmt(cc['interpreter'], 2)} | {_fmt(cw['interpreter'], 2)} |")
        top = ", ".join(f"{name.rsplit('.', 1)[-1]} {sec:.1f}" for name, sec in cc["compile_top"][:6])
        lines += ["", f"{label}: longest numba compilations, cold (s): {top or 'none'}"]
    return "\n".join(lines) + "\n"


def _resolve_molecule(value, tree):
    """The molecule file as an absolute path: as given (absolute, or relative to the current
    directory), else relative to the measured tree."""
    for candidate in (Path(value), Path(tree) / value):
        if candidate.is_file():
            return str(candidate.resolve())
    sys.exit(f"molecule file {value} not found (here or in {tree})")


def parent(args):
    sys.path.insert(0, str(ROOT))
    from benchmarks.records import device_slug
    from hartree.io.files import read_json, write_text

    tree = Path(args.tree).resolve() if args.tree else ROOT
    args.molecule = _resolve_molecule(args.molecule, tree)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "hartree")], check=True, capture_output=True)
    runs = {}
    with tempfile.TemporaryDirectory(prefix="hartree-startup-") as work:
        dirs = _fresh_dirs(work, "driver")
        for kind in ("cold", "warm"):
            runs[f"driver_{kind}"] = doc = run_driver(args, tree, dirs, work, kind)
            print(f"driver {kind}: {doc['wall']:.1f} s, numba compile {doc['compile']:.1f} s", flush=True)
        if not args.no_cli:
            dirs = _fresh_dirs(work, "cli")
            for kind in ("cold", "warm"):
                runs[f"cli_{kind}"] = doc = run_cli(args, tree, dirs, kind)
                print(f"cli {kind}: {doc['wall']:.1f} s", flush=True)
    energies = [r["energy"] for r in runs.values() if r.get("energy") is not None]
    spread = max(energies) - min(energies)
    if spread > 1e-8:
        sys.exit(f"the runs' energies differ by {spread:.1e} Eh: {energies}")
    cold = runs["driver_cold"]
    entry = {
        "label": args.label,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "job": {
            "molecule": os.path.relpath(args.molecule, tree) if args.molecule.startswith(str(tree)) else args.molecule,
            "basis": args.basis,
            "method": args.method,
            "natm": cold["natm"],
            "nao": cold["nao"],
            "energy": cold["energy"],
        },
        "machine": {**machine(args.cores), "threads": cold["threads"], "versions": cold["versions"]},
        "tree": _tree(tree),
        "how": HOW,
        "runs": runs,
    }
    if args.gpu:
        entry["machine"]["gpu"] = cold.get("gpu_name")
        slug = "gpu_" + device_slug(cold.get("gpu_name") or "gpu")
    else:
        slug = "cpu"
    base = Path(args.out) / f"startup_{slug}"
    json_path = base.with_suffix(".json")
    record = read_json(json_path, "startup record") if json_path.exists() else {}
    record = {"benchmark": "startup", "device": slug, "entries": record.get("entries", {})}
    record["entries"][args.label] = entry
    os.makedirs(args.out, exist_ok=True)
    write_text(json_path, json.dumps(record, indent=1) + "\n")
    write_text(base.with_suffix(".md"), table(record))
    print(table(record))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", default="current", help="name of this measurement in the record (before, after)")
    ap.add_argument("--tree", default=None, help="checkout to measure (default: this one)")
    ap.add_argument("--molecule", default=None, help="molecule file (default: examples/caffeine.xyz, GPU: water.xyz)")
    ap.add_argument("--basis", default="6-31g**")
    ap.add_argument("--method", default="rhf", choices=("rhf", "uhf", "rohf"))
    ap.add_argument("--cores", type=int, default=None, help="pin the runs to N CPUs and N threads")
    ap.add_argument("--gpu", action="store_true", help="run the job on the GPU (--device gpu)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="directory of the record")
    ap.add_argument("--no-cli", action="store_true", help="skip the `hartree run` measurements")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.molecule is None:
        args.molecule = "examples/water.xyz" if args.gpu else "examples/caffeine.xyz"
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
