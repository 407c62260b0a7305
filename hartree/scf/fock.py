"""Densities, Fock matrices, energies and occupations for RHF, UHF and ROHF.

Shapes (nset = 1 for RHF, 2 for UHF/ROHF):

* ``dm`` (nset, nao, nao): RHF the total density D = 2 C_occ C_occ^T; UHF and
  ROHF the spin densities (D_alpha, D_beta).
* ``vj, vk`` (nset, nao, nao): J[D] and K[D] of each set as returned by the engine.
* ``fock`` (nset, nao, nao): RHF F = h + J - K/2 (Roothaan 1951);
  UHF/ROHF F_s = h + J[D_a + D_b] - K[D_s] (Pople & Nesbet 1954).

The electronic energy is E = 1/2 sum_s tr(D_s (h + F_s)), split into
one-electron tr(D h), Coulomb 1/2 tr(D J) and exchange parts.

Kohn-Sham (RKS on the RHF layout, UKS on the UHF one): the exchange is scaled by the
functional's exact-exchange fraction c_x (``hf_exchange``; 1 for Hartree-Fock, 0 for a pure
functional, when K is not built at all and ``vk`` is None), F = h + J - (c_x/2) K (RKS),
F_s = h + J[D_a + D_b] - c_x K[D_s] (UKS); the caller adds V_xc and E_xc.
"""

from __future__ import annotations

from ..arrays import array_module


def spin_counts(nelectron, multiplicity):
    """(n_alpha, n_beta) from the electron count and 2S+1."""
    nopen = multiplicity - 1
    return (nelectron + nopen) // 2, (nelectron - nopen) // 2


def nset(method):
    """Number of density/Fock sets the method carries: 1 (RHF) or 2."""
    return 1 if method == "rhf" else 2


def fock_from_jk(method, h, vj, vk, hf_exchange=1.0):
    """Fock matrices (nset, nao, nao) from h (nao, nao) and J, K of ``dm``; the exchange
    scaled by ``hf_exchange`` (c_x; vk may be None when it is 0)."""
    xp = array_module(h)
    cx = float(hf_exchange)
    if method == "rhf":
        f = h + vj[0]
        return (f if cx == 0.0 else f - (0.5 * cx) * vk[0])[None]
    jtot = vj[0] + vj[1]
    if cx == 0.0:
        return xp.stack([h + jtot, h + jtot])
    return xp.stack([h + jtot - cx * vk[0], h + jtot - cx * vk[1]])


def energy_terms(method, h, dm, vj, vk, hf_exchange=1.0):
    """Electronic energy parts in Eh: one_electron, coulomb, exchange (floats); the
    exchange scaled by ``hf_exchange`` (c_x; vk may be None when it is 0):
    RHF/RKS -c_x/4 tr(D K), UHF/UKS -c_x/2 sum_s tr(D_s K_s)."""
    xp = array_module(h)
    cx = float(hf_exchange)

    def tr(a, b):
        return float(xp.sum(a * b))  # tr(A B) for symmetric A, B

    if method == "rhf":
        d = dm[0]
        ex = 0.0 if cx == 0.0 else -0.25 * cx * tr(d, vk[0])
        return {"one_electron": tr(d, h), "coulomb": 0.5 * tr(d, vj[0]), "exchange": ex}
    dt = dm[0] + dm[1]
    ex = 0.0 if cx == 0.0 else -0.5 * cx * (tr(dm[0], vk[0]) + tr(dm[1], vk[1]))
    return {"one_electron": tr(dt, h), "coulomb": 0.5 * tr(dt, vj[0] + vj[1]), "exchange": ex}


def argsort_stable(a):
    """Indices sorting a (1-D) with a stable sort: numpy kind="stable"; cupy's sort
    is always stable (and takes no ``kind`` other than None in older versions)."""
    xp = array_module(a)
    return xp.argsort(a, kind="stable") if xp.__name__ == "numpy" else xp.argsort(a)


def occupations(method, mo_energy, nalpha, nbeta):
    """Aufbau occupations (lowest orbitals first).

    RHF/ROHF: mo_energy (nmo,) -> occupations 2 (closed), 1 (open, ROHF), 0.
    UHF: mo_energy (2, nmo) -> (2, nmo) of 1/0.
    """
    xp = array_module(mo_energy)
    if method == "uhf":
        occ = xp.zeros(mo_energy.shape)
        for s, n in enumerate((nalpha, nbeta)):
            idx = argsort_stable(mo_energy[s])[:n]
            occ[s, idx] = 1.0
        return occ
    occ = xp.zeros(mo_energy.shape)
    order = argsort_stable(mo_energy)
    occ[order[:nbeta]] = 2.0
    occ[order[nbeta:nalpha]] = 1.0
    return occ


def make_density(method, mo_coeff, mo_occ):
    """Densities (nset, nao, nao) from orbitals and occupations."""
    xp = array_module(mo_coeff)
    if method == "rhf":
        return ((mo_coeff * mo_occ) @ mo_coeff.T)[None]
    if method == "uhf":
        return xp.stack([(mo_coeff[s] * mo_occ[s]) @ mo_coeff[s].T for s in range(2)])
    occ_a = (mo_occ > 0).astype(mo_coeff.dtype)
    occ_b = (mo_occ > 1).astype(mo_coeff.dtype)
    return xp.stack([(mo_coeff * occ_a) @ mo_coeff.T, (mo_coeff * occ_b) @ mo_coeff.T])


def rohf_effective_fock(fock, mo_coeff, mo_occ, s):
    """Roothaan-type effective Fock matrix in the AO basis (nao, nao).

    In the MO basis of the current orbitals, with spaces c (doubly occupied),
    o (singly occupied, alpha) and v (empty) and Fc = (F_a + F_b)/2 (Roothaan
    1960; diagonal blocks as in Guest & Saunders 1974)::

            c       o      v
        c   Fc      F_b    Fc
        o   F_b     Fc     F_a
        v   Fc      F_a    Fc

    The off-diagonal blocks are proportional to the energy gradient for
    rotations between the spaces, so at convergence the matrix is block
    diagonal and its eigenvectors are the ROHF orbitals.  Returned as
    S C F_mo C^T S, which has the MO-basis matrix F_mo for the orbitals C.
    """
    xp = array_module(mo_coeff)
    fa = mo_coeff.T @ fock[0] @ mo_coeff
    fb = mo_coeff.T @ fock[1] @ mo_coeff
    fc = 0.5 * (fa + fb)
    core = mo_occ > 1.5
    opn = (mo_occ > 0.5) & ~core
    vir = mo_occ < 0.5
    f = fc.copy()
    co = core[:, None] & opn[None, :]  # outer products of the masks
    ov = opn[:, None] & vir[None, :]
    f = xp.where(co | co.T, fb, f)
    f = xp.where(ov | ov.T, fa, f)
    sc = s @ mo_coeff
    return sc @ f @ sc.T


def commutator_errors(fock_list, dm_list, s, x):
    """Orthonormal-basis commutators X^T (F D S - S D F) X, stacked (n, nmo, nmo)."""
    xp = array_module(s)
    out = []
    for f, d in zip(fock_list, dm_list):
        fds = f @ d @ s
        out.append(x.T @ (fds - fds.T) @ x)
    return xp.stack(out)


def level_shift_fock(method, fock_diag, dm, s, shift):
    """Add ``shift`` (Eh) to the empty levels of the Fock matrices to diagonalise.

    RHF: F + shift (S - S D S / 2); UHF: F_s + shift (S - S D_s S);
    ROHF (effective Fock): empty levels by shift, open-shell levels by shift/2.
    Shifting raises virtual orbital energies, damping occupied-virtual mixing
    (Saunders & Hillier 1973).  Does not change the converged orbitals.
    """
    if shift == 0.0:
        return fock_diag
    xp = array_module(s)
    if method == "rhf":
        return (fock_diag[0] + shift * (s - 0.5 * s @ dm[0] @ s))[None]
    if method == "uhf":
        return xp.stack([fock_diag[k] + shift * (s - s @ dm[k] @ s) for k in range(2)])
    proj = 0.5 * (s - s @ dm[0] @ s) + 0.5 * (s - s @ dm[1] @ s)
    return (fock_diag[0] + shift * proj)[None]


def total_dm(dm):
    """Total density (nao, nao) from a (nset, nao, nao) stack."""
    return dm[0] if dm.shape[0] == 1 else dm[0] + dm[1]
