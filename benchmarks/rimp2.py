"""RI-MP2 benchmark: the seed's Tables II/III redone (Watson et al., linear alkanes, taxol,
valinomycin) with hartree's GPU RI-MP2 in every precision and the CPU FP64 path, in one run.

    python benchmarks/rimp2.py [--molecules C8H18 C16H34 ... 113_Taxol 168_Valinomycin]
                               [--basis cc-pvdz] [--precisions fp64 mixed fp32 tf32]
                               [--cpu-max-atoms 26] [--no-frozen-core]
                               [--out benchmarks/results/rimp2]
    python benchmarks/rimp2.py --merge part1.json part2.json --out benchmarks/results/rimp2

Alkanes CnH2n+2 are built here (all-trans zigzag: C-C 1.54 A, C-H 1.09 A, tetrahedral
angles); taxol and valinomycin come from benchmarks/molecules.py.  Per molecule:

* SCF: RHF on the GPU (``hartree.scf.run(device='gpu', conv_tol=1e-9)``), timed, not part
  of the MP2 times;
* warm-up: every three-/two-index kernel of the basis pair compiled (or loaded) first, so
  MP2 times exclude NVRTC;
* GPU RI-MP2 (frozen core unless --no-frozen-core, default RIFIT auxiliary basis) once per
  precision, wall time of ``hartree.mp2.run`` (device synchronised at the end) and its stage
  times; energy error in kcal/mol against the GPU FP64 run;
* CPU FP64 RI-MP2 for molecules with at most --cpu-max-atoms atoms (the GPU machine's CPU:
  slow for the large ones), its time and its difference from the GPU FP64 energy.

The device FP64 DGEMM and TF32 rates (8192^3, warm) are measured in the same run, so that the
times can be read against the hardware.  JSON and Markdown are rewritten after every molecule
(a run cut short keeps what it measured).
"""
import argparse
import json
import math
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.molecules import molecule_path  # noqa: E402

KCAL = 627.509474            # kcal/mol per Eh
SCF_CONV_TOL = 1e-9
ALKANES = ("C8H18", "C16H34", "C24H50", "C32H66", "C40H82")
DEFAULT_MOLECULES = ALKANES + ("113_Taxol", "168_Valinomycin")

CC, CH = 1.54, 1.09                          # bond lengths, Angstrom
TETRA = math.acos(-1.0 / 3.0)                # 109.47 degrees


def alkane_xyz(n):
    """XYZ text of the all-trans n-alkane CnH(2n+2), Angstrom (zigzag in the xy plane)."""
    dx, dy = CC * math.sin(TETRA / 2), CC * math.cos(TETRA / 2)

    def carbon(i):                                  # also i = -1 and n (virtual neighbours)
        return np.array([i * dx, dy * (i % 2), 0.0])

    atoms = [("C", carbon(i)) for i in range(n)]
    z = np.array([0.0, 0.0, 1.0])
    for i in range(n):
        c = carbon(i)
        u = 2 * c - carbon(i - 1) - carbon(i + 1)           # in-plane, away from neighbours
        u /= np.linalg.norm(u)
        for s in (1.0, -1.0):                               # the two out-of-plane hydrogens
            atoms.append(("H", c + CH * (math.cos(TETRA / 2) * u + s * math.sin(TETRA / 2) * z)))
        for j in ((i - 1,) if i == 0 else ()) + ((i + 1,) if i == n - 1 else ()):
            v = carbon(j) - c                               # end carbon: H where C would be
            atoms.append(("H", c + CH * v / np.linalg.norm(v)))
    lines = [str(len(atoms)), f"n-C{n}H{2 * n + 2}, all-trans (hartree benchmarks/rimp2.py)"]
    lines += [f"{s} {p[0]:.6f} {p[1]:.6f} {p[2]:.6f}" for s, p in atoms]
    return "\n".join(lines) + "\n"


def load_molecule(name):
    from hartree.molecule import Molecule
    if name in ALKANES:
        return Molecule.from_string(alkane_xyz(int(name[1:name.index("H")])))
    return Molecule.from_xyz(str(molecule_path(name)))


def _sync():
    import cupy
    cupy.cuda.get_current_stream().synchronize()


def gemm_rates():
    """FP64 and TF32 GEMM rates (TFLOP/s) of the device, 8192^3, warm."""
    import cupy

    from hartree.linalg import mgemm_gpu
    n = 8192
    a = cupy.random.default_rng(0).standard_normal((n, n))
    out = {}
    for name, fn in (("fp64_tflops", lambda: a @ a),
                     ("tf32_tflops", lambda: mgemm_gpu.tf32_matmul(a32, a32))):
        a32 = a.astype(cupy.float32)
        fn()
        _sync()
        t0 = time.perf_counter()
        for _ in range(3):
            fn()
        _sync()
        out[name] = round(3 * 2 * n ** 3 / (time.perf_counter() - t0) / 1e12, 1)
    return out


def environment():
    import cupy

    from hartree.gpu.device import gpu_status
    return {"device": gpu_status()[1], "cupy": cupy.__version__,
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(), "numpy": np.__version__,
            "python": platform.python_version(), "host": platform.node(),
            "cpu_count": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%d %H:%M:%S",
                                                                    time.gmtime())}


def run_molecule(name, args, log, rec, save):
    """Fill ``rec`` for one molecule, calling ``save()`` after every step (a run cut short
    keeps what it measured)."""
    import hartree.scf
    from hartree import mp2
    from hartree.gpu.eri3c import ThreeCenterBuilder
    from hartree.gpu.jk import CudaBackend

    mol = load_molecule(name)
    rec.update(natm=mol.natm, basis=args.basis, nelectron=mol.nelectron)
    t0 = time.perf_counter()
    scf = hartree.scf.run(mol, args.basis, device="gpu", conv_tol=SCF_CONV_TOL)
    rec.update(scf_s=round(time.perf_counter() - t0, 2), scf_iterations=scf.iterations,
               scf_energy=float(scf.energy), nao=scf.basis.nao)
    log(f"{name}: SCF {rec['scf_s']} s, {scf.iterations} cycles, E = {scf.energy:.8f}")
    save()
    aux = mp2.load_aux_basis(mol, scf.basis)
    t0 = time.perf_counter()
    ThreeCenterBuilder(scf.basis, aux, CudaBackend()).prepare()
    rec["compile_s"] = round(time.perf_counter() - t0, 2)
    rec["runs"] = {}
    for p in args.precisions:
        _sync()
        t0 = time.perf_counter()
        res = mp2.run(scf, frozen_core=args.frozen_core, device="gpu", precision=p)
        _sync()
        dt = time.perf_counter() - t0
        rec.update(naux=res.naux, nocc=res.nocc, nvir=res.nvir, aux_basis=res.aux_basis)
        rec["runs"][p] = {"mp2_s": round(dt, 3), "e_corr": res.correlation_energy,
                          "scheme": res.precision, "device": res.device,
                          "stages_s": {k: round(v, 3) for k, v in res.timings.items()},
                          "gemm": res.gemm}
        log(f"  gpu {p}: {dt:.2f} s  E_corr = {res.correlation_energy:.10f}  "
            f"stages {rec['runs'][p]['stages_s']}")
        ref = rec["runs"].get("fp64", {}).get("e_corr")
        for r in rec["runs"].values():
            if ref is not None:
                r["error_kcal"] = (r["e_corr"] - ref) * KCAL
        save()
    if mol.natm <= args.cpu_max_atoms:
        t0 = time.perf_counter()
        res = mp2.run(scf, frozen_core=args.frozen_core, device="cpu")
        rec["cpu_fp64"] = {"mp2_s": round(time.perf_counter() - t0, 2),
                           "e_corr": res.correlation_energy,
                           "gpu_fp64_minus_cpu_eh": (ref - res.correlation_energy
                                                     if ref is not None else None)}
        log(f"  cpu fp64: {rec['cpu_fp64']['mp2_s']} s  E_corr = {res.correlation_energy:.10f}")
        save()


def markdown(doc):
    env = doc["environment"]
    precs = doc["precisions"]
    lines = ["# RI-MP2 on the GPU: times and energy errors (seed Tables II/III redone)", "",
             f"Device: {env.get('device')}; cupy {env.get('cupy')}, CUDA runtime "
             f"{env.get('cuda_runtime')}; measured GEMM rates {doc.get('gemm_rates')} "
             f"(TFLOP/s, 8192^3).  Basis {doc['basis']}, default RIFIT auxiliary basis, "
             f"{'frozen core' if doc['frozen_core'] else 'all electrons'}.  MP2 times are "
             "after the SCF with kernels compiled (wall time of hartree.mp2.run); errors are "
             "E_corr(precision) - E_corr(GPU FP64) in kcal/mol.  CPU FP64: the GPU machine's "
             f"CPU ({env.get('cpu_count')} cores), run only up to {doc['cpu_max_atoms']} atoms.",
             "", "| molecule | atoms | nao | naux | occ/vir | SCF s | "
             + " | ".join(f"{p} s | {p} err" for p in precs)
             + " | CPU fp64 s | GPU-CPU fp64 Eh |",
             "|" + "---|" * (6 + 2 * len(precs) + 2)]
    notes = []
    for r in doc["results"]:
        if "error" in r:
            notes.append(f"{r['molecule']}: stopped by {r['error']}")
        if "scf_s" not in r:
            lines.append(f"| {r['molecule']} | not run to the end (see notes) |")
            continue
        cells = [r["molecule"], r.get("natm", ""), r.get("nao", ""), r.get("naux", ""),
                 f"{r.get('nocc', '')}/{r.get('nvir', '')}", r.get("scf_s", "")]
        for p in precs:
            run = r.get("runs", {}).get(p)
            cells += ([f"{run['mp2_s']:.2f}", f"{run.get('error_kcal', float('nan')):+.5f}"]
                      if run else ["", ""])
        cpu = r.get("cpu_fp64")
        cells += ([cpu["mp2_s"], f"{cpu['gpu_fp64_minus_cpu_eh']:.1e}"] if cpu else ["-", "-"])
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Schemes that ran per precision: "
              + "; ".join(sorted({f"{p}: {run['scheme']}" for r in doc["results"]
                                  for p, run in r.get("runs", {}).items()})),
              "", "'mixed' on the GPU (hartree/mp2/rimp2_gpu.py): B = (ia|P) L^-T in FP64, "
              "(ia|jb) by the split-TF32 product (3 TF32 products in one tensor-core GEMM, "
              "FP32 accumulation); fp32/tf32/tf32x3: that mgemm scheme for both GEMM steps."]
    lines += [""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecules", nargs="+", default=list(DEFAULT_MOLECULES))
    ap.add_argument("--basis", default="cc-pvdz")
    ap.add_argument("--precisions", nargs="+", default=["fp64", "mixed", "fp32", "tf32"])
    ap.add_argument("--cpu-max-atoms", type=int, default=26)
    ap.add_argument("--no-frozen-core", dest="frozen_core", action="store_false")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "rimp2"),
                    help="output path without extension (.json and .md are written)")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="only combine the results of earlier runs (JSON files written by this "
                         "script in one device session, e.g. cut into time-boxed parts) into "
                         "--out; the environment of the first is kept")
    args = ap.parse_args(argv)
    if args.merge:
        docs = [json.load(open(path)) for path in args.merge]
        doc = dict(docs[0], results=[r for d in docs for r in d["results"]],
                   precisions=list(dict.fromkeys(p for d in docs for p in d["precisions"])),
                   parts=[{"file": os.path.basename(path), "molecules":
                           [r["molecule"] for r in d["results"]],
                           "cpu_max_atoms": d["cpu_max_atoms"]}
                          for path, d in zip(args.merge, docs)])
        doc["cpu_max_atoms"] = max(d["cpu_max_atoms"] for d in docs)
        with open(args.out + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(doc))
        return 0
    doc = {"benchmark": "rimp2", "basis": args.basis, "precisions": args.precisions,
           "frozen_core": args.frozen_core, "cpu_max_atoms": args.cpu_max_atoms,
           "environment": environment(), "results": []}

    def log(msg):
        print(msg, flush=True)

    def write():
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(doc))

    doc["gemm_rates"] = gemm_rates()
    log(f"{doc['environment']['device']}: {doc['gemm_rates']}")
    write()
    for name in args.molecules:
        rec = {"molecule": name}
        doc["results"].append(rec)
        try:
            run_molecule(name, args, log, rec, write)
        except Exception as exc:                 # record and go on with the next molecule
            rec["error"] = f"{type(exc).__name__}: {exc}"
            log(f"{name}: failed: {type(exc).__name__}: {exc}")
        write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
