"""GPU RHF gradient: hartree and GPU4PySCF side by side in one process, same basis data.

Run (on the GPU machine; GPU4PySCF from shared/tools/gpu4pyscf-wheels, ``import g4stub``):
    python benchmarks/gpu_gradient.py [--cases 020_Vitamin_C:6-31g**,...] [--gpu4pyscf] [--repeat 3]
                                      [--gpus 0,1]

Per case: hartree's RHF on the GPU (conv_tol 1e-10, commutator 1e-7, screening 1e-13), then
its analytic gradient (``hartree.gradients.scf_gradient`` on the GPU engine): the first call
(kernels compiled or read from the disk cache) and warm calls (median of ``--repeat``), with
the split into the one-electron part (host, numba) and the two-electron part (GPU kernels).
With --gpu4pyscf: GPU4PySCF's RHF on a pyscf Mole with our basis data (conv_tol 1e-10),
then ``mf.nuc_grad_method().kernel()`` timed the same way, and the largest difference between
the two gradients (Eh/bohr).  Writes benchmarks/results/gpu_gradient_<device>.json and .md.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hartree  # noqa: E402
from benchmarks.molecules import molecule_path  # noqa: E402
from benchmarks.records import gpu_slug, record_path  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.gradients import GRADIENT_SCF_DEFAULTS, scf_gradient  # noqa: E402
from hartree.gradients.scf_gradient import _densities, energy_weighted_density  # noqa: E402
from hartree.molecule import Molecule  # noqa: E402

CASES = "020_Vitamin_C:6-31g**,057_Tamoxifen:6-31g**,113_Taxol:6-31g**,168_Valinomycin:6-31g**,057_Tamoxifen:def2-tzvp"


def _sync():
    import cupy

    cupy.cuda.Device().synchronize()


def class_profile(mol, basis, d):
    """Seconds of the two-electron gradient per quartet class (classes run one at a time,
    after a warm-up call), largest first: {class name: s}."""
    from hartree.device.backend import CudaBackend
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK

    builder = DirectGradient(DirectJK(basis, CudaBackend(), 1e-13), basis.shell_atom)
    builder.gradient(d, d[None], 0.5, mol.natm)
    builder.profile = {}
    builder.gradient(d, d[None], 0.5, mol.natm)
    return dict(sorted(builder.profile.items(), key=lambda kv: -kv[1]))


def hartree_side(mol, basis, repeat, profile=False, gpus=None):
    from hartree.gpu import GPUEngine

    engine = GPUEngine(mol, basis, screening_threshold=1e-13, devices=gpus)
    t0 = time.perf_counter()
    res = hartree.scf.run(mol, basis, "rhf", engine=engine, max_cycle=100, **GRADIENT_SCF_DEFAULTS)
    t_scf = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = scf_gradient(res, engine)
    _sync()
    first = time.perf_counter() - t0
    warm, one, two = [], [], []
    da, db = _densities(res)
    d = da + db
    for _ in range(repeat):
        t0 = time.perf_counter()
        g = scf_gradient(res, engine)
        _sync()
        warm.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine.one_electron_gradient(d, energy_weighted_density(res, engine))
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine.two_electron_gradient(d, d[None], 0.5)
        _sync()
        two.append(time.perf_counter() - t0)
    out = {"profile": class_profile(mol, basis, d)} if profile else {}
    return out | {
        "scf_s": t_scf,
        "scf_cycles": res.iterations,
        "converged": bool(res.converged),
        "energy": res.energy,
        "gradient_first_s": first,
        "gradient_s": statistics.median(warm),
        "one_electron_s": statistics.median(one),
        "two_electron_s": statistics.median(two),
        "device": res.device,
        "gpus": engine.ndevices,
        "gradient": g.gradient,
    }


def gpu4pyscf_side(mol, basis, repeat):
    try:
        import g4stub  # noqa: F401  (stands in for GPU libxc; see module docstring)
    except ImportError:
        pass
    import gpu4pyscf
    from gpu4pyscf import scf as gscf

    from tests.helpers import to_pyscf

    mf = gscf.RHF(to_pyscf(mol, basis))
    mf.conv_tol = GRADIENT_SCF_DEFAULTS["conv_tol"]
    mf.direct_scf_tol = 1e-13
    mf.max_cycle = 100
    t0 = time.perf_counter()
    e = mf.kernel()
    t_scf = time.perf_counter() - t0
    grad = mf.nuc_grad_method()
    t0 = time.perf_counter()
    g = grad.kernel()
    _sync()
    first = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        g = grad.kernel()
        _sync()
        warm.append(time.perf_counter() - t0)
    g = g.get() if hasattr(g, "get") else np.asarray(g)
    return {
        "version": gpu4pyscf.__version__,
        "gpus": _visible_gpus(),
        "scf_s": t_scf,
        "converged": bool(mf.converged),
        "energy": float(e),
        "gradient_first_s": first,
        "gradient_s": statistics.median(warm),
        "gradient": g,
    }


def _visible_gpus():
    """GPUs the process sees (GPU4PySCF uses all of them)."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def table(rows, meta):
    lines = [
        f"# GPU RHF gradient: hartree vs GPU4PySCF ({meta['device']})",
        "",
        f"{meta['date']}; {meta['versions']}. RHF conv_tol {GRADIENT_SCF_DEFAULTS['conv_tol']:g} (hartree also "
        f"commutator {GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g}; GPU4PySCF its default sqrt(conv_tol)), screening "
        "1e-13, same basis data; gradient after a converged SCF, warm median of "
        f"{meta['repeat']} (first call separately: kernels compiled or loaded).",
        "",
        "| molecule | basis | nao | hartree gradient (s) | of which 1e | 2e | first call | "
        "GPU4PySCF gradient (s) | ratio | max abs diff (Eh/bohr) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, g = r["hartree"], r.get("gpu4pyscf")
        ratio = f"{h['gradient_s'] / g['gradient_s']:.2f}" if g else "-"
        lines.append(
            f"| {r['molecule']} | {r['basis']} | {r['nao']} | {h['gradient_s']:.3f} | {h['one_electron_s']:.3f} | "
            f"{h['two_electron_s']:.3f} | {h['gradient_first_s']:.2f} | "
            + (f"{g['gradient_s']:.3f} | {ratio} | {r['max_diff']:.1e} |" if g else "- | - | - |")
        )
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--gpu4pyscf", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also time the two-electron gradient per quartet class")
    ap.add_argument(
        "--gpus",
        default=None,
        help="hartree on these GPUs (e.g. 0,1; default: the current one); GPU4PySCF uses every visible GPU, "
        "so restrict both with CUDA_VISIBLE_DEVICES",
    )
    ap.add_argument("--out", default=None, help="record path without extension (default: results/gpu_gradient_<gpu>)")
    args = ap.parse_args()
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    import cupy

    rows = []
    for case in args.cases.split(","):
        name, basis_name = case.split(":")
        mol = Molecule.from_xyz(molecule_path(name + ".xyz"))
        basis = load_basis(mol, basis_name)
        row = {"molecule": name, "basis": basis_name, "natm": mol.natm, "nao": basis.nao}
        h = hartree_side(mol, basis, args.repeat, args.profile, gpus)
        if args.gpu4pyscf:
            g = gpu4pyscf_side(mol, basis, args.repeat)
            row["max_diff"] = float(np.abs(h["gradient"] - g.pop("gradient")).max())
            row["gpu4pyscf"] = g
        h.pop("gradient")
        row["hartree"] = h
        print(json.dumps(row), flush=True)
        rows.append(row)
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    versions = f"hartree {hartree.__version__}, cupy {cupy.__version__}"
    if args.gpu4pyscf and rows:
        versions += f", GPU4PySCF {rows[0]['gpu4pyscf']['version']}"
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "versions": versions,
        "repeat": args.repeat,
    }
    path = args.out or record_path("gpu_gradient", gpu_slug(len(gpus) if gpus else 1))
    Path(path + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    Path(path + ".md").write_text(table(rows, meta))
    print(table(rows, meta))


if __name__ == "__main__":
    main()
