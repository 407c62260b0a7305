"""Wavefunctions to plot: from a hartree result (SCFResult, QCSchema JSON, SCF checkpoint)
or a Molden file."""

import os
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..io.molden_read import read_molden
from ..io.qcschema import basis_from_qcschema, read_result_json, wavefunction_arrays
from ..molecule import Molecule


@dataclass(frozen=True, eq=False)
class Wavefunction:
    """Molecule, basis and orbitals (arrays as in SCFResult: restricted (nmo,), (nao, nmo),
    (nmo,); unrestricted with a leading axis 2)."""

    molecule: Molecule
    basis: object
    mo_energy: np.ndarray
    mo_coeff: np.ndarray
    mo_occ: np.ndarray
    source: str = ""

    @property
    def unrestricted(self):
        return np.asarray(self.mo_coeff).ndim == 3

    def coefficients(self, spin, index):
        """Coefficient vector (nao,) of orbital ``index`` (0-based) of ``spin`` (0/1)."""
        coeff = np.asarray(self.mo_coeff)
        return coeff[spin][:, index] if coeff.ndim == 3 else coeff[:, index]


def from_result(result, source="SCF result"):
    """Wavefunction of an SCFResult (or anything with its fields)."""
    return Wavefunction(result.molecule, result.basis, np.asarray(result.mo_energy),
                        np.asarray(result.mo_coeff), np.asarray(result.mo_occ), source)


def _looks_like_molden(path):
    with open(path, encoding="ascii", errors="replace") as handle:
        head = handle.read(4096).lower()
    return "[molden format]" in head or ("[atoms]" in head and "[gto]" in head) or "[gto]" in head


def from_checkpoint(path):
    """Wavefunction from an SCF checkpoint (``hartree run --checkpoint``), last saved orbitals."""
    from ..basis import Basis
    from ..scf.checkpoint import read_checkpoint

    chk = read_checkpoint(path)
    if chk.mo_coeff is None or chk.mo_occ is None:
        raise InputError(f"{path}: the checkpoint holds no orbitals yet")
    molecule = Molecule(numbers=chk.numbers, coords=chk.coords, charge=chk.charge,
                        multiplicity=chk.multiplicity)
    basis = Basis(name=chk.basis_name, pure=chk.basis_pure, **chk.basis_arrays)
    energy = chk.mo_energy if chk.mo_energy is not None else np.zeros(chk.mo_occ.shape)
    return Wavefunction(molecule, basis, energy, chk.mo_coeff, chk.mo_occ, str(path))


def load_wavefunction(path):
    """Wavefunction from a hartree result JSON (``hartree run --json``), an SCF checkpoint
    (HDF5, ``--checkpoint``) or a Molden file."""
    from ..scf.checkpoint import is_checkpoint

    path = str(path)
    if not os.path.isfile(path):
        raise InputError(f"file not found: {path}")
    if is_checkpoint(path):
        return from_checkpoint(path)
    if path.lower().endswith(".json"):
        doc = read_result_json(path)
        molecule = Molecule.from_qcschema(doc["molecule"])
        mo_energy, mo_coeff, mo_occ = wavefunction_arrays(doc)
        return Wavefunction(molecule, basis_from_qcschema(doc), mo_energy, mo_coeff, mo_occ, path)
    if _looks_like_molden(path):
        data = read_molden(path)
        return Wavefunction(data.molecule, data.basis, data.mo_energy, data.mo_coeff, data.mo_occ, path)
    raise InputError(f"{path}: neither a hartree result JSON (.json), a checkpoint nor a Molden file")
