"""Direct J/K builds with the generated Rys kernels (driver; backend-neutral).

    J_μν = Σ_λσ (μν|λσ) D_λσ,     K_μν = Σ_λσ (μλ|νσ) D_λσ        (D symmetric)

Setup, once per basis: the shell pairs of each class (:mod:`hartree.gpu.pairs`) go to the
device once, the Schwarz kernels (``diag_<la><lb>``) give Q_ij there, Q comes down, and the
pairs are gathered on the device in the order the host finds from it
(:mod:`hartree.gpu.device_pairs`); per-GPU kernel choices come from
:mod:`hartree.gpu.tuning`.

Steps of :meth:`DirectJK.jk`:

1. D_cart = C D C^T per density (C: cartesian -> final AO matrix, ``hartree.basis.cart2sph_matrix``);
   the kernels work on cartesian functions only.
2. Per shell pair, max |D_cart| over the block and over the densities (``shell_dmax``).
3. Per quartet class (bra pair class P >= ket pair class Q, in the order of
   ``self.pair_classes``): the screening kernel lists the unique quartets (ij|kl) with
   sqrt((ij|ij)) sqrt((kl|kl)) max|D| >= threshold (separate J and K density bounds,
   :mod:`hartree.gpu.quartet_lists`): a count pass for every class, one wait, then per chunk of
   the list a write pass and the class's J/K kernel, one listed quartet per thread (grid
   z: component slices, ``jk_kernels.split_plan``), digestion into J/K with atomics.
4. J = X + X^T on the accumulated half, then J_final = C^T J_cart C (same for K).

A *backend* supplies the array module and compiled kernels: :class:`hartree.device.backend.CudaBackend` (cupy,
NVRTC) or ``hartree.device.emulator.EmulatedBackend`` (g++, serial, for tests without a GPU).
"""

import time

import numpy as np

from hartree.basis import cart2sph_matrix
from hartree.device import cuda_source

from . import codegen, device_pairs, jk_kernels, quartet_lists
from .pairs import build_pair_classes
from .tables import RysTable
from .tuning import jk_tuning

DMAX_PARAMS = [
    ("const double*", "dm"),
    ("int", "nset"),
    ("int", "ncart"),
    ("const int*", "cart_loc"),
    ("int", "nshell"),
    ("double*", "out"),
]


def dmax_source():
    """Source of the ``shell_dmax`` kernel (hand-written: ``shell_dmax.cu``)."""
    return cuda_source.read("hartree.gpu", "shell_dmax.cu")


def _i32(x):
    return np.int32(x)


def _f64(x):
    return np.float64(x)


class DirectJK:
    """J/K builder for one basis on one backend; pair data and Schwarz factors built once.

    basis: hartree.basis.Basis.  threshold: screening threshold (PySCF's direct_scf_tol
    meaning).  table: RysTable (default: the package table).  like: another DirectJK of
    the same basis whose pair order and Schwarz factors are reused (a replica on a second
    GPU: no Schwarz kernels run, identical pair order on every device).  tuning:
    :class:`hartree.gpu.tuning.JKTuning` (default: like's, else the tuning file's entry for
    the device named `device_name`, else its default entry).

    ``pairs``: {(la, lb): :class:`hartree.gpu.device_pairs.DevicePairs`}, ordered on the
    device (the pair data is uploaded once, then gathered with host-found indices);
    ``pair_orders``: {(la, lb): host permutation from build order}, which replicas apply to
    their own upload.
    """

    def __init__(self, basis, backend, threshold=1e-13, table=None, like=None, tuning=None, device_name=None):
        self.basis = basis
        self.backend = backend
        self.xp = xp = backend.xp
        self.threshold = float(threshold)
        self.table = table or (like.table if like is not None else RysTable.load())
        self.tuning = tuning or (like.tuning if like is not None else jk_tuning(device_name))
        nroots_max = codegen.nroots((basis.max_l,) * 4)
        if nroots_max > self.table.max_nroots:
            raise ValueError(f"l = {basis.max_l} needs {nroots_max} Rys roots; the table holds {self.table.max_nroots}")
        self._tab = xp.asarray(self.table.coef)
        self._modules, self._erf_modules = {}, {}  # {(class, with_j, with_k): module}
        #: bohr^-1, the operator of the kernels :meth:`_run_list` launches: 0 for 1/r12, > 0
        #: for erf(omega r12)/r12 (set by :meth:`jk`, and by MultiJK on its builders)
        self.omega = 0.0
        #: set to a dict to collect seconds per quartet class (launches are then timed one
        #: by one with events, which serialises them: profiling only)
        self.profile = None
        #: side streams for concurrent class launches (CUDA backend)
        self.nstreams = 8
        self.C = xp.asarray(cart2sph_matrix(basis))
        self.cart_loc = xp.asarray(np.asarray(basis.cart_loc, dtype=np.int32))
        self._dmax_mod, self._screen_mod = backend.compile(
            [
                (
                    dmax_source(),
                    {"kind": "shell_dmax", "generator": codegen.GENERATOR_VERSION},
                    {"shell_dmax": DMAX_PARAMS},
                ),
                (
                    quartet_lists.screen_source(),
                    {"kind": "quartet_screen", "generator": codegen.GENERATOR_VERSION},
                    {"quartet_screen": quartet_lists.SCREEN_PARAMS},
                ),
            ]
        )
        self._dummy = xp.zeros(2, dtype=np.int32)
        self._ket_orders = {}  # {(class, tile range): ket tile order} (quartet_lists.tile_plan)
        #: with ``profile``: per class {"quartets": listed quartets, "tile_lanes": threads
        #: of the tiles that pass the tile test (what a kernel with one tile per block would keep busy)}
        self.stats = {}
        #: after a batched J/K: entries listed, buffer entries, waves, chunks
        self.last_lists = None
        self.host_classes = like.host_classes if like is not None else build_pair_classes(basis)
        self.pair_classes = sorted(self.host_classes)
        raw = {pc: device_pairs.upload(xp, self.host_classes[pc]) for pc in self.pair_classes}
        if like is not None:
            self.pair_orders = like.pair_orders
            self.pairs = {
                pc: device_pairs.replica(xp, raw[pc], like.pair_orders[pc], like.pairs[pc].q_host)
                for pc in self.pair_classes
            }
        else:
            self.pairs, self.pair_orders = self._schwarz_sorted(raw)
        self.q_max = max(p.q_max for p in self.pairs.values())

    # ------------------------------------------------------------------ setup helpers
    def _schwarz_sorted(self, raw):
        """({class: DevicePairs}, {class: host permutation}): Schwarz factors from the
        diagonal kernels on the uploaded pairs (`raw`: {class: UnsortedPairs}), then the
        pairs sorted on the device."""
        xp = self.xp
        mods = self._compile([pc + pc for pc in self.pair_classes], True, True)
        pairs, orders = {}, {}
        for pc in self.pair_classes:
            dev, n = raw[pc], raw[pc].npair
            q = xp.zeros(n)
            tpp, tpb, shared = jk_kernels.diag_launch_config(pc, self.tuning)
            extra = {"shared_mem": shared} if shared else {}
            mods[pc + pc].launch(
                f"diag_{pc[0]}{pc[1]}",
                ((n * tpp + tpb - 1) // tpb,),
                tpb,
                [_i32(n), dev.sh, dev.pst, dev.geo, dev.prim, q, self._tab_for(pc + pc)],
                **extra,
            )
            pairs[pc], orders[pc] = device_pairs.sorted_on_device(xp, dev, q)
        return pairs, orders

    def _tab_for(self, cls):
        n = codegen.nroots(cls)
        return self._tab[int(self.table.offsets[n]) :]

    def _compile(self, classes, with_j, with_k, omega=0.0):
        """{class: module} of the J/K kernels, compiled or loaded from the cache
        (:func:`jk_kernels.module_spec`); omega != 0: the erf-attenuated modules."""
        store = self._erf_modules if omega else self._modules
        todo = [c for c in classes if (c, with_j, with_k) not in store]
        specs = [jk_kernels.module_spec(c, self.table, with_j, with_k, self.tuning, bool(omega)) for c in todo]
        for cls, mod in zip(todo, self.backend.compile(specs)):
            store[(cls, with_j, with_k)] = mod
        return {c: store[(c, with_j, with_k)] for c in classes}

    def quartet_classes(self):
        """(la, lb, lc, ld) for every launch: bra pair class >= ket pair class."""
        pcs = self.pair_classes
        return [pcs[a] + pcs[b] for a in range(len(pcs)) for b in range(a + 1)]

    def missing_kernels(self, with_j=True, with_k=True):
        """Quartet classes whose J/K module is not loaded yet in this builder."""
        return [c for c in self.quartet_classes() if (c, with_j, with_k) not in self._modules]

    def prepare(self, with_j=True, with_k=True):
        """Compile (or fetch from cache) every kernel needed; returns the class list."""
        classes = self.quartet_classes()
        self._compile(classes, with_j, with_k)
        return classes

    # ------------------------------------------------------------------ launch items
    @staticmethod
    def item_cost(cls, P, Q, tri):
        """Rough cost of one launch: quartets x components x roots x primitive pairs."""
        nq = P.npair * Q.npair / (2.0 if tri else 1.0)
        size = 1
        for l in cls:
            size *= codegen.ncart(l)
        npp_p = (P.pst_host[-1] - P.pst_host[0]) / max(P.npair, 1)
        npp_q = (Q.pst_host[-1] - Q.pst_host[0]) / max(Q.npair, 1)
        return nq * size * codegen.nroots(cls) * npp_p * npp_q

    def launch_list(self, dmax_all):
        """[(cost, class, bra pairs, ket pairs, triangular)] of the unscreened classes,
        costliest first (cost: :meth:`item_cost`, a rough guide)."""
        pcs = self.pair_classes
        out = []
        for a in range(len(pcs)):
            for b in range(a + 1):
                P, Q = self.pairs[pcs[a]], self.pairs[pcs[b]]
                if P.q_max * Q.q_max * dmax_all < self.threshold:
                    continue
                cls = pcs[a] + pcs[b]
                out.append((self.item_cost(cls, P, Q, a == b), cls, P, Q, a == b))
        out.sort(key=lambda t: -t[0])
        return out

    def _launch_list(self, dmax_all):
        """[(class, bra pairs, ket pairs, triangular)], costliest first."""
        return [t[1:] for t in self.launch_list(dmax_all)]

    def launch(self, mods, item, dm_cart, dmax_sh, dmax_all, vj, vk, stream=None, with_j=True, with_k=True, keep=None):
        """Queue one item (class, bra pairs, ket pairs, triangular) of the launch list on
        `stream`: count pass, one wait for that stream, then per chunk of the quartet list
        the write pass and the J/K kernel (:mod:`hartree.gpu.quartet_lists`).  Returns the number
        of listed quartets.  Bra/ket pairs may be tile-aligned slices of a class
        (:func:`hartree.gpu.multi.split_items`).  Buffers are allocated on `stream` and
        appended to `keep` (the caller holds them until the stream is joined)."""
        xp = self.xp
        cls, P, Q, tri = item
        stop = self.backend.timer() if self.profile is not None else None
        with _on(stream):
            counts = xp.zeros(3 * len(P.tile_q_host), dtype=np.int32)
            plan = quartet_lists.tile_plan(self, P, Q, dmax_all)
            nbits = plan.bit_words()
            bits = xp.zeros(nbits, dtype=np.int32) if 4 * nbits <= quartet_lists.MAX_TILE_BIT_BYTES else None
            if keep is not None:
                keep += [plan.dev_offsets] + ([] if bits is None else [bits])
            self._screen(P, Q, tri, dmax_sh, dmax_all, with_j, with_k, counts, None, 0, stream, bits=bits, plan=plan)
            if hasattr(stream, "synchronize"):
                stream.synchronize()
            counts_h = _host(counts)
            if stop is not None:  # profiling: count pass, segment sizes
                st = self.stats.setdefault(codegen.class_name(cls), {})
                st["count_s"] = st.get("count_s", 0.0) + stop()
                seg = counts_h.reshape(-1, 3).sum(axis=0).astype(int).tolist()
                st["segments_jk_j_k"] = [a + b for a, b in zip(st.get("segments_jk_j_k", [0, 0, 0]), seg)]
            chunks = quartet_lists.plan_chunks(counts_h, self.list_capacity())
            if not chunks:
                return 0
            size, waves = quartet_lists.pack_waves([(0, c) for c in chunks], self.list_capacity())
            buf = xp.empty(2 * size, dtype=np.int32)
            if keep is not None:
                keep.append(buf)
            for wave in waves:  # same stream: waves run one after the other
                cur = np.zeros(counts_h.shape[0], dtype=np.int32)
                for _, ch, base in wave:
                    cur[3 * ch[0] : 3 * ch[1]] = (base + ch[3]).ravel()
                cur = xp.asarray(cur)
                if keep is not None:
                    keep.append(cur)
                for _, ch, base in wave:
                    args = (P, Q, tri, dmax_sh, dmax_all, with_j, with_k, cur, buf, ch[0], stream)
                    self._screen(*args, row1=ch[1], bits=bits, plan=plan)
                    self._run_list(mods, item, buf, base, ch[2], dm_cart, vj, vk, stream)
        return int(counts_h.sum())

    def _screen(self, P, Q, tri, dsh, dall, w_j, w_k, cur, ql, row0, st, row1=None, bits=None, product=None, plan=None):
        """Count (ql None) or write pass (list ql) of ``quartet_screen`` over the staircase rows
        [row0, row1) (default: all) of `plan` (default: :func:`quartet_lists.tile_plan`'s);
        bits: the item's tile bits or None; product: the threshold of gradients' Γ screening."""
        plan = plan or quartet_lists.tile_plan(self, P, Q, dall, product)
        rows = (row0, len(P.tile_q_host) if row1 is None else row1)
        quartet_lists.screen(self, plan, P, Q, tri, dsh, dall, w_j, w_k, cur, ql, rows, st, bits, product)

    def _run_list(self, mods, item, buf, base, n, dm_cart, vj, vk, stream):
        """The J/K kernel of the item's class over entries [base, base + n) of buf."""
        if n <= 0:
            return
        cls, P, Q, tri = item
        nset, ncart = dm_cart.shape[0], dm_cart.shape[1]
        tpq, tpb, shared = jk_kernels.launch_config(cls, self.tuning)
        extra = {"shared_mem": shared} if shared else {}
        mods[cls].launch(
            f"jk_{codegen.class_name(cls)}",
            ((n * tpq + tpb - 1) // tpb, 1, jk_kernels.grid_z(cls, self.tuning)),
            tpb,
            [
                _i32(n),
                buf[2 * base : 2 * (base + n)],
                _i32(tri),
                P.sh,
                P.pst,
                P.geo,
                P.prim,
                Q.sh,
                Q.pst,
                Q.geo,
                Q.prim,
                self.cart_loc,
                dm_cart,
                _i32(nset),
                _i32(ncart),
                vj,
                vk,
                self._tab_for(cls),
                *((_f64(self.omega),) if self.omega else ()),
            ],
            stream=stream,
            **extra,
        )

    def _fork(self):
        """Side streams (``nstreams``) after the current stream's work; [None] without."""
        fork = getattr(self.backend, "fork", None)
        return fork(self.nstreams) if fork is not None else [None]

    def _join(self, streams):
        if streams[0] is not None:
            self.backend.join(streams)

    def list_capacity(self):
        """Entries one quartet-list buffer may hold (memory budget, see quartet_lists)."""
        from ..device.memory import budget_bytes

        return quartet_lists.list_capacity(budget_bytes(self.backend))

    # ------------------------------------------------------------------ J / K
    def shell_dmax(self, dm_cart):
        """max |D| per shell-pair block over all densities, (nshell, nshell)."""
        xp = self.xp
        nset, ncart = dm_cart.shape[0], dm_cart.shape[1]
        ns = self.basis.nshell
        out = xp.zeros((ns, ns))
        self._dmax_mod.launch(
            "shell_dmax",
            ((ns * ns + 127) // 128,),
            128,
            [dm_cart, _i32(nset), _i32(ncart), self.cart_loc, _i32(ns), out],
        )
        return out

    def screen_density(self, dms):
        """Step 1-2: (dm_cart (nset, ncart, ncart), dmax_sh (nshell, nshell), max |D|,
        single) for densities dms (nset, nao, nao) or (nao, nao)."""
        xp = self.xp
        dms = xp.asarray(dms, dtype=np.float64)
        single = dms.ndim == 2
        dms = dms.reshape(-1, self.basis.nao, self.basis.nao)
        dm_cart = xp.ascontiguousarray(xp.matmul(xp.matmul(self.C, dms), self.C.T))
        dmax_sh = self.shell_dmax(dm_cart)
        return dm_cart, dmax_sh, float(dmax_sh.max()), single

    def zeros_out(self, nset, with_j, with_k):
        """Cartesian accumulators (vj, vk), (nset, ncart, ncart) each (1 element if unused)."""
        xp, ncart = self.xp, self.basis.ncart
        return (
            xp.zeros((nset, ncart, ncart)) if with_j else xp.zeros(1),
            xp.zeros((nset, ncart, ncart)) if with_k else xp.zeros(1),
        )

    def run_items(
        self,
        mods,
        items,
        dm_cart,
        dmax_sh,
        dmax_all,
        vj,
        vk,
        pull=None,
        max_inflight_cost=None,
        with_j=True,
        with_k=True,
    ):
        """Launch `items` (an iterable of launch items) on side streams and make the current
        stream wait for them; returns the number launched.

        Without `pull` and without profiling: :meth:`run_batch` (one count pass for all
        items, one wait).  pull: a callable returning the next item or None (shared work
        queue of several GPUs); then items go one by one through :meth:`launch`, with at
        most ``nstreams`` items and at most `max_inflight_cost` of estimated cost in
        flight on this GPU: the thread waits for its oldest launch before taking more
        work, so faster devices take more items.
        """
        if pull is None and self.profile is None:
            return self.run_batch(mods, list(items), dm_cart, dmax_sh, dmax_all, vj, vk, with_j, with_k)
        serial = self.profile is not None or not hasattr(self.backend, "fork")
        streams = [None] if serial else self.backend.fork(self.nstreams)
        track = pull is not None and not serial
        inflight, load, n, keep = [], 0.0, 0, []
        source = iter(items) if pull is None else iter(pull, None)
        for cost, *item in source:
            stop = self.backend.timer() if self.profile is not None else None
            st = streams[n % len(streams)]
            nq = self.launch(
                mods,
                tuple(item),
                dm_cart,
                dmax_sh,
                dmax_all,
                vj,
                vk,
                stream=st,
                with_j=with_j,
                with_k=with_k,
                keep=keep,
            )
            n += 1
            if stop is not None:
                name = codegen.class_name(item[0])
                self.profile[name] = self.profile.get(name, 0.0) + stop()
                st_ = self.stats.setdefault(name, {})
                st_["quartets"] = st_.get("quartets", 0) + nq
                st_["tile_lanes"] = st_.get("tile_lanes", 0) + quartet_lists.tile_lanes(
                    item[1], item[2], item[3], dmax_all, self.threshold
                )
            if track:
                inflight.append((self.backend.record(st), cost))
                load += cost
                while inflight and (
                    len(inflight) >= len(streams) or (max_inflight_cost is not None and load > max_inflight_cost)
                ):
                    ev, c = inflight[0]
                    while not self.backend.done(ev):
                        time.sleep(2e-5)
                    inflight.pop(0)
                    load -= c
        if streams[0] is not None:
            self.backend.join(streams)
        keep.clear()  # the current stream now waits for every use of them
        return n

    def run_batch(
        self, mods, items, dm_cart, dmax_sh, dmax_all, vj, vk, with_j=True, with_k=True, runner=None, product=None
    ):
        """All items of one J/K call: count passes on side streams, one wait for the
        counts, then per wave of the list buffer the write passes and J/K kernels on side
        streams (the next wave's streams wait for the previous wave through the current
        stream, no host wait).  Returns the number of items.  runner: instead of the J/K
        kernel, a callable (item, list buffer, first entry, entries, stream) launching
        another kernel over each chunk of the quartet lists (gradients); product: _screen's."""
        xp = self.xp
        if not items:
            return 0
        ntile = [len(P.tile_q_host) for _, _, P, _, _ in items]
        off = np.concatenate([[0], np.cumsum(ntile)]) * 3
        counts = xp.zeros(int(off[-1]), dtype=np.int32)
        plans = [quartet_lists.tile_plan(self, P, Q, dmax_all, product) for _, _, P, Q, _ in items]
        words = np.concatenate([[0], np.cumsum([plan.bit_words() for plan in plans])])
        bits = xp.zeros(int(words[-1]), dtype=np.int32) if 4 * words[-1] <= quartet_lists.MAX_TILE_BIT_BYTES else None

        def bits_of(k):
            return None if bits is None else bits[words[k] : words[k + 1]]

        streams = self._fork()
        for k, (_, _cls, P, Q, tri) in enumerate(items):
            self._screen(
                P,
                Q,
                tri,
                dmax_sh,
                dmax_all,
                with_j,
                with_k,
                counts[off[k] : off[k + 1]],
                None,
                0,
                streams[k % len(streams)],
                bits=bits_of(k),
                product=product,
                plan=plans[k],
            )
        self._join(streams)
        counts_h = _host(counts)
        cap = self.list_capacity()
        chunks = [
            (k, ch) for k in range(len(items)) for ch in quartet_lists.plan_chunks(counts_h[off[k] : off[k + 1]], cap)
        ]
        size, waves = quartet_lists.pack_waves(chunks, cap)
        self.last_lists = {
            "entries": int(counts_h.sum()),
            "buffer": int(size),
            "waves": len(waves),
            "chunks": len(chunks),
        }
        if not waves:
            return len(items)
        cur = np.zeros(int(off[-1]), dtype=np.int32)
        for wave in waves:
            for k, ch, base in wave:
                cur[off[k] + 3 * ch[0] : off[k] + 3 * ch[1]] = (base + ch[3]).ravel()
        cur = xp.asarray(cur)
        buf = xp.empty(2 * size, dtype=np.int32)
        for wave in waves:
            streams = self._fork()
            for i, (k, ch, base) in enumerate(wave):
                _, cls, P, Q, tri = items[k]
                st = streams[i % len(streams)]
                self._screen(
                    P,
                    Q,
                    tri,
                    dmax_sh,
                    dmax_all,
                    with_j,
                    with_k,
                    cur[off[k] : off[k + 1]],
                    buf,
                    ch[0],
                    st,
                    row1=ch[1],
                    bits=bits_of(k),
                    product=product,
                    plan=plans[k],
                )
                if runner is None:
                    self._run_list(mods, (cls, P, Q, tri), buf, base, ch[2], dm_cart, vj, vk, st)
                else:
                    runner((cls, P, Q, tri), buf, base, ch[2], st)
            self._join(streams)
        return len(items)

    def finish(self, vj, vk, with_j, with_k, single):
        """Step 4: J = X + X^T, then C^T J C (same for K); (J, K), None where not asked."""
        xp = self.xp
        out = []
        for flag, v in ((with_j, vj), (with_k, vk)):
            if not flag:
                out.append(None)
                continue
            v = v + v.transpose(0, 2, 1)
            v = xp.matmul(xp.matmul(self.C.T, v), self.C)
            out.append(v[0] if single else v)
        return tuple(out)

    def jk(self, dms, with_j=True, with_k=True, omega=0.0):
        """J and K (each None when not asked) for densities dms (nset, nao, nao) or (nao, nao).

        Arrays of the backend's array module in and out; shapes as given.  omega (bohr^-1):
        0 for 1/r12, > 0 for erf(omega r12)/r12 (the attenuated kernels, screened with the
        1/r12 Schwarz factors, which bound them).
        """
        if omega < 0:  # the kernels' θ depends on omega² only
            raise ValueError("omega < 0 (erfc) is 1/r12 - erf: GPUEngine.jk forms the difference")
        self.omega = float(omega)
        dm_cart, dmax_sh, dmax_all, single = self.screen_density(dms)
        vj, vk = self.zeros_out(dm_cart.shape[0], with_j, with_k)
        if (with_j or with_k) and dmax_all > 0:
            mods = self._compile(self.quartet_classes(), with_j, with_k, self.omega)
            # classes run concurrently on side streams (atomics make the sums order-free),
            # largest first; profiling serialises them on the current stream
            self.run_items(
                mods, self.launch_list(dmax_all), dm_cart, dmax_sh, dmax_all, vj, vk, with_j=with_j, with_k=with_k
            )
        return self.finish(vj, vk, with_j, with_k, single)


def _on(stream):
    """Context making `stream` current (cupy), or a no-op context (None / emulated)."""
    if not hasattr(stream, "__enter__"):  # None, or a test's stand-in
        import contextlib

        return contextlib.nullcontext()
    return stream


def _host(x):
    """numpy copy of a backend array (waits for the current stream on CUDA)."""
    return np.asarray(x.get() if hasattr(x, "get") else x)
