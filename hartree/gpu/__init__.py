"""hartree.gpu: GPU integrals (generated Rys-quadrature CUDA kernels via NVRTC).

>>> from hartree.gpu import GPUEngine
>>> J, K = GPUEngine(mol, basis).jk(dms)

Modules: ``codegen`` (Rys roots and recurrences of one quartet class as CUDA C),
``jk_kernels`` (J/K kernels of a class: component slices, digestion), ``cooperative_kernels``
(J/K kernels with a warp per quartet for high-l classes), ``quartet_lists`` (screened
quartet lists), ``pairs`` (shell pairs by class), ``device_pairs`` (the pair records on the
device, sorted there), ``tables`` (Rys table as the kernels read it), ``tuning`` (per-GPU
choices from ``data/jk_tuning.json``), ``jk_direct`` (the direct J/K driver, DirectJK),
``multi`` (J/K on several GPUs), ``memory`` (J/K and SCF memory estimates, batching),
``one_electron_gpu`` (S, T, V, dipole), ``eri3c`` (3-/2-index integrals), ``engine``
(GPUEngine, the :class:`hartree.engine.IntegralEngine` contract on the GPU).
Device selection, compilation, the backends (CUDA and the g++ emulator) and
the multi-GPU work queue are the device layer, :mod:`hartree.device`; ``gpu_available``
and ``gpu_status`` are re-exported from :mod:`hartree.device.selection`.
cupy is imported only inside functions: importing this package needs no GPU.
"""

from ..device.selection import gpu_available, gpu_status
from .engine import GPUEngine

__all__ = ["GPUEngine", "gpu_available", "gpu_status"]
