"""Is a CUDA GPU usable here?  Asked at call time, never at import.

    ok, text = gpu_status()   # (True, "NVIDIA H100 80GB HBM3") or (False, "cupy cannot ...")

Used by ``hartree.scf.run(device='auto'|'gpu')`` to choose between the CPU engine and
:class:`hartree.gpu.GPUEngine`.  cupy is imported inside the function only.
"""


def gpu_status():
    """(available, text): text names the first CUDA device, or says why there is none."""
    try:
        import cupy
    except Exception as exc:                # ImportError, or a broken CUDA install
        return False, f"cupy cannot be imported ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:                # no driver / no device visible
        return False, f"CUDA reports no usable device ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "CUDA reports no device"
    try:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return True, name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:
        return False, f"the CUDA device cannot be opened ({type(exc).__name__}: {exc})"


def gpu_available():
    """True when cupy imports and at least one CUDA device can be opened."""
    return gpu_status()[0]
