"""The immutable `Basis`: flat arrays, one row per segmented shell.

See docs/architecture.md ("hartree.basis.Basis") for the contract.  Primitive
coefficients are stored for normalised radial primitives and include the
contraction normalisation (PySCF's ``mol._libcint_ctr_coeff`` convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import gamma, sqrt

import numpy as np

from .angular import MAX_L, cart_components, l_letter, ncart, nsph


def gaussian_integral(n: int, alpha: float | np.ndarray) -> float | np.ndarray:
    """∫_0^∞ r^n exp(-alpha r²) dr = Γ((n+1)/2) / (2 alpha^((n+1)/2)); alpha in bohr^-2."""
    return gamma((n + 1) / 2.0) / (2.0 * np.asarray(alpha, dtype=float) ** ((n + 1) / 2.0))


def primitive_norm(l: int, alpha: float | np.ndarray) -> float | np.ndarray:
    """Radial primitive normalisation N(l, a) = 1/sqrt(∫ r^(2l+2) exp(-2 a r²) dr).

    alpha: exponent(s) in bohr^-2 (scalar or array); returns the same shape.
    """
    return 1.0 / np.sqrt(gaussian_integral(2 * l + 2, 2.0 * np.asarray(alpha, dtype=float)))


def normalized_coefficients(l, exponents, coefficients):
    """Coefficients for normalised primitives of one normalised contraction.

    exponents, coefficients: (nprim,) raw values as printed in basis files.
    Returns c_i N(l, a_i) s with s chosen so that the radial function
    Σ_i c_i N(l,a_i) s r^l exp(-a_i r²) has ∫ R² r² dr = 1.
    """
    a = np.asarray(exponents, dtype=float)
    c = np.asarray(coefficients, dtype=float) * primitive_norm(l, a)
    # <R|R> = Σ_pq c_p c_q ∫ r^(2l+2) exp(-(a_p+a_q) r²) dr
    overlap = gaussian_integral(2 * l + 2, a[:, None] + a[None, :])
    return c / sqrt(float(c @ overlap @ c))


def _frozen(array, dtype, shape=None):
    out = np.array(array, dtype=dtype, copy=True)
    if shape is not None:
        out = out.reshape(shape)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class Basis:
    """A Gaussian basis on a molecule; arrays are read-only.

    Fields (nshell segmented shells, nprim_total primitives):
      name              str, basis name as given (or a description for mixed bases)
      pure              bool, spherical (True) or cartesian functions
      shell_atom        int64 (nshell,)  atom index of each shell
      shell_l           int64 (nshell,)  angular momentum
      shell_nprim       int64 (nshell,)  primitives per shell
      shell_prim_start  int64 (nshell,)  offset into exponents / coefficients
      shell_center      float64 (nshell, 3)  shell centre, bohr
      exponents         float64 (nprim_total,)  bohr^-2
      coefficients      float64 (nprim_total,)  c_i N(l,a_i), contraction normalised
      ao_loc            int64 (nshell+1,) first AO of each shell (pure or cartesian)
      cart_loc          int64 (nshell+1,) first function of each shell, cartesian
      atom_symbols      tuple[str], element symbol of each atom (labels only; extra
                        to the architecture table, may be empty)
    ``ao_loc``/``cart_loc`` are derived when passed as None.
    """

    name: str
    pure: bool
    shell_atom: np.ndarray
    shell_l: np.ndarray
    shell_nprim: np.ndarray
    shell_prim_start: np.ndarray
    shell_center: np.ndarray
    exponents: np.ndarray
    coefficients: np.ndarray
    ao_loc: np.ndarray | None = None
    cart_loc: np.ndarray | None = None
    atom_symbols: tuple[str, ...] = field(default=())

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "pure", bool(self.pure))
        for name in ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start"):
            set_(self, name, _frozen(getattr(self, name), np.int64).ravel())
        nshell = self.shell_l.shape[0]
        set_(self, "shell_center", _frozen(self.shell_center, np.float64, (nshell, 3)))
        set_(self, "exponents", _frozen(self.exponents, np.float64).ravel())
        set_(self, "coefficients", _frozen(self.coefficients, np.float64).ravel())
        set_(self, "atom_symbols", tuple(self.atom_symbols))
        for name in ("shell_atom", "shell_nprim", "shell_prim_start"):
            if getattr(self, name).shape != (nshell,):
                raise ValueError(f"Basis.{name} must have shape ({nshell},)")
        if self.exponents.shape != self.coefficients.shape:
            raise ValueError("Basis.exponents and Basis.coefficients differ in length")
        if nshell and (self.shell_l.min() < 0 or self.shell_l.max() > MAX_L):
            raise ValueError(f"Basis.shell_l must lie in 0..{MAX_L}")
        if nshell and (
            self.shell_nprim.min() < 1
            or (self.shell_prim_start + self.shell_nprim).max() > self.exponents.size
            or self.shell_prim_start.min() < 0
        ):
            raise ValueError("Basis.shell_prim_start/shell_nprim point outside the primitives")
        sizes_cart = np.array([ncart(int(l)) for l in self.shell_l], dtype=np.int64)
        sizes = np.array([nsph(int(l)) for l in self.shell_l], dtype=np.int64) if self.pure else sizes_cart
        cart_loc = np.concatenate([[0], np.cumsum(sizes_cart)]).astype(np.int64)
        ao_loc = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        for name, derived in (("ao_loc", ao_loc), ("cart_loc", cart_loc)):
            given = getattr(self, name)
            if given is not None and not np.array_equal(np.asarray(given), derived):
                raise ValueError(f"Basis.{name} is inconsistent with shell_l and pure")
            set_(self, name, _frozen(derived, np.int64))

    # ------------------------------------------------------------ sizes
    @property
    def nshell(self) -> int:
        """Number of segmented shells."""
        return int(self.shell_l.shape[0])

    @property
    def nao(self) -> int:
        """Number of basis functions (spherical if pure, else cartesian)."""
        return int(self.ao_loc[-1])

    @property
    def ncart(self) -> int:
        """Number of cartesian functions."""
        return int(self.cart_loc[-1])

    @property
    def max_l(self) -> int:
        """Largest angular momentum in the basis (-1 for an empty basis)."""
        return int(self.shell_l.max()) if self.nshell else -1

    @property
    def natm(self) -> int:
        """Number of atoms the shells refer to (1 + largest shell_atom, or len(atom_symbols))."""
        top = int(self.shell_atom.max()) + 1 if self.nshell else 0
        return max(top, len(self.atom_symbols))

    def shell_exponents(self, ish: int) -> np.ndarray:
        """Exponents (nprim,) of shell ish, bohr^-2."""
        p0 = self.shell_prim_start[ish]
        return self.exponents[p0 : p0 + self.shell_nprim[ish]]

    def shell_coefficients(self, ish: int) -> np.ndarray:
        """Coefficients (nprim,) of shell ish for normalised primitives."""
        p0 = self.shell_prim_start[ish]
        return self.coefficients[p0 : p0 + self.shell_nprim[ish]]

    # ------------------------------------------------------------ per atom
    def atom_slices(self) -> np.ndarray:
        """int64 (natm, 4): shell start, shell stop, AO start, AO stop of each atom.

        Assumes shells are grouped by atom in ascending atom order (as load_basis makes them),
        like PySCF's ``mol.aoslice_by_atom()``.
        """
        natm = self.natm
        out = np.zeros((natm, 4), dtype=np.int64)
        shell_stop = np.searchsorted(self.shell_atom, np.arange(natm), side="right")
        shell_start = np.searchsorted(self.shell_atom, np.arange(natm), side="left")
        out[:, 0] = shell_start
        out[:, 1] = shell_stop
        out[:, 2] = self.ao_loc[shell_start]
        out[:, 3] = self.ao_loc[shell_stop]
        return out

    def for_atoms(self, atoms: Sequence[int]) -> Basis:
        """A new Basis holding only the shells of the given atom indices (in that order).

        Atoms are renumbered 0..len(atoms)-1, centres kept; useful for atomic
        calculations (SAD guess) on one element of a molecule.
        """
        atoms = [int(a) for a in atoms]
        shells = [np.flatnonzero(self.shell_atom == a) for a in atoms]
        new_atom = np.concatenate([np.full(len(s), n) for n, s in enumerate(shells)] or [[]])
        shells = np.concatenate(shells or [[]]).astype(np.int64)
        nprim = self.shell_nprim[shells]
        starts = np.concatenate([[0], np.cumsum(nprim)[:-1]]) if len(shells) else nprim
        prims = np.concatenate(
            [np.arange(p0, p0 + n) for p0, n in zip(self.shell_prim_start[shells], nprim)] or [[]]
        ).astype(np.int64)
        symbols = tuple(self.atom_symbols[a] for a in atoms) if self.atom_symbols else ()
        return Basis(
            name=self.name,
            pure=self.pure,
            shell_atom=new_atom,
            shell_l=self.shell_l[shells],
            shell_nprim=nprim,
            shell_prim_start=starts,
            shell_center=self.shell_center[shells].reshape(-1, 3),
            exponents=self.exponents[prims],
            coefficients=self.coefficients[prims],
            atom_symbols=symbols,
        )

    # ------------------------------------------------------------ labels
    def ao_labels(self) -> list[str]:
        """One label per AO, PySCF style: "0 O 1s", "0 O 2px", "1 H 3dxy" (cartesian: "3dxx").

        The leading number is the atom index; the principal number counts shells of the
        same l on the atom starting at l+1.
        """
        labels = []
        count = {}
        for ish in range(self.nshell):
            atom = int(self.shell_atom[ish])
            l = int(self.shell_l[ish])
            n = count.get((atom, l), l + 1)
            count[(atom, l)] = n + 1
            sym = self.atom_symbols[atom] if atom < len(self.atom_symbols) else "X"
            for comp in _component_names(l, self.pure):
                labels.append(f"{atom} {sym} {n}{l_letter(l)}{comp}")
        return labels


_SPH_NAMES = {
    0: [""],
    1: ["x", "y", "z"],
    2: ["xy", "yz", "z^2", "xz", "x2-y2"],
}


def _component_names(l, pure):
    if pure:
        if l in _SPH_NAMES:
            return _SPH_NAMES[l]
        return [f"{m:+d}" for m in range(-l, l + 1)]
    if l == 0:
        return [""]
    return ["x" * i + "y" * j + "z" * k for i, j, k in cart_components(l)]
