"""RI-MP2 energies for RHF and UHF references (CPU; GEMMs through hartree.linalg.mgemm).

Equations (seed: Watson et al., eqs. 14, 18, 20, 21; Weigend & Haeser, Theor. Chem. Acc.
97, 331 (1997); Feyereisen, Fitzgerald, Komornicki, Chem. Phys. Lett. 208, 359 (1993)):

    (ia|P)  = sum_mu,nu C_mu,i C_nu,a (mu nu|P)            (eq. 15's transform on (mu nu|P))
    V_PQ    = (P|Q) = L L^T,  B_ia,Q = sum_P (ia|P) [L^-1]_Q,P
              (eq. 21 with the Cholesky factor for V^-1/2: B B^T is the same)
    (ia|jb) ~= sum_Q B_ia,Q B_jb,Q                                         (eqs. 18, 20; GEMM)
    D_ijab  = e_i + e_j - e_a - e_b
    RHF:  E_OS = sum_ijab (ia|jb)^2 / D,
          E_SS = sum_ijab (ia|jb) [(ia|jb) - (ib|ja)] / D           (E_OS + E_SS = eq. 14)
    UHF:  E_OS = sum_iJaB (ia|JB)^2 / D,
          E_SS = 1/2 sum_spin sum_ijab (ia|jb) [(ia|jb) - (ib|ja)] / D   (same spin)
    E_MP2 = E_OS + E_SS,   E_SCS = 6/5 E_OS + 1/3 E_SS (Grimme, J. Chem. Phys. 118, 9095 (2003)).

Memory: (mu nu|P) is built in aux-shell batches of at most ``memory_mb`` and transformed at
once to (ia|P) (nocc nvir naux floats per spin, in host memory or, with storage="disk", in a
temporary HDF5 file), which is turned into B in place, in row blocks of at most
``memory_mb``; (ia|jb) is formed for blocks of occupied i and j so that one block stays
within ``memory_mb``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass

import numba
import numpy as np
import scipy.linalg

from hartree.errors import InputError
from hartree.integrals.three_center import int2c2e, mo_int3c2e
from hartree.linalg.mgemm import PRECISIONS, mgemm
from hartree.mp2.auxiliary_basis import load_aux_basis
from hartree.mp2.result import MP2Result

__all__ = ["MP2Options", "kernel", "run", "frozen_core_count", "metric_factor"]

# Frozen core per element: the previous noble-gas shell (He, Ne, Ar, Kr, Xe, Rn cores,
# counted in doubly occupied orbitals).  PySCF's chemcore differs for groups 1-2 and 3-12.
_NOBLE_CORES = ((2, 1), (10, 5), (18, 9), (36, 18), (54, 27), (86, 43))  # (Z, orbitals)


def frozen_core_count(numbers):
    """Number of frozen core orbitals (per spin) for atomic numbers ``numbers``: for each atom
    the orbitals of the largest noble gas with a smaller Z (Li-Ne: 1, Na-Ar: 5, ...)."""
    total = 0
    for z in numbers:
        total += max((n for zg, n in _NOBLE_CORES if zg < z), default=0)
    return total


@dataclass(frozen=True)
class MP2Options:
    """aux: auxiliary basis (None: default for the orbital basis; name, path, dict or Basis);
    device: 'cpu', 'gpu' (rimp2_gpu.py; DeviceError without a GPU) or 'auto';
    frozen_core: False/True (noble-gas cores) or an int number of frozen orbitals per spin;
    precision: mgemm scheme for the B and (ia|jb) GEMMs; memory_mb: bound on the large
    intermediates ((mu nu|P) batch, (ia|jb) block), MB; gemm_memory_budget: mgemm's tile
    budget in bytes (None: no cleaving); storage: where the (ia|P)/B tensors live, "memory"
    or "disk" (an HDF5 file in a temporary directory under ``scratch_dir``, removed after).
    GPU only: gpu_memory_mb: device memory budget (None: 85% of the free memory); gpu_host_store:
    keep (ia|P)/B in host memory even when it fits the device; aux_batch: largest aux batch
    (cartesian functions) of the three-index step; gpu_backend: a hartree.gpu backend
    (e.g. EmulatedBackend for tests without a GPU; None: CUDA)."""

    aux: object = None
    frozen_core: object = False
    precision: str = "fp64"
    memory_mb: float = 2000.0
    gemm_memory_budget: int | None = None
    storage: str = "memory"
    scratch_dir: str | None = None
    device: str = "cpu"
    gpu_memory_mb: float | None = None
    gpu_host_store: bool = False
    aux_batch: int | None = None
    gpu_backend: object = None

    def __post_init__(self):
        if self.storage not in ("memory", "disk"):
            raise InputError(f"MP2 storage must be 'memory' or 'disk', got {self.storage!r}")
        if self.device not in ("cpu", "gpu", "auto"):
            raise InputError(f"MP2 device must be 'cpu', 'gpu' or 'auto', got {self.device!r}")
        if self.precision not in PRECISIONS:
            raise InputError(f"unknown MP2 precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}")
        if self.memory_mb <= 0:
            raise InputError("memory_mb must be positive")


def metric_factor(v):
    """M (naux, naux) with V^-1 = M^T M: the inverse Cholesky factor L^-1 of V = L L^T; when V
    is numerically singular, the eigen-decomposition inverse square root keeping eigenvalues
    above 1e-12 max (rows of M then number fewer than naux)."""
    try:
        low = scipy.linalg.cholesky(v, lower=True)
        return scipy.linalg.solve_triangular(low, np.eye(v.shape[0]), lower=True)
    except np.linalg.LinAlgError:
        w, u = np.linalg.eigh(v)
        keep = w > 1e-12 * w.max()
        return (u[:, keep] / np.sqrt(w[keep])).T


def _spaces(scf, nfrozen):
    """Per spin: (C_occ active (nao, no), C_vir (nao, nv), e_occ, e_vir)."""
    method = scf.method.lower()
    if method == "rhf":
        sets = [(scf.mo_coeff, scf.mo_energy, scf.mo_occ)]
    elif method == "uhf":
        sets = [(scf.mo_coeff[s], scf.mo_energy[s], scf.mo_occ[s]) for s in (0, 1)]
    else:
        raise InputError(f"RI-MP2 needs an RHF or UHF reference, got {scf.method.upper()}")
    out = []
    for c, e, occ in sets:
        c, e, occ = np.asarray(c), np.asarray(e), np.asarray(occ)
        o = np.flatnonzero(occ > 0)
        v = np.flatnonzero(occ == 0)
        if nfrozen > len(o):
            raise InputError(f"cannot freeze {nfrozen} core orbitals with only {len(o)} occupied")
        o = o[nfrozen:]
        out.append((c[:, o], c[:, v], e[o], e[v]))
    return out


def _gemm(a, b, opts, log, step, **kw):
    c, info = mgemm(a, b, precision=opts.precision, memory_budget=opts.gemm_memory_budget, return_info=True, **kw)
    rec = log.setdefault(
        step,
        {
            "step": step,
            "precision": info.precision,
            "calls": 0,
            "tiles": 0,
            "low_precision_gemms": 0,
            "seconds": 0.0,
            "large_elements": 0,
            "elements": 0,
        },
    )
    rec["calls"] += 1
    rec["large_elements"] += sum(info.n_large)
    rec["elements"] += a.size + b.size
    rec["tiles"] += info.tiles
    rec["low_precision_gemms"] += info.low_precision_gemms
    rec["seconds"] += info.wall_time
    return c


def _to_b_inplace(iap, m, opts, log):
    """B = (ia|P) M^T (eq. 21), overwriting ``iap`` (nocc*nvir, naux; array or h5py dataset)
    row block by row block so that only one three-index tensor is held; returns ``iap``."""
    nrow, naux = iap.shape
    if m.shape[0] != naux:  # singular metric: zero rows keep B's width (B B^T unchanged)
        m = np.vstack([m, np.zeros((naux - m.shape[0], naux))])
    rows = max(1, int(opts.memory_mb * 1e6 / (8 * 2 * naux)))
    for r0 in range(0, nrow, rows):
        r1 = min(nrow, r0 + rows)
        iap[r0:r1] = _gemm(np.asarray(iap[r0:r1]), m, opts, log, "B", transb=True)
    return iap


def _block_sizes(no1, nv1, no2, nv2, memory_mb):
    """(ni, nj): occupied block sizes so that one (ia|jb) block, ni nv1 nj nv2 floats, takes at
    most half of ``memory_mb`` (the rest: GEMM temporaries, B rows read from the store)."""
    elems = max(1, int(memory_mb * 1e6 / 8 / 2))
    if nv1 * no2 * nv2 <= elems:
        return max(1, elems // max(1, nv1 * no2 * nv2)), no2
    return 1, max(1, elems // max(1, nv1 * nv2))


def _pair_sums(b1, b2, e1o, e1v, e2o, e2v, opts, log, same):
    """sum (ia|jb)^2/D and, with ``same`` (b1 is b2: one spin), also sum (ia|jb)(ib|ja)/D, over
    i in spin 1 and j in spin 2; b1 (no1*nv1, naux), b2 (no2*nv2, naux): arrays or row-sliceable
    stores (h5py datasets).

    (ia|jb) by eq. 20 (mgemm) for blocks of i and j (memory bound ``memory_mb``).  For
    ``same`` the pair sums are symmetric in i <-> j, so only j <= i is formed, weighting
    j < i twice (half the GEMM work).
    """
    no1, nv1, no2, nv2 = len(e1o), len(e1v), len(e2o), len(e2v)
    ni, nj = _block_sizes(no1, nv1, no2, nv2, opts.memory_mb)
    direct = exch = 0.0
    for i0 in range(0, no1, ni):
        i1 = min(no1, i0 + ni)
        bi = np.asarray(b1[i0 * nv1 : i1 * nv1])
        for j0 in range(0, i1 if same else no2, nj):
            j1 = min(i1 if same else no2, j0 + nj)
            bj = bi if (same and (j0, j1) == (i0, i1)) else np.asarray(b2[j0 * nv2 : j1 * nv2])
            v = _gemm(bi, bj, opts, log, "(ia|jb)", transb=True)
            d, x = _block_energy(v.reshape(i1 - i0, nv1, j1 - j0, nv2), e1o, e1v, e2o, e2v, i0, j0, same)
            direct += d
            exch += x
    return direct, exch


@numba.njit(cache=True, parallel=True)
def _block_energy(v, e1o, e1v, e2o, e2v, i0, j0, same):
    """(sum w (ia|jb)^2 / D, sum w (ia|jb)(ib|ja) / D) for the block v[i - i0, a, j - j0, b] =
    (ia|jb), D = e_i + e_j - e_a - e_b; w = 1 unless ``same``, then 2 (j < i), 1 (j = i),
    0 (j > i); the exchange sum only with ``same`` (nv1 = nv2 then).  Per-pair partial sums
    go to arrays summed afterwards (no parfor reduction variables: some numba versions
    reject conditional reductions)."""
    ni, nv1, nj, nv2 = v.shape
    pd = np.zeros(ni * nj)
    px = np.zeros(ni * nj)
    for ij in numba.prange(ni * nj):
        ii = ij // nj
        jj = ij % nj
        i = i0 + ii
        j = j0 + jj
        w = 1.0
        if same and j > i:
            w = 0.0
        elif same and j < i:
            w = 2.0
        if w > 0.0:
            eij = e1o[i] + e2o[j]
            blk = np.ascontiguousarray(v[ii, :, jj, :])  # (ia|jb) for this (i, j)
            sd = 0.0
            sx = 0.0
            for a in range(nv1):
                ea = eij - e1v[a]
                for b in range(nv2):
                    iajb = blk[a, b]
                    t = iajb / (ea - e2v[b])
                    sd += t * iajb
                    if same:
                        sx += t * blk[b, a]
            pd[ij] = w * sd
            px[ij] = w * sx
    return pd.sum(), px.sum()


def kernel(scf_result, options: MP2Options) -> MP2Result:
    """RI-MP2 energy for a converged RHF/UHF ``scf_result`` (hartree.scf.SCFResult)."""
    t0 = time.perf_counter()
    mol, basis = scf_result.molecule, scf_result.basis
    aux = load_aux_basis(mol, basis, options.aux)
    fc = options.frozen_core
    nfrozen = frozen_core_count(mol.numbers) if fc is True else int(fc) if fc else 0
    if nfrozen < 0:
        raise InputError("frozen_core must be True/False or a non-negative count")
    if not scf_result.converged:
        raise InputError("RI-MP2 needs a converged SCF reference; this one did not converge")
    spaces = _spaces(scf_result, nfrozen)
    if _use_gpu(options):
        from hartree.mp2.rimp2_gpu import kernel_gpu

        return kernel_gpu(scf_result, options, spaces, aux, nfrozen, options.gpu_backend)
    timings, log = {}, {}
    t = time.perf_counter()
    m = metric_factor(int2c2e(aux))
    timings["metric"] = time.perf_counter() - t
    t = time.perf_counter()
    with _store(options, [co.shape[1] * cv.shape[1] for co, cv, _, _ in spaces], aux.nao) as st:
        mo_int3c2e(basis, aux, [(co, cv) for co, cv, _, _ in spaces], options.memory_mb, out=st)
        timings["three_index"] = time.perf_counter() - t
        t = time.perf_counter()
        bs = [_to_b_inplace(x, m, options, log) for x in st]
        timings["B"] = time.perf_counter() - t
        t = time.perf_counter()
        e_os, e_ss, nocc, nvir = _energies(spaces, bs, options, log)
    timings["energy"] = time.perf_counter() - t
    return MP2Result(
        reference=scf_result.method.lower(),
        scf_energy=float(scf_result.energy),
        correlation_energy=e_os + e_ss,
        opposite_spin=e_os,
        same_spin=e_ss,
        frozen_core=nfrozen,
        nocc=nocc,
        nvir=nvir,
        aux_basis=aux.name,
        naux=aux.nao,
        precision=options.precision,
        device=f"cpu (numba + numpy; three-index tensors in {options.storage})",
        wall_time=time.perf_counter() - t0,
        timings=timings,
        gemm=list(log.values()),
    )


def _energies(spaces, bs, options, log):
    """(E_OS, E_SS, nocc, nvir) from the B tensors of one (RHF) or two (UHF) spins."""
    if len(spaces) == 1:
        _, _, eo, ev = spaces[0]
        direct, exch = _pair_sums(bs[0], bs[0], eo, ev, eo, ev, options, log, True)
        e_os, e_ss = direct, direct - exch
        nocc, nvir = len(eo), len(ev)
    else:
        e_ss = 0.0
        for s in (0, 1):
            _, _, eo, ev = spaces[s]
            direct, exch = _pair_sums(bs[s], bs[s], eo, ev, eo, ev, options, log, True)
            e_ss += 0.5 * (direct - exch)
        (_, _, ao, av), (_, _, bo, bv) = spaces
        e_os, _ = _pair_sums(bs[0], bs[1], ao, av, bo, bv, options, log, False)
        nocc, nvir = (len(ao), len(bo)), (len(av), len(bv))
    return e_os, e_ss, nocc, nvir


def _use_gpu(options):
    """True for device 'gpu' (DeviceError without a usable GPU, unless a backend is given)
    and for 'auto' when a GPU is usable."""
    if options.device == "cpu":
        return False
    if options.gpu_backend is not None:
        return True
    from hartree.gpu.device import gpu_status

    ok, why = gpu_status()
    if options.device == "gpu" and not ok:
        from hartree.errors import DeviceError

        raise DeviceError(f"GPU RI-MP2 was asked for but no CUDA GPU is usable: {why}")
    return ok


@contextlib.contextmanager
def _store(options, rows, naux):
    """One (rows[s], naux) float64 store per spin: numpy arrays, or datasets of a temporary
    HDF5 file (chunked by row blocks) that is deleted on exit."""
    if options.storage == "memory":
        yield [np.empty((r, naux)) for r in rows]
        return
    import h5py

    with tempfile.TemporaryDirectory(prefix="hartree-mp2-", dir=options.scratch_dir) as tmp:
        with h5py.File(os.path.join(tmp, "ia_P.h5"), "w") as f:
            yield [
                f.create_dataset(
                    f"spin{s}",
                    shape=(r, naux),
                    dtype="f8",
                    chunks=(max(1, min(r, max(1, (1 << 20) // naux))), naux) if r else None,
                )
                for s, r in enumerate(rows)
            ]


def run(scf_result, aux=None, frozen_core=False, precision="fp64", **options) -> MP2Result:
    """RI-MP2 on top of an SCF result; keywords as MP2Options (a typo raises TypeError)."""
    return kernel(scf_result, MP2Options(aux=aux, frozen_core=frozen_core, precision=precision, **options))
