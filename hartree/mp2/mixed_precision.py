"""precision="mixed" on the GPU: (ia|jb) by the INT8 Ozaki split with a slice count
calibrated on the MP2 energy.

The mixed-precision idea of Watson et al. (MGEMM: the bulk of the (ia|jb) GEMM work in
low precision, the accuracy kept where the energy needs it) carried to integer tensor
cores: the rows of B are scaled by powers of two and cut into S 7-bit slices rounded to
nearest (hartree/linalg/ozaki.py eq. 1; Ootomo, Ozaki, Yokota, IJHPCA 38, 297 (2024)),
(ia|jb) is the sum of S INT8 GEMMs, exact in INT32 (eq. 2), and S is chosen on the ENERGY:
the first block pair in FP64 and with S = 2, 3, ... slices; the block's energy error
extrapolated per occupied pair must stay below MIXED_TARGET_EH / MIXED_SAFETY (0.1 kcal/mol
/ 10), else FP64.  B = (ia|P) M^T stays in FP64 (M = L^-1 spans many orders of magnitude).
Measured on CPU butane/cc-pVDZ: relative MP2 energy errors 3e-5 (S = 2), 1.4e-8 (S = 3),
fp32 1.4e-8.  (A split-TF32 "mixed" was 0.62 kcal/mol off for valinomycin: TF32
tensor-core truncation and FP32 accumulation bias the sums of squares.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hartree.linalg import gemm_precision

__all__ = ["calibrate", "calibration_note", "MIXED_TARGET_EH", "MIXED_SLICES", "MIXED_SAFETY"]

#: "mixed" RI-MP2: the goal for the energy error of the INT8 Ozaki (ia|jb), Eh (0.1 kcal/mol)
MIXED_TARGET_EH = 0.1 / 627.509474
#: slice counts tried by the calibration, fewest first
MIXED_SLICES = (2, 3, 4, 5)
#: the calibration accepts S when the extrapolated error is below the target / this factor
MIXED_SAFETY = 10.0


def calibrate(blk: Any, b1: Any, b2: Any, plan: list, nv1: int, nv2: int, nocc: tuple[int, int], target: float):
    """Slice count S of the Ozaki (ia|jb) for "mixed", calibrated on the energy: the first
    block pair (i, j in the first occupied blocks of ``plan``) is evaluated in FP64 and with
    S = 2, 3, ... slices; the error of the block's energy sums, 2 |dE_direct| +
    |dE_exchange|, is scaled by (all weighted pairs / the block's weighted pairs) -- the
    slicing error per pair does not decay with the i-j distance the way the pair energies
    do, so the absolute error per pair is extrapolated, not the relative one -- and the
    first S whose extrapolated error is below ``target`` / MIXED_SAFETY is taken, if the
    cost model predicts the split faster than DGEMM (gemm_precision.ozaki_seconds vs
    dgemm_seconds; on cupy only); else None (FP64).

    blk: the pair_energy.PairBlock of this pair sum (device, log, calibration records);
    b1 (no1 nv1, naux), b2 (no2 nv2, naux): B stores; nocc: (no1, no2).
    Returns (S or None, the block's (direct, exchange) sums in that scheme, numpy (2,))."""
    device, log = blk.device, blk.log
    xp = device.xp
    i0, i1, js = plan[0]
    j0, j1 = js[0]
    same = blk.same
    bi = xp.asarray(b1[i0 * nv1 : i1 * nv1])
    bj = bi if (same and j0 == i0 and j1 == i1) else xp.asarray(b2[j0 * nv2 : j1 * nv2])
    m, n, k = bi.shape[0], bj.shape[0], bi.shape[1]
    pairs_blk = float(
        sum((2.0 if (same and j < i) else 1.0) for i in range(i0, i1) for j in range(j0, j1) if not (same and j > i))
    )
    pairs_all = float(nocc[0] * nocc[1])
    log.prefix = "calibration "
    ref = xp.zeros(2)
    blk.stored(bi, bj, "fp64", i0, i1, j0, j1, ref)
    ref = ref.get() if xp is not np else ref
    rec = {
        "block": (m, n, k),
        "pairs_block": pairs_blk,
        "pairs_all": pairs_all,
        "target_eh": target,
        "fp64": [float(ref[0]), float(ref[1])],
        "tried": [],
    }
    blk.calibration.append(rec)
    chosen = None
    t64 = gemm_precision.dgemm_seconds(m, n, k)
    for s in MIXED_SLICES:
        if xp is not np and gemm_precision.ozaki_seconds(m, n, k, s) * gemm_precision.GPU_SPLIT_GAIN > t64:
            rec["tried"].append({"slices": s, "skipped": "predicted slower than DGEMM"})
            break
        out = xp.zeros(2)
        blk.ozaki(blk.slice(bi, s, False), blk.slice(bj, s, True), s, i0, i1, j0, j1, out)
        out = out.get() if xp is not np else out
        err = 2.0 * abs(float(out[0]) - float(ref[0])) + abs(float(out[1]) - float(ref[1]))
        est = err * pairs_all / max(pairs_blk, 1.0)
        rec["tried"].append({"slices": s, "block_error_eh": err, "estimated_error_eh": est})
        if est <= target / MIXED_SAFETY:
            chosen, ref = s, out
            break
    log.prefix = ""
    rec["slices"] = chosen
    return chosen, np.array([float(ref[0]), float(ref[1])])


def calibration_note(rec: dict) -> str:
    """One line on a "mixed" calibration record (see calibrate)."""
    tried = ", ".join(
        f"S={t['slices']}: {t['estimated_error_eh']:.1e} Eh"
        if "skipped" not in t
        else f"S={t['slices']}: {t['skipped']}"
        for t in rec["tried"]
    )
    chosen = (
        f"ozaki INT8 with {rec['slices']} slices"
        if rec["slices"]
        else "fp64 (no slice count met the target faster than DGEMM)"
    )
    return (
        f"mixed: (ia|jb) by {chosen}; calibrated on the energy of a "
        f"{rec['block'][0]}x{rec['block'][1]}x{rec['block'][2]} block against FP64, "
        f"extrapolated errors {tried} (target {rec['target_eh']:.1e} Eh / "
        f"{MIXED_SAFETY:g})"
    )
