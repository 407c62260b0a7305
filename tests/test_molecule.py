"""Molecule: XYZ/QCSchema parsing, validation errors, nuclear repulsion vs PySCF."""

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hartree.constants import ANGSTROM_IN_BOHR, BOHR_IN_ANGSTROM, ELEMENT_SYMBOLS, MAX_Z, atomic_number, element_symbol
from hartree.errors import InputError
from hartree.molecule import Molecule
from tests.helpers import random_molecule, water

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------- constants
def test_constants():
    assert BOHR_IN_ANGSTROM == 0.529177210903  # CODATA 2018
    assert MAX_Z == 118 and ELEMENT_SYMBOLS[86] == "Rn" and ELEMENT_SYMBOLS[118] == "Og"
    assert atomic_number("cl") == 17 and atomic_number("BR") == 35 and atomic_number("8") == 8
    assert element_symbol(53) == "I"
    for bad in ("Xx", "", "0", "119", "²", "C1"):
        with pytest.raises(InputError):
            atomic_number(bad)


def test_element_table_matches_pyscf():
    from pyscf.data.elements import ELEMENTS

    assert list(ELEMENT_SYMBOLS[1:]) == [s for s in ELEMENTS[1:119]]


# ---------------------------------------------------------------- parsing
def test_from_string_forms_agree():
    block = "3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n"
    lines = "O 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692"
    semi = "O 0 0 0.1173; H 0 0.7572 -0.4692;H 0 -0.7572 -0.4692"
    numbers = "8 0 0 0.1173; 1 0 0.7572 -0.4692; 1 0 -0.7572 -0.4692"
    mols = [Molecule.from_string(t) for t in (block, lines, semi, numbers)]
    for m in mols:
        assert m.symbols == ("O", "H", "H")
        np.testing.assert_array_equal(m.numbers, [8, 1, 1])
        np.testing.assert_allclose(m.coords, mols[0].coords, rtol=0, atol=1e-15)
    np.testing.assert_allclose(mols[0].coords[1], np.array([0, 0.7572, -0.4692]) / BOHR_IN_ANGSTROM, rtol=1e-15)
    m = mols[0]
    assert (m.natm, m.nelectron, m.charge, m.multiplicity, m.nalpha, m.nbeta) == (3, 10, 0, 1, 5, 5)
    with pytest.raises(ValueError):
        m.coords[0, 0] = 1.0  # read-only


def test_bohr_unit_and_case():
    m = Molecule.from_string("o 0 0 0; cL 0 0 3", unit="bohr")
    assert m.symbols == ("O", "Cl")
    np.testing.assert_allclose(m.coords[1], [0, 0, 3], atol=0)


def test_blank_comment_line_and_trailing_blank(tmp_path):
    path = write(tmp_path, "h2.xyz", "2\n\nH 0 0 0\nH 0 0 0.74\n\n\n")
    m = Molecule.from_xyz(path)
    assert m.natm == 2 and m.multiplicity == 1


def test_comment_charge_multiplicity_and_override(tmp_path):
    path = write(tmp_path, "oh.xyz", "2\nhydroxyl CHARGE=-1 Multiplicity=1\nO 0 0 0\nH 0 0 0.97\n")
    m = Molecule.from_xyz(path)
    assert (m.charge, m.multiplicity, m.nelectron) == (-1, 1, 10)
    m = Molecule.from_xyz(path, charge=0, multiplicity=2)
    assert (m.charge, m.multiplicity) == (0, 2)
    m = Molecule.from_xyz(path, multiplicity=3)  # comment charge kept, multiplicity overridden
    assert (m.charge, m.multiplicity) == (-1, 3)


def test_default_multiplicity():
    assert Molecule.from_string("H 0 0 0").multiplicity == 2
    assert Molecule.from_string("O 0 0 0; H 0 0 1").multiplicity == 2
    assert Molecule.from_string("O 0 0 0; H 0 0 1", charge=-1).multiplicity == 1
    assert Molecule.from_string("H 0 0 0", charge=1).nelectron == 0


def test_hill_formula_of_molecules():
    """Molecule.formula (Hill order: C, H, then alphabetical; without carbon all alphabetical),
    the same function the reports and hartree batch's summary use."""
    from hartree.cli.report import formula
    from hartree.molecule import hill_formula

    assert formula is hill_formula
    cases = {
        "O 0 0 0; H 0 0.76 0.59; H 0 -0.76 0.59": "H2O",
        "N 0 0 0; H 0 0.94 -0.38; H -0.81 -0.47 -0.38; H 0.81 -0.47 -0.38": "H3N",
        "H 0 0 0; C 0 0 1.1; N 0 0 2.3": "CHN",
        "Cl 0 0 0; C 0 0 1.8; H 0 1 2.2; H 0 -1 2.2; Br 0 0 4": "CH2BrCl",
        "Na 0 0 0; Cl 0 0 2.4": "ClNa",
    }
    for text, expected in cases.items():
        mol = Molecule.from_string(text)
        assert mol.formula == hill_formula(mol.symbols) == expected
        assert repr(mol).startswith(f"Molecule({expected}, natm={mol.natm},")


def test_examples():
    caf = Molecule.from_file(os.path.join(EXAMPLES, "caffeine.xyz"))
    assert caf.natm == 24 and caf.nelectron == 102
    assert sorted(set(caf.symbols)) == ["C", "H", "N", "O"]
    assert [caf.symbols.count(s) for s in "CHNO"] == [8, 10, 4, 2]
    c = caf.coords * BOHR_IN_ANGSTROM
    d = np.linalg.norm(c[:, None] - c[None], axis=2) + np.eye(24) * 10
    assert 1.05 < d.min() < 1.12  # shortest bond is C-H
    w = Molecule.from_xyz(os.path.join(EXAMPLES, "water.xyz"))
    oh = np.linalg.norm(w.coords[1] - w.coords[0]) * BOHR_IN_ANGSTROM
    assert abs(oh - 0.9572) < 1e-6


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "text, match",
    [
        ("3\nc\nO 0 0 0\nH 0 0 1\n", "count line says 3 atoms but 2"),
        ("1\nc\nO 0 0 0\nH 0 0 1\n", "count line says 1 atoms but 2"),
        ("2\nc\nO 0 0 0\nH 0 0\n", r"xyz text line 4: expected 'symbol x y z', got 'H 0 0'"),
        ("O 0 0 0\nH 0 zero 1", r"line 2: expected 'symbol x y z'"),
        ("O 0 0 0\nXx 0 0 1", r"line 2: unknown element 'Xx'"),
        ("O 0 0 0; H 0 0 nan", "finite"),
        ("", "no atoms"),
        ("2\ncharge=abc\nH 0 0 0\nH 0 0 1\n", "charge must be an integer"),
    ],
)
def test_parse_errors(text, match):
    with pytest.raises(InputError, match=match):
        Molecule.from_string(text)


def test_file_errors(tmp_path):
    missing = str(tmp_path / "nope.xyz")
    with pytest.raises(InputError, match="file not found: " + missing):
        Molecule.from_xyz(missing)
    bad = write(tmp_path, "caffeine.xyz", "4\n\nC 0 0 0\nC 0 0 1.4\nH 0 1 0\nH 0 1 0 0 0\n")
    with pytest.raises(InputError, match=r"caffeine.xyz line 6: expected 'symbol x y z', got"):
        Molecule.from_xyz(bad)
    with pytest.raises(InputError, match="cannot tell the format"):
        Molecule.from_file(write(tmp_path, "m.pdb", "x"))
    (tmp_path / "bin.xyz").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InputError):
        Molecule.from_xyz(str(tmp_path / "bin.xyz"))


def test_validation_errors():
    with pytest.raises(InputError, match=r"atoms 1 \(H\) and 3 \(H\) are 0.0945 bohr apart"):
        Molecule.from_string("H 0 0 0; O 0 0 3; H 0 0 0.05")
    with pytest.raises(InputError, match="charge 3 leaves -1 electrons"):
        Molecule.from_string("H 0 0 0; H 0 0 0.74", charge=3)
    with pytest.raises(InputError, match="multiplicity must be at least 1"):
        Molecule.from_string("H 0 0 0; H 0 0 0.74", multiplicity=0)
    with pytest.raises(InputError, match="multiplicity 2 is incompatible with 2 electrons"):
        Molecule.from_string("H 0 0 0; H 0 0 0.74", multiplicity=2)
    with pytest.raises(InputError, match="multiplicity 5 is impossible with 2 electrons"):
        Molecule.from_string("H 0 0 0; H 0 0 0.74", multiplicity=5)
    with pytest.raises(InputError, match="multiplicity 3 is impossible with 1 electrons"):
        Molecule.from_string("H 0 0 0", multiplicity=3)
    with pytest.raises(InputError, match="charge must be an integer"):
        Molecule.from_string("H 0 0 0", charge=0.5)
    with pytest.raises(InputError):
        Molecule(numbers=[119], coords=[[0, 0, 0]])
    with pytest.raises(InputError, match="no atoms"):
        Molecule(numbers=[], coords=np.zeros((0, 3)))
    with pytest.raises(InputError, match="shape"):
        Molecule(numbers=[1, 1], coords=[0, 0, 0])


def _nearest_brute_force(coords):
    """Reference for _nearest_atoms: each atom's nearest other atom by a double loop."""
    n = len(coords)
    dist = np.full(n, np.inf)
    for i in range(n):
        for j in range(n):
            if i != j:
                dist[i] = min(dist[i], float(np.sqrt(((coords[i] - coords[j]) ** 2).sum())))
    return dist


@pytest.mark.parametrize("tree_above", [10**6, 0])  # numpy all-pairs, then scipy's k-d tree
def test_nearest_atoms_both_ways_agree_with_brute_force(tree_above):
    from hartree.molecule import _nearest_atoms

    rng = np.random.default_rng(7)
    coords = rng.uniform(-8.0, 8.0, size=(40, 3))
    coords[5] = coords[17]  # two atoms at one place: distance 0, each the other's partner
    dist, partner = _nearest_atoms(coords, tree_above=tree_above)
    np.testing.assert_allclose(dist, _nearest_brute_force(coords), rtol=1e-12, atol=1e-12)
    assert not np.any(partner == np.arange(len(coords)))
    np.testing.assert_allclose(np.linalg.norm(coords - coords[partner], axis=1), dist, rtol=1e-12, atol=1e-12)
    assert (partner[5], partner[17]) == (17, 5)


def test_close_and_isolated_atoms_of_a_molecule_above_the_k_d_tree_size():
    """More than KDTREE_ATOMS atoms take the k-d tree; the checks say the same."""
    from hartree.molecule import KDTREE_ATOMS

    side = int(np.ceil((KDTREE_ATOMS + 2) ** (1 / 3)))
    grid = 3.0 * np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    coords = np.vstack([grid[: KDTREE_ATOMS + 1], [[-50.0, 0.0, 0.0]]])  # the last atom is far from all
    numbers = np.ones(len(coords), dtype=int)
    far = Molecule(numbers=numbers, coords=coords, multiplicity=1)
    assert far.natm > KDTREE_ATOMS
    assert far.isolated_atoms() == [(far.natm - 1, pytest.approx(50.0, rel=1e-12))]
    close = coords.copy()
    close[7] = close[2] + [0.0, 0.0, 0.05]
    with pytest.raises(InputError, match=r"atoms 3 \(H\) and 8 \(H\) are 0.05 bohr apart"):
        Molecule(numbers=numbers, coords=close, multiplicity=1)


# ---------------------------------------------------------------- QCSchema
def test_qcschema_roundtrip_and_atomic_input(tmp_path):
    m = water(charge=1)
    assert m.multiplicity == 2
    doc = m.to_qcschema()
    assert doc["schema_name"] == "qcschema_molecule" and len(doc["geometry"]) == 9
    assert doc["molecular_charge"] == 1.0 and doc["molecular_multiplicity"] == 2
    back = Molecule.from_qcschema(json.loads(json.dumps(doc)))
    np.testing.assert_array_equal(back.coords, m.coords)
    assert (back.charge, back.multiplicity, back.symbols) == (1, 2, m.symbols)
    path = tmp_path / "inp.json"
    path.write_text(
        json.dumps(
            {
                "schema_name": "qcschema_input",
                "driver": "energy",
                "model": {"method": "hf", "basis": "sto-3g"},
                "molecule": {"symbols": ["He"], "geometry": [0, 0, 0]},
            }
        )
    )
    he = Molecule.from_file(str(path))
    assert (he.natm, he.nelectron, he.multiplicity) == (1, 2, 1)
    assert Molecule.from_file(str(path), charge=1).multiplicity == 2


@pytest.mark.parametrize(
    "doc, match",
    [
        ({"symbols": ["H", "H"], "geometry": [0, 0, 0, 0, 0]}, "expected 3 x 2"),
        ({"symbols": ["Q"], "geometry": [0, 0, 0]}, "unknown element"),
        ({"geometry": [0, 0, 0]}, "needs 'symbols' and 'geometry'"),
        ({"symbols": ["H"], "geometry": [0, 0, 0], "molecular_multiplicity": 1}, "incompatible"),
        ({"symbols": ["H", "H"], "geometry": [0, 0, 0, 0, 0, 1], "real": [True, False]}, "ghost"),
        ([1, 2], "JSON object"),
    ],
)
def test_qcschema_errors(doc, match):
    with pytest.raises(InputError, match=match):
        Molecule.from_qcschema(doc)


def test_qcschema_bad_json(tmp_path):
    with pytest.raises(InputError, match="not valid JSON"):
        Molecule.from_qcschema(write(tmp_path, "m.json", "{symbols: "))


# ---------------------------------------------------------------- vs PySCF
def test_nuclear_repulsion_vs_pyscf():
    import pyscf.gto

    rng = np.random.default_rng(7)
    mols = [water(), Molecule.from_xyz(os.path.join(EXAMPLES, "caffeine.xyz"))]
    mols += [random_molecule(rng, natm=n, elements=("H", "C", "O", "Br", "Rn")) for n in (2, 5, 9)]
    for m in mols:
        p = pyscf.gto.M(
            atom=[(s, tuple(x)) for s, x in zip(m.symbols, m.coords)],
            unit="Bohr",
            basis="sto-3g" if max(m.numbers) < 36 else {"default": [[0, [1.0, 1.0]]]},
            spin=m.multiplicity - 1,
            verbose=0,
        )
        assert abs(m.nuclear_repulsion() - p.energy_nuc()) < 1e-10
    # H2 at 1.4 bohr: E_nuc = 1/1.4 exactly
    assert abs(Molecule.from_string("H 0 0 0; H 0 0 1.4", unit="bohr").nuclear_repulsion() - 1 / 1.4) < 1e-15


# ---------------------------------------------------------------- properties
_symbols = st.sampled_from(ELEMENT_SYMBOLS[1:87])
_coord = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_symbols, _coord, _coord, _coord), min_size=1, max_size=8), st.booleans())
def test_xyz_roundtrip(atoms, full_block):
    coords = np.array([a[1:] for a in atoms])
    d = np.linalg.norm(coords[:, None] - coords[None], axis=2) + np.eye(len(atoms)) * 99
    if d.min() * ANGSTROM_IN_BOHR < 0.11:
        return  # too close: rejected by design (tested above)
    z = sum(atomic_number(a[0]) for a in atoms)
    m = Molecule.from_string("\n".join(f"{s.lower()} {x!r} {y!r} {w!r}" for s, x, y, w in atoms))
    text = m.to_xyz() if full_block else "; ".join(m.to_xyz().splitlines()[2:])
    back = Molecule.from_string(text)
    assert back.symbols == tuple(a[0] for a in atoms)
    assert back.nelectron == z and back.multiplicity == (1 if z % 2 == 0 else 2)
    np.testing.assert_allclose(back.coords, m.coords, rtol=1e-14, atol=1e-13)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=80)
    | st.lists(
        st.sampled_from(["3", "\n", ";", " ", "H", "He", "0", "1.5", "nan", "-", "1e999", "charge=", "x", "8", "0.01"]),
        max_size=25,
    ).map("".join)
)
def test_garbage_raises_only_input_error(text):
    try:
        m = Molecule.from_string(text)
    except InputError:
        return
    assert m.natm >= 1 and np.all(np.isfinite(m.coords))


_json = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=4),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["symbols", "geometry", "molecular_charge", "real", "molecular_multiplicity", "atomic_numbers", "molecule"]
        ),
        _json | st.lists(st.sampled_from(["H", "O", 1, 0.0, 2.5, "x"]), max_size=7),
        max_size=6,
    )
)
def test_garbage_qcschema_raises_only_input_error(doc):
    try:
        Molecule.from_qcschema(doc)
    except InputError:
        pass
