"""The basis flattened per atom for the GPU lattice kernels (:mod:`hartree.grid.gpu_codegen`).

    gb = grid_basis(basis, threshold=1e-10)     # GridBasis: arrays per atom, shell, primitive

Shells of each atom are stored together with their radii: per shell (beyond which the shell
adds less than the threshold, :func:`hartree.grid.cpu.shell_cutoffs`) and per primitive
(exponent screening, :func:`primitive_cutoffs`); atoms with identical shells share an
:class:`AtomKind`, from which the per-molecule JIT kernel writes its literals.
"""

from dataclasses import dataclass

import numpy as np

from .cpu import DEFAULT_THRESHOLD, prepare_basis


@dataclass(frozen=True)
class ShellKind:
    """One shell of an atom kind: l, first AO relative to the atom's, primitive indices into
    the kind's unique exponents, coefficients c_p N f(l), squared radius (bohr^2)."""

    l: int
    ao_offset: int
    prims: tuple
    coefs: tuple
    rcut2: float


@dataclass(frozen=True)
class AtomKind:
    """Atoms with identical shells: unique exponents (bohr^-2) with their squared radii,
    the shells, and the atom's squared radius (largest shell radius)."""

    exponents: tuple
    exp_rcut2: tuple
    shells: tuple
    rcut2: float


@dataclass(frozen=True, eq=False)
class GridBasis:
    """Basis flattened per atom for the kernels (arrays described in gpu_codegen.EVAL_PARAMS).

    atom_xyz (natm, 3) bohr; atom_rcut2 (natm,) bohr^2; atom_shell (natm+1,) shell ranges
    in sorted order; atom_ao0, atom_kind (natm,); sh_* (nshell,); p_* (nprim,);
    kinds: list of AtomKind, or None when the shells of an atom do not share a centre or
    their AOs are not contiguous (then only the general kernel runs).
    """

    nao: int
    pure: bool
    ls: tuple
    atom_xyz: np.ndarray
    atom_rcut2: np.ndarray
    atom_shell: np.ndarray
    atom_ao0: np.ndarray
    atom_kind: np.ndarray
    kinds: object
    sh_l: np.ndarray
    sh_nprim: np.ndarray
    sh_p0: np.ndarray
    sh_ao0: np.ndarray
    sh_rcut2: np.ndarray
    p_exp: np.ndarray
    p_coef: np.ndarray
    p_rcut2: np.ndarray

    @property
    def natm(self):
        return int(self.atom_xyz.shape[0])


def primitive_cutoffs(l, exponents, coefs, nprim, threshold):
    """Squared radius (bohr^2) per primitive beyond which K_l |c| r^l exp(-a r^2) stays below
    threshold / nprim (K_l = 2^l (2l+1) bounds |spherical| by the cartesian monomials, as in
    :func:`hartree.grid.cpu.shell_cutoffs`).  Same 0.01-bohr radial grid, rounded outward."""
    r = np.linspace(0.0, 60.0, 6001)
    a = np.asarray(exponents, dtype=float)[:, None]
    c = np.abs(np.asarray(coefs, dtype=float))[:, None] * 2.0**l * (2 * l + 1)
    bound = c * r**l * np.exp(-a * r * r)
    out = np.empty(a.shape[0])
    for q in range(a.shape[0]):
        above = np.flatnonzero(bound[q] >= threshold / nprim)
        rmax = r[min(above[-1] + 1, r.size - 1)] if above.size else 0.0
        out[q] = rmax * rmax if rmax < r[-1] else np.inf
    return out


def grid_basis(basis, threshold=DEFAULT_THRESHOLD):
    """GridBasis of a Basis (pure function of the basis and the threshold)."""
    prepared = prepare_basis(basis, threshold)  # coefficients incl. f(l), shell radii
    order = np.argsort(basis.shell_atom, kind="stable")
    atoms, first = np.unique(basis.shell_atom[order], return_index=True)
    atom_shell = np.append(first, order.size).astype(np.int32)
    sh_l = prepared.shell_l[order]
    sh_nprim = prepared.shell_nprim[order]
    sh_ao0 = prepared.ao_loc[order]
    sh_rcut2 = prepared.rcut2[order]
    centres = basis.shell_center[order]
    p_exp, p_coef, p_rcut2, sh_p0 = [], [], [], []
    memo = {}  # identical shells on many atoms: once
    for s, shell in enumerate(order):
        p0 = int(prepared.shell_prim_start[shell])
        n = int(prepared.shell_nprim[shell])
        sh_p0.append(sum(len(x) for x in p_exp))
        exps = prepared.exponents[p0 : p0 + n]
        coefs = prepared.coefficients[p0 : p0 + n]
        p_exp.append(exps)
        p_coef.append(coefs)
        key = (int(sh_l[s]), exps.tobytes(), coefs.tobytes())
        if key not in memo:
            memo[key] = primitive_cutoffs(int(sh_l[s]), exps, coefs, n, threshold)
        p_rcut2.append(np.minimum(memo[key], sh_rcut2[s]))
    p_exp, p_coef, p_rcut2 = (np.concatenate(x) if x else np.zeros(0) for x in (p_exp, p_coef, p_rcut2))
    natm = atoms.size
    atom_xyz = np.array([centres[atom_shell[i]] for i in range(natm)]).reshape(natm, 3)
    atom_rcut2 = np.array([sh_rcut2[atom_shell[i] : atom_shell[i + 1]].max() for i in range(natm)])
    atom_ao0 = np.array([sh_ao0[atom_shell[i] : atom_shell[i + 1]].min() for i in range(natm)], dtype=np.int32)
    kinds, atom_kind = _atom_kinds(
        atom_shell,
        centres,
        atom_xyz,
        atom_ao0,
        sh_l,
        sh_nprim,
        sh_ao0,
        sh_rcut2,
        np.array(sh_p0),
        p_exp,
        p_coef,
        p_rcut2,
        basis.pure,
    )
    return GridBasis(
        nao=int(basis.nao),
        pure=bool(basis.pure),
        ls=tuple(sorted(set(int(v) for v in sh_l))),
        atom_xyz=np.ascontiguousarray(atom_xyz),
        atom_rcut2=atom_rcut2,
        atom_shell=atom_shell,
        atom_ao0=atom_ao0,
        atom_kind=atom_kind,
        kinds=kinds,
        sh_l=sh_l.astype(np.int32),
        sh_nprim=sh_nprim.astype(np.int32),
        sh_p0=np.array(sh_p0, dtype=np.int32),
        sh_ao0=sh_ao0.astype(np.int32),
        sh_rcut2=sh_rcut2,
        p_exp=p_exp,
        p_coef=p_coef,
        p_rcut2=p_rcut2,
    )


def _atom_kinds(
    atom_shell, centres, atom_xyz, atom_ao0, sh_l, sh_nprim, sh_ao0, sh_rcut2, sh_p0, p_exp, p_coef, p_rcut2, pure
):
    """(list of AtomKind, kind index per atom), or (None, zeros) when the JIT layout does not apply."""
    from ..basis import ncart, nsph

    natm = atom_xyz.shape[0]
    table, kinds, atom_kind = {}, [], np.zeros(natm, dtype=np.int32)
    for i in range(natm):
        s0, s1 = atom_shell[i], atom_shell[i + 1]
        if not np.all(centres[s0:s1] == atom_xyz[i]):
            return None, atom_kind
        size = sum((nsph if pure else ncart)(int(sh_l[s])) for s in range(s0, s1))
        offsets = sh_ao0[s0:s1] - atom_ao0[i]
        if sorted(offsets.tolist()) != sorted(set(offsets.tolist())) or offsets.max(initial=0) >= size:
            return None, atom_kind
        uniq, shells = {}, []
        for s in range(s0, s1):
            q0, n = int(sh_p0[s]), int(sh_nprim[s])
            prims = []
            for q in range(q0, q0 + n):
                a = float(p_exp[q])
                if a not in uniq:
                    uniq[a] = [len(uniq), float(p_rcut2[q])]
                uniq[a][1] = max(uniq[a][1], float(p_rcut2[q]))
                prims.append(uniq[a][0])
            shells.append(
                ShellKind(
                    l=int(sh_l[s]),
                    ao_offset=int(offsets[s - s0]),
                    prims=tuple(prims),
                    coefs=tuple(float(c) for c in p_coef[q0 : q0 + n]),
                    rcut2=float(sh_rcut2[s]),
                )
            )
        exps = sorted(uniq, key=lambda a: uniq[a][0])
        kind = AtomKind(
            exponents=tuple(exps),
            exp_rcut2=tuple(uniq[a][1] for a in exps),
            shells=tuple(shells),
            rcut2=float(sh_rcut2[s0:s1].max()),
        )
        atom_kind[i] = table.setdefault(kind, len(table))
        if atom_kind[i] == len(kinds):
            kinds.append(kind)
    return kinds, atom_kind
