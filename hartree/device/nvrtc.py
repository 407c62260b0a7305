"""NVRTC through ctypes: compile CUDA C to PTX or a cubin without cupy and without a GPU.

NVRTC is a host library; it needs no driver and no device, so CI machines can compile
every generated kernel for a target architecture (``nvidia-cuda-nvrtc`` from pip ships
``libnvrtc.so.<major>``).  The library is looked up, in this order, at:

1. ``$HARTREE_NVRTC`` (full path of libnvrtc);
2. the pip wheels' folders ``site-packages/nvidia/cu13/lib``, ``nvidia/cu12/lib``,
   ``nvidia/cuda_nvrtc/lib`` (found through the ``nvidia`` namespace package, not imported);
3. ``$CUDA_PATH``/``$CUDA_HOME``/``/usr/local/cuda`` ``lib64``, then the system loader.

``compile_source(source, arch)`` returns a :class:`Result` (image bytes, log, seconds);
a failed compile raises :class:`hartree.errors.DeviceError` with NVRTC's log, and a
missing library raises it with the places searched.  :func:`cubin_resources` reads the
register count and the per-thread stack frame (local memory, i.e. spills and local arrays)
of each kernel from a cubin's ELF ``.nv.info`` sections, so resource use can be checked
without loading the image on a device.

Nothing is loaded at import time.
"""

import ctypes
import glob
import importlib.util
import os
import struct
import threading
import time
from dataclasses import dataclass

from hartree.errors import DeviceError

#: NVRTC options used by hartree.device.compile (FP64, no fast math; FMA contraction allowed)
DEFAULT_OPTIONS = ("-std=c++17", "--fmad=true")

_lib = None
_lib_path = None
_lock = threading.Lock()


def _candidates():
    env = os.environ.get("HARTREE_NVRTC")
    if env:
        yield env
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        for sub in ("cu13", "cu12", "cuda_nvrtc"):
            for path in sorted(glob.glob(os.path.join(root, sub, "lib", "libnvrtc.so*")), reverse=True):
                if "builtins" not in os.path.basename(path):
                    yield path
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            yield os.path.join(os.environ[var], "lib64", "libnvrtc.so")
    yield "/usr/local/cuda/lib64/libnvrtc.so"
    yield from ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12")


def library():
    """The loaded libnvrtc (ctypes.CDLL); raises DeviceError naming the places searched."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            tried.append(path)
            if os.sep in path and not os.path.exists(path):
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            _declare(lib)
            _lib, _lib_path = lib, path
            return lib
    raise DeviceError(
        "NVRTC (libnvrtc) not found; install the 'nvidia-cuda-nvrtc' package "
        "or set HARTREE_NVRTC to the library path (searched: " + ", ".join(tried) + ")"
    )


def available():
    """True when libnvrtc can be loaded."""
    try:
        library()
        return True
    except DeviceError:
        return False


def library_path():
    """Path (or loader name) of the loaded libnvrtc."""
    library()
    return _lib_path


def _declare(lib):
    P = ctypes.c_void_p
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
    sigs = {
        "nvrtcVersion": [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)],
        "nvrtcCreateProgram": [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, P, P],
        "nvrtcCompileProgram": [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "nvrtcGetProgramLogSize": [P, ctypes.POINTER(ctypes.c_size_t)],
        "nvrtcGetProgramLog": [P, ctypes.c_char_p],
        "nvrtcGetPTXSize": [P, ctypes.POINTER(ctypes.c_size_t)],
        "nvrtcGetPTX": [P, ctypes.c_char_p],
        "nvrtcGetCUBINSize": [P, ctypes.POINTER(ctypes.c_size_t)],
        "nvrtcGetCUBIN": [P, ctypes.c_char_p],
        "nvrtcDestroyProgram": [ctypes.POINTER(P)],
        "nvrtcGetNumSupportedArchs": [ctypes.POINTER(ctypes.c_int)],
        "nvrtcGetSupportedArchs": [ctypes.POINTER(ctypes.c_int)],
    }
    for name, args in sigs.items():
        f = getattr(lib, name)
        f.restype = ctypes.c_int
        f.argtypes = args


def _check(lib, status, what):
    if status != 0:
        msg = lib.nvrtcGetErrorString(status).decode(errors="replace")
        raise DeviceError(f"NVRTC {what} failed: {msg}")


def version():
    """(major, minor) of the loaded NVRTC."""
    lib = library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def supported_archs():
    """Compute capabilities this NVRTC can target, e.g. [75, 80, ..., 90, 100, 120]."""
    lib = library()
    n = ctypes.c_int()
    _check(lib, lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
    arr = (ctypes.c_int * n.value)()
    _check(lib, lib.nvrtcGetSupportedArchs(arr), "nvrtcGetSupportedArchs")
    return list(arr)


@dataclass(frozen=True)
class Result:
    """One compiled program: image (cubin bytes, or PTX text as bytes), NVRTC's log
    (warnings; empty when clean), wall time of nvrtcCompileProgram in seconds."""

    image: bytes
    kind: str
    log: str
    seconds: float


def compile_source(source, arch="sm_90", options=DEFAULT_OPTIONS, name="hartree.cu", output="cubin"):
    """Compile CUDA C `source` for `arch` ('sm_90' -> cubin; 'compute_90' or output='ptx'
    -> PTX).  Returns :class:`Result`; raises DeviceError with the log when it fails.

    Thread-safe (NVRTC programs are independent; ctypes releases the GIL during calls).
    """
    if output not in ("cubin", "ptx"):
        raise ValueError("output must be 'cubin' or 'ptx'")
    if output == "ptx" and arch.startswith("sm_"):
        arch = "compute_" + arch[3:]
    if output == "cubin" and not arch.startswith("sm_"):
        raise ValueError(f"a cubin needs a real architecture (sm_XX), not {arch!r}")
    lib = library()
    prog = ctypes.c_void_p()
    _check(
        lib,
        lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
        "nvrtcCreateProgram",
    )
    try:
        opts = [o.encode() for o in (*options, f"--gpu-architecture={arch}")]
        argv = (ctypes.c_char_p * len(opts))(*opts)
        t0 = time.perf_counter()
        status = lib.nvrtcCompileProgram(prog, len(opts), argv)
        seconds = time.perf_counter() - t0
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)), "log size")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetProgramLog(prog, buf), "log")
        log = buf.value.decode(errors="replace").strip()
        if status != 0:
            msg = lib.nvrtcGetErrorString(status).decode(errors="replace")
            raise DeviceError(f"NVRTC could not compile {name} for {arch}: {msg}\n{log}")
        get_size, get = (
            (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if output == "cubin" else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        )
        _check(lib, get_size(prog, ctypes.byref(size)), output + " size")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib, get(prog, buf), output)
        image = buf.raw if output == "cubin" else buf.raw.rstrip(b"\0")
        return Result(image=image, kind=output, log=log, seconds=seconds)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ----------------------------------------------------------------------------- cubin info
_EIATTR_FRAME_SIZE = 0x11  # per-thread stack frame (bytes): local arrays and spills
_EIATTR_REGCOUNT = 0x2F  # registers per thread
_EIFMT_SVAL = 0x04  # attribute with a u16 size and that many bytes of value


def cubin_resources(cubin):
    """{kernel name: {"num_regs": int, "frame_bytes": int}} read from an ELF cubin.

    Registers (EIATTR_REGCOUNT) and stack frame (EIATTR_FRAME_SIZE, what the CUDA driver
    reports as local_size_bytes) are stored per function symbol in the ``.nv.info``
    sections as (format u8, attribute u8, size u16, symbol index u32, value u32).
    """
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", cubin, shoff + i * shentsize
        )
        sections.append((name, typ, off, size, link, entsize))
    strtab_off = sections[shstrndx][2]

    def cstr(base, idx):
        end = cubin.index(b"\0", base + idx)
        return cubin[base + idx : end].decode()

    symtab = next((s for s in sections if s[1] == 2), None)  # SHT_SYMTAB
    if symtab is None:
        return {}
    sym_names = []
    str_off = sections[symtab[4]][2]
    for k in range(symtab[3] // 24):
        (st_name,) = struct.unpack_from("<I", cubin, symtab[2] + 24 * k)
        sym_names.append(cstr(str_off, st_name))
    out = {}
    for name, _typ, off, size, _link, _es in sections:
        if cstr(strtab_off, name) != ".nv.info":
            continue
        pos = off
        while pos + 4 <= off + size:
            fmt, attr, length = struct.unpack_from("<BBH", cubin, pos)
            if fmt != _EIFMT_SVAL:  # NVAL/BVAL/HVAL: the value fits the 4 bytes
                pos += 4
                continue
            if attr in (_EIATTR_REGCOUNT, _EIATTR_FRAME_SIZE) and length == 8:
                sym, value = struct.unpack_from("<II", cubin, pos + 4)
                entry = out.setdefault(sym_names[sym], {"num_regs": 0, "frame_bytes": 0})
                entry["num_regs" if attr == _EIATTR_REGCOUNT else "frame_bytes"] = value
            pos += 4 + length
    return out
