"""hartree.gpu: GPU backend (generated Rys-quadrature CUDA kernels via NVRTC).

>>> from hartree.gpu import GPUEngine
>>> J, K = GPUEngine(mol, basis).jk(dms)

Modules: ``codegen`` (CUDA C per quartet class), ``compile`` (NVRTC + memory/disk cache),
``pairs`` (shell pairs by class), ``tables`` (Rys table as the kernels read it),
``jkgen`` (J/K kernels and slicing), ``jk`` (driver), ``multi`` (several GPUs),
``memory`` (budget, batching), ``one_electron_gpu`` (S, T, V, dipole), ``eri3c``
(3-/2-index integrals), ``nvrtc`` (NVRTC through ctypes, no GPU needed), ``engine``
(GPUEngine), ``device`` (is a GPU usable, asked at call time), ``emulate`` (serial CPU
run of the kernels, tests).
cupy is imported only inside functions: importing this package needs no GPU.
"""

from .device import gpu_available, gpu_status
from .engine import GPUEngine

__all__ = ["GPUEngine", "gpu_available", "gpu_status"]
