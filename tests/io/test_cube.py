"""Cube files: formatting, our reader, ASE's independent reader, PySCF's cubegen."""

import os
import time

import numpy as np
import pytest
from ase.io.cube import read_cube as ase_read_cube
from ase.io.cube import read_cube_data
from ase.units import Bohr
from hypothesis import given, settings
from hypothesis import strategies as st

from hartree.errors import InputError
from hartree.grid import Lattice, evaluate_orbitals, lattice_around
from hartree.io.cube import data_bytes, format_e, make_cube, read_cube, write_cube
from hartree.molecule import Molecule

WATER = "O 0.0 0.1 0.1173; H 0.0 0.7572 -0.4692; H 0.1 -0.7572 -0.4692"


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-1e99, max_value=1e99, allow_nan=False, allow_infinity=False))
def test_format_matches_printf(value):
    text = bytes(format_e(np.array([value])).ravel()).decode()
    if abs(value) < 1e-99:
        assert text == "  0.00000E+00"
    else:
        assert text == " %12.5E" % value  # noqa: UP031  (printf is the reference)


def test_data_lines_six_values_per_line_and_row_breaks():
    values = np.arange(2 * 2 * 7, dtype=float).reshape(1, 2, 2, 7) + 0.5
    lines = data_bytes(values).decode().splitlines()
    assert [len(line.split()) for line in lines] == [6, 1] * 4
    assert float(lines[1]) == 6.5 and float(lines[2].split()[0]) == 7.5


def test_data_block_equals_line_by_line_printf():
    values = _fields(4, (2, 3, 4, 7))  # two orbitals, 14 values per (i, j) row
    values[0, 0, 0, :3] = [0.0, -9.9999951, 9.999995]  # rounding carries
    lines = []
    for i in range(3):
        for j in range(4):
            row = np.moveaxis(values, 0, -1)[i, j].ravel()
            lines += ["".join(" %12.5E" % v for v in row[k : k + 6]) for k in range(0, row.size, 6)]  # noqa: UP031
    assert data_bytes(values).decode() == "\n".join(lines) + "\n"


def _fields(seed, shape):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) * 10.0 ** rng.uniform(-8, 1, size=shape)


def test_ase_reads_our_orbital_cube(tmp_path):
    mol = Molecule.from_string(WATER)
    lattice = lattice_around(mol.coords, spacing=0.3, margin=1.5)
    values = _fields(0, lattice.shape)
    path = tmp_path / "mo.cube"
    write_cube(path, make_cube(mol, lattice, values, orbitals=[5]))
    data, atoms = read_cube_data(str(path))
    np.testing.assert_allclose(data, values, rtol=6e-6, atol=0)
    np.testing.assert_allclose(atoms.positions / Bohr, mol.coords, atol=1e-6)
    assert list(atoms.numbers) == [8, 1, 1]
    ours = read_cube(path)
    assert ours.orbitals == (5,)
    np.testing.assert_allclose(ours.values[0], values, rtol=6e-6, atol=0)
    np.testing.assert_allclose(ours.origin, lattice.origin, atol=1e-6)
    np.testing.assert_allclose(ours.axes, lattice.axes, atol=1e-6)


def test_far_coordinates_keep_their_fields_apart(tmp_path):
    """A molecule 1e6 bohr from the origin (found by the random fuzz hunt: the %12.6f fields
    of the header ran together and the file could not be read back): every header number
    keeps a separating space, and ours and ASE's readers read the file back."""
    mol = Molecule.from_string(WATER).replace(coords=Molecule.from_string(WATER).coords + [1e6, -1430.9, 0.0])
    lattice = lattice_around(mol.coords, spacing=0.5, margin=1.0)
    values = _fields(0, lattice.shape)
    path = tmp_path / "far.cube"
    write_cube(path, make_cube(mol, lattice, values))
    ours = read_cube(path)
    np.testing.assert_allclose(ours.origin, lattice.origin, atol=1e-6)
    np.testing.assert_allclose(ours.coords, mol.coords, atol=1e-6)
    data, atoms = read_cube_data(str(path))
    np.testing.assert_allclose(atoms.positions / Bohr, mol.coords, atol=1e-6)


def test_several_orbitals_in_one_cube(tmp_path):
    mol = Molecule.from_string(WATER)
    lattice = Lattice(origin=[-3.0, -3.5, -2.5], axes=np.diag([0.5, 0.45, 0.55]), shape=(9, 11, 10))
    values = _fields(1, (3,) + lattice.shape)
    path = tmp_path / "three.cube"
    write_cube(path, make_cube(mol, lattice, values, orbitals=[3, 4, 5]))
    ours = read_cube(path)
    assert ours.orbitals == (3, 4, 5)
    np.testing.assert_allclose(ours.values, values, rtol=6e-6, atol=0)
    with open(path) as handle:
        ase_doc = ase_read_cube(handle)
    assert ase_doc["labels"] == [3, 4, 5]
    np.testing.assert_allclose(ase_doc["datas"], values, rtol=6e-6, atol=0)


def test_no_overwrite_and_bad_values(tmp_path):
    mol = Molecule.from_string(WATER)
    lattice = lattice_around(mol.coords, spacing=0.5, margin=1.0)
    path = tmp_path / "x.cube"
    path.write_text("keep me")
    cube = make_cube(mol, lattice, np.zeros(lattice.shape))
    with pytest.raises(InputError, match="already exists"):
        write_cube(path, cube)
    assert path.read_text() == "keep me"
    write_cube(path, cube, overwrite=True)
    assert read_cube(path).orbitals is None
    with pytest.raises(InputError, match="NaN"):
        format_e(np.array([np.nan]))
    with pytest.raises(InputError, match="do not fit"):
        make_cube(mol, lattice, np.zeros((2, 2, 2)))


def test_orbital_matches_pyscf_cubegen(tmp_path):
    from pyscf.tools import cubegen

    from hartree.basis import load_basis
    from tests.helpers import to_pyscf

    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "cc-pvdz")
    pmol = to_pyscf(mol, basis)
    coeff = np.linalg.eigh(pmol.intor("int1e_ovlp"))[1][:, 7]
    shape = (21, 24, 22)
    reference = cubegen.orbital(pmol, str(tmp_path / "pyscf.cube"), coeff, nx=shape[0], ny=shape[1], nz=shape[2])
    cube = cubegen.Cube(pmol, *shape)
    lattice = Lattice(origin=cube.boxorig, axes=cube.box / (np.array(shape) - 1)[:, None], shape=shape)
    ours = evaluate_orbitals(basis, coeff, lattice)[0]
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-10)
    # and PySCF's file, read by our reader, carries the same values to its 6 digits
    theirs = read_cube(tmp_path / "pyscf.cube")
    np.testing.assert_allclose(theirs.values[0], reference, rtol=6e-6, atol=1e-99)


def test_five_million_point_cube_writes_fast(tmp_path):
    mol = Molecule.from_string(WATER)
    lattice = Lattice(origin=np.zeros(3), axes=np.eye(3) * 0.1, shape=(172, 173, 169))
    values = _fields(2, lattice.shape)
    path = tmp_path / "big.cube"
    start = time.perf_counter()
    write_cube(path, make_cube(mol, lattice, values))
    elapsed = time.perf_counter() - start
    assert elapsed < 30.0, elapsed  # about 1.5 s on an idle core; line-by-line writers take far longer
    assert os.path.getsize(path) > 13 * lattice.npoints
