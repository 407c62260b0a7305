"""The CUDA backend of the J/K driver and other generated-kernel users: cupy arrays,
NVRTC-compiled modules (:mod:`hartree.gpu.compile`), side streams and events on one GPU.

``hartree.gpu.emulate.EmulatedBackend`` has the same methods on the CPU (tests).  cupy is
imported when a backend is constructed, never at import time.
"""


class CudaBackend:
    """cupy arrays + NVRTC-compiled modules (see :mod:`hartree.gpu.compile`) on one GPU.

    device: CUDA device ordinal (default: the current device when constructed).  Every
    method works under that device (``use()``), so one backend per GPU can be driven from
    its own host thread (:mod:`hartree.gpu.multi`).
    """

    name = "cuda"

    def __init__(self, device=None):
        import cupy

        self.xp = cupy
        self.device_id = cupy.cuda.Device().id if device is None else int(device)
        self._streams = []

    def use(self):
        """Context manager making this backend's GPU the current device (thread-local)."""
        return self.xp.cuda.Device(self.device_id)

    def compile(self, specs):
        """specs: list of (source, key, {kernel name: params}); returns launchers."""
        from .compile import compile_kernels

        with self.use():
            mods = compile_kernels([(src, key) for src, key, _ in specs])
        return [_CudaModule(m) for m in mods]

    def synchronize(self):
        with self.use():
            self.xp.cuda.get_current_stream().synchronize()

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

    def to_here(self, x):
        """Copy of cupy array x (any device) on this backend's device."""
        with self.use():
            return x.copy()

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


class _CudaModule:
    """Launcher for one loaded module; functions looked up once per device (cupy loads a
    RawModule separately on each device it is used on)."""

    def __init__(self, module):
        self.module = module
        self._f = {}

    def launch(self, name, grid, block, args, stream=None, shared_mem=0):
        from cupy.cuda import runtime

        key = (runtime.getDevice(), name)
        f = self._f.get(key)
        if f is None:
            f = self._f[key] = self.module.get_function(name)
            if shared_mem > 48 * 1024:  # opt in to large dynamic shared memory
                f.max_dynamic_shared_size_bytes = int(shared_mem)
        f(tuple(grid) + (1,) * (3 - len(grid)), (block, 1, 1), tuple(args), stream=stream, shared_mem=int(shared_mem))
