"""One call for notebooks: orbitals and densities of a result or file on a lattice.

>>> from hartree.grid.api import on_lattice
>>> lattice, values = on_lattice("caffeine.json", mo="homo,lumo", spacing=0.1, margin=4.0)
>>> values["homo"].shape == lattice.shape
True

The command line (``hartree orbitals``) is a thin layer over :func:`compute`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..device.selection import resolve_device
from ..errors import InputError
from .lattice import Lattice, lattice_around
from .orbitals import evaluate_density, evaluate_orbitals
from .select import OrbitalChoice, select_orbitals
from .sources import Wavefunction, from_result, load_wavefunction


def requested(
    wfn: Wavefunction, mo: str | None = None, density: bool = False, spin_density: bool = False
) -> list[tuple[str, str, OrbitalChoice | None]]:
    """[(label, kind, OrbitalChoice or None)]; kind is "mo", "density" or "spin".

    mo: a selection such as "homo,lumo+1" (see hartree.grid.select); None means "homo"
    unless a density is asked for.
    """
    spec = mo if mo is not None else (None if density or spin_density else "homo")
    items = [(c.label, "mo", c) for c in select_orbitals(spec, wfn.mo_occ)] if spec else []
    if density:
        items.append(("density", "density", None))
    if spin_density:
        items.append(("spin_density", "spin", None))
    keys = [(c.spin, c.index) if c is not None else label for label, _, c in items]
    if len(set(keys)) != len(keys):
        raise InputError("the same orbital is asked for twice")
    return items


def compute(
    wfn: Wavefunction,
    items: list[tuple[str, str, OrbitalChoice | None]],
    where: Lattice | np.ndarray,
    dtype: DTypeLike = np.float64,
    device: str = "cpu",
) -> dict[str, np.ndarray]:
    """{label: values} for the requested items on a Lattice or (n, 3) points (bohr), a.u.

    Orbitals come out as lattice.shape (or (n,)) arrays, densities likewise.
    device: 'cpu', 'gpu' or 'auto' (see hartree.device.selection.resolve_device); on the GPU
    the orbitals of one spin are evaluated together (shared basis-function values).
    """
    device = resolve_device(device)
    values = {}
    if device == "gpu":
        for spin in (0, 1):
            mine = [(label, choice) for label, kind, choice in items if kind == "mo" and choice.spin == spin]
            if mine:
                coeff = np.stack([wfn.coefficients(spin, c.index) for _, c in mine], axis=1)
                psi = evaluate_orbitals(wfn.basis, coeff, where, dtype=dtype, device="gpu")
                values.update({label: psi[n] for n, (label, _) in enumerate(mine)})
    for label, kind, choice in items:
        if kind == "mo" and label not in values:
            values[label] = evaluate_orbitals(
                wfn.basis, wfn.coefficients(choice.spin, choice.index), where, dtype=dtype
            )[0]
        elif kind != "mo":
            values[label] = evaluate_density(
                wfn.basis, wfn.mo_coeff, wfn.mo_occ, where, spin=kind == "spin", dtype=dtype, device=device
            )
    return {label: values[label] for label, _, _ in items}


def on_lattice(
    source: Any,
    mo: str | None = None,
    density: bool = False,
    spin_density: bool = False,
    spacing: float = 0.1,
    margin: float = 4.0,
    unit: str = "angstrom",
    lattice: Lattice | None = None,
    dtype: DTypeLike = np.float64,
    device: str = "auto",
) -> tuple[Lattice, dict[str, np.ndarray]]:
    """(Lattice, {label: values}) for a result file path, an SCFResult or a Wavefunction.

    spacing, margin in ``unit``; or pass a ready ``lattice`` (hartree.grid.Lattice).
    device: 'auto' (GPU when cupy and a CUDA device are present), 'cpu' or 'gpu'.
    Values are numpy arrays of lattice.shape, atomic units.
    """
    if isinstance(source, Wavefunction):
        wfn = source
    elif hasattr(source, "mo_coeff") and hasattr(source, "basis"):
        wfn = from_result(source)
    else:
        wfn = load_wavefunction(source)
    if lattice is None:
        lattice = lattice_around(wfn.molecule.coords, spacing, margin, unit=unit)
    return lattice, compute(wfn, requested(wfn, mo, density, spin_density), lattice, dtype, device)
