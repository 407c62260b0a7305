"""g++ emulation backend for :mod:`hartree.atom.gpu`: the CUDA source run serially on the CPU.

Tests and debugging only: ``DeviceTwoElectron(ops, EmulatedBackend())`` checks the kernels'
algebra and the index tables on machines without a GPU (:data:`hartree.gpu.codegen.CPU_SHIM`
maps the CUDA keywords; one ``cpu_<kernel>`` wrapper per kernel loops over the 2-D grid).
The shared library is an entry of kind ``atom_emulate`` of :mod:`hartree.cache`
(``<cache root>/atom_emulate``, private), keyed by the whole translation unit, the g++ flags
and the compiler, and verified (SHA-256) before it is loaded.
"""

import ctypes
import re
import shutil

import numpy as np
import scipy.sparse

from ..cache import shared_library
from ..gpu.codegen import CPU_SHIM
from . import gpu_kernels
from .gpu import launch_shape

_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')


def available():
    return shutil.which("g++") is not None


def _wrappers(src):
    out = []
    for name, params in _KERNEL.findall(src):
        args = ", ".join(p.strip().split()[-1] for p in params.split(","))
        out.append(
            f'extern "C" void cpu_{name}(int gx, int gy, int bx, int by, {params})\n{{\n'
            "  blockDim.x = bx; blockDim.y = by; blockDim.z = 1;\n"
            "  gridDim.x = gx; gridDim.y = gy; gridDim.z = 1;\n"
            "  for (int y = 0; y < gy; ++y) for (int x = 0; x < gx; ++x)\n"
            "  for (int ty = 0; ty < by; ++ty) for (int tx = 0; tx < bx; ++tx) {\n"
            "    blockIdx.x = x; blockIdx.y = y; threadIdx.x = tx; threadIdx.y = ty;\n"
            f"    {name}({args});\n  }}\n}}\n"
        )
    return "\n".join(out)


class EmulatedBackend:
    """numpy arrays, scipy sparse, kernels from a g++-compiled copy of the CUDA source."""

    name = "cpu-emulated"

    def __init__(self):
        src = gpu_kernels.source()
        full = CPU_SHIM + "static ht_dim3 gridDim;\n" + src + _wrappers(src)
        lib = shared_library("atom_emulate", full, ["-O2", "-std=c++17", "-shared", "-fPIC"])
        self.lib = ctypes.CDLL(str(lib))

    asarray = staticmethod(np.ascontiguousarray)

    def empty(self, shape):
        return np.full(shape, np.nan)

    def zeros(self, shape):
        return np.zeros(shape)

    def csr(self, data, indices, indptr, shape):
        return scipy.sparse.csr_matrix((data, indices, indptr), shape=shape)

    def launch(self, name, n, args, mapping="2d"):
        suffix, (gx, gy), (bx, by) = launch_shape(n, mapping, 64)
        cargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                cargs.append(ctypes.c_int(int(a)))
        getattr(self.lib, f"cpu_{name}{suffix}")(
            ctypes.c_int(gx), ctypes.c_int(gy), ctypes.c_int(bx), ctypes.c_int(by), *cargs
        )

    scalar_int = staticmethod(np.int32)
    tonumpy = staticmethod(np.asarray)

    def synchronize(self):
        pass
