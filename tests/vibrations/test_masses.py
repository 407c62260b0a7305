"""Isotope masses against qcelemental's NIST table, and the --masses syntax."""

import numpy as np
import pytest

from hartree.constants import MAX_Z
from hartree.errors import InputError
from hartree.molecule import Molecule
from hartree.vibrations.masses import ISOTOPE_MASSES, NAMED_ISOTOPES, default_masses, masses_from_text

WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"


def test_table_equals_qcelemental():
    """Every element qcelemental knows (H..Ts), exactly; D and T too."""
    from qcelemental import periodictable

    assert len(ISOTOPE_MASSES) == MAX_Z + 1
    for z in range(1, 118):
        assert ISOTOPE_MASSES[z] == periodictable.to_mass(z), z
    for name, mass in NAMED_ISOTOPES.items():
        assert mass == periodictable.to_mass(name)


def test_overrides():
    mol = Molecule.from_string(WATER)
    base = default_masses(mol.numbers)
    np.testing.assert_array_equal(masses_from_text(mol, None), base)
    d = NAMED_ISOTOPES["D"]
    np.testing.assert_array_equal(masses_from_text(mol, "H=D"), [base[0], d, d])
    np.testing.assert_array_equal(masses_from_text(mol, ["2:2.5", "1:17.99916"]), [17.99916, 2.5, base[2]])
    np.testing.assert_array_equal(masses_from_text(mol, "h=d, 3:1.00782503223"), [base[0], d, base[2]])


@pytest.mark.parametrize(
    "spec,message",
    [
        ("4:2.0", "atom numbers run from 1 to 3"),
        ("x:2.0", "is not an atom number"),
        ("C=13.0034", "the molecule has no C atom"),
        ("Q=1", "is not an element symbol"),
        ("2:heavy", "is not a mass"),
        ("2:-1", "a mass must lie between"),
        ("2:nan", "a mass must lie between"),
        ("2", "expected ATOM:MASS"),
    ],
)
def test_bad_overrides(spec, message):
    with pytest.raises(InputError, match=message):
        masses_from_text(Molecule.from_string(WATER), spec)
