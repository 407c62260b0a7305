"""PNG of a geometry optimization: the energy profile and the gradient against the step.

Two panels sharing the x axis (geomeTRIC's step number): the energy of every step above
the final one, E - E_final (Eh, symmetric-log scale so that the first large drop and the
last micro-hartrees both show), and the largest atomic gradient norm (Eh/bohr, log scale)
with the convergence set's threshold.  Rejected steps are drawn as open circles.
matplotlib draws off-screen (Agg); the file is written atomically.
"""

from __future__ import annotations

import numpy as np

from ..io.files import atomic_path


def plot_optimization(result, path, title=None):
    """Write the PNG of an :class:`hartree.optimize.OptimizationResult` to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    steps = np.array([s.step for s in result.steps])
    energy = np.array(result.energies) - float(result.energy)
    gmax = np.array([s.max_gradient for s in result.steps])
    rejected = np.array([s.rejected for s in result.steps])
    fig = Figure(figsize=(7.0, 5.6), dpi=110)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(steps, energy, "-", color="0.6", lw=1.0)
    top.plot(steps[~rejected], energy[~rejected], "o", color="C0", ms=4, label="step")
    if rejected.any():
        top.plot(steps[rejected], energy[rejected], "o", mfc="none", color="C3", ms=5, label="rejected")
    scale = max(float(np.max(np.abs(energy))), 1e-12)
    top.set_yscale("symlog", linthresh=max(scale * 1e-6, 1e-9))
    top.set_ylabel("E − E(final) (Eh)")
    top.grid(True, alpha=0.3)
    top.legend(loc="upper right", fontsize=8)
    bottom.semilogy(steps, gmax, "o-", color="C0", ms=4, lw=1.0)
    bottom.axhline(result.criteria.gmax, color="C2", ls="--", lw=1.0, label=f"{result.criteria.name} max gradient")
    bottom.set_ylabel("max atomic gradient (Eh/bohr)")
    bottom.set_xlabel("step")
    bottom.grid(True, which="major", alpha=0.3)
    bottom.legend(loc="upper right", fontsize=8)
    state = "converged" if result.converged else "NOT converged"
    fig.suptitle(
        title
        or f"{result.method.upper()}/{result.basis}: E = {result.energy:.10f} Eh, {state} in {result.iterations} steps",
        fontsize=10,
    )
    fig.tight_layout()
    with atomic_path(path) as tmp:  # hartree.io.files: whole file or none
        fig.savefig(tmp, format="png")
    return path
