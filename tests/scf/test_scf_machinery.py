"""SCF machinery: options, errors, non-convergence, drivers, incremental Fock
builds, checkpoints (restart, kill, related and incompatible runs), the
DIIS/ADIIS/EDIIS solvers, guesses and the fallback on a hard case.
"""

import dataclasses
import os

import h5py
import numpy as np
import pyscf.scf
import pytest

from hartree.basis import load_basis
from hartree.errors import ConvergenceError, InputError
from hartree.molecule import Molecule
from hartree.scf import RHF, ROHF, UHF, IterationRecord, SCFOptions, kernel, read_checkpoint, run
from hartree.scf.diis import adiis_coefficients, cdiis_coefficients, ediis_coefficients, minimize_on_simplex
from hartree.scf.guess import sad_density
from hartree.scf.linalg import orthogonalizer
from tests.helpers import to_pyscf, water
from tests.scf.engines import make_engine


@pytest.fixture(scope="module")
def h2o():
    mol = water()
    basis = load_basis(mol, "6-31g")
    return mol, basis, make_engine(mol, basis)


@pytest.fixture(scope="module")
def h2o_reference(h2o):
    """Converged RHF/6-31G energy of water (hartree, full rebuilds, tight)."""
    mol, basis, eng = h2o
    res = kernel(mol, basis, SCFOptions(conv_tol=1e-11, incremental_fock=False), eng)
    assert res.converged
    return res


# --------------------------------------------------------------------- options / errors
def test_options_are_typed_and_validated():
    with pytest.raises(TypeError):
        SCFOptions(conv_tol_gradient=1e-6)  # typo fails loudly
    with pytest.raises(InputError):
        SCFOptions(method="rks")
    with pytest.raises(InputError):
        SCFOptions(guess="checkpoint")  # needs a path
    with pytest.raises(InputError):
        SCFOptions(guess="huckel")
    with pytest.raises(InputError):
        SCFOptions(damping=1.5)
    opts = SCFOptions(method="UHF")
    assert opts.method == "uhf"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.max_cycle = 3
    assert opts.replace(max_cycle=3).max_cycle == 3


def test_run_rejects_impossible_methods(h2o):
    _, basis, eng = h2o
    oh = Molecule.from_string("O 0 0 0; H 0 0 0.97")  # 9 electrons
    with pytest.raises(InputError, match="RHF needs an even number of electrons; use --method uhf or rohf"):
        run(oh, "sto-3g", "rhf")
    o2 = Molecule.from_string("O 0 0 0; O 0 0 1.21", multiplicity=3)
    with pytest.raises(InputError, match="multiplicity"):
        run(o2, "sto-3g", "rhf")
    with pytest.raises(InputError, match="unknown SCF method"):
        run(water(), basis, "mp2", engine=eng)


def test_run_with_basis_name_and_default_engine():
    mol = water()
    res = run(mol, "sto-3g", conv_tol_grad=1e-7)
    mf = pyscf.scf.RHF(to_pyscf(mol, load_basis(mol, "sto-3g")))
    mf.conv_tol = 1e-11
    mf.kernel()
    assert res.converged and abs(res.energy - mf.e_tot) < 1e-8
    assert res.basis.name.lower() == "sto-3g" and res.device
    assert res.wall_time > 0 and res.mo_coeff.shape == (7, 7)


def test_nonconvergence_is_reported_never_silent(h2o):
    mol, basis, eng = h2o
    res = kernel(mol, basis, SCFOptions(max_cycle=2), eng)
    assert res.converged is False
    assert res.iterations == 2
    assert np.isfinite(res.energy)
    assert any("not converged" in n for n in res.notes)
    with pytest.raises(ConvergenceError) as info:
        run(mol, basis, "rhf", engine=eng, max_cycle=2)
    assert info.value.result is not None and info.value.result.converged is False
    res2 = run(mol, basis, "rhf", engine=eng, max_cycle=2, allow_unconverged=True)
    assert res2.converged is False


def test_drivers_and_callback(h2o, h2o_reference):
    mol, basis, eng = h2o
    records = []
    drv = RHF(mol, basis, engine=eng, callback=records.append)
    res = drv.run()
    assert drv.result is res and drv.options.method == "rhf"
    assert abs(res.energy - h2o_reference.energy) < 1e-9
    assert records and all(isinstance(r, IterationRecord) for r in records)
    assert records[0].cycle == 0 and records[-1].cycle == res.iterations
    times = [r.time for r in records]
    assert times == sorted(times)
    assert res.history == records
    assert UHF.method == "uhf" and ROHF.method == "rohf"
    # UHF on a closed shell collapses to RHF
    ures = UHF(mol, basis, engine=eng).run()
    assert abs(ures.energy - h2o_reference.energy) < 1e-8
    assert abs(ures.s_squared) < 1e-8


# --------------------------------------------------------------------- Fock builds
def test_incremental_fock_matches_full_rebuilds(h2o, h2o_reference):
    mol, basis, eng = h2o
    inc = kernel(mol, basis, SCFOptions(incremental_fock=True, full_rebuild_every=4, conv_tol=1e-11), eng)
    assert inc.converged
    assert abs(inc.energy - h2o_reference.energy) < 1e-10
    steps = [r.step for r in inc.history[1:]]
    assert any(s.endswith("+full") or s == "full-rebuild" for s in steps)
    assert any(not (s.endswith("+full") or s == "full-rebuild") for s in steps)
    # the accepted (last) record always comes from a full build
    assert inc.history[-1].step.endswith("+full") or inc.history[-1].step == "full-rebuild"


def test_level_shift_and_damping_reach_the_same_state(h2o, h2o_reference):
    mol, basis, eng = h2o
    res = kernel(mol, basis, SCFOptions(level_shift=0.4, damping=0.4, max_cycle=200), eng)
    assert res.converged
    assert abs(res.energy - h2o_reference.energy) < 1e-8
    steps = [r.step for r in res.history]
    assert any("damped" in s for s in steps) and any("shift" in s for s in steps)
    np.testing.assert_allclose(res.mo_energy, h2o_reference.mo_energy, atol=1e-5)


def test_ediis_variant_converges(h2o, h2o_reference):
    mol, basis, eng = h2o
    res = kernel(mol, basis, SCFOptions(fallback_kind="ediis", guess="core"), eng)
    assert res.converged and abs(res.energy - h2o_reference.energy) < 1e-8
    assert any("ediis" in r.step for r in res.history)


# --------------------------------------------------------------------- checkpoints
def test_checkpoint_restart_converges_immediately(tmp_path, h2o, h2o_reference):
    mol, basis, eng = h2o
    path = str(tmp_path / "h2o.chk")
    first = kernel(mol, basis, SCFOptions(checkpoint=path), eng)
    assert first.converged
    data = read_checkpoint(path)
    assert data.converged and data.method == "rhf"
    assert abs(data.energy - first.energy) < 1e-12
    np.testing.assert_array_equal(data.numbers, mol.numbers)
    assert data.basis_name == basis.name and data.hartree_version
    second = kernel(mol, basis, SCFOptions(checkpoint=path), eng)
    assert second.converged and second.iterations <= 2
    assert second.history[0].step == "restart"
    assert any("restarted from checkpoint" in n for n in second.notes)
    assert abs(second.energy - h2o_reference.energy) < 1e-9
    # explicit guess='checkpoint' works too, and fails loudly without a file
    third = kernel(mol, basis, SCFOptions(guess="checkpoint", checkpoint=path), eng)
    assert third.iterations <= 2
    with pytest.raises(InputError, match="does not exist"):
        kernel(mol, basis, SCFOptions(guess="checkpoint", checkpoint=str(tmp_path / "no")), eng)


def test_killed_run_leaves_a_readable_checkpoint(tmp_path, h2o, h2o_reference):
    mol, basis, eng = h2o
    path = str(tmp_path / "killed.chk")

    def kill_after_cycle_3(record):
        if record.cycle == 3:
            raise KeyboardInterrupt("simulated kill")

    with pytest.raises(KeyboardInterrupt):
        kernel(mol, basis, SCFOptions(checkpoint=path, callback=kill_after_cycle_3), eng)
    data = read_checkpoint(path)
    assert data.cycle == 3 and not data.converged
    assert data.dm.shape == (1, basis.nao, basis.nao)
    assert not [f for f in os.listdir(tmp_path) if f.endswith("tmp")]  # no temp litter
    resumed = kernel(mol, basis, SCFOptions(checkpoint=path), eng)
    assert resumed.converged and resumed.history[0].step == "restart"
    assert abs(resumed.energy - h2o_reference.energy) < 1e-8


def test_related_checkpoints_seed_the_guess(tmp_path, h2o, h2o_reference):
    mol, basis, eng = h2o
    path = str(tmp_path / "rel.chk")
    kernel(mol, basis, SCFOptions(checkpoint=path), eng)
    before = read_checkpoint(path).fingerprint
    # other method and charge: RHF orbitals seed a UHF cation (read only: guess_from)
    cation = mol.replace(charge=1)
    eng_c = make_engine(cation, basis)
    res = kernel(cation, basis, SCFOptions(method="uhf", guess_from=path), eng_c)
    fresh = kernel(cation, basis, SCFOptions(method="uhf"), eng_c)
    assert res.converged and any("another job" in n for n in res.notes)
    assert abs(res.energy - fresh.energy) < 1e-8
    assert read_checkpoint(path).fingerprint == before  # never written
    # another job's checkpoint is not replaced without overwrite_checkpoint
    with pytest.raises(InputError, match="belongs to another job"):
        kernel(cation, basis, SCFOptions(method="uhf", checkpoint=path), eng_c)
    assert read_checkpoint(path).fingerprint == before
    # RHF orbitals seed ROHF with guess='checkpoint': read, left unchanged, no checkpoint
    path_r = str(tmp_path / "rohf.chk")
    kernel(mol, basis, SCFOptions(checkpoint=path_r), eng)
    res_r = kernel(cation, basis, SCFOptions(method="rohf", checkpoint=path_r, guess="checkpoint"), eng_c)
    fresh_r = kernel(cation, basis, SCFOptions(method="rohf"), eng_c)
    assert res_r.converged and fresh_r.converged
    assert abs(res_r.energy - fresh_r.energy) < 1e-8
    assert any("left unchanged" in n for n in res_r.notes)
    assert read_checkpoint(path_r).method == "rhf"
    # ... and with overwrite_checkpoint the file then holds the ROHF run
    kernel(
        cation,
        basis,
        SCFOptions(method="rohf", checkpoint=path_r, guess="checkpoint", overwrite_checkpoint=True),
        eng_c,
    )
    assert read_checkpoint(path_r).method == "rohf"
    # other geometry, same basis functions
    path2 = str(tmp_path / "geom.chk")
    kernel(mol, basis, SCFOptions(checkpoint=path2), eng)
    moved = mol.replace(coords=mol.coords * 1.02)
    basis_m = load_basis(moved, "6-31g")
    eng_m = make_engine(moved, basis_m)
    res_m = kernel(moved, basis_m, SCFOptions(guess_from=path2), eng_m)
    fresh_m = kernel(moved, basis_m, SCFOptions(), eng_m)
    assert res_m.converged and any("geometry" in n for n in res_m.notes)
    assert abs(res_m.energy - fresh_m.energy) < 1e-8
    assert res_m.iterations <= fresh_m.iterations


def test_incompatible_checkpoint_is_refused_or_replaced_on_request(tmp_path, h2o, h2o_reference):
    mol, basis, eng = h2o
    path = str(tmp_path / "sto.chk")
    small = load_basis(mol, "sto-3g")
    kernel(mol, small, SCFOptions(checkpoint=path), make_engine(mol, small))
    with pytest.raises(InputError, match="other atoms or another basis"):
        kernel(mol, basis, SCFOptions(guess_from=path), eng)
    with pytest.raises(InputError, match="belongs to another job"):
        kernel(mol, basis, SCFOptions(checkpoint=path), eng)
    res = kernel(mol, basis, SCFOptions(checkpoint=path, overwrite_checkpoint=True), eng)
    assert res.converged and abs(res.energy - h2o_reference.energy) < 1e-8
    assert read_checkpoint(path).basis_arrays["exponents"].size == basis.exponents.size


def test_never_overwrites_a_foreign_file(tmp_path, h2o):
    mol, basis, eng = h2o
    path = tmp_path / "notes.txt"
    path.write_text("my precious notes\n")
    with pytest.raises(InputError, match="not a hartree checkpoint"):
        kernel(mol, basis, SCFOptions(checkpoint=str(path)), eng)
    assert path.read_text() == "my precious notes\n"
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(InputError):
        kernel(mol, basis, SCFOptions(checkpoint=str(other)), eng)


# --------------------------------------------------------------------- solvers / guesses
def test_minimize_on_simplex_matches_brute_force():
    rng = np.random.default_rng(7)
    grid = np.linspace(0, 1, 201)
    for _ in range(5):
        g = rng.normal(size=3)
        a = rng.normal(size=(3, 3))
        h = a + a.T  # indefinite in general
        c = minimize_on_simplex(g, h)
        assert c.min() >= 0 and abs(c.sum() - 1) < 1e-12
        f = g @ c + 0.5 * c @ h @ c
        best = min(
            g @ v + 0.5 * v @ h @ v
            for x in grid
            for y in grid[: int(round((1 - x) * 200)) + 1]
            for v in [np.array([x, y, 1 - x - y])]
        )
        assert f <= best + 1e-12


def test_cdiis_is_exact_for_linear_errors():
    # e_i = e* + i d: the combination with zero error is 2 e_0 - e_1 ... solvable exactly
    rng = np.random.default_rng(3)
    d = rng.normal(size=(1, 4, 4))
    errs = [(1.0 - k) * d for k in range(3)]  # d, 0, -d
    c = cdiis_coefficients(errs)
    assert abs(c.sum() - 1) < 1e-12
    assert np.abs(sum(ci * e for ci, e in zip(c, errs))).max() < 1e-12


def test_adiis_and_ediis_pick_the_lower_energy_for_a_quadratic_model():
    # One-dimensional quadratic "energy" E(D) = h D + D^2 / 2 with F = h + D.
    h = np.array([[[-1.0]]])
    dms = [np.array([[[0.0]]]), np.array([[[2.0]]])]
    focks = [h + d for d in dms]
    energies = [float((h * d + 0.5 * d * d).sum()) for d in dms]
    for c in (adiis_coefficients(dms, focks), ediis_coefficients(dms, focks, energies)):
        # minimum of E on the segment is at D = 1 -> c = (0.5, 0.5)
        np.testing.assert_allclose(c, [0.5, 0.5], atol=1e-12)


def test_orthogonalizer_drops_linear_dependencies():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 4))
    s = a @ a.T + 1e-10 * np.eye(6)  # rank 4 plus a tiny shift
    x, ndropped = orthogonalizer(s, 1e-8)
    assert ndropped == 2 and x.shape == (6, 4)
    np.testing.assert_allclose(x.T @ s @ x, np.eye(4), atol=1e-8)


def test_near_linear_dependencies_are_dropped_with_a_warning():
    """H2 with a duplicated s exponent on each atom (1.0 and 1.0 + 1e-6): two
    overlap eigenvalues ~1e-13 are dropped; the energy equals that of the basis
    without the duplicates."""
    from hartree.basis import Basis, normalized_coefficients

    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")

    def h_basis(exponents_per_atom):
        atoms, ls, starts, centers, exps, coefs = [], [], [], [], [], []
        for ia, exps_a in enumerate(exponents_per_atom):
            for a in exps_a:
                atoms.append(ia)
                ls.append(0)
                starts.append(len(exps))
                centers.append(mol.coords[ia])
                exps.append(a)
                coefs.append(float(normalized_coefficients(0, [a], [1.0])[0]))
        return Basis(
            name="test-h",
            pure=True,
            shell_atom=atoms,
            shell_l=ls,
            shell_nprim=[1] * len(ls),
            shell_prim_start=starts,
            shell_center=centers,
            exponents=exps,
            coefficients=coefs,
        )

    dup = h_basis([[0.3, 1.0, 1.0 + 1e-6, 3.0]] * 2)
    ref = h_basis([[0.3, 1.0, 3.0]] * 2)
    with pytest.warns(UserWarning, match="near-linearly-dependent"):
        res = kernel(mol, dup, SCFOptions(guess="core"), make_engine(mol, dup))
    assert res.converged and res.mo_coeff.shape == (8, 6)
    assert any("dropped 2" in n for n in res.notes)
    res_ref = kernel(mol, ref, SCFOptions(guess="core"), make_engine(mol, ref))
    assert abs(res.energy - res_ref.energy) < 1e-7


def test_sad_density_and_quality(h2o, h2o_reference):
    mol, basis, eng = h2o
    s = eng.overlap()
    d = sad_density(mol, basis, eng)
    assert abs(np.sum(d * s) - mol.numbers.sum()) < 1e-6  # neutral atoms
    np.testing.assert_allclose(d, d.T, atol=1e-12)
    sad = kernel(mol, basis, SCFOptions(guess="sad"), eng)
    core = kernel(mol, basis, SCFOptions(guess="core"), eng)
    e = h2o_reference.energy
    assert abs(sad.history[0].energy - e) < abs(core.history[0].energy - e)
    assert abs(sad.history[0].energy - e) < 0.2
    assert sad.converged and core.converged
    assert abs(sad.energy - core.energy) < 1e-8


# --------------------------------------------------------------------- hard case
def test_fallback_converges_cn_radical_hard_case():
    """CN radical, UHF/6-31G*: PySCF 2.14's default DIIS (minao guess) does not converge in
    its 50 cycles (seen when this test was written); hartree's ADIIS+DIIS fallback converges from the core guess to the
    state PySCF reaches only with a level shift."""
    mol = Molecule.from_string("C 0 0 0; N 0 0 1.1718")
    basis = load_basis(mol, "6-31g*")
    pmol = to_pyscf(mol, basis)
    shifted = pyscf.scf.UHF(pmol)
    shifted.conv_tol = 1e-11
    shifted.conv_tol_grad = 1e-8
    shifted.level_shift = 0.2
    shifted.max_cycle = 200
    shifted.kernel()
    assert shifted.converged
    res = kernel(
        mol,
        basis,
        SCFOptions(method="uhf", guess="core", fallback=True, max_cycle=60, conv_tol_grad=1e-7),
        make_engine(mol, basis),
    )
    assert res.converged
    assert abs(res.energy - shifted.e_tot) < 1e-8
    assert abs(res.s_squared - shifted.spin_square()[0]) < 1e-5
    assert any("adiis" in r.step for r in res.history)


def test_stage_timings_add_up_to_the_wall_time(h2o):
    """SCFResult.timings: every stage billed once, their sum within the wall time (they
    cover the run from the one-electron matrices to the analysis; the rest is result
    assembly), and the build counts equal the records of the history."""
    from hartree.cli.report import stage_times_text
    from hartree.scf.kernel import STAGES

    mol, basis, eng = h2o
    res = kernel(mol, basis, SCFOptions(conv_tol=1e-10, full_rebuild_every=4), eng)
    t = res.timings
    assert set(STAGES) <= set(t) and all(t[k] >= 0.0 for k in STAGES)
    total = sum(t[k] for k in STAGES)
    assert 0.5 * res.wall_time < total <= res.wall_time + 1e-6
    # one build per history record, the guess build included; full ones are the guess,
    # every 4th cycle and the confirming rebuild
    assert t["full_builds"] + t["incremental_builds"] == len(res.history)
    assert t["incremental_builds"] > 0 and t["full_builds"] >= 2
    text = stage_times_text(t)
    assert f"({t['full_builds']} full + {t['incremental_builds']} incremental builds" in text
    early = t["early_screening_builds"]
    assert (f", {early} with early screening)" in text) == (early > 0)


def test_gradient_criterion_is_sqrt2_times_pyscf_orbital_gradient_norm():
    """conv_tol_grad measures ||X^T (F D S - S D F) X||_F; for RHF that is sqrt(2) times
    PySCF's norm_gorb = ||2 F_vo|| (benchmarks/gpu_jk.py relies on it to give GPU4PySCF the
    same criterion).  Checked at an unconverged state, to 1e-12 relative."""
    from hartree.scf import fock as fk

    mol = water()
    pmol = to_pyscf(mol, load_basis(mol, "6-31g"))
    mf = pyscf.scf.RHF(pmol)
    mf.max_cycle, mf.verbose = 2, 0
    mf.kernel()
    dm = mf.make_rdm1(mf.mo_coeff, mf.mo_occ)
    f, s = mf.get_fock(dm=dm), mf.get_ovlp()
    x, _ = orthogonalizer(s)
    ours = np.linalg.norm(fk.commutator_errors([f], [dm], s, x))
    gorb = np.linalg.norm(mf.get_grad(mf.mo_coeff, mf.mo_occ, f))
    assert gorb > 1e-4
    assert abs(ours / gorb - 2**0.5) < 1e-12 * 2**0.5


@pytest.mark.parametrize("method,charge,mult", [("rhf", 0, 1), ("uhf", 1, 2), ("rohf", 1, 2)])
def test_guess_orbitals_of_a_nearby_geometry(method, charge, mult):
    """guess_orbitals=(mo_coeff, mo_energy) of a run at a nearby geometry starts the SCF from
    those orbitals (re-orthonormalised): the same energy as from the SAD guess, in fewer
    cycles, and a note says where the guess came from."""
    from hartree.molecule import Molecule
    from hartree.scf import run

    geometry = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"
    mol = Molecule.from_string(geometry, charge=charge, multiplicity=mult)
    first = run(mol, "6-31g*", method, device="cpu", conv_tol=1e-10)
    coords = mol.coords.copy()
    coords[1, 2] += 0.02
    moved = mol.replace(coords=coords)
    warm = run(moved, "6-31g*", method, device="cpu", conv_tol=1e-10, guess_orbitals=(first.mo_coeff, first.mo_energy))
    cold = run(moved, "6-31g*", method, device="cpu", conv_tol=1e-10)
    assert abs(warm.energy - cold.energy) < 1e-8
    assert warm.iterations <= cold.iterations
    assert "guess from given orbitals (a previous run, e.g. a nearby geometry)" in warm.notes
