"""Several GPUs of one host: scaling of hartree (and GPU4PySCF) from 1 to N GPUs, measured
in one lease of one machine.

    python benchmarks/multi_gpu.py --out-dir DIR [--counts 1,2,4] [--parts jk,gradient,freq,orbitals]
                                   [--gpu4pyscf] [--repeat 3]
    python benchmarks/multi_gpu.py --report DIR [DIR ...]       # no measurement: the record

For every GPU count n of --counts (at most the GPUs visible), each part runs in its own
process that sees the first n GPUs (CUDA_VISIBLE_DEVICES), so GPU4PySCF, which uses every
GPU its process sees, runs on the same n GPUs as hartree:

* jk: J+K and the whole RHF of 113_Taxol and 168_Valinomycin/6-31G** (benchmarks/gpu_jk.py
  --jk-only; with --gpu4pyscf its get_jk and RHF in the same process);
* gradient: the RHF gradient of 168_Valinomycin/6-31G** (benchmarks/gpu_gradient.py; with
  --gpu4pyscf its nuc_grad_method().kernel());
* freq: ``hartree.vibrations.frequencies`` of 020_Vitamin_C/6-31G** (RHF, finite-difference
  Hessian from 6 natm displaced gradients; n > 1: one worker process per GPU), timed whole
  (reference SCF and gradient included), after a water job that compiles the kernels;
* orbitals: the HOMO of C60/6-31G* (cartesian, 900 functions; random coefficients: timing
  only) on the 172 x 173 x 169 lattice of benchmarks/orbitals_gpu.py, FP64, slabs shared
  out among the GPUs (hartree.grid.gpu.GPUGrid), ``evaluate_orbitals`` timed whole
  (median of --repeat).

Each part writes its JSON into --out-dir (``<part>_<n>gpu.json``); a part that fails is
recorded and the others go on.  --report reads such folders (several calls of one
machine) and writes benchmarks/results/multi_gpu_<device>.json and .md: per case the times
on 1..N GPUs, the speed-up T1/Tn and the parallel efficiency T1/(n Tn).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARTS = ("jk", "gradient", "freq", "orbitals")
JK_MOLECULES = ("113_Taxol", "168_Valinomycin")
GRADIENT_CASE = "168_Valinomycin:6-31g**"
FREQ_MOLECULE = "020_Vitamin_C"


def _ids(n):
    return ",".join(str(i) for i in range(n))


def _visible(parent_visible, n):
    """CUDA_VISIBLE_DEVICES for the first n GPUs of what the parent sees."""
    if parent_visible:
        return ",".join(parent_visible.split(",")[:n])
    return _ids(n)


def run_part(part, n, out_dir, gpu4pyscf, repeat):
    """One part on n GPUs in a child process; returns the path of its JSON (or None)."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = _visible(os.environ.get("CUDA_VISIBLE_DEVICES"), n)
    out = Path(out_dir) / f"{part}_{n}gpu.json"
    py = sys.executable
    if part == "jk":
        cmd = [py, str(ROOT / "benchmarks" / "gpu_jk.py"), "--molecules", *JK_MOLECULES, "--basis", "6-31g**"]
        cmd += ["--jk-only", "--repeat", str(repeat), "--gpus", _ids(n), "--out", str(out)]
        cmd += ["--gpu4pyscf"] if gpu4pyscf else []
    elif part == "gradient":
        cmd = [py, str(ROOT / "benchmarks" / "gpu_gradient.py"), "--cases", GRADIENT_CASE, "--repeat", "1"]
        cmd += ["--gpus", _ids(n), "--out", str(out.with_suffix(""))]
        cmd += ["--gpu4pyscf"] if gpu4pyscf else []
    else:
        cmd = [py, str(Path(__file__).resolve()), "--child", part, "--n", str(n), "--child-out", str(out)]
        cmd += ["--repeat", str(repeat)]
    t0 = time.perf_counter()
    print(f"== {part} on {n} GPU(s): {' '.join(cmd[1:])}", flush=True)
    rc = subprocess.call(cmd, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    print(f"== {part} on {n} GPU(s): exit {rc}, {wall:.1f} s", flush=True)
    if rc != 0 or not out.exists():
        out.write_text(json.dumps({"failed": True, "exit": rc, "wall_s": wall}) + "\n")
    return out


# ----------------------------------------------------------------------- child parts
def child_freq(n, repeat):
    import numpy as np

    from benchmarks.molecules import molecule_path
    from hartree.molecule import Molecule
    from hartree.vibrations import frequencies

    gpus = list(range(n))
    water = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    t0 = time.perf_counter()
    frequencies(water, "6-31g**", "rhf", device="gpu", gpus=gpus)  # kernels compiled or loaded
    warm_up = time.perf_counter() - t0
    mol = Molecule.from_xyz(str(molecule_path(FREQ_MOLECULE)))
    t0 = time.perf_counter()
    res = frequencies(mol, "6-31g**", "rhf", device="gpu", gpus=gpus)
    wall = time.perf_counter() - t0
    return {
        "case": f"{FREQ_MOLECULE}/6-31G** RHF frequencies (finite-difference Hessian)",
        "natm": mol.natm,
        "displacements": 6 * mol.natm,
        "gpus": n,
        "warm_up_water_s": warm_up,
        "wall_s": wall,
        "hessian": np.asarray(res.hessian).tolist(),
        "frequencies_cm": np.asarray(res.frequencies).tolist(),
        "energy": float(res.energy),
        "executor": res.executor,
    }


def child_orbitals(n, repeat):
    import numpy as np

    from benchmarks.molecules import molecule_path
    from benchmarks.orbitals_gpu import c60_lattice
    from hartree.basis import load_basis
    from hartree.grid import evaluate_orbitals
    from hartree.grid.gpu import GPUGrid
    from hartree.molecule import Molecule

    mol = Molecule.from_xyz(molecule_path("C60"))
    basis = load_basis(mol, "6-31g*", cartesian=True)
    lattice = c60_lattice(mol)
    c = np.random.default_rng(60).standard_normal(basis.nao) / np.sqrt(basis.nao)
    grid = GPUGrid(devices=list(range(n)))
    t0 = time.perf_counter()
    first = evaluate_orbitals(basis, c, lattice, device=grid)
    t_first = time.perf_counter() - t0
    times = []
    for _ in range(max(repeat, 3)):
        t0 = time.perf_counter()
        values = evaluate_orbitals(basis, c, lattice, device=grid)
        times.append(time.perf_counter() - t0)
    return {
        "case": "C60 6-31G* (cartesian, 900 functions), one orbital on the 172x173x169 lattice, FP64",
        "gpus": n,
        "points": int(np.prod(lattice.shape)),
        "first_s": t_first,
        "wall_s": statistics.median(times),
        "all_s": times,
        "checksum": float(np.sum(values * values)),
        "same_as_first": bool(np.array_equal(values, first)),
    }


def child(part, n, out, repeat):
    import cupy

    record = {"child_out": out} | (child_freq if part == "freq" else child_orbitals)(n, repeat)
    record["visible_gpus"] = int(cupy.cuda.runtime.getDeviceCount())
    Path(out).write_text(json.dumps(record) + "\n")


# ----------------------------------------------------------------------- report
def _load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def collect(dirs):
    """{(part, n): record} from the folders' JSON files (the last folder wins)."""
    found = {}
    for d in dirs:
        for path in sorted(Path(d).glob("*_*gpu.json")):
            part, _, rest = path.stem.partition("_")
            if part in PARTS and rest.endswith("gpu") and rest[:-3].isdigit():
                rec = _load(path)
                if rec is not None and not rec.get("failed"):
                    found[(part, int(rest[:-3]))] = rec
    return found


def series(found):
    """Rows (case, code, {n: seconds}) of every timed quantity."""
    rows = {}

    def add(case, code, n, seconds):
        if seconds is not None:
            rows.setdefault((case, code), {})[n] = float(seconds)

    for (part, n), rec in found.items():
        if part == "jk":
            for r in rec.get("results", []):
                case = f"{r['molecule']}/{r['basis']}"
                add(f"{case} J+K", "hartree", n, r["jk"]["median_s"])
                add(f"{case} RHF", "hartree", n, r.get("scf", {}).get("wall_s"))
                g = r.get("gpu4pyscf")
                if g:
                    add(f"{case} J+K", "GPU4PySCF", g.get("gpus", n), g["get_jk"]["median_s"])
                    add(f"{case} RHF", "GPU4PySCF", g.get("gpus", n), g.get("scf", {}).get("wall_s"))
        elif part == "gradient":
            for r in rec.get("rows", []):
                case = f"{r['molecule']}/{r['basis']} gradient"
                add(case, "hartree", n, r["hartree"]["gradient_s"])
                if "gpu4pyscf" in r:
                    add(case, "GPU4PySCF", r["gpu4pyscf"].get("gpus", n), r["gpu4pyscf"]["gradient_s"])
        elif part == "freq":
            add(f"{FREQ_MOLECULE}/6-31g** Hessian ({rec['displacements']} gradients)", "hartree", n, rec["wall_s"])
        elif part == "orbitals":
            add("C60 HOMO lattice (4.9 M points)", "hartree", n, rec["wall_s"])
    return rows


def checks(found):
    """Agreement between GPU counts: max |H_n - H_1| of the Hessians (Eh/bohr^2)."""
    import numpy as np

    out = {}
    base = found.get(("freq", 1))
    for (part, n), rec in sorted(found.items()):
        if part == "freq" and base is not None and n > 1:
            out[f"freq: max |H({n} GPUs) - H(1 GPU)| (Eh/bohr^2)"] = float(
                np.abs(np.asarray(rec["hessian"]) - np.asarray(base["hessian"])).max()
            )
        if part == "orbitals" and ("orbitals", 1) in found and n > 1:
            out[f"orbitals: checksum({n} GPUs) - checksum(1 GPU)"] = (
                rec["checksum"] - found[("orbitals", 1)]["checksum"]
            )
    return out


def _meta(found):
    """Device, date and versions from the J/K record (else the gradient's)."""
    for part in ("jk", "gradient"):
        recs = [rec for (p, _), rec in sorted(found.items()) if p == part]
        if not recs:
            continue
        meta = dict(recs[0]["meta"])
        if part == "jk":
            g4 = next((r["gpu4pyscf"]["versions"] for r in recs[0].get("results", []) if "gpu4pyscf" in r), {})
            meta["versions"] = ", ".join(
                [f"cupy {meta.get('cupy')}", f"CUDA driver {meta.get('driver')}"]
                + [f"{'GPU4PySCF' if k == 'gpu4pyscf' else 'PySCF'} {v}" for k, v in g4.items()]
            )
        return meta
    return {}


def report(dirs, out=None, note=None):
    from benchmarks.records import device_slug, record_path

    found = collect(dirs)
    if not found:
        raise SystemExit("multi_gpu --report: no part records found in " + ", ".join(dirs))
    meta = _meta(found)
    device = meta.get("device", "GPU")
    counts = sorted({n for _, n in found})
    rows = series(found)
    table = []
    for (case, code), times in sorted(rows.items()):
        t1 = times.get(1)
        eff = {n: t1 / (n * t) for n, t in times.items() if t1 and n > 1}
        table.append({"case": case, "code": code, "seconds": times, "efficiency": eff})
    record = {"meta": meta | {"gpu_counts": counts, "sources": [str(d) for d in dirs]}, "rows": table}
    record["agreement"] = checks(found)
    if note:
        record["meta"]["note"] = note
    path = out or record_path("multi_gpu", device_slug(device, max(counts)))
    Path(path + ".json").write_text(json.dumps(record, indent=1) + "\n")
    Path(path + ".md").write_text(markdown(record, device, counts))
    print(Path(path + ".md").read_text())


def markdown(record, device, counts):
    meta = record["meta"]
    versions = meta.get("versions", "")
    lines = [
        f"# hartree on several GPUs of one host ({device}, up to {max(counts)} GPUs)",
        "",
        f"{meta.get('date', '')}; {versions}. Each GPU count ran in its own process seeing only those GPUs "
        "(GPU4PySCF uses every GPU its process sees); all counts in one lease of one machine. "
        "Efficiency = T1 / (n Tn)." + (f" {meta['note']}" if meta.get("note") else ""),
        "",
        "| case | code | "
        + " | ".join(f"{n} GPU{'s' if n > 1 else ''} (s)" for n in counts)
        + " | "
        + " | ".join(f"efficiency {n}" for n in counts if n > 1)
        + " |",
        "|---|---|" + "---|" * (len(counts) + len([n for n in counts if n > 1])),
    ]
    for row in record["rows"]:
        t = row["seconds"]
        e = row["efficiency"]
        cells = [f"{t[n]:.3f}" if n in t else "-" for n in counts]
        cells += [f"{100 * e[n]:.0f} %" if n in e else "-" for n in counts if n > 1]
        lines.append(f"| {row['case']} | {row['code']} | " + " | ".join(cells) + " |")
    if record["agreement"]:
        lines += ["", "Agreement between GPU counts:", ""]
        lines += [f"- {k}: {v:.1e}" for k, v in record["agreement"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default="/tmp/multi_gpu", help="folder for the parts' JSON")
    ap.add_argument("--counts", default=None, help="GPU counts, e.g. 1,2,4 (default: 1, 2, 4, ... up to visible)")
    ap.add_argument("--parts", default=",".join(PARTS), help="subset of " + ",".join(PARTS))
    ap.add_argument("--gpu4pyscf", action="store_true", help="GPU4PySCF's J/K, RHF and gradient beside hartree's")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--report", nargs="+", default=None, metavar="DIR", help="write the record from these folders")
    ap.add_argument("--record", default=None, help="with --report: record path without extension")
    ap.add_argument("--note", default=None, help="with --report: a sentence for the record (e.g. the commit)")
    ap.add_argument("--child", choices=("freq", "orbitals"), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.n, args.child_out, args.repeat)
    if args.report:
        return report(args.report, args.record, args.note)
    import cupy

    visible = cupy.cuda.runtime.getDeviceCount()
    if args.counts:
        counts = [int(c) for c in args.counts.split(",")]
    else:
        counts = [c for c in (1, 2, 4, 8) if c <= visible]
    if max(counts) > visible:
        raise SystemExit(f"multi_gpu: {max(counts)} GPUs asked, {visible} visible")
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"multi_gpu: unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    os.makedirs(args.out_dir, exist_ok=True)
    for part in parts:
        for n in counts:
            run_part(part, n, args.out_dir, args.gpu4pyscf, args.repeat)


if __name__ == "__main__":
    main()
