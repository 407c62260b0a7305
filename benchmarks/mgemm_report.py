"""Markdown and figures of benchmarks/mgemm.py records (rates, speed and error per scheme, Ozaki slices, MP2 shapes)."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


#: the schemes the --seed runs measure (mgemm keyword arguments), in the order of the tables
SEED_SCHEMES = [
    ("fp64", {}),
    ("fp32", {}),
    ("tf32", {}),
    ("tf32x3", {}),
    ("heterogeneous", {"cutoff": 2.0}),
    ("bitwise", {"upper_bits": 12}),
    ("ozaki4", {"slices": 4}),
    ("ozaki", {}),
    ("mixed", {}),
]


def _mp2_line(r):
    """One Markdown line for an RI-MP2-shaped measurement row."""
    oz = ", ".join(f"ozaki S={s} {r[f'ozaki{s}_s']:.4f} s (rel {r[f'ozaki{s}_rms_rel']:.1e})" for s in (3, 4, 5))
    mx = r["mixed"]
    return (
        f"RI-MP2 shape {r['m']}x{r['n']}x{r['k']}: DGEMM {r['dgemm_s']:.4f} s, {oz}, "
        f"FP32 rel {r.get('fp32_rms_rel', float('nan')):.1e}, TF32 {r['tf32_s']:.4f} s, "
        f"TF32x3 {r.get('tf32x3_s', 0):.4f} s (rel {r.get('tf32x3_rms_rel', 0):.1e}); "
        f"mixed -> {mx[0]} S={mx[1]} {mx[3]:.4f} s (rel {mx[4]:.1e})"
    )


def report(path, out):
    """Markdown + PNG from a JSON written by --probe and/or --seed."""
    res = json.load(open(path))
    os.makedirs(out, exist_ok=True)
    env = res.get("env", {})
    lines = [
        f"# mgemm on the GPU ({env.get('device', '?')}, {env.get('date', '?')})",
        "",
        f"cupy {env.get('cupy')}, CUDA runtime {env.get('cuda_runtime')}, driver "
        f"{env.get('driver')}, Python {env.get('python')}, numpy {env.get('numpy')}. "
        "Device times (CUDA events, medians of warm repeats) of whole mgemm calls on "
        "device-resident operands; RMS errors against GPU DGEMM.",
        "",
    ]
    if res.get("env_seed"):
        e2 = res["env_seed"]
        lines += [
            f"Seed-figure sections measured in a second run: {e2.get('device')}, "
            f"{e2.get('date')}, cupy {e2.get('cupy')}.",
            "",
        ]
    p = res.get("probe")
    if p:
        lines += [
            "## Rates (N = 8192, warm)",
            "",
            "| DGEMM TFLOP/s | SGEMM | TF32 | INT8 TOP/s (gemmEx, exact) | slicing s/operand (S=5) |",
            "|---|---|---|---|---|",
            f"| {p['dgemm_tflops']:.1f} | {p['sgemm_tflops']:.1f} | {p['tf32_tflops']:.1f} "
            f"| {p['int8_tops']:.0f} ({p['int8_exact']}) | "
            f"{p.get('slice_s_per_operand', float('nan')):.4f} |",
            "",
        ]
        if p.get("ozaki"):
            lines += ["| Ozaki slices S | s | speed-up vs DGEMM | RMS error / mean abs(A)abs(B) |", "|---|---|---|---|"]
            lines += [
                f"| {o['slices']} | {o['seconds']:.4f} | {o['speedup_vs_dgemm']:.2f} | {o['rms_rel_vs_dgemm']:.1e} |"
                for o in p["ozaki"]
            ]
            lines.append("")
        if p.get("mixed"):
            mx = p["mixed"]
            lines.append(
                f"mixed at N = 8192: {mx['scheme']} S={mx['slices']}, "
                f"{mx['seconds']:.4f} s, RMS error {mx['rms_rel_vs_dgemm']:.1e} "
                f"(estimated {mx['estimated_error']:.1e}); {mx['notes']}"
            )
            lines.append("")
        for r in p.get("mp2_shape", []):
            lines.append(_mp2_line(r))
        if "streamed_fp64_2streams_s" in p:
            lines.append(
                f"Streamed cleaver, host operands N = 8192, fp64, {p['streamed_tiles']} "
                f"tiles, {p['streamed_transfer_GB']:.1f} GB moved: one stream "
                f"{p['streamed_fp64_1streams_s']:.3f} s, two streams (overlap) "
                f"{p['streamed_fp64_2streams_s']:.3f} s (wall, second of two runs)."
            )
        lines.append("")
    for r in res.get("probe_mp2", {}).get("mp2_shape", []):
        lines += ["", "Second run (batch 2, fused row statistics): " + _mp2_line(r)]
    rows = res.get("speed_error", [])
    if rows:
        names = [n for n, _ in SEED_SCHEMES]
        lines += [
            "## Seed figs. 4/5: time (s) and RMS error against FP64, salted N x N",
            "",
            "| N | salt | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for r in rows:
            cells = []
            for nm in names:
                v = r["schemes"].get(nm)
                cells.append("-" if v is None else f"{v['seconds']:.2e} s / {v['rms_vs_fp64']:.1e}")
            lines.append(
                f"| {r['n']} | {r['frac']:g} x [{r['salt'][0]:g},{r['salt'][1]:g}] | " + " | ".join(cells) + " |"
            )
        lines.append("")
    for r in res.get("bitwise", []):
        best = max(r["enhancement"].items(), key=lambda kv: kv[1])
        lines.append(
            f"Bitwise (seed fig. 2), N = {r['n']}: best enhancement {best[1]:.0f} at "
            f"n_u = {best[0]} (RMS fp32 {r['rms_fp32']:.1e})."
        )
    for r in res.get("ozaki_slices", []):
        lines.append(
            f"Ozaki N = {r['n']}, salt {r['frac']:g}: DGEMM {r['dgemm_s']:.4f} s; "
            + ", ".join(f"S={s}: {v['seconds']:.4f} s {v['rms_vs_fp64']:.1e}" for s, v in r["slices"].items())
        )
    for t in res.get("tests", []):
        lines += ["", "Tests on the device: " + t]
    if res.get("errors"):
        lines += ["", "Errors: " + "; ".join(f"{k}: {v.splitlines()[-1]}" for k, v in res["errors"].items())]
    if res.get("skipped"):
        lines += ["", "Not run (time budget): " + "; ".join(res["skipped"])]
    from benchmarks.records import device_slug  # one current record per device: mgemm_<device>.md

    with open(os.path.join(out, f"mgemm_{device_slug(env.get('device', 'gpu'))}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    if rows:
        fig, ax = plt.subplots(figsize=(6.5, 4.8))
        for nm in [n for n, _ in SEED_SCHEMES]:
            fracs = [1e-2, 1e-3, 1e-4] if nm == "heterogeneous" else [1e-3]
            for frac in fracs:
                pts = sorted(
                    (r["n"], r["schemes"][nm]["gflops"])
                    for r in rows
                    if nm in r["schemes"] and r["frac"] == frac and r["salt"][0] == 90.0
                )
                if len(pts) > 1:
                    ax.loglog(*zip(*pts), "o-", ms=3, label=nm + (f" f={frac:g}" if nm == "heterogeneous" else ""))
        ax.set_xlabel("N")
        ax.set_ylabel("GFLOP/s (2 N^3 / device time)")
        ax.set_title("mgemm speed, salt in [90, 110] (seed fig. 4)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mgemm_speed.png"), dpi=110)
        plt.close(fig)
        fig, ax = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
        styles = {1e-2: "-", 1e-3: "--", 1e-4: ":"}
        colors = {
            "fp32": "C0",
            "tf32": "C1",
            "heterogeneous": "C2",
            "bitwise": "C3",
            "ozaki4": "C4",
            "ozaki": "C5",
            "mixed": "C6",
            "tf32x3": "C7",
        }
        for j, lo in enumerate((90.0, 9990.0)):
            for nm, col in colors.items():
                for frac, ls in styles.items():
                    pts = sorted(
                        (r["n"], r["schemes"][nm]["rms_vs_fp64"])
                        for r in rows
                        if nm in r["schemes"]
                        and r["frac"] == frac
                        and r["salt"][0] == lo
                        and r["schemes"][nm]["rms_vs_fp64"] > 0
                    )
                    if pts:
                        ax[j].loglog(*zip(*pts), ls, color=col, marker=".", label=f"{nm} f={frac:g}")
            ax[j].set_xlabel("N")
            ax[j].set_title(f"RMS error vs FP64, salt in [{lo:g}, {lo + 20:g}] (seed fig. 5)")
        ax[0].set_ylabel("RMS error of one element")
        ax[1].legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mgemm_error.png"), dpi=110)
        plt.close(fig)
    if res.get("bitwise"):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for r in res["bitwise"]:
            nus = sorted(int(k) for k in r["enhancement"])
            ax.semilogy(
                nus,
                [r["enhancement"][str(k) if str(k) in r["enhancement"] else k] for k in nus],
                "o-",
                label=f"N = {r['n']}",
            )
        ax.set_xlabel("upper bits n_u")
        ax.set_ylabel("enhancement RMS(fp32)/RMS(bitwise)")
        ax.set_title("bitwise MGEMM on [1, 2] (seed fig. 2)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mgemm_bitwise.png"), dpi=110)
        plt.close(fig)
    if p and p.get("ozaki"):
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
        ss = [o["slices"] for o in p["ozaki"]]
        ax[0].semilogy(ss, [o["rms_rel_vs_dgemm"] for o in p["ozaki"]], "o-")
        ax[0].set_xlabel("slices S")
        ax[0].set_ylabel("RMS error / mean (|A||B|), vs DGEMM")
        ax[1].plot(ss, [o["speedup_vs_dgemm"] for o in p["ozaki"]], "o-", label="N = 8192")
        for r in p.get("mp2_shape", []):
            t = [(s_, r[f"ozaki{s_}_s"]) for s_ in (3, 4, 5)]
            ax[1].plot(
                [x[0] for x in t],
                [r["dgemm_s"] / x[1] for x in t],
                "s--",
                label=f"{r['m']}x{r['n']}x{r['k']} (RI-MP2 shape)",
            )
        ax[1].axhline(1.0, color="k", lw=0.5)
        ax[1].set_xlabel("slices S")
        ax[1].set_ylabel("speed-up over DGEMM")
        ax[1].legend(fontsize=8)
        fig.suptitle(
            f"INT8 Ozaki split, {env.get('device', '')}: DGEMM "
            f"{p['dgemm_tflops']:.1f} TFLOP/s, INT8 {p['int8_tops']:.0f} TOP/s"
        )
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mgemm_ozaki_rates.png"), dpi=110)
        plt.close(fig)
    if res.get("ozaki_slices"):
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
        for r in res["ozaki_slices"]:
            ss = sorted(int(s) for s in r["slices"])
            v = [r["slices"][str(s) if str(s) in r["slices"] else s] for s in ss]
            lab = f"N={r['n']} salt {r['frac']:g}"
            ax[0].semilogy(ss, [x["rms_vs_fp64"] for x in v], "o-", label=lab)
            ax[1].plot(ss, [x["seconds"] / r["dgemm_s"] for x in v], "o-", label=lab)
        ax[0].set_xlabel("slices S")
        ax[0].set_ylabel("RMS error vs FP64")
        ax[1].set_xlabel("slices S")
        ax[1].set_ylabel("time / DGEMM time")
        ax[1].axhline(1.0, color="k", lw=0.5)
        for x in ax:
            x.legend()
        fig.suptitle("INT8 Ozaki split on tensor cores")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mgemm_ozaki.png"), dpi=110)
        plt.close(fig)
