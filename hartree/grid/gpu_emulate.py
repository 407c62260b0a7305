"""Serial CPU emulation of the generated grid kernels (tests and debugging only).

The source from :mod:`hartree.grid.gpu_codegen` is compiled with g++ behind a small shim
(``__global__`` -> plain function, blockIdx/threadIdx as globals) plus one
``cpu_<kernel>(grid, block, ...)`` entry per kernel that runs every block and thread in
turn.  :class:`EmulatedBackend` has the interface of :class:`hartree.grid.gpu.CupyBackend`
with numpy arrays, so the whole GPU path (slabs, screening lists, kernels, GEMMs) runs on
a machine without a GPU.  Libraries are entries of kind ``grid_emulate`` of
:mod:`hartree.cache` (``<cache root>/grid_emulate``), keyed by the whole translation unit
(shim, kernels, wrappers), the g++ flags and the compiler, and verified before loading.
"""

import contextlib
import ctypes
import shutil
import threading

import numpy as np

from ..cache import shared_library
from . import gpu_codegen as cg

SHIM = """\
#include <math.h>
#include <algorithm>
using std::min; using std::max;
struct hartree_dim3 { unsigned x, y, z; };
static hartree_dim3 blockIdx, threadIdx, blockDim;
#define __global__
"""


def available():
    """True when g++ is on the PATH."""
    return shutil.which("g++") is not None


def _wrapper(name, params):
    args = ", ".join(n for _, n in params)
    return (
        f'extern "C" void cpu_{name}(int grid, int block, {cg.decl(params)})\n{{\n'
        "  blockDim.x = block; blockDim.y = blockDim.z = 1;\n"
        "  for (int blk_ = 0; blk_ < grid; ++blk_)\n"
        "    for (int thr_ = 0; thr_ < block; ++thr_) {\n"
        f"      blockIdx.x = blk_; threadIdx.x = thr_; {name}({args});\n"
        "    }\n}\n"
    )


def _kernels():
    from .gpu_separable import SEP_PARAMS

    return {"orb_screen": cg.SCREEN_PARAMS, "orb_mo": cg.EVAL_PARAMS, "orb_ao": cg.EVAL_PARAMS, "sep_b": SEP_PARAMS}


def build(source):
    """ctypes library of a generated source (compiled once per source text)."""
    text = (
        SHIM
        + source
        + "\n"
        + "".join(_wrapper(n, params) for n, params in _kernels().items() if f"void {n}(" in source)
    )
    return ctypes.CDLL(str(shared_library("grid_emulate", text, ["-O1", "-shared", "-fPIC", "-w"])))


class EmulatedBackend:
    """numpy arrays, kernels run serially on the CPU through g++ (one 'device')."""

    name = "emulated"
    xp = np
    _lock = threading.Lock()  # the shim's blockIdx/threadIdx are process globals

    def device_count(self):
        return 1

    def device(self, index):
        return contextlib.nullcontext()

    def module(self, source, key):
        return build(source)

    def launch(self, module, name, grid, block, args):
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                conv.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int32):
                conv.append(ctypes.c_int(int(a)))
            elif isinstance(a, np.int64):
                conv.append(ctypes.c_longlong(int(a)))
            else:
                raise TypeError(f"unexpected kernel argument {type(a)}")
        with self._lock:
            getattr(module, f"cpu_{name}")(ctypes.c_int(int(grid)), ctypes.c_int(int(block)), *conv)

    def to_host(self, array, out):
        out[...] = array

    def synchronize(self):
        pass
