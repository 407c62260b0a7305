"""Kohn-Sham SCF (hartree.scf.run with method 'rks'/'uks' and xc): total energies against
PySCF's dft.RKS/UKS on the identical grid (hartree's points and weights given to PySCF), and
the refusals (ROKS, checkpoints).  VV10: tests/dft/test_scf_vv10.py.  Range-separated
hybrids: tests/dft/test_scf_rsh.py.  Gradients: tests/gradients/test_ks_gradient.py."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.errors import InputError
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import SCFOptions, kernel, run
from tests.helpers import to_pyscf, water

pytest.importorskip("pyscf")

#: grid level of these tests: the comparison is on one grid, so a small one suffices
LEVEL = 1
#: |E_hartree - E_pyscf| allowed, Eh (both converged to 1e-10 Eh or tighter)
TOL = 1e-8


def _hydroxyl():
    """OH radical (doublet): for the refusal of RKS only.  Not for energies: its beta hole
    sits in a pair of degenerate pi orbitals, which the grid splits only slightly, so UKS
    (PySCF's too) stalls at an orbital gradient of 7e-6 with the energy still drifting by
    2e-10 Eh per cycle."""
    return Molecule.from_string("O 0.0 0.0 0.0; H 0.35 0.21 1.77", unit="bohr", multiplicity=2)


def _water_cation():
    """H2O+ (doublet) without symmetry, so that no orbitals are degenerate."""
    return Molecule.from_string("O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02", unit="bohr", charge=1)


def _pyscf_energy(mol, basis, xc, grid):
    """PySCF's RKS (closed shell) or UKS total energy on hartree's grid (Eh)."""
    from pyscf import dft

    from hartree.dft import parse_functional

    pmol = to_pyscf(mol, basis)
    mf = dft.RKS(pmol) if mol.multiplicity == 1 else dft.UKS(pmol)
    mf.xc = parse_functional(xc).xc_code  # the same libxc functional, whatever the alias means
    # a Grids holding hartree's points: PySCF builds (and prunes) its grid only while
    # grids.coords is None (KohnShamDFT.initialize_grids)
    grids = dft.gen_grid.Grids(pmol)
    grids.coords = np.array(grid.coords)
    grids.weights = np.array(grid.weights)
    mf.grids = grids
    mf.conv_tol = 1e-12
    energy = mf.kernel()
    assert mf.converged and mf.grids.coords.shape == grid.coords.shape
    return energy


@pytest.mark.parametrize(
    ("system", "basis", "method", "xc"),
    [
        ("water", "sto-3g", "rks", "svwn"),
        ("water", "6-31g", "rks", "pbe"),
        ("water", "6-31g", "rks", "b3lyp"),
        ("cation", "6-31g", "uks", "pbe"),
        ("cation", "sto-3g", "uks", "b3lyp"),
    ],
)
def test_energy_equals_pyscf_on_the_same_grid(system, basis, method, xc):
    """Total energies equal PySCF's to 1e-8 Eh (measured: docs/dft.md); the energy parts add
    up, E_xc is reported, and the grid integrates the right electron count."""
    from hartree.dft import make_grid

    mol = water() if system == "water" else _water_cation()
    bas = load_basis(mol, basis)
    res = run(mol, bas, method, xc=xc, grid_level=LEVEL, device="cpu", conv_tol=1e-10, conv_tol_grad=1e-7)
    ref = _pyscf_energy(mol, bas, xc, make_grid(mol, level=LEVEL))
    assert abs(res.energy - ref) < TOL, (res.energy, ref)
    comps = res.energy_components
    assert res.method == method and res.xc == xc
    assert comps["xc"] < 0.0 and abs(sum(v for k, v in comps.items() if k != "total") - res.energy) < 1e-10
    assert (comps["exchange"] == 0.0) == (xc in ("svwn", "pbe"))
    if method == "uks":
        assert res.s_squared == pytest.approx(0.75, abs=0.01)
    assert res.timings["grid"] > 0.0 and res.timings["xc"] > 0.0


class _CountingEngine:
    """A CPU engine that records the with_k flag of every J/K build."""

    def __init__(self, engine):
        self._engine = engine
        self.with_k = []

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def jk(self, dm, with_j=True, with_k=True, **kw):
        self.with_k.append(with_k)
        return self._engine.jk(dm, with_j=with_j, with_k=with_k, **kw)


@pytest.mark.parametrize(("xc", "k_built"), [("pbe", False), ("b3lyp", True)])
def test_exchange_built_only_for_hybrids(xc, k_built):
    """K is not built at all for a pure functional (c_x = 0), always for a hybrid."""
    mol = Molecule.from_string("H 0 0 0; H 0 0 1.4", unit="bohr")
    basis = load_basis(mol, "sto-3g")
    engine = _CountingEngine(CPUEngine(mol, basis))
    res = kernel(mol, basis, SCFOptions(method="rks", xc=xc, grid_level=1), engine)
    assert res.converged and set(engine.with_k) == {k_built}


@pytest.mark.parametrize(
    ("method", "kw", "words"),
    [
        ("roks", {"xc": "pbe"}, "ROKS"),
        ("rks", {}, "needs a functional"),
        ("rhf", {"xc": "pbe"}, "method 'rks'"),
        ("rks", {"xc": "pbe", "grid_level": 0}, "grid_level"),
        ("rks", {"xc": "pbe", "checkpoint": "/tmp/x.h5"}, "checkpoints are not supported"),
        ("uks", {"xc": "pbe", "guess_from": "/tmp/x.h5"}, "checkpoints are not supported"),
    ],
)
def test_options_refusals(method, kw, words):
    with pytest.raises(InputError, match=words):
        SCFOptions(method=method, **kw)


def test_rks_needs_closed_shell():
    with pytest.raises(InputError, match="RKS needs an even number of electrons; use --method uks"):
        run(_hydroxyl(), "sto-3g", "rks", xc="pbe", device="cpu")
