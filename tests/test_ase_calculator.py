"""hartree.ase.Hartree, the ASE calculator: energy and forces equal `hartree run --gradient`
(1e-8 eV, 1e-7 eV/Angstrom), the dipole the SCF's, ASE's BFGS optimizes water with it, moved
atoms reuse the previous orbitals, and changed parameters do not."""

import json

import numpy as np
import pytest
from ase import Atoms, units
from ase.io import read
from ase.optimize import BFGS

from hartree.ase import Hartree
from tests.cli.conftest import WATER_XYZ, run_main

GUESS_NOTE = "guess from given orbitals (a previous run, e.g. a nearby geometry)"


@pytest.mark.parametrize("method,charge,mult", [("rhf", 0, 1), ("uhf", 1, 2)])
def test_energy_and_forces_equal_the_cli(tmp_path, method, charge, mult):
    xyz = tmp_path / "water.xyz"
    xyz.write_text(WATER_XYZ)
    out = tmp_path / "grad.json"
    args = ["run", xyz, "-b", "6-31g*", "-m", method, "-c", charge, "-s", mult, "--device", "cpu"]
    code, _, err = run_main([str(a) for a in [*args, "--gradient", "--json", out, "-q"]])
    assert code == 0, err
    doc = json.loads(out.read_text())
    atoms = read(str(xyz))
    atoms.calc = Hartree(basis="6-31g*", method=method, charge=charge, multiplicity=mult, device="cpu")
    forces = atoms.get_forces()
    energy = atoms.get_potential_energy()
    assert abs(energy - doc["properties"]["return_energy"] * units.Hartree) < 1e-8
    ref = -np.asarray(doc["return_result"]) * units.Hartree / units.Bohr
    np.testing.assert_allclose(forces, ref, rtol=0, atol=1e-7)
    np.testing.assert_allclose(
        atoms.get_dipole_moment(), np.asarray(doc["properties"]["scf_dipole_moment"]) * units.Bohr, rtol=0, atol=1e-10
    )


def test_bfgs_optimizes_water_and_reuses_orbitals():
    atoms = Atoms("OHH", positions=[[0.0, 0.0, 0.15], [0.0, 0.80, -0.45], [0.0, -0.74, -0.50]])
    calc = Hartree(basis="sto-3g", method="rhf", device="cpu")
    atoms.calc = calc
    first = atoms.get_potential_energy()
    assert GUESS_NOTE not in calc.scf_result.notes
    opt = BFGS(atoms, logfile=None)
    assert opt.run(fmax=0.01, steps=40)
    assert np.abs(atoms.get_forces()).max() < 0.01 and atoms.get_potential_energy() < first
    assert GUESS_NOTE in calc.scf_result.notes  # later steps start from the previous orbitals
    calc.set(basis="6-31g")  # a new model: results cleared, no orbitals of another basis reused
    assert calc.results == {}
    atoms.get_potential_energy()
    assert GUESS_NOTE not in calc.scf_result.notes
