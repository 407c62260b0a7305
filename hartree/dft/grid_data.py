"""Per-element and per-level numbers of the molecular integration grids (data only).

Tables are indexed by atomic number Z (entry 0 unused) or by level and period.  Elements
past the end of a table take its last value (:func:`per_element`).

* :data:`BRAGG_SLATER_ANGSTROM`: atomic radii (Angstrom) of J. C. Slater, J. Chem. Phys. 41,
  3199 (1964), with H = 0.35 Angstrom as Becke (J. Chem. Phys. 88, 2547 (1988), appendix)
  recommends, and values for the noble gases, lanthanides and heavier elements (which
  Slater does not give) as PySCF's ``pyscf.data.radii.BRAGG`` has them, so that the grids
  of both programs agree.  Used by the atomic size adjustment of the partition and by the
  pruning regions.
* :data:`TREUTLER_XI`: the scale ξ of the Treutler-Ahlrichs M4 radial map, H-Kr from
  Treutler and Ahlrichs, J. Chem. Phys. 102, 346 (1995), Table 1; Rb and heavier as Psi4
  and PySCF (``pyscf.dft.radi``) take them.
* :data:`RADIAL_POINTS`, :data:`ANGULAR_ORDER`: radial points and the largest Lebedev order
  per grid level (rows, levels 1..9) and period (columns, periods 1..7).  They are the
  numbers of PySCF's ``grids.level`` 1..9 (``gen_grid.RAD_GRIDS``, ``gen_grid.ANG_ORDER``),
  so that a hartree grid of level n is PySCF's grid of level n point for point (tested).
"""

from __future__ import annotations

# fmt: off
#: Bragg-Slater radii, Angstrom, Z = 0..  (0: placeholder for index alignment)
BRAGG_SLATER_ANGSTROM = (
    2.0,
    0.35, 1.40,  # H, He
    1.45, 1.05, 0.85, 0.70, 0.65, 0.60, 0.50, 1.50,  # Li-Ne
    1.80, 1.50, 1.25, 1.10, 1.00, 1.00, 1.00, 1.80,  # Na-Ar
    2.20, 1.80,  # K, Ca
    1.60, 1.40, 1.35, 1.40, 1.40, 1.40, 1.35, 1.35, 1.35, 1.35,  # Sc-Zn
    1.30, 1.25, 1.15, 1.15, 1.15, 1.90,  # Ga-Kr
    2.35, 2.00,  # Rb, Sr
    1.80, 1.55, 1.45, 1.45, 1.35, 1.30, 1.35, 1.40, 1.60, 1.55,  # Y-Cd
    1.55, 1.45, 1.45, 1.40, 1.40, 2.10,  # In-Xe
    2.60, 2.15,  # Cs, Ba
    1.95, 1.85, 1.85, 1.85, 1.85, 1.85, 1.85,  # La, Ce-Eu
    1.80, 1.75, 1.75, 1.75, 1.75, 1.75, 1.75, 1.75,  # Gd, Tb-Lu
    1.55, 1.45, 1.35, 1.35, 1.30, 1.35, 1.35, 1.35, 1.50,  # Hf-Hg
    1.90, 1.80, 1.60, 1.90, 1.45, 2.10,  # Tl-Rn
    1.80, 2.15,  # Fr, Ra
    1.95, 1.80, 1.80, 1.75,  # Ac-U; 1.75 from here on
)
# fmt: on

# fmt: off
#: ξ of the M4 radial map (dimensionless), Z = 0..103
TREUTLER_XI = (
    1.0,
    0.8, 0.9,  # H, He
    1.8, 1.4, 1.3, 1.1, 0.9, 0.9, 0.9, 0.9,  # Li-Ne
    1.4, 1.3, 1.3, 1.2, 1.1, 1.0, 1.0, 1.0,  # Na-Ar
    1.5, 1.4,  # K, Ca
    1.3, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.1, 1.1, 1.1,  # Sc-Zn
    1.1, 1.0, 0.9, 0.9, 0.9, 0.9,  # Ga-Kr
    2.0, 1.7,  # Rb, Sr
    1.5, 1.5, 1.35, 1.35, 1.25, 1.2, 1.25, 1.3, 1.5, 1.5,  # Y-Cd
    1.3, 1.2, 1.2, 1.15, 1.15, 1.15,  # In-Xe
    2.5, 2.2,  # Cs, Ba
    2.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5,  # La, Ce-Eu
    1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5,  # Gd, Tb-Lu
    1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5,  # Hf-Hg
    1.5, 1.5, 1.5, 1.5, 1.5, 1.5,  # Tl-Rn
    2.5, 2.1,  # Fr, Ra
    3.685, 1.5,  # Ac, Th; 1.5 from here on
)
# fmt: on

#: Last atomic number of periods 1..7
PERIOD_ENDS = (2, 10, 18, 36, 54, 86, 118)

#: Radial points, RADIAL_POINTS[level - 1][period - 1]
RADIAL_POINTS = (
    (30, 40, 50, 60, 65, 70, 75),  # 1
    (40, 60, 65, 75, 80, 85, 90),  # 2
    (50, 75, 80, 90, 95, 100, 105),  # 3
    (60, 90, 95, 105, 110, 115, 120),  # 4
    (70, 105, 110, 120, 125, 130, 135),  # 5
    (80, 120, 125, 135, 140, 145, 150),  # 6
    (90, 135, 140, 150, 155, 160, 165),  # 7
    (100, 150, 155, 165, 170, 175, 180),  # 8
    (200, 200, 200, 200, 200, 200, 200),  # 9
)

#: Largest Lebedev order (exact for spherical harmonics up to this degree),
#: ANGULAR_ORDER[level - 1][period - 1]; 29 is 302 points, 35 is 434, 59 is 1202
ANGULAR_ORDER = (
    (17, 23, 23, 23, 23, 23, 23),  # 1
    (23, 29, 29, 29, 29, 29, 29),  # 2
    (29, 29, 35, 35, 35, 35, 35),  # 3
    (35, 41, 41, 41, 41, 41, 41),  # 4
    (41, 47, 47, 47, 47, 47, 47),  # 5
    (47, 53, 53, 53, 53, 53, 53),  # 6
    (53, 59, 59, 59, 59, 59, 59),  # 7
    (59, 59, 59, 59, 59, 59, 59),  # 8
    (65, 65, 65, 65, 65, 65, 65),  # 9
)

#: Levels offered by :func:`hartree.dft.grids.make_grid`
LEVELS = range(1, len(RADIAL_POINTS) + 1)


def per_element(table, z: int) -> float:
    """table[z], or the table's last entry for elements past its end."""
    return float(table[z] if z < len(table) else table[-1])


def period(z: int) -> int:
    """Period (row of the periodic table) 1..7 of atomic number z."""
    return 1 + sum(z > end for end in PERIOD_ENDS[:-1])
