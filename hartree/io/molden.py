"""Molden files: geometry, basis and molecular orbitals for viewers (Molden, Jmol, VMD).

hartree keeps AOs in PySCF order and normalisation; Molden wants its own.
Per shell the conversion is a permutation and, for cartesian shells, a scale:

* spherical (flags ``[5D7F]`` and ``[9G]``): Molden orders m as 0, +1, -1, +2, -2, ...
  whereas hartree stores m = -l..l; both use unit-normalised real solid harmonics,
  so only the order changes.  p shells are x, y, z in both.
* cartesian (no flag, Molden's default 6D/10F/15G): Molden lists components in
  its own order (``xx, yy, zz, xy, xz, yz`` for d, see ``MOLDEN_CARTESIAN_ORDER``)
  and every component normalised to 1.  hartree's cartesian AOs share one radial
  factor, so x^2 and xy have different norms (``shells.cartesian_norm``); MO
  coefficients are multiplied by that norm.

Contraction coefficients in ``[GTO]`` are written for normalised primitives, the
convention of basis-set libraries that Molden readers expect.
Molden defines shells up to g (l = 4); larger l raises ``InputError``.
"""

import numpy as np

from ..constants import element_symbol
from ..errors import InputError
from .files import write_text
from .shells import ao_count, cartesian_norm, shell_primitives, shells_by_atom

#: Largest angular momentum the Molden format defines.
MOLDEN_MAX_L = 4

_SHELL_LETTERS = "spdfg"

#: Molden's order of cartesian components for l = 0..4, as strings of axis letters.
MOLDEN_CARTESIAN_ORDER = {
    0: [""],
    1: ["x", "y", "z"],
    2: ["xx", "yy", "zz", "xy", "xz", "yz"],
    3: ["xxx", "yyy", "zzz", "xyy", "xxy", "xxz", "xzz", "yzz", "yyz", "xyz"],
    4: [
        "xxxx",
        "yyyy",
        "zzzz",
        "xxxy",
        "xxxz",
        "yyyx",
        "yyyz",
        "zzzx",
        "zzzy",
        "xxyy",
        "xxzz",
        "yyzz",
        "xxyz",
        "yyxz",
        "zzxy",
    ],
}


def _pyscf_cartesian_components(l):
    """(i, j, k) exponents of hartree's cartesian order: i descending, then j descending."""
    return [(i, j, l - i - j) for i in range(l, -1, -1) for j in range(l - i, -1, -1)]


def spherical_shell_order(l):
    """Positions (in hartree's m = -l..l order) of Molden's spherical components of one shell."""
    if l <= 1:
        return list(range(2 * l + 1))  # s; p is x, y, z in both conventions
    order = [l]
    for m in range(1, l + 1):
        order += [l + m, l - m]
    return order


def cartesian_shell_order_and_scale(l):
    """(positions in hartree's cartesian order, norms) of Molden's cartesian components.

    A Molden coefficient is hartree's coefficient times the norm of hartree's AO.
    """
    index = {c: n for n, c in enumerate(_pyscf_cartesian_components(l))}
    positions, scales = [], []
    for label in MOLDEN_CARTESIAN_ORDER[l]:
        ijk = (label.count("x"), label.count("y"), label.count("z"))
        positions.append(index[ijk])
        scales.append(cartesian_norm(*ijk))
    return positions, scales


def check_molden_supported(basis):
    """Raise InputError if the basis has shells Molden cannot describe (l > 4)."""
    max_l = int(np.max(basis.shell_l)) if len(basis.shell_l) else 0
    if max_l > MOLDEN_MAX_L:
        raise InputError(
            f"Molden files support shells up to g (l={MOLDEN_MAX_L}); basis {basis.name!r} "
            f"has l={max_l} functions. Write --json instead or pick a smaller basis"
        )


def molden_ao_map(basis, natm):
    """AO permutation and scale from hartree's AO order to Molden's.

    Returns (perm, scale), both of length nao: Molden AO k is hartree AO perm[k],
    and its MO coefficient is ``scale[k] * C[perm[k], :]``.  Shells are grouped by
    atom, as Molden's [GTO] section is.
    """
    check_molden_supported(basis)
    ao_loc = np.asarray(basis.ao_loc)
    perm, scale = [], []
    for shells in shells_by_atom(basis, natm):
        for shell in shells:
            l = int(basis.shell_l[shell])
            first = int(ao_loc[shell])
            if basis.pure:
                positions, norms = spherical_shell_order(l), [1.0] * (2 * l + 1)
            else:
                positions, norms = cartesian_shell_order_and_scale(l)
            if int(ao_loc[shell + 1]) - first != ao_count(l, basis.pure):
                raise InputError(f"basis shell {shell} has an inconsistent AO count")
            perm += [first + p for p in positions]
            scale += norms
    return np.array(perm, dtype=np.int64), np.array(scale)


def _atoms_section(molecule):
    lines = ["[Atoms] AU"]
    for atom, (z, xyz) in enumerate(zip(molecule.numbers, np.asarray(molecule.coords))):
        symbol = element_symbol(int(z))
        lines.append(f"{symbol:<2s} {atom + 1:5d} {int(z):3d} {xyz[0]:20.12f} {xyz[1]:20.12f} {xyz[2]:20.12f}")
    return lines


def _gto_section(basis, natm):
    lines = ["[GTO]"]
    for atom, shells in enumerate(shells_by_atom(basis, natm)):
        lines.append(f"{atom + 1:5d} 0")
        for shell in shells:
            l = int(basis.shell_l[shell])
            exponents, coefficients = shell_primitives(basis, shell)
            lines.append(f" {_SHELL_LETTERS[l]} {len(exponents):4d} 1.00")
            lines += [f" {a:22.14e} {c:22.14e}" for a, c in zip(exponents, coefficients)]
        lines.append("")
    return lines


def _mo_block(mo_energy, mo_coeff, mo_occ, spin, perm, scale):
    lines = []
    coeff = mo_coeff[perm, :] * scale[:, None]
    for n in range(coeff.shape[1]):
        lines += [" Sym= A", f" Ene= {mo_energy[n]:.12f}", f" Spin= {spin}", f" Occup= {mo_occ[n]:.8f}"]
        lines += [f" {k + 1:5d} {c: .14e}" for k, c in enumerate(coeff[:, n])]
    return lines


def _orbital_sets(result):
    """[(spin label, energies, coefficients, occupations)] for RHF/ROHF (one set) or UHF (two)."""
    mo_coeff = np.asarray(result.mo_coeff)
    mo_energy = np.asarray(result.mo_energy)
    mo_occ = np.asarray(result.mo_occ)
    if mo_coeff.ndim == 3:
        return [("Alpha", mo_energy[0], mo_coeff[0], mo_occ[0]), ("Beta", mo_energy[1], mo_coeff[1], mo_occ[1])]
    return [("Alpha", mo_energy, mo_coeff, mo_occ)]


def molden_text(result, *, title=None):
    """The Molden file for an SCFResult, as one string (pure function)."""
    molecule, basis = result.molecule, result.basis
    natm = len(molecule.numbers)
    perm, scale = molden_ao_map(basis, natm)
    if title is None:
        title = f"{result.method.upper()}/{basis.name} energy {result.energy:.10f} Eh (written by hartree)"
    lines = ["[Molden Format]", "[Title]", title]
    lines += _atoms_section(molecule)
    lines += _gto_section(basis, natm)
    if basis.pure:
        lines += ["[5D7F]", "[9G]"]
    lines.append("[MO]")
    for spin, energy, coeff, occ in _orbital_sets(result):
        lines += _mo_block(energy, coeff, occ, spin, perm, scale)
    return "\n".join(lines) + "\n"


def write_molden(path, result, *, title=None):
    """Write the Molden file for an SCFResult (geometry, basis, all MOs) to ``path``."""
    write_text(path, molden_text(result, title=title))  # atomic (hartree.io.files)
