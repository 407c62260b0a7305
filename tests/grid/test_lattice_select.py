"""Lattice construction and orbital selection by name."""

import numpy as np
import pytest

from hartree.constants import ANGSTROM_IN_BOHR
from hartree.errors import InputError
from hartree.grid import Lattice, lattice_around, lattice_from_axes, select_orbitals


def test_lattice_around_covers_margin_and_orders_points_like_cubes():
    coords = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, -1.0]])
    lat = lattice_around(coords, spacing=0.25, margin=1.0, unit="angstrom")
    step = 0.25 * ANGSTROM_IN_BOHR
    np.testing.assert_allclose(np.diag(lat.axes), step, rtol=1e-14)
    low, high = lat.origin, lat.origin + (np.array(lat.shape) - 1) * step
    assert np.all(low <= coords.min(0) - 1.0 * ANGSTROM_IN_BOHR + 1e-9)
    assert np.all(high >= coords.max(0) + 1.0 * ANGSTROM_IN_BOHR - 1e-9)
    pts = lat.points()
    assert pts.shape == (lat.npoints, 3)
    i, j, k = 2, 3, 4
    np.testing.assert_allclose(pts[(i * lat.shape[1] + j) * lat.shape[2] + k], lat.origin + step * np.array([i, j, k]))
    x, y, z = lat.coordinates_1d()
    np.testing.assert_allclose(pts[: lat.shape[2], 2], z)
    bohr = lattice_around(coords, spacing=0.5, margin=2.0, unit="bohr")
    np.testing.assert_allclose(np.diag(bohr.axes), 0.5)
    assert lat.is_rectilinear and abs(lat.voxel_volume - step**3) < 1e-12


def test_lattice_errors():
    with pytest.raises(InputError, match="spacing"):
        lattice_around(np.zeros((1, 3)), spacing=0.0)
    with pytest.raises(InputError, match="unit"):
        lattice_around(np.zeros((1, 3)), spacing=0.1, unit="furlong")
    with pytest.raises(InputError, match="dependent"):
        Lattice(origin=np.zeros(3), axes=np.ones((3, 3)), shape=(2, 2, 2))
    with pytest.raises(InputError, match="beyond what any machine"):
        lattice_around(np.zeros((1, 3)), spacing=1e-4, margin=10.0)
    with pytest.raises(InputError, match=r"spacing must be a positive length, got inf Angstrom"):
        lattice_around(np.zeros((1, 3)), spacing=float("inf"))
    with pytest.raises(InputError, match=r"margin must be zero or a positive length, got -1 bohr"):
        lattice_around(np.zeros((1, 3)), spacing=0.1, margin=-1, unit="bohr")
    with pytest.raises(InputError, match="finite"):
        Lattice(origin=[0, 0, np.nan], axes=np.eye(3), shape=(2, 2, 2))
    # a tiny but valid spacing is not "linearly dependent"
    assert Lattice(origin=np.zeros(3), axes=np.eye(3) * 1e-6, shape=(2, 2, 2)).npoints == 8
    assert not lattice_from_axes(np.zeros(3), [[1, 1, 0], [0, 1, 0], [0, 0, 1]], (2, 2, 2)).is_rectilinear


def test_select_restricted_names_and_numbers():
    occ = np.array([2, 2, 2, 0, 0, 0.0])
    picks = select_orbitals("homo, lumo,homo-1,lumo+2, 1", occ)
    assert [(p.label, p.index, p.spin) for p in picks] == [
        ("homo", 2, 0),
        ("lumo", 3, 0),
        ("homo-1", 1, 0),
        ("lumo+2", 5, 0),
        ("mo1", 0, 0),
    ]
    assert picks[0].number == 3
    rohf = np.array([2, 2, 1, 0.0])
    assert select_orbitals("homo", rohf)[0].index == 2
    assert select_orbitals("beta:homo", rohf)[0].index == 1
    assert select_orbitals("beta:homo", rohf)[0].label == "beta_homo"


def test_select_unrestricted_and_errors():
    occ = np.array([[1, 1, 1, 0], [1, 1, 0, 0.0]])
    a, b = select_orbitals("homo,beta:lumo", occ)
    assert (a.spin, a.index, a.label) == (0, 2, "homo")
    assert (b.spin, b.index, b.label) == (1, 2, "beta_lumo")
    with pytest.raises(InputError, match="outside"):
        select_orbitals("lumo+5", occ)
    with pytest.raises(InputError, match="cannot understand"):
        select_orbitals("hom0", occ)
    with pytest.raises(InputError, match="outside"):
        select_orbitals("homo-3", occ)
