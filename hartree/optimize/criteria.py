"""Convergence sets and coordinate systems of a geometry optimization (geomeTRIC's names).

A step converges when all five criteria hold at once (geomeTRIC, Wang & Song, J. Chem.
Phys. 144, 214108 (2016); the sets follow the programs they are named after):

    |E_n - E_(n-1)|            < energy   (Eh)
    RMS over atoms of |g_A|    < grms     (Eh/bohr; g_A the Cartesian gradient of atom A,
    max over atoms of |g_A|    < gmax      projected on the constraints when there are any)
    RMS over atoms of |dR_A|   < drms     (Angstrom; dR_A the step of atom A after the two
    max over atoms of |dR_A|   < dmax      geometries are aligned)

The values below are geomeTRIC 1.1's ``OptParams.convergence_criteria`` tables, written
out so that ``--help`` and the report can show them without importing geomeTRIC; a test
compares them with geomeTRIC's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True)
class ConvergenceCriteria:
    """One convergence set: energy change (Eh), RMS and max gradient (Eh/bohr), RMS and
    max displacement (Angstrom).  ``name`` is hartree's lower-case name, ``geometric_name``
    the name geomeTRIC's ``OptParams(convergence_set=...)`` takes."""

    name: str
    geometric_name: str
    energy: float
    grms: float
    gmax: float
    drms: float
    dmax: float

    def met(self, delta_energy, rms_gradient, max_gradient, rms_displacement, max_displacement):
        """{criterion: bool} for one step's values (a missing value, None, is not met)."""
        values = {
            "energy": None if delta_energy is None else abs(delta_energy),
            "grms": rms_gradient,
            "gmax": max_gradient,
            "drms": rms_displacement,
            "dmax": max_displacement,
        }
        return {k: v is not None and v < getattr(self, k) for k, v in values.items()}


def _set(name, energy, grms, gmax, drms, dmax):
    return ConvergenceCriteria(name, name.upper(), energy, grms, gmax, drms, dmax)


#: hartree's names of geomeTRIC 1.1's convergence sets, loosest gradient first.
CONVERGENCE_SETS = {
    c.name: c
    for c in (
        _set("nwchem_loose", 1e-6, 3e-3, 4.5e-3, 3.6e-3, 5.4e-3),
        _set("gau_loose", 1e-6, 1.7e-3, 2.5e-3, 6.7e-3, 1e-2),
        _set("turbomole", 1e-6, 5e-4, 1e-3, 5.0e-4, 1e-3),
        _set("gau", 1e-6, 3e-4, 4.5e-4, 1.2e-3, 1.8e-3),
        _set("interfrag_tight", 1e-6, 1e-5, 1.5e-5, 4.0e-4, 6.0e-4),
        _set("gau_tight", 1e-6, 1e-5, 1.5e-5, 4e-5, 6e-5),
        _set("gau_verytight", 1e-6, 1e-6, 2e-6, 4e-6, 6e-6),
    )
}

#: The set used when none is named (geomeTRIC's and Gaussian's default).
DEFAULT_CONVERGENCE = "gau"

#: Coordinate systems: hartree's name -> (geomeTRIC class name, connect fragments, add all
#: Cartesians), as geomeTRIC's own driver builds them.  'tric': translation-rotation
#: internal coordinates (Wang & Song 2016), delocalized; 'dlc': delocalized internals of
#: one connected molecule; 'hdlc': hybrid delocalized (internals plus all Cartesians);
#: 'prim': primitive internals of one connected molecule; 'tric-p': primitive TRIC;
#: 'cart': Cartesian coordinates.
COORDINATE_SYSTEMS = {
    "tric": ("DelocalizedInternalCoordinates", False, False),
    "dlc": ("DelocalizedInternalCoordinates", True, False),
    "hdlc": ("DelocalizedInternalCoordinates", False, True),
    "prim": ("PrimitiveInternalCoordinates", True, False),
    "tric-p": ("PrimitiveInternalCoordinates", False, False),
    "cart": ("CartesianCoordinates", False, False),
}

DEFAULT_COORDINATES = "tric"


def convergence_set(name) -> ConvergenceCriteria:
    """The ConvergenceCriteria called ``name`` (case-insensitive); InputError naming the
    sets for an unknown name."""
    key = str(name).strip().lower()
    if key not in CONVERGENCE_SETS:
        raise InputError(f"unknown convergence set {name!r}; choose one of {', '.join(CONVERGENCE_SETS)}")
    return CONVERGENCE_SETS[key]


def coordinate_system(name) -> str:
    """The lower-case key of COORDINATE_SYSTEMS for ``name``; InputError when unknown."""
    key = str(name).strip().lower()
    if key not in COORDINATE_SYSTEMS:
        raise InputError(f"unknown coordinate system {name!r}; choose one of {', '.join(COORDINATE_SYSTEMS)}")
    return key


def criteria_help():
    """Lines describing every set (for ``hartree opt --help`` and the docs)."""
    lines = [f"  {'set':<16} {'dE/Eh':>7} {'grms':>8} {'gmax':>8} {'drms/A':>8} {'dmax/A':>8}"]
    for c in CONVERGENCE_SETS.values():
        lines.append(f"  {c.name:<16} {c.energy:>7.0e} {c.grms:>8.1e} {c.gmax:>8.1e} {c.drms:>8.1e} {c.dmax:>8.1e}")
    return "\n".join(lines)
