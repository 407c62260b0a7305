"""RI-MP2 benchmark: the seed's Tables II/III redone (Watson et al., linear alkanes, taxol,
valinomycin) with hartree's GPU RI-MP2 in every precision, the CPU FP64 path and, when it is
installed, GPU4PySCF's DF-MP2 on the same orbitals, in one run.

    python benchmarks/rimp2.py [--molecules C8H18 ... 168_Valinomycin] [--basis cc-pvdz]
                               [--tz-molecules C8H18 ... C40H82] [--tz-basis cc-pvtz]
                               [--precisions fp64 mixed fp32 tf32] [--cpu-max-atoms 26]
                               [--gpu4pyscf auto|on|off] [--scf-conv-tol 1e-9]
                               [--out benchmarks/results/rimp2_h100]
    python benchmarks/rimp2.py --merge part1.json part2.json --out benchmarks/results/rimp2_h100

Alkanes CnH2n+2 are built here (all-trans zigzag: C-C 1.54 A, C-H 1.09 A, tetrahedral
angles); taxol and valinomycin come from benchmarks/molecules.py.  Runs: every --molecules
entry in --basis (NAME@BASIS names its own), then every --tz-molecules entry in
--tz-basis.  Per molecule and basis:

* SCF: RHF on the GPU (``hartree.scf.run(device='gpu')``), timed, not part of the MP2 times;
* warm-up (once per run, water/cc-pVDZ MP2 in fp64 and mixed: cuBLAS/cuSOLVER handles, the
  energy and slicing kernels) and per basis pair every three-/two-index kernel compiled or
  loaded first, so MP2 times exclude NVRTC;
* GPU RI-MP2 (frozen core unless --no-frozen-core, default RIFIT auxiliary basis) once per
  precision: wall time of ``hartree.mp2.run`` (device synchronised) and its stage times;
  energy error in kcal/mol against the GPU FP64 run, which is the reference;
* CPU FP64 RI-MP2 (the GPU machine's CPU) for molecules with at most --cpu-max-atoms atoms;
  for the others a LOWER BOUND, marked as such: the FP64 FLOPs of its GEMMs (mp2_flops) at
  the CPU's DGEMM rate measured in the same run (integrals and energy sums come on top);
* GPU4PySCF (``gpu4pyscf.mp.dfmp2.DFMP2``) when importable (--gpu4pyscf auto): a PySCF Mole
  with exactly our basis and auxiliary basis data (tests/helpers.to_pyscf, same AO order),
  our converged orbitals fed in (its own SCF is not run), the same frozen core; its wall
  time (first call, and a second call) and E_corr(hartree FP64) - E_corr(GPU4PySCF).

The device FP64 DGEMM, TF32 and INT8 rates (8192^3, warm) are measured in the same run, so
that the times can be read against the hardware.  JSON and Markdown are rewritten after
every step (a run cut short keeps what it measured).
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
from benchmarks.rimp2_report import markdown  # noqa: E402

KCAL = 627.509474  # kcal/mol per Eh
SCF_CONV_TOL = 1e-9
ALKANES = ("C8H18", "C16H34", "C24H50", "C32H66", "C40H82")
DEFAULT_MOLECULES = ALKANES + ("113_Taxol", "168_Valinomycin")

CC, CH = 1.54, 1.09  # bond lengths, Angstrom
TETRA = math.acos(-1.0 / 3.0)  # 109.47 degrees


def alkane_xyz(n):
    """XYZ text of the all-trans n-alkane CnH(2n+2), Angstrom (zigzag in the xy plane)."""
    dx, dy = CC * math.sin(TETRA / 2), CC * math.cos(TETRA / 2)

    def carbon(i):  # also i = -1 and n (virtual neighbours)
        return np.array([i * dx, dy * (i % 2), 0.0])

    atoms = [("C", carbon(i)) for i in range(n)]
    z = np.array([0.0, 0.0, 1.0])
    for i in range(n):
        c = carbon(i)
        u = 2 * c - carbon(i - 1) - carbon(i + 1)  # in-plane, away from neighbours
        u /= np.linalg.norm(u)
        for s in (1.0, -1.0):  # the two out-of-plane hydrogens
            atoms.append(("H", c + CH * (math.cos(TETRA / 2) * u + s * math.sin(TETRA / 2) * z)))
        for j in ((i - 1,) if i == 0 else ()) + ((i + 1,) if i == n - 1 else ()):
            v = carbon(j) - c  # end carbon: H where C would be
            atoms.append(("H", c + CH * v / np.linalg.norm(v)))
    lines = [str(len(atoms)), f"n-C{n}H{2 * n + 2}, all-trans (hartree benchmarks/rimp2.py)"]
    lines += [f"{s} {p[0]:.6f} {p[1]:.6f} {p[2]:.6f}" for s, p in atoms]
    return "\n".join(lines) + "\n"


def load_molecule(name):
    from hartree.molecule import Molecule

    if name in ALKANES:
        return Molecule.from_string(alkane_xyz(int(name[1 : name.index("H")])))
    return Molecule.from_xyz(str(molecule_path(name)))


def _sync():
    import cupy

    cupy.cuda.get_current_stream().synchronize()


def gemm_rates():
    """FP64, TF32 (TFLOP/s) and INT8 (TOP/s, exact INT32 accumulation) GEMM rates of the
    device, 8192^3, warm."""
    import cupy

    from hartree.linalg import mgemm_gpu

    n = 8192
    a = cupy.random.default_rng(0).standard_normal((n, n))
    a32 = a.astype(cupy.float32)
    q = cupy.asarray(np.random.default_rng(1).integers(-127, 128, (n, n)), dtype=cupy.int8)
    c32 = cupy.empty((n, n), dtype=cupy.int32)
    out = {}
    for name, fn in (
        ("fp64_tflops", lambda: a @ a),
        ("tf32_tflops", lambda: mgemm_gpu.tf32_matmul(a32, a32)),
        ("int8_tops", lambda: mgemm_gpu.int8_gemm_nt(q, q, c32)),
    ):
        fn()
        _sync()
        t0 = time.perf_counter()
        for _ in range(3):
            fn()
        _sync()
        out[name] = round(3 * 2 * n**3 / (time.perf_counter() - t0) / 1e12, 1)
    return out


def environment():
    import cupy

    from hartree.device.selection import gpu_status

    return {
        "device": gpu_status()[1],
        "cupy": cupy.__version__,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "cpu_count": os.cpu_count(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }


def warm_up(log):
    """Water/cc-pVDZ GPU MP2 in fp64 and mixed (CUDA handles, energy kernels) and one
    small Ozaki product (slicing kernels, INT8 GEMM)."""
    import hartree.scf
    from hartree import mp2
    from hartree.molecule import Molecule

    t0 = time.perf_counter()
    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    scf = hartree.scf.run(mol, "cc-pvdz", device="gpu")
    for p in ("fp64", "mixed"):
        mp2.run(scf, device="gpu", precision=p)
    import cupy

    from hartree.linalg import mgemm

    a = cupy.random.default_rng(0).standard_normal((256, 256))
    mgemm(a, a, transb=True, precision="ozaki", slices=2)  # slicing kernels, INT8 GEMM
    _sync()
    log(f"warm-up (water/cc-pVDZ SCF + MP2 fp64, mixed): {time.perf_counter() - t0:.1f} s")
    return round(time.perf_counter() - t0, 2)


def cpu_dgemm_rate():
    """FP64 GEMM rate of this machine's CPU through numpy (FLOP/s, 4096^3, warm)."""
    n = 4096
    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a
    t0 = time.perf_counter()
    for _ in range(2):
        a @ a
    return 2 * 2 * n**3 / (time.perf_counter() - t0)


def mp2_flops(nao, naux, nocc, nvir):
    """FP64 FLOPs of the RI-MP2 GEMMs: the two AO->MO transforms of (mu nu|P), B = (ia|P)
    L^-T, and the (ia|jb) products over pairs j <= i (nocc (nocc+1)/2 nvir^2 naux x 2)."""
    return (
        2.0 * nao * nao * nocc * naux
        + 2.0 * nao * nocc * nvir * naux
        + 2.0 * nocc * nvir * naux * naux
        + nocc * (nocc + 1.0) * nvir * nvir * naux
    )


def cpu_lower_bound(rate, nao, naux, nocc, nvir):
    """Seconds the CPU FP64 path needs at least: its GEMM FLOPs at the measured CPU DGEMM
    rate (integrals, energy sums and memory traffic come on top)."""
    return mp2_flops(nao, naux, nocc, nvir) / rate


def gpu4pyscf_available():
    try:
        import g4stub  # noqa: F401  (stands in for GPU libxc on the device; see gpu_jk.py)
    except ImportError:
        pass
    try:
        import gpu4pyscf.mp.dfmp2  # noqa: F401

        return True, ""
    except Exception as exc:  # not installed, or broken
        return False, f"{type(exc).__name__}: {exc}"


def run_gpu4pyscf(mol, scf, aux, nfrozen, calls=2):
    """GPU4PySCF DF-MP2 on our orbitals, same basis and auxiliary basis data; ``calls`` runs
    (the time reported is the last one's: the first includes its one-time setup)."""
    import cupy
    import gpu4pyscf
    import pyscf
    import pyscf.scf
    from gpu4pyscf.mp import dfmp2

    from tests.helpers import pyscf_basis_dict, to_pyscf

    pmol = to_pyscf(mol, scf.basis)
    paux = to_pyscf(mol, aux)
    assert pmol.nao == scf.basis.nao and paux.nao == aux.nao
    mf = pyscf.scf.RHF(pmol)
    mf.mo_coeff = np.asarray(scf.mo_coeff)
    mf.mo_occ = np.asarray(scf.mo_occ)
    mf.mo_energy = np.asarray(scf.mo_energy)
    mf.e_tot = float(scf.energy)
    mf.converged = True
    out = {
        "versions": {"gpu4pyscf": gpu4pyscf.__version__, "pyscf": pyscf.__version__},
        "note": "gpu4pyscf.mp.dfmp2.DFMP2(mf, auxbasis=<our aux basis as a Mole>), "
        "with_t2=False, frozen = ours, on hartree's converged orbitals",
    }
    times = []
    aux_forms = [("Mole", paux), ("basis dict", pyscf_basis_dict(mol, aux))]
    for _ in range(calls):
        while True:
            form, auxbasis = aux_forms[0]
            try:
                pt = dfmp2.DFMP2(mf, auxbasis=auxbasis)
                pt.frozen = nfrozen if nfrozen else None
                pt.with_t2 = False
                _sync()
                t0 = time.perf_counter()
                e = pt.kernel()
                _sync()
                break
            except Exception as exc:  # the other way of naming the aux basis, once
                if len(aux_forms) == 1:
                    raise
                out.setdefault("retries", []).append(f"auxbasis as {form}: {type(exc).__name__}: {exc}")
                aux_forms.pop(0)
        times.append(time.perf_counter() - t0)
        e = float(e[0] if isinstance(e, tuple) else e)
        cupy.get_default_memory_pool().free_all_blocks()
    out.update(
        e_corr=e, first_s=round(times[0], 3), mp2_s=round(times[-1], 3), calls=calls, auxbasis_given_as=aux_forms[0][0]
    )
    return out


def run_molecule(name, basis, args, log, rec, save, state):
    """Fill ``rec`` for one molecule and basis, calling ``save()`` after every step (a run
    cut short keeps what it measured).  ``state`` carries the measured CPU reference."""
    import hartree.scf
    from hartree import mp2
    from hartree.device.backend import CudaBackend
    from hartree.gpu.eri3c import ThreeCenterBuilder

    mol = load_molecule(name)
    rec.update(natm=mol.natm, basis=basis, nelectron=mol.nelectron)
    t0 = time.perf_counter()
    scf = hartree.scf.run(mol, basis, device="gpu", conv_tol=args.scf_conv_tol, conv_tol_grad=args.scf_conv_tol_grad)
    rec.update(
        scf_s=round(time.perf_counter() - t0, 2),
        scf_iterations=scf.iterations,
        scf_energy=float(scf.energy),
        nao=scf.basis.nao,
    )
    log(f"{name}/{basis}: SCF {rec['scf_s']} s, {scf.iterations} cycles, E = {scf.energy:.8f}")
    save()
    aux = mp2.load_aux_basis(mol, scf.basis)
    t0 = time.perf_counter()
    ThreeCenterBuilder(scf.basis, aux, CudaBackend()).prepare()
    rec["compile_s"] = round(time.perf_counter() - t0, 2)
    rec["runs"] = {}
    ref = None
    for p in args.precisions:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        _sync()
        t0 = time.perf_counter()
        res = mp2.run(scf, frozen_core=args.frozen_core, device="gpu", precision=p)
        _sync()
        dt = time.perf_counter() - t0
        rec.update(naux=res.naux, nocc=res.nocc, nvir=res.nvir, aux_basis=res.aux_basis, nfrozen=res.frozen_core)
        rec["runs"][p] = {
            "mp2_s": round(dt, 3),
            "e_corr": res.correlation_energy,
            "e_os": res.opposite_spin,
            "e_ss": res.same_spin,
            "scheme": res.precision,
            "device": res.device,
            "stages_s": {k: round(v, 3) for k, v in res.timings.items()},
            "gemm": res.gemm,
            "notes": res.notes,
        }
        log(f"  gpu {p}: {dt:.2f} s  E_corr = {res.correlation_energy:.10f}  stages {rec['runs'][p]['stages_s']}")
        for n in res.notes:
            log(f"    {n}")
        ref = rec["runs"].get("fp64", {}).get("e_corr")
        for r in rec["runs"].values():
            if ref is not None:
                r["error_kcal"] = (r["e_corr"] - ref) * KCAL
        save()
    sizes = dict(nao=rec["nao"], naux=rec["naux"], nocc=rec["nocc"], nvir=rec["nvir"])
    if mol.natm <= args.cpu_max_atoms:
        t0 = time.perf_counter()
        res = mp2.run(scf, frozen_core=args.frozen_core, device="cpu")
        rec["cpu_fp64"] = {
            "mp2_s": round(time.perf_counter() - t0, 2),
            "e_corr": res.correlation_energy,
            "stages_s": {k: round(v, 3) for k, v in res.timings.items()},
            "gpu_fp64_minus_cpu_eh": (ref - res.correlation_energy if ref is not None else None),
        }
        log(f"  cpu fp64: {rec['cpu_fp64']['mp2_s']} s  E_corr = {res.correlation_energy:.10f}")
    if "cpu_rate" not in state:
        state["cpu_rate"] = cpu_dgemm_rate()
        log(f"  cpu DGEMM rate {state['cpu_rate'] / 1e9:.0f} GFLOP/s (numpy, 4096^3)")
    est = cpu_lower_bound(state["cpu_rate"], **sizes)  # also where measured: a check
    rec["cpu_fp64_estimate"] = {
        "mp2_s_at_least": round(est, 2),
        "cpu_dgemm_gflops": round(state["cpu_rate"] / 1e9, 1),
        "gemm_flops": mp2_flops(**sizes),
    }
    if "cpu_fp64" not in rec:
        log(f"  cpu fp64: not run; at least {est:.0f} s (GEMM FLOPs / CPU DGEMM rate)")
    save()
    if state.get("gpu4pyscf"):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        try:
            g4 = run_gpu4pyscf(mol, scf, aux, rec.get("nfrozen", 0), args.gpu4pyscf_calls)
            if ref is not None:
                g4["hartree_fp64_minus_gpu4pyscf_eh"] = ref - g4["e_corr"]
            rec["gpu4pyscf"] = g4
            log(f"  gpu4pyscf dfmp2: {g4['mp2_s']} s (first {g4['first_s']} s)  E_corr = {g4['e_corr']:.10f}")
        except Exception as exc:  # record, go on
            import traceback

            rec["gpu4pyscf"] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
            log(f"  gpu4pyscf failed: {type(exc).__name__}: {exc}")
        save()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecules", nargs="*", default=list(DEFAULT_MOLECULES))
    ap.add_argument("--basis", default="cc-pvdz")
    ap.add_argument("--tz-molecules", nargs="*", default=list(ALKANES))
    ap.add_argument("--tz-basis", default="cc-pvtz")
    ap.add_argument("--precisions", nargs="+", default=["fp64", "mixed", "fp32", "tf32"])
    ap.add_argument("--cpu-max-atoms", type=int, default=26)
    ap.add_argument("--gpu4pyscf", choices=("auto", "on", "off"), default="auto")
    ap.add_argument("--gpu4pyscf-calls", type=int, default=2, help="DF-MP2 calls per molecule (the last one is timed)")
    ap.add_argument("--scf-conv-tol", type=float, default=SCF_CONV_TOL)
    ap.add_argument("--scf-conv-tol-grad", type=float, default=1e-5)
    ap.add_argument("--no-warm-up", dest="warm_up", action="store_false")
    ap.add_argument("--no-frozen-core", dest="frozen_core", action="store_false")
    ap.add_argument(
        "--out",
        default=None,
        help="output path without extension (.json and .md are written; default results/rimp2_<device>)",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="only combine the results of earlier runs (JSON files written by this "
        "script in one device session, e.g. cut into time-boxed parts) into "
        "--out; the environment of the first is kept",
    )
    args = ap.parse_args(argv)
    if args.out is None:
        from benchmarks.records import device_slug, record_path

        name = environment()["device"] if not args.merge else json.load(open(args.merge[0]))["environment"]["device"]
        args.out = record_path("rimp2", device_slug(name))
    if args.merge:
        docs = [json.load(open(path)) for path in args.merge]
        doc = dict(
            docs[0],
            results=[r for d in docs for r in d["results"]],
            precisions=list(dict.fromkeys(p for d in docs for p in d["precisions"])),
            parts=[
                {
                    "file": os.path.basename(path),
                    "environment": d["environment"],
                    "molecules": [f"{r['molecule']}/{r.get('basis', '')}" for r in d["results"]],
                    "cpu_max_atoms": d["cpu_max_atoms"],
                }
                for path, d in zip(args.merge, docs)
            ],
        )
        doc["cpu_max_atoms"] = max(d["cpu_max_atoms"] for d in docs)
        with open(args.out + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(doc))
        return 0
    doc = {
        "benchmark": "rimp2",
        "basis": args.basis,
        "tz_basis": args.tz_basis,
        "precisions": args.precisions,
        "frozen_core": args.frozen_core,
        "cpu_max_atoms": args.cpu_max_atoms,
        "scf_conv_tol": args.scf_conv_tol,
        "environment": environment(),
        "results": [],
    }

    def log(msg):
        print(msg, flush=True)

    def write():
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(doc))

    state = {}
    if args.gpu4pyscf != "off":
        ok, why = gpu4pyscf_available()
        state["gpu4pyscf"] = ok
        doc["gpu4pyscf_status"] = "installed" if ok else f"not importable ({why})"
        if args.gpu4pyscf == "on" and not ok:
            log(f"GPU4PySCF asked for but {doc['gpu4pyscf_status']}")
    doc["gemm_rates"] = gemm_rates()
    log(f"{doc['environment']['device']}: {doc['gemm_rates']}; GPU4PySCF {doc.get('gpu4pyscf_status', 'off')}")
    if args.warm_up:
        doc["warm_up_s"] = warm_up(log)
    write()
    jobs = [tuple(m.split("@", 1)) if "@" in m else (m, args.basis) for m in args.molecules] + [
        (m, args.tz_basis) for m in args.tz_molecules
    ]
    for name, basis in jobs:
        rec = {"molecule": name, "basis": basis}
        doc["results"].append(rec)
        try:
            run_molecule(name, basis, args, log, rec, write, state)
        except Exception as exc:  # record and go on with the next molecule
            rec["error"] = f"{type(exc).__name__}: {exc}"
            log(f"{name}/{basis}: failed: {type(exc).__name__}: {exc}")
        write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
