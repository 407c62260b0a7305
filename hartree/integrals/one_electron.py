"""One-electron integrals on the CPU: overlap, kinetic energy, nuclear attraction, dipole.

All public functions take a :class:`hartree.basis.Basis` and return matrices in its final
AO basis (spherical when ``basis.pure`` else cartesian), in PySCF's AO order, atomic
units.  The numba kernels (Obara-Saika 1-D recurrences; Rys quadrature for the
nuclear attraction) are the generated module of :mod:`hartree.integrals.os_codegen`, printed
from the programs of :mod:`hartree.integrals.os_program` and loaded on first use.

Shared helpers for other integral modules:

* :func:`cart_xyz_table` - exponents (i, j, k) of the cartesian components of each l,
  PySCF order (xx, xy, xz, yy, yz, zz, ...).
* :func:`cart2sph_table` - stacked cartesian -> final transformation matrices.
* :func:`shell_pair_block` - one shell pair's block, cartesian or transformed.
"""

from functools import cache

import numpy as np

from hartree.integrals import os_codegen as _gen
from hartree.integrals.rys import rys_table_array

MAX_L = 6  # i functions; raise freely (only array sizes depend on it)

__all__ = [
    "overlap",
    "kinetic",
    "nuclear",
    "dipole",
    "shell_pair_block",
    "cart_xyz_table",
    "cart2sph_table",
    "MAX_L",
]


def _ncart(l):
    return (l + 1) * (l + 2) // 2


@cache
def cart_xyz_table(lmax=MAX_L):
    """Cartesian exponents per shell type, int64 (lmax+1, ncart(lmax), 3).

    Row ``[l, c]`` is (i, j, k) of component c of an l shell, ordered with i descending,
    then j descending (PySCF/libcint order).  Unused rows are zero.  Read-only.
    """
    table = np.zeros((lmax + 1, _ncart(lmax), 3), dtype=np.int64)
    for l in range(lmax + 1):
        c = 0
        for i in range(l, -1, -1):
            for j in range(l - i, -1, -1):
                table[l, c] = (i, j, l - i - j)
                c += 1
    table.flags.writeable = False
    return table


@cache
def cart2sph_table(lmax=MAX_L):
    """Stacked cartesian -> spherical matrices, float64 (lmax+1, ncart(lmax), 2 lmax+1).

    ``[l, :ncart(l), :2l+1]`` is ``hartree.basis.cart2sph(l)`` for l >= 2 and the
    identity for l = 0, 1: the kernels' cartesian s and p functions already carry
    PySCF's f(l) factor, and PySCF's spherical s/p functions equal them (p in x, y, z
    order).  Read-only.
    """
    from hartree.basis import cart2sph  # data layer; imported lazily (no cycle at import)

    table = np.zeros((lmax + 1, _ncart(lmax), 2 * lmax + 1))
    for l in range(lmax + 1):
        if l < 2:
            table[l, : _ncart(l), : 2 * l + 1] = np.eye(2 * l + 1)
        else:
            table[l, : _ncart(l), : 2 * l + 1] = np.asarray(cart2sph(l), dtype=np.float64)
    table.flags.writeable = False
    return table


def _check_lmax(basis):
    lmax = int(np.max(basis.shell_l)) if len(basis.shell_l) else 0
    if lmax > MAX_L:
        raise ValueError(f"one-electron integrals support l <= {MAX_L}, basis has l = {lmax}")


def _as_charges(charges, coords):
    charges = np.array(charges, dtype=np.float64).reshape(-1)  # fresh writable copies
    coords = np.array(coords, dtype=np.float64).reshape(-1, 3)
    if charges.shape[0] != coords.shape[0]:
        raise ValueError(f"{charges.shape[0]} charges but {coords.shape[0]} positions")
    return charges, coords


def _basis_arrays(basis):
    """Flat basis arrays as fresh, writable, contiguous copies in the kernels' dtypes.

    Copies (small) keep one numba signature whether the caller's arrays are read-only
    (a frozen Basis) or not, so the kernels compile once.
    """
    return (
        np.array(basis.shell_l, dtype=np.int64),
        np.array(basis.shell_nprim, dtype=np.int64),
        np.array(basis.shell_prim_start, dtype=np.int64),
        np.array(basis.shell_center, dtype=np.float64).reshape(-1, 3),
        np.array(basis.exponents, dtype=np.float64),
        np.array(basis.coefficients, dtype=np.float64),
    )


def _matrix(basis, op, origin=None, charges=None, coords=None):
    """Symmetric operator matrix (ncomp, nao, nao) for operator code ``op``."""
    _check_lmax(basis)
    pure = bool(basis.pure)
    ao_loc = np.array(basis.ao_loc if pure else basis.cart_loc, dtype=np.int64)
    nao = int(ao_loc[-1])
    origin = np.zeros(3) if origin is None else np.array(origin, dtype=np.float64).reshape(3)
    if charges is None:
        charges, coords = np.zeros(0), np.zeros((0, 3))
    charges, coords = _as_charges(charges, coords)
    out = np.zeros((len(_gen.OPERATORS[op][1]), nao, nao))
    _gen.load_module().one_electron_matrix_kernel(
        op,
        *_basis_arrays(basis),
        ao_loc,
        pure,
        cart2sph_table(),
        cart_xyz_table(),
        origin,
        charges,
        coords,
        rys_table_array(),
        out,
    )
    return out


def overlap(basis):
    """Overlap matrix S_mn = <m|n>, float64 (nao, nao), dimensionless."""
    return _matrix(basis, _gen.OP_OVERLAP)[0]


def kinetic(basis):
    """Kinetic-energy matrix T_mn = <m| -1/2 nabla^2 |n>, float64 (nao, nao), hartree."""
    return _matrix(basis, _gen.OP_KINETIC)[0]


def nuclear(basis, charges, coords):
    """Point-charge attraction V_mn = sum_C -Z_C <m| 1/|r - R_C| |n>, (nao, nao), hartree.

    ``charges`` float (ncharge,) in e (nuclear charges, or any external point charges;
    a negative charge repels electrons); ``coords`` (ncharge, 3) in bohr.  Rys quadrature
    with (l_m + l_n)//2 + 1 roots from :func:`hartree.integrals.rys.rys_roots_weights`.
    """
    charges, coords = _as_charges(charges, coords)
    return _matrix(basis, _gen.OP_NUCLEAR, charges=charges, coords=coords)[0]


def dipole(basis, origin=(0.0, 0.0, 0.0)):
    """Position integrals <m| (r - origin)_x |n> etc., float64 (3, nao, nao), bohr.

    Electron position without the electron's charge sign; equals PySCF's ``int1e_r``
    under ``mol.with_common_orig(origin)``.  ``origin`` (3,) in bohr.
    """
    return _matrix(basis, _gen.OP_DIPOLE, origin=origin)


_OPS = {"overlap": _gen.OP_OVERLAP, "kinetic": _gen.OP_KINETIC, "nuclear": _gen.OP_NUCLEAR, "dipole": _gen.OP_DIPOLE}


def shell_pair_block(basis, ish, jsh, operator="overlap", *, origin=None, charges=None, coords=None, cartesian=None):
    """One shell pair's block, float64 (ncomp, nf_i, nf_j) with ncomp = 3 for dipole.

    ``operator`` is one of ``"overlap"``, ``"kinetic"``, ``"nuclear"`` (needs ``charges``,
    ``coords``) or ``"dipole"`` (``origin``, default 0).  ``cartesian=True`` returns the
    cartesian block (with PySCF's f(l) factors); the default follows ``basis.pure``.
    For inspection and tests; the matrix routines use the same kernels.
    """
    _check_lmax(basis)
    op = _OPS[operator]
    origin = np.zeros(3) if origin is None else np.array(origin, dtype=np.float64).reshape(3)
    if charges is None:
        charges, coords = np.zeros(0), np.zeros((0, 3))
    charges, coords = _as_charges(charges, coords)
    arrays = _basis_arrays(basis)
    kernels = _gen.load_module()
    block = kernels.shell_pair_cart_block(
        op, int(ish), int(jsh), *arrays, cart_xyz_table(), origin, charges, coords, 0, len(charges), rys_table_array()
    )
    pure = bool(basis.pure) if cartesian is None else not cartesian
    if not pure:
        return block
    la, lb = int(arrays[0][ish]), int(arrays[0][jsh])
    out = np.empty((block.shape[0], 2 * la + 1, 2 * lb + 1))
    kernels.cart_to_final(block, la, lb, True, cart2sph_table(), out)
    return out
