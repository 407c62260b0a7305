"""Early-cycle screening (SCFOptions.early_screening): looser J/K screening while the
orbital gradient is large, then a full rebuild at screening_threshold.  The converged
energy must not depend on it; the phase must end before convergence is judged."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.errors import InputError
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import SCFOptions, kernel


@pytest.fixture(scope="module")
def glycine():
    mol = Molecule.from_string("""N  -1.95  0.32  0.00
C  -0.60  0.85  0.00
C   0.45 -0.25  0.00
O   0.20 -1.44  0.00
O   1.70  0.21  0.00
H  -2.10 -0.27  0.82
H  -2.10 -0.27 -0.82
H  -0.45  1.48  0.88
H  -0.45  1.48 -0.88
H   2.33 -0.53  0.00""")
    basis = load_basis(mol, "6-31g")
    return mol, basis, CPUEngine(mol, basis)


def test_early_screening_leaves_the_converged_energy_unchanged(glycine):
    """Same energy within 1e-10 Eh with and without the early phase (conv_tol 1e-10); the
    early builds really screened more (fewer quartets: J/K differ at 1e-8 on the guess
    density); convergence was judged after the phase ended."""
    mol, basis, eng = glycine
    ref = kernel(mol, basis, SCFOptions(conv_tol=1e-10, early_screening=None), eng)
    res = kernel(mol, basis, SCFOptions(conv_tol=1e-10, early_screening=1e-8), eng)
    assert ref.converged and res.converged
    assert abs(res.energy - ref.energy) < 1e-10
    assert ref.timings["early_screening_builds"] == 0
    early = res.timings["early_screening_builds"]
    assert 1 <= early < len(res.history)
    # the build that ends the phase is a full one, and the last record is a tight build
    assert "full" in res.history[early].step or res.history[early].step == "full-rebuild"
    assert res.history[-1].gradient_norm < 1e-5
    dm = np.asarray(ref.density)
    j_tight, k_tight = eng.jk(dm)
    j_loose, k_loose = eng.jk(dm, threshold=1e-8)
    assert 0 < np.abs(j_tight - j_loose).max() < 1e-5
    assert 0 < np.abs(k_tight - k_loose).max() < 1e-5


def test_a_tighter_call_threshold_is_clamped_to_the_engine_threshold(glycine):
    mol, basis, eng = glycine
    dm = np.eye(basis.nao) * 0.1
    j0, k0 = eng.jk(dm)
    j1, k1 = eng.jk(dm, threshold=1e-20)
    assert np.array_equal(j0, j1) and np.array_equal(k0, k1)


def test_an_early_threshold_not_looser_than_the_engines_runs_without_the_early_phase(glycine):
    """Every engine's jk takes a call threshold (the engine contract); an early threshold at
    or below the engine's own screening threshold switches the early phase off."""
    mol, basis, eng = glycine
    for early in (eng.screening_threshold, 0.1 * eng.screening_threshold):
        opts = SCFOptions(conv_tol=1e-8, max_cycle=3, guess="core", early_screening=early)
        res = kernel(mol, basis, opts, eng)
        assert res.timings["early_screening_builds"] == 0


@pytest.mark.parametrize(
    "bad", [dict(early_screening=0.0), dict(early_screening=-1e-9), dict(early_screening_gradient=0.0)]
)
def test_bad_early_screening_options_raise(bad):
    with pytest.raises(InputError):
        SCFOptions(**bad)
