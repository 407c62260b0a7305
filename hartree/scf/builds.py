"""The SCF's J/K builds and its stage clock, the parts of :func:`hartree.scf.kernel.kernel` that
talk to the engine: direct J/K with incremental updates (J[D] = J[D_prev] + J[D - D_prev]),
the early looser screening phase, the mixed-precision phase of a fitted K, and wall time per
stage with the device synchronised at each boundary.
"""

from __future__ import annotations

import time


class StageClock:
    """Wall seconds per SCF stage, the device synchronised at each boundary (GPU work is
    asynchronous, so without the sync a stage would be billed to the next one)."""

    def __init__(self, xp):
        stream = getattr(getattr(xp, "cuda", None), "get_current_stream", None)
        self._sync = (lambda: stream().synchronize()) if stream is not None else (lambda: None)
        self.seconds = {}
        self._t = time.perf_counter()

    def lap(self, stage):
        """Bill the time since the last lap to ``stage`` (seconds accumulate)."""
        self._sync()
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + (now - self._t)
        self._t = now


class IncrementalJK:
    """Direct J/K with incremental updates: J[D] = J[D_prev] + J[D - D_prev].

    early: a looser screening threshold for the first builds (None: the engine's own
    throughout); :meth:`tighten` ends that phase, and the next build is then a full one at
    the engine's threshold, so that no early screening error is carried forward (the early
    phase has no periodic full rebuilds for that reason).  exchange: the exchange matrix as
    ((omega, factor), ...) (:func:`hartree.scf.ks.exchange_terms`; Hartree-Fock ((0, 1),)),
    built as the one vk, so the incremental update holds for it as for J (each K is linear
    in D); () builds no K (vk None).  mixed: builds ask for precision 'mixed' until
    :meth:`full_precision`.
    """

    def __init__(self, engine, incremental, every, clock=None, early=None, exchange=((0.0, 1.0),), mixed=False):
        self.engine = engine
        self.exchange = tuple(exchange)
        self.with_k = bool(self.exchange)  # False: vk is None (a pure functional needs no K)
        self.incremental = bool(incremental) and every > 1
        self.every = int(every)
        self.dm = self.vj = self.vk = None
        self.since_full = 0
        self.clock = clock
        self.early, self.mixed = early, bool(mixed)
        self.builds = {"full": 0, "incremental": 0, "early_screening": 0, "mixed_precision": 0}

    @property
    def screening_early(self):
        """True while builds use the looser early threshold."""
        return self.early is not None

    def tighten(self):
        """Leave the early phase; the next build is a full one at the engine's threshold."""
        if self.early is not None:
            self.early = None
            self.dm = None

    def full_precision(self):
        """Leave the mixed-precision phase; the next build is a full FP64 one."""
        if self.mixed:
            self.mixed, self.dm = False, None

    def _jk(self, dm, kw):
        """J of dm and its exchange sum factor K(omega) (``exchange``; None when empty): J
        with the 1/r12 K in one engine call, each erf-attenuated K in one more."""
        terms = dict(self.exchange)
        k0 = terms.pop(0.0, None)
        vj, vk = self.engine.jk(dm, with_j=True, with_k=k0 is not None, **kw)
        if k0 is not None and k0 != 1.0:
            vk = k0 * vk
        for omega, factor in terms.items():
            _, klr = self.engine.jk(dm, with_j=False, with_k=True, omega=omega, **kw)
            vk = factor * klr if vk is None else vk + factor * klr
        return vj, vk

    def build(self, dm, force_full=False):
        """(vj, vk, full) for dm (nset, nao, nao); full says whether it was a full build."""
        # no periodic rebuild in the early phase: the one that ends it is full anyway
        full = (
            force_full
            or not self.incremental
            or self.dm is None
            or (self.since_full + 1 >= self.every and self.early is None)
        )
        if self.clock is not None:
            self.clock.lap("other")
        kw = {} if self.early is None else {"threshold": self.early}
        kw.update({"precision": "mixed"} if self.mixed else {})
        if full:
            vj, vk = self._jk(dm, kw)
            self.since_full = 0
        else:
            dvj, dvk = self._jk(dm - self.dm, kw)
            vj, vk = self.vj + dvj, (self.vk + dvk if self.with_k else None)
            self.since_full += 1
        self.dm, self.vj, self.vk = dm, vj, vk
        self.builds["full" if full else "incremental"] += 1
        self.builds["early_screening"] += "threshold" in kw
        self.builds["mixed_precision"] += self.mixed
        if not self.with_k:
            vk = None
        if self.clock is not None:
            self.clock.lap("jk")
        return vj, vk, full


def early_threshold(engine, options):
    """The early-cycle screening threshold for this engine, or None (off, or not looser
    than the engine's own)."""
    early = options.early_screening
    if early is None or not early > engine.screening_threshold:
        return None
    return float(early)
