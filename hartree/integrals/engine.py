"""CPU integral engine (numba): the :class:`hartree.engine.IntegralEngine` contract on the host.

    engine = CPUEngine(molecule, basis, screening_threshold=1e-13)
    S, H = engine.overlap(), engine.hcore()
    J, K = engine.jk(dm)                  # dm (nao, nao) or (nset, nao, nao)

Shell-pair data and Schwarz factors are computed on first use and kept for the life of
the engine (an SCF calls ``jk`` 15-30 times); one-electron matrices are cached too.
All matrices are numpy float64 in the final AO basis of ``basis``, atomic units.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numba
import numpy as np

from hartree.integrals import one_electron
from hartree.integrals.eri import ShellPairs, eri_full
from hartree.integrals.jk import jk as _jk
from hartree.integrals.jk import schwarz_order

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.molecule import Molecule


class CPUEngine:
    """Integrals of ``basis`` on ``molecule`` computed on the CPU.

    molecule: hartree.Molecule (point nuclei at ``molecule.coords``, bohr).
    basis: hartree.basis.Basis on that molecule.
    screening_threshold: a shell quartet is skipped in ``jk`` when
      sqrt((ab|ab)) sqrt((cd|cd)) max|D| < screening_threshold (hartree), as PySCF's
      ``direct_scf_tol``.
    """

    def __init__(self, molecule: Molecule, basis: Basis, screening_threshold: float = 1e-13) -> None:
        self.molecule = molecule
        self.basis = basis
        self.screening_threshold = float(screening_threshold)
        self.device = f"cpu (numba, {numba.get_num_threads()} threads)"
        #: sentences for the user (the CPU engine takes no decisions worth one: stays empty)
        self.notes: list[str] = []
        self._pairs = None
        self._order = None
        self._cache = {}

    # ---------------------------------------------------------------- contract: host side
    @property
    def scf_note(self) -> None:
        """None: an SCF on this engine runs on the host with numpy (nothing to say)."""
        return None

    def array_module(self) -> ModuleType:
        """numpy: every matrix of this engine is a numpy array."""
        return np

    def use(self) -> contextlib.AbstractContextManager:
        """A no-op context (no device to make current)."""
        return contextlib.nullcontext()

    def for_molecule(self, molecule: Molecule, basis: Basis) -> CPUEngine:
        """A CPUEngine with this one's screening threshold for another molecule and basis."""
        return CPUEngine(molecule, basis, screening_threshold=self.screening_threshold)

    # ---------------------------------------------------------------- one-electron
    def _cached(self, key, compute):
        if key not in self._cache:
            value = compute()
            value.flags.writeable = False
            self._cache[key] = value
        return self._cache[key].copy()

    def overlap(self) -> np.ndarray:
        """Overlap S, (nao, nao), dimensionless."""
        return self._cached("S", lambda: one_electron.overlap(self.basis))

    def kinetic(self) -> np.ndarray:
        """Kinetic energy T, (nao, nao), hartree."""
        return self._cached("T", lambda: one_electron.kinetic(self.basis))

    def nuclear(self, charges: Sequence[float] | None = None, coords: np.ndarray | None = None) -> np.ndarray:
        """Attraction to point charges V, (nao, nao), hartree: charges (ncharge,) in e at coords
        (ncharge, 3) in bohr, both or neither; default (cached): the molecule's nuclei."""
        if charges is None and coords is None:
            numbers = np.asarray(self.molecule.numbers, dtype=np.float64)
            return self._cached("V", lambda: one_electron.nuclear(self.basis, numbers, self.molecule.coords))
        if charges is None or coords is None:
            raise TypeError("nuclear() takes both charges and coords, or neither")
        return one_electron.nuclear(self.basis, np.asarray(charges, dtype=np.float64), coords)

    def hcore(self) -> np.ndarray:
        """Core Hamiltonian T + V, (nao, nao), hartree."""
        return self.kinetic() + self.nuclear()

    def dipole(self, origin: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
        """<m| r - origin |n>, (3, nao, nao), bohr (electron position, no charge sign)."""
        return one_electron.dipole(self.basis, np.asarray(origin, dtype=np.float64))

    # ---------------------------------------------------------------- two-electron
    def shell_pairs(self) -> ShellPairs:
        """The engine's ShellPairs (built on first call, then reused)."""
        if self._pairs is None:
            self._pairs = ShellPairs.build(self.basis)
            self._order = schwarz_order(self._pairs.schwarz)
        return self._pairs

    def eri(self) -> np.ndarray:
        """Full ERI tensor (mn|ls), (nao, nao, nao, nao), hartree; small systems and tests only
        (not part of the engine contract)."""
        return eri_full(self.basis, self.shell_pairs())

    def jk(
        self,
        dms: np.ndarray,
        with_j: bool = True,
        with_k: bool = True,
        threshold: float | None = None,
        omega: float = 0.0,
        precision: str = "fp64",
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Coulomb J and exchange K of symmetric densities, direct with screening.

        dms: (nao, nao) or (nset, nao, nao).  Returns (J, K) with the shape of ``dms``;
        a matrix not asked for is None.  threshold: this call's screening threshold
        (default and lower bound: the engine's ``screening_threshold``).  omega (bohr^-1):
        0 for 1/r12, > 0 for erf(omega r12)/r12, < 0 for erfc(|omega| r12)/r12.
        precision: 'fp64' or 'mixed', the same here (FP64 integrals and sums).
        """
        pairs = self.shell_pairs()
        thr = self.screening_threshold if threshold is None else max(float(threshold), self.screening_threshold)
        return _jk(
            self.basis, dms, with_j=with_j, with_k=with_k, threshold=thr, pairs=pairs, order=self._order, omega=omega
        )

    # ---------------------------------------------------------------- density fitting
    def int2c2e(self, aux: Basis, omega: float = 0.0) -> np.ndarray:
        """(P|Q) of the auxiliary basis ``aux``, (naux, naux), hartree, of the operator of
        omega (bohr^-1; :func:`hartree.integrals.three_center.int2c2e`)."""
        from hartree.integrals import three_center

        return three_center.int2c2e(aux, omega=omega)

    def int3c2e(self, aux: Basis, aux_shells: tuple[int, int] | None = None, omega: float = 0.0) -> np.ndarray:
        """(mn|P) for the aux shells s0 <= s < s1 of ``aux_shells`` (default all), (nao, nao,
        nP), hartree, of the operator of omega (bohr^-1;
        :func:`hartree.integrals.three_center.int3c2e`)."""
        from hartree.integrals import three_center

        return three_center.int3c2e(self.basis, aux, aux_shells, omega=omega)

    # ---------------------------------------------------------------- first derivatives
    def int3c2e_gradient(
        self, aux: Basis, gamma: np.ndarray, aux_shells: tuple[int, int] | None = None, omega: float = 0.0
    ) -> np.ndarray:
        """Σ Γ_mnP d(mn|P)/dR per atom, (natm, 3), hartree/bohr, of the operator of omega
        (bohr^-1; :func:`hartree.integrals.three_center_deriv.grad3c`)."""
        from hartree.integrals.three_center_deriv import grad3c

        gamma = np.asarray(gamma, dtype=np.float64)
        return grad3c(self.basis, aux, gamma, aux_shells, natm=self.molecule.natm, omega=omega)

    def int2c2e_gradient(self, aux: Basis, gamma: np.ndarray, omega: float = 0.0) -> np.ndarray:
        """Σ Γ_PQ d(P|Q)/dR per atom, (natm, 3), hartree/bohr, of the operator of omega
        (bohr^-1; :func:`hartree.integrals.three_center_deriv.grad2c`)."""
        from hartree.integrals.three_center_deriv import grad2c

        return grad2c(aux, np.asarray(gamma, dtype=np.float64), natm=self.molecule.natm, omega=omega)

    def one_electron_gradient(self, density: np.ndarray, energy_weighted_density: np.ndarray) -> np.ndarray:
        """Σ D d(T + V)/dR - Σ W dS/dR per atom, (natm, 3), hartree/bohr
        (:func:`hartree.integrals.gradient_terms.one_electron_term`)."""
        from hartree.integrals import gradient_terms  # derivative kernels: imported when a gradient is asked

        return gradient_terms.one_electron_term(self.molecule, self.basis, density, energy_weighted_density)

    def two_electron_gradient(
        self, coulomb_density: np.ndarray, exchange_densities: np.ndarray, exchange_factor: float, omega: float = 0.0
    ) -> np.ndarray:
        """1/2 Σ Γ d(mn|ls)/dR per atom, (natm, 3), hartree/bohr
        (:func:`hartree.integrals.gradient_terms.two_electron_term`), screened at
        ``screening_threshold``; omega (bohr^-1) >= 0: 0 for 1/r12, > 0 for erf(omega r12)/r12."""
        from hartree.integrals import gradient_terms

        pairs = self.shell_pairs()
        return gradient_terms.two_electron_term(
            self.molecule, self.basis, pairs, self._order, coulomb_density, exchange_densities, exchange_factor,
            self.screening_threshold, omega,
        )  # fmt: skip
