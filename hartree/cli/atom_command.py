"""``hartree atom``: closed-shell atomic Dirac-Hartree-Fock (or HF) in radial Gaussians.

Either an element with a well-tempered basis given on the command line, or an input file
in the thesis' format (``hartree atom ne.inp``, see docs/atom.md).  Prints the total
energy and its components, orbital (spinor) energies per symmetry with occupations, the
iterations and the basis as used; ``--json OUT`` writes the result (``energy`` key, Eh).
"""

import argparse
import json
import os

from rich import box
from rich.table import Table

from ..atom import AtomSCFOptions, DEFAULT_LIGHT_SPEED, kernel, make_nucleus, run_input
from ..atom.config import SYMBOLS, atomic_number, configuration, parse_occupations
from ..atom.wtbs import WTBSParameters, parse_nbs, wtbs_exponents
from ..errors import InputError
from .run_command import check_output_paths

HELP = "atomic Dirac-Hartree-Fock (or HF) with well-tempered basis sets"

DESCRIPTION = """\
Run an atomic Dirac-Coulomb-Hartree-Fock calculation (4-component spinors,
restricted kinetic balance, one block per kappa symmetry) or, with --nonrelativistic,
Hartree-Fock, on radial Gaussians r^l exp(-zeta r^2).  TARGET is an element symbol
(with a basis on the command line) or an input file (.inp) in the CUDAProphet format.
Element targets use the ground configuration in Madelung order (relativistically j = l-1/2
before l+1/2); a partly filled shell is treated as an average of configuration."""

EPILOG = """\
well-tempered basis (Huzinaga-Klobukowski): zeta_1 = alpha, zeta_2 = alpha*beta,
  zeta_k = zeta_(k-1) * beta * (1 + gamma * (k/N)^delta), N = largest window end;
  --nbs gives per symmetry the window start:end of that pool, e.g. s:1:32,p:1:27,d:3:23.

examples:
  hartree atom He --alpha 8.14e-2 --beta 1.953 --delta 4.504 --gamma 1.515 --nbs s:1:18
  hartree atom Ne --alpha 9.943e-2 --beta 1.945 --delta 4.988 --gamma 1.392 \\
      --nbs s:1:23,p:1:16 --nucleus gaussian --json ne.json
  hartree atom Ne ... --nonrelativistic          # Hartree-Fock (c -> infinity)
  hartree atom examples/atom/ne.inp"""


def _float(text):
    try:
        return float(text.lower().replace("d", "e"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def add_arguments(parser):
    parser.add_argument("target", metavar="TARGET", help="element symbol (e.g. Ne) or input file (.inp)")
    basis = parser.add_argument_group("basis (well-tempered)")
    basis.add_argument("--basis", default="wtbs", choices=["wtbs"], help="basis family")
    basis.add_argument("--alpha", type=_float, help="WTBS alpha (bohr^-2)")
    basis.add_argument("--beta", type=_float, help="WTBS beta")
    basis.add_argument("--delta", type=_float, help="WTBS delta")
    basis.add_argument("--gamma", type=_float, help="WTBS gamma")
    basis.add_argument("--nbs", help="windows per symmetry, e.g. s:1:32,p:1:27,d:3:23,f:6:19")
    phys = parser.add_argument_group("physics")
    phys.add_argument("--nucleus", default="point", choices=["point", "gaussian", "sphere"],
                      help="nuclear charge model (Visscher-Dyall sizes)")
    phys.add_argument("--mass-number", type=int, default=None,
                      help="mass number for the nuclear size (default: most abundant isotope)")
    phys.add_argument("--light-speed", type=_float, default=DEFAULT_LIGHT_SPEED, help="speed of light, a.u.")
    phys.add_argument("--nonrelativistic", action="store_true", help="Hartree-Fock (the c -> infinity limit)")
    phys.add_argument("--charge", type=int, default=0, help="ionic charge (default configuration of the ion)")
    phys.add_argument("--occupations", default=None,
                      help="explicit configuration per symmetry: LABEL:NCLOSED[+Q], e.g. "
                           "s1/2:2,p1/2:1,p3/2:0+1 (Q electrons in one open shell)")
    scf = parser.add_argument_group("SCF")
    scf.add_argument("--max-iterations", type=int, default=100, help="maxitr")
    scf.add_argument("--no-diis", action="store_true", help="damping (--damping) instead of DIIS")
    scf.add_argument("--damping", type=_float, default=0.3, help="dfctr, used with --no-diis")
    opt = parser.add_argument_group("basis optimization (NEWUOA over alpha, beta, delta, gamma)")
    opt.add_argument("--optimize", action="store_true",
                     help="optimize the WTBS parameters from the given start (jobtype='bsopt')")
    opt.add_argument("--rhobeg", type=_float, default=0.1, help="initial trust region in (ln a, ln b, d, g)")
    opt.add_argument("--rhoend", type=_float, default=1e-4, help="final trust region")
    opt.add_argument("--maxfun", type=int, default=500, help="most energy evaluations")
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", default=None, help="write the result as JSON (key 'energy', Eh)")
    out.add_argument("--overwrite", action="store_true", help="replace an existing --json file")


def _from_arguments(args):
    """(z, exponents, nucleus, options, shells, params, windows) from the command-line basis."""
    z = atomic_number(args.target)
    params = (args.alpha, args.beta, args.delta, args.gamma)
    missing = [n for n, v in zip(("--alpha", "--beta", "--delta", "--gamma"), params) if v is None]
    if missing or not args.nbs:
        what = ", ".join(missing + ([] if args.nbs else ["--nbs"]))
        raise InputError(f"the wtbs basis needs {what}")
    windows = parse_nbs(args.nbs)
    exponents = wtbs_exponents([WTBSParameters(*params)], windows)
    options = AtomSCFOptions(light_speed=args.light_speed, relativistic=not args.nonrelativistic,
                             max_iterations=args.max_iterations, diis=not args.no_diis, damping=args.damping)
    nucleus = make_nucleus(z, args.nucleus, mass_number=args.mass_number)
    if args.occupations:
        closed, opened = parse_occupations(args.occupations, not args.nonrelativistic)
    else:
        pattern = configuration(z, args.charge, not args.nonrelativistic)
        closed, opened = [n for n, _ in pattern], [q for _, q in pattern]
    occupations = {"block_shells": closed, "open_shells": opened}
    return z, exponents, nucleus, options, occupations, WTBSParameters(*params), windows


def _table(title):
    return Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                 show_edge=False, pad_edge=False)


def print_report(console, result):
    """Energy, orbital energies per symmetry, basis as used."""
    energy = _table("Energy (Eh)")
    energy.add_column("term")
    energy.add_column("Eh", justify="right")
    names = (("kinetic", "kinetic"), ("nuclear attraction", "nuclear_attraction"),
             ("one-electron", "one_electron"), ("Coulomb", "coulomb"), ("exchange", "exchange"))
    for label, key in names:
        energy.add_row(label, f"{result.components[key]:.10f}")
    energy.add_row("total", f"{result.energy:.10f}")
    console.print(energy)
    orbitals = _table("Orbital energies (Eh) per symmetry" if not result.relativistic
                      else "Spinor energies (Eh) per symmetry")
    orbitals.add_column("symmetry")
    orbitals.add_column("shell", justify="right")
    orbitals.add_column("occupation", justify="right")
    orbitals.add_column("energy", justify="right")
    for label, eps, occ in zip(result.blocks, result.orbital_energies, result.occupations):
        lval = "spdfghi".index(label[0])
        for i, q in enumerate(occ):
            orbitals.add_row(label, f"{i + lval + 1}{label[0]}", f"{q:g}", f"{eps[i]:.10f}")
        if len(eps) > len(occ):
            orbitals.add_row(label, "virt", "0", f"{eps[len(occ)]:.10f}")
    console.print(orbitals)
    basis = _table("Basis as used (exponents, bohr^-2)")
    basis.add_column("l")
    basis.add_column("n", justify="right")
    basis.add_column("smallest", justify="right")
    basis.add_column("largest", justify="right")
    for l, e in enumerate(result.exponents):
        basis.add_row("spdfghi"[l], str(len(e)), f"{min(e):.6e}", f"{max(e):.6e}")
    console.print(basis)
    kind = "Dirac-Coulomb-HF" if result.relativistic else "HF"
    extra = f", c = {result.light_speed}" if result.relativistic else ""
    console.print(f"{kind}, {result.nucleus} nucleus{extra}: {result.iterations} iterations, "
                  f"{'converged' if result.converged else 'NOT converged'}, {result.wall_time:.2f} s",
                  markup=False)


def print_optimization(console, opt):
    """Optimized WTBS parameters and the energy history summary."""
    table = _table("Optimized WTBS parameters (NEWUOA)")
    table.add_column("alpha", justify="right")
    table.add_column("beta", justify="right")
    table.add_column("delta", justify="right")
    table.add_column("gamma", justify="right")
    p = opt.parameters
    table.add_row(f"{p.alpha:.6e}", f"{p.beta:.6f}", f"{p.delta:.6f}", f"{p.gamma:.6f}")
    console.print(table)
    console.print(f"energy {opt.start_energy:.10f} -> {opt.energy:.10f} Eh in {opt.evaluations} "
                  f"evaluations, {opt.wall_time:.1f} s", markup=False)


def execute(args, console):
    """Run ``hartree atom``; returns the exit code (errors raise)."""
    check_output_paths((("--json", args.json),), args.overwrite)
    if os.path.exists(args.target) or args.target.lower().endswith(".inp"):
        job, result = run_input(args.target)
        title = job.title
        optimization = None
    else:
        z, exponents, nucleus, options, shells, params, windows = _from_arguments(args)
        title = f"{SYMBOLS[z]}"
        optimization = None
        if args.optimize:
            from ..atom.optimize import NewuoaOptions, optimize_wtbs
            newuoa = NewuoaOptions(rhobeg=args.rhobeg, rhoend=args.rhoend, maxfun=args.maxfun)
            optimization = optimize_wtbs(z, params, windows, nucleus, options, newuoa, **shells)
            exponents = wtbs_exponents([optimization.parameters], windows)
        result = kernel(z, exponents, nucleus, options, **shells)
        job = None
    if job is not None:
        optimization = job.optimization
    if not args.quiet:
        console.print(f"[bold]hartree atom[/bold]: {title}")
        print_report(console, result)
        if optimization is not None:
            print_optimization(console, optimization)
    line = f"E({'DHF' if result.relativistic else 'HF'}, {result.element}) = {result.energy:.10f} Eh"
    console.print(line, markup=False)
    if args.json:
        doc = result.to_dict()
        if optimization is not None:
            p = optimization.parameters
            doc["optimization"] = {"alpha": p.alpha, "beta": p.beta, "delta": p.delta, "gamma": p.gamma,
                                   "start_energy": optimization.start_energy,
                                   "evaluations": optimization.evaluations,
                                   "energies": [h["energy"] for h in optimization.history]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        if not args.quiet:
            console.print(f"wrote JSON: {args.json}", markup=False)
    return 0
