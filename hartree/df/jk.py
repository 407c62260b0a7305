"""Density-fitted Coulomb and exchange matrices (RI-J, RI-JK) over any integral engine, written
once for numpy and cupy (``xp``: the engine's array module).

Fitting (Whitten, J. Chem. Phys. 58, 4496 (1973); Vahtras, Almlöf & Feyereisen, Chem. Phys.
Lett. 213, 514 (1993)), with the Coulomb metric of the auxiliary basis {P}:

    V_PQ = (P|Q) = L L^T,   M = L^-1,   B^Q_mn = sum_P M_QP (mn|P),
    (mn|ls) ~ sum_Q B^Q_mn B^Q_ls                                                  (1)
    J_mn = sum_Q B^Q_mn g_Q,   g_Q = sum_ls B^Q_ls D_ls                             (2)

and the exchange (RI-JK: Weigend, Phys. Chem. Chem. Phys. 4, 4285 (2002)) from the eigen-
decomposition D = C w C^T of each density (w of any sign, so difference densities work too):

    X^Q_mi = sum_n B^Q_mn C_ni,   K_mn = sum_Q sum_i X^Q_mi w_i X^Q_ni               (3)

B is kept only over the significant pairs m >= n (:mod:`hartree.df.pairs`: by shell pairs,
those whose (mn|P) the engine computes at all, by its product-overlap bound 1e-14; Taxol/
def2-TZVP 49 % of the pairs), chosen once, at construction.

Where B lives, (naux, npair + 1) float64 with one zero column at the end (a left-out pair of
the unpacking reads it), is decided at the first build, before any integral is computed, and
said in ``notes`` with the share of the pairs kept and the sizes (:mod:`hartree.df.storage`).
The budgets: half the memory available where ``xp`` allocates (host:
:func:`hartree.resources.available_memory`; GPU: the device's free memory), and for a GPU
engine half the host memory available beside it (``memory_bytes``, ``host_memory_bytes``):

* stored: B fits in the first budget: kept in ``xp``, built once, aux-shell block by block;
* split (GPU): as many rows Q as the first budget holds in GPU memory, the rest in pinned
  host memory, when they fit in the second budget (meant for Valinomycin/def2-TZVP's 99 GiB
  on one H200 with 128 GiB of host memory); the host rows are streamed to the device in blocks
  in every J/K build, the copy of one block overlapping the GEMMs of the one before (two
  buffers, two CUDA streams);
* host (GPU): the same with no row in GPU memory;
* direct: otherwise (host memory short too, or pinned memory refused): (mn|P) is computed
  again in every build, block by block: J as sum_P (mn|P) c_P with c = M^T M t,
  t_P = sum_ls (ls|P) D_ls (two passes over the integrals), K by (3) with
  X^Q = sum_P M_QP X'^P and X'^P_mi = sum_n (mn|P) C_ni, held for as many orbitals i as the
  first budget allows (8 naux nao bytes each), one more pass over the integrals for each
  further group of orbitals.  The engine's int3c2e cannot be restricted to shell pairs: with
  the default threshold it leaves the left-out pairs zero itself; with a larger one they are
  computed and then zeroed.

With B kept (stored, split, host) every build is one pass over its rows, the device part
then the streamed blocks, accumulating: J (2) as B^T (B D) on the packed kept pairs of D,
block of rows by block of rows; K (3) with blocks of rows unpacked to (nq, nao, nao) by one
gather through the pairs' index (zero on the left-out pairs).  For a numpy engine the host
part is plain numpy (a host budget must be given: by default it has none), so every
placement runs on the CPU, as the tests do.

Mixed precision (``jk(..., mixed=True)``; the SCF's early cycles with ``precision='mixed'``):
with B kept, the two GEMMs of (3), X^Q = B^Q C and K = sum_Q X^Q w X^Q^T, equal in cost and
the whole of a build but for J, run by the scheme :class:`hartree.df.mixed_k.MixedK` chooses
per build from an a-priori bound on the build's exchange-energy error (FP64 when the bound
misses the target); J stays FP64, and so does K on the direct path (no statistics of B for
the bound).  :mod:`hartree.df.mixed_k` states the bound and the policy.

:class:`FittedEngine` serves these J/K to the SCF behind the engine contract, so that the SCF
kernel, its guess and the Kohn-Sham code run unchanged; everything else is the wrapped engine's.
The J/K of an attenuated operator (``omega`` != 0: range-separated hybrids' long-range K) come
from a second fit with that operator's integrals and metric (:mod:`hartree.df.range_separated`).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from hartree.resources import available_memory, size_text

from .metric import density_factors, padded_metric_factor
from .mixed_k import KPlan, MixedK, b_statistics, exchange_block
from .pairs import ENGINE_THRESHOLD, fitted_pairs
from .range_separated import LINEAR_DEPENDENCE, OperatorIntegrals, operator_text, truncated_metric_factor
from .storage import FittedTensor, Placement, default_host_budget, place

if TYPE_CHECKING:
    from hartree.basis import Basis
    from hartree.engine import IntegralEngine

__all__ = ["FittedJK"]

#: working memory of one block (integrals, unpacked B rows), bytes, at most
BLOCK_BYTES = 256 * 2**20


def _memory_available(xp: ModuleType) -> int:
    """Bytes free where ``xp`` allocates: host memory (no limit known: 2**62), or the current
    GPU's free memory plus what cupy's pool holds unused."""
    if xp is np:
        have = available_memory()
        return 2**62 if have is None else int(have)
    free, _ = xp.cuda.runtime.memGetInfo()
    return int(free) + int(xp.get_default_memory_pool().free_bytes())


class FittedJK:
    """Fitted J and K (eqs. 1-3) of ``engine``'s basis with the auxiliary Basis ``aux``.

    memory_bytes: the memory B may take where ``xp`` allocates (default: half of what is
    available at the first build); host_memory_bytes: the host memory B may take beside a
    GPU (default: half of the host memory available for a GPU engine, none for a numpy one:
    :func:`hartree.df.storage.default_host_budget`); the placement of the module docstring
    compares B's size with them.  pair_threshold: the product-overlap bound of the pairs B
    keeps (:mod:`hartree.df.pairs`; default: the engine's own int3c2e screening, so nothing
    nonzero is left out; 0 keeps every pair).  block_bytes: the working memory of one block
    (integrals, unpacked rows of B, a streamed block of host rows), bytes.  mixed: the
    :class:`hartree.df.mixed_k.MixedK` that chooses the scheme of the mixed-precision K builds
    and records them (default: the device's policy, target K_TARGET_EH).  omega (bohr^-1):
    the operator fitted, 0 for 1/r12, else the attenuated one of :mod:`hartree.df.range_separated`
    (its integrals, :class:`~hartree.df.range_separated.OperatorIntegrals`, and its truncated
    metric factor, whose rank ``metric_rank`` gives; None for 1/r12 and before the first build).
    """

    def __init__(
        self,
        engine: IntegralEngine,
        aux: Basis,
        memory_bytes: int | None = None,
        pair_threshold: float = ENGINE_THRESHOLD,
        host_memory_bytes: int | None = None,
        block_bytes: int = BLOCK_BYTES,
        mixed: MixedK | None = None,
        omega: float = 0.0,
    ) -> None:
        self.omega = float(omega)
        self.metric_rank: int | None = None
        if self.omega != 0.0:
            engine = OperatorIntegrals(engine, self.omega)
        self.engine, self.aux = engine, aux
        self.mixed = MixedK() if mixed is None else mixed
        #: the KPlan of the last build asked for in mixed precision (None before one)
        self.last_plan: KPlan | None = None
        self.statistics = None  # hartree.df.mixed_k.BStatistics of B, at the first mixed build
        self.xp = engine.array_module()
        self.nao, self.naux = int(engine.basis.nao), int(aux.nao)
        self.memory_bytes, self.host_memory_bytes = memory_bytes, host_memory_bytes
        self.block_bytes = max(1, int(block_bytes))
        #: the kept pairs m >= n (host numpy; their index arrays go to ``xp`` at setup)
        self.pairs = fitted_pairs(engine.basis, pair_threshold)
        #: where B lives (:class:`hartree.df.storage.Placement`; None before the first build)
        self.placement: Placement | None = None
        #: sentences for the user: what was fitted with what, where B lives
        self.notes: list[str] = []
        self._m = self._b = self._pairs = self._weights = self._unpack_index = self._mask = None
        self._budget = 0  # bytes B (or, direct, the half-transformed integrals) may take; set by setup

    @property
    def storage(self) -> str | None:
        """'stored', 'split', 'host' or 'direct' (module docstring); None before the first build."""
        return None if self.placement is None else self.placement.storage

    @property
    def tensor_bytes(self) -> int:
        """Size of B over the kept pairs and its zero column, bytes: 8 naux (npair + 1)."""
        return 8 * self.naux * (self.pairs.npair + 1)

    def _where(self) -> str:
        return "host memory" if self.xp is np else "GPU memory"

    def _host_where(self, pinned: bool = True) -> str:
        if self.xp is np:
            return "host memory (the host budget)"
        return "pinned host memory" if pinned else "host memory"

    def _batches(self, work: int) -> list[tuple[int, int]]:
        """Aux-shell ranges whose (mn|P) blocks, (nao, nao, nP), take about ``work`` bytes."""
        from hartree.integrals.three_center import aux_shell_batches

        return aux_shell_batches(self.aux, max(1, work // (24 * self.nao * self.nao)))

    def _int3c(self, s0: int, s1: int) -> Any:
        return self.xp.asarray(self.engine.int3c2e(self.aux, (s0, s1)))

    def _screened_int3c(self, s0: int, s1: int) -> Any:
        """(mn|P) of the direct path, zero on the left-out pairs (the engine computes them
        only when the pair threshold exceeds its own screening: module docstring)."""
        j3 = self._int3c(s0, s1)
        if self._mask is not None:
            j3 *= self._mask
        return j3

    def setup(self) -> None:
        """Where B lives (decided and said before any integral is computed), the metric
        factor M, and B unless direct (module docstring); once."""
        if self._m is not None:
            return
        xp = self.xp
        with self.engine.use():
            budget = self.memory_bytes if self.memory_bytes is not None else _memory_available(xp) // 2
            host = self.host_memory_bytes if self.host_memory_bytes is not None else default_host_budget(xp)
            self._budget = int(budget)
            self.placement = place(self.naux, self.pairs.npair + 1, budget, host)
            tensor, failure = None, ""
            if self.placement.storage != "direct":
                try:
                    tensor = FittedTensor(xp, self.placement, self.block_bytes)
                except MemoryError as exc:  # pinned host memory refused: recompute instead
                    failure = str(exc)
                    self.placement = place(self.naux, self.pairs.npair + 1, 0, 0)
            self.notes.append(self._placement_note(failure))
            self._m = self._metric()  # eq. (1)
            if tensor is not None:
                self._index_arrays()
                self._build_b(tensor)
                self._b = tensor
            elif self.pairs.drops_computed_pairs:
                self._mask = xp.asarray(self.pairs.mask())[:, :, None]

    def _metric(self) -> Any:
        """M of eq. (1), (naux, naux) in ``xp`` (zero rows for a singular metric:
        :func:`hartree.df.metric.padded_metric_factor`; an attenuated operator's:
        :func:`hartree.df.range_separated.truncated_metric_factor`, said in the notes)."""
        v = self.xp.asarray(self.engine.int2c2e(self.aux))
        if self.omega == 0.0:
            return padded_metric_factor(self.xp, v)
        m, self.metric_rank = truncated_metric_factor(self.xp, v)
        self.notes.append(
            f"density fitting of {operator_text(self.omega)}: {self.metric_rank} of {self.naux} eigenvectors of "
            f"its metric kept (eigenvalues above {LINEAR_DEPENDENCE:g} Eh)"
        )
        return m

    def _placement_note(self, failure: str) -> str:
        """The notes' sentence on the fitting and where B lives."""
        p = self.placement
        head = f"density fitting: {self.aux.name}, {self.naux} auxiliary functions"
        if self.omega != 0.0:
            head = f"density fitting of {operator_text(self.omega)} (range-separated exchange: a second tensor "
            head += f"beside the 1/r12 one, twice the fitted memory): {self.aux.name}, {self.naux} auxiliary functions"
        kept, size = self.pairs.text(), size_text(self.tensor_bytes)
        if p.storage == "stored":
            return f"{head}; {kept}, {size} kept in {self._where()}"
        if p.storage == "split":
            return (
                f"{head}; {kept}, {size}: {size_text(p.device_bytes)} in {self._where()}, "
                f"{size_text(p.host_bytes)} in {self._host_where()}, streamed in every J/K build"
            )
        if p.storage == "host":
            return (
                f"{head}; {kept}, {size}, more than the {size_text(p.device_budget)} of {self._where()} it may "
                f"take: kept in {self._host_where()}, streamed in every J/K build"
            )
        direct = "(mn|P) is computed again in every J/K build, block by block over the auxiliary shells"
        if failure:
            return f"{head}; {kept} would need {size}; {failure}: {direct}"
        limit = f"the {size_text(self._budget)} of {self._where()}"
        if p.host_budget:
            limit += f" and the {size_text(p.host_budget)} of {self._host_where(pinned=False)}"
        return f"{head}; {kept} would need {size}, more than {limit} it may take: {direct}"

    def _index_arrays(self) -> None:
        """The kept pairs' rows, columns, weights and unpacking index in ``xp``."""
        xp, p = self.xp, self.pairs
        self._pairs = (xp.asarray(p.rows), xp.asarray(p.cols))
        self._weights = xp.asarray(p.weights)
        self._unpack_index = xp.asarray(p.unpack)

    def _build_b(self, tensor: FittedTensor) -> None:
        """B of eq. (1) over the kept pairs into ``tensor`` (naux, npair + 1), last column
        zero: (mn|P) block by block to the rows' part, then M applied in place, column block
        by column block (:class:`hartree.df.storage.FittedTensor`)."""
        loc = np.asarray(self.aux.ao_loc)
        for s0, s1 in self._batches(self.block_bytes):
            tensor.put_rows(int(loc[s0]), self._int3c(s0, s1)[self._pairs].T)
        tensor.zero_column(self.pairs.npair)  # the zero column (its pair index is (0, 0))
        tensor.left_multiply(self._m, self.block_bytes)

    def _unpack(self, packed: Any) -> Any:
        """(n, npair + 1) over the kept pairs and the zero column -> (n, nao, nao) symmetric,
        zero on the left-out pairs (one gather)."""
        return self.xp.take(packed, self._unpack_index, axis=1).reshape(-1, self.nao, self.nao)

    def jk(self, dms: Any, with_j: bool = True, with_k: bool = True, mixed: bool = False) -> tuple[Any, Any]:
        """Fitted J (eq. 2) and K (eq. 3), hartree, of symmetric densities dms (nao, nao) or
        (nset, nao, nao), numpy or ``xp``; returned with the shape and module of dms (None for
        a matrix not asked for).  mixed: K by the scheme ``self.mixed`` chooses (module
        docstring; its KPlan in ``last_plan``)."""
        xp = self.xp
        self.setup()
        to_host = isinstance(dms, np.ndarray) and xp is not np
        with self.engine.use():
            d = xp.asarray(dms, dtype=np.float64)
            d = d.reshape(-1, self.nao, self.nao)
            if with_k and not mixed:
                self.mixed.fp64_build()
            if self._b is not None:
                vj, vk = self._jk_kept(d, with_j, with_k, mixed)
            else:
                if with_k and mixed:
                    self.mixed.direct()
                vj, vk = self._jk_direct(d, with_j, with_k)
        out = []
        for v in (vj, vk):
            if v is not None:
                v = v.reshape(np.shape(dms))
                v = v.get() if to_host else v
            out.append(v)
        return out[0], out[1]

    def _row_blocks(self, step: int):
        """B's rows unpacked, (nq <= step, nao, nao) at a time."""
        for rows_q in self._b.chunks():
            for q0 in range(0, rows_q.shape[0], step):
                yield self._unpack(rows_q[q0 : q0 + step])

    def _k_plan(self, d: Any, factors: list, step: int) -> KPlan:
        """The scheme of a mixed-precision K build (:meth:`hartree.df.mixed_k.MixedK.plan`),
        B's statistics made at the first one that needs a bound."""

        def statistics():
            if self.statistics is None:
                self.statistics = b_statistics(self.xp, self._row_blocks(step), self.nao)
            return self.statistics

        self.last_plan = self.mixed.plan(self.xp, statistics, factors, d, self.naux, step)
        return self.last_plan

    def _jk_kept(self, d: Any, with_j: bool, with_k: bool, mixed: bool = False) -> tuple[Any, Any]:
        """Eqs. (2) and (3) with the kept B, one pass over its rows (the device part, then the
        host part streamed block by block), accumulating: g = B D over the packed kept pairs
        of D (off-diagonal doubled, 0 for the zero column) and J = B^T g per block of rows;
        K over blocks of rows unpacked to (nq, nao, nao); mixed: K by the build's KPlan."""
        xp, nao = self.xp, self.nao
        dp = d[:, self._pairs[0], self._pairs[1]] * self._weights if with_j else None  # (nset, npair + 1)
        jp = xp.zeros((self.pairs.npair + 1, d.shape[0])) if with_j else None
        factors = density_factors(xp, d) if with_k else []
        vk = xp.zeros_like(d) if with_k else None
        step = max(1, self.block_bytes // (24 * nao * nao))
        plan = self._k_plan(d, factors, step) if with_k and mixed else None
        low = plan is not None and plan.low
        for rows_q in self._b.chunks():
            if with_j:
                jp += rows_q.T @ (rows_q @ dp.T)  # eq. (2): sum_Q B^Q g_Q, g_Q = B^Q . D
            for q0 in range(0, rows_q.shape[0] if with_k else 0, step):
                bq = self._unpack(rows_q[q0 : q0 + step])
                flat = bq.reshape(-1, nao)  # (nq nao, nao): one GEMM per density
                for s, (c, w) in enumerate(factors):
                    if low:
                        vk[s] += exchange_block(xp, flat, c, w, nao, plan)
                        continue
                    x = (flat @ c).reshape(bq.shape[0], nao, -1)  # X^Q_mi, (nq, nao, k)
                    vk[s] += xp.tensordot(x * w, x, axes=([0, 2], [0, 2]))  # eq. (3)
        vj = self._unpack(jp.T) if with_j else None
        if low:
            vk = 0.5 * (vk + vk.transpose(0, 2, 1))
        return vj, vk

    def _passes(self, factors: list[tuple[Any, Any]]) -> list[list[tuple[int, int, int]]]:
        """The orbitals of eq. (3) grouped into passes over the integrals: lists of (density,
        first, last) column ranges of C whose X'^P, 8 naux nao bytes per orbital, fit in the
        budget together (one orbital a pass at least)."""
        width = max(1, self._budget // (8 * self.naux * self.nao))
        passes, current, used = [], [], 0
        for s, (c, _) in enumerate(factors):
            i0, k = 0, int(c.shape[1])
            while i0 < k:
                take = min(k - i0, width - used)
                current.append((s, i0, i0 + take))
                used, i0 = used + take, i0 + take
                if used == width:
                    passes.append(current)
                    current, used = [], 0
        return passes + [current] if current else passes

    def _jk_direct(self, d: Any, with_j: bool, with_k: bool) -> tuple[Any, Any]:
        """Eqs. (2) and (3) with (mn|P) computed block by block (module docstring): t_P with the
        first pass, X'^P of as many orbitals as the budget holds per pass, J in a last pass."""
        xp = self.xp
        nset, nao, naux = d.shape[0], self.nao, self.naux
        loc = np.asarray(self.aux.ao_loc)
        batches = self._batches(self.block_bytes)
        factors = density_factors(self.xp, d) if with_k else []
        t = xp.zeros((naux, nset))
        dflat = d.reshape(nset, nao * nao)
        vk = xp.zeros_like(d) if with_k else None
        for n, chunks in enumerate(self._passes(factors) or [[]]):
            xs = [xp.zeros((naux, nao, i1 - i0)) for _, i0, i1 in chunks]
            for s0, s1 in batches:
                j3 = self._screened_int3c(s0, s1)  # (nao, nao, nP)
                p0, p1 = int(loc[s0]), int(loc[s1])
                if with_j and n == 0:
                    t[p0:p1] = j3.reshape(nao * nao, -1).T @ dflat.T  # t_P = (P|D)
                rows = j3.reshape(nao, -1)  # (n, m nP): (mn|P) is symmetric in m, n
                for x, (s, i0, i1) in zip(xs, chunks):
                    half = factors[s][0][:, i0:i1].T @ rows  # X'^P_mi as (i, m nP), one GEMM
                    x[p0:p1] = half.reshape(i1 - i0, nao, p1 - p0).transpose(2, 1, 0)
            for x, (s, i0, i1) in zip(xs, chunks):
                flat = x.reshape(naux, -1)
                step = max(1, self.block_bytes // (8 * naux))
                for c0 in range(0, flat.shape[1], step):
                    flat[:, c0 : c0 + step] = self._m @ flat[:, c0 : c0 + step]  # X^Q = sum_P M_QP X'^P
                w = factors[s][1][i0:i1]
                qstep = max(1, self.block_bytes // (8 * nao * (i1 - i0)))
                for q0 in range(0, naux, qstep):
                    xq = x[q0 : q0 + qstep]
                    vk[s] += xp.tensordot(xq * w, xq, axes=([0, 2], [0, 2]))  # eq. (3)
        vj = None
        if with_j:
            cfit = self._m.T @ (self._m @ t)  # c = V^-1 t
            vj = xp.zeros_like(d)
            for s0, s1 in batches:
                j3 = self._screened_int3c(s0, s1)
                vj += (j3.reshape(nao * nao, -1) @ cfit[int(loc[s0]) : int(loc[s1])]).T.reshape(nset, nao, nao)
        return vj, vk
