"""The `free` stage of benchmarks/atom_basis.py: free exponents (the thesis' bastype 'rdin')
from the per-κ WTBS optimum, the thesis' function count per symmetry unchanged.

Block-wise NEWUOA (:func:`hartree.atom.optimize.optimize_exponents`) over x = ln ζ of one
symmetry's exponents at a time (default order p1/2, p3/2, s1/2, d3/2, d5/2, ...: the largest
incompleteness first), the others fixed.  Gaussian nucleus: started from kappa_<el>.json
'dhf_gaussian'; point nucleus: its energy at the Gaussian-optimal free exponents, then
(optionally) the same block-wise refinement from there or (``--start kappa``, and without a
Gaussian free optimum) from kappa_<el>.json 'dhf_point'.  The best point is saved to
free_<el>.json every ``every`` evaluations, so a run that is cut keeps its result; a rerun
resumes at the first symmetry not done (from the saved best point).
"""

import os
import time

from atom_basis_common import load, save

from hartree.atom import AtomSCFOptions, kernel, make_nucleus
from hartree.atom.config import atomic_number
from hartree.atom.optimize import NewuoaOptions, exponents_per_l, optimize_exponents, symmetry_exponents
from hartree.atom.wtbs import Window, WTBSParameters, wtbs_exponents

#: default order of the blocks: the largest incompleteness of the per-κ optimum first
DEFAULT_ORDER = ("p1/2", "p3/2", "s1/2", "d3/2", "d5/2", "f5/2", "f7/2")


def _device_label():
    """Where the SCFs run (AtomSCFOptions(device='auto')): the GPU's name or 'cpu'."""
    from hartree.device.selection import gpu_status

    ok, name = gpu_status()
    return name if ok else "cpu"


def kappa_start(cache, element, key="dhf_gaussian"):
    """(exponents dict label -> list (bohr^-2), energy (Eh)) of the cached per-κ WTBS optimum."""
    d = load(cache, "kappa", element)
    if not d or key not in d:
        raise SystemExit(f"{element}: no per-κ optimum '{key}' in the cache (run the kappa stage first)")
    d = d[key]
    windows = [Window(l, a, b, g - 1, k) for l, a, b, g, k in d["windows"]]
    exps = wtbs_exponents([WTBSParameters(*g) for g in d["groups"]], windows)
    return {k: v.tolist() for k, v in symmetry_exponents(exps).items()}, d["energy"]


def _fold_partial(d):
    """Count an interrupted block (its checkpoint) in the totals; its best point is kept already."""
    part = d.pop("partial", None)
    if part:
        d["evaluations"] += part["evaluations"]
        d["wall_time"] += part["wall_time"]
        d["runs"].append(dict(part, stop_reason="interrupted (checkpoint kept)"))


def stage_free(
    element,
    cache,
    log,
    occupations,
    nucleus="gaussian",
    symmetries=None,
    maxfun=400,
    sweeps=1,
    rhobeg=0.05,
    rhoend=1e-4,
    every=10,
    start_from="auto",
):
    """Block-wise NEWUOA over free exponents (see the module docstring).  occupations(z, True)
    gives (block_shells, open_shells); start_from: 'auto' (point nucleus: the Gaussian free
    optimum where there is one) or 'kappa' (the per-κ WTBS optimum of the same nucleus).
    Cached as free_<el>.json under 'dhf_<nucleus>'."""
    doc = load(cache, "free", element) or {}
    key = f"dhf_{nucleus}"
    z = atomic_number(element)
    closed, opened = occupations(z, True)
    nuc = make_nucleus(z, nucleus)
    d = doc.get(key)
    if d is None:
        g = doc.get("dhf_gaussian", {})
        if nucleus == "point" and "point_at_optimum" in g and start_from == "auto":
            start, e0 = g["exponents"], g["point_at_optimum"]["energy"]
            source = "free-exponent Gaussian-nucleus optimum"
        else:
            start, e0 = kappa_start(cache, element, key)
            source = f"per-κ WTBS optimum (kappa_{element}.json, {key})"
        d = doc[key] = {
            "start": source,
            "start_energy": e0,
            "exponents": start,
            "energy": e0,
            "evaluations": 0,
            "wall_time": 0.0,
            "runs": [],
            "sweeps_done": [],
            "history": [],
        }
    _fold_partial(d)
    order = list(symmetries) if symmetries else [s for s in DEFAULT_ORDER if s in d["exponents"]]
    for sweep in range(sweeps):
        for sym in order:
            tag = f"{sweep}:{sym}"
            if tag in d["sweeps_done"]:
                continue
            t0, offset, e_in = time.perf_counter(), d["evaluations"], d["energy"]
            seen = []

            def checkpoint(entry, tag=tag, t0=t0, offset=offset, seen=seen, e_in=e_in):
                seen.append(entry)
                d["history"].append([offset + entry["evaluation"], tag, entry["energy"]])
                if entry["energy"] is not None and entry["energy"] < d["energy"]:
                    d["exponents"] = dict(d["exponents"], **entry["exponents"])
                    d["energy"] = entry["energy"]
                if entry["evaluation"] % every == 0:
                    d["partial"] = {
                        "tag": tag,
                        "evaluations": len(seen),
                        "wall_time": time.perf_counter() - t0,
                        "start_energy": e_in,
                        "energy": d["energy"],
                        "load": os.getloadavg()[0],
                    }
                    save(cache, "free", element, doc)

            log(
                f"{element} {nucleus} free sweep {sweep + 1} {sym}: {len(d['exponents'][sym])} exponents, "
                f"maxfun {maxfun}, from {d['energy']:.10f}"
            )
            res = optimize_exponents(
                z,
                d["exponents"],
                nuc,
                AtomSCFOptions(),
                NewuoaOptions(rhobeg=rhobeg, rhoend=rhoend, maxfun=maxfun),
                active=[sym],
                block_shells=closed,
                open_shells=opened,
                callback=checkpoint,
            )
            d.pop("partial", None)
            if res.energy <= d["energy"]:
                d["exponents"], d["energy"] = res.exponents, res.energy
            d["evaluations"] += res.evaluations
            d["wall_time"] += res.wall_time
            d["runs"].append(
                {
                    "tag": tag,
                    "evaluations": res.evaluations,
                    "wall_time": res.wall_time,
                    "start_energy": res.start_energy,
                    "energy": res.energy,
                    "stop_reason": res.stop_reason,
                    "load": os.getloadavg()[0],
                }
            )
            d["sweeps_done"].append(tag)
            d["device"] = _device_label()
            d["rhobeg"], d["rhoend"] = rhobeg, rhoend
            d.pop("point_at_optimum", None)
            save(cache, "free", element, doc)
            log(
                f"{element} {nucleus} free {sym}: {res.start_energy:.10f} -> {res.energy:.10f} "
                f"({res.evaluations} evaluations, {res.wall_time:.0f} s, {res.stop_reason})"
            )
    if nucleus == "gaussian" and "point_at_optimum" not in d:
        res = kernel(
            z,
            exponents_per_l(d["exponents"]),
            make_nucleus(z, "point"),
            AtomSCFOptions(),
            block_shells=closed,
            open_shells=opened,
        )
        e = res.energy
        d["point_at_optimum"] = {"energy": e, "iterations": res.iterations}
        save(cache, "free", element, doc)
        log(f"{element}: point nucleus at the Gaussian free optimum E={e:.10f}")
    return doc


def exponent_ranges(exponents):
    """'s1/2: 30, 8.6e-02..2.5e+08; p1/2: ...' (count, smallest..largest per symmetry)."""
    return "; ".join(f"{k}: {len(v)}, {min(v):.2e}..{max(v):.2e}" for k, v in exponents.items())
