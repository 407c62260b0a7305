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
changes below thdll, thdsl, thdss (thesis §3.5, $scf), the SL and SS blocks measured for
the small-component functions (d/dr + κ/r)P_i without the 1/(2c) of the modified Dirac
basis, i.e. scaled by 1/(2c) and 1/(4c²).  Acceleration: DIIS on the effective Fock
supermatrices with the error X^T(FDS - SDF)X, or damping with dfctr.
"""

import time

import numpy as np

from ..errors import ConvergenceError, InputError
from .config import SYMBOLS, configuration
from .angular import blocks_for
from .operators import build_operators, two_electron, two_electron_block
from .options import AtomSCFOptions
from .result import AtomResult


def _orthogonalizer(s, threshold):
    """Canonical orthogonalization X (dim, m) with X^T S X = 1."""
    w, u = np.linalg.eigh(s)
    keep = w > threshold * w[-1]
    return u[:, keep] / np.sqrt(w[keep])


class _DIIS:
    def __init__(self, space):
        self.space = space
        self.focks, self.errors = [], []

    def update(self, focks, errors):
        self.focks.append([f.copy() for f in focks])
        self.errors.append(np.concatenate([e.ravel() for e in errors]))
        if len(self.focks) > self.space:
            self.focks.pop(0)
            self.errors.pop(0)
        m = len(self.focks)
        if m < 2:
            return focks
        b = -np.ones((m + 1, m + 1))
        b[m, m] = 0.0
        e = np.array(self.errors)
        b[:m, :m] = e @ e.T
        rhs = np.zeros(m + 1)
        rhs[m] = -1.0
        try:
            coef = np.linalg.solve(b, rhs)[:m]
        except np.linalg.LinAlgError:
            coef = np.linalg.lstsq(b, rhs, rcond=None)[0][:m]
        return [sum(c * f[i] for c, f in zip(coef, self.focks)) for i in range(len(focks))]


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
        raise InputError(f"the configuration occupies symmetries beyond the largest l of the basis "
                         f"(l = {ops.blocks[-1].l}); add windows or exponents for them")
    pattern = list(pattern[:nblock]) + [(0, 0.0)] * (nblock - len(pattern))
    for (n, q), b, size in zip(pattern, ops.blocks, ops.sizes):
        if n < 0 or not 0.0 <= q <= b.degeneracy:
            raise InputError(f"block {b.label}: {n} closed shells and {q} open electrons are impossible "
                             f"(a shell holds {b.degeneracy})")
        if n + (q > 0) > size:
            raise InputError(f"more electrons than spinors in {b.label}: {n + (q > 0)} occupied shells "
                             f"but only {size} basis functions")
    return pattern


def kernel(z, exponents, nucleus, options=None, shells=None, element=None, block_shells=None,
           open_shells=None):
    """Run the SCF for atomic number z with exponents per l (bohr^-2).

    Occupations: default is the ground configuration in Madelung order (:mod:`config`);
    ``shells`` gives closed radial shells per l (e.g. Ne: [2, 1]; both κ of an l get the
    count), ``block_shells`` closed shells per symmetry block (κ order of
    :func:`hartree.atom.angular.blocks_for`), ``open_shells`` the open-shell electrons per
    block (0 for none; one open shell per block, above the closed ones).  Returns an
    :class:`AtomResult`; raises ConvergenceError (with the last state in ``.result``).
    """
    options = options or AtomSCFOptions()
    start = time.perf_counter()
    rel = options.relativistic
    c = options.light_speed
    ops = build_operators(exponents, nucleus, c, rel)
    pattern = _occupation_pattern(ops, z, shells, block_shells, open_shells)
    xs = [_orthogonalizer(s, options.overlap_threshold) for s in ops.s]

    def solve(focks):
        out = []
        for f, x in zip(focks, xs):
            e, v = np.linalg.eigh(x.T @ f @ x)
            out.append((e, x @ v))
        return out

    def indices(eps, ib):
        """(closed, open or None, positive-energy) column indices of block ib."""
        pos = np.nonzero(eps > -c ** 2)[0] if rel else np.arange(len(eps))
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
        js, ks = two_electron(ops, dts)
        terms = {"one_electron": sum(float(np.vdot(h, d)) for h, d in zip(ops.h, dts)),
                 "nuclear_attraction": sum(float(np.vdot(v, d)) for v, d in zip(ops.v, dts)),
                 "coulomb": 0.5 * sum(float(np.vdot(j, d)) for j, d in zip(js, dts)),
                 "exchange": -0.5 * sum(float(np.vdot(k, d)) for k, d in zip(ks, dts))}
        focks = []
        for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
            fc = ops.h[ib] + js[ib] - ks[ib]
            if dos[ib] is None or pattern[ib][1] == b.degeneracy:
                focks.append(fc)
                continue
            g, q = float(b.degeneracy), pattern[ib][1]
            lam = (q - g) / (q * (g - 1.0))                                  # eq. (AOC)
            jo, ko = two_electron_block(ops, ib, dos[ib])
            terms["coulomb"] += 0.5 * lam * float(np.vdot(jo, dos[ib]))
            terms["exchange"] -= 0.5 * lam * float(np.vdot(ko, dos[ib]))
            fo = fc + lam * (jo - ko)
            closed, op, _ = indices(eps, ib)
            mc, mo = cm.T @ fc @ cm, cm.T @ fo @ cm                          # MO basis (C^T S C = 1)
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

    sol = solve(ops.h)
    diis = _DIIS(options.diis_space) if options.diis else None
    focks_old = None
    history = []
    converged = False
    energy, terms, dms, focks = evaluate(sol)
    for it in range(1, options.max_iterations + 1):
        errors = [x.T @ (f @ d @ s - s @ d @ f) @ x for f, d, s, x in zip(focks, dms, ops.s, xs)]
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
            diff = np.abs(dn - do)
            dd["LL"] = max(dd["LL"], float(diff[:n, :n].max()))
            if rel:   # in the physical small-component normalization Q = (2c)·(scaled Q)
                dd["SL"] = max(dd["SL"], float(diff[n:, :n].max()) / (2.0 * c))
                dd["SS"] = max(dd["SS"], float(diff[n:, n:].max()) / (4.0 * c * c))
        de = new_energy - energy
        history.append({"iteration": it, "energy": float(new_energy), "delta_e": float(de),
                        "error": err, "dLL": dd["LL"], "dSL": dd["SL"], "dSS": dd["SS"]})
        energy, dms = new_energy, new_dms
        if (it > 1 and abs(de) < options.energy_tol and dd["LL"] < options.thdll
                and dd["SL"] < options.thdsl and dd["SS"] < options.thdss):
            converged = True
            break
    orb_e, occs, coefs = [], [], []
    for ib, ((eps, cm), b) in enumerate(zip(sol, ops.blocks)):
        closed, op, pos = indices(eps, ib)
        orb_e.append(eps[pos])
        coefs.append(cm[:, list(closed) + ([op] if op is not None else [])])
        nc, q = pattern[ib]
        occs.append([float(b.degeneracy)] * nc + ([q] if q > 0 else []))
    result = AtomResult(
        element=element or SYMBOLS[z], z=int(z), relativistic=rel, light_speed=c, nucleus=nucleus.model,
        converged=converged, energy=float(energy), components=terms,
        blocks=[b.label for b in ops.blocks], orbital_energies=orb_e, occupations=occs,
        exponents=[np.asarray(e, dtype=float) for e in exponents], iterations=len(history),
        history=history, wall_time=time.perf_counter() - start, coefficients=coefs)
    if not converged:
        raise ConvergenceError(f"atomic SCF not converged in {options.max_iterations} iterations "
                               f"(last ΔE {history[-1]['delta_e']:.2e} Eh); raise maxitr", result)
    return result
