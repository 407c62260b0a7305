"""Basis-set report for issue 5: Table 2.1 of the thesis against the Dirac-Fock limit.

Stages (each caches one JSON per element and stage under --cache, so runs can be split,
repeated and resumed; ``report`` only reads the cache):

  limits EL...     Dirac-Fock limit estimates (point and Gaussian nucleus) and the HF check
  thesis EL...     energies of the thesis' Table 2.1 sets (HF, DF point, DF Gaussian)
  optimize EL...   our NEWUOA optimization (one WTBS group per l, thesis' window sizes),
                   Gaussian nucleus, then the point nucleus from the Gaussian optimum
  scftime EL...    one SCF with the thesis' set (the cost of one evaluation)
  larger EL --nbs  optimization with more functions than the thesis' set
  kappa EL         one WTBS group per κ symmetry (p1/2 and p3/2 apart), thesis' counts
  free EL          free exponents per symmetry from the per-κ optimum, block-wise NEWUOA
                   over ln ζ (atom_basis_free.py), thesis' counts; then the point nucleus
  export/replay    the recorded evaluations rerun on another device (GPU timing)
  report           benchmarks/results/atom_basis.md + .json (+ the PNG of one history);
                   written by atom_basis_report.py (constants, cache and shared helpers:
                   atom_basis_common.py; run records: atom_basis_records.py)

Dirac-Fock limit (no numerical DF code here): even-tempered sets a·r^k per l with r = 1.8
(1.6 for the last step), spanning [ζ_min/4, ζ_max·F] of the thesis' exponents of that l,
for F = 1, 10, 100 (and 1000 for the point nucleus, whose s1/2 and p1/2 spinors have a
weak singularity at r = 0 that Gaussians resolve slowly).  The limit is the energy
at r = 1.6 plus the step of an Aitken (geometric) extrapolation in F of the last three r = 1.8
energies, plus (Dirac-Fock, where the numerical HF limit is known) the nonrelativistic
incompleteness of the same set, E_HF(numerical) − E_HF(set); the uncertainty is the sum of
the magnitudes of the two corrections (without a numerical HF limit: of the F step and the
r = 1.6 − 1.8 difference).  The nonrelativistic mode compared with the numerical
Hartree-Fock limits checks the recipe.  Relative error = |E - E_limit| / |E_limit|; criterion 5e-9
(thesis §2.1.1).

    python benchmarks/atom_basis.py limits He Ne Ar Kr Xe
    python benchmarks/atom_basis.py thesis He Ne Ar Kr Xe
    python benchmarks/atom_basis.py optimize He Ne Ar Kr Xe --maxfun 600
    python benchmarks/atom_basis.py report
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from atom_basis_common import (  # noqa: E402
    CLOSED_SHELL,
    HF_LIMITS,
    MODES,
    aitken,
    default_cache,
    limit_sets,
    load,
    occupations,
    save,
)
from atom_basis_free import stage_free  # noqa: E402
from atom_basis_records import append_run, device_label, merge_prior, partial_record  # noqa: E402
from atom_basis_replay import export_histories, replay  # noqa: E402
from atom_basis_report import write_report  # noqa: E402

from hartree.atom import AtomSCFOptions, kernel, make_nucleus  # noqa: E402
from hartree.atom.config import SYMBOLS, atomic_number  # noqa: E402
from hartree.atom.optimize import NewuoaOptions, optimize_wtbs  # noqa: E402
from hartree.atom.wtbs import THESIS_TABLE_2_1, Window, WTBSParameters, group_windows, thesis_basis, wtbs_exponents  # noqa: E402
from hartree.errors import ConvergenceError  # noqa: E402


def scf_energy(z, exponents, mode, options=None):
    """(energy, iterations, seconds, note) of the ground configuration; a run that stops on the
    density thresholds with |ΔE| < 1e-12·|E| over its last 3 iterations is accepted (noted)."""
    rel, nucleus = MODES[mode]
    opts = options or AtomSCFOptions(relativistic=rel, max_iterations=60)
    closed, opened = occupations(z, rel)
    t0 = time.perf_counter()
    try:
        res = kernel(z, exponents, make_nucleus(z, nucleus), opts, block_shells=closed, open_shells=opened)
        return res.energy, res.iterations, time.perf_counter() - t0, ""
    except ConvergenceError as exc:
        res = exc.result
        last = [abs(h["delta_e"]) for h in res.history[-3:]]
        if res is not None and max(last) < 1e-12 * abs(res.energy):
            return res.energy, res.iterations, time.perf_counter() - t0, "energy converged, density noise"
        raise


def stage_limits(element, cache, log, factors_override=None, options=None, check_ratios=()):
    """factors_override: F values for every mode (default: 1, 10, 100 and 1000 for the point
    nucleus); options: AtomSCFOptions of the SCFs (e.g. device='gpu'); check_ratios: extra
    even-tempered ratios (e.g. 1.4) at the largest F, stored as a check of the r = 1.6 set's
    spacing error (not used in the limit)."""
    doc = load(cache, "limits", element) or {}
    z = atomic_number(element)
    for mode in MODES:
        factors = (1.0, 10.0, 100.0, 1000.0) if mode == "dhf_point" else (1.0, 10.0, 100.0)
        if factors_override:
            factors = tuple(sorted(set(factors) | set(factors_override)))
        runs = doc.setdefault(mode, {}).setdefault("runs", [])
        done = {(r["factor"], r["ratio"]) for r in runs}
        todo = [(f, 1.8) for f in factors] + [(factors[-1], 1.6)] + [(factors[-1], r) for r in check_ratios]
        for factor, ratio in todo:
            if (factor, ratio) in done:
                continue
            exps = limit_sets(element, factor, ratio)
            rel, _ = MODES[mode]
            opts = AtomSCFOptions(relativistic=rel, max_iterations=60, device=options.device if options else "auto")
            energy, its, secs, note = scf_energy(z, exps, mode, opts)
            runs.append(
                {
                    "factor": factor,
                    "ratio": ratio,
                    "sizes": [len(e) for e in exps],
                    "energy": energy,
                    "iterations": its,
                    "seconds": round(secs, 1),
                    "note": note,
                }
            )
            log(f"{element} {mode} F={factor:g} r={ratio} {[len(e) for e in exps]} E={energy:.10f} {secs:.0f}s")
            save(cache, "limits", element, doc)
        seq = [r["energy"] for r in sorted((r for r in runs if r["ratio"] == 1.8), key=lambda r: r["factor"])]
        fine = [r["energy"] for r in runs if r["ratio"] == 1.6 and r["factor"] == factors[-1]][0]
        step_f = aitken(*seq[-3:]) - seq[-1]  # F -> infinity, from the r = 1.8 sequence
        doc[mode].update({"fine": fine, "last": seq[-1], "step_f": step_f})
    # nonrelativistic incompleteness of the r = 1.6 set, from the numerical HF limit when known
    hf = doc["hf"]
    step_hf = HF_LIMITS[element] - (hf["fine"] + hf["step_f"]) if element in HF_LIMITS else None
    if element in HF_LIMITS:
        hf["numerical_hf"] = HF_LIMITS[element]
        hf["error_vs_numerical"] = hf["fine"] + hf["step_f"] - HF_LIMITS[element]
    for mode in MODES:
        d = doc[mode]
        if step_hf is not None:
            d["step_hf"] = step_hf
            d["limit"] = d["fine"] + d["step_f"] + (step_hf if mode != "hf" else 0.0)
            d["uncertainty"] = abs(d["step_f"]) + abs(step_hf)
        else:  # no numerical reference: the r = 1.6 - 1.8 difference bounds the ratio error
            d["limit"] = d["fine"] + d["step_f"]
            d["uncertainty"] = abs(d["step_f"]) + abs(d["fine"] - d["last"])
        save(cache, "limits", element, doc)
    return doc


def stage_thesis(element, cache, log):
    doc = load(cache, "thesis", element) or {}
    z = atomic_number(element)
    params, windows = thesis_basis(element)
    exps = wtbs_exponents([params], windows)
    for mode in MODES:
        if mode in doc:
            continue
        energy, its, secs, note = scf_energy(z, exps, mode)
        doc[mode] = {"energy": energy, "iterations": its, "seconds": round(secs, 2), "note": note}
        log(f"{element} thesis {mode} E={energy:.10f} {secs:.1f}s")
        save(cache, "thesis", element, doc)
    doc["parameters"] = [params.alpha, params.beta, params.delta, params.gamma]
    doc["windows"] = THESIS_TABLE_2_1[element][2]
    save(cache, "thesis", element, doc)
    return doc


def optimize_element(
    element, nucleus, start_groups, windows, maxfun, rhobeg=0.05, log=None, rhoend=1e-5, checkpoint=None, active=None
):
    """NEWUOA over the WTBS groups (Dirac-Fock); returns the OptimizationResult.

    checkpoint(history) is called every 25 evaluations (to save partial progress)."""
    z = atomic_number(element)
    closed, opened = occupations(z, True)
    best = [math.inf]
    history = []

    def progress(entry):
        n, e = entry["evaluation"], entry["energy"]
        history.append(entry)
        if e is not None:
            best[0] = min(best[0], e)
        if log and n % 50 == 0:
            log(f"{element} {nucleus}: {n} evaluations, lowest {best[0]:.10f}")
        if checkpoint and n % 25 == 0:
            checkpoint(history)

    return optimize_wtbs(
        z,
        start_groups,
        windows,
        make_nucleus(z, nucleus),
        AtomSCFOptions(),
        NewuoaOptions(rhobeg=rhobeg, rhoend=rhoend, maxfun=maxfun),
        block_shells=closed,
        open_shells=opened,
        callback=progress,
        active=active,
    )


def stage_optimize(
    element,
    cache,
    log,
    maxfun,
    point_opt=False,
    timing=False,
    rhoend=1e-5,
    restart=False,
    restart_rhobeg=0.02,
    blockwise=0,
    blockwise_maxfun=80,
):
    """Gaussian nucleus from the thesis' parameters (one group per l, thesis window sizes),
    then the point nucleus: its energy at the Gaussian optimum and its own optimization
    started there.  Each optimization's history is kept (for the plot)."""
    doc = load(cache, "optimize", element) or {}
    params, thesis_windows = thesis_basis(element)
    windows = [Window(w.l, w.start, w.end, w.l) for w in thesis_windows]
    limits = load(cache, "limits", element) or {}
    z = atomic_number(element)
    if "dhf_gaussian" not in doc:
        log(f"{element}: optimizing (Gaussian nucleus), {4 * len(windows)} parameters, maxfun {maxfun}")
        t0 = time.perf_counter()

        def checkpoint(history):
            doc["dhf_gaussian_partial"] = partial_record(history, t0)
            doc["windows"] = [[w.l, w.start, w.end, w.group + 1] for w in windows]
            save(cache, "optimize", element, doc)

        prior = doc.get("dhf_gaussian_partial")
        if prior:  # an interrupted run (e.g. a device batch that ended): NEWUOA again from its best point
            log(
                f"{element}: resuming the Gaussian-nucleus optimization from {prior['energy']:.10f} "
                f"({prior['evaluations']} evaluations so far)"
            )
            t0 -= prior["wall_time"]
        start = [WTBSParameters(*g) for g in prior["groups"]] if prior else [params] * len(windows)
        res = optimize_element(
            element,
            "gaussian",
            start,
            windows,
            maxfun,
            log=log,
            rhoend=rhoend,
            rhobeg=0.02 if prior else 0.05,
            checkpoint=lambda h: checkpoint((prior["history"] if prior else []) + h),
        )
        if prior:
            merge_prior(res, prior)
            res.stop_reason += f" (after a restart at evaluation {prior['evaluations']})"
        doc.pop("dhf_gaussian_partial", None)
        doc["dhf_gaussian"] = dict(res.to_dict(), device=device_label())
        doc["windows"] = [[w.l, w.start, w.end, w.group + 1] for w in windows]
        save(cache, "optimize", element, doc)
        log(
            f"{element}: gaussian E={res.energy:.10f} in {res.evaluations} evaluations, {res.wall_time:.0f}s "
            f"({res.stop_reason})"
        )
    groups = [WTBSParameters(*g) for g in doc["dhf_gaussian"]["groups"]]
    if restart:
        # NEWUOA again from the optimum (a fresh quadratic model, trust region restart_rhobeg)
        g = doc["dhf_gaussian"]
        log(f"{element}: restarting NEWUOA from {g['energy']:.10f} (rhobeg {restart_rhobeg}, maxfun {maxfun})")
        res = optimize_element(
            element, "gaussian", groups, windows, maxfun, rhobeg=restart_rhobeg, log=log, rhoend=rhoend
        )
        offset = g["evaluations"]
        history = g["history"] + [dict(h, evaluation=h["evaluation"] + offset) for h in res.history]
        if res.energy < g["energy"]:
            g.update(groups=res.to_dict()["groups"], energy=res.energy)
            groups = res.groups
        g.update(
            evaluations=len(history),
            history=history,
            wall_time=g["wall_time"] + res.wall_time,
            stop_reason=res.stop_reason,
            restarts=g.get("restarts", 0) + 1,
        )
        doc.pop("dhf_point_at_gaussian_optimum", None)
        save(cache, "optimize", element, doc)
        log(f"{element}: restart gave {res.energy:.10f} in {res.evaluations} evaluations")
    for sweep in range(blockwise):
        # NEWUOA over one l's group at a time (4 parameters), the others fixed
        g = doc["dhf_gaussian"]
        for l in range(len(windows) - 1, -1, -1):
            res = optimize_element(
                element, "gaussian", groups, windows, blockwise_maxfun, rhobeg=0.02, log=None, rhoend=rhoend, active=[l]
            )
            offset = g["evaluations"]
            g["history"] += [dict(h, evaluation=h["evaluation"] + offset) for h in res.history]
            if res.energy < g["energy"]:
                g.update(groups=res.to_dict()["groups"], energy=res.energy)
                groups = res.groups
            g.update(
                evaluations=len(g["history"]),
                wall_time=g["wall_time"] + res.wall_time,
                stop_reason=f"block-wise sweep {sweep + 1}, l = {l}: {res.stop_reason}",
                blockwise_sweeps=sweep + 1,
            )
            doc.pop("dhf_point_at_gaussian_optimum", None)
            save(cache, "optimize", element, doc)
            log(f"{element}: sweep {sweep + 1} l={l}: E={g['energy']:.10f} ({res.evaluations} evaluations)")
    if "dhf_point_at_gaussian_optimum" not in doc:
        energy, its, secs, note = scf_energy(z, wtbs_exponents(groups, windows), "dhf_point")
        doc["dhf_point_at_gaussian_optimum"] = energy
        save(cache, "optimize", element, doc)
    if "dhf_point" not in doc and point_opt:
        log(f"{element}: optimizing (point nucleus) from the Gaussian optimum")
        t0 = time.perf_counter()

        def checkpoint_point(history):
            doc["dhf_point_partial"] = partial_record(history, t0)
            save(cache, "optimize", element, doc)

        prior = doc.get("dhf_point_partial")
        if prior:  # an interrupted run: NEWUOA again from its best point (a restart)
            log(f"{element}: resuming the point-nucleus optimization from {prior['energy']:.10f}")
            t0 -= prior["wall_time"]
        start = [WTBSParameters(*g) for g in prior["groups"]] if prior else groups
        res = optimize_element(
            element,
            "point",
            start,
            windows,
            maxfun,
            rhobeg=0.02,
            log=log,
            checkpoint=lambda h: checkpoint_point((prior["history"] if prior else []) + h),
        )
        if prior:
            merge_prior(res, prior)
            res.stop_reason += " (after a restart)"
        doc.pop("dhf_point_partial", None)
        doc["dhf_point"] = res.to_dict()
        save(cache, "optimize", element, doc)
        log(f"{element}: point E={res.energy:.10f} in {res.evaluations} evaluations, {res.wall_time:.0f}s")
    if "one_group_timing" not in doc and timing:
        # the timing of a plain optimization (4 parameters, thesis start, Gaussian nucleus)
        res = optimize_element(element, "gaussian", [params], thesis_windows, min(maxfun, 300))
        doc["one_group_timing"] = {
            "evaluations": res.evaluations,
            "wall_time": res.wall_time,
            "energy": res.energy,
            "start_energy": res.start_energy,
            "stop_reason": res.stop_reason,
            "groups": res.to_dict()["groups"],
        }
        save(cache, "optimize", element, doc)
        log(f"{element}: one-group optimization E={res.energy:.10f} {res.evaluations} evaluations {res.wall_time:.0f}s")
    del limits
    return doc


def stage_larger(element, cache, log, nbs, maxfun):
    """Optimize (Gaussian nucleus, one group per l) with windows ``nbs`` larger than the
    thesis' set, starting from the cached optimum of the thesis-size set."""
    from hartree.atom.wtbs import parse_nbs

    doc = load(cache, "larger", element) or {}
    if nbs in doc:
        return doc
    start = [WTBSParameters(*g) for g in load(cache, "optimize", element)["dhf_gaussian"]["groups"]]
    windows = [Window(w.l, w.start, w.end, w.l) for w in parse_nbs(nbs)]
    log(f"{element}: optimizing {nbs} from the thesis-size optimum, maxfun {maxfun}")
    res = optimize_element(element, "gaussian", start, windows, maxfun, rhobeg=0.02, log=log)
    z = atomic_number(element)
    point, _, _, _ = scf_energy(z, wtbs_exponents(res.groups, windows), "dhf_point")
    doc[nbs] = {
        "energy": res.energy,
        "groups": res.to_dict()["groups"],
        "evaluations": res.evaluations,
        "wall_time": res.wall_time,
        "stop_reason": res.stop_reason,
        "point_at_gaussian_optimum": point,
    }
    save(cache, "larger", element, doc)
    log(f"{element} {nbs}: E={res.energy:.10f}, {res.evaluations} evaluations, {res.wall_time:.0f}s")
    return doc


def stage_kappa(element, cache, log, nucleus="gaussian", maxfun=100, sweeps=2, rhobeg=0.05, order=None, full_maxfun=0):
    """One WTBS group per κ symmetry (p1/2 and p3/2, d3/2 and d5/2 get their own parameters; the
    thesis' input allows per-symmetry groups and windows), the thesis' function counts.  Starts
    from the cached per-l optimum of the same nucleus (identical exponents), then sweeps of
    NEWUOA over one symmetry's group at a time (``maxfun`` evaluations each, ``order``: block
    indices, default the largest incompleteness first: p1/2, p3/2, s1/2, d3/2, d5/2, ...), then
    optionally NEWUOA over all groups at once (``full_maxfun``).  Cached as kappa_<el>.json."""
    doc = load(cache, "kappa", element) or {}
    key = f"dhf_{nucleus}"
    opt = load(cache, "optimize", element)
    base = opt[key] if key in opt else opt["dhf_gaussian"]
    windows_l = [Window(l, a, b, g - 1) for l, a, b, g in opt["windows"]]
    windows = group_windows([Window(w.l, w.start, w.end) for w in windows_l], "per-kappa")
    source = [w.l for w in windows]  # the per-l group each κ group starts from
    d = doc.get(key)
    if d is None:
        groups = [WTBSParameters(*base["groups"][src]) for src in source]
        d = doc[key] = {
            "groups": [[p.alpha, p.beta, p.delta, p.gamma] for p in groups],
            "energy": base["energy"],
            "start_energy": base["energy"],
            "evaluations": 0,
            "wall_time": 0.0,
            "history": [],
            "sweeps_done": [],
            "windows": [[w.l, w.start, w.end, w.group + 1, w.kappa] for w in windows],
        }
    nblock = len(windows)
    order = order or [i for i in (1, 2, 0, 3, 4, 5, 6) if i < nblock]
    for sweep in range(sweeps):
        for b in order:
            tag = f"{sweep}:{b}"
            if tag in d["sweeps_done"]:
                continue
            groups = [WTBSParameters(*g) for g in d["groups"]]
            res = optimize_element(element, nucleus, groups, windows, maxfun, rhobeg=rhobeg, rhoend=1e-5, active=[b])
            append_run(d, res)
            d["device"] = device_label()
            d["sweeps_done"].append(tag)
            d["stop_reason"] = f"sweep {sweep + 1}, {windows[b].label}: {res.stop_reason}"
            save(cache, "kappa", element, doc)
            log(
                f"{element} {nucleus} per-κ sweep {sweep + 1} {windows[b].label}: E={d['energy']:.10f} "
                f"({res.evaluations} evaluations, {res.wall_time:.0f} s)"
            )
    if full_maxfun and "full" not in d:
        groups = [WTBSParameters(*g) for g in d["groups"]]
        t0 = time.perf_counter()

        def checkpoint(history):  # a run cut short keeps its best point (and its count)
            ok = [h for h in history if h["energy"] is not None]
            top = min(ok, key=lambda h: h["energy"])
            if top["energy"] < d["energy"]:
                d.update(groups=top["parameters"], energy=top["energy"])
            d["full_partial"] = {
                "evaluations": len(history),
                "wall_time": time.perf_counter() - t0,
                "device": device_label(),
            }
            d["stop_reason"] = f"full NEWUOA cut after {len(history)} evaluations (partial)"
            save(cache, "kappa", element, doc)

        res = optimize_element(
            element, nucleus, groups, windows, full_maxfun, rhobeg=0.02, rhoend=1e-5, log=log, checkpoint=checkpoint
        )
        d.pop("full_partial", None)
        append_run(d, res)
        d["full"] = {
            "evaluations": res.evaluations,
            "stop_reason": res.stop_reason,
            "wall_time": res.wall_time,
            "device": device_label(),
        }
        d["stop_reason"] = f"full NEWUOA ({res.evaluations} evaluations): {res.stop_reason}"
        save(cache, "kappa", element, doc)
        log(f"{element} {nucleus} per-κ full NEWUOA: E={d['energy']:.10f} ({res.evaluations} evaluations)")
    return doc


def stage_scftime(element, cache, log):
    """Wall time of one Dirac-Fock SCF (Gaussian nucleus) with the thesis' set: the cost of one
    NEWUOA evaluation.  Best of 3, with the load average of the machine at the time."""
    z = atomic_number(element)
    params, windows = thesis_basis(element)
    exps = wtbs_exponents([params], windows)
    times, parts = [], None
    for _ in range(3):
        closed, opened = occupations(z, True)
        t0 = time.perf_counter()
        res = kernel(z, exps, make_nucleus(z, "gaussian"), AtomSCFOptions(), block_shells=closed, open_shells=opened)
        times.append(time.perf_counter() - t0)
        parts = getattr(res, "timings", None)
    doc = {
        "best": min(times),
        "all": times,
        "iterations": res.iterations,
        "timings": parts,
        "load_average": os.getloadavg()[0],
        "device": getattr(res, "device", "cpu"),
    }
    save(cache, "scftime", element, doc)
    log(f"{element}: one SCF {min(times):.2f} s ({res.iterations} iterations), load {doc['load_average']:.1f}")
    return doc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "stage",
        choices=["limits", "thesis", "optimize", "larger", "scftime", "report", "export", "replay", "kappa", "free"],
    )
    parser.add_argument("--nucleus", default="gaussian", help="kappa, free: nuclear model")
    parser.add_argument(
        "--symmetries",
        default=None,
        help="free: symmetries in the order of the blocks, e.g. p1/2,p3/2,s1/2 (default all)",
    )
    parser.add_argument("--rhobeg", type=float, default=0.05, help="free: NEWUOA rhobeg in ln(exponent)")
    parser.add_argument("--every", type=int, default=10, help="free: checkpoint every N evaluations")
    parser.add_argument(
        "--start",
        default="auto",
        choices=["auto", "kappa"],
        help="free, point nucleus: from the Gaussian free optimum (auto) or the per-κ optimum",
    )
    parser.add_argument("--factors", default=None, help="limits: F values for every mode, e.g. 1,10,100,1000")
    parser.add_argument("--scf-device", default="auto", help="limits: device of the SCFs (auto, cpu, gpu)")
    parser.add_argument("--check-ratios", default=None, help="limits: extra ratios at the largest F, e.g. 1.4")
    parser.add_argument("--sweeps", type=int, default=2, help="kappa, free: block-wise sweeps")
    parser.add_argument("--full-maxfun", type=int, default=0, help="kappa: NEWUOA over all groups afterwards")
    parser.add_argument("--histories", help="export/replay: JSON of recorded evaluations")
    parser.add_argument("--out", help="replay: output JSON")
    parser.add_argument("--device", default="gpu", help="replay: device of the SCFs")
    parser.add_argument("--nbs", help="windows of the 'larger' stage, e.g. s:1:30,p:1:27,d:3:20")
    parser.add_argument("--gpu-replay", help="report: JSON of .dev/q/atomopt_replay.py (GPU timings)")
    parser.add_argument("elements", nargs="*")
    parser.add_argument("--cache", default=default_cache())
    parser.add_argument("--maxfun", type=int, default=600)
    parser.add_argument("--rhoend", type=float, default=1e-5)
    parser.add_argument("--point-opt", action="store_true", help="also optimize for the point nucleus")
    parser.add_argument("--timing", action="store_true", help="also time a one-group optimization")
    parser.add_argument(
        "--restart",
        action="store_true",
        help="run NEWUOA again from the cached Gaussian optimum (rhobeg --restart-rhobeg)",
    )
    parser.add_argument("--restart-rhobeg", type=float, default=0.02)
    parser.add_argument(
        "--blockwise", type=int, default=0, help="sweeps of NEWUOA over one l's group at a time from the cached optimum"
    )
    parser.add_argument("--blockwise-maxfun", type=int, default=80)
    args = parser.parse_args(argv)

    def log(text):
        print(time.strftime("%H:%M:%S"), text, flush=True)

    for element in args.elements:
        symbol = SYMBOLS[atomic_number(element)]
        if args.stage == "limits":
            stage_limits(
                symbol,
                args.cache,
                log,
                [float(f) for f in args.factors.split(",")] if args.factors else None,
                AtomSCFOptions(device=args.scf_device),
                [float(r) for r in args.check_ratios.split(",")] if args.check_ratios else (),
            )
        elif args.stage == "thesis":
            stage_thesis(symbol, args.cache, log)
        elif args.stage == "larger":
            stage_larger(symbol, args.cache, log, args.nbs, args.maxfun)
        elif args.stage == "kappa":
            stage_kappa(symbol, args.cache, log, args.nucleus, args.maxfun, args.sweeps, full_maxfun=args.full_maxfun)
        elif args.stage == "free":
            stage_free(
                symbol,
                args.cache,
                log,
                occupations,
                args.nucleus,
                args.symmetries.split(",") if args.symmetries else None,
                args.maxfun,
                args.sweeps,
                args.rhobeg,
                args.rhoend,
                args.every,
                args.start,
            )
        elif args.stage == "scftime":
            stage_scftime(symbol, args.cache, log)
        elif args.stage == "optimize":
            stage_optimize(
                symbol,
                args.cache,
                log,
                args.maxfun,
                args.point_opt,
                args.timing,
                args.rhoend,
                args.restart,
                args.restart_rhobeg,
                args.blockwise,
                args.blockwise_maxfun,
            )
    if args.stage == "export":
        export_histories(args.cache, [SYMBOLS[atomic_number(e)] for e in args.elements], args.histories)
    if args.stage == "replay":
        replay(args.histories, args.out, args.device)
    if args.stage == "report":
        write_report(args.cache, args.elements or CLOSED_SHELL, args.gpu_replay)


if __name__ == "__main__":
    main()
