"""Initial guesses: core Hamiltonian, superposition of atomic densities (SAD),
and orbitals carried over from another run (checkpoint).

Every guess returns a :class:`Guess`: densities ``dm`` (nset, nao, nao) in the
method's convention (RHF total, UHF/ROHF alpha and beta) and, when the guess
has them, orbitals (mo_coeff, mo_occ) in the method's layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import array_module, to_numpy
from ..molecule import Molecule
from . import fock as fk
from .diis import DIISHistory, cdiis_coefficients
from .linalg import eigh_orth, inv_sqrt_sym, orthogonalizer


@dataclass
class Guess:
    """An initial state: dm (nset, nao, nao), optional orbitals, a short description."""

    dm: object
    mo_coeff: object | None = None
    mo_occ: object | None = None
    description: str = ""
    mo_energy: object | None = None


def core_guess(method, h, x, nalpha, nbeta):
    """Orbitals of the bare-nucleus Hamiltonian h (nao, nao), aufbau occupied."""
    e, c = eigh_orth(h, x)
    if method == "uhf":
        xp = array_module(c)
        mo_c = xp.stack([c, c])
        occ = fk.occupations("uhf", xp.stack([e, e]), nalpha, nbeta)
    else:
        mo_c = c
        occ = fk.occupations(method, e, nalpha, nbeta)
    return Guess(fk.make_density(method, mo_c, occ), mo_c, occ, "core Hamiltonian")


def split_total_density(method, dm_total):
    """(nset, nao, nao) densities from a total density: UHF/ROHF get D/2 each."""
    xp = array_module(dm_total)
    if method == "rhf":
        return dm_total[None]
    return xp.stack([0.5 * dm_total, 0.5 * dm_total])


# --------------------------------------------------------------------------- SAD
SAD_DESCRIPTION = "superposition of atomic densities"
_SAD_CACHE = {}
_SAD_CACHE_MAX = 64


def _atom_key(z, basis_atom, engine_cls):
    """Cache key: element, engine class and the exact shell data of the atom."""
    return (
        int(z),
        engine_cls.__module__ + "." + engine_cls.__qualname__,
        basis_atom.pure,
        basis_atom.shell_l.tobytes(),
        basis_atom.shell_nprim.tobytes(),
        basis_atom.exponents.tobytes(),
        basis_atom.coefficients.tobytes(),
    )


def _multiplet_occupations(e, nelec, tol=1e-5):
    """Spin-summed fractional aufbau occupations for eigenvalues e (ascending).

    Orbitals whose energies agree within ``tol`` (Eh) form one degenerate
    multiplet; electrons fill multiplets from the bottom, each orbital of a
    multiplet getting the same share (at most 2).  This keeps a spherically
    symmetric atomic density spherical, the spherical averaging of SAD.
    """
    occ = np.zeros(e.size)
    left = float(nelec)
    i = 0
    while i < e.size and left > 1e-12:
        j = i + 1
        while j < e.size and e[j] - e[j - 1] < tol:
            j += 1
        put = min(left, 2.0 * (j - i))
        occ[i:j] = put / (j - i)
        left -= put
        i = j
    return occ


def atomic_density(z, s, h, jk, max_cycle=60):
    """Spherically averaged, spin-restricted fractional-occupation HF density of one
    neutral atom (nao_atom, nao_atom) in its own basis, in the array module of ``s``.

    s, h: the atom's overlap and core Hamiltonian (its own nucleus only), (nao_atom,
    nao_atom); jk: d (nao_atom, nao_atom) -> (J[d], K[d]) of the same shape and module.
    Self-consistent field with F = h + J - K/2 and multiplet-averaged aufbau occupations,
    accelerated by DIIS; a loose tolerance is enough for a guess.  Densities, Fock
    matrices and DIIS stay in the module of ``s``; only the orbital energies (for the
    occupations) and scalars come to the host.
    """
    xp = array_module(s)
    x, _ = orthogonalizer(s)
    nelec = int(z)
    e, c = eigh_orth(h, x)
    occ = xp.asarray(_multiplet_occupations(to_numpy(e), nelec))
    d = (c * occ) @ c.T
    diis = DIISHistory(8)
    e_old = None
    for _ in range(max_cycle):
        vj, vk = jk(d)
        f = h + vj - 0.5 * vk
        energy = float(xp.sum(d * (h + 0.5 * (f - h))))
        err = fk.commutator_errors([f], [d], s, x)
        diis.push(f[None], err, d[None], f[None], energy)
        if e_old is not None and abs(energy - e_old) < 1e-8 and float(xp.abs(err).max()) < 1e-5:
            break
        e_old = energy
        f_use = diis.combine(cdiis_coefficients([en[1] for en in diis.entries]))[0] if len(diis) > 1 else f
        e, c = eigh_orth(f_use, x)
        occ = xp.asarray(_multiplet_occupations(to_numpy(e), nelec))
        d = (c * occ) @ c.T
    return d


def _atom_centre(basis_atom):
    """(3,) position (bohr) of a one-atom basis: its first shell's centre (origin if none)."""
    return np.asarray(basis_atom.shell_center[0] if basis_atom.nshell else np.zeros(3), dtype=np.float64)


def host_atomic_density(z, basis_atom, screening_threshold=1e-13):
    """:func:`atomic_density` of a free atom on the host (numpy): one- and two-electron
    integrals of the atom's own basis from the CPU integral code (no engine object); J/K
    screened with ``screening_threshold`` (hartree) as the CPU engine does."""
    from ..integrals import one_electron
    from ..integrals.eri import ShellPairs
    from ..integrals.jk import jk, schwarz_order

    charges = np.asarray([int(z)], dtype=np.float64)
    coords = _atom_centre(basis_atom).reshape(1, 3)
    s = one_electron.overlap(basis_atom)
    h = one_electron.kinetic(basis_atom) + one_electron.nuclear(basis_atom, charges, coords)
    pairs = ShellPairs.build(basis_atom)
    order = schwarz_order(pairs.schwarz)
    thr = float(screening_threshold)

    def atom_jk(d):
        vj, vk = jk(basis_atom, d[None], with_j=True, with_k=True, threshold=thr, pairs=pairs, order=order)
        return vj[0], vk[0]

    return atomic_density(z, s, h, atom_jk)


def engine_atomic_densities(engine, atoms):
    """:func:`atomic_density` of several free atoms with one engine for all of them.

    atoms: list of (z, basis_atom) (one-atom bases).  ``engine.for_molecule`` builds one
    engine, on the engine's device, over the atoms at their own centres; each atom's S, T
    and V (its own nucleus only) and, every iteration, J/K of its density placed in its
    diagonal block are that engine's, restricted to the block (the block of J and K of a
    density that lives in one atom's block holds that atom's integrals only).  Densities
    stay in the engine's array module throughout.  Returns the densities, in that module.
    """
    xp = engine.array_module()
    numbers = [int(z) for z, _ in atoms]
    centres = np.array([_atom_centre(b) for _, b in atoms]).reshape(-1, 3)
    free_atoms = Molecule(numbers=numbers, coords=centres, charge=0)
    free_basis = _joined(free_atoms, [b for _, b in atoms])
    free = engine.for_molecule(free_atoms, free_basis)
    nao = free_basis.nao
    slices = free_basis.atom_slices()
    overlap, kinetic = xp.asarray(free.overlap()), xp.asarray(free.kinetic())
    out = []
    for k, z in enumerate(numbers):
        block = slice(int(slices[k, 2]), int(slices[k, 3]))
        nuclear = xp.asarray(free.nuclear([float(z)], centres[k : k + 1]))
        s = xp.ascontiguousarray(overlap[block, block])
        h = xp.ascontiguousarray(kinetic[block, block] + nuclear[block, block])

        def atom_jk(d, block=block):
            dm = xp.zeros((1, nao, nao))
            dm[0, block, block] = d
            vj, vk = free.jk(dm, with_j=True, with_k=True)
            return vj[0, block, block], vk[0, block, block]

        out.append(atomic_density(z, s, h, atom_jk))
    return out


def _joined(molecule, bases):
    """One Basis over ``molecule`` holding the shells of the one-atom ``bases`` in order."""
    from ..basis import Basis

    def cat(name):
        return np.concatenate([np.asarray(getattr(b, name)) for b in bases])

    nprim = cat("shell_nprim")
    return Basis(
        name=bases[0].name,
        pure=bases[0].pure,
        shell_atom=np.concatenate([np.full(b.nshell, k) for k, b in enumerate(bases)]).astype(np.int64),
        shell_l=cat("shell_l"),
        shell_nprim=nprim,
        shell_prim_start=np.concatenate([[0], np.cumsum(nprim)[:-1]]).astype(np.int64),
        shell_center=cat("shell_center").reshape(-1, 3),
        exponents=cat("exponents"),
        coefficients=cat("coefficients"),
        atom_symbols=tuple(molecule.symbols),
    )


def sad_density(molecule, basis, engine, screening_threshold=1e-13):
    """Block-diagonal total density (nao, nao) from neutral atomic densities (numpy).

    Atomic densities are cached per (element, atom basis, engine class).  Those not in
    the cache are computed on the host with the CPU integral code when the engine's
    array module is numpy (:func:`host_atomic_density`), else with one engine for all of
    them on the engine's device (:func:`engine_atomic_densities`): no engine per element,
    and no density crosses between host and device during the atomic iterations.  The
    sum is not idempotent and its trace with S is the neutral electron count; the first
    Fock matrix is built from it directly.
    """
    nao = basis.nao
    d = np.zeros((nao, nao))
    slices = basis.atom_slices()
    engine_cls = type(engine)
    blocks, missing = [], {}
    for ia, z in enumerate(molecule.numbers):
        a0, a1 = int(slices[ia, 2]), int(slices[ia, 3])
        if a1 == a0:
            continue
        b_atom = basis.for_atoms([ia])
        key = _atom_key(z, b_atom, engine_cls)
        blocks.append((a0, a1, key))
        if key not in _SAD_CACHE and key not in missing:
            missing[key] = (int(z), b_atom)
    found = {key: _SAD_CACHE[key] for _, _, key in blocks if key in _SAD_CACHE}
    if missing:
        if engine.array_module() is np:
            dens = [host_atomic_density(z, b, screening_threshold) for z, b in missing.values()]
        else:
            dens = [to_numpy(a) for a in engine_atomic_densities(engine, list(missing.values()))]
        for key, da in zip(missing, dens):
            if len(_SAD_CACHE) >= _SAD_CACHE_MAX:
                _SAD_CACHE.pop(next(iter(_SAD_CACHE)))
            _SAD_CACHE[key] = found[key] = da
    for a0, a1, key in blocks:
        d[a0:a1, a0:a1] = found[key]
    return d


def sad_guess(method, molecule, basis, engine, screening_threshold=1e-13):
    """SAD guess in the method's density convention (UHF/ROHF: D/2 per spin), in the
    engine's array module."""
    d = sad_density(molecule, basis, engine, screening_threshold)
    xp = engine.array_module()
    return Guess(split_total_density(method, xp.asarray(d)), None, None, SAD_DESCRIPTION)


# --------------------------------------------------------------------------- orbitals
def guess_from_orbitals(method, mo_coeff, mo_energy, s, nalpha, nbeta, description):
    """Densities from another run's orbitals, re-orthonormalised in the current S.

    mo_coeff/mo_energy: (nao, nmo)/(nmo,) or, from UHF, (2, nao, nmo)/(2, nmo).
    Alpha electrons fill the lowest alpha orbitals, beta the lowest beta ones
    (RHF/ROHF orbitals serve both spins), so a converged RHF state seeds UHF,
    and a nearby geometry seeds a new one.  Occupied orbitals are
    Löwdin-orthonormalised with the new overlap (C (C^T S C)^-1/2), which keeps
    the electron count exact when the geometry changed.
    """
    xp = array_module(s)
    mo_coeff = xp.asarray(mo_coeff)
    mo_energy = xp.asarray(mo_energy)
    if mo_coeff.ndim == 2:
        coeffs = (mo_coeff, mo_coeff)
        energies = (mo_energy, mo_energy)
    else:
        coeffs = (mo_coeff[0], mo_coeff[1])
        energies = (mo_energy[0], mo_energy[1])
    dms, occ_orbs = [], []
    for c, e, n in zip(coeffs, energies, (nalpha, nbeta)):
        order = fk.argsort_stable(e)[:n]
        co = c[:, order]
        if n:
            co = co @ inv_sqrt_sym(co.T @ s @ co)
        occ_orbs.append(co)
        dms.append(co @ co.T)
    if method == "rhf":
        return Guess((dms[0] + dms[1])[None], None, None, description)
    dm = xp.stack(dms)
    if method == "rohf" and mo_coeff.ndim == 2:
        # Same orbitals for both spins: keep all of them (orthonormalised in the
        # current S) for the effective Fock matrix of the first cycle.
        cs = mo_coeff @ inv_sqrt_sym(mo_coeff.T @ s @ mo_coeff)
        occ = fk.occupations("rohf", mo_energy, nalpha, nbeta)
        return Guess(fk.make_density("rohf", cs, occ), cs, occ, description)
    return Guess(dm, None, None, description)
