"""Wavefunctions to plot: from a hartree result (SCFResult, QCSchema JSON, SCF checkpoint)
or a Molden file."""

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..io.files import read_bytes
from ..io.molden_read import read_molden
from ..io.qcschema_read import read_wavefunction
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
    return Wavefunction(
        result.molecule,
        result.basis,
        np.asarray(result.mo_energy),
        np.asarray(result.mo_coeff),
        np.asarray(result.mo_occ),
        source,
    )


def _looks_like_molden(path):
    head = read_bytes(path, "file", limit=4096).decode("ascii", "replace").lower()
    return "[molden format]" in head or ("[atoms]" in head and "[gto]" in head) or "[gto]" in head


def from_checkpoint(path):
    """Wavefunction from an SCF checkpoint (``hartree run --checkpoint``), last saved orbitals."""
    from ..scf.checkpoint import read_checkpoint

    chk = read_checkpoint(path)  # validated: shapes, finite values, fingerprint
    if chk.mo_coeff is None or chk.mo_occ is None:
        raise InputError(f"{path}: the checkpoint holds no orbitals yet")
    molecule, basis = chk.molecule(), chk.basis()
    energy = chk.mo_energy if chk.mo_energy is not None else np.zeros(chk.mo_occ.shape)
    return Wavefunction(molecule, basis, energy, chk.mo_coeff, chk.mo_occ, str(path))


def load_wavefunction(path):
    """Wavefunction from a hartree result JSON (``hartree run --json``), an SCF checkpoint
    (HDF5, ``--checkpoint``) or a Molden file."""
    from ..scf.checkpoint import is_checkpoint

    path = str(path)
    read_bytes(path, "file", limit=0)  # InputError: missing, a directory, unreadable
    if is_checkpoint(path):
        return from_checkpoint(path)
    if path.lower().endswith(".json"):
        molecule, basis, mo_energy, mo_coeff, mo_occ = read_wavefunction(path)
        return Wavefunction(molecule, basis, mo_energy, mo_coeff, mo_occ, path)
    if _looks_like_molden(path):
        data = read_molden(path)
        return Wavefunction(data.molecule, data.basis, data.mo_energy, data.mo_coeff, data.mo_occ, path)
    raise InputError(f"{path}: neither a hartree result JSON (.json), a checkpoint nor a Molden file")
