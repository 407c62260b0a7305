"""mgemm on the GPU: the seed's MGEMM figures redone (Watson et al. 2010, figs. 2, 4, 5) plus
the INT8 tensor-core Ozaki split.

    python benchmarks/mgemm.py --probe  --out DIR        # rates: DGEMM, SGEMM, TF32, INT8
    python benchmarks/mgemm.py --seed   --out DIR [--sizes 128 ... 16384] [--budget 70]
    python benchmarks/mgemm.py --merge B1/mgemm.json B2/mgemm.json --out DIR  # -> results/mgemm_<device>.json
    python benchmarks/mgemm.py --report DIR/mgemm.json --out benchmarks/results   # -> mgemm_<device>.md

--probe: warm DGEMM/SGEMM/TF32 (cupy, cuBLAS) and raw INT8 gemmEx rates for N = 8192, the
  Ozaki split with S = 3..9 slices (time, RMS error against DGEMM), and an RI-MP2-shaped
  product (8192 x 2048)(2048 x 8192).
--seed: for N x N matrices with elements in [-1, 1] salted with fractions 1e-2, 1e-3, 1e-4
  of values in [90, 110] or [9990, 10010] (random sign): time (CUDA events, median of
  warm repeats) and RMS error against GPU DGEMM for fp32, tf32, heterogeneous (delta = 2:
  every salt element is "large", as in the seed), bitwise (12 upper bits), ozaki (S = 4 and
  the FP64-level default) and "mixed"; the bitwise enhancement chi = RMS(fp32)/RMS(bitwise)
  versus the upper-bit count for N in {1, 10, 100, 1000, 4096} on [1, 2] (N = 1 and 10 as
  block-diagonal matrices, whose zero blocks add exactly); the Ozaki error and time versus
  S.  Sections stop when --budget seconds are spent; the JSON says what ran.
--report: Markdown and PNG plots (matplotlib) from the JSON.
Times are device times of the whole mgemm call (operands already on the device), GFLOP/s
counts 2 N^3 for every scheme.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from benchmarks.mgemm_report import SEED_SCHEMES, report  # noqa: E402

SALTS = [(1e-2, 90.0), (1e-3, 90.0), (1e-4, 90.0), (1e-2, 9990.0), (1e-3, 9990.0), (1e-4, 9990.0)]


def _env():
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {
        "device": name,
        "cupy": cp.__version__,
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "driver": cp.cuda.runtime.driverGetVersion(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def _time(fn, repeat=3, warm=True):
    """Median device seconds of fn() between CUDA events (after one warm-up call)."""
    import cupy as cp

    if warm:
        fn()
    out = []
    for _ in range(repeat):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        out.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    return statistics.median(out)


def _salted(xp, rng, n, frac, lo):
    """N x N, uniform in [-1, 1], a fraction ``frac`` replaced by +-[lo, lo + 20]; rng is a
    numpy or cupy Generator matching xp."""
    x = rng.uniform(-1.0, 1.0, (n, n))
    if frac:
        mask = rng.random((n, n)) < frac
        cnt = int(mask.sum())
        x[mask] = (lo + 20.0 * rng.random(cnt)) * xp.where(rng.random(cnt) < 0.5, -1.0, 1.0)
    return x


def _rms(cp, c, ref):
    return float(cp.sqrt(cp.mean((c - ref) ** 2)))


def _save(res, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "mgemm.json"), "w") as f:
        json.dump(res, f, indent=1)


def _section(res, out, name, fn):
    """Run one benchmark section; an exception is recorded in the JSON, not fatal."""
    import traceback

    try:
        fn()
    except Exception:  # keep the other sections' numbers
        res.setdefault("errors", {})[name] = traceback.format_exc()[-2000:]
        print(res["errors"][name], flush=True)
    _save(res, out)


def _mp2_shapes(res, out, p, shapes, deadline):
    """RI-MP2-shaped products: (ia|jb) block = B_i (m x naux) B_j^T, heavy-tailed elements
    (normal times lognormal); DGEMM, Ozaki S = 3..5, TF32, tf32x3 and "mixed"."""
    import cupy as cp

    from hartree.linalg import mgemm

    rng = cp.random.default_rng(5)
    for m_, k_ in shapes:
        if time.perf_counter() > deadline:
            res.setdefault("skipped", []).append(f"RI-MP2 shape {m_}x{k_}")
            break
        x = rng.standard_normal((m_, k_)) * cp.exp(rng.standard_normal((m_, k_)))
        y = rng.standard_normal((m_, k_)) * cp.exp(rng.standard_normal((m_, k_)))
        ref = x @ y.T
        scale = float(cp.mean(cp.abs(x) @ cp.abs(y.T)))
        row = {"m": m_, "n": m_, "k": k_, "dgemm_s": _time(lambda: mgemm(x, y, transb=True), repeat=2)}
        for s in (3, 4, 5):
            row[f"ozaki{s}_s"] = _time(lambda: mgemm(x, y, transb=True, precision="ozaki", slices=s), repeat=2)
            c = mgemm(x, y, transb=True, precision="ozaki", slices=s)
            row[f"ozaki{s}_rms_rel"] = _rms(cp, c, ref) / scale
        row["tf32_s"] = _time(lambda: mgemm(x, y, transb=True, precision="tf32"), repeat=2)
        row["tf32x3_s"] = _time(lambda: mgemm(x, y, transb=True, precision="tf32x3"), repeat=2)
        c = mgemm(x, y, transb=True, precision="tf32x3")
        row["tf32x3_rms_rel"] = _rms(cp, c, ref) / scale
        c32 = mgemm(x, y, transb=True, precision="fp32")
        row["fp32_rms_rel"] = _rms(cp, c32, ref) / scale
        c, info = mgemm(x, y, transb=True, precision="mixed", return_info=True)
        row["mixed"] = [
            info.precision,
            info.slices,
            info.notes,
            _time(lambda: mgemm(x, y, transb=True, precision="mixed"), repeat=2),
            _rms(cp, c, ref) / scale,
        ]
        p.setdefault("mp2_shape", []).append(row)
        print(json.dumps(row), flush=True)
        _save(res, out)


def probe(out, budget, n=8192):
    import cupy as cp

    from hartree.linalg import mgemm, mgemm_gpu
    from hartree.linalg.mgemm import MGEMMInfo

    t_start = time.perf_counter()
    res = {"env": _env(), "probe": {}}
    p = res["probe"]
    rng = cp.random.default_rng(1)
    a = rng.uniform(-1.0, 1.0, (n, n))
    b = rng.uniform(-1.0, 1.0, (n, n))
    fl = 2.0 * n**3

    def rates():
        p["dgemm_tflops"] = fl / _time(lambda: a @ b) / 1e12
        a32, b32 = a.astype(cp.float32), b.astype(cp.float32)
        p["sgemm_tflops"] = fl / _time(lambda: a32 @ b32) / 1e12
        p["tf32_tflops"] = fl / _time(lambda: mgemm(a32, b32, precision="tf32")) / 1e12
        qa = cp.random.randint(-127, 128, (n, n)).astype(cp.int8)
        qb = cp.random.randint(-127, 128, (n, n)).astype(cp.int8)
        pc = cp.empty((n, n), dtype=cp.int32)
        p["int8_tops"] = fl / _time(lambda: mgemm_gpu.int8_gemm_nt(qa, qb, pc)) / 1e12
        ref = qa[:16].get().astype(np.int64) @ qb[:256].get().astype(np.int64).T
        p["int8_exact"] = bool(np.array_equal(pc[:16, :256].get(), ref))
        print(json.dumps(p), flush=True)

    def split():
        p["slice_s_per_operand"] = _time(lambda: mgemm_gpu.slice_rows_int8(a, 5))
        ref = a @ b
        scale = float(cp.mean(cp.abs(a) @ cp.abs(b)))
        p["ozaki"] = []
        for s in range(3, 10):
            if time.perf_counter() - t_start > budget:
                break
            t = _time(lambda: mgemm(a, b, precision="ozaki", slices=s), repeat=2)
            c = mgemm(a, b, precision="ozaki", slices=s)
            p["ozaki"].append(
                {
                    "slices": s,
                    "seconds": t,
                    "tflops_equiv": fl / t / 1e12,
                    "speedup_vs_dgemm": fl / t / 1e12 / p["dgemm_tflops"],
                    "rms_rel_vs_dgemm": _rms(cp, c, ref) / scale,
                }
            )
            print(json.dumps(p["ozaki"][-1]), flush=True)
            _save(res, out)
        c, info = mgemm(a, b, precision="mixed", return_info=True)
        p["mixed"] = {
            "scheme": info.precision,
            "slices": info.slices,
            "seconds": _time(lambda: mgemm(a, b, precision="mixed"), repeat=2),
            "rms_rel_vs_dgemm": _rms(cp, c, ref) / scale,
            "estimated_error": info.estimated_error,
            "notes": info.notes,
        }
        print(json.dumps(p["mixed"]), flush=True)

    def mp2_shape():
        _mp2_shapes(res, out, p, ((n, n // 4), (n // 2, n // 8), (n // 4, n // 4)), t_start + budget)

    def streamed():
        # streamed cleaver: host operands, 16 tiles, one stream (no overlap) versus two
        if time.perf_counter() - t_start > budget + 4:
            res.setdefault("skipped", []).append("streamed (time budget)")
            return
        ha, hb = a.get(), b.get()
        for ns in (1, 2, 1, 2):
            info = MGEMMInfo(precision="fp64", shape=(n, n, n))
            t0 = time.perf_counter()
            c = mgemm_gpu.streamed(ha, hb, (n // 4, n // 4, n), lambda x, y: x @ y, info, nstreams=ns)
            p[f"streamed_fp64_{ns}streams_s"] = time.perf_counter() - t0
        p["streamed_tiles"] = info.tiles
        p["streamed_transfer_GB"] = info.transfer_bytes / 1e9
        p["streamed_max_abs_diff"] = float(np.max(np.abs(c[:64] - ha[:64] @ hb)))
        print(json.dumps({k: v for k, v in p.items() if k.startswith("streamed")}), flush=True)

    for name, fn in (("rates", rates), ("split", split), ("mp2_shape", mp2_shape), ("streamed", streamed)):
        _section(res, out, name, fn)
    res["probe_seconds"] = time.perf_counter() - t_start
    _save(res, out)
    return res


def seed(out, sizes, budget):
    import cupy as cp

    from hartree.linalg import mgemm

    t_start = time.perf_counter()
    res = {"env": _env(), "seed_sizes": sizes, "speed_error": [], "bitwise": [], "ozaki_slices": [], "skipped": []}

    def left():
        return budget - (time.perf_counter() - t_start)

    rng = np.random.default_rng(2)
    grng = cp.random.default_rng(3)
    # --- seed fig. 2: bitwise enhancement versus upper bits on [1, 2] ---
    for n, blocks in ((1, 2048), (10, 200), (100, 10), (1000, 1), (4096, 1)):
        if left() < 4:
            res["skipped"].append(f"bitwise N={n}")
            continue
        size = n * blocks
        a = np.zeros((size, size))
        b = np.zeros((size, size))
        for i in range(blocks):
            s = slice(i * n, (i + 1) * n)
            a[s, s] = rng.uniform(1.0, 2.0, (n, n))
            b[s, s] = rng.uniform(1.0, 2.0, (n, n))
        mask = np.zeros((size, size), bool)
        for i in range(blocks):
            mask[i * n : (i + 1) * n, i * n : (i + 1) * n] = True
        a, b = cp.asarray(a), cp.asarray(b)
        ref = a @ b
        cm = cp.asarray(mask)

        def rms(c):
            return float(cp.sqrt(cp.mean((c - ref)[cm] ** 2)))

        s32 = rms(mgemm(a, b, precision="fp32"))
        row = {"n": n, "blocks": blocks, "rms_fp32": s32, "enhancement": {}}
        for nu in range(4, 24):
            row["enhancement"][nu] = s32 / max(rms(mgemm(a, b, precision="bitwise", upper_bits=nu)), 1e-300)
        res["bitwise"].append(row)
        print(json.dumps({"n": n, "best": max(row["enhancement"].items(), key=lambda kv: kv[1])}), flush=True)
        _save(res, out)
    # --- seed figs. 4 and 5: speed and RMS error against GPU DGEMM, salted matrices ---
    for n in sizes:
        big = n >= 8192
        salts = SALTS if n <= 4096 else [(1e-3, 9990.0)]
        for frac, lo in salts:
            if left() < 5:
                res["skipped"].append(f"speed/error N={n} f={frac} [{lo},{lo + 20}]")
                continue
            a = _salted(cp, grng, n, frac, lo)
            b = _salted(cp, grng, n, frac, lo)
            ref = a @ b
            row = {"n": n, "frac": frac, "salt": [lo, lo + 20.0], "schemes": {}}
            for name, kw in SEED_SCHEMES:
                prec = "ozaki" if name.startswith("ozaki") else name
                if left() < 3 or (big and name == "bitwise"):
                    continue
                c, info = mgemm(a, b, precision=prec, return_info=True, **kw)
                t = _time(lambda: mgemm(a, b, precision=prec, **kw), repeat=1 if big else 3, warm=not big)
                row["schemes"][name] = {
                    "seconds": t,
                    "gflops": 2.0 * n**3 / t / 1e9,
                    "rms_vs_fp64": _rms(cp, c, ref),
                    "scheme": info.precision,
                    "slices": info.slices,
                    "estimated_error": info.estimated_error,
                }
            res["speed_error"].append(row)
            print(
                json.dumps(
                    {
                        "n": n,
                        "frac": frac,
                        "lo": lo,
                        **{k: (round(v["seconds"], 5), v["rms_vs_fp64"]) for k, v in row["schemes"].items()},
                    }
                ),
                flush=True,
            )
            _save(res, out)
            del a, b, ref
    # --- INT8 Ozaki split: error and time versus slices ---
    for n, (frac, lo) in ((4096, (0.0, 0.0)), (4096, (1e-3, 9990.0))):
        if left() < 6:
            res["skipped"].append(f"ozaki slices N={n} f={frac}")
            continue
        a = _salted(cp, grng, n, frac, lo)
        b = _salted(cp, grng, n, frac, lo)
        ref = a @ b
        t64 = _time(lambda: a @ b)
        row = {"n": n, "frac": frac, "salt": [lo, lo + 20.0], "dgemm_s": t64, "slices": {}}
        for s in range(1, 11):
            if left() < 2:
                break
            c = mgemm(a, b, precision="ozaki", slices=s)
            row["slices"][s] = {
                "seconds": _time(lambda: mgemm(a, b, precision="ozaki", slices=s), repeat=2),
                "rms_vs_fp64": _rms(cp, c, ref),
            }
        res["ozaki_slices"].append(row)
        _save(res, out)
    # RI-MP2-shaped product again (after the fused row statistics), if time is left
    if left() > 4:
        _section(
            res,
            out,
            "mp2_shape",
            lambda: _mp2_shapes(res, out, res.setdefault("probe_mp2", {}), ((8192, 2048),), t_start + budget),
        )
    res["seed_seconds"] = time.perf_counter() - t_start
    _save(res, out)
    return res


def merge(probe_json, seed_json, out):
    """One JSON from a --probe run and a --seed run (the second run's device in env_seed)."""
    res = json.load(open(probe_json))
    b2 = json.load(open(seed_json))
    res["env_seed"] = b2["env"]
    for k in ("seed_sizes", "speed_error", "bitwise", "ozaki_slices", "skipped", "probe_mp2", "seed_seconds", "tests"):
        if k in b2:
            res[k] = b2[k]
    if b2.get("errors"):
        res["errors_seed"] = b2["errors"]
    _save(res, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--seed", action="store_true")
    ap.add_argument("--report", metavar="JSON")
    ap.add_argument("--merge", nargs=2, metavar=("PROBE_JSON", "SEED_JSON"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--probe-n", type=int, default=8192)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per section set")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    if args.probe:
        probe(args.out, args.budget, args.probe_n)
    if args.seed:
        seed(args.out, args.sizes, args.budget)
    if args.merge:
        merge(args.merge[0], args.merge[1], args.out)
    if args.report:
        report(args.report, args.out)


if __name__ == "__main__":
    main()
