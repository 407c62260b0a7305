"""PNG of a basis-set optimization: energy against NEWUOA evaluations.

Two panels sharing the x axis (evaluation number, 1-based): the energy of every
evaluation (Eh; failed SCFs are marked on the axis) with the running minimum, and the
running minimum above the final energy, E_best(n) − E_final (Eh, log scale), which shows
how many evaluations the last digits needed.  Uses matplotlib's Agg backend (no display).
"""

import math

import numpy as np

from ..errors import InputError
from ..io.files import atomic_path


def plot_history(result, path, title=None):
    """Write the PNG of an :class:`hartree.atom.optimize.OptimizationResult` to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    energies = np.array([math.nan if h["energy"] is None else h["energy"] for h in result.history])
    if not np.isfinite(energies).any():
        raise InputError("the optimization has no successful evaluation to plot")
    n = np.arange(1, len(energies) + 1)
    best = result.best_so_far()
    fig = Figure(figsize=(7.0, 5.6), dpi=110)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1.0, 1.0]})
    ok = np.isfinite(energies)
    # clip the energy axis to the interesting range: from the minimum to the start energy
    span = max(result.start_energy - result.energy, 1e-9)
    shown = ok & (energies <= result.start_energy + 2.0 * span)
    top.plot(n[shown], energies[shown], ".", ms=3, color="0.55", label="evaluation")
    top.plot(n, best, "-", color="C0", lw=1.5, label="lowest so far")
    failed = ~ok
    if failed.any():
        top.plot(
            n[failed],
            np.full(failed.sum(), result.start_energy + 2.0 * span),
            "x",
            color="C3",
            ms=4,
            label="failed SCF / β ≤ 1",
        )
    top.set_ylabel("energy (Eh)")
    top.legend(loc="upper right", fontsize=8)
    from matplotlib.ticker import FormatStrFormatter

    digits = min(10, max(2, int(math.ceil(-math.log10(span))) + 2))
    top.yaxis.set_major_formatter(FormatStrFormatter(f"%.{digits}f"))
    gap = best - result.energy
    pos = np.isfinite(gap) & (gap > 0)
    if pos.any():
        bottom.semilogy(n[pos], gap[pos], "-", color="C0")
    bottom.set_ylabel("lowest so far − final (Eh)")
    bottom.set_xlabel("NEWUOA evaluation")
    bottom.grid(True, which="major", alpha=0.3)
    fig.suptitle(
        title or f"WTBS optimization: E = {result.energy:.10f} Eh after {result.evaluations} evaluations", fontsize=10
    )
    fig.tight_layout()
    with atomic_path(path) as tmp:  # hartree.io.files: whole file or none
        fig.savefig(tmp, format="png")
    return path
