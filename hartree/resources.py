"""What the machine can give: memory, disk space and the file-size limit.

Used before large allocations and large files (lattices, cube files), so that a request
that cannot fit ends at once in one :class:`~hartree.errors.ResourceError` (exit code 5)
saying how much it needs and how much there is, instead of a ``MemoryError`` traceback
after minutes of work or a half-written file.

Memory available is the smallest of: ``MemAvailable`` in /proc/meminfo, the cgroup limit
less its usage (containers, batch schedulers), and the address-space limit (``ulimit -v``)
less what the process has mapped.  Where none can be read, no limit is assumed.
"""

from __future__ import annotations

import os
import resource
import shutil

from .errors import ResourceError


def size_text(nbytes):
    """A byte count for people: '812 B', '7.9 KiB', '1.5 GiB', '3.2 TiB'."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} PiB"


def _meminfo_available():
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available():
    for limit_path, usage_path in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            with open(limit_path, encoding="ascii") as handle:
                limit = handle.read().strip()
            with open(usage_path, encoding="ascii") as handle:
                usage = int(handle.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:
            return max(int(limit) - usage, 0)
    return None


def _address_space_available():
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            mapped = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return max(soft - mapped, 0)


def available_memory():
    """Bytes of memory this process can still allocate, or None when unknown."""
    values = [v for v in (_meminfo_available(), _cgroup_available(), _address_space_available()) if v is not None]
    return min(values) if values else None


def check_memory(nbytes, what, hint=""):
    """ResourceError when ``nbytes`` (what is about to be allocated) exceeds the memory
    available; ``what`` and ``hint`` complete the message."""
    have = available_memory()
    if have is not None and nbytes > have:
        raise ResourceError(
            f"{what} needs {size_text(nbytes)} of memory, {size_text(have)} available" + (f"; {hint}" if hint else "")
        )


def file_size_limit():
    """The largest file this process may write (``ulimit -f``), bytes, or None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_disk(path, nbytes, hint=""):
    """ResourceError when a file of ``nbytes`` cannot be written at ``path`` (free space of
    its file system, or the file-size limit)."""
    limit = file_size_limit()
    extra = f"; {hint}" if hint else ""
    if limit is not None and nbytes > limit:
        raise ResourceError(
            f"{path} would be {size_text(nbytes)}, above the file-size limit of {size_text(limit)} (ulimit -f){extra}"
        )
    directory = os.path.dirname(os.path.abspath(path))
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return
    if nbytes > free:
        raise ResourceError(f"{path} would be {size_text(nbytes)}, {size_text(free)} free on its disk{extra}")
