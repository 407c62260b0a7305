"""Polypeptide chains built in code: extended strands of standard peptide geometry.

    from benchmarks.peptides import peptide
    mol = peptide("AAAA")          # H-(Ala)4-OH, a hartree Molecule
    mol = peptide("G" * 12)        # (glycine)12

How the chains are built (the QUICK document's (alanine)n and (glycine)n benchmarks): the
backbone N-Cα-C of every residue is placed atom by atom from bond lengths, bond angles and
torsions by the natural-extension reference frame (Parsons, Holmes, Rojas, Tsai & Strauss,
J. Comput. Chem. 26, 1063 (2005)), with the bond lengths and angles of Engh & Huber, Acta
Cryst. A47, 392 (1991) and the torsions of a fully extended strand, φ = ψ = ω = 180°.  The
carbonyl O lies in the peptide plane (cis to N_i), the amide H trans to O; Cα carries Hα and
the side chain on the tetrahedral directions, chosen so that every residue is L (S at Cα
for alanine); methyl H's are staggered.  Termini: H2N- (pyramidal amine) and -COOH (OH
trans to Cα).  Residues: 'A' alanine, 'G' glycine.

(glycine)n is built the same way as (alanine)n: the same backbone, torsions, carbonyl
and amide H, and termini; its Cα carries two H (Cα-H 1.09 Angstrom) on the two tetrahedral
positions where alanine has Cβ and Hα.  H-(Gly)n-OH has 7n + 3 atoms (C2n H3n+2 Nn On+1);
``peptide("G" * 12)`` is the (glycine)12, 87 atoms, of benchmarks/gpu_opt.py (case name
'G12'; 'A<n>' names (alanine)n there, benchmarks/side_by_side.py).
"""

import math

import numpy as np

from hartree.constants import ANGSTROM_IN_BOHR, atomic_number
from hartree.molecule import Molecule

# Engh & Huber (1991) bond lengths (Angstrom) and angles (degrees); C-H and O-H standard
N_CA, CA_C, C_N, C_O, C_OH = 1.458, 1.525, 1.329, 1.231, 1.34
N_H, CA_H, C_H, O_H, CA_CB = 1.01, 1.09, 1.09, 0.97, 1.530
ANG_N_CA_C, ANG_CA_C_N, ANG_C_N_CA, ANG_CA_C_O = 111.2, 116.2, 121.7, 120.8
ANG_C_N_H, ANG_CA_C_OH, ANG_C_O_H, TETRAHEDRAL = 119.5, 111.0, 106.0, 109.47
PHI = PSI = OMEGA = 180.0


def place(a, b, c, bond, angle, torsion):
    """Position of atom d with |cd| = bond (Angstrom), angle b-c-d and torsion a-b-c-d
    (degrees): the natural-extension reference frame step."""
    angle, torsion = math.radians(angle), math.radians(torsion)
    bc = c - b
    bc /= np.linalg.norm(bc)
    n = np.cross(b - a, bc)
    n /= np.linalg.norm(n)
    m = np.cross(n, bc)
    d2 = np.array(
        [
            -bond * math.cos(angle),
            bond * math.sin(angle) * math.cos(torsion),
            bond * math.sin(angle) * math.sin(torsion),
        ]
    )
    return c + d2[0] * bc + d2[1] * m + d2[2] * n


def tetrahedral_pair(centre, u_atom, v_atom, bond):
    """The two remaining tetrahedral positions at ``centre`` bonded to u_atom and v_atom,
    (plus, minus): plus has det[u, v, d] > 0 (u, v, d relative to the centre)."""
    u = (u_atom - centre) / np.linalg.norm(u_atom - centre)
    v = (v_atom - centre) / np.linalg.norm(v_atom - centre)
    b = -(u + v) / np.linalg.norm(u + v)
    n = np.cross(u, v) / np.linalg.norm(np.cross(u, v))
    half = math.radians(TETRAHEDRAL) / 2.0
    plus = centre + bond * (math.cos(half) * b + math.sin(half) * n)
    minus = centre + bond * (math.cos(half) * b - math.sin(half) * n)
    return plus, minus


def peptide(sequence):
    """H-(residues)-OH as a hartree Molecule (neutral singlet); sequence of 'A' and 'G'."""
    sequence = sequence.upper()
    if not sequence or set(sequence) - {"A", "G"}:
        raise ValueError("sequence: one or more of 'A' (alanine) and 'G' (glycine)")
    atoms = []
    backbone = []  # (N, CA, C) per residue
    n = np.zeros(3)
    ca = np.array([N_CA, 0.0, 0.0])
    c = ca + CA_C * np.array([-math.cos(math.radians(ANG_N_CA_C)), math.sin(math.radians(ANG_N_CA_C)), 0.0])
    for i in range(len(sequence)):
        if i > 0:
            pn, pca, pc = backbone[-1]
            n = place(pn, pca, pc, C_N, ANG_CA_C_N, PSI)
            ca = place(pca, pc, n, N_CA, ANG_C_N_CA, OMEGA)
            c = place(pc, n, ca, CA_C, ANG_N_CA_C, PHI)
        backbone.append((n, ca, c))
    carbonyl = [place(n, ca, c, C_O, ANG_CA_C_O, PSI + 180.0) for n, ca, c in backbone]
    for i, residue in enumerate(sequence):
        n, ca, c = backbone[i]
        atoms += [("N", n), ("C", ca), ("C", c), ("O", carbonyl[i])]
        last = i == len(sequence) - 1
        if i == 0:  # H2N-: two amine H, staggered about N-Cα
            atoms.append(("H", place(c, ca, n, N_H, TETRAHEDRAL, 60.0)))
            atoms.append(("H", place(c, ca, n, N_H, TETRAHEDRAL, -60.0)))
        else:  # amide H, trans to the previous carbonyl O
            atoms.append(("H", place(carbonyl[i - 1], backbone[i - 1][2], n, N_H, ANG_C_N_H, 180.0)))
        plus, minus = tetrahedral_pair(ca, n, c, CA_H)
        if residue == "G":
            atoms += [("H", plus), ("H", minus)]
        else:  # L-alanine: Cβ on the side with det[N, C, Cβ] > 0 (S at Cα), Hα opposite
            cb = ca + (plus - ca) * (CA_CB / CA_H)
            atoms += [("C", cb), ("H", minus)]
            for t in (60.0, 180.0, -60.0):
                atoms.append(("H", place(n, ca, cb, C_H, TETRAHEDRAL, t)))
        if last:  # -COOH: the OH where the next N would be, its H trans to Cα
            oh = place(n, ca, c, C_OH, ANG_CA_C_OH, PSI)
            atoms += [("O", oh), ("H", place(ca, c, oh, O_H, ANG_C_O_H, 180.0))]
    symbols = [s for s, _ in atoms]
    coords = np.array([x for _, x in atoms]) * ANGSTROM_IN_BOHR
    return Molecule(numbers=[atomic_number(s) for s in symbols], coords=coords, symbols=tuple(symbols))
