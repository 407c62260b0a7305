"""A test-only engine implementing hartree's engine contract (hartree.engine.IntegralEngine)
with PySCF integrals.

Used to check the SCF layer independently of hartree's own integral code (and
as a fast oracle engine).  Never imported by hartree itself.
"""

import contextlib

import numpy as np
import pyscf.scf.hf

from tests.helpers import to_pyscf


class PySCFEngine:
    """Engine(molecule, basis, screening_threshold): S, T, V, dipole, exact J/K (in-core ERIs)."""

    def __init__(self, molecule, basis, screening_threshold=1e-13):
        self.molecule = molecule
        self.basis = basis
        self.mol = to_pyscf(molecule, basis)
        self.screening_threshold = screening_threshold
        self._eri = self.mol.intor("int2e", aosym="s8")
        self.device = "cpu (pyscf test engine)"
        self.notes = []
        self.jk_calls = 0

    scf_note = None

    def array_module(self):
        return np

    def use(self):
        return contextlib.nullcontext()

    def for_molecule(self, molecule, basis):
        return PySCFEngine(molecule, basis, self.screening_threshold)

    def overlap(self):
        return self.mol.intor_symmetric("int1e_ovlp")

    def kinetic(self):
        return self.mol.intor_symmetric("int1e_kin")

    def nuclear(self, charges=None, coords=None):
        if charges is None and coords is None:
            return self.mol.intor_symmetric("int1e_nuc")
        v = np.zeros((self.mol.nao, self.mol.nao))
        for z, r in zip(np.asarray(charges, dtype=float), np.asarray(coords, dtype=float).reshape(-1, 3)):
            with self.mol.with_rinv_origin(r):
                v -= z * self.mol.intor_symmetric("int1e_rinv")
        return v

    def hcore(self):
        return self.kinetic() + self.nuclear()

    def dipole(self, origin=(0.0, 0.0, 0.0)):
        with self.mol.with_common_orig(np.asarray(origin, dtype=float)):
            return self.mol.intor_symmetric("int1e_r", comp=3)

    def eri(self):
        return self.mol.intor("int2e")

    def jk(self, dms, with_j=True, with_k=True, threshold=None):
        """Exact J/K from the stored ERIs (no screening, whatever ``threshold`` says)."""
        self.jk_calls += 1
        dms = np.asarray(dms)
        vj, vk = pyscf.scf.hf.dot_eri_dm(self._eri, dms, hermi=1, with_j=True, with_k=True)
        return np.asarray(vj).reshape(dms.shape), np.asarray(vk).reshape(dms.shape)
