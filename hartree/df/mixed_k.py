"""The density-fitted exchange in mixed precision, with an a-priori bound per build (issue 19,
``--precision mixed``), written once for numpy and cupy (``xp``).

Where the time goes.  A fitted K build (:mod:`hartree.df.jk`, eq. 3) does, per density
D = C w C^T with k orbitals (C (nao, k), w (k,)), two GEMMs of the same cost, 2 naux nao^2 k
FLOPs each, against 4 naux npair for J:

    X^Q_mi = sum_n B^Q_mn C_ni        GEMM 1: (naux nao, nao) x (nao, k)                   (1)
    K_mn   = sum_Qi X^Q_mi w_i X^Q_ni  GEMM 2: (nao, naux k) x (naux k, nao)                (2)

so both go through :func:`hartree.linalg.mgemm` with the scheme of the build (one of them
alone would cap the gain at 2x); J stays FP64.

Bound.  For a GEMM of inner dimension kk mgemm advertises |C~ - AB|_ij <= phi rA_i cB_j +
psi (|A||B|)_ij, rA_i = max_p |A_ip|, cB_j = max_p |B_pj|, phi = 0 but for the INT8 Ozaki
split (:func:`hartree.linalg.gemm_precision.bound_coefficients`; Ozaki, Ogita, Oishi & Rump,
Numer. Algorithms 59, 95 (2012); Ootomo, Ozaki & Yokota, IJHPCA 38, 297 (2024)).  With
(|A||B|)_ij <= ||A_i.|| ||B_.j|| (Cauchy-Schwarz), row statistics of B fixed for the whole SCF,
rho_Qm = max_n |B^Q_mn| and a_Qm = ||B^Q_m.||, and of C, c_i = max_n |C_ni|, g_i = ||C_.i||:

    |X^Q_mi| <= a_Qm g_i,   |dX^Q_mi| <= e_Qmi = phi1 rho_Qm c_i + psi1 a_Qm g_i,
    |X~^Q_mi| <= xb_Qmi = (1 + psi1) a_Qm g_i + phi1 rho_Qm c_i                               (3)

(1: GEMM 1, kk = nao; 2: GEMM 2, kk = naux k, its blocks of rows Q summed), and as
K~ - K = dX w X~^T + X w dX^T + (the error of GEMM 2 on X~),

    |dK_mn| <= sum_Qi |w_i| (e_Qmi xb_Qni + a_Qm g_i e_Qni) + phi2 rA2_m cB2_n + psi2 G_mn,
    rA2_m = max_Qi |w_i| xb_Qmi,  cB2_n = max_Qi xb_Qni,  G_mn = sum_Qi |w_i| xb_Qmi xb_Qni.   (4)

Every sum over (Q, i) factorises into sums over i (of |w| c^2, |w| c g, |w| g^2) times the
density-independent R = rho^T rho, P = rho^T a, A = a^T a (nao, nao; sums over Q) and the
maxima over Q of rho and a, made once from B (:func:`b_statistics`): the bound of a build is
known before any of its products runs and costs O(nao^2).  K~ is symmetrised, and so is (4).
The exchange energy (RHF -1/4 tr(D K), UHF and ROHF -1/2 sum_s tr(D_s K_s), times c_x <= 1
in hybrid DFT) then errs by at most

    |dE_x| <= 1/2 sum_s sum_mn |D^s_mn| |dK^s_mn|   (Eh).                                   (5)

Choice per build (:class:`MixedK`), with ``target_eh`` (default K_TARGET_EH) the most (5) may
be.  Policy (``scheme`` None): on the CPU FP64 (mgemm's "mixed" policy,
:func:`hartree.linalg.gemm_precision.choose_mixed`: no low-precision scheme beats DGEMM by
enough there); on the GPU the INT8 Ozaki split with the fewest slices whose (5) meets the
target, or tf32x3 if its (5) does, when the cost model (gemm_precision.ozaki_seconds,
tf32x3_seconds against dgemm_seconds, GPU_SPLIT_GAIN) predicts the two GEMMs faster; else FP64.
A forced ``scheme`` ('ozaki', 'fp32', 'tf32', 'tf32x3'; on the CPU mgemm emulates them in
numpy, the Ozaki split bit for bit) runs whatever it costs, 'ozaki' with the fewest slices
that meet the target (or ``slices``).  A build whose (5) exceeds the target runs in FP64: a
fallback, counted and reported.  The SCF asks for mixed builds only in its early cycles and
finishes in FP64 (:mod:`hartree.scf.kernel`), so the converged energy is the FP64 one.

Measured (tests/scf/test_df_mixed_precision.py; water and formaldehyde/def2-SVP,
def2-universal-JKFIT, core-guess densities): (4) exceeds the actual |dK| by at least 5e3 in
every element for the Ozaki, FP32 and tf32x3 products (1e2 for TF32), so the target 1e-6 Eh
takes 6-7 slices where 4 would have met it.  With the blocks of rows Q of :mod:`hartree.df.jk`
(256 MiB) the cost model predicts the INT8 split slower than DGEMM for every K shape tried
(500-3000 functions), so the GPU policy runs FP64 as well for now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from hartree.errors import InputError
from hartree.linalg import mgemm
from hartree.linalg import ozaki as oz
from hartree.linalg.gemm_precision import (
    GPU_SPLIT_GAIN,
    bound_coefficients,
    dgemm_seconds,
    ozaki_seconds,
    tf32x3_seconds,
)

__all__ = ["K_TARGET_EH", "K_SCHEMES", "BStatistics", "KPlan", "MixedK", "b_statistics", "exchange_block"]

#: the most the bound (5) on a build's exchange-energy error may be, Eh (default target)
K_TARGET_EH = 1e-6
#: the low-precision schemes a caller may force (``MixedK(scheme=...)``)
K_SCHEMES = ("ozaki", "fp32", "tf32", "tf32x3")


@dataclass
class BStatistics:
    """Row statistics of the unpacked B (module docstring): R = rho^T rho, P = rho^T a,
    A = a^T a (nao, nao), and rho_max, a_max (nao,), the maxima over Q; in ``xp``."""

    r: Any
    p: Any
    a: Any
    rho_max: Any
    a_max: Any


def b_statistics(xp: ModuleType, blocks: Any, nao: int) -> BStatistics:
    """BStatistics of B from ``blocks``, an iterable of its rows unpacked, (nq, nao, nao)."""
    r, p, a = (xp.zeros((nao, nao)) for _ in range(3))
    rho_max, a_max = xp.zeros(nao), xp.zeros(nao)
    for bq in blocks:
        rho = xp.abs(bq).max(axis=2)  # (nq, nao): rho_Qm
        norm = xp.sqrt(xp.einsum("qmn,qmn->qm", bq, bq))  # a_Qm
        r += rho.T @ rho
        p += rho.T @ norm
        a += norm.T @ norm
        rho_max = xp.maximum(rho_max, rho.max(axis=0))
        a_max = xp.maximum(a_max, norm.max(axis=0))
    return BStatistics(r, p, a, rho_max, a_max)


@dataclass
class KPlan:
    """The scheme of one K build: ``scheme`` ('fp64' or a low-precision one) with ``slices``
    (ozaki); ``bound_eh``: (5) for it (0 for FP64); ``fallback``: a low-precision scheme's
    (5), ``fallback_eh``, missed the target, so FP64 runs; ``terms``: per density, what
    :meth:`MixedK.bound_matrix` needs."""

    scheme: str
    slices: int | None = None
    bound_eh: float = 0.0
    fallback: bool = False
    fallback_eh: float = 0.0
    terms: list | None = None

    @property
    def low(self) -> bool:
        return self.scheme != "fp64"

    @property
    def label(self) -> str:
        """'fp64', 'fp32', 'tf32', 'tf32x3' or 'ozaki:S' (S slices)."""
        return f"ozaki:{self.slices}" if self.scheme == "ozaki" else self.scheme


def _density_scalars(xp, stats, c, w, d):
    """Sums over i and contractions with |D| of one density (module docstring, eqs. 4-5);
    zeros for a density without orbitals (an empty spin)."""
    if not c.shape[1]:
        return [0.0] * 13
    aw = xp.abs(w)
    ci, gi = xp.abs(c).max(axis=0), xp.sqrt((c * c).sum(axis=0))
    ad = xp.abs(d)
    da, dr = ad @ stats.a_max, ad @ stats.rho_max
    vals = [
        (aw * ci * ci).sum(),  # s_cc
        (aw * ci * gi).sum(),  # s_cg
        (aw * gi * gi).sum(),  # s_gg
        (aw * gi).max(),  # max |w| g
        (aw * ci).max(),  # max |w| c
        gi.max(),
        ci.max(),
        (ad * stats.r).sum(),  # <|D|, R>
        (ad * stats.p).sum(),  # <|D|, P> = <|D|, P^T>
        (ad * stats.a).sum(),  # <|D|, A>
        stats.a_max @ da,
        stats.a_max @ dr,
        stats.rho_max @ dr,
    ]
    return [float(v) for v in vals]


def _coefficients(scheme, slices, nao, inner2, sc):
    """Coefficients of R, P, P^T, A and of the outer product x y^T (x, y as (a_max, rho_max)
    weights) in the bound (4)."""
    phi1, psi1 = bound_coefficients(scheme, nao, slices=slices)
    phi2, psi2 = bound_coefficients(scheme, inner2, slices=slices)
    s_cc, s_cg, s_gg, mwg, mwc, mg, mc = sc[:7]
    u = 1.0 + psi1
    c_r = phi1 * phi1 * s_cc * (1.0 + psi2)
    c_p = phi1 * u * s_cg * (1.0 + psi2)
    c_pt = phi1 * s_cg * (psi1 + 1.0 + psi2 * u)
    c_a = s_gg * (psi1 * u + psi1 + psi2 * u * u)
    x, y = (u * mwg, phi1 * mwc), (u * mg, phi1 * mc)
    return c_r, c_p, c_pt, c_a, phi2, x, y


def _energy_bound(coefs, sc):
    """(5) of one density from its coefficients and scalars."""
    c_r, c_p, c_pt, c_a, phi2, x, y = coefs
    d_r, d_p, d_a, aa, ar, rr = sc[7:]
    outer = x[0] * y[0] * aa + (x[0] * y[1] + x[1] * y[0]) * ar + x[1] * y[1] * rr
    return 0.5 * (c_r * d_r + (c_p + c_pt) * d_p + c_a * d_a + phi2 * outer)


class MixedK:
    """The scheme of each mixed-precision K build and the record of them (module docstring).

    scheme: None (the device's policy) or one of K_SCHEMES, forced; slices: the Ozaki slice
    count (forced 'ozaki' only; None: the fewest that meet the target); target_eh: the most
    the bound (5) of a build may be, Eh (inf: never fall back).
    """

    def __init__(self, scheme: str | None = None, slices: int | None = None, target_eh: float = K_TARGET_EH):
        if scheme is not None and scheme not in K_SCHEMES:
            raise InputError(f"unknown mixed-precision K scheme {scheme!r}; choose one of {', '.join(K_SCHEMES)}")
        if slices is not None and (scheme != "ozaki" or not 1 <= int(slices) <= oz.MAX_SLICES):
            raise InputError(f"slices (1..{oz.MAX_SLICES}) go with scheme='ozaki' only")
        if not target_eh > 0.0:
            raise InputError("the mixed-precision K target must be positive (Eh)")
        self.scheme, self.slices, self.target_eh = scheme, slices, float(target_eh)
        self.builds = 0  # builds asked for in mixed precision
        self.schemes: dict[str, int] = {}  # what they ran, label -> builds
        self.fallbacks = 0
        self.largest_bound_eh = 0.0  # over the low-precision builds
        self.largest_fallback_eh = 0.0  # over the fallbacks, the smallest bound a scheme offered
        self.fp64_after = 0  # builds asked for in FP64 after mixed ones (the SCF's last cycles)
        self.policy = ""  # why the last build ran what it ran

    # ------------------------------------------------------------------ choice
    def candidates(self, gpu: bool) -> list[tuple[str, int | None]]:
        """The (scheme, slices) a build may run, cheapest first, before FP64 (none: the
        CPU's policy, FP64 without a bound to compute)."""
        if self.scheme == "ozaki":
            return [("ozaki", self.slices)] if self.slices else [("ozaki", s) for s in range(1, oz.MAX_SLICES + 1)]
        if self.scheme is not None:
            return [(self.scheme, None)]
        if not gpu:
            return []
        return [("tf32x3", None)] + [("ozaki", s) for s in range(1, oz.MAX_SLICES + 1)]

    def plan(self, xp: ModuleType, statistics: Any, factors: list, dms: Any, naux: int, nq: int) -> KPlan:
        """The KPlan of one build of the densities dms (nset, nao, nao) with ``factors`` [(C, w)]
        (:func:`hartree.df.metric.density_factors`), ``statistics`` (a callable returning B's
        BStatistics, called only when a bound is needed), ``naux`` rows Q in blocks of ``nq``;
        recorded."""
        gpu, nao = xp is not np, int(dms.shape[-1])
        candidates = self.candidates(gpu)
        stats = statistics() if candidates else None
        scalars = [_density_scalars(xp, stats, c, w, d) for (c, w), d in zip(factors, dms)] if candidates else []
        chosen, missed, met = None, None, False
        for scheme, slices in candidates:
            bound = sum(
                _energy_bound(_coefficients(scheme, slices, nao, naux * int(c.shape[1]), sc), sc)
                for (c, _), sc in zip(factors, scalars)
            )
            if bound > self.target_eh:
                missed = bound if missed is None else min(missed, bound)
                continue
            met = True
            if self.scheme is None and not self._faster(scheme, slices, factors, nao, naux, nq):
                continue
            chosen = KPlan(scheme, slices, bound)
            break
        self.builds += 1
        if chosen is None:
            chosen = KPlan("fp64", fallback=bool(candidates) and not met, fallback_eh=missed or 0.0)
            if not chosen.fallback:
                self.policy = (
                    "on the CPU mgemm's mixed policy is FP64: DGEMM takes at most twice SGEMM's time there"
                    if not gpu
                    else "no scheme whose bound meets the target is predicted faster than DGEMM"
                )
        if chosen.fallback:
            self.fallbacks += 1
            self.largest_fallback_eh = max(self.largest_fallback_eh, chosen.fallback_eh)
        if chosen.low:
            self.largest_bound_eh = max(self.largest_bound_eh, chosen.bound_eh)
            chosen.terms = [
                _coefficients(chosen.scheme, chosen.slices, nao, naux * int(c.shape[1]), sc)
                for (c, _), sc in zip(factors, scalars)
            ]
        self.schemes[chosen.label] = self.schemes.get(chosen.label, 0) + 1
        return chosen

    @staticmethod
    def _faster(scheme, slices, factors, nao, naux, nq) -> bool:
        """The cost model's verdict: the build's GEMMs (1) and (2) by ``scheme`` at least
        GPU_SPLIT_GAIN times faster than by DGEMM."""
        nblocks = math.ceil(naux / max(1, nq))
        t64 = tlow = 0.0
        for c, _ in factors:
            k = int(c.shape[1])
            for m, n, kk in ((nq * nao, k, nao), (nao, nao, nq * k)):
                t64 += nblocks * dgemm_seconds(m, n, kk)
                if scheme == "ozaki":
                    tlow += nblocks * ozaki_seconds(m, n, kk, slices)
                else:
                    tlow += nblocks * tf32x3_seconds(m, n, kk)
        return tlow * GPU_SPLIT_GAIN <= t64

    def direct(self) -> None:
        """Record a build asked for in mixed precision on the direct path: FP64 (no B kept,
        no statistics for the bound)."""
        self.builds += 1
        self.schemes["fp64"] = self.schemes.get("fp64", 0) + 1
        self.policy = "B is not kept (direct): K in FP64"

    def fp64_build(self) -> None:
        """Record an FP64 build after mixed ones."""
        if self.builds:
            self.fp64_after += 1

    @staticmethod
    def bound_matrix(xp: ModuleType, stats: BStatistics, terms: tuple) -> Any:
        """The symmetrised elementwise bound (4) on |dK| (nao, nao), hartree, of one density
        from its KPlan.terms entry."""
        c_r, c_p, c_pt, c_a, phi2, x, y = terms
        xv = x[0] * stats.a_max + x[1] * stats.rho_max
        yv = y[0] * stats.a_max + y[1] * stats.rho_max
        m = c_r * stats.r + c_p * stats.p + c_pt * stats.p.T + c_a * stats.a + phi2 * xp.outer(xv, yv)
        return 0.5 * (m + m.T)

    # ------------------------------------------------------------------ report
    def summary(self) -> dict | None:
        """The record (JSON-able), None when no build was asked for in mixed precision:
        scheme ('policy' or the forced one), target_eh, mixed_builds, schemes (label ->
        builds), fallbacks, largest_bound_eh (over the low-precision builds; None without
        one), largest_fallback_eh, fp64_builds_after, policy (why FP64 ran by policy)."""
        if not self.builds:
            return None
        return {
            "scheme": self.scheme or "policy",
            "target_eh": self.target_eh,
            "mixed_builds": self.builds,
            "schemes": dict(self.schemes),
            "fallbacks": self.fallbacks,
            "largest_bound_eh": self.largest_bound_eh if self.largest_bound_eh > 0.0 else None,
            "largest_fallback_eh": self.largest_fallback_eh if self.fallbacks else None,
            "fp64_builds_after": self.fp64_after,
            "policy": self.policy or None,
        }

    def note(self) -> str | None:
        """One sentence for the notes, None when no build was asked for in mixed precision."""
        if not self.builds:
            return None
        low = [f"{n} by {_words(label)}" for label, n in self.schemes.items() if label != "fp64"]
        n64 = self.schemes.get("fp64", 0)
        if self.fallbacks:
            low.append(
                f"{self.fallbacks} in FP64 as fallbacks (bound up to {self.largest_fallback_eh:.1e} Eh, above the "
                "target)"
            )
        if n64 > self.fallbacks:
            low.append(f"{n64 - self.fallbacks} in FP64 ({self.policy})")
        text = f"mixed-precision K: {self.builds} builds asked for, {', '.join(low)}"
        if self.largest_bound_eh > 0.0:
            text += f"; bound on a build's exchange-energy error at most {self.largest_bound_eh:.1e} Eh"
        if self.largest_bound_eh > 0.0 or self.fallbacks:
            text += f" (target {self.target_eh:.0e} Eh)"
        return text + f"; then {self.fp64_after} FP64 build{'s' if self.fp64_after != 1 else ''}"


def _words(label: str) -> str:
    """A KPlan label for the notes."""
    if label.startswith("ozaki:"):
        return f"the INT8 Ozaki split ({label[6:]} slices)"
    return {"tf32x3": "split TF32 (tf32x3)"}.get(label, label.upper())


def exchange_block(xp: ModuleType, flat: Any, c: Any, w: Any, nao: int, plan: KPlan) -> Any:
    """The K (nao, nao) of one block of rows of B, ``flat`` (nq nao, nao) (B^Q_mn as rows
    (Q, m)), for one density's C (nao, k) and w (k,): eqs. (1) and (2) by ``plan``'s scheme
    (not symmetrised)."""
    kw = {"precision": plan.scheme, "slices": plan.slices}
    k = int(c.shape[1])
    if not k:
        return xp.zeros((nao, nao))
    x = mgemm(flat, c, **kw)  # (1): X^Q_mi as rows (Q, m)
    x = x.reshape(-1, nao, k).transpose(1, 0, 2)  # (nao, nq, k)
    wx = xp.ascontiguousarray((x * w).reshape(nao, -1))
    return mgemm(wx, xp.ascontiguousarray(x.reshape(nao, -1)), transb=True, **kw)  # (2)
