"""Range-separated hybrids (CAM-B3LYP, ωB97X, LC-ωPBE, ωB97X-V) on the CPU: the exchange
terms against PySCF's, RKS/UKS energies and gradients against PySCF's with hartree's grid
handed to PySCF, the erf part of the ERI gradient against central differences, and
``hartree run -m cam-b3lyp`` (the GPU engine's erf kernels: tests/gpu/test_attenuated.py).  Water and
H2O+ (not OH: tests/dft/test_scf_dft.py says why) in STO-3G on grid level 1.  The erf
integrals run the generic numba driver (not the generated omega module, whose cold compile
takes minutes)."""

import json

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.dft import parse_functional
from hartree.gradients import scf_gradient
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import run
from hartree.scf.ks import exchange_terms
from tests.helpers import pyscf_ks_converged

pytest.importorskip("pyscf")

LEVEL = 1
#: |E_hartree - E_pyscf| allowed (Eh) and |dE/dR| (Eh/bohr)
TOL, GTOL = 1e-8, 1e-7
TIGHT = {"conv_tol": 1e-12, "conv_tol_grad": 1e-9}
WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"  # distorted, Angstrom
CATION = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"  # H2O+, bohr
#: libxc's LC-ωPBE (PySCF's parser reads 'lc-wpbe' as LC + WPBE and fails)
LC_WPBE = "HYB_GGA_XC_LC_WPBE"


def _molecule(system):
    if system == "water":
        return Molecule.from_string(WATER)
    return Molecule.from_string(CATION, unit="bohr", charge=1)


@pytest.mark.parametrize("xc", ["b3lyp", "pbe", "cam-b3lyp", "wb97x", LC_WPBE, "wb97x-v"])
def test_exchange_terms_equal_pyscfs_coefficients(xc):
    """sum factor K(omega) equals PySCF's hyb K + (alpha - hyb) K_lr(omega)
    (NumInt.rsh_and_hybrid_coeff, the coefficients of its get_veff); CAM-B3LYP 0.19 and 0.46."""
    from pyscf.dft.numint import NumInt

    omega, alpha, hyb = NumInt().rsh_and_hybrid_coeff(parse_functional(xc).xc_code)
    want = {0.0: hyb} if omega == 0 else {0.0: hyb, omega: alpha - hyb}
    got = dict(exchange_terms(parse_functional(xc)))
    assert set(got) == {w for w, c in want.items() if c != 0.0}
    for w, c in got.items():
        assert abs(c - want[w]) < 1e-12, (w, c, want)
    if xc == "cam-b3lyp":
        assert np.allclose(list(got.items()), [(0.0, 0.19), (0.33, 0.46)], atol=1e-12)


@pytest.mark.parametrize(
    ("system", "xc", "with_gradient"),
    [
        ("water", "cam-b3lyp", True),
        ("water", "wb97x", False),
        ("water", LC_WPBE, True),
        ("cation", "cam-b3lyp", True),
        ("cation", "wb97x", False),
        ("water", "wb97x-v", False),
    ],
    ids=["rks-cam-b3lyp", "rks-wb97x", "rks-lc-wpbe", "uks-cam-b3lyp", "uks-wb97x", "rks-wb97x-v"],
)
def test_energy_and_gradient_equal_pyscf(system, xc, with_gradient):
    """Energies equal PySCF's to 1e-8 Eh (measured 6e-14 to 2e-13), gradients (grid held
    fixed, PySCF's default) its nuc_grad_method() to 1e-7 Eh/bohr (measured 1.4e-11 to 4e-9:
    the UKS SCFs' convergence)."""
    mol = _molecule(system)
    basis = load_basis(mol, "sto-3g")
    res = run(mol, basis, "rks" if mol.multiplicity == 1 else "uks", xc=xc, grid_level=LEVEL, device="cpu", **TIGHT)
    mf = pyscf_ks_converged(mol, basis, xc, res.density, level=LEVEL, nlc_level=LEVEL)
    assert abs(res.energy - mf.e_tot) < TOL, (res.energy, mf.e_tot)
    if not with_gradient:
        return
    g = scf_gradient(res)
    ref = mf.nuc_grad_method().kernel()
    assert np.abs(g.gradient - ref).max() < GTOL, np.abs(g.gradient - ref).max()


def test_erf_eri_gradient_equals_central_differences():
    """The erf part of the two-electron gradient, E = -1/4 tr(D K_lr[D]) for a fixed AO
    density D (RKS exchange, k_factor 1/2), equals central differences of that energy
    (CPUEngine.jk(omega=0.33)) to 1e-8 Eh/bohr (step 1e-4 bohr), on every atom of water/6-31G."""
    mol = _molecule("water")
    basis = load_basis(mol, "6-31g")
    rng = np.random.default_rng(7)
    c = rng.normal(size=(basis.nao, 5)) * 0.4
    d = c @ c.T
    omega = 0.33
    got = CPUEngine(mol, basis).two_electron_gradient(np.zeros_like(d), d[None], 0.5, omega=omega)
    coords = np.array(mol.coords)
    h = 1e-4

    def energy(xyz):
        moved = mol.replace(coords=xyz)
        _, k = CPUEngine(moved, load_basis(moved, "6-31g")).jk(d, with_j=False, omega=omega)
        return -0.25 * float(np.sum(d * k))

    for atom in range(mol.natm):
        for x in range(3):
            plus, minus = coords.copy(), coords.copy()
            plus[atom, x] += h
            minus[atom, x] -= h
            fd = (energy(plus) - energy(minus)) / (2 * h)
            assert abs(got[atom, x] - fd) < 1e-8, (atom, x, got[atom, x], fd)


def test_gradient_equals_central_differences_of_our_energies():
    """With the grid response, the CAM-B3LYP RKS gradient of water is the derivative of
    hartree's own SCF energy: two components equal central differences (step 2e-4 bohr) to
    5e-8 Eh/bohr (measured 6.5e-10 and 5.5e-9)."""
    mol = _molecule("water")
    kw = {"xc": "cam-b3lyp", "grid_level": LEVEL, "device": "cpu", **TIGHT}
    g = scf_gradient(run(mol, "sto-3g", "rks", **kw), grid_response=True).gradient
    h = 2e-4
    for atom, x in [(0, 2), (1, 1)]:
        energies = []
        for sign in (1, -1):
            xyz = np.array(mol.coords)
            xyz[atom, x] += sign * h
            energies.append(run(mol.replace(coords=xyz), "sto-3g", "rks", **kw).energy)
        fd = (energies[0] - energies[1]) / (2 * h)
        assert abs(g[atom, x] - fd) < 5e-8, (atom, x, g[atom, x], fd)


def test_cli_run_cam_b3lyp(tmp_path):
    """``hartree run -m cam-b3lyp`` runs, its JSON energy equals the Python API's (1e-10)."""
    from tests.cli.conftest import WATER_XYZ, run_main

    (tmp_path / "water.xyz").write_text(WATER_XYZ)
    out = tmp_path / "water.json"
    argv = ["run", str(tmp_path / "water.xyz"), "-b", "sto-3g", "-m", "cam-b3lyp", "--grid", "1"]
    code, stdout, err = run_main([*argv, "--conv-tol", "1e-10", "--device", "cpu", "--json", str(out)])
    assert code == 0, err
    doc = json.loads(out.read_text())
    mol = Molecule.from_string(WATER_XYZ)
    ref = run(mol, "sto-3g", "rks", xc="cam-b3lyp", grid_level=1, device="cpu", conv_tol=1e-10)
    assert abs(doc["properties"]["return_energy"] - ref.energy) < 1e-9
    assert "cam-b3lyp" in stdout.lower()


@pytest.mark.gpu
def test_cli_runs_cam_b3lyp_on_the_gpu(tmp_path):
    """On a GPU, ``hartree run -m cam-b3lyp --device gpu`` runs (the erf-attenuated GPU
    kernels, tests/gpu/test_attenuated.py) and its energy equals the CPU's (1e-9 Eh)."""
    from tests.cli.conftest import WATER_XYZ, run_main

    (tmp_path / "water.xyz").write_text(WATER_XYZ)
    out = tmp_path / "water.json"
    argv = ["run", str(tmp_path / "water.xyz"), "-b", "sto-3g", "-m", "cam-b3lyp", "--grid", "1"]
    code, stdout, err = run_main([*argv, "--conv-tol", "1e-10", "--device", "gpu", "--json", str(out)])
    assert code == 0, err
    mol = Molecule.from_string(WATER_XYZ)
    ref = run(mol, "sto-3g", "rks", xc="cam-b3lyp", grid_level=1, device="cpu", conv_tol=1e-10)
    assert abs(json.loads(out.read_text())["properties"]["return_energy"] - ref.energy) < 1e-9
