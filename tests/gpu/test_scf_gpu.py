"""Whole SCF on the GPU (cupy loop + generated J/K kernels) versus the CPU engine:
total energies within 1e-8 Eh for RHF, UHF and ROHF, numpy results, device named.

The CPU-engine results are computed live, or, with HARTREE_GPU_PREFER_STORED=1 (saves
the numba compile of the CPU ERI kernels on the GPU machine), read from
data/scf_cpu_reference.json, written by make_scf_reference.py with the CPU engine and
checked against the live CPU engine by test_stored_scf_reference (no GPU needed).
"""

import json
import os

import numpy as np
import pytest

from hartree.molecule import Molecule

pytestmark = pytest.mark.gpu

#: (id, geometry (Angstrom), multiplicity, basis, cartesian, method); d functions in all
#: but the first three are polarised bases too: cc-pVDZ / 6-31G* / 6-31G** (cartesian d).
CASES = [
    ("h2o_ccpvdz_rhf", "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692", 1, "cc-pvdz", False, "rhf"),
    ("o2_631gs_uhf", "O 0 0 0; O 0 0 1.2075", 3, "6-31g*", False, "uhf"),
    ("o2_631gs_rohf", "O 0 0 0; O 0 0 1.2075", 3, "6-31g*", False, "rohf"),
    ("h2co_631gss_cart_rhf", "C 0 0 -0.53; O 0 0 0.677; H 0 0.94 -1.11; H 0 -0.94 -1.11", 1, "6-31g**", True, "rhf"),
]
TOL = 1e-8  # Eh
SCF_OPTS = dict(conv_tol=1e-11, conv_tol_grad=1e-7)
STORED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "scf_cpu_reference.json")


def build(case):
    """(molecule, basis, method) of a CASES entry."""
    from hartree.basis import load_basis

    _, geom, mult, basis_name, cart, method = case
    mol = Molecule.from_string(geom, multiplicity=mult)
    return mol, load_basis(mol, basis_name, cartesian=cart), method


def cpu_reference(case):
    """{energy, iterations, mo_occ, dipole, s_squared, source} of the CPU engine."""
    if os.environ.get("HARTREE_GPU_PREFER_STORED") == "1" and os.path.exists(STORED):
        with open(STORED) as f:
            ref = json.load(f)[case[0]]
        return dict(ref, source="stored CPU-engine result")
    from hartree.scf import run

    mol, basis, method = build(case)
    r = run(mol, basis, method, device="cpu", **SCF_OPTS)
    assert r.converged and "cpu" in r.device
    return {
        "energy": r.energy,
        "iterations": r.iterations,
        "mo_occ": r.mo_occ.tolist(),
        "dipole": r.dipole.tolist(),
        "s_squared": r.s_squared,
        "source": r.device,
    }


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_scf_gpu_matches_cpu(case):
    from hartree.scf import run

    cpu = cpu_reference(case)
    mol, basis, method = build(case)
    gpu = run(mol, basis, method, device="gpu", **SCF_OPTS)
    print(
        f"{case[0]}: nao={basis.nao} CPU {cpu['energy']:.12f} ({cpu['iterations']} it, "
        f"{cpu['source']}) GPU {gpu.energy:.12f} ({gpu.iterations} it) "
        f"diff {gpu.energy - cpu['energy']:.1e} Eh"
    )
    assert gpu.converged
    assert abs(gpu.energy - cpu["energy"]) < TOL
    assert "cuda" in gpu.device
    for name in ("mo_energy", "mo_coeff", "mo_occ", "density", "dipole", "mulliken_charges"):
        assert isinstance(getattr(gpu, name), np.ndarray), name
    np.testing.assert_allclose(gpu.mo_occ, cpu["mo_occ"])
    np.testing.assert_allclose(gpu.dipole, cpu["dipole"], atol=1e-5)
    if method != "rhf":
        assert abs(gpu.s_squared - cpu["s_squared"]) < 1e-6


def test_auto_device_picks_the_gpu():
    from hartree.device.selection import resolve_device
    from hartree.scf import run

    assert resolve_device("auto") == "gpu" and resolve_device("cpu") == "cpu"
    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    res = run(mol, "sto-3g", conv_tol=1e-10)
    assert "cuda" in res.device
    assert abs(res.energy - run(mol, "sto-3g", device="gpu", conv_tol=1e-10).energy) < 1e-10
    assert abs(res.energy - -1.1167593075) < 1e-8  # CPU engine, H2/STO-3G at 0.74 Angstrom


def test_cli_names_the_gpus_and_says_when_compiling(tmp_path):
    """``hartree run --device gpu --gpus all``: device line, compile line, the CPU engine's
    energy (stored or live reference) within 1e-9 Eh (CLI gradient threshold 1e-5)."""
    import contextlib
    import io
    import re

    from hartree.cli.main import main

    def run_main(argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return code, out.getvalue(), err.getvalue()

    case = CASES[0]
    ref = cpu_reference(case)
    xyz = tmp_path / "water.xyz"
    atoms = [a.split() for a in case[1].split(";")]
    xyz.write_text(f"{len(atoms)}\nwater\n" + "\n".join(" ".join(a) for a in atoms) + "\n")
    code, out, err = run_main(
        ["run", str(xyz), "-b", case[3], "--device", "gpu", "--gpus", "all", "--conv-tol", "1e-11"]
    )
    print(out)
    assert code == 0, err
    assert re.search(r"device:\s+gpu 0(,\d+)* \(", out)
    assert re.search(r"GPU:\s+(compiled \d+ new kernel module|all kernels loaded)", out)
    e = float(re.search(r"E\(RHF/[^)]*\) = (-?\d+\.\d+) Eh", out).group(1))
    assert abs(e - ref["energy"]) < 1e-9


def test_sad_guess_on_the_gpu_uses_one_engine_and_stays_on_the_device():
    """The SAD atoms of a GPU SCF: one engine for all free atoms (none per element), their
    densities cupy arrays (never on the host during the atomic iterations), and the guess
    holds the neutral electron count."""
    import cupy

    from hartree.gpu import GPUEngine
    from hartree.scf import guess as gs

    class Counting(GPUEngine):
        derived = 0

        def for_molecule(self, molecule, basis):
            Counting.derived += 1
            return super().for_molecule(molecule, basis)

    mol, basis, _ = build(CASES[0])
    eng = Counting(mol, basis)
    atoms = [(int(z), basis.for_atoms([i])) for i, z in enumerate(mol.numbers[:2])]  # O, H
    dens = gs.engine_atomic_densities(eng, atoms)
    assert Counting.derived == 1 and all(isinstance(d, cupy.ndarray) for d in dens)
    gs._SAD_CACHE.clear()
    guess = gs.sad_guess("rhf", mol, basis, eng)
    assert isinstance(guess.dm, cupy.ndarray) and Counting.derived == 2
    electrons = float(cupy.sum(guess.dm[0] * eng.overlap()))
    assert abs(electrons - mol.nelectron) < 1e-6
