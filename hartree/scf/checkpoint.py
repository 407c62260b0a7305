"""SCF checkpoints: one HDF5 file per run, rewritten every cycle.

Each write goes to a temporary file in the same directory that then replaces
the checkpoint with ``os.replace`` (atomic on POSIX), so a killed run leaves
the previous complete checkpoint: at most one cycle is lost.

Layout (root attributes and datasets)::

    attrs: hartree_checkpoint = 1 (format version), hartree_version, method,
           cycle, energy, converged, charge, multiplicity, basis_name, basis_pure
    numbers (natm,) int64, coords (natm, 3) bohr
    basis/shell_atom, shell_l, shell_nprim, shell_prim_start, shell_center,
          exponents, coefficients           (hartree.basis.Basis flat arrays)
    dm (nset, nao, nao)                     densities in the method's convention
    mo_coeff, mo_energy, mo_occ             (absent before the first diagonalisation)
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Optional

import h5py
import numpy as np

from .. import __version__
from ..errors import InputError
from ..xp import to_numpy

FORMAT_VERSION = 1
_BASIS_FIELDS = ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start", "shell_center",
                 "exponents", "coefficients")


@dataclass
class Checkpoint:
    """Contents of a checkpoint file (numpy arrays)."""

    method: str
    cycle: int
    energy: float
    converged: bool
    numbers: np.ndarray
    coords: np.ndarray
    charge: int
    multiplicity: int
    basis_name: str
    basis_pure: bool
    basis_arrays: dict
    dm: np.ndarray
    mo_coeff: Optional[np.ndarray] = None
    mo_energy: Optional[np.ndarray] = None
    mo_occ: Optional[np.ndarray] = None
    hartree_version: str = ""


def is_checkpoint(path):
    """True when ``path`` is an HDF5 file written by write_checkpoint."""
    try:
        if not h5py.is_hdf5(path):
            return False
        with h5py.File(path, "r") as f:
            return "hartree_checkpoint" in f.attrs
    except OSError:
        return False


def ensure_writable_checkpoint(path):
    """Refuse to overwrite a file that exists and is not a hartree checkpoint."""
    if os.path.exists(path) and not is_checkpoint(path):
        raise InputError(f"{path} exists and is not a hartree checkpoint; "
                         "refusing to overwrite it (choose another checkpoint path)")


def write_checkpoint(path, *, molecule, basis, method, cycle, energy, dm, mo_coeff=None,
                     mo_energy=None, mo_occ=None, converged=False):
    """Write the SCF state atomically (temp file + os.replace).

    dm: (nset, nao, nao); orbitals optional (numpy or cupy; stored as numpy).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".hartree-chk-", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["hartree_checkpoint"] = FORMAT_VERSION
            f.attrs["hartree_version"] = __version__
            f.attrs["method"] = method
            f.attrs["cycle"] = int(cycle)
            f.attrs["energy"] = float(energy)
            f.attrs["converged"] = bool(converged)
            f.attrs["charge"] = int(molecule.charge)
            f.attrs["multiplicity"] = int(molecule.multiplicity)
            f.attrs["basis_name"] = str(basis.name)
            f.attrs["basis_pure"] = bool(basis.pure)
            f["numbers"] = np.asarray(molecule.numbers)
            f["coords"] = np.asarray(molecule.coords)
            g = f.create_group("basis")
            for name in _BASIS_FIELDS:
                g[name] = np.asarray(getattr(basis, name))
            f["dm"] = to_numpy(dm)
            for name, value in (("mo_coeff", mo_coeff), ("mo_energy", mo_energy),
                                ("mo_occ", mo_occ)):
                if value is not None:
                    f[name] = to_numpy(value)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_checkpoint(path):
    """Read a checkpoint written by write_checkpoint; InputError if it is not one."""
    path = os.fspath(path)
    if not is_checkpoint(path):
        raise InputError(f"{path} is not a hartree checkpoint")
    with h5py.File(path, "r") as f:
        a = f.attrs

        def opt(name):
            return np.array(f[name]) if name in f else None

        return Checkpoint(
            method=str(a["method"]), cycle=int(a["cycle"]), energy=float(a["energy"]),
            converged=bool(a["converged"]), numbers=np.array(f["numbers"]),
            coords=np.array(f["coords"]), charge=int(a["charge"]),
            multiplicity=int(a["multiplicity"]), basis_name=str(a["basis_name"]),
            basis_pure=bool(a["basis_pure"]),
            basis_arrays={n: np.array(f["basis"][n]) for n in _BASIS_FIELDS},
            dm=np.array(f["dm"]), mo_coeff=opt("mo_coeff"), mo_energy=opt("mo_energy"),
            mo_occ=opt("mo_occ"), hartree_version=str(a["hartree_version"]))


def compare(chk, molecule, basis, method):
    """How a checkpoint relates to a run: 'same', 'related' or 'incompatible'.

    same:        same atoms, geometry (1e-8 bohr), charge, multiplicity, basis, method
    related:     same atoms and basis functions (exponents, coefficients, shells per
                 atom, pure/cartesian) but another geometry, charge, spin or method
    incompatible: anything else (other atoms or basis)
    """
    b = chk.basis_arrays
    same_atoms = (chk.numbers.shape == molecule.numbers.shape
                  and np.array_equal(chk.numbers, molecule.numbers))
    same_functions = (same_atoms and chk.basis_pure == bool(basis.pure)
                      and all(b[n].shape == np.asarray(getattr(basis, n)).shape
                              for n in _BASIS_FIELDS)
                      and all(np.array_equal(b[n], getattr(basis, n))
                              for n in ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start"))
                      and np.allclose(b["exponents"], basis.exponents, rtol=1e-12, atol=0)
                      and np.allclose(b["coefficients"], basis.coefficients, rtol=1e-12,
                                      atol=1e-14))
    if not same_functions:
        return "incompatible"
    same_geometry = np.allclose(chk.coords, molecule.coords, rtol=0, atol=1e-8)
    if (same_geometry and chk.method == method and chk.charge == molecule.charge
            and chk.multiplicity == molecule.multiplicity):
        return "same"
    return "related"
