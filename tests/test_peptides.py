"""The peptide chains of the gradient benchmarks (benchmarks/peptides.py): formula, every
atom's valence from the distances, no close contacts, L residues (S at Cα of alanine), and
the extended-strand torsions."""

import numpy as np
import pytest

from benchmarks.peptides import peptide
from hartree.constants import BOHR_IN_ANGSTROM

#: neighbours each atom may have (carbonyl C: 3, sp3 C: 4; O: C=O or C-O-H)
NEIGHBOURS = {"C": (3, 4), "N": (3,), "H": (1,), "O": (1, 2)}
COVALENT = {"H": 0.31, "C": 0.76, "N": 0.71, "O": 0.66}  # Cordero et al., Dalton Trans. 2832 (2008)


def _bonds(mol):
    x = mol.coords * BOHR_IN_ANGSTROM
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    r = np.array([COVALENT[s] for s in mol.symbols])
    bonded = d < 1.2 * (r[:, None] + r[None])
    np.fill_diagonal(bonded, False)
    return d, bonded


def _torsion(a, b, c, d):
    b0, b1, b2 = a - b, c - b, d - c
    b1 = b1 / np.linalg.norm(b1)
    v = b0 - b0 @ b1 * b1
    w = b2 - b2 @ b1 * b1
    return np.degrees(np.arctan2(np.cross(b1, v) @ w, v @ w))


@pytest.mark.parametrize("sequence", ["A", "AAAA", "GGG", "AGAG"])
def test_chain_chemistry(sequence):
    mol = peptide(sequence)
    n_ala, n_gly = sequence.count("A"), sequence.count("G")
    counts = {s: mol.symbols.count(s) for s in "CHNO"}
    n = len(sequence)
    assert counts == {"C": 3 * n_ala + 2 * n_gly, "H": 5 * n_ala + 3 * n_gly + 2, "N": n, "O": n + 1}
    d, bonded = _bonds(mol)
    neighbours = bonded.sum(axis=1)
    for i, s in enumerate(mol.symbols):
        assert neighbours[i] in NEIGHBOURS[s], (i, s, neighbours[i])
    carbons = np.array([s == "C" for s in mol.symbols])
    assert int(np.sum(carbons & (neighbours == 3))) == n  # one carbonyl C per residue
    nonbonded = d[~bonded & ~np.eye(mol.natm, dtype=bool)]
    assert nonbonded.min() > 1.6  # Angstrom: no clashes (geminal H...H is ~1.78)


def test_alanine_is_l_and_the_strand_is_extended():
    mol = peptide("AAA")
    x = mol.coords
    sym = mol.symbols
    _, bonded = _bonds(mol)
    ns = [i for i, s in enumerate(sym) if s == "N"]
    for k, i_n in enumerate(ns):

        def carbonyl(j):
            return sym[j] == "C" and any(sym[m] == "O" for m in np.flatnonzero(bonded[j]))

        ca = next(j for j in np.flatnonzero(bonded[i_n]) if sym[j] == "C" and not carbonyl(j))
        nbr = np.flatnonzero(bonded[ca])
        c = next(j for j in nbr if carbonyl(j))
        cb = next(j for j in nbr if sym[j] == "C" and j != c)
        # S configuration (priorities N > C(O) > Cβ > H): det[N, C, Cβ] > 0 about Cα
        assert np.linalg.det(np.stack([x[i_n] - x[ca], x[c] - x[ca], x[cb] - x[ca]])) > 0
        if k + 1 < len(ns):
            nxt = ns[k + 1]
            assert abs(abs(_torsion(x[i_n], x[ca], x[c], x[nxt])) - 180.0) < 1e-6  # psi


def test_glycine_12_bond_lengths():
    """(glycine)12 of benchmarks/gpu_opt.py ('G12'): 87 atoms, every bond one of the
    construction's lengths (Engh & Huber 1991; C-H, N-H, O-H standard), an extended strand
    (end to end > 40 Angstrom), and the benchmarks' case name builds the same molecule."""
    from benchmarks import peptides
    from benchmarks.side_by_side import case_molecule

    mol = peptide("G" * 12)
    assert mol.natm == 7 * 12 + 3
    assert np.array_equal(case_molecule("G12").coords, mol.coords)
    d, bonded = _bonds(mol)
    allowed = {
        ("C", "N"): {peptides.N_CA, peptides.C_N},
        ("C", "C"): {peptides.CA_C},
        ("C", "O"): {peptides.C_O, peptides.C_OH},
        ("C", "H"): {peptides.CA_H},
        ("H", "N"): {peptides.N_H},
        ("H", "O"): {peptides.O_H},
    }
    for i, j in zip(*np.nonzero(np.triu(bonded))):
        pair = tuple(sorted((mol.symbols[i], mol.symbols[j])))
        assert min(abs(d[i, j] - b) for b in allowed[pair]) < 1e-9, (i, j, pair, d[i, j])
    assert int(np.triu(bonded).sum()) == mol.natm - 1  # a tree: no rings
    assert d.max() > 40.0
