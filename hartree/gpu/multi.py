"""J/K on several GPUs of one host: a shared work queue, one host thread per device.

    builder = MultiJK(basis, [CudaBackend(0), CudaBackend(1)])   # hartree.device.backend
    J, K = builder.jk(dms)           # same interface and result as DirectJK.jk

Scheme (dynamic scheduling, as VMD does for orbital slices):

1. Device 0 forms the cartesian densities and the per-shell-pair max |D| (steps 1-2 of
   :mod:`hartree.gpu.jk_direct`) and the launch list, costliest first.
2. :func:`split_items` cuts the large classes into tile-aligned slices of bra pairs (and,
   for bra class == ket class, into blocks (c, d), d <= c, of the triangle), so that no
   item costs more than ~1/8 of a device's share; the list is re-sorted costliest first.
3. Every device gets a replica builder (same sorted pairs, no Schwarz kernels re-run), a
   copy of the densities and its own zeroed J/K accumulators.  One host thread per device
   pulls the next item from the shared queue (:mod:`hartree.device.work_queue`) whenever
   its device has capacity (at most
   ``nstreams`` launches and 1/ (4 ndev) of the total cost in flight), so a faster or
   less loaded device takes more items.
4. The partial sums are copied to device 0 and added:  J = Σ_d J_d,  K = Σ_d K_d (the
   quartet sets of the items are disjoint and cover the screened quartet list once),
   then symmetrised and transformed to the final AOs on device 0 (step 4).

Backends are :class:`hartree.device.backend.CudaBackend` (one per GPU) or any object with
the same methods; tests drive several emulated "devices" on the CPU.
"""

from ..device.work_queue import WorkQueue, on_each_device
from . import codegen
from .jk_direct import DirectJK


def localize(builder, item):
    """The same launch item on `builder`'s device: its own arrays for the pair class and
    tile range the item names (items are made from device 0's arrays)."""
    if item is None:
        return None
    cost, cls, P, Q, tri = item

    def view(X):
        full = builder.pairs[X.key]
        same = (X.tile_start, X.tile_stop) == (full.tile_start, full.tile_stop)
        return full if same else full.tiles(X.tile_start, X.tile_stop)

    return (cost, cls, view(P), view(Q), tri)


def _edges(ntile, nchunk):
    return sorted({round(k * ntile / nchunk) for k in range(nchunk + 1)})


def split_items(launches, ndev, threshold, dmax_all, pieces=8):
    """Launch list (cost, class, P, Q, tri) -> finer items for `ndev` devices.

    Items costing more than total / (pieces x ndev) are cut into tile-aligned slices:
    bra slices for P != Q; for the triangular classes (P == Q) blocks (c, d) with
    d <= c of a partition of the pairs into k slices (c == d blocks stay triangular,
    c > d blocks are full rectangles), which covers each unique quartet exactly once.
    Slices screened out as a whole (max q products x max |D| < threshold) are dropped.
    Returns the items costliest first.
    """
    total = sum(t[0] for t in launches)
    target = total / (pieces * max(ndev, 1)) if total > 0 else 0.0
    out = []
    T = codegen.TILE
    for cost, cls, P, Q, tri in launches:
        ntile = (P.npair + T - 1) // T
        if ndev <= 1 or cost <= target or ntile < 2:
            out.append((cost, cls, P, Q, tri))
            continue
        if not tri:
            e = _edges(ntile, min(ntile, int(cost / target) + 1))
            parts = [(P.tiles(a, b), Q, False) for a, b in zip(e[:-1], e[1:])]
        else:
            k = min(ntile, int((2.0 * cost / target) ** 0.5) + 1)
            e = _edges(ntile, k)
            sl = [P.tiles(a, b) for a, b in zip(e[:-1], e[1:])]
            parts = [(sl[c], sl[d], c == d) for c in range(len(sl)) for d in range(c + 1)]
        for Pi, Qi, tri_i in parts:
            if Pi.npair == 0 or Qi.npair == 0:
                continue
            if Pi.q_max * Qi.q_max * dmax_all < threshold:
                continue
            out.append((DirectJK.item_cost(cls, Pi, Qi, tri_i), cls, Pi, Qi, tri_i))
    out.sort(key=lambda t: -t[0])
    return out


class MultiJK:
    """J/K builder spread over several devices; the interface of :class:`DirectJK`.

    basis: hartree.basis.Basis; backends: one per device, the first one holds inputs and
    results; threshold, table: as for DirectJK.  ``last_split`` records, after each
    ``jk``, how many items each device took ({device index: count}).
    """

    def __init__(self, basis, backends, threshold=1e-13, table=None):
        if not backends:
            raise ValueError("MultiJK needs at least one backend")
        self.basis = basis
        self.backends = list(backends)
        with self.backends[0].use():
            first = DirectJK(basis, self.backends[0], threshold, table)
        self.builders = [first]
        for b in self.backends[1:]:
            with b.use():
                self.builders.append(DirectJK(basis, b, threshold, like=first))
        self.xp = first.xp
        self.threshold = first.threshold
        self.last_split = {}

    @property
    def ndev(self):
        return len(self.builders)

    def missing_kernels(self, with_j=True, with_k=True):
        return self.builders[0].missing_kernels(with_j, with_k)

    def prepare(self, with_j=True, with_k=True):
        """Compile (or load from cache) every kernel on every device; the class list."""
        for b in self.builders:
            with b.backend.use():
                b.prepare(with_j, with_k)
        return self.builders[0].quartet_classes()

    def jk(self, dms, with_j=True, with_k=True, omega=0.0):
        """J, K (None where not asked) as :meth:`DirectJK.jk`, on all devices; omega
        (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12, on every device."""
        if omega < 0:
            raise ValueError("omega < 0 (erfc) is 1/r12 - erf: GPUEngine.jk forms the difference")
        for b in self.builders:  # the operator of the kernels each builder launches
            b.omega = float(omega)
        b0 = self.builders[0]
        with b0.backend.use():
            dm_cart, dmax_sh, dmax_all, single = b0.screen_density(dms)
            nset = dm_cart.shape[0]
            if not (with_j or with_k) or dmax_all <= 0 or self.ndev == 1:
                vj, vk = b0.zeros_out(nset, with_j, with_k)
                if (with_j or with_k) and dmax_all > 0:
                    mods = b0._compile(b0.quartet_classes(), with_j, with_k, b0.omega)
                    b0.run_items(
                        mods, b0.launch_list(dmax_all), dm_cart, dmax_sh, dmax_all, vj, vk, with_j=with_j, with_k=with_k
                    )
                self.last_split = {0: 0}
                return b0.finish(vj, vk, with_j, with_k, single)
            items = split_items(b0.launch_list(dmax_all), self.ndev, self.threshold, dmax_all)
            b0.backend.synchronize()  # inputs complete before other GPUs copy them
        mods_of = []
        for b in self.builders:  # compile/load first, one device at a time
            with b.backend.use():
                mods_of.append(b._compile(b.quartet_classes(), with_j, with_k, b.omega))
        queue = WorkQueue(items)
        cap = sum(t[0] for t in items) / (4.0 * self.ndev)

        def work(d, b):
            mods = mods_of[d]
            dmc = dm_cart if d == 0 else _copy(b.backend, dm_cart)
            dsh = dmax_sh if d == 0 else _copy(b.backend, dmax_sh)
            vj, vk = b.zeros_out(nset, with_j, with_k)
            pull = queue.puller(d)
            b.run_items(
                mods,
                (),
                dmc,
                dsh,
                dmax_all,
                vj,
                vk,
                pull=lambda: localize(b, pull()),
                max_inflight_cost=cap,
                with_j=with_j,
                with_k=with_k,
            )
            b.backend.synchronize()
            return vj, vk

        parts = on_each_device(self.backends, lambda d, _backend: work(d, self.builders[d]), queue)
        self.last_split = {d: queue.taken.get(d, 0) for d in range(self.ndev)}
        with b0.backend.use():
            vj, vk = parts[0]
            for d in range(1, self.ndev):  # J = Σ_d J_d, K = Σ_d K_d on device 0
                if with_j:
                    vj += _copy(b0.backend, parts[d][0])
                if with_k:
                    vk += _copy(b0.backend, parts[d][1])
            return b0.finish(vj, vk, with_j, with_k, single)


def _copy(backend, x):
    """x on the backend's device (cupy: peer copy; the emulator: the same array)."""
    return backend.to_here(x)


class MultiGradient:
    """The two-electron gradient over the devices of a :class:`MultiJK`; the interface of
    :class:`hartree.gpu.gradient.DirectGradient` (``gradient``, ``prepare``).

    The J/K scheme above with the gradient kernels: device 0 forms the cartesian densities
    and the launch list, :func:`split_items` cuts it, every device takes batches of items
    from a shared queue and sums d(ab|cd)/dR contractions into its own (3 natm,) vector,
    and the vectors are added on the host (the quartet sets are disjoint).  A batch is a
    run of consecutive items of about 1/(16 ndev) of the total cost (one quartet-list
    count pass, so one host wait, per batch).

    multi: the MultiJK whose replica builders hold each device's pairs; shell_atom: int
    (nshell,) the atom of each shell.  ``last_split`` records, after each gradient, how
    many items each device took.
    """

    def __init__(self, multi, shell_atom):
        from .gradient import DirectGradient

        self.multi = multi
        self.parts = []
        for b in multi.builders:
            with b.backend.use():
                self.parts.append(DirectGradient(b, shell_atom))
        self.last_split = {}

    def prepare(self, attenuated=False):
        for part in self.parts:
            with part.jk.backend.use():
                part.prepare(attenuated)

    def gradient(self, dj, dk, k_factor, natm, omega=0.0):
        """1/2 Σ Γ d(ab|cd)/dR per atom, numpy (natm, 3), hartree/bohr, as
        :meth:`DirectGradient.gradient` (omega: its operator), on all devices."""
        import numpy as np

        if omega < 0:
            raise ValueError("omega < 0 (erfc) is 1/r12 - erf: GPUEngine forms the difference")

        first = self.parts[0]
        b0 = first.jk
        with b0.backend.use():
            dm_cart, dmax_sh, dmax_all = first.screen(dj, dk)
            if dmax_all == 0.0:
                return np.zeros((natm, 3))
            ndev = len(self.parts)
            items = split_items(b0.launch_list(dmax_all), ndev, self.multi.threshold, dmax_all)
            b0.backend.synchronize()  # inputs complete before other GPUs copy them
        for part in self.parts:  # compile/load first, one device at a time
            with part.jk.backend.use():
                part.prepare(omega != 0.0)
        queue = WorkQueue(_batches(items, sum(t[0] for t in items) / (16.0 * ndev)))

        def work(d, backend):
            part = self.parts[d]
            dmc = dm_cart if d == 0 else _copy(backend, dm_cart)
            dsh = dmax_sh if d == 0 else _copy(backend, dmax_sh)
            pull = queue.puller(d)
            batches = iter(lambda: _localized(part.jk, pull()), None)
            grad = part.accumulate(batches, dmc, dsh, dmax_all, k_factor, natm, omega=omega)
            out = grad.get() if hasattr(grad, "get") else grad
            return np.asarray(out, dtype=np.float64)

        parts = on_each_device(self.multi.backends, work, queue)
        self.last_split = {d: queue.taken.get(d, 0) for d in range(ndev)}
        return np.sum(parts, axis=0).reshape(natm, 3)


def _batches(items, target):
    """Consecutive runs of `items` (costliest first) whose summed cost reaches `target`
    (the last run may cost less); each run is one list."""
    out, run, cost = [], [], 0.0
    for item in items:
        run.append(item)
        cost += item[0]
        if cost >= target:
            out.append(run)
            run, cost = [], 0.0
    if run:
        out.append(run)
    return out


def _localized(builder, batch):
    """A batch of launch items (device 0's arrays) on `builder`'s device; None stays None."""
    if batch is None:
        return None
    return [localize(builder, item) for item in batch]
