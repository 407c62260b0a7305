"""What ``hartree opt`` prints: one line per step, then the summary and geometry tables.

The line helpers are pure functions of an :class:`hartree.optimize.OptimizationStep`; the
tables are rich Tables in the style of :mod:`hartree.cli.report`.
"""

import math

from rich.text import Text

from ..constants import BOHR_IN_ANGSTROM
from .dft_report import method_label
from .report import plain_table

#: Column header matching :func:`step_line` (gradient: Eh/bohr; displacement: Angstrom).
STEP_HEADER = (
    f"{'step':>4}  {'energy / Eh':>17}  {'dE / Eh':>9}  {'grad rms':>8}  {'grad max':>8}  "
    f"{'disp rms':>8}  {'disp max':>8}  {'time/s':>7}"
)
STEP_UNITS = f"{'':>4}  {'':>17}  {'':>9}  {'(Eh/bohr)':>18}  {'(Angstrom)':>18}"


def _sci(value, width, digits):
    if value is None or not math.isfinite(float(value)):
        return f"{'-':>{width}}"
    return f"{float(value):>{width}.{digits}e}"


def step_line(step):
    """One fixed-width line for a step: number, energy, change, gradient and displacement
    (RMS, max), seconds, and 'converged' or 'rejected' when it was."""
    flag = "  converged" if step.converged else ("  rejected" if step.rejected else "")
    return (
        f"{int(step.step):>4d}  {float(step.energy):>17.10f}  {_sci(step.delta_energy, 9, 2)}  "
        f"{_sci(step.rms_gradient, 8, 1)}  {_sci(step.max_gradient, 8, 1)}  "
        f"{_sci(step.rms_displacement, 8, 1)}  {_sci(step.max_displacement, 8, 1)}  "
        f"{float(step.wall_time):>7.2f}{flag}"
    )


def steps_text(n):
    """'1 step', '4 steps'."""
    return f"{n} step{'' if n == 1 else 's'}"


def criteria_text(criteria):
    """'gau: dE 1e-06 Eh, gradient rms/max 3.0e-04/4.5e-04 Eh/bohr, displacement ...'."""
    c = criteria
    return (
        f"{c.name}: dE {c.energy:.0e} Eh, gradient rms/max {c.grms:.1e}/{c.gmax:.1e} Eh/bohr, "
        f"displacement rms/max {c.drms:.1e}/{c.dmax:.1e} Angstrom"
    )


def final_energy_line(result):
    """The one-line summary (all that ``--quiet`` prints)."""
    what = "optimized" if result.converged else "NOT CONVERGED"
    kind = "saddle point" if result.transition_state else "geometry"
    method = method_label(result.method, getattr(getattr(result.final, "scf", None), "xc", None))
    return f"E({method}/{result.basis}) = {result.energy:.10f} Eh  [{kind} {what}, {steps_text(result.iterations)}]"


def _met(value, threshold):
    return "-" if value is None else ("yes" if value < threshold else "no")


def summary_table(result):
    """The optimization summary: energies, steps, the last step against each criterion."""
    last = result.steps[-1]
    table = plain_table("Optimization")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("criterion", justify="right")
    table.add_column("met", justify="right")
    c = result.criteria
    rows = [
        ("energy change of the last step (Eh)", last.delta_energy, c.energy),
        ("RMS atomic gradient (Eh/bohr)", last.rms_gradient, c.grms),
        ("max atomic gradient (Eh/bohr)", last.max_gradient, c.gmax),
        ("RMS displacement (Angstrom)", last.rms_displacement, c.drms),
        ("max displacement (Angstrom)", last.max_displacement, c.dmax),
    ]
    for k, (name, value, threshold) in enumerate(rows):
        shown = "-" if value is None else f"{value:.2e}"
        met = _met(None if value is None else abs(value), threshold)
        table.add_row(name, shown, f"{threshold:.1e}", met, end_section=k == len(rows) - 1)
    first = result.steps[0].energy
    table.add_row("start energy (Eh)", f"{first:.10f}", "", "")
    table.add_row("energy change, start to final (Eh)", f"{result.energy - first:.10f}", "", "")
    table.add_row(
        "steps (energy + gradient evaluations)", f"{result.iterations} ({result.gradient_evaluations})", "", ""
    )
    rejected = sum(1 for s in result.steps if s.rejected)
    if rejected:
        table.add_row("rejected steps", str(rejected), "", "")
    table.add_row("wall time (s)", f"{result.wall_time:.2f}", "", "")
    table.add_row(
        Text("final energy (Eh)", style="bold"), Text(f"{result.energy:.10f}", style="bold"), "", "", end_section=True
    )
    return table


def geometry_table(molecule, title="Final geometry (Angstrom)"):
    """The atoms of ``molecule`` with their coordinates in Angstrom."""
    table = plain_table(title)
    table.add_column("atom", justify="right")
    table.add_column("", justify="left")
    for axis in "xyz":
        table.add_column(axis, justify="right")
    for k, (symbol, xyz) in enumerate(zip(molecule.symbols, molecule.coords * BOHR_IN_ANGSTROM), start=1):
        table.add_row(str(k), symbol, *(f"{float(v):.6f}" for v in xyz))
    return table
