"""GPUEngine: the engine interface of docs/architecture.md on one or several NVIDIA GPUs.

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
call that needs one.
"""

import contextlib
import time

import numpy as np

from hartree.errors import DeviceError


class GPUEngine:
    """Direct J/K and one-electron integrals on the GPU; same methods as the CPU engine.

    molecule: hartree.Molecule (coordinates in bohr); basis: hartree.basis.Basis;
    screening_threshold: skip quartets with sqrt((ij|ij)) sqrt((kl|kl)) max|D| below it.
    devices: CUDA device ordinals to use (None: the current device); the first one holds
    the SCF arrays.  backends: explicit backend objects instead (one per "device", e.g.
    emulated ones in tests); backend: a single backend (kept for compatibility).
    """

    def __init__(self, molecule, basis, screening_threshold=1e-13, backend=None, devices=None, backends=None):
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
        #: sentences for the user (batching, out-of-memory retries), in order
        self.notes = []
        #: seconds spent compiling/loading kernels in :meth:`prepare` (None before)
        self.prepare_seconds = None

    # ------------------------------------------------------------------ device side
    def backends(self):
        """The backend objects, one per device (created on first use)."""
        if self._backends is None:
            from ..device.backend import CudaBackend

            try:
                devs = self.devices if self.devices else [None]
                self._backends = [CudaBackend(d) for d in devs]
            except ImportError as exc:
                raise DeviceError("GPUEngine needs cupy (pip install cupy-cuda13x)") from exc
        return self._backends

    def use(self):
        """Context manager: device 0 of this engine is the current device (the SCF loop's
        arrays are allocated there); a no-op context on the emulator."""
        return self.backends()[0].use()

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

    def pending_kernels(self, with_j=True, with_k=True):
        """Number of J/K quartet-class modules not loaded yet (each is compiled, or read
        from the disk cache, by :meth:`prepare` or the first ``jk``)."""
        return len(self._jk_builder().missing_kernels(with_j, with_k))

    def prepare(self, with_j=True, with_k=True):
        """Build pair data and Schwarz factors, compile every kernel (cached) on every
        device, including the one-electron kernels; sets ``prepare_seconds``."""
        t0 = time.perf_counter()
        self._jk_builder().prepare(with_j, with_k)
        with self.use():
            self._one_electron().prepare()
        self.prepare_seconds = time.perf_counter() - t0
        return self

    def array_module(self):
        """The array module J/K live in on this engine: cupy (CUDA) or numpy (emulated).

        The SCF kernel uploads the one-electron matrices once with ``xp.asarray`` (a no-op
        for this engine's device arrays) and keeps its Fock, density, DIIS and
        diagonalisation work in this module.
        """
        return self.backends()[0].xp

    @property
    def scf_note(self):
        """Sentence for ``SCFResult.notes`` saying where the SCF ran."""
        n = self.ndevices
        jk = f"J/K (shared by {n} GPUs)" if n > 1 else "J/K"
        return f"one-electron integrals, {jk}, Fock, DIIS and diagonalisation on the GPU"

    @property
    def ndevices(self):
        return len(self._backends) if self._backends is not None else len(self.devices or [0])

    @property
    def device(self):
        """Text naming the device(s), e.g. 'cuda:0 (NVIDIA H100 80GB HBM3, cupy 14.2.0)'
        or 'cuda:0,1 (2 x NVIDIA H200, cupy 14.2.0)'."""
        backends = self._backends
        if backends is None or getattr(backends[0], "name", "") == "cuda":
            try:
                import cupy

                ids = (
                    [b.device_id for b in backends]
                    if backends is not None
                    else (self.devices or [cupy.cuda.Device().id])
                )
                names = [_device_name(cupy, i) for i in ids]
                label = names[0] if len(set(names)) == 1 else " + ".join(names)
                if len(ids) > 1 and len(set(names)) == 1:
                    label = f"{len(ids)} x {label}"
                return f"cuda:{','.join(str(i) for i in ids)} ({label}, cupy {cupy.__version__})"
            except Exception:  # no cupy / no device: still a readable string
                return "cuda (unavailable)"
        n = len(backends)
        many = f", {n} emulated devices" if n > 1 else ""
        return f"{backends[0].name} (emulated GPU kernels on the CPU{many})"

    def jk(self, dms, with_j=True, with_k=True, threshold=None):
        """J_μν = Σ (μν|λσ) D_λσ and K_μν = Σ (μλ|νσ) D_λσ for each density.

        dms: (nset, nao, nao) or (nao, nao), symmetric.  Returns (J, K) of the same
        shape (None for the one not asked for), numpy if dms is numpy else cupy.
        threshold: this call's screening threshold (default and lower bound: the engine's
        ``screening_threshold``; the pair data were screened with that one).
        """
        from .memory import batched_jk

        builder = self._jk_builder()
        on_host = isinstance(dms, np.ndarray) and builder.xp is not np
        thr = self.screening_threshold if threshold is None else max(float(threshold), self.screening_threshold)
        with self.use(), _screening(builder, thr):
            J, K = batched_jk(builder, builder.xp.asarray(dms), with_j, with_k, self.backends()[0], self.notes)
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

    def overlap(self):
        """S_μν (nao, nao), engine array module."""
        return self._cached("S", lambda o: o.overlap())

    def kinetic(self):
        """T_μν = <μ|-∇²/2|ν> (nao, nao), engine array module."""
        return self._cached("T", lambda o: o.kinetic())

    def nuclear(self):
        """V_μν = -Σ_C Z_C <μ|1/|r-C||ν> (nao, nao), point nuclei, engine array module."""
        mol = self.molecule
        return self._cached("V", lambda o: o.nuclear(mol.numbers, mol.coords))

    def hcore(self):
        return self.kinetic() + self.nuclear()

    def dipole(self, origin=(0.0, 0.0, 0.0)):
        """<μ| r - origin |ν> (3, nao, nao), engine array module."""
        with self.use():
            return self._one_electron().dipole(origin)

    def eri(self):
        """Full ERI tensor (small systems/tests): taken from the CPU engine."""
        from hartree.integrals.engine import CPUEngine

        return CPUEngine(self.molecule, self.basis, self.screening_threshold).eri()


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


def _device_name(cupy, i):
    props = cupy.cuda.runtime.getDeviceProperties(int(i))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)
