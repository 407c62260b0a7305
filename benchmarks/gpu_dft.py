"""Kohn-Sham DFT on the GPU side by side: hartree's RKS SCF and gradient against GPU4PySCF's
direct-SCF RKS (gpu4pyscf.dft.rks.RKS), same molecule, basis data, functional and grid.

Run (GPU machine; GPU4PySCF with its real GPU libxc, i.e. without ``g4stub``, and the
gpu4pyscf-libxc-cuda13x library for both codes: shared/tools/README.md):
    python benchmarks/gpu_dft.py [--cases 020_Vitamin_C:def2-tzvp,...] [--xc b3lyp] [--grid 3]
                                 [--sides hartree,anchor] [--out STEM]
    python benchmarks/gpu_dft.py --density-fitting [--cases ...] [--out STEM]
    python benchmarks/gpu_dft.py --report PART.json [PART.json ...] [--out STEM]
Test without a GPU (PySCF's CPU RKS as the anchor, named so in the record):
    python benchmarks/gpu_dft.py --device cpu --anchor pyscf --cases water:sto-3g --out /tmp/x

Default cases: B3LYP/def2-TZVP on 020_Vitamin_C, 057_Tamoxifen and 113_Taxol (the shared
geometries of benchmarks/molecules.py).  Both codes: RKS, the functional's libxc definition
(hartree.dft.parse_functional's xc_code given to GPU4PySCF), the basis data of hartree
(tests.helpers.to_pyscf), two-electron screening 1e-13 (direct SCF, no density fitting),
conv_tol 1e-9 Eh and orbital gradient 1e-7 (GRADIENT_SCF_DEFAULTS), at most 100 cycles.

Density fitting (issue 19's benchmark: ``--density-fitting``, record results/gpu_dft_df_<gpu>):
both codes fit J and K with the same auxiliary basis data, hartree's default J/K fitting basis
of the orbital basis (def2-universal-JKFIT for def2-TZVP; hartree.df.auxiliary.load_jk_aux),
given to the anchor as ``density_fit(auxbasis=...)``; hartree's ``density_fitting=True``.  The
gradients include the auxiliary-basis terms in both (PySCF's ``auxbasis_response``).  The J/K
timed on the converged density is then each code's fitted J/K.

Grid: hartree's level N (``grid_level``) against GPU4PySCF's ``grids.level`` N with its
default radial rule, partition and pruning (Treutler-Ahlrichs, Becke with Treutler's size
adjustment, NWChem pruning): hartree's grids are PySCF's of the same level point for point
(docs/dft.md), and GPU4PySCF builds PySCF's grid (padded with zero weights to a multiple of
its alignment).  The record gives both point counts and the energy difference, which stays
at the SCF's convergence level when the grids are the same.

Measured per case and code, each code in its own process (benchmarks/side_by_side.py) after a
water warm-up in the basis (kernels compiled): the SCF's wall time (grid, guess, cycles) and
cycles, the analytic gradient's wall time (no grid response in either code; --no-gradient
skips it in both, and in their warm-ups) and their sum;
then, on the converged density, one warm XC evaluation (E_xc, V_xc: hartree's KohnSham with
its AO cache built, GPU4PySCF's ``_numint.nr_rks``) and one J/K build (hartree's engine.jk,
GPU4PySCF's ``get_jk``), best of --repeat, whose ratio is the XC share of a cycle against
J/K (hartree's KohnSham builds its grid again: --no-parts skips this on hartree's side, for
molecules whose grid takes long on the host); hartree's own stage times of the SCF (stages
'xc' and 'jk', per cycle) beside them.
Also the energies, their difference, the largest gradient difference and hartree's note
saying where its XC integration ran (device, libxc build, cached blocks).

The record, results/gpu_dft_<gpu>.json and .md (or --out STEM), is rewritten atomically after
each case and side; --sides lets one code run per device call and --report merges the parts.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.side_by_side import (  # noqa: E402
    ANCHORS,
    SCREENING,
    add_run_arguments,
    anchor_device,
    anchor_label,
    case_molecule,
    check_run_arguments,
    cpu_name,
    git_commit,
    gpu_count,
    gpu_name,
    hartree_info,
    now,
    report_records,
    run_cases,
    synchronize,
)
from hartree.gradients import GRADIENT_SCF_DEFAULTS  # noqa: E402

BENCHMARK = "gpu_dft"
CASES = "020_Vitamin_C:def2-tzvp,057_Tamoxifen:def2-tzvp,113_Taxol:def2-tzvp"
XC = "b3lyp"
GRID = 3


def _timed(fn, device):
    """(seconds, result) of fn() with the device's queue drained at both ends."""
    synchronize(device)
    t0 = time.perf_counter()
    out = fn()
    synchronize(device)
    return time.perf_counter() - t0, out


def _best(fn, device, repeat):
    """Best seconds of ``repeat`` calls after one warm call."""
    fn()
    return min(_timed(fn, device)[0] for _ in range(max(1, repeat)))


# ----------------------------------------------------------------------- hartree (child process)
def warm_up_hartree_dft(basis_name, xc, level, device, fitted=False, with_gradient=True, done=set()):  # noqa: B006
    """Water RKS (density-fitted when ``fitted``) and, ``with_gradient``, its gradient in
    ``basis_name`` (once per setting and process): J/K, gradient and XC kernels compiled before
    the timed jobs; returns its seconds (0.0 when done before)."""
    if (basis_name, xc, device, fitted, with_gradient) in done:
        return 0.0
    import hartree
    from hartree.gradients import scf_gradient
    from hartree.gradients.scf_gradient import gradient_engine

    t0 = time.perf_counter()
    res = hartree.scf.run(
        case_molecule("water"), basis_name, "rks", xc=xc, grid_level=1, device=device,
        density_fitting=True if fitted else None,
    )  # fmt: skip
    if with_gradient:
        scf_gradient(res, gradient_engine(res))
    synchronize(device)
    done.add((basis_name, xc, device, fitted, with_gradient))
    return time.perf_counter() - t0


def hartree_dft(name, basis_name, xc, level, device, repeat, with_gradient=True, parts=True, fitted=False):
    """hartree's RKS SCF and gradient of the case on ``device`` (density-fitted J and K when
    ``fitted``), then one XC evaluation and one J/K build on the converged density."""
    import hartree
    from hartree.basis import load_basis
    from hartree.gradients import scf_gradient
    from hartree.gradients.scf_gradient import gradient_engine
    from hartree.scf.driver import make_engine
    from hartree.scf.ks import KohnSham

    warm_up_s = warm_up_hartree_dft(basis_name, xc, level, device, fitted, with_gradient)
    info = hartree_info(device) | {"warm_up_s": warm_up_s}
    mol = case_molecule(name)
    basis = load_basis(mol, basis_name)
    t_scf, res = _timed(
        lambda: hartree.scf.run(
            mol, basis, "rks", xc=xc, grid_level=level, device=device, screening_threshold=SCREENING,
            max_cycle=100, allow_unconverged=True, density_fitting=True if fitted else None,
            **GRADIENT_SCF_DEFAULTS,
        ),
        device,
    )  # fmt: skip
    t_grad, grad = _timed(lambda: scf_gradient(res, gradient_engine(res)), device) if with_gradient else (None, None)
    t_cache = t_xc = t_jk = None
    if parts:  # a KohnSham of its own: the grid is built again
        engine = gradient_engine(res) or make_engine(mol, basis, SCREENING, "cpu", None)
        if fitted:
            from hartree.df.engine import as_fitted_engine

            engine = as_fitted_engine(res, engine)
        xp = engine.array_module()
        dm = xp.asarray(res.density)  # (1, nao, nao): the total density
        ks = KohnSham(mol, basis, xc, level)
        t_cache, _ = _timed(lambda: ks(dm), device)  # builds the AO cache (the SCF's first cycle)
        t_xc = _best(lambda: ks(dm), device, repeat)
        with_k = ks.hf_exchange != 0.0
        t_jk = _best(lambda: engine.jk(dm, True, with_k), device, repeat)
    timings = dict(res.timings)
    cycles = int(res.iterations)
    builds = int(timings.get("full_builds", 0) + timings.get("incremental_builds", 0))  # J/K builds, guess's too
    return info | {
        "converged": bool(res.converged),
        "energy": float(res.energy),
        "cycles": cycles,
        "scf_s": t_scf,
        "gradient_s": t_grad,
        "total_s": None if t_grad is None else t_scf + t_grad,
        "gradient": None if grad is None else np.asarray(grad.gradient),
        "grid_points": int(res.dft["grid_points"]),
        "xc_integration": res.dft.get("xc_integration"),
        "stages_s": {k: float(v) for k, v in timings.items() if not k.endswith("_builds")},
        "jk_builds": builds,
        "stage_xc_per_cycle_s": float(timings.get("xc", 0.0)) / max(cycles + 1, 1),
        "stage_jk_per_build_s": float(timings.get("jk", 0.0)) / max(builds, 1),
        "xc_first_s": t_cache,
        "xc_s": t_xc,
        "jk_s": t_jk,
        "xc_share": None if t_xc is None else t_xc / (t_xc + t_jk),
        "notes": list(res.notes),
        "density_fitting": res.density_fitting,
        # per cycle: energy (Eh), its change, the orbital-gradient norm and how the Fock
        # matrix was made, so that a slow convergence can be read from the record
        "history": [
            [r.cycle, float(r.energy), _finite(r.delta_energy), float(r.gradient_norm), r.step] for r in res.history
        ],
    }


def _finite(x):
    """float(x), or None for NaN (the guess cycle's energy change; JSON has no NaN)."""
    x = float(x)
    return x if np.isfinite(x) else None


# ----------------------------------------------------------------------- anchor (child process)
def anchor_dft_module(anchor):
    """The dft module of the anchor: GPU4PySCF's (its real GPU libxc: no g4stub) or PySCF's."""
    if anchor == "gpu4pyscf":
        from gpu4pyscf import dft

        return dft
    if anchor == "pyscf":
        from pyscf import dft

        return dft
    raise ValueError(f"unknown anchor {anchor!r}; choose one of {', '.join(ANCHORS)}")


def anchor_rks(mol, basis, xc, level, anchor, fitted=False):
    """The anchor's RKS object (not run) on hartree's basis data, its grid of ``level``;
    density-fitted with hartree's default J/K fitting basis data when ``fitted``."""
    from hartree.dft import parse_functional
    from tests.helpers import to_pyscf

    functional = parse_functional(xc)
    mf = anchor_dft_module(anchor).RKS(to_pyscf(mol, basis))
    mf.xc = functional.xc_code
    mf.grids.level = level
    if functional.vv10 is not None:  # hartree's VV10 grid (PySCF's own default is the main grid's level)
        from hartree.dft.vv10 import NLC_GRID_LEVEL

        mf.nlcgrids.level = NLC_GRID_LEVEL
    mf.conv_tol, mf.conv_tol_grad = GRADIENT_SCF_DEFAULTS["conv_tol"], GRADIENT_SCF_DEFAULTS["conv_tol_grad"]
    mf.direct_scf_tol = SCREENING
    mf.max_cycle = 100
    mf.verbose = 0
    if fitted:
        from hartree.df.auxiliary import load_jk_aux
        from tests.helpers import pyscf_basis_dict

        mf = mf.density_fit(auxbasis=pyscf_basis_dict(mol, load_jk_aux(mol, basis)))
    return mf


def anchor_info_dft(anchor):
    """{'anchor', 'device', 'versions'} of this process's anchor side."""
    import platform

    import pyscf

    versions = {"pyscf": pyscf.__version__, "numpy": np.__version__, "python": platform.python_version()}
    anchor_dft_module(anchor)
    if anchor == "gpu4pyscf":
        import cupy
        import gpu4pyscf
        from gpu4pyscf.dft import libxc as gpu_libxc

        versions |= {"gpu4pyscf": gpu4pyscf.__version__, "cupy": cupy.__version__, "libxc": gpu_libxc.__version__}
        return {"anchor": anchor, "device": gpu_name(), "gpus_visible": gpu_count(), "versions": versions}
    from pyscf import lib
    from pyscf.dft import libxc

    versions["libxc"] = str(libxc.__version__)
    return {"anchor": anchor, "device": cpu_name(), "threads": lib.num_threads(), "versions": versions}


def warm_up_anchor_dft(basis_name, xc, anchor, fitted=False, with_gradient=True, done=set()):  # noqa: B006
    if (basis_name, xc, anchor, fitted, with_gradient) in done:
        return 0.0
    from hartree.basis import load_basis

    t0 = time.perf_counter()
    water = case_molecule("water")
    mf = anchor_rks(water, load_basis(water, basis_name), xc, 1, anchor, fitted)
    mf.kernel()
    if with_gradient:
        mf.nuc_grad_method().kernel()
    synchronize(anchor_device(anchor))
    done.add((basis_name, xc, anchor, fitted, with_gradient))
    return time.perf_counter() - t0


def anchor_dft(name, basis_name, xc, level, anchor, repeat, with_gradient=True, fitted=False):
    """The anchor's RKS SCF and gradient of the case, then one XC evaluation (nr_rks) and one
    J/K build (get_jk) on the converged density."""
    from hartree.basis import load_basis
    from hartree.dft import parse_functional

    device = anchor_device(anchor)
    info = anchor_info_dft(anchor) | {"warm_up_s": warm_up_anchor_dft(basis_name, xc, anchor, fitted, with_gradient)}
    mol = case_molecule(name)
    mf = anchor_rks(mol, load_basis(mol, basis_name), xc, level, anchor, fitted)
    history = []  # per cycle: energy, its change, the orbital-gradient norm (PySCF's callback)

    def record(env):
        e, last = env.get("e_tot"), env.get("last_hf_e")
        norm = env.get("norm_gorb")
        history.append([int(env.get("cycle", -1)), float(e), float(e - last), None if norm is None else float(norm)])

    mf.callback = record
    t_scf, energy = _timed(mf.kernel, device)
    t_grad, grad = _timed(lambda: mf.nuc_grad_method().kernel(), device) if with_gradient else (None, None)
    dm = mf.make_rdm1()
    with_k = parse_functional(xc).hf_exchange != 0.0
    t_xc = _best(lambda: mf._numint.nr_rks(mf.mol, mf.grids, mf.xc, dm), device, repeat)
    t_jk = _best(lambda: mf.get_jk(mf.mol, dm, hermi=1, with_k=with_k), device, repeat)
    weights = mf.grids.weights
    return info | {
        "converged": bool(mf.converged),
        "energy": float(energy),
        "cycles": int(getattr(mf, "cycles", -1)),
        "scf_s": t_scf,
        "gradient_s": t_grad,
        "total_s": None if t_grad is None else t_scf + t_grad,
        "gradient": None if grad is None else np.asarray(grad.get() if hasattr(grad, "get") else grad),
        "grid_points": int((weights != 0).sum()),
        "grid_points_padded": int(weights.size),
        "xc_s": t_xc,
        "jk_s": t_jk,
        "xc_share": t_xc / (t_xc + t_jk),
        "history": history,
    }


# ----------------------------------------------------------------------- record
def _key(row):
    return (row["molecule"], row["basis"], row.get("xc"), row.get("grid_level"))


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def compare(row):
    """Fill the row's comparison entries from its two sides (where both finished)."""
    h, a = row.get("hartree") or {}, row.get("anchor") or {}
    if "energy" not in h or "energy" not in a:
        return row
    row["energy_diff"] = h["energy"] - a["energy"]
    if h.get("gradient") is not None and a.get("gradient") is not None:
        row["gradient_max_diff"] = float(np.abs(np.asarray(h["gradient"]) - np.asarray(a["gradient"])).max())
        row["ratio_total"] = h["total_s"] / a["total_s"]
    row["ratio_scf"] = h["scf_s"] / a["scf_s"]
    if h.get("xc_s") is not None and a.get("xc_s") is not None:
        row["ratio_xc"] = h["xc_s"] / a["xc_s"]
    return row


def table(rows, meta):
    """The Markdown record."""
    label = anchor_label(meta.get("anchor"))
    what = "Kohn-Sham DFT, density-fitted" if meta.get("density_fitting") else "Kohn-Sham DFT"
    lines = [
        f"# {what}: hartree vs {label} ({meta['device']})",
        "",
        f"{meta['date']}; {meta['versions']}. RKS with the functional of each row, "
        + (
            "J and K density-fitted in both codes with the same auxiliary basis data (hartree's default J/K "
            "fitting basis; gradients with the auxiliary-basis terms), "
            if meta.get("density_fitting")
            else f"direct SCF (screening {SCREENING:g}), "
        )
        + f"conv_tol {GRADIENT_SCF_DEFAULTS['conv_tol']:g} Eh and orbital gradient "
        f"{GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g}, same basis data; grid: hartree level {meta['grid_level']} "
        f"against {label}'s grids.level {meta['grid_level']} (PySCF's defaults: the same points and weights), "
        "VV10 functionals' non-local part on level 1 in both codes (hartree's default; GPU4PySCF's nlcgrids.level "
        "set to it). "
        "Each code in its own process after a water warm-up. SCF: from the start (grid, guess, cycles); "
        "gradient: analytic, no grid response. XC and J/K: one warm evaluation each on the converged density "
        "(best of the repeats); share = XC / (XC + J/K).",
        "",
        f"| molecule | basis | functional | nao | grid points | cycles (h / {label}) | hartree SCF (s) | "
        f"{label} SCF (s) | "
        f"ratio | hartree SCF+grad (s) | {label} SCF+grad (s) | ratio | hartree XC / J/K (s) | "
        f"{label} XC / J/K (s) | XC share (h / {label}) | E diff (Eh) | max grad diff (Eh/bohr) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, a = r.get("hartree") or {}, r.get("anchor") or {}
        lines.append(
            f"| {r['molecule']} | {r['basis']} | {(r.get('xc') or meta['xc']).upper()} | {r['nao']} | "
            f"{h.get('grid_points', '-')} / "
            f"{a.get('grid_points', '-')} | {h.get('cycles', '-')} / {a.get('cycles', '-')} | "
            f"{_fmt(h.get('scf_s'), '.1f')} | {_fmt(a.get('scf_s'), '.1f')} | {_fmt(r.get('ratio_scf'), '.2f')} | "
            f"{_fmt(h.get('total_s'), '.1f')} | {_fmt(a.get('total_s'), '.1f')} | "
            f"{_fmt(r.get('ratio_total'), '.2f')} | {_fmt(h.get('xc_s'), '.3f')} / {_fmt(h.get('jk_s'), '.3f')} | "
            f"{_fmt(a.get('xc_s'), '.3f')} / {_fmt(a.get('jk_s'), '.3f')} | {_fmt(h.get('xc_share'), '.2f')} / "
            f"{_fmt(a.get('xc_share'), '.2f')} | {_fmt(r.get('energy_diff'), '.1e')} | "
            f"{_fmt(r.get('gradient_max_diff'), '.1e')} |"
        )
    lines += ["", "hartree's stages of the SCF (s; xc per cycle, jk per build) and where its XC ran:", ""]
    for r in rows:
        h = r.get("hartree") or {}
        if "stages_s" in h:
            stages = ", ".join(f"{k} {v:.2f}" for k, v in h["stages_s"].items())
            lines.append(
                f"- {r['molecule']}/{r['basis']} {(r.get('xc') or meta['xc']).upper()}: {stages}; "
                f"xc {h['stage_xc_per_cycle_s']:.3f} per cycle, "
                f"jk {h['stage_jk_per_build_s']:.3f} per build ({h['jk_builds']} builds); first XC evaluation "
                f"(AO cache built) {_fmt(h['xc_first_s'], '.2f')}; {h.get('xc_integration')}"
            )
    lines += [f"- {note}" for note in meta.get("notes", [])]
    for r in rows:
        for side in ("hartree", "anchor"):
            if "error" in (r.get(side) or {}):
                lines.append(f"- failed: {r['molecule']}/{r['basis']}, {side}: {r[side]['error']}")
    return "\n".join(lines) + "\n"


def summary(res):
    """One line of a side's result (or its error)."""
    if "error" in res:
        return res["error"]
    return (
        f"converged {res.get('converged')}, {res.get('cycles')} cycles, SCF {_fmt(res.get('scf_s'), '.1f')} s, "
        f"gradient {_fmt(res.get('gradient_s'), '.1f')} s, XC {_fmt(res.get('xc_s'), '.3f')} s, "
        f"J/K {_fmt(res.get('jk_s'), '.3f')} s, E {_fmt(res.get('energy'), '.10f')}"
    )


def _versions(rows):
    found = {}
    for r in rows:
        for side in ("hartree", "anchor"):
            found |= (r.get(side) or {}).get("versions") or {}
    keep = ("hartree", "gpu4pyscf", "pyscf", "libxc", "cupy", "numba")
    return ", ".join(f"{k} {found[k]}" for k in keep if k in found)


# ----------------------------------------------------------------------- main
def run(args, benchmark):
    meta = {"benchmark": benchmark, "density_fitting": args.density_fitting,
            "date": now(), "commit": git_commit(), "device": args.device,
            "anchor": args.anchor, "xc": args.xc, "grid_level": args.grid, "repeat": args.repeat,
            "sides": args.sides, "command": " ".join(sys.argv), "versions": ""}  # fmt: skip
    common = (args.xc, args.grid)
    calls = {
        "hartree": (
            hartree_dft,
            (*common, args.device, args.repeat, not args.no_gradient, not args.no_parts, args.density_fitting),
        ),
        "anchor": (anchor_dft, (*common, args.anchor, args.repeat, not args.no_gradient, args.density_fitting)),
    }
    run_cases(args, benchmark, meta, calls, (compare, table, _versions),
              row_fields={"xc": args.xc, "grid_level": args.grid}, describe=summary)  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap, CASES, BENCHMARK)
    ap.add_argument("--xc", default=XC, help=f"functional of both codes (default {XC})")
    ap.add_argument("--grid", type=int, default=GRID, help=f"grid level of both codes (default {GRID})")
    ap.add_argument("--repeat", type=int, default=3, help="warm XC and J/K evaluations timed (best kept)")
    ap.add_argument("--no-gradient", action="store_true", help="SCF only (no gradient in either code)")
    ap.add_argument(
        "--density-fitting", action="store_true", help="J and K density-fitted in both codes (record gpu_dft_df_<gpu>)"
    )
    ap.add_argument("--no-parts", action="store_true", help="no separate XC and J/K timing on hartree's side")
    args = ap.parse_args()
    benchmark = BENCHMARK + ("_df" if args.density_fitting else "")  # the record's name
    if args.report:
        return report_records(args, benchmark, _key, (compare, table, _versions))
    check_run_arguments(ap, args)
    if not 1 <= args.grid <= 9:
        ap.error("--grid: a level 1..9")
    run(args, benchmark)


if __name__ == "__main__":
    main()
