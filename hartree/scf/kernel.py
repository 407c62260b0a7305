"""The SCF kernel: one pure function from (molecule, basis, options, engine) to
an SCFResult.

Each cycle (Roothaan 1951; Pople & Nesbet 1954 for UHF; Roothaan 1960 for ROHF):

1. extrapolate the Fock matrix to diagonalise (DIIS / ADIIS / EDIIS blend,
   hartree.scf.diis), optionally damp it and shift the empty levels;
2. diagonalise it in the orthonormal basis X, occupy by aufbau, form D;
3. build J and K of D directly with the engine — incrementally, as
   J[D_prev] + J[D - D_prev] (and K likewise; J, K are linear in D and the
   engine screens with max|D - D_prev|, so late cycles are cheap), with a full
   rebuild every ``full_rebuild_every`` cycles and before accepting convergence;
   optionally (``early_screening``, off by default), while the orbital gradient is above
   ``early_screening_gradient`` the builds screen with that looser threshold (variable
   thresholds as in TeraChem and Q-Chem); a full rebuild at ``screening_threshold`` and a
   fresh DIIS subspace end that phase, and convergence is only judged after it; likewise
   with ``precision='mixed'`` (a fitted K) the builds are mixed precision (``engine.jk(...,
   precision='mixed')``) until :meth:`SCFOptions.leaves_mixed` (dynamic precision: Luehr,
   Ufimtsev & Martinez, J. Chem. Theory Comput. 7, 949 (2011));
4. new Fock matrix, energy, commutator error; test convergence.

The kernel never raises because the SCF did not converge: the result says
``converged=False``.  It raises InputError for impossible input.

Engine: the kernel uses only the engine contract (:class:`hartree.engine.IntegralEngine`).
Device: the loop runs in the engine's array module (``engine.array_module()``: numpy for
the CPU engine, cupy for :class:`hartree.gpu.GPUEngine` on CUDA).  The one-electron
matrices (S, h) come from the engine in its array module (the GPU engine computes them on
the device); Fock, densities, DIIS and the diagonalisations (``xp.linalg.eigh``) then stay
there.
Only scalars (energies, error norms, DIIS inner products) come back per cycle; the
result's arrays are returned as numpy.

Kohn-Sham DFT (method 'rks'/'uks', options.xc): the same loop on the RHF/UHF layout
(``options.scheme``) with the functional's exact exchange, c_x K or, for a range-separated
hybrid, (alpha + beta) K - beta K_lr(omega) (:func:`hartree.scf.ks.exchange_terms`; K not
built for a pure functional) and E_xc, V_xc of :class:`hartree.scf.ks.KohnSham` added to
each state; the grid is built once, after the guess.  The XC integration is numpy for now:
on the GPU the density goes to the host and V_xc back each cycle.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import interruption
from ..arrays import array_module, to_numpy
from ..errors import ConvergenceError, InputError
from . import analysis
from . import checkpoint as chk
from . import fock as fk
from . import guess as gs
from .builds import IncrementalJK, StageClock, early_threshold
from .diis import DIISHistory
from .linalg import eigh_orth, orthogonalizer
from .options import IterationRecord, SCFOptions
from .result import SCFResult

if TYPE_CHECKING:
    from ..basis import Basis
    from ..engine import IntegralEngine
    from ..molecule import Molecule

SAD_DESCRIPTION = gs.SAD_DESCRIPTION

#: Level shift (Eh) switched on automatically when the SCF stalls (fallback=True).
AUTO_LEVEL_SHIFT = 0.3
#: Largest automatic level shift (Eh).
MAX_LEVEL_SHIFT = 1.2
#: Cycles without halving the gradient norm that count as a stall.
STALL_WINDOW = 10
#: Stages of SCFResult.timings (seconds): one-electron matrices, initial guess, the XC
#: grid (Kohn-Sham; 0 for Hartree-Fock), every J/K build, every E_xc/V_xc evaluation
#: (Kohn-Sham), everything else in the loop (Fock, DIIS, diagonalisation,
#: orthogonaliser), final analysis (dipole, Mulliken, <S^2>).
STAGES = ("one_electron", "guess", "grid", "jk", "xc", "other", "analysis")


def validate(molecule, method):
    """InputError for a method/spin combination that cannot work."""
    if method not in ("rhf", "uhf", "rohf", "rks", "uks"):
        raise InputError(f"unknown SCF method {method!r}; choose rhf, uhf, rohf, rks or uks")
    if molecule.nelectron < 1:
        raise InputError(
            f"the molecule has no electrons (charge {molecule.charge} with nuclear "
            f"charge {int(molecule.numbers.sum())}); there is nothing to compute"
        )
    if method in ("rhf", "rks"):
        other = "uhf or rohf" if method == "rhf" else "uks"
        if molecule.nelectron % 2:
            raise InputError(
                f"{method.upper()} needs an even number of electrons; use --method {other} "
                f"(the molecule has {molecule.nelectron} electrons)"
            )
        if molecule.multiplicity != 1:
            raise InputError(
                f"{method.upper()} needs multiplicity 1 (got {molecule.multiplicity}); use --method {other}"
            )


class _State:
    """Everything about one density: its J/K, Fock, energy and errors.

    method: the scheme ('rhf', 'uhf', 'rohf'); ks: the :class:`hartree.scf.ks.KohnSham` of a
    Kohn-Sham run (V_xc and E_xc added; its time billed to the stage 'xc'), else None.  vk:
    the exchange matrix with its factors (:class:`hartree.scf.builds.IncrementalJK`), None without one."""

    def __init__(self, method, h, s, x, enuc, dm, vj, vk, mo, ks=None, clock=None):
        self.dm, self.vj, self.vk = dm, vj, vk
        cx = 0.0 if vk is None else 1.0  # vk is the exchange sum, factors included (IncrementalJK)
        self.fock = fk.fock_from_jk(method, h, vj, vk, cx)
        self.terms = fk.energy_terms(method, h, dm, vj, vk, cx)
        if ks is not None:
            if clock is not None:
                clock.lap("other")
            exc, vxc = ks(dm)
            self.fock = self.fock + vxc
            self.terms.update(ks.terms)  # E_xc, and E_nlc apart as "vv10" (exc is their sum)
            if clock is not None:
                clock.lap("xc")
        self.energy = sum(self.terms.values()) + enuc
        xp = array_module(s)
        if method == "rohf":
            if mo is not None:
                self.fock_diag = fk.rohf_effective_fock(self.fock, mo[0], mo[1], s)[None]
            else:  # no orbitals yet (SAD guess): spin-averaged Fock
                self.fock_diag = (0.5 * (self.fock[0] + self.fock[1]))[None]
            dm_comm = [dm[0] + dm[1]]
        else:
            self.fock_diag = self.fock
            dm_comm = list(dm)
        self.error = fk.commutator_errors(list(self.fock_diag), dm_comm, s, x)
        self.grad_norm = float(to_numpy(xp.sqrt(xp.sum(self.error * self.error))))
        self.err_max = float(to_numpy(xp.max(xp.abs(self.error))))


def _diagonalize(method, fock_diag, x, nalpha, nbeta):
    """(mo_energy, mo_coeff, mo_occ) from the Fock matrices to diagonalise."""
    xp = array_module(x)
    if method == "uhf":
        ea, ca = eigh_orth(fock_diag[0], x)
        eb, cb = eigh_orth(fock_diag[1], x)
        e, c = xp.stack([ea, eb]), xp.stack([ca, cb])
    else:
        e, c = eigh_orth(fock_diag[0], x)
    return e, c, fk.occupations(method, e, nalpha, nbeta)


def _initial_guess(molecule, basis, options, engine, s, h, x, nalpha, nbeta, notes, plan):
    """(Guess, restarted) to start from: the checkpoint ``plan`` chose, else options.guess."""
    method = options.scheme
    notes.extend(plan.notes)
    data = plan.start
    if data is not None:
        xp = array_module(s)
        if plan.relation == "same":
            electrons = float(to_numpy(xp.sum(fk.total_dm(xp.asarray(data.dm)) * s)))
            if not abs(electrons - molecule.nelectron) <= 1e-4 * max(1, molecule.nelectron):
                raise InputError(
                    f"checkpoint {plan.source}: its density holds {electrons:.6g} "
                    f"electrons, the molecule {molecule.nelectron}; it is damaged"
                )
            have_mo = data.mo_coeff is not None and data.mo_occ is not None
            notes.append(f"restarted from checkpoint {plan.source} (cycle {data.cycle}, E = {data.energy:.10f})")
            return gs.Guess(
                xp.asarray(data.dm),
                xp.asarray(data.mo_coeff) if have_mo else None,
                xp.asarray(data.mo_occ) if have_mo else None,
                "checkpoint restart",
                None if data.mo_energy is None else xp.asarray(data.mo_energy),
            ), True
        if data.mo_coeff is not None:
            notes.append(
                f"guess from the orbitals of another job in {plan.source} "
                f"({data.method}, {chk.differences(data, molecule, method)})"
            )
            return gs.guess_from_orbitals(
                method, data.mo_coeff, data.mo_energy, s, nalpha, nbeta, "checkpoint orbitals"
            ), False
        notes.append(f"guess from the density of another job in {plan.source}")
        d = xp.asarray(data.dm)
        return gs.Guess(gs.split_total_density(method, fk.total_dm(d)), None, None, "checkpoint density"), False
    if options.guess_orbitals is not None:
        mo_coeff, mo_energy = options.guess_orbitals
        xp = array_module(s)
        notes.append("guess from given orbitals (a previous run, e.g. a nearby geometry)")
        return gs.guess_from_orbitals(
            method, xp.asarray(mo_coeff), xp.asarray(mo_energy), s, nalpha, nbeta, "given orbitals"
        ), False
    if options.guess == "core":
        return gs.core_guess(method, h, x, nalpha, nbeta), False
    return gs.sad_guess(method, molecule, basis, engine, options.screening_threshold), False


def _check_finite(st, cycle):
    """ConvergenceError when the SCF produced a non-finite energy or gradient (numerical
    breakdown): never carried on, never written to the checkpoint."""
    if not (np.isfinite(st.energy) and np.isfinite(st.grad_norm)):
        raise ConvergenceError(
            f"the SCF broke down at cycle {cycle}: the energy or orbital gradient is not a "
            "finite number; the checkpoint (if any) keeps the last finite cycle"
        )


def _host(a):
    """numpy copy of a device array (None stays None)."""
    return None if a is None else to_numpy(a)


def _guess_to(xp, guess):
    """The Guess with its arrays in array module xp (a no-op for numpy arrays on numpy)."""

    def conv(a):
        return None if a is None else xp.asarray(a)

    return gs.Guess(conv(guess.dm), conv(guess.mo_coeff), conv(guess.mo_occ), guess.description, conv(guess.mo_energy))


def kernel(molecule: Molecule, basis: Basis, options: SCFOptions, engine: IntegralEngine) -> SCFResult:
    """Run the SCF; never raises on non-convergence (see module docstring)."""
    t_start = time.perf_counter()
    validate(molecule, options.method)
    # the Hartree-Fock layout (RKS -> 'rhf', UKS -> 'uhf'), used for every array below;
    # options.method names the result
    method = options.scheme
    ks = None
    if options.xc is not None:
        from .ks import checked_functional

        checked_functional(options.xc)  # refusals before any work
    plan = chk.plan(
        molecule,
        basis,
        options.method,
        checkpoint=options.checkpoint,
        guess=options.guess,
        guess_from=options.guess_from,
        overwrite=options.overwrite_checkpoint,
    )
    nalpha, nbeta = fk.spin_counts(molecule.nelectron, molecule.multiplicity)
    notes = []
    # The engine's array module (cupy for the GPU engine); the one-electron matrices come
    # from the engine (xp.asarray is a no-op when they already live there).
    xp = engine.array_module()
    clock = StageClock(xp)
    s = xp.asarray(engine.overlap())
    h = xp.asarray(engine.hcore())
    clock.lap("one_electron")
    if engine.scf_note:
        notes.append(engine.scf_note)
    x, ndropped = orthogonalizer(s, options.lindep_threshold)
    if ndropped:
        msg = (
            f"dropped {ndropped} near-linearly-dependent basis combinations "
            f"(overlap eigenvalues < {options.lindep_threshold:g}); "
            f"{x.shape[1]} orbitals from {basis.nao} functions"
        )
        warnings.warn(msg, stacklevel=2)
        notes.append(msg)
    enuc = molecule.nuclear_repulsion()

    clock.lap("other")
    guess, restarted = _initial_guess(molecule, basis, options, engine, s, h, x, nalpha, nbeta, notes, plan)
    if xp is not np:
        guess = _guess_to(xp, guess)
    clock.lap("guess")
    if not restarted:
        notes.append(f"initial guess: {guess.description}")
    if options.xc is not None:
        from .ks import KohnSham

        ks = KohnSham(molecule, basis, options.xc, options.grid_level, nlc_grid_level=options.nlc_grid_level)
        clock.lap("grid")
    mo = (guess.mo_coeff, guess.mo_occ) if guess.mo_coeff is not None else None
    builder = IncrementalJK(
        engine,
        options.incremental_fock,
        options.full_rebuild_every,
        clock,
        early_threshold(engine, options),
        exchange=((0.0, 1.0),) if ks is None else ks.exchange,
        mixed=options.precision == "mixed",
    )

    def new_state(dm, vj, vk, mo):
        return _State(method, h, s, x, enuc, dm, vj, vk, mo, ks, clock)

    vj, vk, _ = builder.build(guess.dm, force_full=True)
    state = new_state(guess.dm, vj, vk, mo)

    history = []

    def record(cycle, delta, step, st):
        rec = IterationRecord(
            cycle=cycle,
            energy=st.energy,
            delta_energy=delta,
            gradient_norm=st.grad_norm,
            diis_error=st.err_max,
            step=step,
            time=time.perf_counter() - t_start,
        )
        _check_finite(st, cycle)
        history.append(rec)
        if plan.write:
            chk.write_checkpoint(
                plan.write,
                molecule=molecule,
                basis=basis,
                method=options.method,
                cycle=cycle,
                energy=st.energy,
                dm=_host(st.dm),
                mo_coeff=_host(mo_state[0]),
                mo_energy=_host(mo_state[1]),
                mo_occ=_host(mo_state[2]),
                converged=False,
            )
        if options.callback is not None:
            options.callback(rec)

    mo_state = [guess.mo_coeff, guess.mo_energy, guess.mo_occ]
    record(0, float("nan"), "restart" if restarted else "guess", state)

    diis = DIISHistory(options.diis_space)
    diis.push(
        state.fock_diag,
        state.error,
        state.dm,
        state.fock,
        state.energy,
        idempotent=guess.mo_coeff is not None or guess.description != SAD_DESCRIPTION,
    )
    prev_used = state.fock_diag
    auto_shift = 0.0
    stall_damp = 0
    best_grad, best_grad_cycle = state.grad_norm, 0
    converged = False
    first_tight = False  # the cycle after the early phase: its Fock starts a new DIIS
    cycle = 0
    for cycle in range(1, options.max_cycle + 1):
        interruption.check()  # a stop request whose exception Python lost (hartree.interruption)
        # 1. the Fock matrix to diagonalise
        if options.damping > 0.0 and state.grad_norm > 0.1:
            fd = (1.0 - options.damping) * state.fock_diag + options.damping * prev_used
            step = "damped"
        elif stall_damp > 0:
            fd = 0.5 * state.fock_diag + 0.5 * prev_used
            step = "damped"
            stall_damp -= 1
        else:
            fd, step = diis.extrapolate(
                state.err_max, options.fallback, options.fallback_kind, uphill=not history[-1].delta_energy < 0.0
            )
        prev_used = fd
        shift = auto_shift or options.level_shift
        if shift:
            fd = fk.level_shift_fock(method, fd, state.dm, s, shift)
            step += "+shift"
        # 2. diagonalise, occupy
        mo_energy, mo_coeff, mo_occ = _diagonalize(method, fd, x, nalpha, nbeta)
        dm = fk.make_density(method, mo_coeff, mo_occ)
        mo_state = [mo_coeff, mo_energy, mo_occ]
        # 3. J/K (incremental or full), 4. new Fock, energy, error
        vj, vk, full = builder.build(dm)
        new = new_state(dm, vj, vk, (mo_coeff, mo_occ))
        delta = new.energy - state.energy
        record(cycle, delta, step + ("+full" if full else ""), new)
        done = abs(delta) < options.conv_tol and new.grad_norm < options.conv_tol_grad
        done = done and not builder.screening_early and not builder.mixed
        if builder.mixed and options.leaves_mixed(history):
            builder.full_precision()  # the next build: full, FP64 (the DIIS restarts after it)
            first_tight = True
            notes.append(f"mixed-precision J/K to cycle {cycle} (gradient {new.grad_norm:.1e}), then FP64")
        if builder.screening_early and new.grad_norm < options.early_screening_gradient:
            builder.tighten()  # the next build: full, at the engine's threshold
            first_tight = True
        if done and not full:
            # Accept only what a full build confirms (incremental builds carry
            # accumulated round-off and screening error).
            vj, vk, _ = builder.build(dm, force_full=True)
            checked = new_state(dm, vj, vk, (mo_coeff, mo_occ))
            delta = checked.energy - state.energy
            record(cycle, delta, "full-rebuild", checked)
            new = checked
            done = abs(delta) < options.conv_tol and new.grad_norm < options.conv_tol_grad
        state = new
        if first_tight and full:
            # the stored Fock matrices carry the early screening error (~1e-8 Eh): an
            # extrapolation mixing them with tight ones stalls near convergence
            diis.reset(0)
            first_tight = False
        diis.push(state.fock_diag, state.error, state.dm, state.fock, state.energy)
        if done:
            converged = True
            break
        # Stall watch (fallback): when the gradient has not halved within
        # STALL_WINDOW cycles, shift the empty levels (AUTO_LEVEL_SHIFT, doubled on
        # each further stall up to MAX_LEVEL_SHIFT), damp two cycles and restart
        # the DIIS subspace.  A large enough shift makes each step downhill.
        if options.fallback:
            if state.grad_norm < 0.5 * best_grad:
                best_grad, best_grad_cycle = state.grad_norm, cycle
            elif cycle - best_grad_cycle >= STALL_WINDOW:
                base = auto_shift or options.level_shift
                auto_shift = min(2.0 * base, MAX_LEVEL_SHIFT) if base else AUTO_LEVEL_SHIFT
                stall_damp = 2
                notes.append(f"SCF stalled at cycle {cycle}: level shift {auto_shift:g} Eh, damping, DIIS restarted")
                diis.reset(1)
                best_grad, best_grad_cycle = state.grad_norm, cycle
    else:
        cycle = options.max_cycle

    if builder.screening_early:  # stopped early (max_cycle): the last build is a tight one
        builder.tighten()
    builder.full_precision()  # and an FP64 one
    if builder.since_full != 0 or builder.dm is None:  # the reported energy: a full build
        vj, vk, _ = builder.build(state.dm, force_full=True)
        state = new_state(state.dm, vj, vk, None if mo_state[0] is None else (mo_state[0], mo_state[2]))
    # Final canonical orbitals: diagonalise the last (unshifted) Fock matrix.
    clock.lap("other")
    mo_energy, mo_coeff, mo_occ = _diagonalize(method, state.fock_diag, x, nalpha, nbeta)
    dm_final = fk.make_density(method, mo_coeff, mo_occ)
    # results are numpy whatever the device (no-ops on the CPU)
    mo_energy, mo_coeff, mo_occ, dm_final = (to_numpy(a) for a in (mo_energy, mo_coeff, mo_occ, dm_final))
    if plan.write:
        chk.write_checkpoint(
            plan.write,
            molecule=molecule,
            basis=basis,
            method=options.method,
            cycle=cycle,
            energy=state.energy,
            dm=_host(state.dm),
            mo_coeff=mo_coeff,
            mo_energy=mo_energy,
            mo_occ=mo_occ,
            converged=converged,
        )
    if not converged:
        notes.append(
            f"SCF not converged after {cycle} cycles (last |dE| = "
            f"{abs(history[-1].delta_energy):.2e} Eh, gradient "
            f"{state.grad_norm:.2e})"
        )
    if ks is not None:
        notes.append(ks.note())
    comps = analysis.energy_components(state.terms, enuc)
    dip = analysis.dipole_moment(dm_final, engine.dipole(np.zeros(3)), molecule.numbers, molecule.coords)
    charges = analysis.mulliken_charges(dm_final, s, molecule.numbers, basis.atom_slices())
    s2 = None
    if method != "rhf":
        s2 = analysis.spin_square(dm_final, s, nalpha, nbeta)
    clock.lap("analysis")
    timings = {k: clock.seconds.get(k, 0.0) for k in STAGES}
    timings.update({f"{k}_builds": v for k, v in builder.builds.items()})
    return SCFResult(
        method=options.method,
        converged=converged,
        energy=state.energy,
        energy_components=comps,
        mo_energy=mo_energy,
        mo_coeff=mo_coeff,
        mo_occ=mo_occ,
        iterations=cycle,
        history=history,
        dipole=dip,
        mulliken_charges=charges,
        s_squared=s2,
        wall_time=time.perf_counter() - t_start,
        device=str(engine.device),
        molecule=molecule,
        basis=basis,
        density=dm_final,
        notes=tuple(notes),
        timings=timings,
        xc=options.xc,
        dft=None if ks is None else ks.summary(),
    )
