"""GPUEngine: the :class:`hartree.engine.IntegralEngine` contract on one or several NVIDIA GPUs.

    engine = GPUEngine(molecule, basis, screening_threshold=1e-13, devices=[0, 1])
    J, K = engine.jk(dms)            # dms (nset, nao, nao) symmetric; numpy or cupy
    S = engine.overlap()             # (nao, nao) cupy, computed on the GPU

J/K are built by the generated Rys kernels (:mod:`hartree.gpu.jk_direct`; with several devices
:mod:`hartree.gpu.multi` spreads the quartet work over them).  The one-electron matrices
(S, T, V, dipole) are computed on device 0 by generated kernels
(:mod:`hartree.gpu.one_electron_gpu`) and returned in the engine's array module (cupy on
CUDA), so an SCF that asks for them never sees host copies.  ``jk`` returns arrays of
the module its input came from (numpy in -> numpy out, cupy in -> cupy out).  J/K work is
split into batches of densities when the GPU memory is short (:mod:`hartree.gpu.memory`);
such decisions are appended to ``engine.notes``.  No device is touched before the first
call that needs one (an engine can be built, and inspected, without a GPU).

The full ERI tensor is not offered (it is not part of the contract; the CPU engine has it
for tests).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from hartree.arrays import to_numpy

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.molecule import Molecule

#: a numpy or cupy array (the engine's array module, or the module its input came in)
Array = Any


class GPUEngine:
    """Direct J/K and one-electron integrals on the GPU; same methods as the CPU engine.

    molecule: hartree.Molecule (coordinates in bohr); basis: hartree.basis.Basis;
    screening_threshold: skip quartets with sqrt((ij|ij)) sqrt((kl|kl)) max|D| below it.
    devices: CUDA device ordinals to use (None: the current device); the first one holds
    the SCF arrays.  backends: explicit backend objects instead (one per "device", e.g.
    emulated ones in tests); backend: a single backend (kept for compatibility).
    """

    def __init__(
        self,
        molecule: Molecule,
        basis: Basis,
        screening_threshold: float = 1e-13,
        backend: Any = None,
        devices: Sequence[int] | None = None,
        backends: Sequence[Any] | None = None,
    ) -> None:
        self.molecule = molecule
        self.basis = basis
        self.screening_threshold = float(screening_threshold)
        if backends is None and backend is not None:
            backends = [backend]
        self._backends = list(backends) if backends is not None else None
        self.devices = None if devices is None else [int(d) for d in devices]
        self._builder = None
        self._one = None
        self._one_cache = {}
        self._gradient = None  # DirectGradient, built on first use
        self._one_gradient = None  # OneElectronGradientGPU, built on first use
        self._eri3c = None  # (aux basis, ThreeCenterBuilder) of the last int3c2e/int2c2e
        self._eri3c_gradient = None  # (aux basis, ThreeCenterGradient) of the last *_gradient
        #: sentences for the user (batching, out-of-memory retries), in order
        self.notes: list[str] = []
        #: seconds spent compiling/loading kernels in :meth:`prepare` (None before)
        self.prepare_seconds = None

    # ------------------------------------------------------------------ device side
    def backends(self) -> list[Any]:
        """The backend objects, one per device (created on first use)."""
        if self._backends is None:
            from ..device.backend import CudaBackend

            devs = self.devices if self.devices else [None]
            self._backends = [CudaBackend(d) for d in devs]  # DeviceError without cupy
        return self._backends

    def use(self) -> contextlib.AbstractContextManager:
        """Context manager: device 0 of this engine is the current device (the SCF loop's
        arrays are allocated there); a no-op context on the emulator."""
        return self.backends()[0].use()

    def for_molecule(self, molecule: Molecule, basis: Basis) -> GPUEngine:
        """A GPUEngine on this one's first device (its backend object, so its compiled
        kernels too) with the same screening threshold, for another molecule and basis."""
        return GPUEngine(molecule, basis, screening_threshold=self.screening_threshold, backends=self.backends()[:1])

    def free_cached_memory(self) -> None:
        """Return cupy's cached, unused blocks to the driver on every device (after an
        out-of-memory error); nothing for backends that keep no cache."""
        for b in self.backends():
            free = getattr(b, "free_cached", None)
            if free is not None:
                free()

    def _jk_builder(self):
        if self._builder is None:
            backends = self.backends()
            with self.use():
                if len(backends) > 1:
                    from .multi import MultiJK

                    self._builder = MultiJK(self.basis, backends, self.screening_threshold)
                else:
                    from .jk_direct import DirectJK

                    self._builder = DirectJK(self.basis, backends[0], self.screening_threshold)
        return self._builder

    def _one_electron(self):
        if self._one is None:
            from .one_electron_gpu import OneElectronGPU

            with self.use():
                self._one = OneElectronGPU(self.basis, self.backends()[0])
        return self._one

    def pending_kernels(self, with_j: bool = True, with_k: bool = True) -> int:
        """Number of J/K quartet-class modules not loaded yet (each is compiled, or read
        from the disk cache, by :meth:`prepare` or the first ``jk``)."""
        return len(self._jk_builder().missing_kernels(with_j, with_k))

    def prepare(self, with_j: bool = True, with_k: bool = True) -> GPUEngine:
        """Build pair data and Schwarz factors, compile every kernel (cached) on every
        device, including the one-electron kernels; sets ``prepare_seconds``."""
        t0 = time.perf_counter()
        self._jk_builder().prepare(with_j, with_k)
        with self.use():
            self._one_electron().prepare()
        self.prepare_seconds = time.perf_counter() - t0
        return self

    def array_module(self) -> ModuleType:
        """The array module J/K live in on this engine: cupy (CUDA) or numpy (emulated).

        The SCF kernel uploads the one-electron matrices once with ``xp.asarray`` (a no-op
        for this engine's device arrays) and keeps its Fock, density, DIIS and
        diagonalisation work in this module.
        """
        return self.backends()[0].xp

    @property
    def scf_note(self) -> str | None:
        """Sentence for ``SCFResult.notes`` saying where the SCF ran; None with emulated
        backends (numpy: the SCF loop runs on the host)."""
        backends = self._backends  # not created here: reading the note touches no device
        if backends is not None and backends[0].xp is np:
            return None
        n = self.ndevices
        jk = f"J/K (shared by {n} GPUs)" if n > 1 else "J/K"
        return f"one-electron integrals, {jk}, Fock, DIIS and diagonalisation on the GPU"

    @property
    def ndevices(self) -> int:
        """Number of devices sharing the J/K work."""
        return len(self._backends) if self._backends is not None else len(self.devices or [0])

    @property
    def device(self) -> str:
        """Text naming the device(s), e.g. 'cuda:0 (NVIDIA H100 80GB HBM3, cupy 14.2.0)'
        or 'cuda:0,1 (2 x NVIDIA H200, cupy 14.2.0)'."""
        backends = self._backends
        if backends is None or getattr(backends[0], "name", "") == "cuda":
            from ..device.selection import device_label

            return device_label([b.device_id for b in backends] if backends is not None else self.devices)
        n = len(backends)
        many = f", {n} emulated devices" if n > 1 else ""
        return f"{backends[0].name} (emulated GPU kernels on the CPU{many})"

    def jk(
        self,
        dms: Array,
        with_j: bool = True,
        with_k: bool = True,
        threshold: float | None = None,
        omega: float = 0.0,
        precision: str = "fp64",
    ) -> tuple[Array | None, Array | None]:
        """J_μν = Σ (μν|λσ) D_λσ and K_μν = Σ (μλ|νσ) D_λσ for each density.

        dms: (nset, nao, nao) or (nao, nao), symmetric.  Returns (J, K) of the same
        shape (None for the one not asked for), numpy if dms is numpy else cupy.
        threshold: this call's screening threshold (default and lower bound: the engine's
        ``screening_threshold``; the pair data were screened with that one).  omega
        (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12 (the attenuated kernels, compiled
        at their first use), < 0 for erfc(|omega| r12)/r12 = 1/r12 - erf(|omega| r12)/r12
        (PySCF's convention; two builds).  Every operator is screened with the 1/r12
        Schwarz factors, which bound erf and erfc (both kernels are positive definite and
        below 1/r).  precision: 'fp64' or 'mixed', the same here (FP64 integral kernels).
        """
        from .memory import batched_jk

        omega = float(omega)
        builder = self._jk_builder()
        on_host = isinstance(dms, np.ndarray) and builder.xp is not np
        thr = self.screening_threshold if threshold is None else max(float(threshold), self.screening_threshold)
        with self.use(), _screening(builder, thr):
            dms = builder.xp.asarray(dms)
            J, K = batched_jk(builder, dms, with_j, with_k, self.backends()[0], self.notes, abs(omega))
            if omega < 0.0:  # erfc = 1/r12 - erf
                Jf, Kf = batched_jk(builder, dms, with_j, with_k, self.backends()[0], self.notes)
                J = None if J is None else Jf - J
                K = None if K is None else Kf - K
        if on_host:
            J = None if J is None else J.get()
            K = None if K is None else K.get()
        return J, K

    # ------------------------------------------------------------------ one-electron
    def _cached(self, name, fn):
        if name not in self._one_cache:
            with self.use():
                self._one_cache[name] = fn(self._one_electron())
        return self._one_cache[name]

    def overlap(self) -> Array:
        """S_μν (nao, nao), dimensionless, engine array module."""
        return self._cached("S", lambda o: o.overlap())

    def kinetic(self) -> Array:
        """T_μν = <μ|-∇²/2|ν> (nao, nao), hartree, engine array module."""
        return self._cached("T", lambda o: o.kinetic())

    def nuclear(self, charges: Sequence[float] | None = None, coords: Array | None = None) -> Array:
        """V_μν = -Σ_C Z_C <μ|1/|r-C||ν> (nao, nao), hartree, engine array module: charges
        (ncharge,) in e at coords (ncharge, 3) in bohr, both or neither; default (cached):
        the molecule's nuclei."""
        if charges is None and coords is None:
            mol = self.molecule
            return self._cached("V", lambda o: o.nuclear(mol.numbers, mol.coords))
        if charges is None or coords is None:
            raise TypeError("nuclear() takes both charges and coords, or neither")
        with self.use():
            return self._one_electron().nuclear(charges, coords)

    def hcore(self) -> Array:
        """T + V (the molecule's nuclei), (nao, nao), hartree, engine array module."""
        return self.kinetic() + self.nuclear()

    def dipole(self, origin: Sequence[float] = (0.0, 0.0, 0.0)) -> Array:
        """<μ| r - origin |ν> (3, nao, nao), bohr, engine array module."""
        with self.use():
            return self._one_electron().dipole(origin)

    # ------------------------------------------------------------------ density fitting
    def _three_center(self, aux):
        """The :class:`hartree.gpu.eri3c.ThreeCenterBuilder` of ``basis`` and ``aux`` on the
        first device (kept for the last auxiliary basis asked for)."""
        held = self._eri3c
        if held is None or held[0] is not aux:
            from .eri3c import ThreeCenterBuilder

            with self.use():
                held = self._eri3c = (aux, ThreeCenterBuilder(self.basis, aux, self.backends()[0]))
        return held[1]

    def int2c2e(self, aux: Basis, omega: float = 0.0) -> Array:
        """(P|Q) of the auxiliary basis ``aux``, (naux, naux), hartree, engine array module, by
        the generated storing kernels of :mod:`hartree.gpu.eri3c` on the first GPU; omega
        (bohr^-1): the operator (omega != 0: the erf kernels)."""
        builder = self._three_center(aux)
        with self.use():
            return builder.int2c(omega)

    def int3c2e(self, aux: Basis, aux_shells: tuple[int, int] | None = None, omega: float = 0.0) -> Array:
        """(mn|P) for the aux shells s0 <= s < s1 of ``aux_shells`` (default all), (nao, nao,
        nP), hartree, engine array module, on the first GPU (:mod:`hartree.gpu.eri3c`); omega
        (bohr^-1): the operator (omega != 0: the erf kernels)."""
        builder = self._three_center(aux)
        with self.use():
            return builder.int3c(aux_shells, omega)

    # ------------------------------------------------------------------ first derivatives
    def _three_center_gradient(self, aux: Basis) -> Any:
        """The :class:`hartree.gpu.eri3c_gradient.ThreeCenterGradient` of ``basis`` and ``aux``
        on the first device (kept for the last auxiliary basis asked for)."""
        held = self._eri3c_gradient
        if held is None or held[0] is not aux:
            from .eri3c_gradient import ThreeCenterGradient

            with self.use():
                built = ThreeCenterGradient(self.basis, aux, self.backends()[0], self.molecule.natm)
                held = self._eri3c_gradient = (aux, built)
        return held[1]

    def int3c2e_gradient(
        self, aux: Basis, gamma: Array, aux_shells: tuple[int, int] | None = None, omega: float = 0.0
    ) -> Any:
        """Σ Γ_mnP d(mn|P)/dR per atom, numpy (natm, 3), hartree/bohr, by the generated
        derivative kernels of :mod:`hartree.gpu.eri3c_gradient` on the first GPU; omega
        (bohr^-1): the operator (omega != 0: the erf kernels, erfc as 1/r12 minus erf)."""
        builder = self._three_center_gradient(aux)
        with self.use():
            return to_numpy(builder.grad3c(gamma, aux_shells, omega=omega)).reshape(-1, 3)

    def int2c2e_gradient(self, aux: Basis, gamma: Array, omega: float = 0.0) -> Any:
        """Σ Γ_PQ d(P|Q)/dR per atom, numpy (natm, 3), hartree/bohr, on the first GPU
        (:mod:`hartree.gpu.eri3c_gradient`); omega (bohr^-1): the operator, as int3c2e_gradient."""
        builder = self._three_center_gradient(aux)
        with self.use():
            return to_numpy(builder.grad2c(gamma, omega=omega)).reshape(-1, 3)

    def _note(self, note):
        if note not in self.notes:
            self.notes.append(note)

    def one_electron_gradient(self, density: Array, energy_weighted_density: Array) -> Any:
        """Σ D d(T + V)/dR - Σ W dS/dR per atom, numpy (natm, 3), hartree/bohr, by the
        one-electron gradient kernels (:class:`hartree.gpu.one_electron_deriv_gpu.OneElectronGradientGPU`)
        on the first GPU."""
        from .one_electron_deriv_gpu import OneElectronGradientGPU

        with self.use():
            if self._one_gradient is None:
                self._one_gradient = OneElectronGradientGPU(self.basis, self.molecule, self.backends()[0])
            return self._one_gradient.gradient(density, energy_weighted_density)

    def two_electron_gradient(
        self, coulomb_density: Array, exchange_densities: Array, exchange_factor: float, omega: float = 0.0
    ) -> Any:
        """1/2 Σ Γ d(mn|ls)/dR per atom, numpy (natm, 3), hartree/bohr, by the gradient
        kernels (:class:`hartree.gpu.gradient.DirectGradient`) over the J/K builder's pairs
        and quartet lists; on several devices the quartet classes are shared out among
        them (:class:`hartree.gpu.multi.MultiGradient`).  omega (bohr^-1): 0 for 1/r12, > 0
        for erf(omega r12)/r12, < 0 for erfc(|omega| r12)/r12 = 1/r12 - erf (two passes)."""
        omega = float(omega)
        builder = self._jk_builder()
        with self.use():
            if self._gradient is None:
                if hasattr(builder, "builders"):
                    from .multi import MultiGradient

                    self._gradient = MultiGradient(builder, self.basis.shell_atom)
                else:
                    from .gradient import DirectGradient

                    self._gradient = DirectGradient(builder, self.basis.shell_atom)
            args = (coulomb_density, exchange_densities, exchange_factor, self.molecule.natm)
            g = self._gradient.gradient(*args, omega=abs(omega))
            return self._gradient.gradient(*args) - g if omega < 0.0 else g


@contextlib.contextmanager
def _screening(builder, threshold):
    """The J/K builder(s) screen with ``threshold`` inside the block, as before after it."""
    builders = [builder] + list(getattr(builder, "builders", []))
    saved = [b.threshold for b in builders]
    for b in builders:
        b.threshold = threshold
    try:
        yield
    finally:
        for b, t in zip(builders, saved):
            b.threshold = t
