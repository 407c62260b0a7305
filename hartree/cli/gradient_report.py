"""The gradient report of ``hartree run --gradient`` (and of each optimization step): a table
of dE/dR per atom and one summary line.  Pure layout: the numbers come from a
:class:`hartree.gradients.GradientResult`."""

import numpy as np

from .report import plain_table


def gradient_table(gradient):
    """rich Table: atom number, element, dE/dx, dE/dy, dE/dz in Eh/bohr."""
    table = plain_table("nuclear gradient dE/dR (Eh/bohr)")
    table.add_column("atom", justify="right")
    table.add_column("", justify="left")
    for axis in "xyz":
        table.add_column(f"d/d{axis}", justify="right")
    symbols = gradient.molecule.symbols
    for i, row in enumerate(np.asarray(gradient.gradient)):
        table.add_row(str(i + 1), symbols[i], *(f"{v:+.10f}" for v in row))
    return table


def gradient_summary_line(gradient):
    """'gradient: max |dE/dR| ... Eh/bohr, rms ..., ... s on DEVICE'."""
    return (
        f"gradient: max |dE/dR| {gradient.max_force():.3e} Eh/bohr, rms {gradient.rms_force():.3e} Eh/bohr, "
        f"{gradient.wall_time:.2f} s on {gradient.device}"
    )


def print_gradient_report(console, gradient):
    """The table, the notes of the gradient and the summary line."""
    console.print(gradient_table(gradient))
    for note in gradient.notes:
        console.print(f"note: {note}", markup=False)
    console.print(gradient_summary_line(gradient), markup=False, highlight=False)
