"""Analytic nuclear gradients of RHF, UHF and ROHF energies, and of RKS and UKS (Kohn-Sham DFT).

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

Kohn-Sham (RKS, UKS; Pople, Gill and Johnson, Chem. Phys. Lett. 199, 557 (1992)): the same
eq. (1) with W of the Kohn-Sham orbitals (canonical, as RHF/UHF), the exchange part of Gamma
scaled by the functional's exact-exchange fraction c_x (0 for LDA and GGA functionals); a
range-separated hybrid's (alpha + beta) K - beta K_lr(omega) (:func:`hartree.scf.ks.exchange_terms`)
adds a second eq. (2) with the erf(omega r12)/r12 integrals, its exchange part only (CPU
and GPU engines), and

    + dE_xc/dR                                                                         (3)

from :func:`hartree.dft.xc_gradient.xc_gradient` on the SCF's grid (``SCFResult.dft``'s
grid level; :func:`hartree.dft.make_grid` with its defaults, as :mod:`hartree.scf.ks`
builds it).  By default the grid's points and weights are held fixed (PySCF's
``grid_response=False``): the gradient then misses the derivative of the integration grid
and its sum over atoms is not zero, by an amount of the grid's error (measured: 1e-4 to
7e-4 Eh/bohr for water/6-31G at grid level 1; the gradient differs from finite differences
of the energy by 1e-4 there and by 2e-6 to 9e-6 at level 3).  ``grid_response=True`` adds it
(the Becke weights' derivatives, Johnson, Gill and Pople, J. Chem. Phys. 98, 5612 (1993)),
which makes the gradient the exact derivative of the SCF energy on its moving grid.  Range-separated
hybrids have no Kohn-Sham SCF yet, hence no gradient.  The XC term runs where the engine
runs (:func:`xc_kernels`): with a GPU engine on a CUDA device, on that GPU
(:mod:`hartree.dft.xc_grad_integrate`: the density goes to the device, the (natm, 3) term
comes back), else with numpy on the host (:mod:`hartree.dft.xc_gradient`); the grid response
runs on the host on either (a note says so for a GPU engine).  VV10 functionals add

    + dE_nlc/dR                                                                      (3')

(:func:`hartree.dft.vv10.nlc_gradient`, component ``vv10``) on the SCF's VV10 grid
(``SCFResult.dft['vv10']['grid_level']``), held fixed by default as the semilocal grid; with
``grid_response=True`` the VV10 grid's points and weights move too (the Becke weights'
derivatives and the kernel's explicit dependence on the points, :mod:`hartree.dft.vv10_response`),
on the host, so that the whole gradient is the derivative of the energy on both moving grids.

A dispersion correction (``SCFResult.dispersion``: D3(BJ), D3(zero) or D4, Hartree-Fock or
Kohn-Sham; :mod:`hartree.dft.dispersion`) depends on the nuclei only, so its gradient is added
as it is, from the dftd3 or dftd4 package:

    + dE_disp/dR                                                                       (4)

A density-fitted energy (``SCFResult.density_fitting``; :mod:`hartree.df`) has the same
eq. (1) with the fitted integrals in its last term: the engine is wrapped in a FittedEngine,
whose two_electron_gradient (the same calls, one per exchange operator) is
:mod:`hartree.df.gradient` (fitted J and K, the auxiliary-basis derivative terms included;
with exact_k fitted J and the exact-integral exchange), on the engine's device; ROHF's W
(eq. (2)) from the fitted Fock.
"""

from __future__ import annotations

import contextlib
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
    if result.method in ("rhf", "rks"):
        half = 0.5 * (dm[0] if dm.ndim == 3 else dm)
        return half, half
    return dm[0], dm[1]


def energy_weighted_density(result, engine) -> np.ndarray:
    """W of eq. (2), numpy (nao, nao); ``engine`` builds the Fock matrices of ROHF."""
    C = np.asarray(result.mo_coeff)
    e = np.asarray(result.mo_energy)
    occ = np.asarray(result.mo_occ)
    if result.method in ("rhf", "uhf", "rks", "uks"):  # canonical orbitals
        if result.method in ("rhf", "rks"):
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


def _kohn_sham_grid(result):
    """The grid of a Kohn-Sham SCFResult's XC energy, rebuilt from its recorded level
    (:meth:`hartree.scf.ks.KohnSham.summary`; make_grid's defaults, as the SCF)."""
    from hartree.dft import make_grid

    record = getattr(result, "dft", None) or {}
    if "grid_level" not in record:
        raise InputError("this Kohn-Sham result does not record its grid level (SCFResult.dft); rerun the SCF")
    return make_grid(result.molecule, level=int(record["grid_level"]))


def xc_kernels(result, engine):
    """The XC kernels of the gradient's XC terms: :class:`hartree.dft.xc_gpu.GPUKernels` on the
    first device of a GPU engine whose backend is CUDA (as the SCF's XC integration runs on
    the GPU when its arrays are cupy, :class:`hartree.scf.ks.KohnSham`), else None (the host;
    an emulated GPU engine's SCF arrays are numpy, so its XC runs on the host too)."""
    from hartree.gpu.engine import GPUEngine

    if not isinstance(engine, GPUEngine):
        return None
    backend = engine.backends()[0]
    if backend.xp is np:
        return None
    from hartree.dft.xc_gpu import GPUKernels

    return GPUKernels(backend, nset=1 if result.method == "rks" else 2)


def xc_term(result, grid_response=False, kernels=None):
    """dE_xc/dR, eq. (3), of a converged RKS/UKS SCFResult: numpy (natm, 3), Eh/bohr, on the
    SCF's grid (held fixed unless ``grid_response``).  kernels: the
    :class:`hartree.dft.xc_integrate.XCKernels` of a device to compute it on (the density
    goes there); None, or with grid_response: numpy on the host."""
    from hartree.dft.xc_gradient import xc_gradient
    from hartree.scf.ks import checked_functional

    functional = checked_functional(result.xc)
    dm = to_numpy(result.density)
    dm = dm[0] if result.method == "rks" and dm.ndim == 3 else dm
    grid = _kohn_sham_grid(result)
    if kernels is None or grid_response:
        return xc_gradient(result.molecule, result.basis, grid, dm, functional, grid_response)
    return xc_gradient(result.molecule, result.basis, grid, dm, functional, kernels=kernels)


def vv10_term(result, kernels=None, grid_response=False):
    """dE_nlc/dR, eq. (3'), of a converged RKS/UKS SCFResult of a VV10 functional: numpy
    (natm, 3), Eh/bohr, on the SCF's VV10 grid (the total density), held fixed unless
    ``grid_response``; on the device of ``kernels`` when given and not grid_response
    (:func:`hartree.dft.vv10.nlc_gradient`; the grid response runs on the host)."""
    from hartree.dft import make_grid
    from hartree.dft.vv10 import nlc_gradient
    from hartree.scf.ks import checked_functional

    record = (getattr(result, "dft", None) or {}).get("vv10") or {}
    if "grid_level" not in record:
        raise InputError("this VV10 result does not record its VV10 grid (SCFResult.dft['vv10']); rerun the SCF")
    dm = to_numpy(result.density)
    total = dm[0] if result.method == "rks" and dm.ndim == 3 else (dm if dm.ndim == 2 else dm[0] + dm[1])
    grid = make_grid(result.molecule, level=int(record["grid_level"]))
    vv10 = checked_functional(result.xc)
    if grid_response:
        return nlc_gradient(result.molecule, result.basis, grid, total, vv10, grid_response=True)
    return nlc_gradient(result.molecule, result.basis, grid, total, vv10, kernels=kernels)


def dispersion_term(result):
    """dE_disp/dR, eq. (4), of a result with a dispersion correction (``SCFResult.dispersion``:
    its model and functional): numpy (natm, 3), Eh/bohr, from the dftd3 or dftd4 package."""
    from hartree.dft.dispersion import dispersion_energy_gradient

    record = result.dispersion
    _, grad = dispersion_energy_gradient(result.molecule, record["functional"], record["model"], gradient=True)
    return grad


def scf_gradient(result, engine=None, *, grid_response=False) -> GradientResult:
    """The analytic gradient, eq. (1) (and (3) for Kohn-Sham), of a converged SCFResult
    (RHF, UHF, ROHF, RKS or UKS).

    engine: an :class:`hartree.engine.IntegralEngine` on ``result.molecule`` and
    ``result.basis`` (default: a CPU engine; :func:`gradient_engine` picks the SCF's
    device).  grid_response: Kohn-Sham only, add the derivative of the integration grid
    (module docstring; off by default, as in PySCF).  A density-fitted result (its
    ``density_fitting``) gets the fitted two-electron term of :mod:`hartree.df.gradient`, the
    engine wrapped in a FittedEngine with its auxiliary basis (ROHF's W from the fitted Fock).
    Raises InputError for an unconverged result or a method without analytic gradients.
    """
    from hartree.integrals.engine import CPUEngine

    if result.method not in ("rhf", "uhf", "rohf", "rks", "uks"):
        raise InputError(f"no analytic gradient for method {result.method!r}")
    if not result.converged:
        raise InputError("the SCF did not converge: its gradient would mean nothing")
    fitted = bool(getattr(result, "density_fitting", None))  # eq. (1) with fitted integrals (hartree.df.gradient)
    kohn_sham = result.method in ("rks", "uks")
    if grid_response and not kohn_sham:
        raise InputError("grid_response is for Kohn-Sham gradients (rks, uks); Hartree-Fock has no grid")
    t0 = time.perf_counter()
    mol, basis = result.molecule, result.basis
    exchange = {0.0: 1.0}  # the exchange as {omega: factor} (hartree.scf.ks.exchange_terms)
    if engine is None:
        engine = CPUEngine(mol, basis)
    if kohn_sham:
        from hartree.scf.ks import checked_functional, exchange_terms

        functional = checked_functional(result.xc)
        exchange = dict(exchange_terms(functional))
    if fitted:  # the contract's terms below are then the fitted ones (hartree.df.gradient)
        from hartree.df.engine import as_fitted_engine

        engine = as_fitted_engine(result, engine)
    da, db = _densities(result)
    w = energy_weighted_density(result, engine)
    d = da + db
    if result.method in ("rhf", "rks"):
        dk, factor = d[None], 0.5
    else:
        dk, factor = np.stack([da, db]), 1.0
    two = np.asarray(engine.two_electron_gradient(d, dk, factor * exchange.pop(0.0, 0.0)))
    for omega, c in exchange.items():  # range separated: the erf part, no Coulomb density
        two = two + np.asarray(engine.two_electron_gradient(np.zeros_like(d), dk, factor * c, omega=omega))
    parts = {
        "nuclear_repulsion": mol.nuclear_repulsion_gradient(),
        "one_electron": np.asarray(engine.one_electron_gradient(d, w)),
        "two_electron": two,
    }
    notes = []
    if kohn_sham:
        kernels = xc_kernels(result, engine)
        with contextlib.nullcontext() if kernels is None else kernels.backend.use():  # the engine's first GPU
            parts["exchange_correlation"] = xc_term(result, grid_response, kernels)
            if functional.vv10 is not None:
                parts["vv10"] = vv10_term(result, kernels, grid_response)
        notes += _xc_notes(kernels, grid_response, functional.vv10 is not None)
    if getattr(result, "dispersion", None):
        parts["dispersion"] = dispersion_term(result)
    total = sum(parts.values())
    return GradientResult(
        method=result.method,
        energy=float(result.energy),
        gradient=total,
        components=parts,
        scf=result,
        wall_time=time.perf_counter() - t0,
        device=engine.device,
        notes=tuple(engine.notes) + tuple(notes),
    )


def _xc_notes(kernels, grid_response, vv10=False):
    """Sentences for GradientResult.notes on where the XC terms ran (a GPU engine only)."""
    if kernels is None:
        return []
    if grid_response:
        what = "XC and VV10 gradients" if vv10 else "XC gradient"
        return [f"{what} on the host (numpy): the grid response has no GPU path yet"]
    return [f"XC gradient on the GPU (libxc: {kernels.libxc_description()})"] + list(kernels.notes)


def gradient(
    molecule,
    basis: Any = "6-31g**",
    method: str = "rhf",
    *,
    device: str = "auto",
    gpus: str | int | Sequence[int] | None = None,
    grid_response: bool = False,
    **scf_options: Any,
) -> GradientResult:
    """Run the SCF (``hartree.scf.run`` with ``GRADIENT_SCF_DEFAULTS`` unless given) and
    return its analytic gradient.  Arguments as :func:`hartree.scf.run` (Kohn-Sham: ``xc=``,
    ``grid_level=``); grid_response as :func:`scf_gradient`."""
    from hartree.scf import run

    if grid_response and str(method).lower() not in ("rks", "uks"):  # before the SCF, not after it
        raise InputError("grid_response is for Kohn-Sham gradients (rks, uks); Hartree-Fock has no grid")
    opts = {**GRADIENT_SCF_DEFAULTS, **scf_options}
    result = run(molecule, basis, method, device=device, gpus=gpus, **opts)
    engine = gradient_engine(result, gpus, opts.get("screening_threshold", 1e-13))
    return scf_gradient(result, engine, grid_response=grid_response)


def gradient_engine(result, gpus=None, screening_threshold=1e-13):
    """The engine for the gradient of ``result``: a GPU engine when the SCF ran on a GPU
    (``result.device`` 'cuda:...'; the same GPUs), else None (scf_gradient's CPU engine)."""
    from hartree.scf.driver import make_engine, resolve_gpus

    if not str(result.device).startswith("cuda"):
        return None
    ids = resolve_gpus(gpus, result.basis.nao)
    return make_engine(result.molecule, result.basis, screening_threshold, "gpu", ids)
