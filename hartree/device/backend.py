"""The CUDA backend: one GPU, cupy arrays, NVRTC-compiled modules, streams and events.

    backend = CudaBackend(0)                       # GPU 0 (default: the current device)
    (module,) = backend.compile([(source, key, kernels)])
    with backend.use():
        module.launch("name", grid, block, args)   # grid, block: int or up to 3 ints

Every user of generated or hand-written CUDA (J/K and three-index integrals in
:mod:`hartree.gpu`, orbital lattices in :mod:`hartree.grid`, the atomic two-electron
matrices in :mod:`hartree.atom.gpu`) compiles and launches through this class; tests run
the same code on :class:`hartree.device.emulator.EmulatedBackend`, which has the same
methods except the CUDA-only ones marked below (callers ask ``hasattr(backend, "fork")``).

Specs passed to :meth:`CudaBackend.compile` are ``(source, key, kernels)``: the CUDA text,
the cache-key dict of :func:`hartree.device.compile.full_key` and ``{kernel name: [(C type,
parameter name)]}`` (only the emulator reads the parameters; None lets it read them from
the source).  cupy is imported when a backend is constructed, never at import time.
"""

import numpy as np


def dim3(value):
    """(x, y, z) of a launch dimension given as an int or a tuple of 1 to 3 ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value), 1, 1)
    value = tuple(value)
    return value + (1,) * (3 - len(value))


class CudaBackend:
    """cupy arrays + NVRTC-compiled modules (see :mod:`hartree.device.compile`) on one GPU.

    device: CUDA device ordinal (default: the current device when constructed).  Every
    method works under that device (``use()``), so one backend per GPU can be driven from
    its own host thread (:mod:`hartree.device.work_queue`).
    """

    name = "cuda"

    def __init__(self, device=None):
        try:
            import cupy
        except Exception as exc:  # ImportError, or a broken CUDA install
            from hartree.errors import DeviceError

            raise DeviceError(f"the GPU path needs cupy ({type(exc).__name__}: {exc})") from None
        self.xp = cupy
        self.device_id = cupy.cuda.Device().id if device is None else int(device)
        self._streams = []
        self._sms = None

    # ------------------------------------------------------------------ device
    def use(self):
        """Context manager making this backend's GPU the current device (thread-local)."""
        return self.xp.cuda.Device(self.device_id)

    def device_count(self):
        """Number of visible CUDA devices."""
        return self.xp.cuda.runtime.getDeviceCount()

    def for_device(self, index):
        """A backend of the same kind on device ``index`` (this one when it is that device)."""
        return self if int(index) == self.device_id else CudaBackend(index)

    def device_name(self):
        """'NVIDIA H100 80GB HBM3': the name of this backend's GPU."""
        name = self.xp.cuda.runtime.getDeviceProperties(self.device_id)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def multiprocessor_count(self):
        """Streaming multiprocessors of this GPU (read once)."""
        if self._sms is None:
            self._sms = int(self.xp.cuda.Device(self.device_id).attributes["MultiProcessorCount"])
        return self._sms

    # ------------------------------------------------------------------ kernels
    def compile(self, specs):
        """specs: list of (source, key, {kernel name: params} or None); returns launchers
        (:class:`CudaModule`), same order, compiled in parallel and cached on disk."""
        from .compile import compile_kernels

        with self.use():
            mods = compile_kernels([(src, key) for src, key, _ in specs])
        return [CudaModule(m) for m in mods]

    def synchronize(self):
        """Wait for the work queued on the current stream of this GPU."""
        with self.use():
            self.xp.cuda.get_current_stream().synchronize()

    # ------------------------------------------------------------------ arrays
    @property
    def sparse(self):
        """cupyx.scipy.sparse (the emulator: scipy.sparse)."""
        import cupyx.scipy.sparse

        return cupyx.scipy.sparse

    def asarray(self, a):
        """Device copy of a host array (the array itself when already on a device)."""
        return self.xp.asarray(a)

    def empty(self, shape, dtype=np.float64):
        return self.xp.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype=np.float64):
        return self.xp.zeros(shape, dtype=dtype)

    def to_numpy(self, x):
        """Host (numpy) copy of device array x."""
        return self.xp.asnumpy(x)

    def to_host(self, x, out):
        """Copy device array x into the host array out (a block of rows of a larger array
        when out is not contiguous)."""
        if out.flags.c_contiguous:
            x.get(out=out)
        else:
            out[...] = x.get()

    def to_here(self, x):
        """Copy of cupy array x (any device) on this backend's device."""
        with self.use():
            return x.copy()

    # ------------------------------------------------------------------ CUDA only: streams, memory, timing
    def fork(self, n):
        """n side streams that start after the work queued so far on the current stream."""
        cuda = self.xp.cuda
        if len(self._streams) < n:
            with self.use():
                self._streams = [cuda.Stream(non_blocking=True) for _ in range(n)]
        ready = cuda.get_current_stream().record()
        for st in self._streams[:n]:
            st.wait_event(ready)
        return self._streams[:n]

    def join(self, streams):
        """The current stream waits for everything queued on `streams`."""
        main = self.xp.cuda.get_current_stream()
        for st in streams:
            main.wait_event(st.record())

    def record(self, stream):
        """An event marking the work queued so far on `stream` (None: current stream)."""
        return (stream or self.xp.cuda.get_current_stream()).record()

    @staticmethod
    def done(event):
        """True once the work before `event` has finished (never blocks)."""
        return event.done

    def memory_info(self):
        """(free bytes including cupy's cached blocks, total bytes) of this GPU."""
        with self.use():
            free, total = self.xp.cuda.runtime.memGetInfo()
            return free + self.xp.get_default_memory_pool().free_bytes(), total

    def free_cached(self):
        """Return cupy's cached, unused blocks to the driver (after an out-of-memory)."""
        with self.use():
            self.xp.get_default_memory_pool().free_all_blocks()

    def timer(self):
        """(start, stop) -> seconds, measured with CUDA events on the current stream."""
        cupy = self.xp
        start = cupy.cuda.Event()
        start.record()

        def stop():
            end = cupy.cuda.Event()
            end.record()
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end) * 1e-3

        return stop


class CudaModule:
    """Launcher for one loaded cupy.RawModule; functions looked up once per device (cupy
    loads a RawModule separately on each device it is used on)."""

    def __init__(self, module):
        self.module = module
        self._f = {}

    def launch(self, name, grid, block, args, stream=None, shared_mem=0):
        """Run kernel `name` on the current device: grid and block are ints or tuples of up
        to 3 ints, args the kernel's arguments (cupy arrays, numpy scalars of the parameter
        types), stream None for the current stream, shared_mem dynamic shared bytes."""
        from cupy.cuda import runtime

        key = (runtime.getDevice(), name)
        f = self._f.get(key)
        if f is None:
            f = self._f[key] = self.module.get_function(name)
            if shared_mem > 48 * 1024:  # opt in to large dynamic shared memory
                f.max_dynamic_shared_size_bytes = int(shared_mem)
        f(dim3(grid), dim3(block), tuple(args), stream=stream, shared_mem=int(shared_mem))

    def resources(self, names):
        """{kernel name: {num_regs, local_size_bytes, shared_size_bytes}} on the current device."""
        from .compile import resource_report

        return resource_report(self.module, names)
