"""Names of the benchmark records: one current record per benchmark and device.

    path = record_path("gpu_jk", gpu_slug())        # benchmarks/results/gpu_jk_h100

A record is ``results/<benchmark>_<device>.json`` with its Markdown table beside it
(``.md``); a new measurement on the same device replaces the record, and the older one
stays in git history.  ``<device>`` is a short name of the GPU model ("h100", "h200"), with
"<n>x" in front when a run used several GPUs ("2xh200").
"""

import os
import platform
import re
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def device_slug(name, count=1):
    """Short device name: 'NVIDIA H100 80GB HBM3' -> 'h100'; count 2 -> '2xh100'."""
    upper = name.upper()
    model = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", upper) or re.search(r"([A-Z]+)\s*(\d{3,4})\b", upper)
    slug = "".join(model.groups()).lower() if model else re.sub(r"[^a-z0-9]+", "", name.lower())[:16] or "gpu"
    return f"{count}x{slug}" if count > 1 else slug


def gpu_slug(count=1):
    """device_slug of CUDA device 0 (imports cupy: call it from main, not at import)."""
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return device_slug(name.decode() if isinstance(name, bytes) else str(name), count)


def record_path(benchmark, slug):
    """results/<benchmark>_<slug> without extension."""
    return os.path.join(RESULTS, f"{benchmark}_{slug}")


def cpu_model():
    """The model name of /proc/cpuinfo, or platform's processor string (None if neither)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None)
    except OSError:
        return platform.processor() or None


def timed(fn):
    """(seconds, fn()) of one call, by the wall clock."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out
