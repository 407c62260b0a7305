"""Orbital-lattice benchmark (CPU part): C60 RHF/6-31G* (cartesian d, 900 functions), HOMO on
the VMD paper's 172 x 173 x 169 lattice at 0.075 Angstrom, hartree vs PySCF's cubegen.

Run:  python benchmarks/orbitals.py [--orbitals huckel|hcore|c60_rhf.npz] [--scratch /tmp]
      python benchmarks/orbitals.py --gpu-sample benchmarks/results/orbitals_gpu_sample.npz

Orbitals: an RHF of C60 is too slow on a small CPU (ours and PySCF's), so the benchmark
takes the RHF orbitals saved by the GPU benchmark (benchmarks/orbitals_gpu.py --orbitals
scf, an npz), or PySCF's Hueckel-guess orbitals (default) or the core-Hamiltonian ones;
the timings do not depend on the coefficient values (see c60_orbitals).
--gpu-sample only checks the GPU benchmark's saved sub-lattice values against PySCF.
PySCF gets exactly our basis data (tests/helpers.to_pyscf).

The lattice: PySCF's ``cubegen.orbital`` is called as users call it, with nx, ny, nz =
172, 173, 169 and the margin that makes the x spacing 0.075 Angstrom (cubegen's box has
one margin for all axes, so the y and z spacings differ slightly; both reported); our
Lattice is built from cubegen's box, so both evaluate the same points.

Measured in one run, same CPU: hartree compute time (separable path FP64 and FP32, and the
general AO-block path on a slab, extrapolated), hartree cube writing, PySCF's cubegen
compute loop and its cube writing (the two halves of cubegen.orbital).  Writes
benchmarks/results/orbitals_cpu.json and .md, and the C60 HOMO picture
benchmarks/results/c60_homo.png.
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

import numba  # noqa: E402

import hartree  # noqa: E402
from hartree.basis import load_basis  # noqa: E402
from hartree.constants import BOHR_IN_ANGSTROM  # noqa: E402
from hartree.grid import Lattice, evaluate_orbitals  # noqa: E402
from hartree.io.cube import make_cube, write_cube  # noqa: E402
from hartree.molecule import Molecule  # noqa: E402
from tests.helpers import to_pyscf  # noqa: E402

C60 = ROOT.parent / "shared" / "molecules" / "C60.xyz"
SHAPE = (172, 173, 169)
SPACING_ANGSTROM = 0.075
RESULTS = ROOT / "benchmarks" / "results"


def c60_orbitals(mol, basis, kind):
    """(mo_coeff, mo_occ, description) for C60: PySCF's Hueckel guess or the core Hamiltonian.

    A full RHF of C60/6-31G* takes too long on a small shared CPU (PySCF's density fitting
    even spills a 10 GB tensor to disk), and the lattice timings do not depend on the
    coefficient values.  The Hueckel orbitals (PySCF's initial guess: atomic RHF orbitals
    mixed by the generalised Wolfsberg-Helmholz rule) already have the right symmetry,
    so their HOMO shows the hu-type shape of the C60 HOMO.
    """
    pmol = to_pyscf(mol, basis)
    nocc = mol.nelectron // 2
    if str(kind).endswith(".npz"):
        data = np.load(kind)
        return (
            data["mo_coeff"],
            data["mo_occ"][: data["mo_coeff"].shape[1]],
            f"RHF/6-31G* orbitals from hartree's GPU SCF (E = {float(data['energy']):.8f} Eh, "
            f"{os.path.basename(kind)} saved by benchmarks/orbitals_gpu.py --orbitals scf)",
        )
    if kind == "hcore":
        import scipy.linalg

        e, c = scipy.linalg.eigh(pmol.intor("int1e_kin") + pmol.intor("int1e_nuc"), pmol.intor("int1e_ovlp"))
        note = "core-Hamiltonian orbitals (timing does not depend on the values)"
    else:
        from pyscf.scf import hf

        e, c = hf._init_guess_huckel_orbitals(pmol)
        note = "PySCF Hueckel-guess orbitals (timing does not depend on the values)"
    occ = np.zeros(len(e))
    occ[:nocc] = 2
    return c, occ, note


def best_of(n, function):
    """(best wall time of n calls, last value)."""
    best, value = np.inf, None
    for _ in range(n):
        t0 = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--orbitals",
        default="huckel",
        help="huckel, hcore, or an npz of RHF orbitals saved by benchmarks/orbitals_gpu.py "
        "(keys mo_coeff, mo_occ, energy)",
    )
    parser.add_argument(
        "--gpu-sample",
        default=None,
        help="only compare orbitals_gpu_sample.npz (from benchmarks/orbitals_gpu.py) with PySCF "
        "on its sub-lattice and add the result to the newest orbitals_gpu_<device>.json/.md beside it",
    )
    parser.add_argument("--scratch", default="/tmp", help="folder for the cube files written")
    parser.add_argument("--no-picture", action="store_true")
    args = parser.parse_args()

    from pyscf import lib as pyscf_lib
    from pyscf.tools import cubegen

    mol = Molecule.from_xyz(C60)
    basis = load_basis(mol, "6-31g*", cartesian=True)
    assert basis.nao == 900, basis.nao
    pmol = to_pyscf(mol, basis)
    mo_coeff, mo_occ, note = c60_orbitals(mol, basis, args.orbitals)
    homo = int(np.flatnonzero(mo_occ > 0)[-1])
    coeff = np.ascontiguousarray(mo_coeff[:, homo])

    extent_atoms = mol.coords.max(axis=0) - mol.coords.min(axis=0)
    step = SPACING_ANGSTROM / BOHR_IN_ANGSTROM
    margin = 0.5 * ((SHAPE[0] - 1) * step - extent_atoms[0])
    cube = cubegen.Cube(pmol, *SHAPE, margin=margin)
    lattice = Lattice(origin=cube.boxorig, axes=cube.box / (np.array(SHAPE) - 1)[:, None], shape=SHAPE)
    spacings = np.diag(lattice.axes) * BOHR_IN_ANGSTROM
    if args.gpu_sample:
        compare_gpu_sample(args.gpu_sample, pmol, lattice)
        return

    # hartree: warm-up on a small lattice compiles the numba kernels (cache=True)
    small = Lattice(origin=lattice.origin, axes=lattice.axes, shape=(4, 5, 6))
    evaluate_orbitals(basis, coeff, small, method="separable")
    evaluate_orbitals(basis, coeff, small, method="separable", dtype=np.float32)
    evaluate_orbitals(basis, coeff, small, method="ao")
    t_sep64, psi64 = best_of(3, lambda: evaluate_orbitals(basis, coeff, lattice, method="separable")[0])
    t_sep32, psi32 = best_of(
        3, lambda: evaluate_orbitals(basis, coeff, lattice, method="separable", dtype=np.float32)[0]
    )
    mid = SHAPE[0] // 2 - 4  # 8 central planes: the least screening, so the extrapolation is an upper bound
    slab = Lattice(origin=lattice.origin + mid * lattice.axes[0], axes=lattice.axes, shape=(8,) + SHAPE[1:])
    t_ao_slab, psi_ao = best_of(1, lambda: evaluate_orbitals(basis, coeff, slab, method="ao")[0])
    t_ao = t_ao_slab * SHAPE[0] / slab.shape[0]
    cube_path = os.path.join(args.scratch, "hartree_c60_homo.cube")
    t0 = time.perf_counter()
    write_cube(cube_path, make_cube(mol, lattice, psi64, orbitals=[homo + 1]), overwrite=True)
    t_write = time.perf_counter() - t0

    # PySCF cubegen.orbital, split into its compute loop and its cube writer (same code, timed apart)
    t0 = time.perf_counter()
    coords = cube.get_coords()
    ngrids = cube.get_ngrids()
    ref = np.empty(ngrids)
    for p0, p1 in pyscf_lib.prange(0, ngrids, 8000):
        ref[p0:p1] = pmol.eval_gto("GTOval", coords[p0:p1]) @ coeff
    ref = ref.reshape(SHAPE)
    t_pyscf = time.perf_counter() - t0
    t0 = time.perf_counter()
    cube.write(ref, os.path.join(args.scratch, "pyscf_c60_homo.cube"), comment="PySCF cubegen")
    t_pyscf_write = time.perf_counter() - t0

    scale = float(np.abs(ref).max())
    record = {
        "case": "C60 RHF/6-31G* (cartesian, 900 functions), HOMO, 172x173x169 lattice",
        "orbitals": note,
        "homo_index_1based": homo + 1,
        "lattice": {
            "shape": list(SHAPE),
            "points": lattice.npoints,
            "spacing_angstrom": [round(float(s), 6) for s in spacings],
        },
        "device": f"cpu: {platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, "
        f"numba {numba.get_num_threads()} threads",
        "load_average_at_start": list(os.getloadavg()),
        "versions": {
            "hartree": hartree.__version__,
            "numpy": np.__version__,
            "numba": numba.__version__,
            "pyscf": __import__("pyscf").__version__,
            "python": platform.python_version(),
        },
        "hartree_seconds": {
            "separable_fp64": t_sep64,
            "separable_fp32": t_sep32,
            "ao_block_fp64_extrapolated": t_ao,
            "ao_block_fp64_8_central_planes": t_ao_slab,
            "cube_write": t_write,
            "total_fp64_with_cube": t_sep64 + t_write,
        },
        "pyscf_seconds": {
            "cubegen_compute": t_pyscf,
            "cubegen_write": t_pyscf_write,
            "cubegen_total": t_pyscf + t_pyscf_write,
        },
        "speedup_vs_pyscf": {
            "compute_fp64": t_pyscf / t_sep64,
            "compute_fp32": t_pyscf / t_sep32,
            "total_with_cube": (t_pyscf + t_pyscf_write) / (t_sep64 + t_write),
        },
        "errors_vs_pyscf": {
            "max_abs_fp64": float(np.abs(psi64 - ref).max()),
            "max_abs_fp32_relative_to_max": float(np.abs(psi32 - ref).max()) / scale,
            "max_abs_ao_path_slab": float(np.abs(psi_ao - ref[mid : mid + 8]).max()),
            "max_abs_value": scale,
        },
        "vmd_record_seconds": {"GTX 480 single precision JIT": 0.135, "4 x Tesla C1060": 0.111},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "orbitals_cpu.json").write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / "orbitals_cpu.md").write_text(markdown(record))
    print(markdown(record))
    if not args.no_picture:
        from hartree.grid.picture import render_png

        render_png(
            RESULTS / "c60_homo.png",
            mol,
            lattice,
            psi64,
            0.02,
            title=f"C60 HOMO (orbital {homo + 1}), isovalue 0.02 a.u.",
            overwrite=True,
        )


def compare_gpu_sample(path, pmol, lattice):
    """Max |GPU - PySCF| on the GPU run's sub-lattice (every k-th point along each axis, with the
    orbital coefficients saved beside the values), written into orbitals_gpu.json/.md there."""
    data = np.load(path)
    k = int(data["sample"])
    sub_lattice = Lattice(origin=lattice.origin, axes=lattice.axes * k, shape=tuple(-(-n // k) for n in lattice.shape))
    sub = (pmol.eval_gto("GTOval", sub_lattice.points()) @ data["coeff"]).reshape(sub_lattice.shape)
    scale = float(np.abs(sub).max())
    check = {
        "points": int(sub.size),
        "sample_step": k,
        "max_abs_fp64_vs_pyscf": float(np.abs(data["fp64"] - sub).max()),
        "max_abs_fp32_vs_pyscf_relative_to_max": float(np.abs(data["fp32"] - sub).max()) / scale,
    }
    print("GPU sample vs PySCF:", check)
    records = sorted(Path(path).parent.glob("orbitals_gpu_*.json"), key=lambda p: p.stat().st_mtime)
    gpu_json = records[-1] if records else None  # the newest GPU record beside the sample
    if gpu_json is not None:
        record = json.loads(gpu_json.read_text())
        record["pyscf_check"] = check
        gpu_json.write_text(json.dumps(record, indent=2) + "\n")
        md = gpu_json.with_suffix(".md")
        if md.exists():
            md.write_text(
                md.read_text() + f"\nChecked against PySCF's cubegen values (CPU, benchmarks/orbitals.py) on "
                f"{check['points']} points of the same lattice (every {k}th point along each axis): max |GPU - "
                f"PySCF| {check['max_abs_fp64_vs_pyscf']:.1e} (FP64), "
                f"{check['max_abs_fp32_vs_pyscf_relative_to_max']:.1e} of the largest value (FP32).\n"
            )


def markdown(r):
    h, p, s, e = r["hartree_seconds"], r["pyscf_seconds"], r["speedup_vs_pyscf"], r["errors_vs_pyscf"]
    return f"""# Orbital lattice benchmark (CPU)

{r["case"]}; {r["lattice"]["points"]} points, spacings {r["lattice"]["spacing_angstrom"]} Angstrom.
Orbitals: {r["orbitals"]}. Device: {r["device"]}; load average at start {r["load_average_at_start"]}.

| step | hartree (s) | PySCF cubegen (s) |
|---|---|---|
| HOMO values, FP64 (separable path) | {h["separable_fp64"]:.3f} | {p["cubegen_compute"]:.2f} |
| HOMO values, FP32 (separable path) | {h["separable_fp32"]:.3f} | - |
| HOMO values, FP64, AO-block path (8 central planes, extrapolated) | {h["ao_block_fp64_extrapolated"]:.2f} | - |
| cube file written | {h["cube_write"]:.3f} | {p["cubegen_write"]:.2f} |
| total, FP64 + cube | {h["total_fp64_with_cube"]:.3f} | {p["cubegen_total"]:.2f} |

Speed-up over PySCF: compute {s["compute_fp64"]:.0f}x (FP64), {s["compute_fp32"]:.0f}x (FP32);
with the cube file {s["total_with_cube"]:.0f}x.
Agreement with PySCF: max |diff| {e["max_abs_fp64"]:.1e} (FP64), {e["max_abs_fp32_relative_to_max"]:.1e} of the
largest value (FP32), {e["max_abs_ao_path_slab"]:.1e} (AO-block path); largest |value| {e["max_abs_value"]:.3f}.
hartree times are the best of 3 warm runs (numba compiled beforehand); PySCF's is one run.
The machine was shared with other jobs (load average above), so absolute times are noisy.
VMD record (2010): 0.135 s on a GTX 480 (FP32, JIT kernel), 0.111 s on four Tesla C1060s.
"""


if __name__ == "__main__":
    main()
