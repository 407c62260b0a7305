"""GPU J/K benchmark: warm full-density J+K builds with hartree's generated Rys kernels.

    python benchmarks/gpu_jk.py [--molecules 020_Vitamin_C 057_Tamoxifen] [--basis 6-31g**]
                                [--density-dir DIR] [--repeat 5] [--out results/gpu_jk.json]

Molecules are read from tests/gpu/data/<name>.xyz.  The density is the converged RHF
density of a small RHF loop run here (core guess, DIIS, J/K from the GPU engine,
one-electron integrals from the CPU code; its energy and iterations are recorded as an
end-to-end check), or DIR/<name>_<basis>_dm.npz (key ``dm``) with --density-dir.  Times:
setup (pairs + Schwarz + kernel compile, cold and from the cache), then J+K, J only and
K only, each the median and minimum of `repeat` warm calls (device synchronised), plus a
per-class breakdown from CUDA events (serialised launches).  Writes JSON and Markdown.
The GPU4PySCF anchor (H100, GPU4PySCF 1.9.0, shared/tools/README.md) is quoted, not
re-measured, in this first version.
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

#: GPU4PySCF 1.9.0 on an H100 (get_j, get_k seconds), from shared/tools/README.md
ANCHOR = {("020_Vitamin_C", "6-31g**"): (0.076, 0.056),
          ("057_Tamoxifen", "6-31g**"): (0.136, 0.217),
          ("113_Taxol", "6-31g**"): (0.400, 1.155)}


def rhf(mol, basis, engine, max_cycle=60, e_tol=1e-10, g_tol=1e-7, ndiis=8):
    """Minimal closed-shell RHF (core guess + Pulay DIIS) with engine.jk.

    Returns (dm (nao, nao), energy in hartree, cycles, seconds, converged)."""
    from scipy.linalg import eigh
    from hartree.integrals.one_electron import kinetic, nuclear, overlap
    t0 = time.perf_counter()
    S = overlap(basis)
    H = kinetic(basis) + nuclear(basis, mol.numbers, mol.coords)
    nocc = mol.nelectron // 2
    enuc = mol.nuclear_repulsion()

    def density(F):
        _, C = eigh(F, S)
        return 2.0 * C[:, :nocc] @ C[:, :nocc].T

    dm, e_old, focks, errs = density(H), 0.0, [], []
    for cycle in range(1, max_cycle + 1):
        J, K = engine.jk(dm)
        F = H + J - 0.5 * K
        e = 0.5 * np.einsum("ij,ij", dm, H + F) + enuc            # E = ½ tr D(H+F) + E_nuc
        err = F @ dm @ S - S @ dm @ F                              # Pulay commutator
        if abs(e - e_old) < e_tol and np.abs(err).max() < g_tol:
            return dm, e, cycle, time.perf_counter() - t0, True
        e_old = e
        focks, errs = (focks + [F])[-ndiis:], (errs + [err])[-ndiis:]
        n = len(focks)
        B = -np.ones((n + 1, n + 1))
        B[n, n] = 0.0
        B[:n, :n] = [[np.einsum("ij,ij", a, b) for b in errs] for a in errs]
        rhs = np.zeros(n + 1)
        rhs[n] = -1.0
        c = np.linalg.lstsq(B, rhs, rcond=None)[0][:n]
        dm = density(sum(ci * Fi for ci, Fi in zip(c, focks)))
    return dm, e, max_cycle, time.perf_counter() - t0, False


def _density(name, basis, basis_name, density_dir):
    tag = basis_name.replace("*", "s").lower()
    path = os.path.join(density_dir or "", f"{name}_{tag}_dm.npz")
    if density_dir and os.path.exists(path):
        dm = np.load(path)["dm"]
        if dm.shape == (basis.nao, basis.nao):
            return dm
    return None


def _timed(fn, sync, repeat):
    out = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(out), "min_s": min(out), "all_s": out}


def bench_one(name, basis_name, density_dir, repeat, min_blocks_variant=0):
    import cupy
    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.gpu.compile import resource_report
    from hartree.molecule import Molecule

    mol = Molecule.from_xyz(os.path.join(ROOT, "tests", "gpu", "data", name + ".xyz"))
    basis = load_basis(mol, basis_name)
    sync = cupy.cuda.get_current_stream().synchronize
    eng = GPUEngine(mol, basis)
    t0 = time.perf_counter()
    eng.prepare(with_j=True, with_k=True)
    t_setup = time.perf_counter() - t0
    b = eng._jk_builder()
    eng.prepare(with_j=True, with_k=False)
    eng.prepare(with_j=False, with_k=True)
    t_setup_all = time.perf_counter() - t0
    dm_scf, e_scf, cycles, t_scf, conv = rhf(mol, basis, eng)
    dm = _density(name, basis, basis_name, density_dir)
    dm_kind = "converged RHF (this run)" if dm is None else "from --density-dir"
    dm = dm_scf if dm is None else dm
    dm_gpu = cupy.asarray(dm)
    eng.jk(dm_gpu)                                               # warm-up
    res = {
        "molecule": name, "basis": basis_name, "nao": basis.nao, "ncart": basis.ncart,
        "nshell": basis.nshell, "natm": mol.natm, "density": dm_kind,
        "rhf": {"energy": e_scf, "cycles": cycles, "wall_s": t_scf, "converged": conv,
                "note": "core guess + DIIS, J/K on the GPU, 1e integrals on the CPU "
                        "(numba compile included)"},
        "npairs": {f"{k[0]}{k[1]}": v["npair"] for k, v in b.pairs.items()},
        "setup_s": t_setup, "setup_all_flags_s": t_setup_all,
        "jk": _timed(lambda: eng.jk(dm_gpu), sync, repeat),
        "j_only": _timed(lambda: eng.jk(dm_gpu, with_k=False), sync, repeat),
        "k_only": _timed(lambda: eng.jk(dm_gpu, with_j=False), sync, repeat),
    }
    b.nstreams = 1
    res["jk_one_stream"] = _timed(lambda: eng.jk(dm_gpu), sync, repeat)
    b.nstreams = 8
    b.profile = {}
    eng.jk(dm_gpu)
    res["per_class_s"] = dict(sorted(b.profile.items(), key=lambda kv: -kv[1]))
    b.profile = None
    res["kernels"] = {}
    for (cls, wj, wk), mod in sorted(b._modules.items()):
        if wj and wk:
            res["kernels"].update(resource_report(mod.module, [f"jk_{''.join(map(str, cls))}"]))
    anchor = ANCHOR.get((name, basis_name.lower()))
    if anchor:
        res["anchor_gpu4pyscf_h100"] = {"get_j_s": anchor[0], "get_k_s": anchor[1],
                                        "sum_s": anchor[0] + anchor[1],
                                        "source": "shared/tools/README.md (not re-measured)"}
    # J/K sanity: energy-like traces
    if min_blocks_variant:
        from hartree.gpu import codegen
        saved = codegen.MIN_BLOCKS
        codegen.MIN_BLOCKS = min_blocks_variant
        try:
            eng2 = GPUEngine(mol, basis)
            t1 = time.perf_counter()
            eng2.prepare()
            t_compile = time.perf_counter() - t1
            eng2.jk(dm_gpu)
            res[f"jk_min_blocks_{min_blocks_variant}"] = dict(
                _timed(lambda: eng2.jk(dm_gpu), sync, repeat), setup_s=t_compile)
            b2 = eng2._jk_builder()
            b2.profile = {}
            eng2.jk(dm_gpu)
            res[f"per_class_min_blocks_{min_blocks_variant}_s"] = b2.profile
        finally:
            codegen.MIN_BLOCKS = saved
    J, K = eng.jk(dm)
    res["tr_DJ"] = float(np.einsum("ij,ij", dm, J))
    res["tr_DK"] = float(np.einsum("ij,ij", dm, K))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--molecules", nargs="+", default=["020_Vitamin_C", "057_Tamoxifen"])
    ap.add_argument("--basis", default="6-31g**")
    ap.add_argument("--density-dir", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--min-blocks-variant", type=int, default=0,
                    help="also time kernels built with __launch_bounds__(256, N)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "gpu_jk.json"))
    args = ap.parse_args(argv)
    import cupy
    from hartree.gpu.codegen import GENERATOR_VERSION
    from hartree.gpu.pairs import PRIM_CUTOFF
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    meta = {"device": name, "cupy": cupy.__version__, "python": platform.python_version(),
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "driver": cupy.cuda.runtime.driverGetVersion(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "screening_threshold": 1e-13, "generator_version": GENERATOR_VERSION,
            "prim_cutoff": PRIM_CUTOFF}
    results = []
    for mol in args.molecules:
        r = bench_one(mol, args.basis, args.density_dir, args.repeat, args.min_blocks_variant)
        results.append(r)
        a = r.get("anchor_gpu4pyscf_h100", {})
        print(f"{mol:16s} RHF E = {r['rhf']['energy']:.10f} ({r['rhf']['cycles']} cycles, "
              f"{r['rhf']['wall_s']:.1f} s, converged {r['rhf']['converged']})")
        mb = args.min_blocks_variant
        variant = (f"  (min_blocks {mb}: J+K {r[f'jk_min_blocks_{mb}']['median_s']:.4f})"
                   if mb else "")
        print(f"{mol:16s} nao={r['nao']:5d} setup {r['setup_s']:.2f} s  J+K {r['jk']['median_s']:.4f} s"
              f"  J {r['j_only']['median_s']:.4f}  K {r['k_only']['median_s']:.4f}"
              f"  (1 stream: J+K {r['jk_one_stream']['median_s']:.4f}){variant}"
              f"  (GPU4PySCF anchor J {a.get('get_j_s')} K {a.get('get_k_s')})", flush=True)
    out = {"meta": meta, "results": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    md = [f"# GPU J/K ({name}, cupy {cupy.__version__}, {meta['date']})", "",
          "| molecule | basis | nao | J+K (s) | J (s) | K (s) | GPU4PySCF J + K (s, quoted) |",
          "|---|---|---|---|---|---|---|"]
    for r in results:
        a = r.get("anchor_gpu4pyscf_h100", {})
        md.append(f"| {r['molecule']} | {r['basis']} | {r['nao']} | {r['jk']['median_s']:.4f} | "
                  f"{r['j_only']['median_s']:.4f} | {r['k_only']['median_s']:.4f} | "
                  f"{a.get('get_j_s', '-')} + {a.get('get_k_s', '-')} |")
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    return out


if __name__ == "__main__":
    main()
