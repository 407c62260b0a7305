"""RI-MP2 energy from B: (ia|jb) for blocks of occupied pairs and their energy sums, over
numpy or cupy.

For blocks of occupied orbitals i (and j <= i for one spin) the product (ia|jb) = B_i B_j^T
(Watson et al., MGEMM, eq. 20) is formed by mgemm's scheme for the requested precision, or,
for "mixed" on a device with ``calibrated_mixed``, by the INT8 Ozaki split with an
energy-calibrated slice count (:mod:`hartree.mp2.mixed_precision`), and the sums

    E_direct   = sum_ij w_ij sum_ab (ia|jb)^2 / D_ijab,
    E_exchange = sum_ij w_ij sum_ab (ia|jb)(ib|ja) / D_ijab,   D_ijab = e_i + e_j - e_a - e_b,

(w = 2 for j < i, 1 for j = i within one spin, 1 between spins; seed eq. 14 split into
E_OS and E_SS as in :mod:`hartree.mp2.rimp2`) are accumulated per block by the kernels of
:mod:`hartree.mp2.block_energy` (numba on numpy, CUDA on cupy).  Block sizes and mgemm's
tile budget come from the device (:class:`hartree.mp2.device.MP2Device`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import mixed_precision
from .block_energy import block_energy_sums, cuda_block_energy
from .device import GemmLog, MP2Device, gemm_nt, sync

__all__ = ["energies", "occupied_blocks", "PairBlock"]


def energies(device: MP2Device, spaces: list[tuple], stores: list, precision: str, log: GemmLog):
    """(E_OS, E_SS, nocc, nvir, calibration records) from the B tensors of one (RHF) or two
    (UHF) spins.  spaces: per spin (C_occ, C_vir, e_occ (no,), e_vir (nv,)) (only the
    energies are read); stores: per spin B (no nv, naux).  RHF: E_OS = E_direct,
    E_SS = E_direct - E_exchange; UHF: E_SS = 1/2 sum_spin (E_direct - E_exchange),
    E_OS = E_direct of the alpha-beta pairs.  With calibrated "mixed" each of the one (RHF)
    or three (UHF) pair sums gets an equal share of MIXED_TARGET_EH; nocc, nvir: ints (RHF)
    or (alpha, beta) tuples (UHF)."""
    xp = device.xp
    kernels = None if xp is np else cuda_block_energy(xp)
    calibration = []  # one record per pair sum (calibrated "mixed")

    def pair_sums(b1, b2, e1, e2, same, target):
        return _pair_sums(device, log, kernels, calibration, precision, b1, b2, *e1, *e2, same, target)

    target = mixed_precision.MIXED_TARGET_EH
    if len(spaces) == 1:
        _, _, eo, ev = spaces[0]
        d, x = pair_sums(stores[0], stores[0], (eo, ev), (eo, ev), True, target)
        return d, d - x, len(eo), len(ev), calibration
    e_ss = 0.0
    share = target / 3.0
    for s in (0, 1):
        _, _, eo, ev = spaces[s]
        d, x = pair_sums(stores[s], stores[s], (eo, ev), (eo, ev), True, share)
        e_ss += 0.5 * (d - x)
    (_, _, ao, av), (_, _, bo, bv) = spaces
    e_os, _ = pair_sums(stores[0], stores[1], (ao, av), (bo, bv), False, share)
    return e_os, e_ss, (len(ao), len(bo)), (len(av), len(bv)), calibration


def occupied_blocks(no1: int, no2: int, ni: int, nj: int, same: bool) -> list:
    """[(i0, i1, [(j0, j1), ...]), ...]: occupied blocks, j <= i when ``same``."""
    out = []
    for i0 in range(0, no1, ni):
        i1 = min(no1, i0 + ni)
        jend = i1 if same else no2
        out.append((i0, i1, [(j0, min(jend, j0 + nj)) for j0 in range(0, jend, nj)]))
    return out


def _pair_sums(device, log, kernels, calibration, precision, b1, b2, e1o, e1v, e2o, e2v, same, target):
    """(sum w (ia|jb)^2/D, sum w (ia|jb)(ib|ja)/D) over blocks of i and j (j <= i if same),
    b1 (no1*nv1, naux), b2 (no2*nv2, naux) B stores (device or host).

    Calibrated "mixed": (ia|jb) by the INT8 Ozaki split (hartree/linalg/ozaki.py) with the
    slice count S calibrated on the energy (mixed_precision.calibrate) and the diagonals
    consumed directly by the energy kernel; the rows of each i block are sliced once and
    reused over the j blocks.  Otherwise: mgemm's scheme and the stored-block kernel."""
    xp = device.xp
    no1, nv1, no2, nv2 = len(e1o), len(e1v), len(e2o), len(e2v)
    if min(no1, nv1, no2, nv2) == 0:
        return 0.0, 0.0
    naux = b1.shape[1]
    mixed = precision == "mixed" and device.calibrated_mixed
    ni, nj = device.pair_blocks(no1, nv1, no2, nv2, naux, mixed, same)
    ev = [xp.asarray(np.ascontiguousarray(e, dtype=np.float64)) for e in (e1o, e1v, e2o, e2v)]
    blk = PairBlock(device, log, kernels, calibration, ev, (e1o, e1v, e2o, e2v), same)
    acc = xp.zeros(2)
    plan = occupied_blocks(no1, no2, ni, nj, same)
    slices, done = None, None
    if mixed:  # the calibration block's sums (in the chosen scheme) are kept
        slices, first = mixed_precision.calibrate(blk, b1, b2, plan, nv1, nv2, (no1, no2), target)
        acc += xp.asarray(first)
        done = (plan[0][0], plan[0][2][0][0])
    # reverse-order slices of the j blocks are kept for reuse when the device has room
    # (one slicing pass per j block instead of one per block pair)
    keep = slices is not None and device.keep_j_slices(slices, no2 * nv2, naux)
    jslices = {}
    for i0, i1, js in plan:
        bi = xp.asarray(b1[i0 * nv1 : i1 * nv1])
        qa = None
        for j0, j1 in js:
            if (i0, j0) == done:
                continue
            diag = same and j0 == i0 and j1 == i1
            if slices:
                if qa is None:
                    qa = blk.slice(bi, slices, False)
                qb = jslices.get(j0)
                if qb is None:
                    bj = bi if diag else xp.asarray(b2[j0 * nv2 : j1 * nv2])
                    qb = blk.slice(bj, slices, True)
                    if keep:
                        jslices[j0] = qb
                blk.ozaki(qa, qb, slices, i0, i1, j0, j1, acc)
            else:
                bj = bi if diag else xp.asarray(b2[j0 * nv2 : j1 * nv2])
                p = "fp64" if mixed else precision
                blk.stored(bi, bj, p, i0, i1, j0, j1, acc)
    acc = acc.get() if xp is not np else acc
    return float(acc[0]), float(acc[1])


class PairBlock:
    """(ia|jb) blocks of one pair sum and their energy sums, added to an accumulator
    acc (2,) of xp: (direct, exchange).  ev_dev: (e1o, e1v, e2o, e2v) as xp float64 arrays;
    ev_host: the same as given (numpy); kernels: the CUDA launcher (cupy) or None (numpy:
    block_energy_sums); calibration: the list the "mixed" calibration records go to."""

    def __init__(
        self,
        device: MP2Device,
        log: GemmLog,
        kernels: Any,
        calibration: list,
        ev_dev: list,
        ev_host: tuple,
        same: bool,
    ):
        self.device, self.log, self.kernels, self.calibration = device, log, kernels, calibration
        self.ev, self.eh, self.same = ev_dev, ev_host, same

    def _grid(self, i0, i1, j0, j1):
        nv1, nv2 = len(self.eh[1]), len(self.eh[3])
        return ((i1 - i0) * (j1 - j0), (nv1 + 31) // 32, (nv2 + 31) // 32)

    def _tail(self, i0, i1, j0, j1, acc):
        nv1, nv2 = len(self.eh[1]), len(self.eh[3])
        return [
            np.int32(i1 - i0),
            np.int32(nv1),
            np.int32(j1 - j0),
            np.int32(nv2),
            *self.ev,
            np.int32(i0),
            np.int32(j0),
            np.int32(1 if self.same else 0),
            acc,
        ]

    def _cpu_energy(self, v, i0, i1, j0, j1, acc):
        e1o, e1v, e2o, e2v = self.eh
        d, x = block_energy_sums(
            np.ascontiguousarray(v).reshape(i1 - i0, len(e1v), j1 - j0, len(e2v)), e1o, e1v, e2o, e2v, i0, j0, self.same
        )
        acc += (d, x)

    def stored(self, bi, bj, precision, i0, i1, j0, j1, acc):
        """(ia|jb) = bi bj^T by mgemm (``precision``), then the stored-block kernel."""
        xp, log = self.device.xp, self.log
        t = time.perf_counter()
        v, info = gemm_nt(bi, bj, precision, self.device.gemm_budget("(ia|jb)"))
        v = xp.ascontiguousarray(v)
        sync(xp)
        log.gemm("(ia|jb)", precision, info, bi.size + bj.size, time.perf_counter() - t)
        t = time.perf_counter()
        if xp is np:
            self._cpu_energy(v, i0, i1, j0, j1, acc)
        else:
            kname = "mp2_block_energy_f32" if v.dtype == np.float32 else "mp2_block_energy_f64"
            self.kernels.launch(
                kname, self._grid(i0, i1, j0, j1), (32, 8), [v, np.int64(v.shape[1])] + self._tail(i0, i1, j0, j1, acc)
            )
        del v
        sync(xp)
        log.add("energy", "fp64 kernel", time.perf_counter() - t)

    def slice(self, b, nslice, reverse):
        """Ozaki slices of the rows of b (rows, naux): (slices, inv_scale (rows,))."""
        xp = self.device.xp
        t = time.perf_counter()
        if xp is np:
            from hartree.linalg import ozaki

            q, inv = ozaki.slice_rows(np, b, nslice, reverse=reverse)
        else:
            from hartree.linalg import mgemm_gpu

            q, inv = mgemm_gpu.slice_rows_int8(b, nslice, reverse=reverse)
        sync(xp)
        self.log.add("slices", f"ozaki {nslice} slices (INT8)", time.perf_counter() - t)
        return q, inv.reshape(-1)

    def ozaki(self, qa, qb, nslice, i0, i1, j0, j1, acc):
        """(ia|jb) by the INT8 Ozaki diagonals (S INT8 GEMMs) and the fused energy kernel."""
        xp, log = self.device.xp, self.log
        (sa, ia), (sb, ib) = qa, qb
        m, n = (i1 - i0) * len(self.eh[1]), (j1 - j0) * len(self.eh[3])
        t = time.perf_counter()
        scheme = f"ozaki INT8, {nslice} slices ({nslice} INT8 GEMMs, {nslice * (nslice + 1) // 2} slice products)"
        if xp is np:
            from hartree.linalg import ozaki

            v = ozaki.diagonal_products(np, sa, sb, nslice, lambda x, y: x @ y.T)
            v = v / ia[:, None] / ib[None, :]
            log.add("(ia|jb)", scheme, time.perf_counter() - t)
            t = time.perf_counter()
            self._cpu_energy(v[:m, :n], i0, i1, j0, j1, acc)
        else:
            from hartree.linalg import mgemm_gpu

            p = mgemm_gpu.ozaki_diagonals(sa, sb, nslice)
            sync(xp)
            log.add("(ia|jb)", scheme, time.perf_counter() - t)
            t = time.perf_counter()
            self.kernels.launch(
                f"mp2_block_energy_ozaki{nslice}",
                self._grid(i0, i1, j0, j1),
                (32, 8),
                [
                    p,
                    np.int64(p.shape[1] * p.shape[2]),
                    np.int64(p.shape[2]),
                    np.float64(2.0 ** (-7 * (nslice + 1))),
                    1.0 / ia,
                    1.0 / ib,
                ]  # exact: 2^e
                + self._tail(i0, i1, j0, j1, acc),
            )
            del p
        sync(xp)
        log.add("energy", "fp64 kernel on ozaki INT32 diagonals", time.perf_counter() - t)
