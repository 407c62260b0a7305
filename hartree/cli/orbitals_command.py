"""``hartree orbitals``: orbitals and densities on a lattice -> cube, PNG, NumPy, HDF5.

Order of work: parse the orbital selection and output templates, read the
source (hartree result JSON or Molden file), build the lattice, check every
output path (nothing is computed when one would be overwritten), evaluate, write.
"""

import io
import os
import time

import numpy as np

from ..constants import ANGSTROM_IN_BOHR, BOHR_IN_ANGSTROM
from ..device.selection import DEVICES, resolve_device
from ..errors import InputError
from ..grid import Lattice, lattice_around, lattice_from_axes
from ..grid.api import compute, requested
from ..grid.sources import load_wavefunction
from ..grid.stream import Outputs, write_lattice
from ..io.cube import LOOP_ORDER
from ..io.files import atomic_output, atomic_path, read_text
from ..io.paths import check_outputs
from ..resources import check_memory
from .argtypes import finite_float, non_negative_float, positive_float, positive_int

DESCRIPTION = """\
Evaluate molecular orbitals, the electron density or the spin density of SOURCE on
a lattice around the molecule and write Gaussian cube files (VMD, Jmol, Avogadro,
Multiwfn), PNG pictures of the isosurfaces, NumPy .npy arrays or one HDF5 file.
SOURCE is a hartree result (hartree run --json), an SCF checkpoint (--checkpoint)
or a Molden file from any program."""

EPILOG = """\
orbital names (--mo, comma separated):
  homo, lumo, homo-N, lumo+N, or a 1-based orbital number; prefix alpha: or beta:
  for one spin (unrestricted results; default alpha).

file name templates:
  {mo} in --cube/--png/--npy is replaced by the orbital name (homo, lumo+1,
  beta_homo, mo12), "density" or "spin_density".  A --cube without {mo} holds all
  requested orbitals in one MO cube file.

examples:
  hartree orbitals caffeine.json --mo homo,lumo,homo-1 --cube caffeine_{mo}.cube --png caffeine_{mo}.png
  hartree orbitals other_program.molden --density --cube rho.cube
  hartree orbitals radical.json --spin-density --spacing 0.2 --npy spin.npy
  hartree orbitals caffeine.json --mo homo,lumo --cube both.cube --h5 caffeine_orbitals.h5
  hartree orbitals water.json --mo homo --bohr --origin -4 -4 -4 --axes 0.2 0 0 0 0.2 0 0 0 0.2 \\
      --shape 41 41 41 --cube water_homo.cube
  hartree orbitals water.json --density --points points.txt --npy rho_at_points.npy"""


def add_arguments(parser):
    """Add the ``orbitals`` arguments to an argparse parser."""
    parser.add_argument("source", metavar="SOURCE", help="hartree result JSON, SCF checkpoint or Molden file")
    what = parser.add_argument_group("what to compute")
    what.add_argument(
        "--mo",
        metavar="LIST",
        default=None,
        help="orbitals, e.g. homo,lumo,homo-1,beta:lumo+2,12 (default: homo when "
        "neither --density nor --spin-density is given)",
    )
    what.add_argument("--density", action="store_true", help="total electron density")
    what.add_argument("--spin-density", action="store_true", help="alpha minus beta density")
    lat = parser.add_argument_group("lattice")
    lat.add_argument(
        "--spacing",
        type=positive_float,
        default=0.1,
        metavar="D",
        help="distance between lattice points (Angstrom, or bohr with --bohr)",
    )
    lat.add_argument(
        "--margin",
        type=non_negative_float,
        default=4.0,
        metavar="M",
        help="space around the outermost nuclei (Angstrom, or bohr with --bohr)",
    )
    lat.add_argument(
        "--bohr", action="store_true", help="lengths (--spacing, --margin, --origin, --axes, --points) are in bohr"
    )
    lat.add_argument(
        "--origin",
        type=finite_float,
        nargs=3,
        metavar=("X", "Y", "Z"),
        help="explicit lattice: position of the first point (with --axes and --shape)",
    )
    lat.add_argument(
        "--axes",
        type=finite_float,
        nargs=9,
        metavar="V",
        help="explicit lattice: three step vectors, row by row (9 numbers)",
    )
    lat.add_argument(
        "--shape",
        type=positive_int,
        nargs=3,
        metavar=("N1", "N2", "N3"),
        help="explicit lattice: points along each step vector",
    )
    lat.add_argument(
        "--points",
        metavar="FILE",
        help="evaluate at the points in FILE instead (.npy or text, 3 columns); only --npy and --h5 outputs then",
    )
    lat.add_argument(
        "--single",
        action="store_true",
        help="single precision (FP32): faster; values good to about 1e-6 of the largest",
    )
    lat.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        help="where to compute: gpu (CUDA through cupy), cpu, or auto (the GPU when "
        "cupy and a CUDA device are present; default)",
    )
    out = parser.add_argument_group("output files")
    out.add_argument("--cube", metavar="TEMPLATE", help="Gaussian cube file(s)")
    out.add_argument("--png", metavar="TEMPLATE", help="PNG picture(s) of the isosurfaces")
    out.add_argument("--npy", metavar="TEMPLATE", help="NumPy array file(s), lattice shape, a.u.")
    out.add_argument("--h5", metavar="FILE", help="one HDF5 file with every quantity and the lattice")
    out.add_argument(
        "--iso",
        type=positive_float,
        default=None,
        metavar="X",
        help="isovalue of the pictures in a.u. (default 0.05 for orbitals, 0.02 for densities)",
    )
    out.add_argument("--overwrite", action="store_true", help="replace existing output files")


def _quantities(args, wfn):
    """[(label, kind, choice or None)] in output order; kind is 'mo', 'density' or 'spin'."""
    return requested(wfn, args.mo, args.density, args.spin_density)


def _paths(template, labels, flag):
    """{label: path} for one template; several labels need {mo} (cube files may hold several MOs)."""
    if template is None:
        return {}
    if "{mo}" in template:
        return {label: template.replace("{mo}", label) for label in labels}
    if len(labels) > 1:
        raise InputError(f"{flag} {template} needs {{mo}} in its name when several quantities are asked for")
    return {labels[0]: template}


def _output_plan(args, items):
    labels = [label for label, _, _ in items]
    kinds = {label: kind for label, kind, _ in items}
    cube = {}
    if args.cube and "{mo}" not in args.cube and len(labels) > 1:
        if any(kinds[label] != "mo" for label in labels):
            raise InputError("--cube without {mo} can hold several orbitals, but not densities")
        cube = {"__all__": args.cube}
    else:
        cube = _paths(args.cube, labels, "--cube")
    plan = {"cube": cube, "png": _paths(args.png, labels, "--png"), "npy": _paths(args.npy, labels, "--npy")}
    outputs = [("--" + kind, path) for kind, paths in plan.items() for path in paths.values()]
    if args.h5:
        outputs.append(("--h5", args.h5))
    if not outputs:
        raise InputError("nothing to write: give --cube, --png, --npy or --h5")
    check_outputs(
        outputs, inputs=[("source file", args.source), ("--points file", args.points)], overwrite=args.overwrite
    )
    return plan


def _lattice(args, wfn):
    """The Lattice (spacing/margin, or --origin/--axes/--shape) or an (n, 3) point array, bohr."""
    unit = "bohr" if args.bohr else "angstrom"
    explicit = [args.origin is not None, args.axes is not None, args.shape is not None]
    if args.points:
        if any(explicit):
            raise InputError("give either --points or --origin/--axes/--shape, not both")
        return _read_points(args.points) * (1.0 if args.bohr else ANGSTROM_IN_BOHR)
    if any(explicit):
        if not all(explicit):
            raise InputError("an explicit lattice needs all of --origin, --axes and --shape")
        return lattice_from_axes(args.origin, np.reshape(args.axes, (3, 3)), args.shape, unit=unit)
    return lattice_around(wfn.molecule.coords, args.spacing, args.margin, unit=unit)


def _read_points(path):
    """(n, 3) float array from a .npy file or a text file of 3 columns; InputError for
    anything else (unreadable, binary, not numbers, non-finite)."""
    try:
        if str(path).endswith(".npy"):
            if not os.path.isfile(path):
                raise InputError(f"--points file not found: {path}")
            points = np.load(path, allow_pickle=False)
        else:
            points = np.loadtxt(io.StringIO(read_text(path, "--points file")), ndmin=2)
    except InputError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"cannot read points from {path}: {exc}") from None
    if points.ndim != 2 or points.shape[1] != 3 or points.shape[0] == 0:
        raise InputError(f"{path}: points must be n rows of 3 coordinates")
    if points.dtype.kind not in "iuf" or not np.all(np.isfinite(points)):
        raise InputError(f"{path}: points must be finite numbers")
    return np.asarray(points, dtype=float)


def _describe(args, lattice):
    precision = "FP32" if args.single else "FP64"
    if not isinstance(lattice, Lattice):
        return f"points:  {lattice.shape[0]} from {args.points}, {precision}"
    nx, ny, nz = lattice.shape
    steps = np.linalg.norm(lattice.axes, axis=1) * (1.0 if args.bohr else BOHR_IN_ANGSTROM)
    spacing = ", ".join(f"{s:.4g}" for s in steps)
    return (
        f"lattice: {nx} x {ny} x {nz} = {lattice.npoints} points, spacing {spacing} "
        f"{'bohr' if args.bohr else 'Angstrom'}, {precision}"
    )


def _device_text(device):
    if device == "gpu":
        from ..device.selection import gpu_status

        return f"gpu ({gpu_status()[1]})"
    return "cpu"


def execute(args, console):
    """Run ``hartree orbitals``; returns the exit code (errors raise)."""
    wfn = load_wavefunction(args.source)
    items = _quantities(args, wfn)
    plan = _output_plan(args, items)
    lattice = _lattice(args, wfn)
    if not isinstance(lattice, Lattice) and (args.cube or args.png):
        raise InputError("--cube and --png need a lattice; with --points write --npy or --h5")
    dtype = np.float32 if args.single else np.float64
    device = resolve_device(args.device)
    say = (lambda text: None) if args.quiet else (lambda text: console.print(text, markup=False))
    say(f"source:  {args.source} ({wfn.basis.nao} basis functions, {wfn.molecule.natm} atoms)")
    say(_describe(args, lattice))
    say(f"device:  {_device_text(device)}")
    start = time.perf_counter()
    numbers = {
        label: choice.number + (wfn.mo_coeff.shape[-1] if choice.spin == 1 else 0)
        for label, kind, choice in items
        if kind == "mo"
    }
    if isinstance(lattice, Lattice):
        outputs = _outputs(args, plan, wfn, lattice, items, numbers)
        keep, sums = write_lattice(wfn, items, lattice, outputs, dtype, device)
        for label, kind, _ in items:
            if kind != "mo":
                say(
                    f"{label} integrates to {sums[label] * lattice.voxel_volume:.4f} electrons on "
                    "this lattice (a coarse lattice misses part of the sharp core density)"
                )
    else:
        check_memory(2 * len(items) * lattice.shape[0] * 8, f"values at {lattice.shape[0]:,} points")
        keep = compute(wfn, items, lattice, dtype, device)
        _write_points(args, plan, wfn, lattice, keep)
    say(f"computed and written in {time.perf_counter() - start:.2f} s")
    for kind in ("cube", "npy"):
        for path in plan[kind].values():
            say(f"wrote {kind}: {path}")
    if args.h5:
        say(f"wrote HDF5: {args.h5}")
    _pictures(args, plan, wfn, lattice, items, keep, say)
    return 0


def _outputs(args, plan, wfn, lattice, items, numbers):
    """The stream.Outputs of a lattice run: cube files (one per quantity, or every orbital
    in one), npy arrays, one HDF5 file, and the labels drawn as pictures (kept whole)."""
    kinds = {label: kind for label, kind, _ in items}
    order = LOOP_ORDER
    cubes = []
    for label, path in plan["cube"].items():
        if label == "__all__":
            labels = [lab for lab, _, _ in items]
            cubes.append(
                (path, labels, [numbers[lab] for lab in labels], (f"hartree orbitals {' '.join(labels)}", order))
            )
        else:
            cubes.append(
                (path, [label], [numbers[label]] if kinds[label] == "mo" else None, (f"hartree {label}", order))
            )
    attrs, datasets = _h5_header(wfn)
    datasets.update(
        {"lattice/origin": lattice.origin, "lattice/axes": lattice.axes, "lattice/shape": np.array(lattice.shape)}
    )
    return Outputs(
        cubes=cubes,
        npy=dict(plan["npy"]),
        h5=args.h5,
        h5_labels=tuple(label for label, _, _ in items) if args.h5 else (),
        h5_datasets=datasets,
        h5_attrs=attrs,
        keep=tuple(plan["png"]),
    )


def _h5_header(wfn):
    return (
        {"units": "atomic units (bohr, bohr^-3/2 orbitals, bohr^-3 densities)"},
        {"molecule/numbers": np.asarray(wfn.molecule.numbers), "molecule/coords": np.asarray(wfn.molecule.coords)},
    )


def _write_points(args, plan, wfn, points, values):
    """--npy and --h5 outputs of a --points run (whole arrays, written atomically)."""
    for label, path in plan["npy"].items():
        with atomic_output(path, binary=True) as handle:
            np.save(handle, values[label])
    if args.h5:
        import h5py

        attrs, datasets = _h5_header(wfn)
        with atomic_path(args.h5) as tmp, h5py.File(tmp, "w") as handle:
            handle.attrs.update(attrs)
            for name, value in datasets.items():
                handle[name] = value
            handle["points"] = points
            for label, array in values.items():
                handle[f"values/{label}"] = array


def _pictures(args, plan, wfn, lattice, items, values, say):
    """The --png pictures (whole arrays, kept by write_lattice)."""
    if not plan["png"]:
        return
    from ..grid.picture import DENSITY_ISO, ORBITAL_ISO, render_png

    kinds = {label: kind for label, kind, _ in items}
    for label, path in plan["png"].items():
        kind = kinds[label]
        iso = args.iso or (ORBITAL_ISO if kind == "mo" else DENSITY_ISO)
        render_png(
            path,
            wfn.molecule,
            lattice,
            values[label],
            iso,
            title=f"{os.path.basename(args.source)}: {label}  (isovalue {iso:g} a.u.)",
            signed=kind != "density",
            overwrite=args.overwrite,
        )
        say(f"wrote PNG: {path}")
