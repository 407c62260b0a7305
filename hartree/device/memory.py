"""Device memory: how much there is, and whether an error means it ran out.

* :func:`budget_bytes` - usable bytes of a backend's device: its free memory (plus cupy's
  cached blocks) times :data:`SAFETY`, capped by ``HARTREE_GPU_MEMORY`` ("8GB", "500MB",
  "123456789"; also how tests impose a small artificial budget on the emulated backend).
* :func:`is_out_of_memory` - whether an exception is the GPU running out of memory (the
  one test of it: J/K batching and the SCF driver's CPU fallback both ask it).
* :class:`GPUMemoryError` - work that does not fit even when split as far as it can be (a
  DeviceError: the CLI prints one line).
* :func:`parse_bytes`, :func:`gib` - sizes from and to text.

What a piece of work needs is estimated beside the work (e.g. ``hartree.gpu.memory`` for
J/K and the SCF); the decisions taken are reported as sentences in the caller's notes.
"""

import os
import re

from hartree.errors import DeviceError

#: fraction of the free memory we plan to use (cuBLAS workspaces, fragmentation)
SAFETY = 0.85

_UNITS = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


class GPUMemoryError(DeviceError):
    """The work does not fit the GPU memory even when split as far as it can be."""


def parse_bytes(text):
    """'8GB' -> 8e9, '512MiB' -> 536870912, '1000' -> 1000 (int); InputError-free:
    DeviceError naming the variable for text that is not a size."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise DeviceError(f"HARTREE_GPU_MEMORY={text!r} is not a size (e.g. 8GB, 500MB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def gib(n):
    """Readable size: '1.50 GiB', '12.0 MiB', '800 B' ('unlimited' for inf)."""
    if n == float("inf"):
        return "unlimited"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.{2 if unit == 'GiB' else 1}f} {unit}"
    return f"{int(n)} B"


def budget_bytes(backend):
    """Bytes the J/K and SCF work may use on this backend's device (see module doc)."""
    cap = os.environ.get("HARTREE_GPU_MEMORY")
    cap = parse_bytes(cap) if cap else None
    info = getattr(backend, "memory_info", None)
    if info is None:
        return cap if cap is not None else float("inf")
    free, _total = info()
    usable = int(free * SAFETY)
    return min(usable, cap) if cap is not None else usable


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a GPU out-of-memory error: cupy's OutOfMemoryError, a CUDA allocation error
    or a cuBLAS allocation failure, recognised without importing cupy (the one test of it:
    the J/K batching here and the SCF driver's CPU fallback both ask this function)."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc)
    return "cudaErrorMemoryAllocation" in text or "CUBLAS_STATUS_ALLOC_FAILED" in text
