"""Analytic nuclear gradients of RHF, UHF and ROHF energies.

For a converged SCF determinant (Pople, Krishnan, Schlegel & Binkley, Int. J. Quantum Chem.
Symp. 13, 225 (1979)):

    dE/dR = dE_nuc/dR + sum_mn D_mn dh_mn/dR - sum_mn W_mn dS_mn/dR
            + 1/2 sum_mnls Gamma_mnls d(mn|ls)/dR                                  (1)

with D the total density, h = T + V (its nuclei moving), Gamma the two-particle density of
:mod:`hartree.integrals.eri_deriv` and W the energy-weighted density, the Lagrange
multiplier of the orthonormality constraint:

    RHF:  W = 2 sum_i e_i c_i c_i^T                       (canonical orbitals)
    UHF:  W = sum_s sum_(i in s) e_is c_is c_is^T
    ROHF: W = sum_s D_s F_s D_s,  F_s = h + J(D_a + D_b) - K(D_s)                     (2)

(ROHF orbitals are not canonical for either spin Fock matrix; eq. (2) is the occupied block
of each, which at convergence is the Lagrangian; PySCF's ``grad.rohf`` makes the same
choice).  The integral terms come from the engine's ``one_electron_gradient`` and
``two_electron_gradient`` (:class:`hartree.engine.IntegralEngine`).  The gradient is only as
accurate as the SCF: its error is first order in the density's, so :func:`gradient` converges
tighter than an energy run (``GRADIENT_SCF_DEFAULTS``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from hartree.arrays import to_numpy
from hartree.errors import InputError
from hartree.gradients.result import GradientResult

#: SCF convergence for a gradient (hartree; the commutator norm as ``SCFOptions.conv_tol_grad``)
GRADIENT_SCF_DEFAULTS = {"conv_tol": 1e-9, "conv_tol_grad": 1e-7}


def _densities(result):
    """(D_alpha, D_beta) numpy (nao, nao) of an SCFResult (RHF: D/2 each)."""
    dm = np.asarray(result.density)
    if result.method == "rhf":
        half = 0.5 * (dm[0] if dm.ndim == 3 else dm)
        return half, half
    return dm[0], dm[1]


def energy_weighted_density(result, engine) -> np.ndarray:
    """W of eq. (2), numpy (nao, nao); ``engine`` builds the Fock matrices of ROHF."""
    C = np.asarray(result.mo_coeff)
    e = np.asarray(result.mo_energy)
    occ = np.asarray(result.mo_occ)
    if result.method in ("rhf", "uhf"):
        if result.method == "rhf":
            C, e, occ = C[None], e[None], occ[None]
        w = np.zeros((C.shape[1], C.shape[1]))
        for s in range(C.shape[0]):
            co = C[s][:, occ[s] > 0] * (occ[s][occ[s] > 0] * e[s][occ[s] > 0])
            w += co @ C[s][:, occ[s] > 0].T
        return w
    da, db = _densities(result)
    h = to_numpy(engine.hcore())
    j, k = engine.jk(np.stack([da, db]))
    j, k = to_numpy(j), to_numpy(k)
    w = np.zeros_like(da)
    for d, ks in ((da, k[0]), (db, k[1])):
        f = h + j[0] + j[1] - ks
        w += d @ f @ d
    return 0.5 * (w + w.T)


def _refuse_dft(method):
    """InputError for a Kohn-Sham method: its gradient (the XC term) is not written yet."""
    if str(method).lower() in ("rks", "uks"):
        raise InputError(
            f"analytic gradients of Kohn-Sham DFT ({str(method).upper()}) are not implemented yet; "
            "only RHF, UHF and ROHF have them"
        )


def scf_gradient(result, engine=None) -> GradientResult:
    """The analytic gradient, eq. (1), of a converged SCFResult (RHF, UHF or ROHF).

    engine: an :class:`hartree.engine.IntegralEngine` on ``result.molecule`` and
    ``result.basis`` (default: a CPU engine; :func:`gradient_engine` picks the SCF's
    device).  Raises InputError for an unconverged result or a method without analytic
    gradients.
    """
    from hartree.integrals.engine import CPUEngine

    _refuse_dft(result.method)
    if result.method not in ("rhf", "uhf", "rohf"):
        raise InputError(f"no analytic gradient for method {result.method!r}")
    if not result.converged:
        raise InputError("the SCF did not converge: its gradient would mean nothing")
    t0 = time.perf_counter()
    mol, basis = result.molecule, result.basis
    if engine is None:
        engine = CPUEngine(mol, basis)
    da, db = _densities(result)
    w = energy_weighted_density(result, engine)
    d = da + db
    if result.method == "rhf":
        dk, factor = d[None], 0.5
    else:
        dk, factor = np.stack([da, db]), 1.0
    parts = {
        "nuclear_repulsion": mol.nuclear_repulsion_gradient(),
        "one_electron": np.asarray(engine.one_electron_gradient(d, w)),
        "two_electron": np.asarray(engine.two_electron_gradient(d, dk, factor)),
    }
    total = parts["nuclear_repulsion"] + parts["one_electron"] + parts["two_electron"]
    return GradientResult(
        method=result.method,
        energy=float(result.energy),
        gradient=total,
        components=parts,
        scf=result,
        wall_time=time.perf_counter() - t0,
        device=engine.device,
        notes=tuple(engine.notes),
    )


def gradient(
    molecule,
    basis: Any = "6-31g**",
    method: str = "rhf",
    *,
    device: str = "auto",
    gpus: str | int | Sequence[int] | None = None,
    **scf_options: Any,
) -> GradientResult:
    """Run the SCF (``hartree.scf.run`` with ``GRADIENT_SCF_DEFAULTS`` unless given) and
    return its analytic gradient.  Arguments as :func:`hartree.scf.run`."""
    from hartree.scf import run

    _refuse_dft(method)  # before the SCF, not after it
    opts = {**GRADIENT_SCF_DEFAULTS, **scf_options}
    result = run(molecule, basis, method, device=device, gpus=gpus, **opts)
    return scf_gradient(result, gradient_engine(result, gpus, opts.get("screening_threshold", 1e-13)))


def gradient_engine(result, gpus=None, screening_threshold=1e-13):
    """The engine for the gradient of ``result``: a GPU engine when the SCF ran on a GPU
    (``result.device`` 'cuda:...'; the same GPUs), else None (scf_gradient's CPU engine)."""
    from hartree.scf.driver import make_engine, resolve_gpus

    if not str(result.device).startswith("cuda"):
        return None
    ids = resolve_gpus(gpus, result.basis.nao)
    return make_engine(result.molecule, result.basis, screening_threshold, "gpu", ids)
