"""Optimizations against PySCF + geomeTRIC (the oracle: PySCF's own gradients driving the
same optimizer through pyscf.geomopt.geometric_solver), with the same basis data
(tests.helpers.to_pyscf), the same SCF tolerances and the same convergence set.

The acceptance tolerance on the final energy is 2e-6 Eh.  Both sides run geomeTRIC on
gradients that agree to ~1e-10 Eh/bohr (tests/gradients), so the paths are the same and
the number of energy+gradient evaluations is asserted equal as well.
"""

import os
import tempfile

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.gradients import GRADIENT_SCF_DEFAULTS
from hartree.molecule import Molecule
from hartree.optimize import CONVERGENCE_SETS, optimize
from tests.helpers import to_pyscf

from .conftest import WATER_XYZ

ENERGY_TOL = 2e-6  # Eh, the acceptance criterion

OH = "O 0 0 0; H 0 0 1.05"
NH2 = "N 0 0 0; H 0 0.9 0.3; H 0 -0.9 0.3"
# ammonia near its planar inversion saddle point (N 0.1 Angstrom out of the H3 plane)
NH3_TS_GUESS = "N 0 0 0.1; H 0.95 0 0; H -0.475 0.8227 0; H -0.475 -0.8227 0"
CONSTRAINTS = "$set\nangle 2 1 3 100.0\n"


def _pyscf_mf(pmol, method):
    from pyscf import scf

    mf = {"rhf": scf.RHF, "uhf": scf.UHF, "rohf": scf.ROHF}[method](pmol)
    mf.conv_tol = GRADIENT_SCF_DEFAULTS["conv_tol"]
    mf.conv_tol_grad = GRADIENT_SCF_DEFAULTS["conv_tol_grad"]
    mf.verbose = 0
    return mf


def pyscf_optimum(molecule, basis_name, method, convergence="gau", **kwargs):
    """(energy at PySCF+geomeTRIC's optimized geometry, Eh; evaluations it needed)."""
    from pyscf.geomopt.geometric_solver import kernel

    pmol = to_pyscf(molecule, load_basis(molecule, basis_name))
    energies = []
    converged, final = kernel(
        _pyscf_mf(pmol, method),
        maxsteps=100,
        convergence_set=CONVERGENCE_SETS[convergence].geometric_name,
        callback=lambda env: energies.append(env["energy"]),
        **kwargs,
    )
    assert converged
    mf = _pyscf_mf(final, method)
    mf.conv_tol = 1e-12
    return mf.kernel(), len(energies)


def _leftovers():
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("hartree-opt-")}


@pytest.mark.parametrize(
    "text, basis, method",
    [(WATER_XYZ, "6-31g", "rhf"), (OH, "6-31g", "uhf"), (NH2, "sto-3g", "rohf")],
    ids=["water-rhf", "oh-uhf", "nh2-rohf"],
)
def test_minimum_matches_pyscf_geometric(work, text, basis, method):
    molecule = Molecule.from_string(text)
    before, temps = sorted(os.listdir(work)), _leftovers()
    seen = []
    result = optimize(molecule, basis, method, device="cpu", callback=seen.append)
    assert sorted(os.listdir(work)) == before  # nothing written in the working directory
    assert _leftovers() == temps  # and the private temporary folder is gone
    reference, evaluations = pyscf_optimum(molecule, basis, method)
    assert result.converged and result.steps[-1].converged
    assert abs(result.energy - reference) < ENERGY_TOL
    assert len(result.steps) == evaluations == result.gradient_evaluations
    # the result object: one entry per step, as the callback saw them
    assert seen == result.steps and result.iterations == len(result.steps) - 1
    assert result.energies == [s.energy for s in result.steps]
    assert result.energy == result.energies[-1] == result.final.energy
    np.testing.assert_array_equal(result.gradients[-1], result.final.gradient)
    np.testing.assert_array_equal(result.trajectory[0].coords, molecule.coords)
    assert result.molecule is result.trajectory[-1]
    assert all(s.rejected is False for s in result.steps)
    # the reported criteria are the ones geomeTRIC converged on
    last = result.steps[-1]
    assert all(
        result.criteria.met(
            last.delta_energy, last.rms_gradient, last.max_gradient, last.rms_displacement, last.max_displacement
        ).values()
    )


def test_constrained_angle_matches_pyscf_geometric(work):
    """A $set constraint (geomeTRIC's format) drives the H-O-H angle to 100 degrees."""
    molecule = Molecule.from_string(WATER_XYZ)
    result = optimize(molecule, "6-31g", "rhf", device="cpu", constraints=CONSTRAINTS)
    o, h1, h2 = result.molecule.coords
    u, v = h1 - o, h2 - o
    angle = np.degrees(np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
    assert abs(angle - 100.0) < 1e-2  # geomeTRIC's constraint tolerance (Convergence_cmax)
    path = work / "constraints.txt"
    path.write_text(CONSTRAINTS)
    reference, _ = pyscf_optimum(molecule, "6-31g", "rhf", constraints=str(path))
    assert abs(result.energy - reference) < ENERGY_TOL


def test_transition_state_matches_pyscf_geometric(work):
    """Ammonia's inversion saddle point, from a Hessian by finite differences of the analytic
    gradients (geomeTRIC's hessian='first', run in the private temporary folder): same
    energy as PySCF + geomeTRIC's search, one negative Hessian eigenvalue (PySCF's analytic
    Hessian at our geometry), nothing left in the working directory."""
    from pyscf import hessian  # noqa: F401  (registers mf.Hessian)

    molecule = Molecule.from_string(NH3_TS_GUESS)
    before, temps = sorted(os.listdir(work)), _leftovers()
    result = optimize(molecule, "sto-3g", "rhf", device="cpu", transition_state=True)
    assert sorted(os.listdir(work)) == before and _leftovers() == temps
    assert result.converged and result.transition_state
    assert result.gradient_evaluations >= len(result.steps) + 6 * molecule.natm  # the Hessian's gradients
    reference, _ = pyscf_optimum(molecule, "sto-3g", "rhf", transition=True)
    assert abs(result.energy - reference) < ENERGY_TOL
    mf = _pyscf_mf(to_pyscf(result.molecule, load_basis(result.molecule, "sto-3g")), "rhf")
    mf.kernel()
    h = mf.Hessian().kernel().transpose(0, 2, 1, 3).reshape(12, 12)
    eigenvalues = np.linalg.eigvalsh(h)
    assert np.sum(eigenvalues < -1e-3) == 1


def test_convergence_sets_are_geometrics():
    """The thresholds hartree prints are those geomeTRIC's OptParams uses for each set."""
    from geometric.params import OptParams

    for criteria in CONVERGENCE_SETS.values():
        params = OptParams(convergence_set=criteria.geometric_name)
        assert (
            params.Convergence_energy,
            params.Convergence_grms,
            params.Convergence_gmax,
            params.Convergence_drms,
            params.Convergence_dmax,
        ) == (criteria.energy, criteria.grms, criteria.gmax, criteria.drms, criteria.dmax), criteria.name
