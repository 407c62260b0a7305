"""hartree.gpu: GPU integrals (generated Rys-quadrature CUDA kernels via NVRTC).

>>> from hartree.gpu import GPUEngine
>>> J, K = GPUEngine(mol, basis).jk(dms)

Modules: ``codegen`` (CUDA C per quartet class), ``pairs`` (shell pairs by class),
``tables`` (Rys table as the kernels read it), ``jkgen`` (J/K kernels and slicing), ``jk``
(driver), ``multi`` (J/K on several GPUs), ``memory`` (budget, batching),
``one_electron_gpu`` (S, T, V, dipole), ``eri3c`` (3-/2-index integrals), ``engine``
(GPUEngine).  Device selection, compilation, the backends (CUDA and the g++ emulator) and
the multi-GPU work queue are the device layer, :mod:`hartree.device`; ``gpu_available``
and ``gpu_status`` are re-exported from :mod:`hartree.device.selection`.
cupy is imported only inside functions: importing this package needs no GPU.
"""

from ..device.selection import gpu_available, gpu_status
from .engine import GPUEngine

__all__ = ["GPUEngine", "gpu_available", "gpu_status"]
