"""Atomic Hartree-Fock / Dirac-Hartree-Fock SCF in l-blocked radial Gaussians.

Per symmetry block b the Roothaan (-Dirac) equation F_b C_b = S_b C_b ε_b (thesis eq. 1.16)
is solved with F_b = h_b + J_b - K_b (:mod:`hartree.atom.operators`).  Occupied orbitals
are the lowest positive-energy solutions (ε > -c²; the negative-energy branch lies near
-2c²): n_c closed shells (occupation g = 2j+1, or 2(2l+1)) and at most one open shell
with q electrons (0 < q < g), in the average-of-configuration (AOC) sense.

AOC energy (Grant's E_av; the open shell's self-interaction averaged over its q(q-1)/2 pairs)

    E = Σ_a q_a h_aa + ½ Σ_ab q_a q_b [F⁰(ab) − Σ_k c_k G^k(ab)]
        + Σ_open (λ/2) tr(G_bb[D_O] D_O),   λ = (q − g) / (q (g − 1))                (AOC)

where the first line is the closed-shell form applied to the total density D_T = D_C + D_O
(thesis eqs. 3.6-3.7) and the last term corrects the same-shell pairs (G_bb: Coulomb minus
exchange from the block's own integrals; it vanishes for q = g, and for q = 1 it removes
the self-interaction exactly).  Fock operators: F_C = h + G[D_T] for closed shells and
F_O = F_C + λ G_bb[D_O] for the open shell; they are combined into one effective operator
in the current orbital basis (closed, open, virtual blocks): CC, CV, VV from F_C, OO and OV
from F_O, and CO from (g F_C − q F_O)/(g − q), whose vanishing is the closed-open
Brillouin condition.  Convergence needs |ΔE| < energy_tol and the LL, SL, SS density
changes below thdll, thdsl, thdss (thesis §3.5, $scf), measured as S^½ ΔD S^½ (Löwdin-
orthonormalized functions, per component block): in the raw basis the density of the
thesis' profiling basis (ζ up to 1e13) carries rounding noise of 1-4e-5 even at a fixed
point, in the orthonormal functions 1-4e-6; |ΔE| is floored at 64 ε |E| (a double resolves
Rn's 23602 Eh to ~4e-12 Eh only).  Acceleration: DIIS on the effective Fock supermatrices
with the error X^T(FDS - SDF)X projected on the bound-state window (:func:`_window`), or
damping with dfctr.  Eigenproblems are solved in a cascade of shrinking spectral windows
(:func:`_refined_eigh`) so that ‖F‖ ~ 1e13 Eh (nonrelativistic kinetic energy of ζ = 1e13
functions) does not spoil the valence orbitals.  Orthogonalization is canonical on
the normalized overlap (:func:`_orthogonalizer`): exponents up to 1e13 (the thesis'
profiling basis) make the small-component overlap T/(2c²) 1e9 times the large one, and a
threshold relative to the largest eigenvalue would drop large-component functions.
The two-electron part runs on the CPU (numba, :class:`operators.CPUTwoElectron`) or on a
GPU (CuPy, :class:`hartree.atom.gpu.DeviceTwoElectron`), chosen by options.device.
"""

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import ConvergenceError, InputError
from .angular import blocks_for
from .config import SYMBOLS, average_level, configuration
from .operators import CPUTwoElectron, _is_pair, block_exponents, build_one_electron
from .options import AtomSCFOptions
from .result import AtomResult


def _orthogonalizer(s, threshold):
    """Canonical orthogonalization X (dim, m) with X^T S X = 1, on the normalized overlap.

    S is scaled to unit diagonal first (N = diag^-1/2: S' = N S N), so that the large and
    small component blocks (whose scales differ by ~ζ_max/c², 1e8 for exponents of 1e13)
    are judged alike; eigenvalues of S' below ``threshold`` are dropped; X = N U' w'^-1/2.
    """
    nrm = 1.0 / np.sqrt(np.diag(s))
    w, u = np.linalg.eigh(nrm[:, None] * s * nrm[None, :])
    keep = w > threshold
    return nrm[:, None] * (u[:, keep] / np.sqrt(w[keep]))


#: largest ratio between the top of the spectrum and the window cut in one refinement stage
CASCADE_RATIO = 1e4


def _refined_eigh(f, x, lower):
    """Eigenpairs (ε, C) of F C = S C ε with X^T S X = 1, the bound states refined.

    A dense eigh is backward stable in norm: eigenvectors of X^T F X carry components
    ~ε‖F‖/|ε_i - ε_j| along other eigenvectors, and tight functions (ζ ~ 1e13) make ‖F‖ ~
    1e13 Eh nonrelativistically (kinetic energy), which would leave valence orbitals with
    errors ~1e-2.  So the solution is refined in a cascade of windows: starting from the
    top of the spectrum t_0 = max ε, stage k keeps the eigenvectors with lower < ε ≤
    t_k = t_(k-1)/CASCADE_RATIO (or cut once that is below 10·cut) and diagonalizes F
    projected on them again (norm ~t_(k-1)), until t_k = cut = 1e3 + 10·|ε_min| (:func:`_window`).  Each stage's
    subspace is then accurate to ~ε·CASCADE_RATIO relative to its gap, not ε·‖F‖: with a
    single stage (cut straight from ‖F‖ ~ 5e13 to 4e4), the window was contaminated at
    ~1e-6 by the eigenvectors just above the cut, differently every iteration, and
    nonrelativistic Rn in the thesis' profiling basis (n = 45) never converged (|ΔE| noise
    ~1e-7 Eh, DIIS error ~1e-6); with the cascade it converges in 13 iterations.
    lower: -c² (positive-energy branch of Dirac-Fock) or -∞.
    """
    e, v = np.linalg.eigh(x.T @ f @ x)
    c = x @ v
    inside = np.nonzero(e > lower)[0]
    if not inside.size:
        return e, c
    cut = 1e3 + 10.0 * abs(e[inside[0]])
    top = float(e.max())
    while True:
        step = top / CASCADE_RATIO
        if step < 10.0 * cut:  # no stage that would keep nearly the final window anyway
            step = cut
        win = inside[e[inside] <= step]
        if 0 < win.size < e.size:
            y = c[:, win]
            e2, w = np.linalg.eigh(y.T @ f @ y)
            e[win], c[:, win] = e2, y @ w
        if step == cut:
            return e, c
        top = step


def _window(e, lower):
    """Indices of the eigenvalues in (lower, 1e3 + 10|ε_min|] (ε_min: the lowest above lower)."""
    inside = np.nonzero(e > lower)[0]
    if not inside.size:
        return inside
    return inside[e[inside] <= 1e3 + 10.0 * abs(e[inside[0]])]


def _overlap_sqrt(s, n_large=None):
    """S^½ (dim, dim) of a block overlap, per component block (LL and SS apart: their scales
    differ by up to 1e9, which one eigendecomposition would not resolve)."""
    out = np.zeros_like(s)
    cuts = [slice(0, s.shape[0])] if n_large is None else [slice(0, n_large), slice(n_large, s.shape[0])]
    for sl in cuts:
        w, u = np.linalg.eigh(s[sl, sl])
        out[sl, sl] = (u * np.sqrt(np.maximum(w, 0.0))) @ u.T
    return out


def two_electron_engine(ops, device="auto"):
    """The two-electron engine for ``device`` ('cpu' | 'gpu' | 'auto', see AtomSCFOptions).

    Returns an object with ``two_electron(dms)``, ``two_electron_block(b, dm)``,
    ``timings`` and ``device``; raises DeviceError for 'gpu' without a usable GPU.
    """
    from ..device.selection import resolve_device

    if resolve_device(device) == "gpu":
        from .gpu import DeviceTwoElectron

        return DeviceTwoElectron(ops)
    return CPUTwoElectron(ops)


class _DIIS:
    """Pulay DIIS over all blocks; the Gram matrix of the error vectors is kept and only its
    new row is computed each iteration (m dot products instead of an (m, N) matrix product)."""

    def __init__(self, space):
        self.space = space
        self.focks, self.errors = [], []
        self.gram = np.zeros((0, 0))

    def update(self, focks, errors):
        vec = np.concatenate([e.ravel() for e in errors])
        self.focks.append([f.copy() for f in focks])
        self.errors.append(vec)
        row = np.array([float(vec @ e) for e in self.errors])
        m = len(self.errors)
        gram = np.zeros((m, m))
        gram[: m - 1, : m - 1] = self.gram
        gram[m - 1, :] = row
        gram[:, m - 1] = row
        if m > self.space:
            self.focks.pop(0)
            self.errors.pop(0)
            gram = gram[1:, 1:]
            m -= 1
        self.gram = gram
        if m < 2:
            return focks
        b = -np.ones((m + 1, m + 1))
        b[m, m] = 0.0
        b[:m, :m] = gram
        rhs = np.zeros(m + 1)
        rhs[m] = -1.0
        try:
            coef = np.linalg.solve(b, rhs)[:m]
        except np.linalg.LinAlgError:
            coef = np.linalg.lstsq(b, rhs, rcond=None)[0][:m]
        out = []
        for i in range(len(focks)):
            acc = coef[0] * self.focks[0][i]
            for c, f in zip(coef[1:], self.focks[1:]):
                acc += c * f[i]
            out.append(acc)
        return out


def _occupation_pattern(ops, z, shells, block_shells, open_shells):
    """Per block (n_closed, q_open), from explicit counts or the default configuration.

    Lists may be longer than the basis has blocks when the extra entries are empty.
    """
    if block_shells is None and shells is None:
        pattern = configuration(z, relativistic=ops.relativistic)
    elif block_shells is not None:
        pattern = [(int(n), 0.0) for n in block_shells]
    else:
        lmax = len(shells) - 1
        pattern = [(shells[b.l], 0.0) for b in blocks_for(lmax, ops.relativistic)]
    if open_shells is not None:
        if len(open_shells) != len(pattern):
            raise InputError(f"{len(open_shells)} open-shell occupations for {len(pattern)} symmetry blocks")
        pattern = [(n, float(q)) for (n, _), q in zip(pattern, open_shells)]
    nblock = len(ops.blocks)
    if any(n or q for n, q in pattern[nblock:]):
        raise InputError(
            f"the configuration occupies symmetries beyond the largest l of the basis "
            f"(l = {ops.blocks[-1].l}); add windows or exponents for them"
        )
    pattern = list(pattern[:nblock]) + [(0, 0.0)] * (nblock - len(pattern))
    for (n, q), b, size in zip(pattern, ops.blocks, ops.sizes):
        if n < 0 or not 0.0 <= q <= b.degeneracy:
            raise InputError(
                f"block {b.label}: {n} closed shells and {q} open electrons are impossible "
                f"(a shell holds {b.degeneracy})"
            )
        if n + (q > 0) > size:
            raise InputError(
                f"more electrons than spinors in {b.label}: {n + (q > 0)} occupied shells "
                f"but only {size} basis functions"
            )
    return pattern


def kernel(z, exponents, nucleus, options=None, **kwargs):
    """The atomic SCF (see :func:`_kernel` for the arguments and the result); a linear-algebra
    breakdown (a basis so near linearly dependent, or exponents so extreme, that the
    eigensolvers fail) is a ConvergenceError, never a LinAlgError traceback."""
    try:
        return _kernel(z, exponents, nucleus, options, **kwargs)
    except np.linalg.LinAlgError as exc:
        raise ConvergenceError(
            f"the atomic SCF broke down in its linear algebra ({exc}); the "
            "basis is probably too nearly linearly dependent"
        ) from None


def _kernel(
    z,
    exponents,
    nucleus,
    options=None,
    shells=None,
    element=None,
    block_shells=None,
    open_shells=None,
    configurations=None,
):
    """Run the SCF for atomic number z with exponents per l (bohr^-2; an entry may be a pair
    (j = l-1/2, j = l+1/2) of lists for separate κ exponents, see operators.block_exponents).

    Occupations: default is the ground configuration in Madelung order (:mod:`config`);
    ``shells`` gives closed radial shells per l (e.g. Ne: [2, 1]; both κ of an l get the
    count), ``block_shells`` closed shells per symmetry block (κ order of
    :func:`hartree.atom.angular.blocks_for`), ``open_shells`` the open-shell electrons per
    block (0 for none; one open shell per block, above the closed ones).  ``configurations``
    ([(block_shells, open_shells, weight), ...], e.g. from :func:`config.jj_configurations`)
    replaces them: one set of orbitals minimizes the weighted average of the configurations'
    AOC energies (extended average level, :func:`config.average_level`; the open shells of
    different blocks are then coupled through μ), and ``configuration_energies`` of the result
    holds each E_K with those orbitals.  Returns an :class:`AtomResult`; raises
    ConvergenceError (with the last state in ``.result``).
    """
    options = options or AtomSCFOptions()
    start = time.perf_counter()
    rel = options.relativistic
    c = options.light_speed
    ops = build_one_electron(exponents, nucleus, c, rel)
    nblock = len(ops.blocks)
    if configurations:
        pattern, lam, mu, conf_occ = average_level(ops.blocks, configurations)
        _occupation_pattern(ops, z, None, [n for n, _ in pattern], [q for _, q in pattern])
    else:
        pattern = _occupation_pattern(ops, z, shells, block_shells, open_shells)
        lam, mu = np.zeros(nblock), np.zeros((nblock, nblock))
        for ib, ((_, q), b) in enumerate(zip(pattern, ops.blocks)):
            if 0 < q < b.degeneracy:
                lam[ib] = (q - b.degeneracy) / (q * (b.degeneracy - 1.0))  # eq. (AOC)
    coupled = bool(np.any(mu))
    xs = [_orthogonalizer(s, options.overlap_threshold) for s in ops.s]
    engine = two_electron_engine(ops, options.device)
    # the blocks' small dense problems (eigh, products) run in threads: LAPACK/BLAS release
    # the GIL, and one thread per block beats threaded BLAS on 90 x 90 matrices
    workers = min(len(ops.blocks), os.cpu_count() or 1)
    pool = ThreadPoolExecutor(workers) if workers > 2 else None
    pmap = pool.map if pool is not None else map
    shalf = [_overlap_sqrt(s, ops.sizes[b] if rel else None) for b, s in enumerate(ops.s)]
    fock_times = []

    def solve(focks):
        lower = -c * c if rel else -np.inf
        return list(pmap(lambda fx: _refined_eigh(fx[0], fx[1], lower), zip(focks, xs)))

    def indices(eps, ib):
        """(closed, open or None, positive-energy) column indices of block ib."""
        pos = np.nonzero(eps > -(c**2))[0] if rel else np.arange(len(eps))
        nc, q = pattern[ib]
        return pos[:nc], (pos[nc] if q > 0 else None), pos

    def evaluate(sol):
        """Energy terms, densities and effective Fock operators of the orbitals ``sol``."""
        dts, dos = [], []
        for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
            closed, op, _ = indices(eps, ib)
            dc = b.degeneracy * cm[:, closed] @ cm[:, closed].T
            do = pattern[ib][1] * np.outer(cm[:, op], cm[:, op]) if op is not None else None
            dts.append(dc + do if do is not None else dc)
            dos.append(do)
        js, ks = engine.two_electron(dts)
        fock_times.append(engine.timings["fock"])
        # G[D_Ob] of each open shell: on its own block (same-shell term, λ) and, when the
        # configurations couple open shells of different blocks (μ ≠ 0), on every block
        gopen = {}
        for ib, do in enumerate(dos):
            if do is None or lam[ib] == 0.0 and not coupled:
                continue
            if coupled:
                only = [do if i == ib else np.zeros_like(d) for i, d in enumerate(dts)]
                gopen[ib] = dict(enumerate(zip(*engine.two_electron(only))))  # block -> (J, K)
            else:
                gopen[ib] = {ib: engine.two_electron_block(ib, do)}
        terms = {
            "one_electron": sum(float(np.vdot(h, d)) for h, d in zip(ops.h, dts)),
            "nuclear_attraction": sum(float(np.vdot(v, d)) for v, d in zip(ops.v, dts)),
            "coulomb": 0.5 * sum(float(np.vdot(j, d)) for j, d in zip(js, dts)),
            "exchange": -0.5 * sum(float(np.vdot(k, d)) for k, d in zip(ks, dts)),
        }
        for ib in gopen:  # open-shell corrections (eq. AOC; average_level for several configurations)
            pairs = [(0.5 * lam[ib], ib)] + [(mu[ia, ib], ia) for ia in gopen if ia < ib and mu[ia, ib]]
            for factor, ia in pairs:
                jo, ko = gopen[ib][ia]
                terms["coulomb"] += factor * float(np.vdot(jo, dos[ia]))
                terms["exchange"] -= factor * float(np.vdot(ko, dos[ia]))
        focks = []
        for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
            fc = ops.h[ib] + js[ib] - ks[ib]
            if dos[ib] is None or pattern[ib][1] == b.degeneracy:
                focks.append(fc)
                continue
            g, q = float(b.degeneracy), pattern[ib][1]
            fo = fc + lam[ib] * (gopen[ib][ib][0] - gopen[ib][ib][1]) if ib in gopen else fc.copy()
            for ia in gopen:
                if ia != ib and mu[ib, ia]:
                    fo = fo + mu[ib, ia] * (gopen[ia][ib][0] - gopen[ia][ib][1])
            closed, op, _ = indices(eps, ib)
            mc, mo = cm.T @ fc @ cm, cm.T @ fo @ cm  # MO basis (C^T S C = 1)
            r = mc.copy()
            r[op, :] = mo[op, :]
            r[:, op] = mo[:, op]
            r[closed, op] = (g * mc[closed, op] - q * mo[closed, op]) / (g - q)
            r[op, closed] = r[closed, op]
            sc = ops.s[ib] @ cm
            focks.append(sc @ r @ sc.T)
        terms["kinetic"] = terms["one_electron"] - terms["nuclear_attraction"]
        terms["two_electron"] = terms["coulomb"] + terms["exchange"]
        energy = terms["one_electron"] + terms["two_electron"]
        return energy, terms, dts, focks

    def gradient(ib, f, d):
        """DIIS error: the commutator FDS - SDF in the orthonormal basis X, projected on the
        window of bound orbitals (:func:`_window`) of the orbitals ``sol`` that made D:
        P (X^T(FDS - SDF)X) P with P = V Vᵀ, V = Xᵀ S Y.  Evaluated as (FY)ᵀ D (SY) - transpose,
        which avoids the rounding noise ε‖F‖‖D‖ (~0.1 for ζ ~ 1e13) of the full product;
        the components along the huge-energy directions are irrelevant for the density."""
        eps, cm = sol[ib]
        win = _window(eps, -c * c if rel else -np.inf)
        y = cm[:, win]
        sy = ops.s[ib] @ y
        a = (f @ y).T @ d @ sy
        v = xs[ib].T @ sy
        return v @ (a - a.T) @ v.T

    loop_start = time.perf_counter()
    sol = solve(ops.h)
    diis = _DIIS(options.diis_space) if options.diis else None
    focks_old = None
    history = []
    converged = False
    energy, terms, dms, focks = evaluate(sol)
    for it in range(1, options.max_iterations + 1):
        errors = list(pmap(lambda a: gradient(*a), [(ib, f, d) for ib, (f, d) in enumerate(zip(focks, dms))]))
        err = max(float(np.abs(e).max()) if e.size else 0.0 for e in errors)
        if diis is not None:
            used = diis.update(focks, errors)
        elif focks_old is not None and options.damping > 0:
            used = [(1 - options.damping) * f + options.damping * g for f, g in zip(focks, focks_old)]
        else:
            used = focks
        focks_old = used
        sol = solve(used)
        new_energy, terms, new_dms, focks = evaluate(sol)
        dd = {"LL": 0.0, "SL": 0.0, "SS": 0.0}
        for b, (dn, do) in enumerate(zip(new_dms, dms)):
            n = ops.sizes[b]
            diff = np.abs(shalf[b] @ (dn - do) @ shalf[b])  # Löwdin-orthonormal functions
            dd["LL"] = max(dd["LL"], float(diff[:n, :n].max()))
            if rel:
                dd["SL"] = max(dd["SL"], float(diff[n:, :n].max()))
                dd["SS"] = max(dd["SS"], float(diff[n:, n:].max()))
        de = new_energy - energy
        history.append(
            {
                "iteration": it,
                "energy": float(new_energy),
                "delta_e": float(de),
                "error": err,
                "dLL": dd["LL"],
                "dSL": dd["SL"],
                "dSS": dd["SS"],
            }
        )
        energy, dms = new_energy, new_dms
        if (
            it > 1
            and abs(de) < max(options.energy_tol, 64 * np.finfo(float).eps * abs(new_energy))
            and dd["LL"] < options.thdll
            and dd["SL"] < options.thdsl
            and dd["SS"] < options.thdss
        ):
            converged = True
            break
    orb_e, occs, coefs = [], [], []
    for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
        closed, op, pos = indices(eps, ib)
        orb_e.append(eps[pos])
        coefs.append(cm[:, list(closed) + ([op] if op is not None else [])])
        nc, q = pattern[ib]
        occs.append([float(b.degeneracy)] * nc + ([q] if q > 0 else []))
    conf_energies = []
    if configurations:
        # E_K of every configuration with the common orbitals: closed form on D_C + (o_K/q̄) D_O
        # plus its own same-shell terms (eq. AOC); Σ_K w_K E_K is the energy minimized
        dcs, dos_ = [], []
        for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
            closed, op, _ = indices(eps, ib)
            dcs.append(b.degeneracy * cm[:, closed] @ cm[:, closed].T)
            dos_.append(np.outer(cm[:, op], cm[:, op]) if op is not None else None)  # per electron
        for occ_k in conf_occ:
            dk = [dc + (occ_k[ib] * do if do is not None else 0.0) for ib, (dc, do) in enumerate(zip(dcs, dos_))]
            jk, kk = engine.two_electron(dk)
            e_k = sum(float(np.vdot(h, d) + 0.5 * np.vdot(j - k, d)) for h, j, k, d in zip(ops.h, jk, kk, dk))
            for ib, (do, b) in enumerate(zip(dos_, ops.blocks)):
                o, g = occ_k[ib], b.degeneracy
                if do is not None and 0 < o < g:
                    jo, ko = engine.two_electron_block(ib, o * do)
                    e_k += 0.5 * (o - g) / (o * (g - 1.0)) * float(np.vdot(jo - ko, o * do))
            conf_energies.append(e_k)
    if pool is not None:
        pool.shutdown()
    timings = {k: v for k, v in engine.timings.items() if k != "fock"}
    timings.update(
        fock_per_iteration=float(np.mean(fock_times)),
        fock_builds=len(fock_times),
        scf_loop=time.perf_counter() - loop_start,
    )
    result = AtomResult(
        element=element or SYMBOLS[z],
        z=int(z),
        relativistic=rel,
        light_speed=c,
        nucleus=nucleus.model,
        converged=converged,
        energy=float(energy),
        components=terms,
        blocks=[b.label for b in ops.blocks],
        orbital_energies=orb_e,
        occupations=occs,
        exponents=[
            tuple(np.asarray(x, dtype=float) for x in e) if _is_pair(e) else np.asarray(e, dtype=float)
            for e in exponents
        ],
        block_exponents=block_exponents(exponents, rel)[1],
        iterations=len(history),
        history=history,
        wall_time=time.perf_counter() - start,
        coefficients=coefs,
        device=engine.device,
        timings=timings,
        configuration_energies=conf_energies,
    )
    if not converged:
        raise ConvergenceError(
            f"atomic SCF not converged in {options.max_iterations} iterations "
            f"(last ΔE {history[-1]['delta_e']:.2e} Eh); raise maxitr",
            result,
        )
    return result
