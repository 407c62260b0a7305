"""Live SCF progress for the command line: one line per iteration, plus a spinner.

On a terminal a rich status line ("SCF cycle 7 ...") spins below the scrolling
iteration lines; when stdout is a file or pipe only the plain lines appear.
The SCF layer calls the :class:`ScfProgress` object with one
``IterationRecord(cycle, energy, delta_energy, gradient_norm, diis_error, step, time)``
per cycle.
"""

import math

from rich.markup import escape

#: Column header matching :func:`iteration_line`.
ITERATION_HEADER = (
    f"{'cycle':>5}  {'energy / Eh':>18}  {'dE / Eh':>9}  {'|grad|':>8}  {'DIIS err':>8}  {'step':<12}  {'time/s':>7}"
)


def _sci(value, width, digits):
    """A number in scientific notation right-aligned in `width`, or '-' when missing."""
    if value is None or not math.isfinite(float(value)):
        return f"{'-':>{width}}"
    return f"{float(value):>{width}.{digits}e}"


def iteration_line(record):
    """One fixed-width text line for an SCF IterationRecord (pure function)."""
    energy = f"{float(record.energy):>18.12f}" if record.energy is not None else f"{'-':>18}"
    step = str(record.step) if record.step is not None else "-"
    time = f"{float(record.time):>7.2f}" if record.time is not None else f"{'-':>7}"
    return (
        f"{int(record.cycle):>5d}  {energy}  {_sci(record.delta_energy, 9, 2)}  "
        f"{_sci(record.gradient_norm, 8, 1)}  {_sci(record.diis_error, 8, 1)}  "
        f"{step:<12}  {time}"
    )


class ScfProgress:
    """Callback for ``hartree.scf.run``: prints iteration lines, animates a spinner.

    Use as a context manager so the spinner always stops (also on errors and
    Ctrl-C).  ``show_lines=False`` (``--quiet``) keeps the output silent.
    """

    def __init__(self, console, *, show_lines=True, label="SCF"):
        self.console = console
        self.show_lines = show_lines
        self.label = label
        self._status = None
        self._header_printed = False

    def __enter__(self):
        if self.show_lines and self.console.is_terminal:
            self._status = self.console.status(f"{self.label}: starting (integrals, initial guess) ...")
            self._status.start()
        return self

    def __exit__(self, *exc_info):
        if self._status is not None:
            self._status.stop()
            self._status = None
        return False

    def __call__(self, record):
        if not self.show_lines:
            return
        if not self._header_printed:
            self.console.print(ITERATION_HEADER, markup=False, highlight=False, style="bold", soft_wrap=True)
            self._header_printed = True
        self.console.print(iteration_line(record), markup=False, highlight=False, soft_wrap=True)
        if self._status is not None:
            de = record.delta_energy
            de = f", dE {float(de):.1e}" if de is not None and math.isfinite(float(de)) else ""
            self._status.update(
                f"{escape(self.label)}: cycle {int(record.cycle) + 1} (last E {float(record.energy):.10f}{de}) ..."
            )
