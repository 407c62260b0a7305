"""Atomic Hartree-Fock and Dirac-Hartree-Fock in l-blocked radial Gaussians (CUDAProphet).

``run(element, exponents=..., ...)`` or ``run(element, wtbs=(α, β, δ, γ), nbs='s:1:18')``
is the Python entry point; ``run_input(path)`` runs a thesis-format input file.
Modules: nucleus (point/Gaussian/sphere), radial (closed-form integrals), angular
(κ blocks, coupling), operators (h, S, Coulomb/exchange kernels), scf, wtbs, input.
"""

from ..errors import InputError
from .config import atomic_number, configuration
from .input import read_input
from .nucleus import make_nucleus
from .options import DEFAULT_LIGHT_SPEED, AtomSCFOptions
from .result import AtomResult
from .scf import kernel
from .wtbs import WTBSParameters, parse_nbs, wtbs_exponents

__all__ = [
    "run",
    "run_input",
    "kernel",
    "AtomSCFOptions",
    "AtomResult",
    "WTBSParameters",
    "wtbs_exponents",
    "parse_nbs",
    "make_nucleus",
    "read_input",
    "DEFAULT_LIGHT_SPEED",
]


def run(
    element,
    exponents=None,
    wtbs=None,
    nbs=None,
    nucleus="point",
    light_speed=DEFAULT_LIGHT_SPEED,
    relativistic=True,
    charge=0,
    mass_number=None,
    **scf_options,
):
    """Atomic SCF in the ground configuration (Madelung order; open shells averaged).

    element: symbol or Z.  Basis: ``exponents`` (list per l of exponent lists, bohr^-2), or
    ``wtbs=(alpha, beta, delta, gamma)`` with ``nbs`` windows ('s:1:18,p:1:12' or a list of
    :class:`hartree.atom.wtbs.Window`).  nucleus: 'point', 'gaussian' or 'sphere'.
    Remaining keywords go to :class:`AtomSCFOptions`.  Returns an :class:`AtomResult`.
    """
    z = atomic_number(element)
    if exponents is None:
        if wtbs is None or nbs is None:
            raise InputError("give either exponents or WTBS parameters (wtbs) with windows (nbs)")
        windows = parse_nbs(nbs) if isinstance(nbs, str) else list(nbs)
        exponents = wtbs_exponents([WTBSParameters(*wtbs)], windows)
    options = AtomSCFOptions(light_speed=light_speed, relativistic=relativistic, **scf_options)
    nuc = make_nucleus(z, nucleus, mass_number=mass_number)
    pattern = configuration(z, charge, relativistic)
    return kernel(z, exponents, nuc, options, block_shells=[n for n, _ in pattern], open_shells=[q for _, q in pattern])


def run_input(path):
    """Run a thesis-format input file; returns (AtomInput, AtomResult).

    With jobtype='bsopt' the WTBS parameters are optimized first (NEWUOA, $newuoa) and the
    result is the energy at the optimum; the OptimizationResult is ``job.optimization``.
    With autogen/nconf the energy is the weighted average of the configurations (one set of
    spinors, ``result.configuration_energies`` per configuration).
    """
    job = read_input(path)
    exponents = job.exponents
    # autogen/nconf: one set of spinors for the weighted average of the configurations
    occupations = (
        {"configurations": [c[:3] for c in job.configurations]}
        if job.configurations
        else {"block_shells": job.block_shells, "open_shells": job.open_shells}
    )
    if job.jobtype == "bsopt":
        from .optimize import NewuoaOptions, optimize_wtbs

        opts = NewuoaOptions(rhobeg=job.newuoa["rhobeg"], rhoend=job.newuoa["rhoend"], maxfun=job.newuoa["maxfun"])
        job.optimization = optimize_wtbs(
            job.z, job.wtbs, job.windows, job.nucleus, job.options, opts, pool_sizes=job.pool_sizes, **occupations
        )
        exponents = wtbs_exponents(job.optimization.groups, job.windows, job.pool_sizes)
    result = kernel(job.z, exponents, job.nucleus, job.options, **occupations)
    return job, result
