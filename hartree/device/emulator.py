"""Serial CPU emulation of generated CUDA kernels (tests and debugging only).

    backend = EmulatedBackend()                    # the interface of CudaBackend, numpy arrays
    (module,) = backend.compile([(source, key, kernels)])
    module.launch("name", grid, block, args)

The CUDA source is compiled with g++ behind a small shim (``emulator_shim.cu``:
``__global__`` -> plain function, ``atomicAdd`` -> ``+=``, block/thread indices and sizes as
thread-local globals) plus one ``cpu_<kernel>`` entry per kernel that runs every block and
thread of the launch grid in turn.  The J/K builder, the orbital lattices and the atomic
two-electron matrices then run their GPU code paths on numpy arrays, so the kernels'
algebra (recurrences, digestion, screening, symmetrisation, index tables) can be checked
on a machine without a GPU.  Streams, events and memory queries are CUDA-only: this
backend has none, and callers that ask ``hasattr(backend, "fork")`` run serially.

Kernel parameters ``[(C type, name)]`` come with each spec, or are read from the source's
``extern "C" __global__ void name(...)`` declarations; launch arguments are checked against
them (C-contiguous arrays of the pointer's element type, scalars converted to the
parameter's C type).  Shared libraries are entries of kind ``emulate`` of
:mod:`hartree.cache` (``<cache root>/emulate``), keyed by the whole translation unit (shim,
kernels, wrappers), the g++ flags and the compiler, and verified (SHA-256) before they are
loaded.  The shim is compiled once per flags into a precompiled header (``shim-*.h.gch``,
an entry of the same kind) that every library includes (g++ 12: 0.1 s instead of 0.4 s for a
small kernel), and the libraries of one :meth:`EmulatedBackend.compile` call are built by g++
processes side by side, one per usable core: the 120 gradient kernels up to (gg|gg) of
tests/gpu/test_gradient_kernels.py took 121 s one after the other with the shim inline, 32 s
so on 2 idle cores.
"""

import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..cache import compiler_identity, get_or_build, sha256_bytes, shared_library
from . import cuda_source
from .backend import dim3

#: element dtype a pointer parameter's array must have, by C base type (others unchecked:
#: REAL, Entry, ... are typedefs of the source)
_POINTER_DTYPES = {"int": np.int32, "long long": np.int64, "double": np.float64, "float": np.float32}
_SCALAR_TYPES = {
    "int": ctypes.c_int,
    "long long": ctypes.c_longlong,
    "double": ctypes.c_double,
    "float": ctypes.c_float,
}
_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')


def available():
    """True when a C++ compiler (g++) is on the PATH."""
    return shutil.which("g++") is not None


def shim():
    """The C++ text put before every emulated source."""
    return cuda_source.read("hartree.device", "emulator_shim.cu")


def kernel_parameters(source):
    """{kernel name: [(C type, name)]} of the ``extern "C" __global__`` kernels of a source."""
    out = {}
    for name, params in _KERNEL.findall(source):
        pairs = []
        for p in params.split(","):
            words = p.replace("*", "* ").replace("__restrict__", " ").split()
            pairs.append((" ".join(words[:-1]).replace(" *", "*"), words[-1]))
        out[name] = pairs
    return out


def _base_type(ctype):
    return " ".join(w for w in ctype.replace("*", " ").split() if w != "const")


def _wrapper(name, params):
    decl = ", ".join(f"{t} {n}" for t, n in params)
    args = ", ".join(n for _, n in params)
    return (
        f'extern "C" void cpu_{name}(int gx, int gy, int gz, int bx, int by, int bz, {decl})\n{{\n'
        "  gridDim.x = gx; gridDim.y = gy; gridDim.z = gz;\n"
        "  blockDim.x = bx; blockDim.y = by; blockDim.z = bz;\n"
        "  for (unsigned z = 0; z < (unsigned)gz; ++z)\n"
        "  for (unsigned y = 0; y < (unsigned)gy; ++y)\n"
        "  for (unsigned x = 0; x < (unsigned)gx; ++x)\n"
        "  for (unsigned tz = 0; tz < (unsigned)bz; ++tz)\n"
        "  for (unsigned ty = 0; ty < (unsigned)by; ++ty)\n"
        "  for (unsigned tx = 0; tx < (unsigned)bx; ++tx) {\n"
        "    blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;\n"
        "    threadIdx.x = tx; threadIdx.y = ty; threadIdx.z = tz;\n"
        f"    {name}({args});\n  }}\n}}\n"
    )


def _usable_cores():
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def precompiled_shim(flags):
    """Path of the shim as a header in the ``emulate`` cache, with g++'s precompiled form
    (``.gch``, built with ``flags``) beside it: every library then skips parsing <cmath>
    and <algorithm> again (0.3 s of the 0.4 s of g++ for a small kernel).  The two entries
    share one key (shim text, flags, compiler), hence one name but for the suffix, as g++
    wants."""
    text = shim()
    identity = compiler_identity()
    key = {"compiler": identity, "flags": list(flags), "shim_sha256": sha256_bytes(text), "kind": "shim"}
    header = get_or_build("emulate", key, ".h", data=text, prefix="shim-")

    def build(tmp):
        cmd = [identity["path"], *flags, "-x", "c++-header", "-o", tmp, str(header)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"g++ {' '.join(flags)} failed on the shim:\n{done.stderr[-3000:]}")

    get_or_build("emulate", key, ".h.gch", build=build, prefix="shim-")
    return header


class EmulatedBackend:
    """numpy arrays + g++-compiled kernels run serially on the host (one 'device').

    opt: g++ optimisation flag (-O0 compiles about twice as fast; -O1/-O2 for kernels the
    tests run on larger cases).  Host threads may launch at once: the shim's block and
    thread indices are thread-local.
    """

    name = "emulated"
    xp = np
    device_id = 0

    def __init__(self, opt="-O0"):
        self.opt = opt

    # ------------------------------------------------------------------ device
    def use(self):
        return contextlib.nullcontext()

    def device_count(self):
        return 1

    def for_device(self, index):
        return self

    def device_name(self):
        return "cpu-emulated"

    def multiprocessor_count(self):
        return 4

    # ------------------------------------------------------------------ kernels
    def compile(self, specs):
        """specs: list of (source, key, {kernel name: params} or None); returns launchers.
        The sources missing from the cache are compiled by g++ processes side by side, one
        per usable core, behind the shim precompiled once (:func:`precompiled_shim`)."""
        specs = list(specs)
        if not specs:
            return []
        flags = [self.opt, "-std=c++17", "-fPIC", "-w"]
        prelude = (precompiled_shim(flags), shim())
        flags = flags[:2] + ["-shared"] + flags[2:]  # the flags of the libraries (as before)

        def build(spec):
            src, _key, kernels = spec
            kernels = kernels if kernels is not None else kernel_parameters(src)
            text = src + "\n" + "\n".join(_wrapper(n, p) for n, p in kernels.items())
            so = shared_library("emulate", text, flags, prelude=prelude)
            return EmulatedModule(ctypes.CDLL(str(so)), kernels)

        workers = min(len(specs), _usable_cores())
        if workers <= 1:
            return [build(spec) for spec in specs]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(build, specs))

    def synchronize(self):
        pass

    # ------------------------------------------------------------------ arrays
    @property
    def sparse(self):
        import scipy.sparse

        return scipy.sparse

    asarray = staticmethod(np.ascontiguousarray)

    def empty(self, shape, dtype=np.float64):
        """NaN-filled for floats, so that an element no kernel writes shows up."""
        return np.full(shape, np.nan, dtype=dtype) if np.dtype(dtype).kind == "f" else np.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype=np.float64):
        return np.zeros(shape, dtype=dtype)

    to_numpy = staticmethod(np.asarray)

    @staticmethod
    def to_host(x, out):
        out[...] = x

    @staticmethod
    def to_here(x):
        return x

    @staticmethod
    def timer():
        t0 = time.perf_counter()
        return lambda: time.perf_counter() - t0


class EmulatedModule:
    """The kernels of one g++-compiled source; launch() as :class:`CudaModule`."""

    def __init__(self, lib, kernels):
        self.lib, self.kernels = lib, kernels

    def launch(self, name, grid, block, args, stream=None, shared_mem=0):
        params = self.kernels[name]
        if len(args) != len(params):
            raise TypeError(f"{name}: {len(args)} arguments for {len(params)} parameters")
        cargs = []
        for (ctype, pname), a in zip(params, args):
            if ctype.endswith("*"):
                if not (isinstance(a, np.ndarray) and a.flags.c_contiguous):
                    raise TypeError(f"{name}.{pname}: need a C-contiguous numpy array")
                want = _POINTER_DTYPES.get(_base_type(ctype))
                if want is not None and a.dtype != want:
                    raise TypeError(f"{name}.{pname}: dtype {a.dtype}, want {np.dtype(want)}")
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            elif ctype in _SCALAR_TYPES:
                convert = int if ctype in ("int", "long long") else float
                cargs.append(_SCALAR_TYPES[ctype](convert(a)))
            else:
                raise TypeError(f"{name}.{pname}: no emulation of a {ctype!r} argument")
        dims = (*dim3(grid), *dim3(block))
        getattr(self.lib, "cpu_" + name)(*(ctypes.c_int(int(d)) for d in dims), *cargs)
