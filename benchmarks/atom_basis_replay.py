"""Optimization histories of benchmarks/atom_basis.py: exported, and replayed on another device
(the GPU runs the same NEWUOA evaluations)."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from atom_basis_common import load, occupations  # noqa: E402

from hartree.atom import AtomSCFOptions, kernel, make_nucleus  # noqa: E402
from hartree.atom.config import atomic_number  # noqa: E402
from hartree.atom.wtbs import Window, WTBSParameters, wtbs_exponents  # noqa: E402
from hartree.errors import ConvergenceError, InputError  # noqa: E402


def export_histories(cache, elements, path):
    """The evaluations (parameters, CPU energy) of the Gaussian optimizations, for `replay`."""
    out = {}
    for el in elements:
        opt = load(cache, "optimize", el)
        if not opt or "dhf_gaussian" not in opt:
            continue
        closed, _ = occupations(atomic_number(el), True)
        out[el] = {
            "z": atomic_number(el),
            "windows": [[l, a, b, g - 1] for l, a, b, g in opt["windows"]],
            "block_shells": closed,
            "evaluations": [[h["parameters"], h["energy"]] for h in opt["dhf_gaussian"]["history"]],
        }
    with open(path, "w") as f:
        json.dump(out, f)


def replay(histories, out_path, device="gpu"):
    """Rerun every recorded evaluation (one SCF each) on ``device``: the wall time of a complete
    NEWUOA optimization without nlopt's own (negligible) work, and the largest difference from the
    recorded CPU energies.  Writes ``out_path`` (JSON)."""
    with open(histories) as f:
        data = json.load(f)
    out = {}
    for el, d in data.items():
        z, windows = d["z"], [Window(*w) for w in d["windows"]]
        nuc, opts = make_nucleus(z, "gaussian"), AtomSCFOptions(device=device)
        zeros = [0.0] * len(d["block_shells"])

        def energy(params):
            return kernel(
                z,
                wtbs_exponents([WTBSParameters(*g) for g in params], windows),
                nuc,
                opts,
                block_shells=d["block_shells"],
                open_shells=zeros,
            )

        first = energy(d["evaluations"][0][0])  # warm-up: kernel compile/load
        t0 = time.perf_counter()
        worst, n, failed = 0.0, 0, 0
        for params, e_cpu in d["evaluations"]:
            if params is None:
                continue
            try:
                e = energy(params).energy
            except (ConvergenceError, InputError):
                failed += 1
                continue
            n += 1
            if e_cpu is not None:
                worst = max(worst, abs(e - e_cpu))
        wall = time.perf_counter() - t0
        out[el] = {
            "evaluations": n,
            "failed": failed,
            "wall_s": wall,
            "per_evaluation_s": wall / max(n, 1),
            "max_abs_diff_vs_cpu_Eh": worst,
            "device": getattr(first, "device", device),
        }
        print(el, out[el], flush=True)
        with open(out_path, "w") as f:
            json.dump(out, f, indent=1)
    return out
