"""The largest molecule each code can set up and run two density-fitted SCF cycles for on one
GPU, with its peak device and host memory (issue 19: "goal at least 2x the atoms GPU4PySCF
manages").

Run (GPU machine; GPU4PySCF with its GPU libxc as for benchmarks/gpu_dft.py):
    python benchmarks/df_capacity.py [--sizes 10,20,30,40,60,80] [--basis def2-tzvp] [--xc b3lyp]
                                     [--codes hartree,anchor] [--timeout 900] [--out STEM]
Test without a GPU (hartree's CPU engine and PySCF's CPU RKS, named so in the record):
    python benchmarks/df_capacity.py --device cpu --sizes 1,2 --basis sto-3g --out /tmp/x

The molecules are (alanine)n chains of benchmarks/peptides.py (10 n + 2 atoms; n = 30 is the
issue's "protein fragment of 300+ atoms").  For each code the sizes are tried in increasing
order, each in a fresh process (so one code's memory pool or a failed allocation cannot affect
the next try), until one fails or runs past --timeout; the code's capacity is the largest size
that finished.  A try is: build the molecule and basis, the density-fitted RKS with the
functional (hartree: ``hartree.scf.run(..., density_fitting=True, max_cycle=2)``; the anchor:
``RKS(...).density_fit(auxbasis=...)`` with ``max_cycle = 2`` on the same basis and auxiliary
basis data (hartree's default J/K fitting basis), grid level 3), and run it; not converging in
two cycles is expected and counts as finished.  Measured per try: wall time, peak host memory
(the process's maximum resident set, pinned host memory included), peak device memory (the
device's used memory, polled every 20 ms by a thread of the child: only one try runs at a time,
so it is the code's), hartree's placement of B (stored, split, host or direct) from its notes,
and the error of a failed try (its last line).
"""

import argparse
import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.records import device_slug, record_path  # noqa: E402
from benchmarks.side_by_side import _write_atomic, anchor_label, git_commit, now  # noqa: E402


class DevicePeak:
    """Polls the device's used memory (total - free, bytes) in a thread; ``peak`` is the
    largest seen above the baseline taken at start (None on the CPU)."""

    def __init__(self, device, every=0.02):
        self.device, self.every, self.peak = device, every, None
        self._stop = threading.Event()
        if device == "gpu":
            import cupy

            self._info = cupy.cuda.runtime.memGetInfo
            free, total = self._info()
            self.base, self.peak = total - free, 0
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()

    def _poll(self):
        while not self._stop.is_set():
            free, total = self._info()
            self.peak = max(self.peak, total - free - self.base)
            time.sleep(self.every)

    def stop(self):
        if self.device == "gpu":
            self._stop.set()
            self._thread.join()
        return self.peak


def _hartree_try(mol, basis_name, xc, device):
    import hartree
    from hartree.basis import load_basis

    basis = load_basis(mol, basis_name)
    res = hartree.scf.run(
        mol, basis, "rks", xc=xc, device=device, density_fitting=True, max_cycle=2, grid_level=3, allow_unconverged=True
    )
    fitted = res.density_fitting or {}
    return {"nao": int(basis.nao), "naux": fitted.get("naux"), "storage": fitted.get("storage"),
            "tensor_bytes": fitted.get("tensor_bytes"), "energy": float(res.energy)}  # fmt: skip


def _anchor_try(mol, basis_name, xc, device):
    from benchmarks.gpu_dft import anchor_rks
    from hartree.basis import load_basis

    anchor = "gpu4pyscf" if device == "gpu" else "pyscf"
    basis = load_basis(mol, basis_name)
    mf = anchor_rks(mol, basis, xc, 3, anchor, fitted=True)
    mf.max_cycle = 2
    energy = mf.kernel()
    return {"nao": int(basis.nao), "naux": int(mf.with_df.auxmol.nao), "energy": float(energy)}


def child(code, size, basis_name, xc, device):
    """One try in this process: prints one JSON line (the try's record)."""
    from benchmarks.peptides import peptide

    mol = peptide("A" * size)
    peak = DevicePeak(device)
    t0 = time.perf_counter()
    out = {"code": code, "size": size, "natm": int(mol.natm)}
    try:
        out |= (_hartree_try if code == "hartree" else _anchor_try)(mol, basis_name, xc, device)
        out["ok"] = True
    except Exception as exc:  # a failed try is a result: its error is recorded
        out |= {"ok": False, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    out["seconds"] = time.perf_counter() - t0
    out["device_peak_bytes"] = peak.stop()
    out["host_peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("CAPACITY " + json.dumps(out), flush=True)


def run_try(code, size, args):
    """A child process for one try; its record, or a failure record for a crash or timeout."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", code, str(size), "--basis", args.basis,
           "--xc", args.xc, "--device", args.device]  # fmt: skip
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"code": code, "size": size, "ok": False, "error": f"timeout after {args.timeout} s",
                "seconds": time.perf_counter() - t0}  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("CAPACITY "):
            return json.loads(line[len("CAPACITY ") :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()
    return {"code": code, "size": size, "ok": False, "seconds": time.perf_counter() - t0,
            "error": f"exit {proc.returncode}: {tail[-1] if tail else ''}"}  # fmt: skip


def markdown(record):
    meta = record["meta"]
    gib = 2.0**30
    lines = [
        f"# Density-fitted capacity: hartree vs {anchor_label(meta['anchor'])} ({meta['device']})",
        "",
        f"{meta['date']}; commit {meta['commit']}. RKS {meta['xc']}/{meta['basis']} with density fitting, two SCF "
        "cycles, (alanine)n chains; each try in a fresh process; peak device memory polled (used - baseline), "
        "peak host memory the process's maximum resident set.",
        "",
        "| code | n | atoms | nao | naux | finished | s | device peak (GiB) | host peak (GiB) | B | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in record["tries"]:
        dev = t.get("device_peak_bytes")
        host = t.get("host_peak_bytes")
        lines.append(
            f"| {t['code']} | {t['size']} | {t.get('natm', '-')} | {t.get('nao', '-')} | {t.get('naux') or '-'} | "
            f"{'yes' if t['ok'] else 'no'} | {t['seconds']:.1f} | {'-' if dev is None else f'{dev / gib:.1f}'} | "
            f"{'-' if host is None else f'{host / gib:.1f}'} | {t.get('storage') or '-'} | {t.get('error', '')} |"
        )
    cap = record["capacity_atoms"]
    text = "Largest finished (atoms): " + (", ".join(f"{k} {v}" for k, v in cap.items()) or "none")
    if cap.get("hartree") and cap.get("anchor"):
        text += f"; ratio hartree / anchor = {cap['hartree'] / cap['anchor']:.2f}"
    lines += ["", text]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,20,30,40,60,80", help="alanine residues per try, increasing")
    ap.add_argument("--basis", default="def2-tzvp")
    ap.add_argument("--xc", default="b3lyp")
    ap.add_argument("--codes", default="hartree,anchor")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a try may take")
    ap.add_argument("--out", default=None, help="record stem (default benchmarks/results/df_capacity_<device>)")
    ap.add_argument("--child", nargs=2, metavar=("CODE", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child[0], int(args.child[1]), args.basis, args.xc, args.device)
    sizes = [int(s) for s in args.sizes.split(",")]
    codes = [c.strip() for c in args.codes.split(",")]
    if args.device == "gpu":
        from benchmarks.side_by_side import gpu_name

        device_name = gpu_name()
    else:
        from benchmarks.side_by_side import cpu_name

        device_name = cpu_name()
    slug = device_slug(device_name) if args.device == "gpu" else "cpu"
    stem = args.out or str(record_path("df_capacity", slug))
    record = {
        "meta": {
            "benchmark": "df_capacity",
            "date": now(),
            "commit": git_commit(),
            "device": device_name,
            "anchor": "gpu4pyscf" if args.device == "gpu" else "pyscf",
            "basis": args.basis,
            "xc": args.xc,
            "timeout_s": args.timeout,
            "command": " ".join(sys.argv),
        },  # fmt: skip
        "tries": [],
        "capacity_atoms": {},
    }
    for code in codes:
        for size in sizes:
            t = run_try(code, size, args)
            record["tries"].append(t)
            print(json.dumps(t), flush=True)
            if t["ok"]:
                record["capacity_atoms"][code] = t["natm"]
            _write_atomic(stem + ".json", json.dumps(record, indent=1))
            _write_atomic(stem + ".md", markdown(record))
            if not t["ok"]:
                break
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
