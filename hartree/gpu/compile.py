"""Run-time compilation of generated CUDA C with NVRTC, cached in memory and on disk.

``compile_kernels(jobs)`` takes (source, key) jobs; the key is a dict of explicit fields
(kernel kind, quartet class, J/K flags, precision, compile options, GPU arch, generator
version, Rys table digest, NVRTC version).  Its SHA-256 (with the source's) names a cubin
under ``$HARTREE_CACHE_DIR`` or ``~/.cache/hartree/cuda/``; a JSON file beside it records
the key and, after loading, each kernel's registers and local memory (spills show up as
local_size_bytes > 0).  cupy is imported lazily, inside the functions, never at import.
"""
import hashlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .nvrtc import DEFAULT_OPTIONS

#: NVRTC options: FP64 without fast-math (FMA contraction allowed: it only adds accuracy);
#: the same as the CPU-side NVRTC wrapper's (hartree.gpu.nvrtc), which CI uses
BASE_OPTIONS = DEFAULT_OPTIONS

_memory = {}
_lock = threading.Lock()


def cache_dir():
    """Directory of the on-disk kernel cache (created on demand)."""
    base = os.environ.get("HARTREE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "hartree")
    path = os.path.join(base, "cuda")
    os.makedirs(path, exist_ok=True)
    return path


def device_arch():
    """'sm_90' for an H100; read from the current device (only when called)."""
    import cupy
    return f"sm_{cupy.cuda.Device().compute_capability}"     # e.g. '90' -> 'sm_90'


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


def _digest(key):
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


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
    """cupy.RawModule for (source, key): memory cache, then disk cache, then NVRTC."""
    import cupy
    key = full_key(key, source)
    digest = _digest(key)
    with _lock:
        if digest in _memory:
            return _memory[digest]
    path = os.path.join(cache_dir(), digest + ".cubin")
    if not os.path.exists(path):
        cubin = _nvrtc_cubin(source, f"hartree_{digest}.cu", key["arch"], key["options"])
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)
        with open(os.path.join(cache_dir(), digest + ".json"), "w") as f:
            json.dump(key, f, indent=1, sort_keys=True)
    module = cupy.RawModule(path=path)
    with _lock:
        _memory[digest] = module
    return module


def compile_kernels(jobs, workers=None):
    """Compile (or fetch) many modules, in parallel threads (NVRTC releases the GIL).

    jobs: list of (source, key dict).  Returns the list of cupy.RawModule, same order.
    """
    if not jobs:
        return []
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda job: _load(*job), jobs))


def resource_report(module, names):
    """{kernel name: {num_regs, local_size_bytes, shared_size_bytes}} for loaded kernels."""
    out = {}
    for name in names:
        f = module.get_function(name)
        out[name] = {k: int(getattr(f, k)) for k in
                     ("num_regs", "local_size_bytes", "shared_size_bytes")}
    return out
