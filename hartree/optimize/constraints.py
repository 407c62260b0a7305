"""Constraints of an optimization, in geomeTRIC's own format, read by geomeTRIC's parser.

The format (geomeTRIC's documentation, "Constrained optimization"): blocks that start
with ``$freeze`` (keep at the start value) or ``$set`` (drive to a value) and list one
constraint a line, atoms numbered from 1, distances in Angstrom and angles in degrees::

    $freeze
    distance 1 2
    xyz 3
    $set
    angle 2 1 3 104.5
    dihedral 1 2 3 4 180.0

``$scan`` blocks (a series of constrained optimizations) and ``$options`` blocks
(geomeTRIC command-line options) are refused: hartree takes its options from its own
arguments and runs one optimization.
"""

from __future__ import annotations

import re

from ..errors import InputError

_BLOCK = re.compile(r"^\s*\$(\w+)", re.M)


def check_text(text, source="constraints"):
    """InputError for constraint text hartree does not run (module docstring); returns
    the text.  Cheap and without geomeTRIC: the CLI calls it before any work."""
    if not isinstance(text, str):
        raise InputError(f"{source}: expected text in geomeTRIC's constraint format")
    blocks = [b.lower() for b in _BLOCK.findall(text)]
    if "options" in blocks:
        raise InputError(
            f"{source}: $options blocks are not read by hartree; give the options as arguments of hartree opt"
        )
    if "scan" in blocks:
        raise InputError(f"{source}: $scan (a series of constrained optimizations) is not supported; use $set")
    unknown = sorted(set(blocks) - {"freeze", "set", "end"})
    if unknown:
        raise InputError(f"{source}: unknown block ${unknown[0]}; use $freeze or $set")
    if not [b for b in blocks if b in ("freeze", "set")]:
        raise InputError(f"{source}: no $freeze or $set block")
    return text


def parse(geometric_mol, text, source="constraints"):
    """(constraints, values) for geomeTRIC's internal coordinates: the primitive
    coordinates held fixed or driven, and their target values (bohr, radians; None for
    $freeze: the start value).  ``geometric_mol`` is geomeTRIC's Molecule of the start
    geometry (:func:`hartree.optimize.engine.geometric_molecule`).  InputError with one
    line for text geomeTRIC cannot read."""
    from geometric.prepare import parse_constraints

    from .optimizer import silent_geometric

    check_text(text, source)
    try:
        with silent_geometric():
            constraints, values = parse_constraints(geometric_mol, text)
    except (RuntimeError, KeyError, ValueError, IndexError, TypeError, NameError) as error:
        what = " ".join(str(error).replace("For this line:", "line '").replace("\nExpected", "': expected").split())
        what = what or type(error).__name__
        if isinstance(error, KeyError):
            what = f"unknown constraint type {what}"
        raise InputError(f"{source}: {what}") from None
    if not constraints:
        raise InputError(f"{source}: no constraints found")
    if len(values) != 1:
        raise InputError(f"{source}: a scan of constraint values is not supported; use $set")
    return constraints, values[0]


def check(molecule, text, source="constraints"):
    """Parse ``text`` for the hartree Molecule ``molecule`` and discard the result: the
    command line's check of a constraints file before any work (InputError, one line)."""
    from .engine import geometric_molecule

    parse(geometric_molecule(molecule), text, source)
    return text
