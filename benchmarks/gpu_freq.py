"""Harmonic frequencies side by side: ``hartree freq`` on one GPU (hartree.vibrations.
frequencies: Hessian by central differences of 6N analytic gradients) against GPU4PySCF's
analytic RHF Hessian (``mf.Hessian().kernel()``), same molecule and basis data.

Run (GPU machine, one GPU visible; GPU4PySCF as for gpu_gradient.py, ``import g4stub``):
    python benchmarks/gpu_freq.py [--cases 020_Vitamin_C:6-31g**] [--sides hartree,anchor] [--out STEM]
    python benchmarks/gpu_freq.py --report PART.json [PART.json ...] [--out STEM]
Test without a GPU (PySCF's CPU Hessian as the anchor, named so in the record):
    python benchmarks/gpu_freq.py --device cpu --anchor pyscf --cases water:sto-3g --out /tmp/x

hartree: ``frequencies(mol, basis, 'rhf', device=...)``, the call ``hartree freq`` makes
(step 0.005 bohr, every SCF to 1e-10 Eh and commutator 1e-8: FREQUENCY_SCF_DEFAULTS, the
displaced SCFs serially in this process), timed whole, with the reference SCF, its gradient
and the displaced gradients separately.  Anchor: RHF with the same basis data (tests.
helpers.to_pyscf), conv_tol and conv_tol_grad of FREQUENCY_SCF_DEFAULTS, direct_scf_tol
1e-13, timed, then ``mf.Hessian().kernel()`` timed (CPHF tolerance: the anchor's
conv_tol_cpscf, recorded; --conv-tol-cpscf sets it).  Both Hessians then go through the same
analysis, hartree's harmonic_analysis (mass weighting, translations and rotations projected
out): max and RMS |Δν| over the 3N-6 modes in cm^-1 (modes paired in ascending order), and
max |ΔH| in Eh/bohr^2.  The shared geometries are not optimized: the frequencies are those
of both Hessians at the same non-stationary point, analysed alike, which is what is compared.

Each code runs in its own process, warmed up first by water in the basis (hartree: RHF and
gradient; anchor: RHF, gradient and Hessian).  The record, results/gpu_freq_<gpu>.json and
.md (or --out STEM), is rewritten after each case and side; --report merges parts.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.side_by_side import (  # noqa: E402
    add_run_arguments,
    anchor_device,
    anchor_info,
    anchor_label,
    anchor_rhf,
    case_molecule,
    check_run_arguments,
    git_commit,
    hartree_info,
    now,
    report_records,
    run_cases,
    synchronize,
    warm_up_anchor,
    warm_up_hartree,
)
from hartree.vibrations import FREQUENCY_SCF_DEFAULTS, harmonic_analysis  # noqa: E402

BENCHMARK = "gpu_freq"
CASES = "020_Vitamin_C:6-31g**"


# ----------------------------------------------------------------------- the two sides (child processes)
def hartree_frequencies(name, basis_name, device, _cpscf):
    """hartree.vibrations.frequencies of the case (the path of ``hartree freq``)."""
    from hartree.vibrations import frequencies

    info = hartree_info(device) | {"warm_up_s": warm_up_hartree(basis_name, device)}
    mol = case_molecule(name)
    t0 = time.perf_counter()

    def progress(p):
        if p.stage == "done" and (p.done % 10 == 0 or p.done == p.total):
            print(f"  hartree displacements {p.done}/{p.total}  {time.perf_counter() - t0:7.1f} s", flush=True)

    res = frequencies(mol, basis_name, "rhf", device=device, progress=progress)
    wall = time.perf_counter() - t0
    scf, gradient = res.gradient.scf, res.gradient
    return info | {
        "wall_s": wall,
        "frequencies_wall_s": float(res.wall_time),
        "scf_s": float(scf.wall_time),
        "scf_cycles": int(scf.iterations),
        "gradient_s": float(gradient.wall_time),
        "displacements": int(res.displacements),
        "displacements_s": wall - float(scf.wall_time) - float(gradient.wall_time),
        "energy": float(res.energy),
        "engine": str(scf.device),
        "executor": str(res.executor),
        "step_bohr": float(res.step),
        "hessian_asymmetry": float(res.hessian_asymmetry),
        "hessian": np.asarray(res.hessian),
        "own_frequencies": np.asarray(res.frequencies),
        "notes": list(res.notes),
    }


def anchor_frequencies(name, basis_name, anchor, cpscf):
    """The anchor's RHF and analytic Hessian of the case, as a (3N, 3N) Eh/bohr^2 matrix."""
    from hartree.basis import load_basis

    device = anchor_device(anchor)
    info = anchor_info(anchor) | {"warm_up_s": warm_up_anchor(basis_name, anchor, hessian=True)}
    mol = case_molecule(name)
    mf = anchor_rhf(mol, load_basis(mol, basis_name), anchor, **FREQUENCY_SCF_DEFAULTS)
    if cpscf is not None:
        mf.conv_tol_cpscf = cpscf
    t0 = time.perf_counter()
    energy = mf.kernel()
    synchronize(device)
    t_scf = time.perf_counter() - t0
    print(f"  {anchor} SCF {t_scf:.1f} s", flush=True)
    t0 = time.perf_counter()
    h = mf.Hessian().kernel()  # (natm, natm, 3, 3): d2E / dR_A,x dR_B,y
    synchronize(device)
    t_hess = time.perf_counter() - t0
    h = np.asarray(h.get() if hasattr(h, "get") else h)
    print(f"  {anchor} Hessian {t_hess:.1f} s", flush=True)
    return info | {
        "wall_s": t_scf + t_hess,
        "scf_s": t_scf,
        "scf_cycles": getattr(mf, "cycles", None),
        "hessian_s": t_hess,
        "converged": bool(mf.converged),
        "energy": float(energy),
        "conv_tol_cpscf": getattr(mf, "conv_tol_cpscf", None),
        "hessian": h.transpose(0, 2, 1, 3).reshape(3 * mol.natm, 3 * mol.natm),
    }


# ----------------------------------------------------------------------- record
def _key(row):
    return (row["molecule"], row["basis"])


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def compare(row):
    """Both Hessians through hartree's harmonic analysis; the differences into the row."""
    h, a = row.get("hartree") or {}, row.get("anchor") or {}
    mol = case_molecule(row["molecule"])
    for side in (h, a):
        if "hessian" in side:
            side["frequencies"] = harmonic_analysis(np.asarray(side["hessian"]), mol).frequencies
    if "frequencies" in h and "own_frequencies" in h:
        row["analysis_same_as_freq"] = float(np.abs(np.asarray(h["frequencies"]) - h["own_frequencies"]).max())
    if "frequencies" in h and "frequencies" in a:
        d = np.asarray(h["frequencies"]) - np.asarray(a["frequencies"])
        row["max_abs_dfreq_cm"] = float(np.abs(d).max())
        row["rms_dfreq_cm"] = float(np.sqrt(np.mean(d * d)))
        row["max_abs_dhessian"] = float(np.abs(np.asarray(h["hessian"]) - np.asarray(a["hessian"])).max())
        row["energy_diff"] = h["energy"] - a["energy"]
        row["ratio"] = h["wall_s"] / a["wall_s"]
        row["lowest_cm"] = [float(np.asarray(h["frequencies"])[0]), float(np.asarray(a["frequencies"])[0])]
        row["highest_cm"] = [float(np.asarray(h["frequencies"])[-1]), float(np.asarray(a["frequencies"])[-1])]
    return row


def table(rows, meta):
    """The Markdown record."""
    label = anchor_label(meta.get("anchor"))
    lines = [
        f"# Harmonic frequencies: hartree freq vs {label}'s analytic Hessian ({meta['device']})",
        "",
        f"{meta['date']}; {meta['versions']}. RHF, conv_tol {FREQUENCY_SCF_DEFAULTS['conv_tol']:g} Eh and orbital "
        f"gradient {FREQUENCY_SCF_DEFAULTS['conv_tol_grad']:g} in both codes, screening 1e-13, same basis data. "
        "hartree: hartree.vibrations.frequencies (the path of hartree freq), Hessian by central differences of "
        f"6N analytic gradients (step 0.005 bohr), serial on one device; {label}: mf.Hessian().kernel() "
        "(analytic, CPHF). Wall times in seconds, each code in its own process after a water warm-up; hartree's "
        "total includes its reference SCF and gradient ('displaced gradients': the total less those two), the "
        "anchor's total is SCF + Hessian. Both Hessians "
        "analysed by hartree's harmonic_analysis (translations and rotations projected out); Δν paired in "
        "ascending order over the 3N-6 modes.",
        "",
        f"| molecule | basis | atoms | nao | hartree total (s) | of which SCF | displaced gradients | {label} "
        f"total (s) | of which SCF | Hessian | ratio | max abs Δν (cm⁻¹) | RMS Δν | max abs ΔH (Eh/bohr²) | "
        "E diff (Eh) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, a = r.get("hartree") or {}, r.get("anchor") or {}
        lines.append(
            f"| {r['molecule']} | {r['basis']} | {r['natm']} | {r['nao']} | {_fmt(h.get('wall_s'), '.1f')} | "
            f"{_fmt(h.get('scf_s'), '.1f')} | {_fmt(h.get('displacements_s'), '.1f')} | "
            f"{_fmt(a.get('wall_s'), '.1f')} | "
            f"{_fmt(a.get('scf_s'), '.1f')} | {_fmt(a.get('hessian_s'), '.1f')} | {_fmt(r.get('ratio'), '.2f')} | "
            f"{_fmt(r.get('max_abs_dfreq_cm'), '.2f')} | {_fmt(r.get('rms_dfreq_cm'), '.2f')} | "
            f"{_fmt(r.get('max_abs_dhessian'), '.1e')} | {_fmt(r.get('energy_diff'), '.1e')} |"
        )
    lines.append("")
    for r in rows:
        h, a = r.get("hartree") or {}, r.get("anchor") or {}
        if "lowest_cm" in r:
            lines.append(
                f"- {r['molecule']}/{r['basis']}: lowest mode {r['lowest_cm'][0]:.1f} / {r['lowest_cm'][1]:.1f} cm⁻¹, "
                f"highest {r['highest_cm'][0]:.1f} / {r['highest_cm'][1]:.1f} cm⁻¹ (hartree / {label}; negative: "
                f"imaginary); {label}'s CPHF tolerance conv_tol_cpscf {a.get('conv_tol_cpscf')}."
            )
        for side in ("hartree", "anchor"):
            if "error" in (r.get(side) or {}):
                lines.append(f"- failed: {r['molecule']}/{r['basis']}, {side}: {r[side]['error']}")
        for note in h.get("notes", []):
            lines.append(f"- hartree's note on {r['molecule']}/{r['basis']}: {note}")
    return "\n".join(lines) + "\n"


def _versions(rows):
    found = {}
    for r in rows:
        for side in ("hartree", "anchor"):
            found |= (r.get(side) or {}).get("versions") or {}
    keep = ("hartree", "gpu4pyscf", "pyscf", "cupy", "numba")
    return ", ".join(f"{k} {found[k]}" for k in keep if k in found)


# ----------------------------------------------------------------------- main
def _after_case(row):
    """The line printed when both sides of a case are done."""
    if "max_abs_dfreq_cm" in row:
        print(f"  max |Δν| {row['max_abs_dfreq_cm']:.2f} cm-1, max |ΔH| {row['max_abs_dhessian']:.1e}, "
              f"ratio {row['ratio']:.2f}", flush=True)  # fmt: skip


def run(args):
    meta = {"benchmark": BENCHMARK, "date": now(), "commit": git_commit(), "device": args.device,
            "anchor": args.anchor, "sides": args.sides, "command": " ".join(sys.argv), "versions": ""}  # fmt: skip
    calls = {
        "hartree": (hartree_frequencies, (args.device, args.conv_tol_cpscf)),
        "anchor": (anchor_frequencies, (args.anchor, args.conv_tol_cpscf)),
    }
    run_cases(args, BENCHMARK, meta, calls, (compare, table, _versions),
              describe=lambda res: f"{res['wall_s']:.1f} s", after_case=_after_case)  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap, CASES, BENCHMARK)
    ap.add_argument("--conv-tol-cpscf", type=float, default=None, help="the anchor's CPHF tolerance (default: its own)")
    args = ap.parse_args()
    if args.report:
        return report_records(args, BENCHMARK, _key, (compare, table, _versions))
    check_run_arguments(ap, args)
    run(args)


if __name__ == "__main__":
    main()
