"""Options of an RI-MP2 calculation (checked when constructed)."""

from __future__ import annotations

from dataclasses import dataclass

from hartree.device.selection import DEVICES
from hartree.errors import InputError
from hartree.linalg.gemm_precision import PRECISIONS

__all__ = ["MP2Options"]


@dataclass(frozen=True)
class MP2Options:
    """aux: auxiliary basis (None: default for the orbital basis; name, path, dict or Basis);
    device: 'cpu', 'gpu' (hartree/mp2/gpu_device.py; DeviceError without a GPU) or 'auto';
    frozen_core: False/True (noble-gas cores) or an int number of frozen orbitals per spin;
    precision: mgemm scheme for the B and (ia|jb) GEMMs; memory_mb: bound on the large
    intermediates ((mu nu|P) batch, (ia|jb) block), MB; gemm_memory_budget: mgemm's tile
    budget in bytes (None: no cleaving); storage: where the (ia|P)/B tensors live, "memory"
    or "disk" (an HDF5 file in a temporary directory under ``scratch_dir``, removed after).
    GPU only: gpu_memory_mb: device memory budget (None: 85% of the free memory); gpu_host_store:
    keep (ia|P)/B in host memory even when it fits the device; aux_batch: largest aux batch
    (cartesian functions) of the three-index step; gpu_backend: a hartree.device backend
    (e.g. EmulatedBackend for tests without a GPU; None: CUDA)."""

    aux: object = None
    frozen_core: bool | int = False
    precision: str = "fp64"
    memory_mb: float = 2000.0
    gemm_memory_budget: int | None = None
    storage: str = "memory"
    scratch_dir: str | None = None
    device: str = "cpu"
    gpu_memory_mb: float | None = None
    gpu_host_store: bool = False
    aux_batch: int | None = None
    gpu_backend: object = None

    def __post_init__(self):
        if self.storage not in ("memory", "disk"):
            raise InputError(f"MP2 storage must be 'memory' or 'disk', got {self.storage!r}")
        if self.device not in DEVICES:
            raise InputError(f"MP2 device must be 'cpu', 'gpu' or 'auto', got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise InputError(f"unknown MP2 precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}")
        if self.memory_mb <= 0:
            raise InputError("memory_mb must be positive")
