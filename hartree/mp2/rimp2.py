"""RI-MP2 energies for RHF and UHF references, written once for the CPU and the GPU.

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

The steps (frozen core, metric factor, three-index transformation, B, blocked pair sums,
the calibrated "mixed" precision) are written here and in :mod:`hartree.mp2.fitting`,
:mod:`hartree.mp2.pair_energy` and :mod:`hartree.mp2.mixed_precision` over numpy or cupy
arrays; the integrals, where the tensors live and the memory budgets come from the device
(:class:`hartree.mp2.device.MP2Device`): :class:`hartree.mp2.cpu_device.CPUDevice` (numba
integrals, numpy, memory or HDF5 storage) or :class:`hartree.mp2.gpu_device.GPUDevice`
(generated CUDA integrals, cupy, device or pinned host storage).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from hartree.errors import InputError
from hartree.mp2.auxiliary_basis import load_aux_basis
from hartree.mp2.result import MP2Result

from . import fitting, pair_energy
from .cpu_device import CPUDevice
from .device import MP2Device, sync
from .mixed_precision import calibration_note
from .options import MP2Options

if TYPE_CHECKING:
    from hartree.scf.result import SCFResult

__all__ = ["MP2Options", "kernel", "run", "frozen_core_count"]

# Frozen core per element: the previous noble-gas shell (He, Ne, Ar, Kr, Xe, Rn cores,
# counted in doubly occupied orbitals).  PySCF's chemcore differs for groups 1-2 and 3-12.
_NOBLE_CORES = ((2, 1), (10, 5), (18, 9), (36, 18), (54, 27), (86, 43))  # (Z, orbitals)


def frozen_core_count(numbers: Iterable[int]) -> int:
    """Number of frozen core orbitals (per spin) for atomic numbers ``numbers``: for each atom
    the orbitals of the largest noble gas with a smaller Z (Li-Ne: 1, Na-Ar: 5, ...)."""
    total = 0
    for z in numbers:
        total += max((n for zg, n in _NOBLE_CORES if zg < z), default=0)
    return total


def _spaces(scf, nfrozen):
    """Per spin: (C_occ active (nao, no), C_vir (nao, nv), e_occ, e_vir) numpy arrays."""
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


def kernel(scf_result: SCFResult, options: MP2Options) -> MP2Result:
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
        from .gpu_device import GPUDevice

        device = GPUDevice.from_options(options, mol, basis, aux)
    else:
        device = CPUDevice(basis, aux, options)
    return _run(device, scf_result, options, spaces, aux, nfrozen, t0)


def _run(
    device: MP2Device, scf_result: SCFResult, options: MP2Options, spaces, aux, nfrozen: int, t0: float
) -> MP2Result:
    """The RI-MP2 steps on ``device``; an MP2Result (wall time from ``t0``)."""
    xp = device.xp
    timings, log = {}, device.new_log()
    device.prepare(timings)
    t = time.perf_counter()
    m = fitting.padded_metric_factor(xp, device.two_index())
    sync(xp)
    timings["metric"] = time.perf_counter() - t
    precision = options.precision
    # "mixed" with the calibrated (ia|jb): B in FP64 (L^-1 spans many orders of magnitude)
    b_precision = "fp64" if precision == "mixed" and device.calibrated_mixed else precision
    t = time.perf_counter()
    with device.stores([co.shape[1] * cv.shape[1] for co, cv, _, _ in spaces], aux.nao) as stores:
        device.three_index(spaces, stores)
        sync(xp)
        timings["three_index"] = time.perf_counter() - t
        t = time.perf_counter()
        for st in stores:
            fitting.fitted_b_inplace(device, st, m, b_precision, log)
        del m
        sync(xp)
        timings["B"] = time.perf_counter() - t
        t = time.perf_counter()
        e_os, e_ss, nocc, nvir, calibration = pair_energy.energies(device, spaces, stores, precision, log)
    timings["energy"] = time.perf_counter() - t
    timings.update(log.stage_timings())
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
        precision=log.precision_label(precision),
        device=device.description(),
        wall_time=time.perf_counter() - t0,
        timings=timings,
        gemm=log.records(),
        notes=[calibration_note(c) for c in calibration],
        calibration=calibration,
    )


def _use_gpu(options: MP2Options) -> bool:
    """True for device 'gpu' (DeviceError without a usable GPU, unless a backend is given)
    and for 'auto' when a GPU is usable."""
    if options.device == "cpu":
        return False
    if options.gpu_backend is not None:
        return True
    from hartree.device.selection import gpu_status

    ok, why = gpu_status()
    if options.device == "gpu" and not ok:
        from hartree.errors import DeviceError

        raise DeviceError(f"GPU RI-MP2 was asked for but no CUDA GPU is usable: {why}")
    return ok


def run(
    scf_result: SCFResult, aux: object = None, frozen_core: bool | int = False, precision: str = "fp64", **options
) -> MP2Result:
    """RI-MP2 on top of an SCF result; keywords as MP2Options (a typo raises TypeError)."""
    return kernel(scf_result, MP2Options(aux=aux, frozen_core=frozen_core, precision=precision, **options))
