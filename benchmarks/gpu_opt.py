"""Whole geometry optimizations side by side: hartree on the GPU (``hartree opt``'s path,
hartree.optimize.optimize) against GPU4PySCF + geomeTRIC (pyscf.geomopt.geometric_solver
on GPU4PySCF's RHF), same molecule, basis data, SCF tolerances and geomeTRIC settings.

Run (GPU machine; GPU4PySCF as for gpu_gradient.py, ``import g4stub``):
    python benchmarks/gpu_opt.py [--cases 057_Tamoxifen:6-31g**] [--sides hartree,anchor] [--out STEM]
    python benchmarks/gpu_opt.py --cases G12:6-31g,G12:6-31g** --out STEM     # (glycine)12
    python benchmarks/gpu_opt.py --report PART.json [PART.json ...] [--out STEM]
Test without a GPU (PySCF's CPU RHF as the anchor, named so in the record):
    python benchmarks/gpu_opt.py --device cpu --anchor pyscf --cases water:sto-3g --out /tmp/x

Cases are molecule:basis (benchmarks/side_by_side.py: a shared geometry, 'A<n>'/'G<n>' for
the peptide chains of benchmarks/peptides.py, or 'water').  Both codes run RHF with conv_tol
1e-9 Eh and orbital-gradient (commutator) 1e-7 (GRADIENT_SCF_DEFAULTS, hartree opt's
default) and screening 1e-13, each SCF after the first starting from the previous geometry's
orbitals (hartree) or density (the PySCF/GPU4PySCF scanner).  Both drive geomeTRIC 1.x
through its Engine API with the same settings: convergence set GAU (--convergence; energy
1e-6 Eh, RMS/max gradient 3e-4/4.5e-4 Eh/bohr, RMS/max displacement 1.2e-3/1.8e-3 Angstrom),
TRIC coordinates, at most --max-steps steps (geomeTRIC's maxiter; 100 is the default of
both hartree opt and PySCF), no Hessian, geomeTRIC's default trust radius (0.1, max 0.3).
hartree builds geomeTRIC's OptParams itself (hartree.optimize.optimizer.make_params), PySCF
passes its keywords to geomeTRIC's run_optimizer; each side reports the OptParams fields
that steer the optimization, and the record says whether they are equal.  What differs:
PySCF's interface sets geomeTRIC's Bohr-Angstrom factor to 0.52917721092 (hartree: CODATA
2018, 0.529177210903), and run_optimizer writes geomeTRIC's log and trajectory files into
a temporary folder (here silenced: a log configuration without handlers).

Each code runs in its own process, warmed up first by a water RHF and gradient in the basis.
Reported per case and code: evaluations (energy + gradient), geomeTRIC steps, converged,
final energy, wall time of the whole optimization; then the energy difference, the RMSD
between the two final geometries after alignment, and the wall-time ratio hartree / anchor.
The record, results/gpu_opt_<gpu>.json and .md (or --out STEM), is rewritten after each
case and side.  With --sides one code can run per device call; --report merges such parts.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.side_by_side import (  # noqa: E402
    add_run_arguments,
    anchor_info,
    anchor_label,
    anchor_rhf,
    case_molecule,
    check_run_arguments,
    git_commit,
    hartree_info,
    kabsch_rmsd,
    now,
    report_records,
    run_cases,
    warm_up_anchor,
    warm_up_hartree,
)
from hartree.constants import BOHR_IN_ANGSTROM  # noqa: E402
from hartree.gradients import GRADIENT_SCF_DEFAULTS  # noqa: E402

BENCHMARK = "gpu_opt"
CASES = "057_Tamoxifen:6-31g**"
#: geomeTRIC coordinate system of both sides (run_optimizer's coordsys keyword)
COORDINATES = "tric"
#: OptParams fields that steer a minimization (compared between the sides)
PARAM_FIELDS = (
    "Convergence_energy", "Convergence_grms", "Convergence_gmax", "Convergence_drms", "Convergence_dmax",
    "Converge_maxiter", "qccnv", "molcnv", "maxiter", "trust", "tmax", "tmin", "usedmax", "transition", "irc",
    "hessian", "reset", "epsilon", "enforce", "check", "subfrctor", "bothre", "meci",
)  # fmt: skip
#: a logging configuration for geomeTRIC's run_optimizer with no output (root at WARNING)
QUIET_LOG_INI = """[loggers]
keys=root
[handlers]
keys=null
[formatters]
keys=
[logger_root]
level=WARNING
handlers=null
[handler_null]
class=NullHandler
args=()
"""


def params_summary(params, coordinates):
    """The fields of a geomeTRIC OptParams that steer the optimization, and the coordinates."""
    import geometric

    out = {name: getattr(params, name, None) for name in PARAM_FIELDS}
    return out | {"coordinates": coordinates, "geometric": geometric.__version__}


def max_atom_gradient(gradient):
    """geomeTRIC's gmax: the largest atomic gradient norm |g_A| (Eh/bohr)."""
    return float(np.max(np.linalg.norm(np.asarray(gradient).reshape(-1, 3), axis=1)))


# ----------------------------------------------------------------------- the two sides (child processes)
def hartree_optimization(name, basis_name, device, convergence, max_steps):
    """hartree.optimize.optimize of the case on ``device`` (the path of ``hartree opt``)."""
    from hartree.basis import load_basis
    from hartree.optimize import optimize
    from hartree.optimize.criteria import convergence_set
    from hartree.optimize.optimizer import make_params

    info = hartree_info(device) | {"warm_up_s": warm_up_hartree(basis_name, device)}
    mol = case_molecule(name)
    basis = load_basis(mol, basis_name)
    t0 = time.perf_counter()

    def on_step(step):
        print(f"  hartree step {step.step:3d}  E {step.energy:.10f}  gmax {step.max_gradient:.1e}  "
              f"{step.scf_iterations:2d} SCF cycles  {time.perf_counter() - t0:8.1f} s", flush=True)  # fmt: skip

    result = optimize(mol, basis, "rhf", convergence=convergence, max_steps=max_steps, coordinates=COORDINATES,
                      device=device, callback=on_step, allow_unconverged=True)  # fmt: skip
    wall = time.perf_counter() - t0
    params = make_params(convergence_set(convergence), max_steps, False)
    return info | {
        "converged": bool(result.converged),
        "steps": int(result.iterations),
        "evaluations": int(result.gradient_evaluations),
        "rejected": sum(1 for s in result.steps if s.rejected),
        "scf_cycles": sum(int(s.scf_iterations) for s in result.steps),
        "energy": float(result.energy),
        "start_energy": float(result.steps[0].energy),
        "max_gradient": float(result.steps[-1].max_gradient),
        "wall_s": wall,
        "optimize_wall_s": float(result.wall_time),
        "engine": str(result.device),
        "final_coords": np.asarray(result.molecule.coords),
        "geometric_params": params_summary(params, COORDINATES),
        "notes": list(result.notes),
    }


def anchor_geometric_kwargs(convergence):
    """The keywords the anchor side hands to PySCF's geometric_solver (and so to geomeTRIC's
    run_optimizer and OptParams), besides maxsteps."""
    return {"convergence_set": convergence.upper(), "coordsys": COORDINATES}


def anchor_optimization(name, basis_name, anchor, convergence, max_steps):
    """pyscf.geomopt.geometric_solver on the anchor's RHF of the case."""
    from geometric.params import OptParams

    from hartree.basis import load_basis

    info = anchor_info(anchor) | {"warm_up_s": warm_up_anchor(basis_name, anchor)}
    from pyscf.geomopt.geometric_solver import kernel as geometric_kernel  # rewrites geomeTRIC's units here only

    mol = case_molecule(name)
    mf = anchor_rhf(mol, load_basis(mol, basis_name), anchor, **GRADIENT_SCF_DEFAULTS)
    evaluations = []
    t0 = time.perf_counter()

    def on_evaluation(env):  # PySCF's callback: the locals of PySCFEngine.calc_new
        gmax = max_atom_gradient(env["gradients"])
        cycles = getattr(env["g_scanner"].base, "cycles", None)
        evaluations.append({"energy": float(env["energy"]), "gmax": gmax, "cycles": cycles})
        print(f"  {anchor} evaluation {len(evaluations):3d}  E {float(env['energy']):.10f}  gmax {gmax:.1e}  "
              f"{time.perf_counter() - t0:8.1f} s", flush=True)  # fmt: skip

    kwargs = anchor_geometric_kwargs(convergence)
    with tempfile.TemporaryDirectory(prefix="gpu-opt-") as tmp:
        ini = Path(tmp) / "quiet_log.ini"
        ini.write_text(QUIET_LOG_INI)
        t0 = time.perf_counter()
        converged, final = geometric_kernel(mf, callback=on_evaluation, maxsteps=max_steps, logIni=str(ini), **kwargs)
        wall = time.perf_counter() - t0
    params = OptParams(maxiter=max_steps, **kwargs)
    last = evaluations[-1]  # PySCF returns the geometry of its last evaluation, geomeTRIC's final one
    cycles = [e["cycles"] for e in evaluations]
    return info | {
        "converged": bool(converged),
        "steps": len(evaluations) - 1,
        "evaluations": len(evaluations),
        "scf_cycles": sum(cycles) if all(isinstance(c, int) for c in cycles) else None,
        "energy": last["energy"],
        "start_energy": evaluations[0]["energy"],
        "max_gradient": last["gmax"],
        "wall_s": wall,
        "final_coords": np.asarray(final.atom_coords(unit="Bohr")),
        "geometric_params": params_summary(params, kwargs["coordsys"]),
    }


# ----------------------------------------------------------------------- record
def _key(row):
    return (row["molecule"], row["basis"])


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def compare(row):
    """Fill the row's comparison entries from its two sides (where both finished)."""
    h, a = row.get("hartree") or {}, row.get("anchor") or {}
    if "energy" not in h or "energy" not in a:
        return row
    row["energy_diff"] = h["energy"] - a["energy"]
    row["rmsd_angstrom"] = kabsch_rmsd(h["final_coords"], a["final_coords"]) * BOHR_IN_ANGSTROM
    row["ratio"] = h["wall_s"] / a["wall_s"]
    hp, ap = h.get("geometric_params") or {}, a.get("geometric_params") or {}
    differ = sorted(k for k in set(hp) | set(ap) if k != "geometric" and hp.get(k) != ap.get(k))
    row["geometric_params_equal"] = not differ
    row["geometric_params_differ"] = {k: [hp.get(k), ap.get(k)] for k in differ}
    return row


def table(rows, meta):
    """The Markdown record."""
    label = anchor_label(meta.get("anchor"))
    lines = [
        f"# Whole geometry optimization: hartree vs {label} + geomeTRIC ({meta['device']})",
        "",
        f"{meta['date']}; {meta['versions']}. RHF, conv_tol {GRADIENT_SCF_DEFAULTS['conv_tol']:g} Eh and orbital "
        f"gradient {GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g} in both codes, screening 1e-13, same basis data. "
        f"geomeTRIC in both: convergence set {meta['convergence'].upper()}, TRIC coordinates, at most "
        f"{meta['max_steps']} steps, no Hessian, default trust radius; hartree through hartree.optimize (the path "
        f"of hartree opt), {label} through pyscf.geomopt.geometric_solver. Each code in its own process after a "
        "water warm-up. Wall: the whole optimization; evaluations: energy + gradient evaluations (steps + 1). "
        "RMSD: the two final geometries after alignment.",
        "",
        f"| molecule | basis | atoms | nao | converged (hartree / {label}) | evaluations | hartree wall (s) | "
        f"{label} wall (s) | ratio | hartree E (Eh) | {label} E (Eh) | E diff (Eh) | RMSD (Å) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, a = r.get("hartree") or {}, r.get("anchor") or {}

        def yes(side):
            return "-" if "converged" not in side else ("yes" if side["converged"] else "NO")

        lines.append(
            f"| {r['molecule']} | {r['basis']} | {r['natm']} | {r['nao']} | {yes(h)} / {yes(a)} | "
            f"{h.get('evaluations', '-')} / {a.get('evaluations', '-')} | {_fmt(h.get('wall_s'), '.1f')} | "
            f"{_fmt(a.get('wall_s'), '.1f')} | {_fmt(r.get('ratio'), '.2f')} | {_fmt(h.get('energy'), '.8f')} | "
            f"{_fmt(a.get('energy'), '.8f')} | {_fmt(r.get('energy_diff'), '.1e')} | "
            f"{_fmt(r.get('rmsd_angstrom'), '.1e')} |"
        )
    lines += ["", "geomeTRIC settings of the two sides (OptParams fields that steer a minimization):", ""]
    for r in rows:
        if "geometric_params_equal" in r:
            same = "equal" if r["geometric_params_equal"] else f"DIFFERENT: {r['geometric_params_differ']}"
            lines.append(f"- {r['molecule']}/{r['basis']}: {same}")
    params = next((s["geometric_params"] for r in rows for s in (r.get("hartree"), r.get("anchor"))
                   if s and "geometric_params" in s), None)  # fmt: skip
    if params:
        lines.append("- " + ", ".join(f"{k} {v}" for k, v in params.items()))
    for r in rows:
        for side in ("hartree", "anchor"):
            if "error" in (r.get(side) or {}):
                lines.append(f"- failed: {r['molecule']}/{r['basis']}, {side}: {r[side]['error']}")
    return "\n".join(lines) + "\n"


def _versions(rows):
    found = {}
    for r in rows:
        for side in ("hartree", "anchor"):
            found |= (r.get(side) or {}).get("versions") or {}
    keep = ("hartree", "gpu4pyscf", "pyscf", "cupy", "numba")
    return ", ".join(f"{k} {found[k]}" for k in keep if k in found)


# ----------------------------------------------------------------------- main
def _describe(res):
    """The line printed after one side's optimization."""
    return (f"converged {res.get('converged')}, {res.get('evaluations')} evaluations, "
            f"{_fmt(res.get('wall_s'), '.1f')} s, E {_fmt(res.get('energy'), '.10f')}")  # fmt: skip


def run(args):
    meta = {"benchmark": BENCHMARK, "date": now(), "commit": git_commit(), "device": args.device,
            "anchor": args.anchor, "convergence": args.convergence, "max_steps": args.max_steps,
            "sides": args.sides, "command": " ".join(sys.argv), "versions": ""}  # fmt: skip
    calls = {
        "hartree": (hartree_optimization, (args.device, args.convergence, args.max_steps)),
        "anchor": (anchor_optimization, (args.anchor, args.convergence, args.max_steps)),
    }
    run_cases(args, BENCHMARK, meta, calls, (compare, table, _versions), describe=_describe)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap, CASES, BENCHMARK)
    ap.add_argument("--convergence", default="gau", help="geomeTRIC convergence set of both codes")
    ap.add_argument("--max-steps", type=int, default=100)
    args = ap.parse_args()
    if args.report:
        return report_records(args, BENCHMARK, _key, (compare, table, _versions))
    check_run_arguments(ap, args)
    run(args)


if __name__ == "__main__":
    main()
