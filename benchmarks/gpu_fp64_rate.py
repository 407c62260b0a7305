"""Achieved FP64 rate of hartree's J+K kernels as a fraction of the device's DGEMM rate.

    python benchmarks/gpu_fp64_rate.py --molecule 057_Tamoxifen --basis 6-31g** \
        --out benchmarks/results/gpu_fp64_rate_h100.json

Steps (one GPU, Nsight Compute `ncu` on the PATH):

1. the SAD-guess density of the molecule (hartree's GPU SCF guess), saved to a scratch file;
2. warm J+K build time with that density: median of 5 calls, CUDA-synchronised;
3. the same single J+K build under ``ncu`` (``--clock-control none``, kernels ``jk_*`` only),
   counting the executed FP64 instructions per kernel: FLOPs = 2 DFMA + DMUL + DADD
   (thread-level, predicated-on: ``smsp__sass_thread_inst_executed_op_d{fma,mul,add}_pred_on``);
4. the device's FP64 DGEMM rate (cupy.matmul 8192^3, warm median of 5).

Achieved rate = FLOPs / warm J+K time; fraction = achieved / DGEMM rate.  FLOPs count only
the arithmetic the kernels really execute (screened quartets skipped), so the fraction says
how busy the FP64 units are, not how much work an unscreened build would be.
"""

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.molecules import molecule_path  # noqa: E402

METRICS = {
    "dfma": "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "dmul": "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "dadd": "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
}
THRESHOLD = 1e-13


def _engine(name, basis_name):
    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.molecule import Molecule

    mol = Molecule.from_xyz(str(molecule_path(name)))
    basis = load_basis(mol, basis_name)
    return mol, basis, GPUEngine(mol, basis, screening_threshold=THRESHOLD)


def inner(args):
    """One J+K build with the saved density (run under ncu)."""
    import cupy

    _, _, eng = _engine(args.molecule, args.basis)
    eng.prepare()
    dm = cupy.asarray(np.load(args.density))
    eng.jk(dm)
    cupy.cuda.get_current_stream().synchronize()


def parse_ncu_csv(text):
    """{metric key: summed value} over all profiled kernels from `ncu --csv` output."""
    start = text.find('"ID"')
    rows = csv.DictReader(io.StringIO(text[start:]))
    total = {k: 0.0 for k in METRICS}
    nkernels = set()
    for row in rows:
        for key, metric in METRICS.items():
            if row.get("Metric Name") == metric:
                total[key] += float(row["Metric Value"].replace(",", ""))
                nkernels.add(row.get("ID"))
    return total, len(nkernels)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecule", default="057_Tamoxifen")
    ap.add_argument("--basis", default="6-31g**")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--density", help=argparse.SUPPRESS)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--out", default=None, help="record to update (default: results/gpu_fp64_rate_<device>.json)")
    args = ap.parse_args(argv)
    if args.inner:
        return inner(args)

    import cupy

    from hartree.scf import guess as scf_guess

    sys.path.insert(0, HERE)
    from gpu_jk import dgemm_rate

    mol, basis, eng = _engine(args.molecule, args.basis)
    dm = scf_guess.sad_density(mol, basis, eng, THRESHOLD)
    eng.prepare()
    dm_gpu = cupy.asarray(dm)
    sync = cupy.cuda.get_current_stream().synchronize
    eng.jk(dm_gpu)
    times = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        eng.jk(dm_gpu)
        sync()
        times.append(time.perf_counter() - t0)
    t_jk = statistics.median(times)

    with tempfile.TemporaryDirectory() as tmp:
        dpath = os.path.join(tmp, "dm.npy")
        np.save(dpath, dm)
        cmd = [
            args.ncu,
            "--csv",
            "--clock-control",
            "none",
            "--print-units",
            "base",
            "-k",
            "regex:^jk_",
            "--metrics",
            ",".join(METRICS.values()),
            sys.executable,
            os.path.abspath(__file__),
            "--inner",
            "--density",
            dpath,
            "--molecule",
            args.molecule,
            "--basis",
            args.basis,
        ]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
        t_ncu = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"ncu failed with exit code {proc.returncode}")
    counts, nkernels = parse_ncu_csv(proc.stdout)
    flops = 2.0 * counts["dfma"] + counts["dmul"] + counts["dadd"]
    dgemm = dgemm_rate()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    res = {
        "device": name,
        "cupy": cupy.__version__,
        "molecule": args.molecule,
        "basis": args.basis,
        "nao": basis.nao,
        "density": "SAD guess",
        "screening_threshold": THRESHOLD,
        "jk_warm_median_s": t_jk,
        "jk_all_s": times,
        "kernels_profiled": nkernels,
        "fp64_instructions": counts,
        "fp64_flops": flops,
        "achieved_flops_per_s": flops / t_jk,
        "dgemm_flops_per_s": dgemm,
        "fraction_of_dgemm": flops / t_jk / dgemm,
        "ncu_wall_s": t_ncu,
    }
    print(json.dumps(res, indent=1))
    from benchmarks.records import gpu_slug, record_path

    out = args.out or record_path("gpu_fp64_rate", gpu_slug()) + ".json"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    record = {"benchmark": "gpu_fp64_rate", "device": name, "cases": []}
    if os.path.exists(out):
        with open(out) as f:
            record = json.load(f)
    same = (res["molecule"], res["basis"])
    record["cases"] = [c for c in record["cases"] if (c["molecule"], c["basis"]) != same] + [res]
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    return res


if __name__ == "__main__":
    main()
