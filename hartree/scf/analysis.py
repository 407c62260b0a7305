"""Properties of a converged SCF state: Mulliken charges, dipole moment, <S^2>,
energy components.  Pure functions of densities and engine integrals.

Densities follow hartree.scf.fock: ``dm`` (nset, nao, nao), RHF total, UHF/ROHF
alpha and beta.
"""

from __future__ import annotations

import numpy as np

from ..arrays import to_numpy
from .fock import total_dm


def mulliken_charges(dm, s, numbers, atom_slices):
    """Mulliken charges q_A = Z_A - sum_{mu in A} (D S)_{mu mu} (Mulliken 1955), (natm,).

    dm: (nset, nao, nao); s: (nao, nao) overlap; numbers: (natm,) Z;
    atom_slices: (natm, 4) as Basis.atom_slices() (AO start/stop in columns 2, 3).
    """
    pop = np.einsum("ij,ji->i", to_numpy(total_dm(dm)), to_numpy(s))
    z = np.asarray(numbers, dtype=float)
    q = z.copy()
    for a in range(z.size):
        q[a] -= pop[int(atom_slices[a, 2]) : int(atom_slices[a, 3])].sum()
    return q


def dipole_moment(dm, dipole_ints, numbers, coords):
    """Dipole (3,) in a.u. about the origin of ``dipole_ints``:
    mu = sum_A Z_A R_A - sum_{mu nu} D_{mu nu} <mu| r |nu>.

    dipole_ints: (3, nao, nao) electron-position integrals about (0,0,0); coords bohr.
    Multiply by 2.541746473 to get Debye (done at the CLI).
    """
    d = to_numpy(total_dm(dm))
    elec = np.einsum("xij,ji->x", to_numpy(dipole_ints), d)
    nuc = np.einsum("a,ax->x", np.asarray(numbers, dtype=float), np.asarray(coords, dtype=float))
    return nuc - elec


def spin_square(dm, s, nalpha, nbeta):
    """<S^2> of a single determinant with spin densities (D_a, D_b):
    <S^2> = S_z^2 + (N_a + N_b)/2 - tr(D_a S D_b S), S_z = (N_a - N_b)/2
    (e.g. Szabo & Ostlund eq. 3.127 written with densities).  Exactly S(S+1)
    for ROHF, where the beta space lies inside the alpha space.
    """
    da, db = to_numpy(dm[0]), to_numpy(dm[1])
    s = to_numpy(s)
    sz = 0.5 * (nalpha - nbeta)
    overlap = float(np.sum((da @ s) * (s @ db)))  # tr(Da S Db S) = sum_ij (DaS)_ij (DbS)_ji
    return sz * sz + 0.5 * (nalpha + nbeta) - overlap


def energy_components(terms, nuclear_repulsion):
    """The energy dict of SCFResult: one_electron, coulomb, exchange (Kohn-Sham: the scaled
    exact exchange), xc (Kohn-Sham only: E_xc, semilocal), vv10 (VV10 functionals only: the
    non-local correlation E_nlc), nuclear_repulsion, total (Eh)."""
    out = {k: float(terms[k]) for k in ("one_electron", "coulomb", "exchange", "xc", "vv10") if k in terms}
    out["nuclear_repulsion"] = float(nuclear_repulsion)
    out["total"] = sum(out.values())
    return out
