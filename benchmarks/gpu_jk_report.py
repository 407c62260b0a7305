"""Tables of benchmarks/gpu_jk.py: Markdown of a run, one line per case, and several runs merged into one record."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from hartree.cli.report import stage_times_text  # noqa: E402


def _med(r, key):
    """Median seconds of a timing entry, None where it was not measured (--jk-only)."""
    return r[key]["median_s"] if key in r else None


def _label(r):
    """Molecule name, with the GPU counts of both codes where either used more than one
    (records before session 6 lack GPU4PySCF's count)."""
    n = r.get("gpus", 1)
    n4 = r.get("gpu4pyscf", {}).get("gpus")
    if n4 is not None and max(n, n4) > 1:
        return f"{r['molecule']} (hartree {n} GPU{'s' * (n > 1)}, G4 {n4} GPU{'s' * (n4 > 1)})"
    return r["molecule"] + (f" ({n} GPUs)" if n > 1 else "")


def _fmt(x, spec=".4f"):
    return "-" if x is None else format(x, spec)


def _options(meta):
    """' (pair_order binned, ...)' from meta['kernel_options'], or '' (older records)."""
    opts = meta.get("kernel_options")
    return " (" + ", ".join(f"{k} {v}" for k, v in opts.items()) + ")" if opts else ""


def markdown(meta, results):
    g4v = next((r["gpu4pyscf"]["versions"] for r in results if "gpu4pyscf" in r), None)
    dg = meta.get("dgemm_fp64_flops")
    head = (
        f"# GPU J/K and SCF: hartree vs GPU4PySCF ({meta['device']}, {meta['date']})\n\n"
        f"hartree generator {meta['generator_version']}{_options(meta)}, cupy {meta['cupy']}, "
        "CUDA runtime "
        f"{meta['cuda_runtime']}, driver {meta['driver']}, Python {meta['python']}"
        + (f"; GPU4PySCF {g4v['gpu4pyscf']}, PySCF {g4v['pyscf']}" if g4v else "")
        + (f"; measured FP64 DGEMM {dg / 1e12:.1f} TFLOP/s" if dg else "")
        + f". Same molecule, basis data and density; direct_scf_tol {meta['screening_threshold']:g}; "
        f"SCF conv_tol {meta['scf_conv_tol']:g}. Times are warm medians in seconds; ratio = "
        "hartree / GPU4PySCF (< 1: hartree faster). J+K: hartree's one-pass build against "
        "GPU4PySCF's get_jk (one call, both). SCF = whole RHF wall time (hartree: SAD "
        "guess, kernels already compiled; GPU4PySCF: MINAO guess); '-' where the SCFs were "
        "skipped (--scf-max-nao) and the SAD density was used for J/K.\n"
    )
    rows = [
        "| molecule | basis | nao | J | G4 get_j | ratio J | K | G4 get_k | ratio K | "
        "J+K | G4 get_jk | ratio J+K | SCF (cycles) | G4 SCF (cycles) | ratio SCF | "
        "E hartree - E G4 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        g4 = r.get("gpu4pyscf", {})
        ra = r.get("ratio_hartree_over_gpu4pyscf", {})
        gs, hs = g4.get("scf", {}), r.get("scf", {})
        scf_cell = f"{_fmt(hs.get('wall_s'), '.2f')} ({hs.get('cycles', '-')})" + (
            "" if hs.get("converged", True) else " not converged"
        )
        g4_cell = f"{_fmt(gs.get('wall_s'), '.2f')} ({gs.get('cycles', '-')})" + (
            "" if gs.get("converged", True) else " not converged"
        )
        rows.append(
            f"| {_label(r)} | {r['basis']} | {r['nao']} | {_fmt(_med(r, 'j_only'))} | "
            f"{_fmt(g4.get('get_j', {}).get('median_s'))} | {_fmt(ra.get('J'), '.2f')} | "
            f"{_fmt(_med(r, 'k_only'))} | {_fmt(g4.get('get_k', {}).get('median_s'))} | "
            f"{_fmt(ra.get('K'), '.2f')} | {_fmt(r['jk']['median_s'])} | "
            f"{_fmt(g4.get('get_jk', {}).get('median_s'))} | {_fmt(ra.get('J+K'), '.2f')} | "
            f"{scf_cell} | {g4_cell} | {_fmt(ra.get('SCF'), '.2f')} | "
            f"{_fmt(r.get('energy_diff_hartree_minus_gpu4pyscf'), '.1e')} |"
        )
    extra = [
        "",
        "| molecule | basis | density used for J/K | setup (compile) s | hartree E (Eh) | "
        "max abs J diff | max abs K diff | hartree SCF by stage (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        g4 = r.get("gpu4pyscf", {})
        e = r.get("scf", {}).get("energy")
        extra.append(
            f"| {_label(r)} | {r['basis']} | {r.get('density', '-')} | "
            f"{_fmt(r['setup_all_flags_s'], '.1f')} | {_fmt(e, '.9f')} | "
            f"{_fmt(g4.get('max_abs_diff_J'), '.1e')} | "
            f"{_fmt(g4.get('max_abs_diff_K'), '.1e')} | "
            f"{stage_times_text(r.get('scf', {}).get('timings', {})) or '-'} |"
        )
    return head + "\n" + "\n".join(rows + extra) + "\n"


def summary_line(r):
    """One line per case for the log."""
    g4 = r.get("gpu4pyscf", {})
    scf = r.get("scf", {})
    line = (
        f"{r['molecule']:15s} {r['basis']:9s} nao={r['nao']:5d} "
        f"setup {r['setup_all_flags_s']:.1f} s | J {_fmt(_med(r, 'j_only'))} "
        f"K {_fmt(_med(r, 'k_only'))} J+K {r['jk']['median_s']:.4f}"
    )
    if scf:
        line += f" | SCF {scf['wall_s']:.2f} s ({scf['cycles']} cyc) E {scf['energy']:.9f}"
    if g4:
        line += (
            f" || G4 on {g4.get('gpus', '?')} GPU(s): J {g4['get_j']['median_s']:.4f} "
            f"K {g4['get_k']['median_s']:.4f} JK {g4['get_jk']['median_s']:.4f}"
        )
        if "scf" in g4:
            line += f" SCF {g4['scf']['wall_s']:.2f} s ({g4['scf']['cycles']} cyc)"
        line += (
            f" | ratio {json.dumps(r.get('ratio_hartree_over_gpu4pyscf'))} "
            f"| dJ {g4['max_abs_diff_J']:.1e} dK {g4['max_abs_diff_K']:.1e}"
        )
    return line


def merge_runs(paths, out):
    """One JSON + Markdown from several runs: results in the order given; the first run's
    meta, the others' under meta['merged_runs'] (each case keeps its own numbers)."""
    runs = [json.load(open(p)) for p in paths]
    meta = dict(runs[0]["meta"])
    meta["merged_runs"] = [r["meta"] for r in runs[1:]]
    doc = {
        "meta": meta,
        "results": [x for r in runs for x in r["results"]],
        "errors": [e for r in runs for e in r.get("errors", [])],
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write(markdown(meta, doc["results"]))
    return doc
