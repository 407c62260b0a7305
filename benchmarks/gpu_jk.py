"""GPU J/K and whole-SCF benchmark: hartree's generated Rys kernels, side by side with
GPU4PySCF measured in the same run.

    python benchmarks/gpu_jk.py [--molecules 020_Vitamin_C 057_Tamoxifen 113_Taxol]
                                [--basis 6-31g** [def2-tzvp ...]] [--repeat 3]
                                [--gpu4pyscf] [--profile] [--out results/gpu_jk_h100.json]
                                [--scf-max-nao N [--scf-cycles K]] [--jk-only]
                                [--skip MOL:BASIS ...] [--gpus 0,1]
                                [--density-dir DIR [--reuse-scf]] [--no-g4-scf] [--same-grad]
                                [--append] | --merge RUN.json ... --out OUT.json

Molecules are found by benchmarks/molecules.py (../shared/molecules, tests/gpu/data, or
$HARTREE_MOLECULES).  Per molecule and basis:

* setup: pair data, Schwarz factors and every kernel compiled (NVRTC cold, or disk cache);
* hartree SCF: ``hartree.scf.run(device='gpu', conv_tol=1e-9)`` with a fresh engine
  (kernels already compiled in this process, SAD atom cache emptied first), timed whole:
  one-electron integrals on the CPU, SAD guess, every cycle on the GPU, final analysis;
* J/K: with the converged RHF density of that SCF, warm J+K, J only and K only (J+K only
  with --jk-only, which also skips compiling the J-only/K-only kernels), median
  and minimum of ``repeat`` calls, device synchronised (above --scf-max-nao both SCFs are
  skipped and the SAD-guess density is used instead; the JSON says which);
* with --gpu4pyscf: the same molecule and the same basis data (a pyscf Mole built from our
  Basis, shell by shell, through tests/helpers.to_pyscf; same AO order), the same density,
  direct_scf_tol 1e-13: warm ``get_j``, ``get_k`` and ``get_jk`` (both in one call) of a
  GPU4PySCF RHF object, the max
  difference of its J/K from ours, and ``gpu4pyscf.scf.RHF(mol).kernel()`` with conv_tol
  1e-9 timed whole (its default MINAO guess).  Ratios are hartree / GPU4PySCF (< 1: hartree
  faster).  On the GPU machine GPU4PySCF comes from shared/tools/gpu4pyscf-wheels
  (``import g4stub`` first: its GPU libxc is not carried; RHF does not need it).

A case too long for one device call can be split: a first call with --density-dir DIR
runs hartree's SCF and saves its density and SCF record; a later call on the same machine
with --density-dir DIR --reuse-scf --gpu4pyscf takes them (the JSON says so) and measures
the J/K of both codes on that density and GPU4PySCF's SCF.  --gpus 0,1 runs hartree's SCF
and J/K on several GPUs.  GPU4PySCF always uses every GPU visible to the process (its own
default, fixed when it is imported), so on a machine of several GPUs give hartree the same
number with --gpus, or restrict both with CUDA_VISIBLE_DEVICES; each row names both counts
where either is above one.

The device's FP64 DGEMM rate (cupy.matmul, 8192^3, warm) is measured in the same run.
Writes JSON (after every molecule, so a run cut short keeps what it measured) and Markdown.
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
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.gpu_jk_report import markdown, merge_runs, summary_line  # noqa: E402
from benchmarks.molecules import molecule_path  # noqa: E402
from benchmarks.records import gpu_slug, record_path  # noqa: E402
from tests.helpers import to_pyscf  # noqa: E402  (same basis data, shell by shell)

SCF_CONV_TOL = 1e-9
#: hartree's default gradient criterion: ||X^T (F D S - S D F) X||_F (hartree.scf.SCFOptions)
SCF_CONV_TOL_GRAD = 1e-5
#: the same criterion in PySCF's measure: for RHF its norm_gorb = ||2 F_vo||_F, while the
#: commutator holds F_vo twice with D = 2 C_occ C_occ^T, so ||comm||_F = sqrt(2) norm_gorb
G4_CONV_TOL_GRAD = SCF_CONV_TOL_GRAD / 2**0.5
DIRECT_SCF_TOL = 1e-13


def _timed(fn, sync, repeat):
    out = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(out), "min_s": min(out), "all_s": out}


def warm_up(basis_name):
    """numba compile of the one-electron integrals (CPU) and a first GPU SCF, on water."""
    from hartree.molecule import Molecule
    from hartree.scf import run

    water = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    t0 = time.perf_counter()
    run(water, basis_name, device="gpu", conv_tol=SCF_CONV_TOL)
    return time.perf_counter() - t0


def sad_density(mol, basis):
    """The SAD-guess total density (nao, nao) of hartree's GPU SCF, numpy."""
    from hartree.gpu import GPUEngine
    from hartree.scf import guess as scf_guess

    return scf_guess.sad_density(mol, basis, GPUEngine(mol, basis, DIRECT_SCF_TOL), DIRECT_SCF_TOL)


def dgemm_rate(n=8192, repeat=5):
    """Measured FP64 matmul rate of the device, FLOP/s (2 n^3 per product, warm median)."""
    import cupy

    rng = cupy.random.default_rng(1)
    a, b = rng.random((n, n)), rng.random((n, n))
    a @ b
    cupy.cuda.get_current_stream().synchronize()
    t = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        a @ b
        end.record()
        end.synchronize()
        t.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return 2.0 * n**3 / statistics.median(t)


def _scf_record(scf, wall_s):
    """JSON-ready summary of a hartree SCFResult timed whole (wall_s)."""
    return {
        "energy": float(scf.energy),
        "cycles": scf.iterations,
        "wall_s": wall_s,
        "converged": bool(scf.converged),
        "device": scf.device,
        "timings": dict(scf.timings),
        "times": [h.time for h in scf.history],
        "steps": [h.step for h in scf.history],
        "note": "hartree.scf.run(device='gpu'): SAD guess, J/K + Fock + DIIS + eigh on the GPU",
    }


def _saved_paths(density_dir, mol_name, basis_name):
    stem = os.path.join(density_dir, f"{mol_name}__{basis_name.replace('*', 's')}")
    return stem + ".npy", stem + ".json"


def hartree_side(
    mol,
    basis,
    repeat,
    profile,
    run_scf=True,
    jk_only=False,
    scf_cycles=None,
    gpus=None,
    density_dir=None,
    reuse_scf=False,
    name="",
):
    import cupy

    from hartree.device.compile import resource_report
    from hartree.gpu import GPUEngine
    from hartree.scf import guess as scf_guess
    from hartree.scf import run

    sync = cupy.cuda.get_current_stream().synchronize
    eng = GPUEngine(mol, basis, screening_threshold=DIRECT_SCF_TOL, devices=gpus)
    t0 = time.perf_counter()
    eng.prepare(with_j=True, with_k=True)
    t_setup = time.perf_counter() - t0
    if not jk_only:
        eng.prepare(with_j=True, with_k=False)
        eng.prepare(with_j=False, with_k=True)
    t_setup_all = time.perf_counter() - t0
    b = eng._jk_builder()
    multi = getattr(b, "builders", None)  # several GPUs: MultiJK
    b0 = multi[0] if multi else b

    res = {
        "setup_s": t_setup,
        "setup_all_flags_s": t_setup_all,
        "gpus": eng.ndevices,
        "npairs": {f"{k[0]}{k[1]}": v.npair for k, v in b0.pairs.items()},
    }
    saved = _saved_paths(density_dir, name, basis.name) if density_dir else None
    if run_scf and reuse_scf and saved and os.path.exists(saved[0]):
        dm = np.load(saved[0])
        res["scf"] = dict(json.load(open(saved[1])), from_earlier_call=True)
        res["density"] = (
            "converged RHF density of hartree's GPU SCF (an earlier call on the same machine; SCF time from there)"
        )
    elif run_scf:
        scf_guess._SAD_CACHE.clear()  # atoms' SCF counts as part of the SCF
        sync()
        t0 = time.perf_counter()
        scf = run(mol, basis, "rhf", device="gpu", conv_tol=SCF_CONV_TOL, screening_threshold=DIRECT_SCF_TOL, gpus=gpus)
        sync()
        t_scf = time.perf_counter() - t0
        dm = np.asarray(scf.density[0])
        res["scf"] = _scf_record(scf, t_scf)
        res["density"] = "converged RHF density of hartree's GPU SCF (this run)"
        if saved:
            os.makedirs(density_dir, exist_ok=True)
            np.save(saved[0], dm)
            json.dump(res["scf"], open(saved[1], "w"))
    elif scf_cycles:
        sync()
        t0 = time.perf_counter()
        scf = run(
            mol,
            basis,
            "rhf",
            device="gpu",
            conv_tol=SCF_CONV_TOL,
            screening_threshold=DIRECT_SCF_TOL,
            max_cycle=scf_cycles,
            allow_unconverged=True,
            gpus=gpus,
        )
        sync()
        dm = np.asarray(scf.density[0])
        res["partial_scf"] = {
            "cycles": scf.iterations,
            "wall_s": time.perf_counter() - t0,
            "energy": scf.energy,
            "converged": scf.converged,
            "times": [h.time for h in scf.history],
            "steps": [h.step for h in scf.history],
        }
        res["density"] = (
            f"RHF density after {scf.iterations} cycles of hartree's GPU SCF (whole SCFs skipped above --scf-max-nao)"
        )
    else:
        dm = sad_density(mol, basis)
        res["density"] = "SAD-guess density (SCFs skipped above --scf-max-nao)"
    dm_gpu = cupy.asarray(dm)
    eng.jk(dm_gpu)  # warm-up
    res["jk"] = _timed(lambda: eng.jk(dm_gpu), sync, repeat)
    res["quartet_lists"] = b0.last_lists
    if multi:
        res["items_per_gpu"] = {str(k): v for k, v in b.last_split.items()}
    if not jk_only:
        res["j_only"] = _timed(lambda: eng.jk(dm_gpu, with_k=False), sync, repeat)
        res["k_only"] = _timed(lambda: eng.jk(dm_gpu, with_j=False), sync, repeat)
    if profile and not multi:
        b.profile, b.stats = {}, {}
        eng.jk(dm_gpu)
        res["per_class_s"] = dict(sorted(b.profile.items(), key=lambda kv: -kv[1]))
        res["per_class_lists"] = {k: dict(v) for k, v in b.stats.items()}
        b.profile, b.stats = None, {}
        res["kernels"] = {}
        for (cls, wj, wk), mod in sorted(b._modules.items()):
            if wj and wk:
                res["kernels"].update(resource_report(mod.module, [f"jk_{''.join(map(str, cls))}"]))
    J, K = eng.jk(dm_gpu)
    return res, dm, J.get(), K.get()


def gpu4pyscf_side(mol, basis, dm, J, K, repeat, run_scf=True, same_grad=False):
    """GPU4PySCF's warm get_j/get_k on our density and its whole RHF, same basis data."""
    try:
        import g4stub  # noqa: F401  (stands in for GPU libxc; see module docstring)
    except ImportError:
        pass
    import cupy
    import gpu4pyscf
    import pyscf
    from gpu4pyscf import scf as gscf

    sync = cupy.cuda.get_current_stream().synchronize
    pmol = to_pyscf(mol, basis)
    assert pmol.nao == basis.nao, (pmol.nao, basis.nao)
    mf = gscf.RHF(pmol)
    mf.direct_scf_tol = DIRECT_SCF_TOL
    dm_gpu = cupy.asarray(dm)
    sync()
    t0 = time.perf_counter()
    vj = mf.get_j(pmol, dm_gpu, hermi=1)
    vk = mf.get_k(pmol, dm_gpu, hermi=1)
    sync()
    t_first = time.perf_counter() - t0
    from gpu4pyscf.__config__ import num_devices  # the GPUs its J/K spreads over

    out = {
        "versions": {"gpu4pyscf": gpu4pyscf.__version__, "pyscf": pyscf.__version__},
        "gpus": int(num_devices),
        "first_get_j_plus_get_k_s": t_first,
        "get_j": _timed(lambda: mf.get_j(pmol, dm_gpu, hermi=1), sync, repeat),
        "get_k": _timed(lambda: mf.get_k(pmol, dm_gpu, hermi=1), sync, repeat),
        "get_jk": _timed(lambda: mf.get_jk(pmol, dm_gpu, hermi=1), sync, repeat),
        "max_abs_diff_J": float(np.abs(cupy.asnumpy(vj) - J).max()),
        "max_abs_diff_K": float(np.abs(cupy.asnumpy(vk) - K).max()),
        "max_abs_J": float(np.abs(J).max()),
        "max_abs_K": float(np.abs(K).max()),
    }
    if not run_scf:
        return out
    print("GPU4PySCF J/K (before its SCF):", json.dumps(out), flush=True)  # kept if cut
    mf2 = gscf.RHF(pmol)
    mf2.conv_tol = SCF_CONV_TOL
    if same_grad:
        mf2.conv_tol_grad = G4_CONV_TOL_GRAD
    mf2.direct_scf_tol = DIRECT_SCF_TOL
    sync()
    t0 = time.perf_counter()
    e = float(mf2.kernel())
    sync()
    out["scf"] = {
        "energy": e,
        "wall_s": time.perf_counter() - t0,
        "cycles": getattr(mf2, "cycles", None),
        "converged": bool(mf2.converged),
        "conv_tol_grad": float(mf2.conv_tol_grad) if mf2.conv_tol_grad else None,
        "note": "gpu4pyscf.scf.RHF(mol).kernel(), conv_tol 1e-9, MINAO guess"
        + (", conv_tol_grad as hartree's" if same_grad else ", its default conv_tol_grad (sqrt(conv_tol))"),
    }
    return out


def bench_one(
    name,
    basis_name,
    repeat,
    with_g4,
    profile,
    scf_max_nao=None,
    jk_only=False,
    scf_cycles=None,
    gpus=None,
    density_dir=None,
    reuse_scf=False,
    g4_scf=True,
    same_grad=False,
):
    from hartree.basis import load_basis
    from hartree.molecule import Molecule

    mol = Molecule.from_xyz(str(molecule_path(name)))
    basis = load_basis(mol, basis_name)
    res = {
        "molecule": name,
        "basis": basis_name,
        "nao": basis.nao,
        "ncart": basis.ncart,
        "nshell": basis.nshell,
        "natm": mol.natm,
        "max_l": basis.max_l,
    }
    run_scf = scf_max_nao is None or basis.nao <= scf_max_nao
    ours, dm, J, K = hartree_side(
        mol,
        basis,
        repeat,
        profile,
        run_scf,
        jk_only,
        None if run_scf else scf_cycles,
        gpus,
        density_dir,
        reuse_scf,
        name,
    )
    res.update(ours)
    res["tr_DJ"] = float(np.einsum("ij,ij", dm, J))
    res["tr_DK"] = float(np.einsum("ij,ij", dm, K))
    if with_g4:
        g4 = gpu4pyscf_side(mol, basis, dm, J, K, repeat, run_scf and g4_scf, same_grad)
        res["gpu4pyscf"] = g4
        ratio = {
            "J+K": ours["jk"]["median_s"] / g4["get_jk"]["median_s"],
            "J+K vs get_j+get_k": ours["jk"]["median_s"] / (g4["get_j"]["median_s"] + g4["get_k"]["median_s"]),
        }
        if "j_only" in ours:
            ratio["J"] = ours["j_only"]["median_s"] / g4["get_j"]["median_s"]
            ratio["K"] = ours["k_only"]["median_s"] / g4["get_k"]["median_s"]
        if "scf" in g4 and "scf" in ours:
            ratio["SCF"] = ours["scf"]["wall_s"] / g4["scf"]["wall_s"]
            res["energy_diff_hartree_minus_gpu4pyscf"] = ours["scf"]["energy"] - g4["scf"]["energy"]
        res["ratio_hartree_over_gpu4pyscf"] = ratio
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecules", nargs="+", default=["020_Vitamin_C", "057_Tamoxifen", "113_Taxol"])
    ap.add_argument("--basis", nargs="+", default=["6-31g**"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu4pyscf", action="store_true", help="measure GPU4PySCF's get_j/get_k and RHF in the same run")
    ap.add_argument(
        "--profile", action="store_true", help="per-class kernel times (CUDA events, serialised) and registers"
    )
    ap.add_argument(
        "--scf-max-nao", type=int, default=None, help="skip both SCFs above this many AOs (J/K then on the SAD density)"
    )
    ap.add_argument(
        "--scf-cycles",
        type=int,
        default=None,
        help="above --scf-max-nao: J/K on the density after this many cycles of "
        "hartree's GPU SCF (a realistic density) instead of the SAD guess",
    )
    ap.add_argument(
        "--jk-only",
        action="store_true",
        help="time hartree's J+K build only (no J-only / K-only kernels: a third "
        "of the compile time); GPU4PySCF's get_j/get_k are still timed",
    )
    ap.add_argument(
        "--skip", nargs="*", default=[], help="MOLECULE:BASIS cases to leave out (e.g. 168_Valinomycin:def2-tzvp)"
    )
    ap.add_argument(
        "--append",
        action="store_true",
        help="add to the results already in --out (one table over several runs of one machine)",
    )
    ap.add_argument(
        "--gpus",
        default="0",
        help="hartree on these GPUs (default 0; e.g. 0,1); GPU4PySCF uses every visible GPU (CUDA_VISIBLE_DEVICES)",
    )
    ap.add_argument("--density-dir", default=None, help="save hartree's converged densities and SCF records there")
    ap.add_argument(
        "--reuse-scf",
        action="store_true",
        help="with --density-dir: take a saved density and SCF record instead of "
        "running hartree's SCF again (a case split over two calls)",
    )
    ap.add_argument(
        "--same-grad",
        action="store_true",
        help="give GPU4PySCF's SCF hartree's gradient criterion (default: its own, "
        "sqrt(conv_tol) = 3.2e-5 in its norm, 4.5x looser than hartree's 1e-5)",
    )
    ap.add_argument("--no-g4-scf", action="store_true", help="with --gpu4pyscf: time its J/K only, not its whole SCF")
    ap.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="JSON",
        help="no measurement: join the results of these runs (calls of one machine "
        "in one session) into --out and its Markdown table",
    )
    ap.add_argument(
        "--out", default=None, help="record to write (default: results/gpu_jk_<device>.json, e.g. gpu_jk_h100.json)"
    )
    args = ap.parse_args(argv)
    if args.merge:
        if args.out is None:
            ap.error("--merge needs --out")
        return merge_runs(args.merge, args.out)
    if args.out is None:
        args.out = record_path("gpu_jk", gpu_slug(len(args.gpus.split(",")))) + ".json"
    import cupy

    from hartree.gpu import jk_kernels
    from hartree.gpu.codegen import GENERATOR_VERSION
    from hartree.gpu.pairs import PRIM_CUTOFF
    from hartree.gpu.tuning import jk_tuning

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    meta = {
        "device": name,
        "cupy": cupy.__version__,
        "python": platform.python_version(),
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "screening_threshold": DIRECT_SCF_TOL,
        "scf_conv_tol": SCF_CONV_TOL,
        "generator_version": GENERATOR_VERSION,
        "prim_cutoff": PRIM_CUTOFF,
        "repeat": args.repeat,
        "visible_gpus": cupy.cuda.runtime.getDeviceCount(),
        "kernel_options": {
            "warp_runs_max_size": jk_kernels.WARP_RUNS_MAX_SIZE,
            "jk_tuning": jk_tuning(name).entry,
        },
        "dgemm_fp64_flops": dgemm_rate(),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    results, errors = [], []
    if args.append and os.path.exists(args.out):
        old = json.load(open(args.out))
        results, errors = old["results"], old.get("errors", [])
        meta["earlier_runs"] = old["meta"].get("earlier_runs", []) + [
            {k: v for k, v in old["meta"].items() if k != "earlier_runs"}
        ]
    for basis_name in args.basis:
        todo = [m for m in args.molecules if f"{m}:{basis_name}" not in args.skip]
        if not todo:
            continue
        meta.setdefault("warm_up_s", {})[basis_name] = warm_up(basis_name)
        for mol in todo:
            t0 = time.perf_counter()
            try:
                gpus = [int(g) for g in args.gpus.split(",")]
                r = bench_one(
                    mol,
                    basis_name,
                    args.repeat,
                    args.gpu4pyscf,
                    args.profile,
                    args.scf_max_nao,
                    args.jk_only,
                    args.scf_cycles,
                    gpus,
                    args.density_dir,
                    args.reuse_scf,
                    not args.no_g4_scf,
                    args.same_grad,
                )
            except Exception:  # keep going; the error is recorded
                import traceback

                traceback.print_exc()
                errors.append({"molecule": mol, "basis": basis_name, "error": traceback.format_exc()[-2000:]})
                continue
            r["bench_wall_s"] = time.perf_counter() - t0
            results.append(r)
            print(summary_line(r), flush=True)
            with open(args.out, "w") as f:
                json.dump({"meta": meta, "results": results, "errors": errors}, f, indent=1)
            with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
                f.write(markdown(meta, results))
    return {"meta": meta, "results": results, "errors": errors}


if __name__ == "__main__":
    main()
