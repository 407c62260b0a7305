"""The integral-engine contract: every operation a method (SCF, its guess, the drivers) asks of
an engine, and nothing else.

    engine: IntegralEngine = CPUEngine(molecule, basis)     # or hartree.gpu.GPUEngine(...)
    xp = engine.array_module()                              # numpy, or cupy on a GPU
    S, H = engine.overlap(), engine.hcore()                 # (nao, nao) in xp
    J, K = engine.jk(D)                                     # D (nset, nao, nao) -> same shape

Two engines implement it: :class:`hartree.integrals.engine.CPUEngine` (numba) and
:class:`hartree.gpu.engine.GPUEngine` (generated CUDA kernels, one or several GPUs).  Methods
call only what is declared here; ``tests/test_engine_contract.py`` checks that both engines
have every member with the same signature.

Conventions: atomic units throughout (lengths bohr, energies hartree); matrices in the final
AO basis of ``engine.basis`` (spherical or cartesian as the basis says), float64, in the
engine's array module (``xp``) unless a method says otherwise; densities are symmetric.

First derivatives (gradients) are declared as per-atom contractions with densities,
(natm, 3) numpy arrays: :meth:`IntegralEngine.one_electron_gradient` and
:meth:`IntegralEngine.two_electron_gradient`; the derivative integrals are never stored.

Density fitting: :meth:`IntegralEngine.int2c2e` (the Coulomb metric of an auxiliary basis)
and :meth:`IntegralEngine.int3c2e` ((mn|P) for a range of auxiliary shells), used by the
density-fitted SCF (:mod:`hartree.df.jk`; RI-MP2 still calls
:mod:`hartree.integrals.three_center` and :mod:`hartree.gpu.eri3c` directly).

Room left for the integral kinds that come next (not declared yet: a method that needs one
adds it here and to both engines, with a test in ``tests/test_engine_contract.py``):

* AO values and derivatives on grid points (DFT): ``ao_values(points, deriv=0)`` ->
  (nderiv, npoints, nao) for points (npoints, 3) in bohr.

The full ERI tensor is not part of the contract (no method needs it; it is O(nao^4) memory):
:meth:`hartree.integrals.engine.CPUEngine.eri` gives it for tests and small systems.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hartree.basis import Basis
    from hartree.molecule import Molecule

#: an array of the engine's array module (numpy.ndarray or cupy.ndarray)
Array = Any


@runtime_checkable
class IntegralEngine(Protocol):
    """The operations methods need from an integral engine (module docstring).

    Attributes, set by the constructor ``Engine(molecule, basis, screening_threshold=...)``:

    molecule: the :class:`hartree.molecule.Molecule` (point nuclei at ``coords``, bohr).
    basis: the :class:`hartree.basis.Basis` on that molecule (``nao`` functions).
    screening_threshold: hartree; a shell quartet is skipped in :meth:`jk` when
      sqrt((ab|ab)) sqrt((cd|cd)) max|D| falls below it (Haser & Ahlrichs, J. Comput. Chem.
      10, 104 (1989)); PySCF's ``direct_scf_tol``.
    notes: sentences for the user about decisions the engine took (J/K split into batches
      when memory was short, retries after running out of memory), in order; empty when
      there is nothing to say.  The SCF driver copies them into ``SCFResult.notes``.
    """

    molecule: Molecule
    basis: Basis
    screening_threshold: float
    notes: list[str]

    @property
    def device(self) -> str:
        """Text naming where the integrals run, for reports: 'cpu (numba, 16 threads)',
        'cuda:0 (NVIDIA H100 80GB HBM3, cupy 14.2.0)'."""
        ...

    @property
    def scf_note(self) -> str | None:
        """Sentence for ``SCFResult.notes`` saying where an SCF on this engine runs, or None
        when its loop runs on the host with numpy (nothing worth saying)."""
        ...

    def array_module(self) -> ModuleType:
        """The module the engine's matrices live in (numpy, or cupy for a CUDA engine).  An
        SCF keeps its Fock, density, DIIS and diagonalisation work in this module."""
        ...

    def use(self) -> AbstractContextManager:
        """Context in which the engine's (first) device is the current one, so that arrays a
        method allocates with :meth:`array_module` live beside the engine's; a no-op
        context on the CPU."""
        ...

    def for_molecule(self, molecule: Molecule, basis: Basis) -> IntegralEngine:
        """An engine of the same kind, on the same (first) device and with the same
        ``screening_threshold``, for another molecule and basis (e.g. the free atoms of the
        SAD guess); it shares what can be shared (device, compiled kernels)."""
        ...

    # ------------------------------------------------------------------ one-electron
    def overlap(self) -> Array:
        """Overlap S_mn = <m|n>, (nao, nao), dimensionless."""
        ...

    def kinetic(self) -> Array:
        """Kinetic energy T_mn = <m| -nabla^2/2 |n>, (nao, nao), hartree."""
        ...

    def nuclear(self, charges: Sequence[float] | None = None, coords: Array | None = None) -> Array:
        """Point-charge attraction V_mn = -sum_C Z_C <m| 1/|r - R_C| |n>, (nao, nao), hartree.

        charges (ncharge,) in e and coords (ncharge, 3) in bohr, both or neither; default:
        the molecule's nuclei (``molecule.numbers`` at ``molecule.coords``).
        """
        ...

    def hcore(self) -> Array:
        """Core Hamiltonian T + V (the molecule's nuclei), (nao, nao), hartree."""
        ...

    def dipole(self, origin: Sequence[float] = (0.0, 0.0, 0.0)) -> Array:
        """Position integrals <m| (r - origin) |n>, (3, nao, nao), bohr (electron position,
        without the electron's charge sign); origin (3,) in bohr."""
        ...

    # ------------------------------------------------------------------ two-electron
    def jk(
        self,
        dms: Array,
        with_j: bool = True,
        with_k: bool = True,
        threshold: float | None = None,
        omega: float = 0.0,
        precision: str = "fp64",
    ) -> tuple[Array | None, Array | None]:
        """Coulomb and exchange matrices of symmetric densities, direct with screening:

            J_mn = sum_ls (mn|ls) D_ls,      K_mn = sum_ls (ml|ns) D_ls       (hartree)

        dms: (nao, nao) or (nset, nao, nao), numpy or the engine's array module.  Returns
        (J, K) with the shape of ``dms`` (None for a matrix not asked for), in the module
        ``dms`` came in.  threshold: this call's screening threshold in hartree (default and
        lower bound: ``screening_threshold``; looser values serve early SCF cycles).
        omega (bohr^-1): 0 for the operator 1/r12; > 0 for erf(omega r12)/r12, < 0 for
        erfc(|omega| r12)/r12 (PySCF's convention; range-separated hybrids).
        precision: 'fp64' (the default) or 'mixed': this call accepts the engine's bounded
        reduced-precision arithmetic where it has one (the density-fitted K:
        :mod:`hartree.df.mixed_k`; the SCF asks for it in early cycles, as it loosens
        ``threshold``); the exact engines have none and compute in FP64 either way.
        """
        ...

    # ------------------------------------------------------------------ density fitting
    def int2c2e(self, aux: Basis, omega: float = 0.0) -> Array:
        """Coulomb metric (P|Q) = ∫∫ P(r1) Q(r2) / |r1 - r2| of the auxiliary basis ``aux`` (a
        Basis on the engine's molecule, spherical or cartesian as ``basis``), (naux, naux),
        hartree, symmetric.  omega (bohr^-1): the operator, as in :meth:`jk` (0: 1/r12; > 0:
        erf(omega r12)/r12; < 0: erfc(|omega| r12)/r12): the metric of a range-separated fit."""
        ...

    def int3c2e(self, aux: Basis, aux_shells: tuple[int, int] | None = None, omega: float = 0.0) -> Array:
        """Three-index Coulomb integrals (mn|P) = ∫∫ m(r1) n(r1) P(r2) / |r1 - r2|, (nao, nao,
        nP), hartree, symmetric in m, n, for the auxiliary shells s0 <= s < s1 of
        ``aux_shells`` = (s0, s1) (default: all; nP = aux.ao_loc[s1] - aux.ao_loc[s0]).
        Shell pairs (m, n) whose Gaussian product overlap bound is below 1e-14 are left zero
        (:func:`hartree.integrals.three_center.significant_pairs`), on both engines.  omega
        (bohr^-1): the operator, as in :meth:`jk` and :meth:`int2c2e`."""
        ...

    # ------------------------------------------------------------------ first derivatives
    def int3c2e_gradient(
        self, aux: Basis, gamma: Array, aux_shells: tuple[int, int] | None = None, omega: float = 0.0
    ) -> Any:
        """Σ_mnP Γ_mnP d(mn|P)/dR per atom: numpy (natm, 3), hartree/bohr times Γ's unit;
        gamma (nao, nao, nP) symmetric in m, n, for the auxiliary shells s0 <= s < s1 of
        ``aux_shells`` (default all), in the engine's array module or numpy.  The derivative
        integrals are contracted as they are made, never stored; the pairs are int3c2e's.
        omega (bohr^-1): the operator, as in :meth:`int3c2e` (0: 1/r12; > 0: erf(omega r12)/r12;
        < 0: erfc(|omega| r12)/r12), the long-range fits' gradient (:mod:`hartree.df.gradient`)."""
        ...

    def int2c2e_gradient(self, aux: Basis, gamma: Array, omega: float = 0.0) -> Any:
        """Σ_PQ Γ_PQ d(P|Q)/dR per atom: numpy (natm, 3), hartree/bohr times Γ's unit; gamma
        (naux, naux) symmetric.  omega (bohr^-1): the operator, as in :meth:`int2c2e`."""
        ...

    def one_electron_gradient(self, density: Array, energy_weighted_density: Array) -> Any:
        """Σ_mn D_mn d(T + V)_mn/dR - Σ_mn W_mn dS_mn/dR per atom: numpy (natm, 3),
        hartree/bohr, the nuclei of V moving with their atoms (the Hellmann-Feynman term
        included).  density D, energy-weighted density W: (nao, nao), symmetric."""
        ...

    def two_electron_gradient(
        self, coulomb_density: Array, exchange_densities: Array, exchange_factor: float, omega: float = 0.0
    ) -> Any:
        """1/2 Σ Γ_mnls d(mn|ls)/dR per atom: numpy (natm, 3), hartree/bohr, with
        Γ_mnls = DJ_mn DJ_ls - exchange_factor/2 Σ_s (DK^s_ml DK^s_ns + DK^s_ms DK^s_nl);
        coulomb_density DJ (nao, nao), exchange_densities DK (nset, nao, nao), symmetric
        (RHF: DJ = D, DK = [D], factor 1/2; UHF and ROHF: DJ = Da + Db, DK = [Da, Db],
        factor 1).  Quartets screened at ``screening_threshold``.  omega (bohr^-1): 0 for
        1/r12, > 0 for erf(omega r12)/r12 (range-separated hybrids; engines without the
        attenuated kernels raise InputError)."""
        ...
