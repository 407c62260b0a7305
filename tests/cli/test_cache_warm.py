"""``hartree cache warm``: compile ahead of time, then the next run announces no compilation.

The tests run in process: numba's kernels are those this test session compiled already (or
loaded from numba's cache), so a warm-up here costs seconds and its timings are not checked;
what is checked is the command's parts, its exit codes, the first-run marker it writes and
that the run after it gives the Python API's energy.  The GPU part cannot run without a GPU:
the classes it asks the GPU engine to compile are checked on the host (and against the
engine's own list, with the emulated backend).
"""

import re

import pytest

from hartree import Molecule, scf, warm
from hartree.basis import load_basis
from hartree.cli.main import EXIT_DEVICE, EXIT_INPUT
from hartree.device.selection import gpu_available

NOTE = "compiled on the first run of this installation"
CPU_PARTS = (
    "one-electron integrals (S, T, V)",
    "shell pairs and Schwarz factors",
    "J/K build (generated ERI kernels)",
    "SCF: RHF, SAD guess, Mulliken charges, dipole",
    "gradient (derivative integrals)",
)


def _energy(out):
    """The energy of the final line 'E(RHF/sto-3g) = -74.96... Eh' of ``hartree run``."""
    return float(re.findall(r"^E\(RHF/sto-3g\) = (\S+) Eh$", out, re.MULTILINE)[-1])


def test_warm_then_run_announces_no_compilation(cli, water_xyz, tmp_path, monkeypatch):
    # the reference first, in the session's cache: the generated ERI module is then loaded in
    # this process and the fresh cache directories below compile nothing again
    reference = scf.run(Molecule.from_xyz(water_xyz), "sto-3g", "rhf", device="cpu").energy

    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "plain"))  # control: no warm-up
    code, out, _ = cli("run", water_xyz, "-b", "sto-3g", "--device", "cpu")
    assert code == 0 and NOTE in out and "hartree cache warm" in out

    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "warmed"))
    code, out, err = cli("cache", "warm", "--device", "cpu", "--gradient")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"cache:    {tmp_path / 'warmed'}"
    assert lines[1] == "warm-up:  water, RHF, STO-3G plus shells up to l=2, on the cpu, with the gradient"
    for name, line in zip(CPU_PARTS, lines[2:7]):
        assert re.fullmatch(rf"  {re.escape(name)}: \d+\.\d s(, \d+ cycles)? \(numba compiled \d+\.\d s\)", line), line
    assert re.fullmatch(r"warm:     5 parts on the cpu in \d+\.\d s \(numba compiled \d+\.\d s\); .*", lines[7])
    assert len(lines) == 8

    code, out, _ = cli("run", water_xyz, "-b", "sto-3g", "--device", "cpu")
    assert code == 0 and NOTE not in out
    assert abs(_energy(out) - reference) < 1e-10


def test_warm_quiet_prints_one_line(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = cli("cache", "warm", "--device", "cpu", "--lmax", "1", "--quiet")
    assert code == 0 and err == ""
    assert re.fullmatch(r"warm:     4 parts on the cpu in \d+\.\d s \(numba compiled \d+\.\d s\); .*\n", out)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("info", "--lmax", "2"), "--lmax applies to 'hartree cache warm' only"),
        (("prune", "--device", "cpu", "--gradient"), "--device, --gradient apply to 'hartree cache warm' only"),
        (("warm", "--kind", "cuda"), "--kind applies to 'hartree cache clear' and 'prune' only"),
        (("warm", "--days", "3"), "--days applies to 'hartree cache prune' only"),
        (("warm", "--lmax", "7"), "must lie between 1 and 6, not 7"),
        (("warm", "--lmax", "0"), "must lie between 1 and 6, not 0"),
        (("warm", "--device", "tpu"), "invalid choice: 'tpu'"),
    ],
)
def test_warm_refuses_bad_options(cli, args, fragment, tmp_path, monkeypatch):
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = cli("cache", *args)
    assert code == EXIT_INPUT and out == "" and fragment in err
    assert not (tmp_path / "cache").exists()  # refused before any work


def test_warm_on_the_gpu_needs_one(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = cli("cache", "warm", "--device", "gpu", "--lmax", "1")
    if gpu_available():  # on a GPU machine: the GPU's parts
        assert code == 0 and "GPU kernels: J/K of 6 classes" in out and "SCF on the GPU" in out
    else:
        assert code == EXIT_DEVICE and out == "" and len(err.splitlines()) == 1
        assert err.startswith("hartree: error: ")


def _all_classes(lmax):
    """Every (la lb|lc ld), la >= lb, lc >= ld, bra pair (la, lb) >= ket pair (lc, ld) in
    the order (l1, l2) of the pairs, for l <= lmax: enumerated without hartree."""
    pairs = [(a, b) for a in range(lmax + 1) for b in range(a + 1)]
    return {p + q for i, p in enumerate(pairs) for q in pairs[: i + 1]}


@pytest.mark.parametrize("lmax", [1, 2, 3, 4])
def test_warm_basis_reaches_every_class_up_to_lmax(lmax):
    mol = warm.warm_molecule()
    basis = warm.warm_basis(mol, lmax)
    for ia in range(mol.natm):
        assert sorted(set(basis.shell_l[basis.shell_atom == ia].tolist())) == list(range(lmax + 1))
    classes = warm.gpu_quartet_classes(basis)
    assert len(classes) == len(set(classes)) and set(classes) == _all_classes(lmax)


@pytest.mark.parametrize("xyz, name, lmax", [("caffeine.xyz", "6-31g**", 2), ("water.xyz", "cc-pvtz", 3)])
def test_gpu_warm_up_covers_real_jobs(xyz, name, lmax):
    """The README's job (caffeine, 6-31G**) needs no GPU class the default warm-up lacks;
    water/cc-pVTZ (f functions) none that --lmax 3 lacks."""
    from pathlib import Path

    mol = Molecule.from_file(Path(__file__).resolve().parents[2] / "examples" / xyz)
    needed = set(warm.gpu_quartet_classes(load_basis(mol, name)))
    covered = set(warm.gpu_quartet_classes(warm.warm_basis(warm.warm_molecule(), lmax)))
    assert needed and needed <= covered


def test_gpu_classes_are_the_engines_own():
    """gpu_quartet_classes (host only) lists what the GPU engine would compile: checked on
    the engine with the emulated backend (g++).  Setting up its J/K builder compiles the
    diagonal classes (ab|ab) for the Schwarz factors; prepare() then compiles the rest."""
    from hartree.device.emulator import EmulatedBackend
    from hartree.gpu import GPUEngine

    mol = warm.warm_molecule()
    basis = warm.warm_basis(mol, 1)
    classes = warm.gpu_quartet_classes(basis)
    diagonal = [c for c in classes if c[:2] == c[2:]]
    engine = GPUEngine(mol, basis, backends=[EmulatedBackend()])
    assert engine.pending_kernels() == len(classes) - len(diagonal) == 3
    engine.prepare()
    assert engine.pending_kernels() == 0
