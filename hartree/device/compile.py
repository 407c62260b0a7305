"""Run-time compilation of generated CUDA C with NVRTC, cached in memory and on disk.

``compile_kernels(jobs)`` takes (source, key) jobs; the key is a dict of explicit fields
(kernel kind, quartet class, J/K flags, precision, compile options, GPU arch, generator
version, Rys table digest, NVRTC version), completed with the source's SHA-256.  The cubin
is an entry of kind ``cuda`` of :mod:`hartree.cache` (``$HARTREE_CACHE_DIR`` or
``~/.cache/hartree``, then ``cuda/``): its record holds the key and the cubin's SHA-256,
checked before cupy loads it.  :func:`resource_report` reads each kernel's registers and
local memory after loading (spills show up as local_size_bytes > 0).  cupy is imported
lazily, inside the functions, never at import.
"""

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import cache
from .nvrtc import DEFAULT_OPTIONS

#: NVRTC options: FP64 without fast-math (FMA contraction allowed: it only adds accuracy);
#: the same as the CPU-side NVRTC wrapper's (hartree.device.nvrtc), which CI uses
BASE_OPTIONS = DEFAULT_OPTIONS

_memory = {}
_lock = threading.Lock()


def cache_dir():
    """Directory of the on-disk kernel cache (``<cache root>/cuda``, created private on
    demand; cubins are ``<digest>.cubin``, each with a ``.cubin.json`` record)."""
    return str(cache.kind_dir("cuda"))


def device_arch():
    """'sm_90' for an H100; read from the current device (only when called)."""
    import cupy

    return f"sm_{cupy.cuda.Device().compute_capability}"  # e.g. '90' -> 'sm_90'


def nvrtc_version():
    from cupy_backends.cuda.libs import nvrtc

    return ".".join(str(v) for v in nvrtc.getVersion())


def full_key(key, source):
    """Key dict completed with arch, options, NVRTC version and the source digest."""
    k = dict(key)
    k.setdefault("arch", device_arch())
    k.setdefault("options", list(BASE_OPTIONS))
    k.setdefault("nvrtc", nvrtc_version())
    k["source_sha256"] = hashlib.sha256(source.encode()).hexdigest()
    return k


_digest = cache.digest


def _nvrtc_cubin(source, name, arch, options):
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, name, (), ())
    try:
        opts = list(options) + [f"--gpu-architecture={arch}"]
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception as exc:
            log = nvrtc.getProgramLog(prog)
            from hartree.errors import DeviceError

            raise DeviceError(f"NVRTC failed for {name}: {exc}\n{log}") from exc
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


def _load(source, key):
    """cupy.RawModule for (source, full key): memory cache, then disk cache, then NVRTC."""
    import cupy

    digest = _digest(key)
    with _lock:
        if digest in _memory:
            return _memory[digest]

    def build(tmp):
        cubin = _nvrtc_cubin(source, f"hartree_{digest}.cu", key["arch"], key["options"])
        with open(tmp, "wb") as f:
            f.write(cubin)

    path = cache.get_or_build("cuda", key, ".cubin", build=build)  # verified, or built
    module = cupy.RawModule(path=str(path))
    with _lock:
        _memory[digest] = module
    return module


def _loaded(keys):
    """The in-memory modules of these full keys, or None when one is missing."""
    with _lock:
        found = [_memory.get(_digest(key)) for key in keys]
    return None if any(m is None for m in found) else found


def compile_kernels(jobs, workers=None):
    """Compile (or fetch) many modules, in parallel threads (NVRTC releases the GIL).

    jobs: list of (source, key dict).  Returns the list of cupy.RawModule, same order.
    """
    if not jobs:
        return []
    keys = [full_key(key, source) for source, key in jobs]  # on the caller's current device
    loaded = _loaded(keys)
    if loaded is not None:  # every module already in this process: no threads to start
        return loaded
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_load, [source for source, _ in jobs], keys))


def resource_report(module, names):
    """{kernel name: {num_regs, local_size_bytes, shared_size_bytes}} for loaded kernels."""
    out = {}
    for name in names:
        f = module.get_function(name)
        out[name] = {k: int(getattr(f, k)) for k in ("num_regs", "local_size_bytes", "shared_size_bytes")}
    return out
