"""``hartree atom``: atomic Dirac-Hartree-Fock (or HF) in radial Gaussians, and WTBS optimization.

Either elements with a well-tempered basis given on the command line (default: the
thesis' Table 2.1 set of the element), or an input file in the thesis' format
(``hartree atom ne.inp``, see docs/atom.md).  Prints the total energy and its components,
orbital (spinor) energies per symmetry with occupations, the iterations and the basis as
used; ``--json OUT`` writes the result (``energy`` key, Eh).  ``--optimize`` (or
jobtype='bsopt') minimizes the energy over the WTBS parameters with NEWUOA and adds the
optimized parameters, the energy history and a PNG of it; several elements are optimized
concurrently through Dask (``--workers``, ``--scheduler``).
"""

import os
from dataclasses import dataclass

import numpy as np
from rich import box
from rich.table import Table

from ..atom import DEFAULT_LIGHT_SPEED, AtomSCFOptions, kernel, make_nucleus, read_input
from ..atom.config import SYMBOLS, atomic_number, configuration, parse_occupations
from ..atom.wtbs import (
    THESIS_TABLE_2_1,
    WTBSParameters,
    group_windows,
    parse_nbs,
    thesis_basis,
    wtbs_exponents,
)
from ..device.selection import DEVICES
from ..errors import InputError
from ..io.files import json_text, write_text
from ..io.paths import check_outputs
from .argtypes import finite_float, positive_float, positive_int

DESCRIPTION = """\
Run an atomic Dirac-Coulomb-Hartree-Fock calculation (4-component spinors,
restricted kinetic balance, one block per kappa symmetry) or, with --nonrelativistic,
Hartree-Fock, on radial Gaussians r^l exp(-zeta r^2).  TARGET is an element symbol
(with a basis on the command line) or an input file (.inp) in the CUDAProphet format.
Without --alpha/--beta/--delta/--gamma/--nbs an element gets its set from Table 2.1 of
the thesis (He to Rn).  Element targets use the ground configuration in Madelung order (relativistically j = l-1/2
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
  hartree atom examples/atom/ne.inp
  hartree atom Xe --optimize --workers 8 --json xe.json --plot xe.png
  hartree atom Ne Ar Kr --optimize --groups per-l --nucleus gaussian --workers 3"""


def add_arguments(parser):
    parser.add_argument(
        "target",
        metavar="TARGET",
        nargs="+",
        help="element symbol (e.g. Ne) or input file (.inp); several elements with --optimize",
    )
    basis = parser.add_argument_group("basis (well-tempered)")
    basis.add_argument("--basis", default="wtbs", choices=["wtbs"], help="basis family")
    basis.add_argument("--alpha", type=positive_float, help="WTBS alpha (bohr^-2)")
    basis.add_argument("--beta", type=positive_float, help="WTBS beta")
    basis.add_argument("--delta", type=finite_float, help="WTBS delta")
    basis.add_argument("--gamma", type=finite_float, help="WTBS gamma")
    basis.add_argument("--nbs", help="windows per symmetry, e.g. s:1:32,p:1:27,d:3:23,f:6:19")
    phys = parser.add_argument_group("physics")
    phys.add_argument(
        "--nucleus",
        default="point",
        choices=["point", "gaussian", "sphere"],
        help="nuclear charge model (Visscher-Dyall sizes)",
    )
    phys.add_argument(
        "--mass-number",
        type=positive_int,
        default=None,
        help="mass number for the nuclear size (default: most abundant isotope)",
    )
    phys.add_argument("--light-speed", type=positive_float, default=DEFAULT_LIGHT_SPEED, help="speed of light, a.u.")
    phys.add_argument("--nonrelativistic", action="store_true", help="Hartree-Fock (the c -> infinity limit)")
    phys.add_argument("--charge", type=int, default=0, help="ionic charge (default configuration of the ion)")
    phys.add_argument(
        "--occupations",
        default=None,
        help="explicit configuration per symmetry: LABEL:NCLOSED[+Q], e.g. "
        "s1/2:2,p1/2:1,p3/2:0+1 (Q electrons in one open shell)",
    )
    phys.add_argument(
        "--autogen",
        action="store_true",
        help="Dirac-Fock: every j = l-1/2, l+1/2 distribution of the open nl shell (the thesis' "
        "autogen), weighted by its share of the nl^q determinants; one set of spinors "
        "minimizes their weighted average energy, each configuration's energy is listed",
    )
    scf = parser.add_argument_group("SCF")
    scf.add_argument("--max-iterations", type=positive_int, default=100, help="maxitr")
    scf.add_argument("--no-diis", action="store_true", help="damping (--damping) instead of DIIS")
    scf.add_argument("--damping", type=finite_float, default=0.3, help="dfctr, used with --no-diis")
    scf.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        help="where the two-electron integrals and Fock builds run (auto: the GPU when cupy sees one)",
    )
    opt = parser.add_argument_group("basis optimization (NEWUOA over alpha, beta, delta, gamma)")
    opt.add_argument(
        "--optimize", action="store_true", help="optimize the WTBS parameters from the given start (jobtype='bsopt')"
    )
    opt.add_argument("--rhobeg", type=positive_float, default=0.1, help="initial trust region in (ln a, ln b, d, g)")
    opt.add_argument("--rhoend", type=positive_float, default=1e-4, help="final trust region")
    opt.add_argument("--maxfun", type=positive_int, default=500, help="most energy evaluations")
    opt.add_argument(
        "--groups",
        choices=("one", "per-l", "per-kappa"),
        default="one",
        help="one parameter group for all symmetries, one per l, or one per kappa symmetry "
        "(s1/2, p1/2, p3/2, ...: p1/2 and p3/2 then get their own exponents); 4 parameters each",
    )
    opt.add_argument(
        "--plot",
        metavar="PNG",
        default=None,
        help="PNG of energy against evaluations (default: the --json name with .png, else "
        "ELEMENT_optimization.png; '{element}' in the name is replaced by the element)",
    )
    opt.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    opt.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="Dask workers (local cluster) that optimize several elements concurrently",
    )
    opt.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="address of a running Dask scheduler (e.g. tcp://host:8786) instead of a local cluster",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", default=None, help="write the result as JSON (key 'energy', Eh)")
    out.add_argument("--overwrite", action="store_true", help="replace an existing --json file")


@dataclass
class _Job:
    """One calculation: element, basis (parameters per group, windows), physics, occupations."""

    title: str
    z: int
    nucleus: object
    options: AtomSCFOptions
    occupations: dict  # block_shells, open_shells
    groups: list  # WTBSParameters per group
    windows: list
    pool_sizes: list = None
    exponents: list = None  # rdin input files: explicit exponents, no WTBS
    newuoa: object = None  # NewuoaOptions when the job optimizes
    configurations: list = None  # autogen/nconf: (block_shells, open_shells, weight, label)


def _from_arguments(args, element):
    """A _Job from the command-line basis (default: the thesis' Table 2.1 set)."""
    z = atomic_number(element)
    params = (args.alpha, args.beta, args.delta, args.gamma)
    given = [v is not None for v in params] + [bool(args.nbs)]
    if not any(given):
        if SYMBOLS[z] not in THESIS_TABLE_2_1:
            raise InputError(
                f"the wtbs basis needs --alpha, --beta, --delta, --gamma, --nbs "
                f"(Table 2.1 of the thesis has no set for {SYMBOLS[z]})"
            )
        start, windows = thesis_basis(z)
    else:
        missing = [n for n, v in zip(("--alpha", "--beta", "--delta", "--gamma"), params) if v is None]
        if missing or not args.nbs:
            what = ", ".join(missing + ([] if args.nbs else ["--nbs"]))
            raise InputError(f"the wtbs basis needs {what}")
        start, windows = WTBSParameters(*params), parse_nbs(args.nbs)
    groups = [start]
    if args.groups != "one":
        if args.groups == "per-kappa" and args.nonrelativistic:
            raise InputError("--groups per-kappa needs Dirac-Fock (nonrelativistically both κ of l are one symmetry)")
        if any(w.group for w in windows):
            raise InputError(f"--groups {args.groups} replaces the groups given in --nbs; give windows without groups")
        windows = group_windows(windows, args.groups)
        groups = [start] * (max(w.group for w in windows) + 1)
    options = AtomSCFOptions(
        light_speed=args.light_speed,
        relativistic=not args.nonrelativistic,
        max_iterations=args.max_iterations,
        diis=not args.no_diis,
        damping=args.damping,
        device=args.device,
    )
    nucleus = make_nucleus(z, args.nucleus, mass_number=args.mass_number)
    if args.occupations:
        closed, opened = parse_occupations(args.occupations, not args.nonrelativistic)
    else:
        pattern = configuration(z, args.charge, not args.nonrelativistic)
        closed, opened = [n for n, _ in pattern], [q for _, q in pattern]
    configurations = None
    if args.autogen:
        if args.occupations or args.nonrelativistic:
            raise InputError("--autogen cannot be combined with --occupations or --nonrelativistic")
        from ..atom.config import jj_configurations

        configurations = [
            ([n for n, _ in pat], [q for _, q in pat], w, label) for pat, w, label in jj_configurations(z, args.charge)
        ]
    newuoa = None
    if args.optimize:
        from ..atom.optimize import NewuoaOptions

        newuoa = NewuoaOptions(rhobeg=args.rhobeg, rhoend=args.rhoend, maxfun=args.maxfun)
    return _Job(
        SYMBOLS[z],
        z,
        nucleus,
        options,
        {"block_shells": closed, "open_shells": opened},
        groups,
        list(windows),
        newuoa=newuoa,
        configurations=configurations,
    )


def _from_input(path):
    """A _Job from a thesis-format input file (jobtype 'energy' or 'bsopt')."""
    from ..atom.optimize import NewuoaOptions

    job = read_input(path)
    newuoa = None
    if job.jobtype == "bsopt":
        newuoa = NewuoaOptions(rhobeg=job.newuoa["rhobeg"], rhoend=job.newuoa["rhoend"], maxfun=job.newuoa["maxfun"])
    return _Job(
        job.title,
        job.z,
        job.nucleus,
        job.options,
        {"block_shells": job.block_shells, "open_shells": job.open_shells},
        job.wtbs,
        job.windows,
        pool_sizes=job.pool_sizes,
        exponents=None if job.wtbs else job.exponents,
        newuoa=newuoa,
        configurations=job.configurations or None,
    )


def _configuration_list(job):
    return [(closed, opened, weight) for closed, opened, weight, _ in job.configurations]


def _run_configurations(job, exponents):
    """One SCF for all configurations (one set of orbitals minimizing their weighted average
    energy, the extended average level); (AtomResult, [dicts: label, weight, energy with
    those orbitals])."""
    res = kernel(
        job.z, exponents, job.nucleus, job.options, element=SYMBOLS[job.z], configurations=_configuration_list(job)
    )
    rows = [
        {"configuration": label, "weight": weight / sum(c[2] for c in job.configurations), "energy": e}
        for (_, _, weight, label), e in zip(job.configurations, res.configuration_energies)
    ]
    return res, rows


def _run_job(job, progress=None):
    """(AtomResult, OptimizationResult or None, configuration rows or None); runs on Dask workers too."""
    optimization = None
    exponents = job.exponents
    if job.newuoa is not None:
        from ..atom.optimize import optimize_wtbs

        occupations = {"configurations": _configuration_list(job)} if job.configurations else job.occupations
        optimization = optimize_wtbs(
            job.z,
            job.groups,
            job.windows,
            job.nucleus,
            job.options,
            job.newuoa,
            pool_sizes=job.pool_sizes,
            callback=progress,
            **occupations,
        )
        exponents = wtbs_exponents(optimization.groups, job.windows, job.pool_sizes)
    elif exponents is None:
        exponents = wtbs_exponents(job.groups, job.windows, job.pool_sizes)
    if job.configurations:
        result, rows = _run_configurations(job, exponents)
        return result, optimization, rows
    result = kernel(job.z, exponents, job.nucleus, job.options, element=SYMBOLS[job.z], **job.occupations)
    return result, optimization, None


def _table(title):
    return Table(
        title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )


def _basis_rows(result):
    """[(symmetry labels, exponents)]: symmetries with the same exponents share a row."""
    rows = []
    for label, e in zip(result.blocks, result.block_exponents):
        if rows and rows[-1][0][0][0] == label[0] and np.array_equal(rows[-1][1], e):
            rows[-1][0].append(label)
        else:
            rows.append(([label], np.asarray(e)))
    return rows


def print_report(console, result):
    """Energy, orbital energies per symmetry, basis as used."""
    energy = _table("Energy (Eh)")
    energy.add_column("term")
    energy.add_column("Eh", justify="right")
    names = (
        ("kinetic", "kinetic"),
        ("nuclear attraction", "nuclear_attraction"),
        ("one-electron", "one_electron"),
        ("Coulomb", "coulomb"),
        ("exchange", "exchange"),
    )
    for label, key in names:
        energy.add_row(label, f"{result.components[key]:.10f}")
    energy.add_row("total", f"{result.energy:.10f}")
    console.print(energy)
    orbitals = _table(
        "Orbital energies (Eh) per symmetry" if not result.relativistic else "Spinor energies (Eh) per symmetry"
    )
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
    basis = _table("Basis as used (exponents per symmetry, bohr^-2)")
    basis.add_column("symmetry")
    basis.add_column("n", justify="right")
    basis.add_column("smallest", justify="right")
    basis.add_column("largest", justify="right")
    rows = _basis_rows(result)
    for labels, e in rows:
        basis.add_row(", ".join(labels), str(len(e)), f"{min(e):.6e}", f"{max(e):.6e}")
    console.print(basis)
    for labels, e in rows:
        console.print(f"{', '.join(labels)}: " + " ".join(f"{x:.6e}" for x in e), markup=False, soft_wrap=False)
    kind = "Dirac-Coulomb-HF" if result.relativistic else "HF"
    extra = f", c = {result.light_speed}" if result.relativistic else ""
    console.print(
        f"{kind}, {result.nucleus} nucleus{extra}: {result.iterations} iterations, "
        f"{'converged' if result.converged else 'NOT converged'}, {result.wall_time:.2f} s",
        markup=False,
    )


def print_optimization(console, opt, plot_path=None):
    """Optimized WTBS parameters per group and the energy history summary."""
    table = _table("Optimized WTBS parameters (NEWUOA)")
    for name in ("group", "alpha", "beta", "delta", "gamma"):
        table.add_column(name, justify="right")
    for g, p in enumerate(opt.groups):
        table.add_row(str(g + 1), f"{p.alpha:.6e}", f"{p.beta:.6f}", f"{p.delta:.6f}", f"{p.gamma:.6f}")
    console.print(table)
    history = _table("Energy history (lowest so far, Eh)")
    history.add_column("evaluation", justify="right")
    history.add_column("energy", justify="right")
    best = opt.best_so_far()
    marks = sorted({1, *range(10, opt.evaluations, max(10, opt.evaluations // 10)), opt.evaluations})
    for n in marks:
        history.add_row(str(n), f"{best[n - 1]:.10f}")
    console.print(history)
    failed = sum(1 for h in opt.history if h["energy"] is None)
    console.print(
        f"energy {opt.start_energy:.10f} -> {opt.energy:.10f} Eh in {opt.evaluations} "
        f"evaluations ({failed} failed), {opt.wall_time:.1f} s; stop: {opt.stop_reason}",
        markup=False,
    )
    if plot_path:
        console.print(f"wrote plot: {plot_path}", markup=False)


def print_configurations(console, configs, average):
    """One row per configuration: label, weight, energy (Eh) with the common spinors."""
    table = _table("Configurations (one set of spinors for all; average-of-configuration energy of each)")
    table.add_column("configuration")
    table.add_column("weight", justify="right")
    table.add_column("energy (Eh)", justify="right")
    for c in configs:
        table.add_row(c["configuration"], f"{c['weight']:.6f}", f"{c['energy']:.10f}")
    table.add_row("weighted average", "1", f"{average:.10f}")
    console.print(table)


def _plot_paths(args, names):
    """PNG path per element name ({} with --no-plot)."""
    if args.no_plot:
        return {}
    if args.plot:
        pattern = args.plot
    elif args.json:
        pattern = os.path.splitext(args.json)[0] + ("_{element}" if len(names) > 1 else "") + ".png"
    else:
        pattern = "{element}_optimization.png"
    if len(names) > 1 and args.plot and "{element}" not in pattern:
        root, ext = os.path.splitext(pattern)
        pattern = root + "_{element}" + (ext or ".png")
    return {n: pattern.replace("{element}", n) for n in names}


def _json_doc(result, optimization, plot_path):
    doc = result.to_dict()
    if optimization is not None:
        p = optimization.parameters
        doc["optimization"] = {
            "alpha": p.alpha,
            "beta": p.beta,
            "delta": p.delta,
            "gamma": p.gamma,
            "energies": [h["energy"] for h in optimization.history],
            "plot": plot_path,
            **optimization.to_dict(),
        }
    return doc


def execute(args, console):
    """Run ``hartree atom``; returns the exit code (errors raise)."""
    targets = list(args.target)
    files = [t for t in targets if os.path.exists(t) or t.lower().endswith(".inp")]
    if len(targets) > 1 and (files or not args.optimize):
        raise InputError("several targets need --optimize and element symbols (input files: one at a time)")
    if files:
        jobs = [_from_input(files[0])]
    else:
        jobs = [_from_arguments(args, t) for t in targets]
    optimizing = any(j.newuoa is not None for j in jobs)
    names = [SYMBOLS[j.z] for j in jobs]
    if len(set(names)) != len(names):
        raise InputError("an element is given twice")
    if args.plot and not optimizing:
        raise InputError("--plot draws an optimization: it needs --optimize (or an input file with jobtype='bsopt')")
    plots = _plot_paths(args, names) if optimizing else {}
    check_outputs(
        [("--json", args.json)] + [("--plot", p) for p in plots.values()],
        inputs=[("input file", f) for f in files],
        overwrite=args.overwrite,
    )
    if len(jobs) > 1 or args.workers or args.scheduler:
        from ..atom.basis_search import dask_client

        workers = min(args.workers or len(jobs), len(jobs))
        with dask_client(
            workers, args.scheduler, what="hartree atom with several elements, --workers or --scheduler"
        ) as client:
            outputs = client.gather(client.map(_run_job, jobs, pure=False))
    else:

        def progress(entry):
            n, e = entry["evaluation"], entry["energy"]
            if n % 25 == 0 and not args.quiet:
                console.print(f"  evaluation {n}: " + ("SCF failed" if e is None else f"{e:.10f} Eh"), markup=False)

        if not args.quiet:  # the header first: an optimization prints progress lines
            console.print(f"[bold]hartree atom[/bold]: {jobs[0].title}")
        outputs = [_run_job(jobs[0], progress if optimizing else None)]
    docs = []
    for job, name, (result, optimization, configs) in zip(jobs, names, outputs):
        plot_path = None
        if optimization is not None and name in plots:
            from ..atom.plot import plot_history

            plot_path = plot_history(
                optimization,
                plots[name],
                title=f"{name}: NEWUOA over the WTBS parameters, E = {optimization.energy:.10f} Eh",
            )
        if not args.quiet:
            if len(jobs) > 1:
                console.print(f"[bold]hartree atom[/bold]: {job.title}")
            print_report(console, result)
            if optimization is not None:
                print_optimization(console, optimization, plot_path)
        doc = _json_doc(result, optimization, plot_path)
        if configs:
            average = sum(c["weight"] * c["energy"] for c in configs)
            if not args.quiet:
                print_configurations(console, configs, average)
            doc["configurations"] = configs
            doc["average_energy"] = result.energy  # = Σ w E_K (checked in tests), the energy minimized
        line = f"E({'DHF' if result.relativistic else 'HF'}, {result.element}) = {result.energy:.10f} Eh"
        if configs:
            line += f" (weighted average of {len(configs)} configurations, minimized by the common spinors shown)"
        console.print(line, markup=False)
        docs.append(doc)
    if args.json:
        write_text(args.json, json_text(docs[0] if len(docs) == 1 else {"elements": docs}))
        if not args.quiet:
            console.print(f"wrote JSON: {args.json}", markup=False)
    return 0
