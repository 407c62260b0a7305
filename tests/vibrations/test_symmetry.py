"""Point groups and rotational symmetry numbers against the textbook values (Cotton,
Chemical Applications of Group Theory; the symmetry numbers of NIST's CCCBDB), molecules
built by hand and molecules generated as orbits of generic points under a group's
generators (so that the group is known by construction), and PySCF's symmetry number."""

import numpy as np
import pytest

from hartree.molecule import Molecule
from hartree.vibrations.masses import default_masses
from hartree.vibrations.symmetry import is_linear, point_group, schoenflies


def _ring(n, radius, z=0.0, phase=0.0):
    return [
        (radius * np.cos(phase + 2 * np.pi * k / n), radius * np.sin(phase + 2 * np.pi * k / n), z) for k in range(n)
    ]


def _text(atoms):
    return "; ".join(f"{s} {x:.12f} {y:.12f} {z:.12f}" for s, (x, y, z) in atoms)


T = 0.629  # CH4: H at (±t, ±t, ±t) with an even number of minus signs

#: name -> (geometry in Angstrom, Schoenflies symbol, rotational symmetry number)
MOLECULES = {
    "water": ("O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692", "C2v", 2),
    "ammonia": (_text([("N", (0, 0, 0.1))] + [("H", p) for p in _ring(3, 0.94, -0.27)]), "C3v", 3),
    "methane": (
        _text([("C", (0, 0, 0))] + [("H", (T * a, T * b, T * a * b)) for a in (1, -1) for b in (1, -1)]),
        "Td",
        12,
    ),
    "benzene": (_text([("C", p) for p in _ring(6, 1.39)] + [("H", p) for p in _ring(6, 2.47)]), "D6h", 12),
    "carbon dioxide": ("O 0 0 -1.16; C 0 0 0; O 0 0 1.16", "D∞h", 2),
    "hydrogen cyanide": ("H 0 0 -1.06; C 0 0 0; N 0 0 1.15", "C∞v", 1),
    "staggered ethane": (
        _text(
            [("C", (0, 0, 0.765)), ("C", (0, 0, -0.765))]
            + [("H", p) for p in _ring(3, 1.02, 1.16)]
            + [("H", p) for p in _ring(3, 1.02, -1.16, np.pi / 3)]
        ),
        "D3d",
        6,
    ),
    "eclipsed ethane": (
        _text(
            [("C", (0, 0, 0.765)), ("C", (0, 0, -0.765))]
            + [("H", p) for p in _ring(3, 1.02, 1.16)]
            + [("H", p) for p in _ring(3, 1.02, -1.16)]
        ),
        "D3h",
        6,
    ),
    "allene": (
        "C 0 0 0; C 0 0 1.31; C 0 0 -1.31; H 0.93 0 1.87; H -0.93 0 1.87; H 0 0.93 -1.87; H 0 -0.93 -1.87",
        "D2d",
        4,
    ),
    "sulfur hexafluoride": (
        "S 0 0 0; F 1.56 0 0; F -1.56 0 0; F 0 1.56 0; F 0 -1.56 0; F 0 0 1.56; F 0 0 -1.56",
        "Oh",
        24,
    ),
    "ethylene": (
        "C 0 0 0.667; C 0 0 -0.667; H 0 0.923 1.232; H 0 -0.923 1.232; H 0 0.923 -1.232; H 0 -0.923 -1.232",
        "D2h",
        4,
    ),
    "hydrogen peroxide": ("O 0 0.7 0.1; O 0 -0.7 0.1; H 0.8 0.9 -0.4; H -0.8 -0.9 -0.4", "C2", 2),
    "trans-diazene": ("N 0 0.62 0; N 0 -0.62 0; H 0.9 1.0 0; H -0.9 -1.0 0", "C2h", 2),
    "boric acid": (
        _text([("B", (0, 0, 0))] + [("O", p) for p in _ring(3, 1.37)] + [("H", p) for p in _ring(3, 1.9, 0, 0.45)]),
        "C3h",
        3,
    ),
    "bromochlorofluoromethane": (
        "C 0 0 0; H 0.63 0.63 0.63; F -0.8 -0.8 0.8; Cl -1.0 1.0 -1.0; Br 1.1 -1.1 -1.1",
        "C1",
        1,
    ),
    "planar CHFCl": ("C 0 0 0; H 0 1.0 0; F 1.2 -0.3 0; Cl -1.5 -0.4 0", "Cs", 1),
    "meso C2H2F2Cl2": (
        "C 0.7 0.2 0.1; C -0.7 -0.2 -0.1; F 1.2 1.1 0.5; F -1.2 -1.1 -0.5; Cl 1.0 -1.0 0.8; Cl -1.0 1.0 -0.8; "
        "H 1.5 -0.2 -0.9; H -1.5 0.2 0.9",
        "Ci",
        1,
    ),
}


def _molecule_group(text, masses=None):
    mol = Molecule.from_string(text)
    masses = default_masses(mol.numbers) if masses is None else np.asarray(masses)
    return point_group(mol.coords, masses, mol.numbers)


@pytest.mark.parametrize("name", sorted(MOLECULES))
def test_known_point_groups(name):
    text, symbol, sigma = MOLECULES[name]
    group = _molecule_group(text)
    assert (group.symbol, group.symmetry_number) == (symbol, sigma)


def _rotation(axis, angle):
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _closure(generators):
    ops = [np.eye(3)]
    grown = True
    while grown:
        grown = False
        for a in list(ops):
            for g in generators:
                b = g @ a
                if not any(np.allclose(b, c) for c in ops):
                    ops.append(b)
                    grown = True
    return ops


PHI = (1 + 5**0.5) / 2
SIGMA_H = np.diag([1.0, 1.0, -1.0])
C5 = _rotation((0, 1, PHI), 2 * np.pi / 5)
C4 = _rotation((0, 0, 1), np.pi / 2)
C3 = _rotation((1, 1, 1), 2 * np.pi / 3)
C2 = _rotation((0, 0, 1), np.pi)
GENERATED = {
    "I": ([C5, C3], 60, 60),
    "Ih": ([C5, C3, -np.eye(3)], 120, 60),
    "O": ([C4, C3], 24, 24),
    "T": ([C3, C2], 12, 12),
    "Th": ([C3, C2, -np.eye(3)], 24, 12),
    "S4": ([C4 @ SIGMA_H], 4, 2),
    "S6": ([_rotation((0, 0, 1), np.pi / 3) @ SIGMA_H], 6, 3),
    "D4d": ([_rotation((0, 0, 1), np.pi / 4) @ SIGMA_H, _rotation((1, 0, 0), np.pi)], 16, 8),
    "C5h": ([_rotation((0, 0, 1), 2 * np.pi / 5), SIGMA_H], 10, 5),
    "C4": ([C4], 4, 4),
    "D3": ([C3, _rotation((1, -1, 0), np.pi)], 6, 6),
}


@pytest.mark.parametrize("symbol", sorted(GENERATED))
def test_groups_generated_from_their_generators(symbol):
    """Two generic points (a C and an H) and all their images under the group: the
    molecule has exactly that group, whose order and rotational subgroup are known."""
    generators, order, sigma = GENERATED[symbol]
    ops = _closure(generators)
    assert len(ops) == order
    atoms = []
    for element, point in (("C", (2.9, 0.77, 0.43)), ("H", (0.9, 3.1, -1.9))):
        images = []
        for op in ops:
            q = op @ np.array(point)
            if not any(np.allclose(q, r) for r in images):
                images.append(q)
        atoms += [(element, tuple(q)) for q in images]
    group = _molecule_group(_text(atoms))
    assert (group.symbol, group.symmetry_number, len(group.operations)) == (symbol, sigma, order)
    assert schoenflies(group.operations) == symbol


def test_isotopes_lower_the_symmetry():
    """HOD has no C2 axis (Cs, sigma 1); D2O keeps C2v."""
    water = MOLECULES["water"][0]
    masses = default_masses([8, 1, 1])
    hod = _molecule_group(water, [masses[0], masses[1], 2.01410177812])
    d2o = _molecule_group(water, [masses[0], 2.01410177812, 2.01410177812])
    assert (hod.symbol, hod.symmetry_number) == ("Cs", 1)
    assert (d2o.symbol, d2o.symmetry_number) == ("C2v", 2)


def test_tolerance():
    """A water distorted by 1e-4 bohr (an optimizer's noise) is still C2v; by 0.05 bohr
    it is not (the default tolerance is 0.01 bohr)."""
    mol = Molecule.from_string(MOLECULES["water"][0])
    masses = default_masses(mol.numbers)
    for shift, symbol in ((1e-4, "C2v"), (0.05, "Cs")):
        coords = np.array(mol.coords)
        coords[1, 1] += shift
        assert point_group(coords, masses, mol.numbers).symbol == symbol
    bent = np.array([[0, 0, -2.2], [0, 0, 0], [0, 0.004, 2.2]])
    assert is_linear(bent, [16.0, 12.0, 16.0]) and not is_linear(bent, [16.0, 12.0, 16.0], tolerance=1e-3)


def test_one_atom():
    group = point_group(np.zeros((1, 3)), [39.96], [18])
    assert (group.symbol, group.symmetry_number, group.rotor) == ("K", 1, "atom")


@pytest.mark.parametrize("name", ["water", "ammonia", "methane", "benzene", "carbon dioxide", "staggered ethane"])
def test_symmetry_number_equals_pyscf(name):
    """PySCF's rotational_symmetry_number (its own point-group detection) agrees."""
    import pyscf.gto
    from pyscf.hessian.thermo import rotational_symmetry_number

    text, _, _ = MOLECULES[name]
    pmol = pyscf.gto.M(atom=text, basis="sto-3g", verbose=0)
    assert _molecule_group(text).symmetry_number == rotational_symmetry_number(pmol)
