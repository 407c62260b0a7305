"""Gradient time against size on the GPU: (alanine)n, 6-31G and 6-31G** (the QUICK
document's figure), hartree and GPU4PySCF side by side, same basis data.

Run (GPU machine; GPU4PySCF as for gpu_gradient.py, ``import g4stub``):
    python benchmarks/gpu_gradient_alanine.py [--n 1-30] [--bases 6-31g,6-31g**] [--gpu4pyscf]
                                              [--repeat 2] [--out STEM]
    python benchmarks/gpu_gradient_alanine.py --report PART.json [PART.json ...] [--out STEM]
Test without a GPU:
    python benchmarks/gpu_gradient_alanine.py --device cpu --anchor pyscf --n 1 --bases sto-3g --out /tmp/x

Per chain (extended strands built by benchmarks/peptides.py): hartree's RHF on the GPU
(GPUEngine, conv_tol 1e-9 and commutator 1e-7 = GRADIENT_SCF_DEFAULTS, screening 1e-13)
and its analytic gradient (``scf_gradient``): the first call and the median of --repeat
warm calls; with --gpu4pyscf, GPU4PySCF's RHF with the same basis data (tests.helpers.
to_pyscf), conv_tol and conv_tol_grad of GRADIENT_SCF_DEFAULTS, direct_scf_tol 1e-13, then
``mf.nuc_grad_method().kernel()`` timed the same way, and the largest difference between
the two gradients (Eh/bohr).  Each code runs in its own process (benchmarks/side_by_side.py),
each warmed up first by a water RHF and gradient in the basis, so SCF and gradient times
are of compiled kernels.  The CPU mode of benchmarks/gradient_alanine.py (hartree and PySCF
in one process, on the CPU) is that script's, unchanged.

The record, results/gradient_alanine_<gpu>.json, .md and .png (log-log gradient time
against atoms, both codes, both bases), or --out STEM, is rewritten after every chain, so
a run stopped by a time limit keeps the chains it finished.  Several runs (e.g. one per
device call, each with its own --n and --out) become one record with --report, which
merges their rows (a later file's row replaces an earlier one's for the same chain and
basis) and writes the tables and the figure; no GPU needed for that.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.records import device_slug, record_path  # noqa: E402
from benchmarks.side_by_side import (  # noqa: E402
    ANCHORS,
    DEVICES,
    Side,
    anchor_device,
    anchor_info,
    anchor_label,
    anchor_rhf,
    attempt,
    case_molecule,
    git_commit,
    hartree_engine,
    hartree_info,
    merge_records,
    now,
    synchronize,
    warm_up_anchor,
    warm_up_hartree,
    write_record,
)
from hartree.gradients import GRADIENT_SCF_DEFAULTS  # noqa: E402

BENCHMARK = "gradient_alanine"


def parse_n(text):
    """'1-30' / '1,2,4' / '1-4,8' -> sorted list of chain lengths; ValueError otherwise."""
    out = set()
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        first, last = int(lo), int(hi) if dash else int(lo)
        if first < 1 or last < first:
            raise ValueError(f"chain lengths {part!r}: write n >= 1, or a range such as 1-30")
        out.update(range(first, last + 1))
    return sorted(out)


# ----------------------------------------------------------------------- the two sides (child processes)
def _timed(fn, device, repeat):
    """(seconds of the first call, [seconds of each of ``repeat`` warm calls], last value)."""
    t0 = time.perf_counter()
    value = fn()
    synchronize(device)
    first = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        synchronize(device)
        warm.append(time.perf_counter() - t0)
    return first, warm, value


def hartree_chain(n, basis_name, device, repeat):
    """hartree's RHF and gradient of (alanine)n on ``device``."""
    import hartree
    from hartree.basis import load_basis
    from hartree.gradients import scf_gradient

    info = hartree_info(device) | {"warm_up_s": warm_up_hartree(basis_name, device)}
    mol = case_molecule(f"A{n}")
    basis = load_basis(mol, basis_name)
    engine = hartree_engine(mol, basis, device)
    t0 = time.perf_counter()
    res = hartree.scf.run(mol, basis, "rhf", engine=engine, max_cycle=100, **GRADIENT_SCF_DEFAULTS)
    synchronize(device)
    t_scf = time.perf_counter() - t0
    first, warm, g = _timed(lambda: scf_gradient(res, engine), device, repeat)
    return info | {
        "scf_s": t_scf,
        "scf_cycles": int(res.iterations),
        "converged": bool(res.converged),
        "energy": float(res.energy),
        "gradient_first_s": first,
        "gradient_s": statistics.median(warm) if warm else first,
        "gradient_all_s": warm,
        "engine": str(res.device),
        "gradient": np.asarray(g.gradient),
    }


def anchor_chain(n, basis_name, anchor, repeat):
    """The anchor's RHF and ``nuc_grad_method().kernel()`` of (alanine)n."""
    from hartree.basis import load_basis

    device = anchor_device(anchor)
    info = anchor_info(anchor) | {"warm_up_s": warm_up_anchor(basis_name, anchor)}
    mol = case_molecule(f"A{n}")
    mf = anchor_rhf(mol, load_basis(mol, basis_name), anchor, **GRADIENT_SCF_DEFAULTS)
    t0 = time.perf_counter()
    energy = mf.kernel()
    synchronize(device)
    t_scf = time.perf_counter() - t0
    grad = mf.nuc_grad_method()
    first, warm, g = _timed(grad.kernel, device, repeat)
    return info | {
        "scf_s": t_scf,
        "converged": bool(mf.converged),
        "energy": float(energy),
        "gradient_first_s": first,
        "gradient_s": statistics.median(warm) if warm else first,
        "gradient_all_s": warm,
        "gradient": np.asarray(g.get() if hasattr(g, "get") else g),
    }


# ----------------------------------------------------------------------- record
def _key(row):
    return (row["basis"], row["n"])


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def table(rows, meta):
    """The Markdown record."""
    label = anchor_label(meta.get("anchor"))
    anchor = meta.get("anchor")
    lines = [
        f"# Gradient time against size: (alanine)n, hartree{f' vs {label}' if anchor else ''} ({meta['device']})",
        "",
        f"{meta['date']}; {meta['versions']}. RHF to {GRADIENT_SCF_DEFAULTS['conv_tol']:g} Eh and orbital "
        f"gradient (commutator) {GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g} in both codes, screening 1e-13, same "
        "basis data; each code in its own process, warmed up by a water RHF and gradient in the basis. Gradient "
        "times: wall seconds of the analytic gradient after the converged SCF, "
        + (f"median of {meta['repeat']} warm calls (the first call separately)" if meta["repeat"] else "the first call")
        + ". Chains: extended strands of benchmarks/peptides.py. "
        "Ratio = hartree / anchor (< 1: hartree faster).",
        "",
        f"| n | atoms | basis | nao | hartree gradient (s) | first call | {label} gradient (s) | ratio | "
        f"hartree SCF (s) | {label} SCF (s) | max abs diff (Eh/bohr) | E diff (Eh) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["basis"], r["n"])):
        h, a = r.get("hartree") or {}, r.get("anchor") or {}
        hg, ag = h.get("gradient_s"), a.get("gradient_s")
        ratio = hg / ag if hg and ag else None
        lines.append(
            f"| {r['n']} | {r['natm']} | {r['basis']} | {r['nao']} | {_fmt(hg, '.3f')} | "
            f"{_fmt(h.get('gradient_first_s'), '.2f')} | {_fmt(ag, '.3f')} | {_fmt(ratio, '.2f')} | "
            f"{_fmt(h.get('scf_s'), '.2f')} | {_fmt(a.get('scf_s'), '.2f')} | {_fmt(r.get('max_diff'), '.1e')} | "
            f"{_fmt(r.get('energy_diff'), '.1e')} |"
        )
    errors = [(r, side) for r in rows for side in ("hartree", "anchor") if "error" in (r.get(side) or {})]
    if errors:
        lines += ["", "Failed:", ""]
        lines += [f"- n = {r['n']}, {r['basis']}, {side}: {r[side]['error']}" for r, side in errors]
    return "\n".join(lines) + "\n"


def figure(rows, meta, path):
    """Log-log gradient time against atoms: both codes (colour), both bases (marker)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no figure (make it later with --report)", flush=True)
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    markers = {}
    for side, colour, label in (("hartree", "C0", "hartree"), ("anchor", "C3", anchor_label(meta.get("anchor")))):
        for basis in sorted({r["basis"] for r in rows}):
            pts = sorted(
                (r["natm"], r[side]["gradient_s"])
                for r in rows
                if r["basis"] == basis and (r.get(side) or {}).get("gradient_s")
            )
            if pts:
                marker = markers.setdefault(basis, "os^vD"[len(markers) % 5])
                x, y = zip(*pts)
                ax.loglog(x, y, marker=marker, color=colour, linestyle="-" if side == "hartree" else "--",
                          label=f"{label}, {basis.upper()}")  # fmt: skip
    ax.set_xlabel("atoms in (alanine)n")
    ax.set_ylabel("RHF gradient wall time (s)")
    ax.set_title(f"(alanine)n RHF gradient, {meta['device']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(stem, meta, rows):
    write_record(stem, {"meta": meta, "rows": rows}, table(rows, meta))
    figure(rows, meta, str(stem) + ".png")


def _versions(h_info, a_info):
    parts = [f"{k} {v}" for k, v in (h_info.get("versions") or {}).items()]
    parts += [f"{k} {v}" for k, v in (a_info.get("versions") or {}).items() if k in ("gpu4pyscf", "pyscf")]
    return ", ".join(parts)


# ----------------------------------------------------------------------- main
def run(args):
    from hartree.basis import load_basis

    ns, bases = parse_n(args.n), [b.strip() for b in args.bases.split(",")]
    meta = {"benchmark": BENCHMARK, "date": now(), "commit": git_commit(), "device": args.device, "versions": "",
            "anchor": args.anchor, "repeat": args.repeat, "command": " ".join(sys.argv)}  # fmt: skip
    rows, stem = [], args.out
    h_info, a_info = {}, {}
    anchor_where = anchor_device(args.anchor) if args.anchor else "cpu"
    with Side("hartree", args.device) as hartree_side, Side(args.anchor or "anchor", anchor_where) as anchor_side:
        for basis_name in bases:
            for n in ns:
                mol = case_molecule(f"A{n}")
                row = {"n": n, "natm": mol.natm, "basis": basis_name, "nao": load_basis(mol, basis_name).nao}
                print(f"(alanine){n} {basis_name}: {mol.natm} atoms, {row['nao']} functions", flush=True)
                h = attempt(hartree_side, hartree_chain, n, basis_name, args.device, args.repeat)
                a = attempt(anchor_side, anchor_chain, n, basis_name, args.anchor, args.repeat) if args.anchor else {}
                if "gradient" in h and "gradient" in a:
                    row["max_diff"] = float(np.abs(h["gradient"] - a["gradient"]).max())
                    row["energy_diff"] = h["energy"] - a["energy"]
                for side, res, info in (("hartree", h, h_info), ("anchor", a, a_info)):
                    res.pop("gradient", None)
                    for k in ("device", "gpus_visible", "threads", "versions", "anchor"):
                        if k in res:
                            info[k] = res.pop(k)
                    if res:
                        row[side] = res
                line = f"  hartree gradient {_fmt(h.get('gradient_s'), '.3f')} s, SCF {_fmt(h.get('scf_s'), '.1f')} s"
                if args.anchor:
                    line += f"; {args.anchor} {_fmt(a.get('gradient_s'), '.3f')} s, SCF {_fmt(a.get('scf_s'), '.1f')} s"
                if "max_diff" in row:
                    line += f", max diff {row['max_diff']:.1e} Eh/bohr"
                print(line, flush=True)
                rows.append(row)
                if h_info.get("device"):
                    meta["device"] = h_info["device"]
                meta |= {"hartree": h_info, "anchor_side": a_info, "versions": _versions(h_info, a_info)}
                if stem is None and h_info.get("device"):
                    stem = record_path(BENCHMARK, device_slug(h_info["device"]))
                if stem is not None:
                    write(stem, meta, rows)
    print(table(rows, meta), flush=True)
    print(f"wrote {stem}.json, .md, .png" if stem else "no record written (no chain ran)", flush=True)


def report(args):
    meta, rows = merge_records(args.report, _key)
    stem = args.out or record_path(BENCHMARK, device_slug(meta.get("device", "gpu")))
    write(stem, meta, rows)
    print(table(rows, meta))
    print(f"wrote {stem}.json, .md, .png")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1-30", help="chain lengths: 1-30, 1,2,4 or 1-4,8 (default 1-30)")
    ap.add_argument("--bases", default="6-31g,6-31g**")
    ap.add_argument("--device", default="gpu", choices=DEVICES, help="hartree's device (cpu: testing)")
    ap.add_argument("--anchor", default=None, choices=ANCHORS, help="the code side by side (default: none)")
    ap.add_argument("--gpu4pyscf", action="store_true", help="the same as --anchor gpu4pyscf")
    ap.add_argument("--repeat", type=int, default=2, help="warm gradient calls per code and chain (median)")
    ap.add_argument("--out", default=None, help="record path, no extension (default: results/gradient_alanine_<gpu>)")
    ap.add_argument("--report", nargs="+", default=None, metavar="JSON", help="merge these records; no measurement")
    args = ap.parse_args()
    if args.report:
        return report(args)
    if args.gpu4pyscf:
        if args.anchor not in (None, "gpu4pyscf"):
            ap.error("--gpu4pyscf and --anchor pyscf name different anchors; give one")
        args.anchor = "gpu4pyscf"
    try:
        parse_n(args.n)
    except ValueError as error:
        ap.error(str(error))
    if args.device == "cpu" and not args.out:
        ap.error("--device cpu tests the driver: give --out (the CPU record is benchmarks/gradient_alanine.py's)")
    if args.repeat < 0:
        ap.error("--repeat must be 0 or more")
    run(args)


if __name__ == "__main__":
    main()
