"""Orbital-lattice benchmark (GPU part): C60 RHF/6-31G* (cartesian d, 900 functions), HOMO on
the VMD paper's 172 x 173 x 169 lattice at 0.075 Angstrom (the same points as
benchmarks/orbitals.py, the CPU part).

Run on a CUDA machine:
    python benchmarks/orbitals_gpu.py --orbitals scf            # RHF on the GPU first
    python benchmarks/orbitals_gpu.py --orbitals c60_rhf.npz    # orbitals saved by a run
    python benchmarks/orbitals_gpu.py --orbitals random         # timing only

Measured: GPU compute time of the HOMO on the whole lattice (screening + orbital kernel,
CUDA events, warm, median of --repeat runs) for FP64 and FP32, general and JIT kernels;
the first call of each (NVRTC compile or disk cache); the total time of
``evaluate_orbitals(device='gpu')`` (upload, kernels, copy to the host) plus the cube file
written to disk; the total density (AO values per slab + GEMM) when real orbitals are
given.  Accuracy: general vs JIT, FP32 vs FP64, and a sub-lattice sample saved for a CPU
comparison (benchmarks/orbitals.py --compare-gpu).  Writes orbitals_gpu_<device>.json and .md into
--out (default benchmarks/results).
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hartree  # noqa: E402
from benchmarks.molecules import molecule_path  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.constants import BOHR_IN_ANGSTROM  # noqa: E402
from hartree.grid import Lattice, evaluate_density, evaluate_orbitals, gpu  # noqa: E402
from hartree.io.cube import make_cube, write_cube  # noqa: E402
from hartree.molecule import Molecule  # noqa: E402

SHAPE = (172, 173, 169)
SPACING_ANGSTROM = 0.075
SAMPLE = 8  # every 8th point along each axis is saved for the CPU comparison
#: orbitals kept from the SCF (occupied and a few virtual), enough for HOMO/LUMO and the density
KEEP_ORBITALS = 200


def c60_lattice(mol):
    """The CPU benchmark's lattice: PySCF cubegen's box (one margin on all axes, chosen so that
    the x spacing is 0.075 Angstrom), 172 x 173 x 169 points."""
    coords = np.asarray(mol.coords)
    extent = coords.max(axis=0) - coords.min(axis=0)
    step = SPACING_ANGSTROM / BOHR_IN_ANGSTROM
    margin = 0.5 * ((SHAPE[0] - 1) * step - extent[0])
    box = extent + 2 * margin
    return Lattice(origin=coords.min(axis=0) - margin, axes=np.diag(box / (np.array(SHAPE) - 1)), shape=SHAPE)


def run_scf(mol, path):
    """RHF/6-31G* (cartesian) on the GPU; saves the orbitals to ``path`` (npz); returns a record."""
    from hartree.scf import run

    t0 = time.perf_counter()
    result = run(mol, "6-31g*", cartesian=True, device="gpu")
    wall = time.perf_counter() - t0
    keep = min(KEEP_ORBITALS, result.mo_coeff.shape[1])
    np.savez(
        path,
        mo_coeff=result.mo_coeff[:, :keep],
        mo_energy=result.mo_energy,
        mo_occ=result.mo_occ,
        energy=result.energy,
        iterations=result.iterations,
        wall=wall,
    )
    return {
        "energy_hartree": float(result.energy),
        "converged": bool(result.converged),
        "iterations": int(result.iterations),
        "wall_seconds": wall,
        "device": result.device,
        "notes": list(getattr(result, "notes", [])),
    }


def event_median(cupy, function, repeat):
    """(median, min) GPU milliseconds of function() between two CUDA events, after one warm-up."""
    function()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return float(np.median(times)), float(np.min(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orbitals", default="random", help="scf, random, or an npz saved by --orbitals scf")
    parser.add_argument("--save-orbitals", default="c60_rhf.npz", help="where --orbitals scf saves them")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--scratch", default="/tmp", help="folder for the cube files written")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-density", action="store_true")
    parser.add_argument("--scaling", action="store_true", help="also time molecules of growing size")
    parser.add_argument(
        "--ppt",
        default="2",
        help="points per thread to time, comma separated (1, 2, 4); the first is used for the accuracy figures",
    )
    args = parser.parse_args()
    import cupy

    from benchmarks.records import gpu_slug

    stem = f"orbitals_gpu_{gpu_slug()}"  # one record per device

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    mol = Molecule.from_xyz(molecule_path("C60"))
    basis = load_basis(mol, "6-31g*", cartesian=True)
    assert basis.nao == 900, basis.nao
    lattice = c60_lattice(mol)
    record = {
        "case": "C60 RHF/6-31G* (cartesian, 900 functions), HOMO, 172x173x169 lattice",
        "lattice": {
            "shape": list(SHAPE),
            "points": lattice.npoints,
            "spacing_angstrom": [round(float(s), 6) for s in np.diag(lattice.axes) * BOHR_IN_ANGSTROM],
        },
        "device": gpu.device_text(),
        "anchors": {
            "vmd_gtx480_fp32_jit_seconds": 0.135,
            "gpu4pyscf_1.9.0_eval_ao_gemv_fp64_seconds_h100_other_machine": 0.296,
        },
        "versions": {
            "hartree": hartree.__version__,
            "numpy": np.__version__,
            "cupy": cupy.__version__,
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "driver": cupy.cuda.runtime.driverGetVersion(),
            "python": platform.python_version(),
        },
    }

    def save():
        (out_dir / f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n")

    mo_occ = mo_coeff = None
    if args.orbitals == "scf":
        record["scf"] = run_scf(mol, args.save_orbitals)
        args.orbitals = args.save_orbitals
        save()
    if args.orbitals == "random":
        rng = np.random.default_rng(0)
        coeff = rng.standard_normal(basis.nao)
        coeff /= np.linalg.norm(coeff)
        homo = None
        record["orbitals"] = "random unit vector (timing only: the work does not depend on the values)"
        nocc = mol.nelectron // 2  # random occupied set: times the density path only
        mo_coeff = rng.standard_normal((basis.nao, nocc)) / np.sqrt(basis.nao)
        mo_occ = np.full(nocc, 2.0)
    else:
        data = np.load(args.orbitals)
        mo_coeff, mo_occ = data["mo_coeff"], data["mo_occ"]
        homo = int(np.flatnonzero(mo_occ > 0)[-1])
        coeff = np.ascontiguousarray(mo_coeff[:, homo])
        record["orbitals"] = f"RHF orbitals from {os.path.basename(args.orbitals)} (E = {float(data['energy']):.8f} Eh)"
        record["homo_index_1based"] = homo + 1
        record["homo_energy_hartree"] = float(data["mo_energy"][homo])

    # GPU compute time, whole lattice in one slab, warm (compiled), CUDA events
    timings, values = {}, {}
    ppts = [int(p) for p in args.ppt.split(",")]
    for real, dtype in (("fp32", np.float32), ("fp64", np.float64)):
        for flavour in ("general", "jit"):
            for ppt in ppts:
                t0 = time.perf_counter()
                runner, slab, _ = gpu.make_runner(basis, coeff, lattice, dtype=dtype, kernel=flavour, ppt=ppt)
                buf = cupy.empty((1, lattice.npoints), dtype=dtype)
                runner.evaluate(slab, out=buf)
                cupy.cuda.Stream.null.synchronize()
                first = time.perf_counter() - t0
                median, best = event_median(cupy, lambda: runner.evaluate(slab, out=buf), args.repeat)
                key = f"{real}_{flavour}_ppt{ppt}"
                timings[key] = {"median_ms": median, "min_ms": best, "first_call_s_incl_compile": first}
                if ppt == ppts[0]:
                    values[(real, flavour)] = cupy.asnumpy(buf).reshape(SHAPE)
                print(key, timings[key], flush=True)
                record["gpu_compute"] = timings
                save()
    from hartree.device.backend import CudaBackend
    from hartree.grid import gpu_separable

    for real, dtype in (("fp32", np.float32), ("fp64", np.float64)):
        t0 = time.perf_counter()
        sep = gpu_separable.runner(CudaBackend(), basis, coeff, lattice, "float" if real == "fp32" else "double")
        buf = cupy.empty(SHAPE, dtype=dtype)
        sep.run(out=buf)
        cupy.cuda.Stream.null.synchronize()
        first = time.perf_counter() - t0
        median, best = event_median(cupy, lambda: sep.run(out=buf), args.repeat)
        timings[f"{real}_separable"] = {
            "median_ms": median,
            "min_ms": best,
            "first_call_s_incl_compile": first,
            "slabs": -(-SHAPE[0] // sep.planes),
            "rank_terms": sep.nterm,
        }
        values[(real, "separable")] = cupy.asnumpy(buf)
        print(real, "separable", timings[f"{real}_separable"], flush=True)
        save()
    if homo is not None and homo >= 4:
        # the five degenerate h_u HOMOs at once: one fused kernel shares every basis-function value
        block = np.ascontiguousarray(mo_coeff[:, homo - 4 : homo + 1])
        for real, dtype in (("fp32", np.float32), ("fp64", np.float64)):
            runner, slab, _ = gpu.make_runner(basis, block, lattice, dtype=dtype, kernel="jit")
            buf = cupy.empty((5, lattice.npoints), dtype=dtype)
            median, best = event_median(cupy, lambda: runner.evaluate(slab, out=buf), args.repeat)
            timings[f"{real}_jit_5_orbitals_fused"] = {
                "median_ms": median,
                "min_ms": best,
                "first_call_s_incl_compile": float("nan"),
            }
            print(real, "5 orbitals fused", median, flush=True)
        save()
    ref = values[("fp64", "jit")]
    scale = float(np.abs(ref).max())
    record["accuracy"] = {
        "max_abs_value": scale,
        "fp64_general_vs_jit_max_abs": float(np.abs(values[("fp64", "general")] - ref).max()),
        "fp32_jit_vs_fp64_max_abs_relative_to_max": float(np.abs(values[("fp32", "jit")] - ref).max()) / scale,
        "fp32_general_vs_fp64_max_abs_relative_to_max": float(np.abs(values[("fp32", "general")] - ref).max()) / scale,
        "fp64_separable_vs_jit_max_abs": float(np.abs(values[("fp64", "separable")] - ref).max()),
        "fp32_separable_vs_fp64_max_abs_relative_to_max": float(np.abs(values[("fp32", "separable")] - ref).max())
        / scale,
    }
    np.savez_compressed(
        out_dir / "orbitals_gpu_sample.npz",
        fp64=ref[::SAMPLE, ::SAMPLE, ::SAMPLE],
        fp32=values[("fp32", "jit")][::SAMPLE, ::SAMPLE, ::SAMPLE],
        coeff=coeff,
        sample=SAMPLE,
    )
    save()

    # end to end: evaluate_orbitals(device='gpu') (auto kernel) + cube file
    ends = {}
    small = Lattice(origin=lattice.origin, axes=lattice.axes, shape=(3, 4, 5))  # warms the cube writer
    write_cube(os.path.join(args.scratch, "warm.cube"), make_cube(mol, small, np.ones(small.shape)), overwrite=True)
    for real, dtype in (("fp64", np.float64), ("fp32", np.float32)):
        evaluate_orbitals(basis, coeff, lattice, dtype=dtype, device="gpu")  # warm
        t0 = time.perf_counter()
        psi = evaluate_orbitals(basis, coeff, lattice, dtype=dtype, device="gpu")[0]
        t_eval = time.perf_counter() - t0
        path = os.path.join(args.scratch, f"c60_homo_gpu_{real}.cube")
        t0 = time.perf_counter()
        write_cube(path, make_cube(mol, lattice, psi, orbitals=[(homo or 0) + 1]), overwrite=True)
        t_cube = time.perf_counter() - t0
        ends[real] = {
            "evaluate_orbitals_s": t_eval,
            "cube_write_s": t_cube,
            "total_s": t_eval + t_cube,
            "cube_bytes": os.path.getsize(path),
        }
        print(real, ends[real], flush=True)
    record["end_to_end"] = ends
    save()

    if mo_coeff is not None and not args.no_density:
        nocc = int(np.count_nonzero(mo_occ > 0))
        full_occ = np.zeros(mo_coeff.shape[1])
        full_occ[:nocc] = mo_occ[:nocc]
        dens = {}
        for real, dtype in (("fp64", np.float64), ("fp32", np.float32)):
            evaluate_density(basis, mo_coeff, full_occ, lattice, dtype=dtype, device="gpu")
            t0 = time.perf_counter()
            rho = evaluate_density(basis, mo_coeff, full_occ, lattice, dtype=dtype, device="gpu")
            dens[real] = {
                "seconds": time.perf_counter() - t0,
                "electrons_on_lattice": float(rho.sum(dtype=np.float64) * lattice.voxel_volume),
            }
            print(real, "density", dens[real], flush=True)
        record["density"] = dens
        save()
    (out_dir / f"{stem}.md").write_text(markdown(record))
    if args.scaling:
        record["scaling"] = scaling(cupy, args.repeat, save_hook=lambda rows: (record.update(scaling=rows), save()))
        save()
    (out_dir / f"{stem}.md").write_text(markdown(record))
    print(markdown(record))


SCALING_MOLECULES = ("020_Vitamin_C", "C60", "113_Taxol", "168_Valinomycin", "water_cluster_20")


def scaling(cupy, repeat, save_hook):
    """Direct kernels (JIT) on molecules of growing size: 6-31G* (cartesian), random orbital,
    lattice at 0.15 Angstrom with a 4 Angstrom margin; GPU ms per million points and the mean
    number of atoms listed per tile (what the screening leaves)."""
    rows = []
    for name in SCALING_MOLECULES:
        try:
            mol = Molecule.from_xyz(molecule_path(name))
        except FileNotFoundError:
            continue
        basis = load_basis(mol, "6-31g*", cartesian=True)
        from hartree.grid import lattice_around

        lattice = lattice_around(mol.coords, 0.15, 4.0)
        coeff = np.random.default_rng(1).standard_normal(basis.nao) / np.sqrt(basis.nao)
        row = {
            "molecule": name,
            "atoms": int(mol.natm),
            "nao": int(basis.nao),
            "points": lattice.npoints,
            "separable_terms_bound": int(gpu.separable_terms_bound(basis)),
        }
        for real, dtype in (("fp32", np.float32), ("fp64", np.float64)):
            runner, slab, _ = gpu.make_runner(basis, coeff, lattice, dtype=dtype, kernel="jit")
            buf = cupy.empty((1, lattice.npoints), dtype=dtype)
            median, _ = event_median(cupy, lambda: runner.evaluate(slab, out=buf), repeat)
            row[f"{real}_jit_ms"] = median
            row[f"{real}_jit_ms_per_million_points"] = median / lattice.npoints * 1e6
            if real == "fp64":
                row["mean_atoms_per_tile"] = float(runner.screen(slab)[1].mean())
        print(row, flush=True)
        rows.append(row)
        save_hook(rows)
    return rows


def markdown(r):
    g, a, e = r["gpu_compute"], r["accuracy"], r["end_to_end"]
    scf = r.get("scf")
    lines = [
        "# Orbital lattice benchmark (GPU)\n",
        f"{r['case']}; {r['lattice']['points']} points, spacings {r['lattice']['spacing_angstrom']} Angstrom.",
        f"Device: {r['device']}; versions {r['versions']}.",
        f"Orbitals: {r['orbitals']}.",
    ]
    if scf:
        lines.append(
            f"RHF on the GPU (hartree.scf.run, device='gpu'): E = {scf['energy_hartree']:.8f} Eh, "
            f"{scf['iterations']} cycles, {scf['wall_seconds']:.1f} s wall including kernel "
            "compilation and the CPU one-electron integrals."
        )
    lines += [
        "",
        "| HOMO on the lattice, GPU compute (direct: screening + orbital kernel; separable: B kernel "
        "+ GEMM per slab) | median (ms) | min (ms) "
        "| first call (s, incl. NVRTC) |",
        "|---|---|---|---|",
    ]
    for key, t in g.items():
        lines.append(
            f"| {key.replace('_', ', ')} | {t['median_ms']:.3f} | {t['min_ms']:.3f} | "
            f"{t['first_call_s_incl_compile']:.2f} |"
        )
    lines += [
        "",
        "| end to end (evaluate_orbitals on the GPU, values on the host, + cube file) | compute (s) "
        "| cube write (s) | total (s) |",
        "|---|---|---|---|",
    ]
    for key, t in e.items():
        lines.append(f"| {key} | {t['evaluate_orbitals_s']:.3f} | {t['cube_write_s']:.3f} | {t['total_s']:.3f} |")
    if "density" in r:
        lines += [
            "",
            "| total density (AO values per slab + GEMM) | seconds | electrons on the lattice |",
            "|---|---|---|",
        ]
        for key, t in r["density"].items():
            lines.append(f"| {key} | {t['seconds']:.3f} | {t['electrons_on_lattice']:.3f} |")
    if r.get("scaling"):
        lines += [
            "",
            "Direct JIT kernel vs molecule size (6-31G* cartesian, random orbital, lattice at 0.15 Angstrom, "
            "4 Angstrom margin): the screening keeps the atoms per tile bounded, so the time per point "
            "levels off instead of growing with the molecule.",
            "",
            "| molecule | atoms | functions | points | atoms per tile (mean) | FP32 ms | FP64 ms | "
            "FP64 ms per 10^6 points |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in r["scaling"]:
            lines.append(
                f"| {row['molecule']} | {row['atoms']} | {row['nao']} | {row['points']} | "
                f"{row['mean_atoms_per_tile']:.1f} | {row['fp32_jit_ms']:.3f} | {row['fp64_jit_ms']:.3f} | "
                f"{row['fp64_jit_ms_per_million_points']:.3f} |"
            )
    lines += [
        "",
        f"Accuracy: FP64 general vs JIT max |diff| {a['fp64_general_vs_jit_max_abs']:.1e}, separable vs "
        f"JIT {a['fp64_separable_vs_jit_max_abs']:.1e}; FP32 separable vs FP64 "
        f"{a['fp32_separable_vs_fp64_max_abs_relative_to_max']:.1e} of the largest value; FP32 vs FP64 "
        f"max |diff| {a['fp32_jit_vs_fp64_max_abs_relative_to_max']:.1e} (JIT) and "
        f"{a['fp32_general_vs_fp64_max_abs_relative_to_max']:.1e} (general) of the largest |value| "
        f"{a['max_abs_value']:.3f}.",
        "Compute times: CUDA events around the kernels (and cuBLAS GEMM) on the whole lattice, warm, "
        "median of the repeats. VMD record (2010): 135 ms on a GTX 480 (FP32, JIT kernel). Anchor "
        "measured on another machine (H100 80GB HBM3, ../shared/tools/README.md, not re-measured here: "
        "GPU4PySCF cannot be carried to this device): GPU4PySCF 1.9.0 numint.eval_ao + GEMV, same orbital "
        "and lattice, FP64: 296 ms.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
