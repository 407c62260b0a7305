"""GPUEngine: the engine interface of docs/architecture.md with J/K on an NVIDIA GPU.

    engine = GPUEngine(molecule, basis, screening_threshold=1e-13)
    J, K = engine.jk(dms)            # dms (nset, nao, nao) symmetric; numpy or cupy

J/K are built by the generated Rys kernels (:mod:`hartree.gpu.jk`).  One-electron
integrals are cheap and come from the CPU code (numpy results).  ``jk`` returns arrays of
the module its input came from (numpy in -> numpy out, cupy in -> cupy out).  No device
is touched before the first ``jk`` call, :meth:`prepare` or :meth:`array_module`.
"""
import numpy as np

from hartree.errors import DeviceError


class GPUEngine:
    """Direct J/K on the GPU; same methods as the CPU engine.

    molecule: hartree.Molecule (coordinates in bohr); basis: hartree.basis.Basis;
    screening_threshold: skip quartets with sqrt((ij|ij)) sqrt((kl|kl)) max|D| below it.
    backend: a hartree.gpu.jk backend (default: CUDA through cupy).
    """

    def __init__(self, molecule, basis, screening_threshold=1e-13, backend=None):
        self.molecule = molecule
        self.basis = basis
        self.screening_threshold = float(screening_threshold)
        self._backend = backend
        self._builder = None

    # ------------------------------------------------------------------ device side
    def _jk_builder(self):
        if self._builder is None:
            from .jk import CudaBackend, JKBuilder
            backend = self._backend
            if backend is None:
                try:
                    backend = CudaBackend()
                except ImportError as exc:
                    raise DeviceError("GPUEngine needs cupy (pip install cupy-cuda13x)") from exc
                self._backend = backend
            self._builder = JKBuilder(self.basis, backend, self.screening_threshold)
        return self._builder

    def prepare(self, with_j=True, with_k=True):
        """Build pair data and Schwarz factors, compile every kernel (cached)."""
        self._jk_builder().prepare(with_j, with_k)
        return self

    def array_module(self):
        """The array module J/K live in on this engine: cupy (CUDA) or numpy (emulated).

        The SCF kernel uploads the one-electron matrices once with ``xp.asarray`` and
        keeps its Fock, density, DIIS and diagonalisation work in this module.
        """
        return self._jk_builder().xp

    @property
    def device(self):
        """Text naming the device, e.g. 'cuda (NVIDIA H100 80GB HBM3, cupy 14.2.0)'."""
        backend = self._backend
        if backend is None or getattr(backend, "name", "") == "cuda":
            try:
                import cupy
                props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
                name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
                return f"cuda ({name}, cupy {cupy.__version__})"
            except Exception:               # no cupy / no device: still a readable string
                return "cuda (unavailable)"
        return f"{backend.name} (emulated GPU kernels on the CPU)"

    def jk(self, dms, with_j=True, with_k=True):
        """J_μν = Σ (μν|λσ) D_λσ and K_μν = Σ (μλ|νσ) D_λσ for each density.

        dms: (nset, nao, nao) or (nao, nao), symmetric.  Returns (J, K) of the same
        shape (None for the one not asked for), numpy if dms is numpy else cupy.
        """
        builder = self._jk_builder()
        on_host = isinstance(dms, np.ndarray) and builder.xp is not np
        J, K = builder.jk(dms, with_j, with_k)
        if on_host:
            J = None if J is None else J.get()
            K = None if K is None else K.get()
        return J, K

    # ------------------------------------------------------------------ CPU side
    def overlap(self):
        from hartree.integrals.one_electron import overlap
        return overlap(self.basis)

    def kinetic(self):
        from hartree.integrals.one_electron import kinetic
        return kinetic(self.basis)

    def nuclear(self):
        from hartree.integrals.one_electron import nuclear
        return nuclear(self.basis, self.molecule.numbers, self.molecule.coords)

    def hcore(self):
        return self.kinetic() + self.nuclear()

    def dipole(self, origin=(0.0, 0.0, 0.0)):
        from hartree.integrals.one_electron import dipole
        return dipole(self.basis, origin)

    def eri(self):
        """Full ERI tensor (small systems/tests): taken from the CPU engine."""
        from hartree.integrals.engine import CPUEngine
        return CPUEngine(self.molecule, self.basis, self.screening_threshold).eri()
