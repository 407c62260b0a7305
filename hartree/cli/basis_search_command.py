"""``hartree basis-search``: the basis-set size search of the thesis (§2.1.1), elements in parallel.

Each element starts from its Table 2.1 set (or --alpha ... --nbs) with every window
widened to 1:end+margin, optimizes it with NEWUOA, and then shrinks the windows one
symmetry at a time while the relative error against the reference energy stays within
--threshold (:mod:`hartree.atom.basis_search`).  The optimizations run on Dask workers
(a local cluster of --workers processes, or --scheduler ADDRESS).  Prints one table per
element (final windows, parameters, energy, error) and writes --json.
"""

import os

from rich import box
from rich.table import Table

from ..atom import DEFAULT_LIGHT_SPEED, AtomSCFOptions
from ..atom.basis_search import (
    DaskExecutor,
    SearchSpec,
    dask_client,
    search_elements,
    start_windows,
)
from ..atom.config import SYMBOLS, atomic_number, parse_occupations
from ..atom.optimize import NewuoaOptions
from ..atom.wtbs import (
    THESIS_TABLE_2_1,
    Window,
    WTBSParameters,
    parse_nbs,
    thesis_basis,
)
from ..device.selection import DEVICES
from ..errors import InputError
from ..io.files import json_text, read_json, write_text
from ..io.paths import check_outputs
from .argtypes import finite_float, positive_float, positive_int

DESCRIPTION = """\
Find, per element, the smallest well-tempered basis (windows per symmetry) whose NEWUOA-
optimized energy is within a relative error --threshold of a reference energy (thesis
section 2.1.1, steps 1-8).  Window ends shrink from the highest l down to s, then window
starts rise for l >= 1; every candidate is a full optimization of alpha, beta, delta,
gamma.  Elements and the candidates of each step run on Dask workers."""

EPILOG = """\
reference file (JSON): {"Ne": -128.547098109, "Ar": -526.817512803} (Eh), or
  {"Ne": {"energy": -128.547098109}, ...}; it must match the physics chosen
  (--nonrelativistic: Hartree-Fock limits; otherwise Dirac-Fock with --nucleus).

examples:
  hartree basis-search Ne Ar Kr --threshold 5e-9 --reference numerical.json --nonrelativistic
  hartree basis-search Ne --reference df.json --nucleus gaussian --margin 2 --workers 4 --json ne.json
  hartree basis-search Kr --reference df.json --scheduler tcp://head:8786"""


def add_arguments(parser):
    parser.add_argument("elements", metavar="ELEMENT", nargs="+", help="element symbols (e.g. Ne Ar Kr)")
    parser.add_argument(
        "--reference",
        metavar="JSON",
        required=True,
        help="JSON file: element -> reference energy (Eh), e.g. numerical HF or DF limits",
    )
    parser.add_argument(
        "--threshold",
        type=positive_float,
        default=5e-9,
        help="largest relative error |E - E_ref| / |E_ref| (the thesis uses 5e-9)",
    )
    basis = parser.add_argument_group("start basis (default: Table 2.1 of the thesis, widened by --margin)")
    basis.add_argument("--alpha", type=positive_float, help="start alpha (bohr^-2), with --beta --delta --gamma --nbs")
    basis.add_argument("--beta", type=positive_float)
    basis.add_argument("--delta", type=finite_float)
    basis.add_argument("--gamma", type=finite_float)
    basis.add_argument("--nbs", help="start windows (one element only), e.g. s:1:40,p:1:40")
    basis.add_argument(
        "--margin",
        type=int,
        default=4,
        help="functions added to (negative: removed from) each Table 2.1 window end for the start set",
    )
    phys = parser.add_argument_group("physics")
    phys.add_argument("--nucleus", default="gaussian", choices=["point", "gaussian", "sphere"])
    phys.add_argument("--nonrelativistic", action="store_true", help="Hartree-Fock (c -> infinity)")
    phys.add_argument(
        "--occupations",
        default=None,
        help="configuration (one element only), as for hartree atom, e.g. Pd 4d10: "
        "s1/2:4,p1/2:3,p3/2:3,d3/2:2,d5/2:2 (default: Madelung ground configuration)",
    )
    phys.add_argument("--light-speed", type=positive_float, default=DEFAULT_LIGHT_SPEED, help="speed of light, a.u.")
    phys.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        help="where each SCF's two-electron part runs",
    )
    opt = parser.add_argument_group("NEWUOA (every candidate)")
    opt.add_argument("--rhobeg", type=positive_float, default=0.05, help="initial trust region in (ln a, ln b, d, g)")
    opt.add_argument("--rhoend", type=positive_float, default=1e-4, help="final trust region")
    opt.add_argument("--maxfun", type=positive_int, default=200, help="most energy evaluations per candidate")
    par = parser.add_argument_group("parallel (Dask)")
    par.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="local-cluster worker processes (default: one per element, at most os.cpu_count())",
    )
    par.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="address of a running Dask scheduler instead of a local cluster",
    )
    par.add_argument(
        "--batch",
        type=positive_int,
        default=None,
        help="candidates of one step optimized at once per element (default: workers / elements)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", default=None, help="write the results as JSON")
    out.add_argument("--overwrite", action="store_true", help="replace an existing --json file")


def read_reference(path, elements):
    """{symbol: energy (Eh)} for the requested elements from a JSON file."""
    doc = read_json(path, "--reference file")
    if not isinstance(doc, dict):
        raise InputError(f"--reference {path} must map element symbols to energies (Eh)")
    table = {}
    for key, value in doc.items():
        try:
            symbol = SYMBOLS[atomic_number(key)]
        except InputError:
            continue  # other keys (comments, metadata) are ignored
        if isinstance(value, dict):
            value = value.get("energy")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise InputError(f"--reference {path}: the energy of {key} must be a number (Eh)")
        table[symbol] = float(value)
    missing = [e for e in elements if e not in table]
    if missing:
        raise InputError(f"--reference {path} has no energy for {', '.join(missing)}")
    return table


def _specs(args, symbols, reference):
    options = AtomSCFOptions(light_speed=args.light_speed, relativistic=not args.nonrelativistic, device=args.device)
    newuoa = NewuoaOptions(rhobeg=args.rhobeg, rhoend=args.rhoend, maxfun=args.maxfun)
    params = (args.alpha, args.beta, args.delta, args.gamma)
    given = [v is not None for v in params]
    if any(given) and not all(given):
        raise InputError("give all of --alpha, --beta, --delta, --gamma (or none: Table 2.1)")
    if args.nbs and len(symbols) > 1:
        raise InputError("--nbs applies to one element; with several, the start sets come from Table 2.1")
    occupations = None
    if args.occupations:
        if len(symbols) > 1:
            raise InputError("--occupations applies to one element")
        occupations = tuple(tuple(x) for x in parse_occupations(args.occupations, not args.nonrelativistic))
    specs = []
    for symbol in symbols:
        z = atomic_number(symbol)
        if symbol in THESIS_TABLE_2_1:
            start, windows = thesis_basis(z)
            windows = start_windows(windows, args.margin)
        elif not (all(given) and args.nbs):
            raise InputError(f"Table 2.1 has no set for {symbol}: give --alpha --beta --delta --gamma --nbs")
        if all(given):
            start = WTBSParameters(*params)
        if args.nbs:
            windows = tuple(parse_nbs(args.nbs))
        if any(w.group for w in windows):
            raise InputError("the size search uses one parameter group (no groups in --nbs)")
        if any(w.kappa for w in windows):
            raise InputError("the size search uses one window per l (no κ symmetry labels such as p1/2 in --nbs)")
        specs.append(
            SearchSpec(
                z=z,
                start=(start,),
                windows=tuple(Window(w.l, w.start, w.end) for w in windows),
                reference=reference[symbol],
                threshold=args.threshold,
                nucleus=args.nucleus,
                options=options,
                newuoa=newuoa,
                occupations=occupations,
            )
        )
    return specs


def _table(result):
    table = Table(
        title=f"{result.element}: {result.nbs()}",
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for name in ("alpha", "beta", "delta", "gamma"):
        table.add_column(name, justify="right")
    p = result.groups[0]
    table.add_row(f"{p.alpha:.6e}", f"{p.beta:.6f}", f"{p.delta:.6f}", f"{p.gamma:.6f}")
    return table


def execute(args, console):
    """Run ``hartree basis-search``; returns 0, or 3 when an element's search failed."""
    check_outputs((("--json", args.json),), inputs=(("--reference file", args.reference),), overwrite=args.overwrite)
    symbols = [SYMBOLS[atomic_number(e)] for e in args.elements]
    if len(set(symbols)) != len(symbols):
        raise InputError("an element is given twice")
    if args.threshold <= 0:
        raise InputError(f"--threshold must be positive (got {args.threshold})")
    reference = read_reference(args.reference, symbols)
    specs = _specs(args, symbols, reference)
    workers = args.workers or min(len(specs) * 2, os.cpu_count() or 1)
    batch = args.batch or max(1, workers // len(specs))

    def log(text):
        if not args.quiet:
            console.print("  " + text, markup=False)

    with dask_client(workers, args.scheduler, what="hartree basis-search") as client:
        results = search_elements(specs, DaskExecutor(client), batch=batch, log=log)
    failed = 0
    docs = []
    for symbol, res in zip(symbols, results):
        if isinstance(res, Exception):
            failed += 1
            console.print(f"{symbol}: search failed: {res}", markup=False)
            docs.append({"element": symbol, "error": str(res)})
            continue
        if not args.quiet:
            console.print(_table(res))
        console.print(
            f"{symbol}: {res.nbs()}  E = {res.energy:.10f} Eh  rel. error {res.relative_error:.2e} "
            f"({res.optimizations} optimizations, {res.wall_time:.1f} s)",
            markup=False,
        )
        docs.append(res.to_dict())
    if args.json:
        doc = {
            "threshold": args.threshold,
            "nucleus": None if args.nonrelativistic else args.nucleus,
            "relativistic": not args.nonrelativistic,
            "results": docs,
        }
        write_text(args.json, json_text(doc))
        if not args.quiet:
            console.print(f"wrote JSON: {args.json}", markup=False)
    return 3 if failed else 0
