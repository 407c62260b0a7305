"""``hartree cache``: show, clear, prune or fill hartree's cache of generated and compiled code.

The cache (:mod:`hartree.cache`) lives in ``$HARTREE_CACHE_DIR`` or ``~/.cache/hartree``, one
directory per kind of entry.  ``info`` reports it (creating nothing), ``clear`` removes
entries (all, or one kind; it asks nothing: everything in it is rebuilt on demand),
``prune`` drops what will not be used again or was not used for --days days, and ``warm``
compiles ahead of time what runs need (:mod:`hartree.warm`: a tiny real calculation, each
part printed with its time) and marks the one-time compilation done
(:mod:`hartree.cli.first_run`).
"""

import argparse
import time

from rich import box
from rich.table import Table

from .. import cache, cache_admin, warm
from ..device.selection import DEVICES, resolve_device
from ..errors import InputError
from .argtypes import integer, non_negative_float

QUIET_HELP = "info: one line (entries, size, place); warm: only its last line"

DESCRIPTION = """\
hartree keeps what it generates and compiles in a cache directory, $HARTREE_CACHE_DIR or
~/.cache/hartree: CUDA kernels compiled by NVRTC (cuda), the generated numba ERI module
with numba's compiled code (eri_gen), and the g++ builds used by the CPU emulation of the
GPU kernels in tests (emulate).  Every entry is checked
(SHA-256) before it is used, and the directories must be private (mode 0700, yours).

  info    where the cache is, and per kind: entries, size, oldest and newest use
  clear   remove every entry (or those of --kind); rebuilt when next needed
  prune   remove entries of other hartree versions, entries whose sources changed,
          damaged ones, and those not used for --days days (default 30)
  warm    compile now what later runs need, by running a tiny real calculation (water,
          RHF, STO-3G plus shells up to --lmax): on the CPU numba's kernels (one-electron,
          Schwarz, J/K, SCF; --gradient: the derivative kernels), on a GPU the CUDA kernels
          of every class up to --lmax and cupy's; for setting up a machine or an image.
          --device auto (default) warms the device 'hartree run' would pick.  Run it with
          the HARTREE_CACHE_DIR (and NUMBA_CACHE_DIR) of the later jobs."""

EPILOG = """\
examples:
  hartree cache info
  hartree cache prune --days 7
  hartree cache clear --kind cuda
  hartree cache warm
  hartree cache warm --device gpu --lmax 3 --gradient
  HARTREE_CACHE_DIR=/scratch/me/hartree-cache hartree cache info"""


def add_arguments(parser):
    parser.add_argument(
        "action", choices=("info", "clear", "prune", "warm"), metavar="ACTION", help="info, clear, prune or warm"
    )
    parser.add_argument(
        "--kind",
        choices=tuple(cache.KINDS),
        metavar="KIND",
        help=f"clear or prune only this kind ({', '.join(cache.KINDS)})",
    )
    parser.add_argument(
        "--days",
        type=non_negative_float,
        default=None,
        metavar="N",
        help="prune: remove entries not used for N days (default: 30)",
    )
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=None,
        type=str.lower,
        help="warm: where later runs compute: cpu, gpu, or auto (the GPU when one is usable, else the CPU; default)",
    )
    parser.add_argument(
        "--lmax",
        type=_lmax,
        default=None,
        metavar="L",
        help=f"warm: highest angular momentum of the warm-up basis (default: {warm.LMAX_DEFAULT}, d "
        "functions; 3 for cc-pVTZ's f); GPU kernels are compiled per class up to it, numba's serve every l",
    )
    parser.add_argument("--gradient", action="store_true", help="warm: also compile the analytic gradient's kernels")


def _lmax(text):
    value = integer(text)
    if not 1 <= value <= warm.LMAX_MAX:
        raise argparse.ArgumentTypeError(f"must lie between 1 and {warm.LMAX_MAX}, not {value}")
    return value


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _when(stamp):
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _info(args, console):
    report = cache_admin.info()
    rows = report["kinds"]
    total = sum(r["entries"] for r in rows.values())
    size = sum(r["bytes"] for r in rows.values())
    if getattr(args, "quiet", False):
        console.print(f"{total} entries, {_size(size)} in {report['root']}", markup=False)
        return 0
    state = "" if report["exists"] else " (not created yet)"
    console.print(f"cache:    {report['root']}{state}", markup=False, highlight=False)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name, justify in (
        ("kind", "left"),
        ("entries", "right"),
        ("size", "right"),
        ("oldest use", "left"),
        ("newest use", "left"),
    ):
        table.add_column(name, justify=justify)
    for kind, row in rows.items():
        table.add_row(
            kind, str(row["entries"]), _size(row["bytes"]), _when(row["oldest_use"]), _when(row["newest_use"])
        )
    table.add_row("total", str(total), _size(size), "", "", style="bold")
    console.print(table)
    for problem in [report["problem"]] + [r["problem"] for r in rows.values()]:
        if problem:
            console.print(f"problem:  {problem}", markup=False, highlight=False, soft_wrap=True)
    if report["other"]:
        console.print(
            f"also there (not managed by this command): {', '.join(report['other'])}", markup=False, highlight=False
        )
    return 0


def _warm(args, console):
    """``hartree cache warm``: the parts of :func:`hartree.warm.warm`, one line each."""
    from . import first_run

    device = resolve_device(args.device or "auto")  # DeviceError (exit 4) for gpu without one
    lmax = warm.LMAX_DEFAULT if args.lmax is None else args.lmax
    quiet = getattr(args, "quiet", False)
    if not quiet:
        console.print(f"cache:    {cache.root(create=False)}", markup=False, highlight=False)
        console.print(
            f"warm-up:  water, RHF, STO-3G plus shells up to l={lmax}, on the {device}"
            + (", with the gradient" if args.gradient else ""),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def report(part):
        if not quiet:
            detail = f", {part.detail}" if part.detail else ""
            console.print(
                f"  {part.name}: {part.seconds:.1f} s{detail} (numba compiled {part.compile_seconds:.1f} s)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    t0 = time.perf_counter()
    parts = warm.warm(device, lmax, gradient=args.gradient, report=report)
    if device == "cpu":
        first_run.mark_done("scf-cpu")
    compiled = sum(p.compile_seconds for p in parts)
    console.print(
        f"warm:     {len(parts)} parts on the {device} in {time.perf_counter() - t0:.1f} s "
        f"(numba compiled {compiled:.1f} s); later runs load them from the cache",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return 0


def execute(args, console):
    """Run ``hartree cache ACTION``; returns 0 (errors are raised as HartreeError)."""
    if args.days is not None and args.action != "prune":
        raise InputError("--days applies to 'hartree cache prune' only")
    if args.kind is not None and args.action in ("info", "warm"):
        raise InputError("--kind applies to 'hartree cache clear' and 'prune' only")
    given = [f for f, v in (("--device", args.device), ("--lmax", args.lmax), ("--gradient", args.gradient)) if v]
    if given and args.action != "warm":
        raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to 'hartree cache warm' only")
    if args.action == "info":
        return _info(args, console)
    if args.action == "warm":
        return _warm(args, console)
    if args.action == "clear":
        removed = cache_admin.clear(args.kind)
        what = f"the {args.kind} cache" if args.kind else "the cache"
    else:
        days = 30.0 if args.days is None else args.days
        removed = cache_admin.prune(older_than_days=days, keep_current=True, kinds=[args.kind] if args.kind else None)
        what = f"the {args.kind} cache" if args.kind else "the cache"
    count = sum(removed.values())
    detail = ", ".join(f"{k} {n}" for k, n in removed.items() if n)
    console.print(
        f"removed {count} entr{'y' if count == 1 else 'ies'} from {what} "
        f"({cache.root(create=False)}){': ' + detail if detail else ''}",
        markup=False,
        highlight=False,
    )
    return 0
