"""Molden files with vibrations: viewers (Molden, Jmol, Avogadro, Chemcraft) animate the
normal modes of the ``[FREQ]``, ``[FR-COORD]`` and ``[FR-NORM-COORD]`` sections.

Sections written (Molden format, Schaftenaar & Noordik, J. Comput.-Aided Mol. Des. 14,
123 (2000), and its format page):

* ``[Atoms] AU``, and when the reference SCF is given its ``[GTO]`` and ``[MO]`` (the
  orbitals of :mod:`hartree.io.molden`), so one file shows both;
* ``[FREQ]``: one frequency per line, cm^-1 (scaled when a scale factor was given;
  imaginary ones negative, as viewers expect);
* ``[FR-COORD]``: ``symbol x y z`` per atom, bohr;
* ``[FR-NORM-COORD]``: ``vibration k`` then one ``dx dy dz`` line per atom: the
  cartesian displacements of the mode, unit length;
* ``[INT]``: IR intensities, km/mol, one per line (when known).
"""

from __future__ import annotations

import numpy as np

from ..constants import element_symbol
from .files import write_text
from .molden import MOLDEN_MAX_L, molden_text


def _atoms(numbers, coords):
    lines = ["[Atoms] AU"]
    for atom, (z, xyz) in enumerate(zip(numbers, coords)):
        symbol = element_symbol(int(z))
        lines.append(f"{symbol:<2s} {atom + 1:5d} {int(z):3d} {xyz[0]:20.12f} {xyz[1]:20.12f} {xyz[2]:20.12f}")
    return lines


def vibration_sections(frequencies, normal_modes, numbers, coords, intensities=None):
    """Lines of the [FREQ], [FR-COORD], [FR-NORM-COORD] (and [INT]) sections:
    frequencies (nvib,) cm^-1, normal_modes (nvib, N, 3), coords (N, 3) bohr,
    intensities (nvib,) km/mol or None."""
    lines = ["[FREQ]"]
    lines += [f" {f:16.6f}" for f in np.asarray(frequencies, dtype=float)]
    lines.append("[FR-COORD]")
    for z, xyz in zip(numbers, np.asarray(coords, dtype=float)):
        lines.append(f" {element_symbol(int(z)):<2s} {xyz[0]:20.12f} {xyz[1]:20.12f} {xyz[2]:20.12f}")
    lines.append("[FR-NORM-COORD]")
    for k, mode in enumerate(np.asarray(normal_modes, dtype=float)):
        lines.append(f" vibration {k + 1:6d}")
        lines += [f" {d[0]:16.10f} {d[1]:16.10f} {d[2]:16.10f}" for d in mode]
    if intensities is not None:
        lines.append("[INT]")
        lines += [f" {a:16.6f}" for a in np.asarray(intensities, dtype=float)]
    return lines


def molden_frequency_text(result, *, orbitals=True):
    """The Molden file of a :class:`hartree.vibrations.FrequencyResult` (module docstring);
    orbitals=False, or a basis beyond g functions (Molden's limit), leaves out [GTO] and [MO]."""
    analysis = result.analysis
    title = (
        f"{result.method.upper()}/{result.basis} harmonic frequencies, energy {result.energy:.10f} Eh "
        "(written by hartree)"
    )
    scf = result.gradient.scf
    if orbitals and int(scf.basis.max_l) <= MOLDEN_MAX_L:
        text = molden_text(scf, title=title).rstrip("\n").split("\n")
    else:
        text = ["[Molden Format]", "[Title]", title, *_atoms(analysis.numbers, analysis.coords)]
    text += vibration_sections(
        analysis.scaled_frequencies, analysis.normal_modes, analysis.numbers, analysis.coords, analysis.ir_intensities
    )
    return "\n".join(text) + "\n"


def write_molden_frequencies(path, result, *, orbitals=True):
    """Write :func:`molden_frequency_text` to ``path`` atomically (:mod:`hartree.io.files`)."""
    write_text(path, molden_frequency_text(result, orbitals=orbitals))
