"""Gaussian cube files: volumetric data on a lattice, with the molecule.

Layout (all lengths in bohr; the layout VMD, Jmol, Avogadro, Multiwfn and ASE read):

    line 1-2   comments
    line 3     natoms origin_x origin_y origin_z [nval]
               natoms < 0 marks an MO cube (an orbital line follows the atoms);
               nval (values per point) is written only when several orbitals share the file
    line 4-6   n_i  step vector i (x y z), i = 1..3; a positive n_i means bohr
    atoms      Z  charge  x y z           (one line per atom)
    MO cubes   norb  number_1 ... number_norb   (1-based orbital numbers)
    data       for each i (slowest), each j: all k values (and for several
               orbitals, all orbitals of one point together), six per line,
               format %13.5E; every (i, j) row starts a new line.

Formatting is done by a parallel numba loop that turns numbers into characters
with integer arithmetic (the same rules as the vectorised :func:`format_e`), so a
5-million-point cube is formatted in a fraction of a second instead of the seconds
to minutes of line-by-line ``%`` formatting.
"""

import os
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import InputError
from .files import atomic_output, read_bytes

#: Values per data line, as Gaussian writes them.
VALUES_PER_LINE = 6
#: The second comment line of hartree's cubes: the data order (x slowest), in the words
#: readers parse it from (ASE's read_cube_data takes the axis order from this line).
LOOP_ORDER = "outer loop: x, middle loop: y, inner loop: z"
_WIDTH = 13  # characters of " d.dddddE+dd"


@dataclass(frozen=True, eq=False)
class CubeData:
    """What a cube file holds (bohr, a.u.).

    numbers (natm,) int, charges (natm,), coords (natm, 3); origin (3,); axes (3, 3)
    step vectors; values (nval, n1, n2, n3); orbitals: 1-based orbital numbers
    (MO cubes) or None; comments: the two comment lines.
    """

    numbers: np.ndarray
    charges: np.ndarray
    coords: np.ndarray
    origin: np.ndarray
    axes: np.ndarray
    values: np.ndarray
    orbitals: tuple = None
    comments: tuple = ("", "")


def format_e(values):
    """Characters of ``values`` in the form " %12.5E" (13 bytes each), as a (n, 13) uint8 array.

    Vectorised: exponent e = floor(log10|v|), six significant digits from
    round(|v| 10^(5-e)), with carry when rounding reaches 10^6.  |v| < 1e-99 is
    written as 0 and |v| >= 1e100 raises (cube exponents have two digits).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(v)):
        raise InputError("cannot write NaN or infinite values to a cube file")
    mag = np.abs(v)
    tiny = mag < 1e-99
    safe = np.where(tiny, 1.0, mag)
    exp = np.floor(np.log10(safe)).astype(np.int64)
    digits = np.rint(safe * 10.0 ** (5 - exp)).astype(np.int64)  # 100000..1000000
    low = digits < 100000  # log10 rounding below
    exp[low] -= 1
    digits[low] = np.rint(safe[low] * 10.0 ** (5 - exp[low])).astype(np.int64)
    carry = digits >= 1000000
    exp[carry] += 1
    digits[carry] = np.rint(safe[carry] * 10.0 ** (5 - exp[carry])).astype(np.int64)
    digits[tiny] = 0
    exp[tiny] = 0
    if np.any(exp > 99):
        raise InputError("cube values above 1e99 cannot be written")
    out = np.empty((v.size, _WIDTH), dtype=np.uint8)
    out[:, 0] = ord(" ")
    out[:, 1] = np.where((v < 0) & ~tiny, ord("-"), ord(" "))
    out[:, 2] = ord("0") + digits // 100000
    out[:, 3] = ord(".")
    for n in range(5):
        out[:, 4 + n] = ord("0") + (digits // 10 ** (4 - n)) % 10
    out[:, 9] = ord("E")
    out[:, 10] = np.where(exp < 0, ord("-"), ord("+"))
    aexp = np.abs(exp)
    out[:, 11] = ord("0") + aexp // 10
    out[:, 12] = ord("0") + aexp % 10
    return out


@numba.njit(parallel=True, cache=True)
def _format_rows(flat, per_row, out):
    """Write values as " %12.5E", six per line and a newline after each row of per_row values.

    flat: (nrow * per_row,) float64; out: uint8 buffer of nrow * row_bytes.  Same arithmetic
    as :func:`format_e` (exponent from log10, six digits by rounding, carry fixes), one pass,
    parallel over rows.
    """
    nlines = (per_row + VALUES_PER_LINE - 1) // VALUES_PER_LINE
    row_bytes = per_row * _WIDTH + nlines
    nrow = flat.shape[0] // per_row
    for r in numba.prange(nrow):
        base = r * row_bytes
        for m in range(per_row):
            v = flat[r * per_row + m]
            pos = base + m * _WIDTH + m // VALUES_PER_LINE
            mag = abs(v)
            if mag < 1e-99:
                digits, e, negative = 0, 0, False
            else:
                e = int(np.floor(np.log10(mag)))
                digits = int(np.rint(mag * 10.0 ** (5 - e)))
                if digits < 100000:
                    e -= 1
                    digits = int(np.rint(mag * 10.0 ** (5 - e)))
                if digits >= 1000000:
                    e += 1
                    digits = int(np.rint(mag * 10.0 ** (5 - e)))
                negative = v < 0
            out[pos] = 32
            out[pos + 1] = 45 if negative else 32
            out[pos + 2] = 48 + digits // 100000
            out[pos + 3] = 46
            d = digits
            for n in range(5):
                out[pos + 8 - n] = 48 + d % 10
                d //= 10
            out[pos + 9] = 69
            out[pos + 10] = 45 if e < 0 else 43
            ae = abs(e)
            out[pos + 11] = 48 + ae // 10
            out[pos + 12] = 48 + ae % 10
            if m % VALUES_PER_LINE == VALUES_PER_LINE - 1 or m == per_row - 1:
                out[pos + _WIDTH] = 10


def data_bytes(values):
    """The data block of a cube: values (nval, n1, n2, n3) -> bytes, six per line, rows per (i, j).

    Several data sets (orbitals) are interleaved point by point, as Gaussian writes them.
    """
    values = np.asarray(values)
    nval, n1, n2, n3 = values.shape
    flat = np.ascontiguousarray(np.moveaxis(values, 0, -1).reshape(-1), dtype=np.float64)
    if not np.all(np.isfinite(flat)):
        raise InputError("cannot write NaN or infinite values to a cube file")
    if flat.size and np.abs(flat).max() >= 9.999995e99:
        raise InputError("cube values above 1e99 cannot be written")
    per_row = n3 * nval
    nlines = (per_row + VALUES_PER_LINE - 1) // VALUES_PER_LINE
    out = np.empty(n1 * n2 * (per_row * _WIDTH + nlines), dtype=np.uint8)
    _format_rows(flat, per_row, out)
    return out.tobytes()


def _ints(*values):
    """Integers as the cube format's %5d fields, each with at least one leading space, so that
    a wider number never runs into its neighbour (whitespace-separated readers)."""
    return "".join(f" {int(v):4d}" for v in values)


def _reals(values):
    """Reals as the cube format's %12.6f fields, each with at least one leading space (a
    coordinate of 1e4 bohr or more, or -1e3 or less, would otherwise touch the field before)."""
    return "".join(f" {float(v):11.6f}" for v in values)


def header_text(numbers, charges, coords, origin, axes, shape, nval=1, orbitals=None, comments=("", "")):
    """Header lines (str, ending in a newline) of a cube file: atoms (bohr), the lattice
    (origin (3,), step vectors (3, 3), shape (3,)), the number of values per point and, for
    MO cubes, the 1-based orbital numbers."""
    natm = len(numbers)
    lines = [str(comments[0])[:200], str(comments[1])[:200]]
    count = -natm if orbitals is not None else natm
    head = _ints(count) + _reals(origin)
    if nval > 1:
        head += _ints(nval)
    lines.append(head)
    for n, axis in zip(shape, axes):
        lines.append(_ints(n) + _reals(axis))
    for z, q, xyz in zip(numbers, charges, coords):
        lines.append(_ints(int(z)) + _reals([float(q), *xyz]))
    if orbitals is not None:
        if len(orbitals) != nval:
            raise InputError("an MO cube needs one orbital number per data set")
        numbers_line = [len(orbitals)] + [int(o) for o in orbitals]
        for start in range(0, len(numbers_line), 10):
            lines.append(_ints(*numbers_line[start : start + 10]))
    return "\n".join(lines) + "\n"


def cube_text_header(data):
    """Header lines (str, ending in newline) of a CubeData."""
    return header_text(
        data.numbers,
        data.charges,
        data.coords,
        data.origin,
        data.axes,
        data.values.shape[1:],
        data.values.shape[0],
        data.orbitals,
        data.comments,
    )


def cube_size(shape, nval=1):
    """Bytes of the data block of a cube with ``nval`` values per point (the header is
    a few kB at most)."""
    n1, n2, n3 = (int(n) for n in shape)
    per_row = n3 * nval
    return n1 * n2 * (per_row * _WIDTH + (per_row + VALUES_PER_LINE - 1) // VALUES_PER_LINE)


def write_cube(path, data, overwrite=False):
    """Write a CubeData to ``path`` atomically (hartree.io.files); refuses to replace an
    existing file unless ``overwrite``."""
    if os.path.exists(path) and not overwrite:
        raise InputError(f"{path} already exists; use --overwrite to replace it")
    values = np.asarray(data.values)
    if values.ndim != 4:
        raise InputError("cube values must have shape (nval, n1, n2, n3)")
    body = data_bytes(values)
    with atomic_output(path, binary=True) as handle:
        handle.write(cube_text_header(data).encode("ascii"))
        handle.write(body)


def make_cube(molecule, lattice, values, orbitals=None, comments=None):
    """CubeData from a Molecule, a Lattice and values (lattice.shape or (nval, *lattice.shape)).

    orbitals: 1-based orbital numbers (makes an MO cube) or None (density etc.).
    """
    values = np.asarray(values)
    if values.ndim == 3:
        values = values[None]
    if values.shape[1:] != tuple(lattice.shape):
        raise InputError(f"values of shape {values.shape[1:]} do not fit the lattice {lattice.shape}")
    comments = comments or ("written by hartree", LOOP_ORDER)
    numbers = np.asarray(molecule.numbers)
    return CubeData(
        numbers=numbers,
        charges=numbers.astype(float),
        coords=np.asarray(molecule.coords),
        origin=np.asarray(lattice.origin),
        axes=np.asarray(lattice.axes),
        values=values,
        orbitals=None if orbitals is None else tuple(int(o) for o in orbitals),
        comments=tuple(comments),
    )


def read_cube(path):
    """Read a cube file (bohr units; Angstrom cubes with negative counts are converted)."""
    from ..constants import ANGSTROM_IN_BOHR

    raw = read_bytes(path, "cube file")
    lines = raw.split(b"\n")
    try:
        comments = (lines[0].decode().rstrip("\r"), lines[1].decode().rstrip("\r"))
        head = lines[2].split()
        natm = int(head[0])
        origin = np.array([float(x) for x in head[1:4]])
        nval = int(head[4]) if len(head) > 4 else 1
        shape, axes, scale = [], [], 1.0
        for n in range(3):
            fields = lines[3 + n].split()
            count = int(fields[0])
            if count < 0:
                scale = ANGSTROM_IN_BOHR
            shape.append(abs(count))
            axes.append([float(x) for x in fields[1:4]])
        axes = np.array(axes) * scale
        origin = origin * scale
        atoms = [lines[6 + n].split() for n in range(abs(natm))]
        numbers = np.array([int(a[0]) for a in atoms], dtype=np.int64)
        charges = np.array([float(a[1]) for a in atoms])
        coords = np.array([[float(x) for x in a[2:5]] for a in atoms]).reshape(-1, 3) * scale
        pos = 6 + abs(natm)
        orbitals = None
        if natm < 0:
            numbers_line = []
            first = [int(x) for x in lines[pos].split()]
            numbers_line += first[1:]
            pos += 1
            while len(numbers_line) < first[0]:
                numbers_line += [int(x) for x in lines[pos].split()]
                pos += 1
            orbitals = tuple(numbers_line)
            nval = len(orbitals)
        body = np.array(b" ".join(lines[pos:]).split(), dtype=np.float64)
    except (IndexError, ValueError) as exc:
        raise InputError(f"{path}: not a valid cube file ({exc})") from None
    expected = nval * int(np.prod(shape))
    if body.size != expected:
        raise InputError(f"{path}: expected {expected} values, found {body.size}")
    values = np.moveaxis(body.reshape(tuple(shape) + (nval,)), -1, 0)
    return CubeData(
        numbers=numbers,
        charges=charges,
        coords=coords,
        origin=origin,
        axes=axes,
        values=values,
        orbitals=orbitals,
        comments=comments,
    )
