"""Kohn-Sham SCF and gradients with VV10 functionals (b97m-v; libxc's vv10, rPW86-PBE with
VV10): total energies against PySCF's RKS/UKS with hartree's grids handed to PySCF (the
semilocal grid as ``grids``, the VV10 grid as ``nlcgrids``), the energy components, report
and JSON, the emulated GPU kernels against the CPU, and the gradients against PySCF's
``nuc_grad_method()`` on the same grids.  The VV10 kernel itself: tests/dft/test_vv10.py."""

import json

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.device import emulator
from hartree.dft import make_grid, parse_functional
from hartree.errors import InputError
from hartree.gradients import gradient, scf_gradient
from hartree.molecule import Molecule
from hartree.scf import run
from tests.helpers import pyscf_ks_converged

pytest.importorskip("pyscf")

#: grid level of the semilocal part and of the VV10 grid (hartree's default for VV10)
LEVEL = NLC_LEVEL = 1
#: |E_hartree - E_pyscf| allowed, Eh
TOL = 1e-8
TIGHT = {"conv_tol": 1e-12, "conv_tol_grad": 1e-9}
#: H2O+ (doublet) without symmetry (tests/dft/test_scf_dft.py says why not OH)
CATION = "O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02"


def _molecule(system):
    if system == "water":  # distorted: every component of the gradient is non-zero
        return Molecule.from_string("O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292")
    return Molecule.from_string(CATION, unit="bohr", charge=1)


@pytest.mark.parametrize(
    ("system", "xc", "with_gradient"),
    [
        ("water", "b97m-v", True),
        ("cation", "b97m-v", False),
        ("cation", "vv10", True),
        ("water", "wb97x-v", False),
        ("cation", "wb97m-v", False),
    ],
    ids=["rks", "uks", "uks-vv10", "rks-wb97x-v", "uks-wb97m-v"],
)
def test_energy_and_gradient_equal_pyscf_on_the_same_grids(system, xc, with_gradient):
    """Total energies equal PySCF's to 1e-8 Eh (measured 4e-14 to 2.3e-13); the components
    'xc' (semilocal) and 'vv10' add up to the total; the record names b, C and the grid.  The
    gradient (VV10 term included, grids held fixed, as PySCF's default) equals PySCF's
    nuc_grad_method() on the same grids to 1e-7 Eh/bohr (measured 3e-11 and 6e-11).  The
    range-separated wb97x-v and wb97m-v (erf exchange beside VV10) measured 2.0e-13 and
    1.3e-13 Eh."""
    mol = _molecule(system)
    basis = load_basis(mol, "sto-3g")
    res = run(mol, basis, "rks" if mol.multiplicity == 1 else "uks", xc=xc, grid_level=LEVEL, device="cpu", **TIGHT)
    mf = pyscf_ks_converged(mol, basis, xc, res.density, level=LEVEL, nlc_level=NLC_LEVEL)
    assert mf.do_nlc()
    assert abs(res.energy - mf.e_tot) < TOL, (res.energy, mf.e_tot)
    comps = res.energy_components
    assert 0.0 < comps["vv10"] < 0.1 and comps["xc"] < 0.0
    assert abs(sum(v for k, v in comps.items() if k != "total") - res.energy) < 1e-10
    record = res.dft["vv10"]
    assert (record["b"], record["C"]) == parse_functional(xc).vv10
    assert record["grid_level"] == NLC_LEVEL and record["grid_points"] == make_grid(mol, level=NLC_LEVEL).npoints
    assert record["energy"] == comps["vv10"] and abs(record["electrons_integrated"] - mol.nelectron) < 1e-3
    assert any("VV10 on grid level 1" in n for n in res.notes)
    if not with_gradient:
        return
    g = scf_gradient(res)
    ref = mf.nuc_grad_method().kernel()
    assert np.abs(g.gradient - ref).max() < 1e-7, np.abs(g.gradient - ref).max()
    assert np.abs(g.components["vv10"]).max() > 1e-5
    assert np.allclose(sum(g.components.values()), g.gradient, atol=1e-14)


@pytest.mark.skipif(not emulator.available(), reason="g++ not available")
@pytest.mark.parametrize("system", ["water", "cation"])
def test_emulated_gpu_kohn_sham_equals_the_cpu(system):
    """KohnSham with the emulated GPU kernels (AO values, GEMM path, vv10.cu) gives the CPU's
    E_xc + E_nlc, its parts and V_xc + V_nlc to 1e-12 (RKS water, UKS H2O+; b97m-v)."""
    from hartree.dft.xc_gpu import GPUKernels
    from hartree.scf.ks import KohnSham

    mol = _molecule(system)
    basis = load_basis(mol, "6-31g")
    nset = 1 if mol.multiplicity == 1 else 2
    rng = np.random.default_rng(3)
    c = rng.normal(size=(nset, basis.nao, 4)) * 0.3
    dm = np.einsum("sik,sjk->sij", c, c)
    cpu = KohnSham(mol, basis, "b97m-v", grid_level=LEVEL)
    gpu = KohnSham(mol, basis, "b97m-v", grid_level=LEVEL, kernels=GPUKernels(emulator.EmulatedBackend("-O1"), nset))
    e1, v1 = cpu(dm)
    e2, v2 = gpu(dm)
    assert abs(e1 - e2) < 1e-12 and np.abs(v1 - v2).max() < 1e-12
    assert abs(cpu.terms["vv10"] - gpu.terms["vv10"]) < 1e-12


def test_cli_report_and_json(tmp_path):
    """hartree run -m b97m-v --nlc-grid 2: the report shows the VV10 row, b and C and the
    VV10 grid of level 2; the JSON (valid QCSchema) has scf_vv10_energy, and its energy fields
    add up to the total."""
    from qcelemental.models.v1 import AtomicResult

    from tests.cli.conftest import WATER_XYZ, run_main

    path = tmp_path / "w.xyz"
    path.write_text(WATER_XYZ)
    out = tmp_path / "w.json"
    code, stdout, err = run_main(
        ["run", str(path), "-b", "sto-3g", "-m", "b97m-v", "--grid", "1", "--nlc-grid", "2", "--json", str(out)]
    )
    assert code == 0, err
    for text in ("VV10 non-local correlation", "b = 6, C = 0.01", "VV10 grid", "level 2"):
        assert text in stdout, text
    doc = json.loads(out.read_text())
    AtomicResult(**doc)
    props = doc["properties"]
    parts = ("scf_one_electron_energy", "scf_two_electron_energy", "scf_xc_energy", "scf_vv10_energy")
    assert abs(sum(props[k] for k in parts) + props["nuclear_repulsion_energy"] - props["return_energy"]) < 1e-10
    assert props["scf_vv10_energy"] > 0.0 and doc["extras"]["hartree"]["dft"]["vv10"]["grid_level"] == 2
    assert doc["keywords"]["nlc_grid_level"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "-m", "pbe", "--nlc-grid", "2"], "nlc_grid_level (--nlc-grid) applies only to VV10 functionals"),
        (["opt", "-m", "b3lyp", "--nlc-grid", "2"], "nlc_grid_level (--nlc-grid) applies only to VV10 functionals"),
        (["run", "-m", "rhf", "--nlc-grid", "2"], "--nlc-grid applies only to DFT functionals"),
        (["run", "-m", "b97m-v", "--nlc-grid", "0"], "argument --nlc-grid: must be an integer from 1 to 9"),
    ],
    ids=["pbe", "opt-b3lyp", "rhf", "range"],
)
def test_cli_refuses_a_vv10_grid_without_vv10(tmp_path, argv, message):
    """--nlc-grid with a functional without VV10, with Hartree-Fock or outside 1..9: one
    error line, exit code 2, nothing printed or written."""
    from hartree.cli.main import EXIT_INPUT
    from tests.cli.conftest import WATER_XYZ, run_main

    path = tmp_path / "w.xyz"
    path.write_text(WATER_XYZ)
    code, stdout, err = run_main([argv[0], str(path), "-b", "sto-3g", *argv[1:]])
    assert code == EXIT_INPUT and message in err, err
    assert "Traceback" not in err and stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["w.xyz"]


def test_vv10_grid_level_option():
    """nlc_grid_level=2: the SCF's E_nlc is NonLocal's on the level-2 grid for the converged
    density (1e-12 Eh), and the gradient's vv10 component nlc_gradient's on it (1e-12
    Eh/bohr); a level outside 1..9 is refused."""
    from hartree.dft.vv10 import NLC_GRID_LEVEL, NonLocal, nlc_gradient
    from hartree.scf import SCFOptions

    assert SCFOptions(method="rks", xc="b97m-v").nlc_grid_level == NLC_GRID_LEVEL
    mol = Molecule.from_string("H 0 0 0; H 0 0.2 1.4", unit="bohr")
    basis = load_basis(mol, "sto-3g")
    res = run(mol, basis, "rks", xc="b97m-v", grid_level=1, nlc_grid_level=2, device="cpu", **TIGHT)
    grid = make_grid(mol, level=2)
    assert res.dft["vv10"]["grid_level"] == 2 and res.dft["vv10"]["grid_points"] == grid.npoints
    dm = np.asarray(res.density)
    dm = dm[0] if dm.ndim == 3 else dm
    e_nlc = NonLocal(basis, grid, (6.0, 0.01))(dm)[0]
    assert abs(res.energy_components["vv10"] - e_nlc) < 1e-12
    g = scf_gradient(res).components["vv10"]
    assert np.abs(g - nlc_gradient(mol, basis, grid, dm, (6.0, 0.01))).max() < 1e-12
    with pytest.raises(InputError, match="nlc_grid_level must be an integer from 1 to 9"):
        run(mol, basis, "rks", xc="b97m-v", nlc_grid_level=0, device="cpu")


def test_cli_gradient_with_the_grid_response(tmp_path):
    """hartree run -m b97m-v --gradient --grid-response (once refused) gives the API's gradient
    with the grid response of both grids (1e-10 Eh/bohr), whose forces sum to zero (1e-10);
    the keywords of opt, batch and QCEngine (gradient_options) pass grid_response through.
    Its agreement with finite differences and PySCF: tests/dft/test_vv10_grid_response.py."""
    from hartree.keywords import gradient_options
    from tests.cli.conftest import run_main

    mol = Molecule.from_string("H 0.0 0.0 0.0; H 0.6 0.7 1.1", unit="bohr")  # along no axis
    path = tmp_path / "h2.json"
    path.write_text(json.dumps(mol.to_qcschema()))
    out = tmp_path / "g.json"
    argv = ["run", str(path), "-b", "sto-3g", "-m", "b97m-v", "--grid", "1", "--gradient", "--grid-response"]
    code, stdout, err = run_main([*argv, "--json", str(out), "--device", "cpu"])
    assert code == 0, err
    doc = json.loads(out.read_text())
    g = np.asarray(doc["return_result"])
    api = gradient(mol, "sto-3g", "rks", xc="b97m-v", grid_level=1, grid_response=True, device="cpu")
    np.testing.assert_allclose(g, api.gradient, rtol=0, atol=1e-10)
    assert np.abs(g.sum(axis=0)).max() < 1e-10 and np.abs(api.components["vv10"].sum(axis=0)).max() < 1e-12
    assert doc["keywords"]["grid_response"] is True
    assert gradient_options("vv10", mol, {"grid_response": True})[2] is True
