"""Serial CPU emulation of the generated CUDA kernels (tests and debugging only).

The generated source is compiled with g++ behind a small shim (``codegen.CPU_SHIM``:
``__global__`` -> plain function, ``atomicAdd`` -> ``+=``, block/thread indices as
globals) plus one ``cpu_<kernel>`` entry per kernel that loops over the grid.  The
same :class:`hartree.gpu.jk.JKBuilder` then runs on numpy arrays, so the kernels'
algebra (recurrences, digestion, screening, symmetrisation) can be checked on a machine
without a GPU.  Shared libraries are entries of kind ``emulate`` of :mod:`hartree.cache`
(``<cache root>/emulate``), keyed by the whole translation unit (shim, kernels, wrappers),
the g++ flags and the compiler, and verified (SHA-256) before they are loaded.
"""

import ctypes
import shutil

import numpy as np

from ..cache import shared_library
from .codegen import CPU_SHIM
from .jkgen import decl as _decl


def available():
    """True when a C++ compiler (g++) is on the PATH."""
    return shutil.which("g++") is not None


def _wrappers(kernels):
    out = []
    for kname, params in kernels.items():
        args = ", ".join(name for _, name in params)
        out.append(
            f'extern "C" void cpu_{kname}(int gx, int gy, int gz, int bx, {_decl(params)})\n{{\n'
            "  blockDim.x = bx; blockDim.y = blockDim.z = 1;\n"
            "  for (unsigned z = 0; z < (unsigned)gz; ++z)\n"
            "  for (unsigned y = 0; y < (unsigned)gy; ++y)\n"
            "    for (unsigned x = 0; x < (unsigned)gx; ++x)\n"
            "      for (unsigned t = 0; t < (unsigned)bx; ++t) {\n"
            "        blockIdx.x = x; blockIdx.y = y; blockIdx.z = z; threadIdx.x = t;\n"
            f"        {kname}({args});\n      }}\n}}\n"
        )
    return "\n".join(out)


class EmulatedBackend:
    """numpy arrays + g++-compiled kernels run serially on the host."""

    name = "emulated"
    xp = np

    def __init__(self, opt="-O0"):  # -O0: compiles ~2x faster; tests run small cases
        self.opt = opt

    def compile(self, specs):
        return [self._build(src, kernels) for src, _key, kernels in specs]

    def synchronize(self):
        pass

    def timer(self):
        import time

        t0 = time.perf_counter()
        return lambda: time.perf_counter() - t0

    def _build(self, src, kernels):
        full = CPU_SHIM + src + "\n" + _wrappers(kernels)
        so = shared_library("emulate", full, [self.opt, "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas"])
        return _EmulatedModule(ctypes.CDLL(str(so)), kernels)


class _EmulatedModule:
    def __init__(self, lib, kernels):
        self.lib, self.kernels = lib, kernels

    def launch(self, name, grid, block, args, stream=None, shared_mem=0):
        params = self.kernels[name]
        if len(args) != len(params):
            raise TypeError(f"{name}: {len(args)} arguments for {len(params)} parameters")
        cargs = []
        keep = []
        for (ctype, pname), a in zip(params, args):
            if ctype.endswith("*"):
                if not (isinstance(a, np.ndarray) and a.flags.c_contiguous):
                    raise TypeError(f"{name}.{pname}: need a C-contiguous numpy array")
                want = np.int32 if "int" in ctype else np.float64
                if a.dtype != want:
                    raise TypeError(f"{name}.{pname}: dtype {a.dtype}, want {want}")
                keep.append(a)
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            elif ctype == "int":
                cargs.append(ctypes.c_int(int(a)))
            else:
                cargs.append(ctypes.c_double(float(a)))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        getattr(self.lib, "cpu_" + name)(*(ctypes.c_int(g) for g in grid), ctypes.c_int(block), *cargs)
