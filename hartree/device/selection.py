"""Device selection, one policy for every caller: is a CUDA GPU usable, which GPUs, CPU or GPU.

    ok, text = gpu_status()          # (True, "NVIDIA H100 80GB HBM3") or (False, "cupy cannot ...")
    resolve_device("auto")           # 'gpu' when cupy imports and a device opens, else 'cpu'
    parse_gpus("0,1", len(gpu_names()))   # [0, 1], checked against the visible devices

Asked at call time, never at import (cupy is imported inside the functions only).  Used by
the SCF (``hartree.scf.run(device=...)``, ``--gpus``), the orbital lattices
(:mod:`hartree.grid`), the atomic SCF (:mod:`hartree.atom.scf`), RI-MP2 and the command line.
"""


def gpu_status():
    """(available, text): text names the first CUDA device, or says why there is none."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"cupy cannot be imported ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver / no device visible
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


def gpu_names():
    """Names of the visible CUDA devices, in ordinal order ([] without cupy or devices)."""
    try:
        import cupy

        names = []
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:  # no cupy / driver: nothing visible
        return []


def device_label(ids=None):
    """Text naming CUDA devices for the user, e.g. 'cuda:0 (NVIDIA H100 80GB HBM3, cupy
    14.2.0)' or 'cuda:0,1 (2 x NVIDIA H200, cupy 14.2.0)'; ids: device ordinals (None: the
    current device).  'cuda (unavailable)' without cupy or a device."""
    try:
        import cupy

        ids = [cupy.cuda.Device().id] if not ids else [int(i) for i in ids]
        names = []
        for i in ids:
            name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        label = names[0] if len(set(names)) == 1 else " + ".join(names)
        if len(ids) > 1 and len(set(names)) == 1:
            label = f"{len(ids)} x {label}"
        return f"cuda:{','.join(str(i) for i in ids)} ({label}, cupy {cupy.__version__})"
    except Exception:  # no cupy / no device: still a readable string
        return "cuda (unavailable)"


def parse_gpus(spec, count):
    """Device ordinals for a --gpus value: None or 'all' (every visible device), '0,1',
    an int, or a sequence of ints; count = number of visible devices.

    Raises InputError for a malformed or repeated list and DeviceError for an ordinal
    that is not visible (CUDA_VISIBLE_DEVICES renumbers devices from 0).
    """
    from hartree.errors import DeviceError, InputError

    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        if count < 1:
            raise DeviceError("no CUDA device is visible")
        return list(range(count))
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")]
        if not parts or not all(p.isdigit() for p in parts):
            raise InputError(f"--gpus {spec!r}: expected 'all' or device numbers such as 0,1")
        ids = [int(p) for p in parts]
    elif isinstance(spec, int):
        ids = [spec]
    else:
        try:
            ids = [int(x) for x in spec]
        except (TypeError, ValueError):
            raise InputError(f"gpus={spec!r}: expected 'all', '0,1' or a list of ints") from None
    if not ids:
        raise InputError("gpus: the list of devices is empty")
    if len(set(ids)) != len(ids):
        raise InputError(f"gpus: device listed twice in {ids}")
    bad = [i for i in ids if i < 0 or i >= count]
    if bad:
        raise DeviceError(f"GPU {bad[0]} is not visible: {count} CUDA device(s) visible (numbers 0..{count - 1})")
    return ids


DEVICES = ("auto", "cpu", "gpu")


def resolve_device(device="auto"):
    """'cpu' or 'gpu' for a requested device 'auto' | 'cpu' | 'gpu' (asked now, never at
    import): 'auto' takes the GPU when cupy imports and a CUDA device is visible.

    Raises InputError for another name and DeviceError for 'gpu' without a usable GPU.
    """
    from hartree.errors import DeviceError, InputError

    if device not in DEVICES:
        raise InputError(f"unknown device {device!r}; choose auto, cpu or gpu")
    if device == "cpu":
        return "cpu"
    ok, why = gpu_status()
    if device == "gpu" and not ok:
        raise DeviceError(f"device 'gpu' was asked for but no CUDA GPU is usable: {why}")
    return "gpu" if ok else "cpu"
