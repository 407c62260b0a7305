"""What ``hartree run`` computes: the command line's options merged with those of a QCSchema
AtomicInput file (:mod:`hartree.io.qcschema_input`), by one rule.

Rule (also in ``hartree run --help``, the README and docs/batch.md): an option given on the
command line wins over the file, and the file wins over the defaults.

* the molecule is the file's (charge and multiplicity from ``molecular_charge`` and
  ``molecular_multiplicity``); ``--charge`` / ``--multiplicity`` override them;
* driver ``gradient`` means ``--gradient`` (``--gradient`` on an energy file asks for the
  gradient too);
* ``model.method`` is ``--method``; ``model.basis`` is ``--basis``, which is needed on the
  command line only when the file names no basis (else one InputError);
* ``keywords``: ``conv_tol`` is ``--conv-tol``, ``max_cycle`` ``--max-cycle``,
  ``level_shift`` ``--level-shift``, ``guess`` ``--guess``, ``cartesian`` ``--cartesian``,
  ``device`` ``--device``, ``density_fitting`` ``--density-fitting``, ``exact_k``
  ``--exact-k``, ``grid_level`` ``--grid``, ``nlc_grid_level`` ``--nlc-grid`` (VV10
  functionals), ``unrestricted`` ``--unrestricted`` and ``grid_response`` ``--grid-response``
  (DFT functionals only), ``dispersion``
  ``--dispersion`` (Hartree-Fock and functionals); the others (``conv_tol_grad``,
  ``diis_space``, ``damping``, ...) have no option and go to the SCF as written.

Which options were given is recorded by their argparse actions (:class:`Given`,
:class:`GivenFlag`) in ``args.given``; the defaults stay in the parser (and ``--help``).
The merged keywords become SCF options through :func:`hartree.keywords.scf_options`, and the
method (a functional: RKS or UKS) the method and options of :func:`hartree.scf.run` through
:func:`hartree.keywords.method_options` (:func:`scf_method`), the mapping the QCEngine
harness and ``hartree batch`` use too.
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..keywords import gradient_options, is_functional, method_options, scf_options
from ..scf import SCFOptions
from ..scf.options import DISPERSION_MODELS
from .argtypes import integer

#: argparse dest of a ``hartree run`` option -> the AtomicInput keyword it overrides
OPTION_KEYWORDS = {
    "conv_tol": "conv_tol",
    "max_cycle": "max_cycle",
    "level_shift": "level_shift",
    "guess": "guess",
    "cartesian": "cartesian",
    "device": "device",
    "grid": "grid_level",
    "nlc_grid": "nlc_grid_level",
    "unrestricted": "unrestricted",
    "grid_response": "grid_response",
    "dispersion": "dispersion",
    "density_fitting": "density_fitting",
    "exact_k": "exact_k",
}
#: the SCF settings every run records in its JSON keywords (filled with the defaults)
RECORDED = ("cartesian", "conv_tol", "conv_tol_grad", "max_cycle", "guess", "level_shift")

EPILOG = """\
QCSchema AtomicInput files (.json; v1 "qcschema_input" or v2 "qcschema_atomic_input"):
  the file gives the molecule, the driver (energy, or gradient: the same as --gradient),
  model.method (rhf, uhf, rohf, mp2 or a functional), model.basis and keywords (SCF
  options: conv_tol, conv_tol_grad, max_cycle, guess, level_shift, cartesian, device,
  diis_space, damping, ...; grid_level, unrestricted and grid_response for functionals,
  nlc_grid_level for VV10 functionals;
  dispersion: d3bj, d3zero or d4; density_fitting: true or a fitting basis, and exact_k, for
  energies and gradients).
  Options given on the command line override the file, and the file overrides the
  defaults; --basis is needed only when the file names no basis. Drivers hessian and
  properties are refused."""


def _remember(namespace, dest):
    given = set(getattr(namespace, "given", None) or ())
    given.add(dest)
    namespace.given = frozenset(given)


class Given(argparse.Action):
    """``store``, recording in ``namespace.given`` that the option was on the command line."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _remember(namespace, self.dest)


class GivenFlag(argparse.Action):
    """``store_true``, recording in ``namespace.given`` that the flag was on the command line."""

    def __init__(self, option_strings, dest, default=False, required=False, help=None):
        super().__init__(option_strings, dest, nargs=0, const=True, default=default, required=required, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True)
        _remember(namespace, self.dest)


def molecule_of(record, charge=None, multiplicity=None):
    """The record's molecule with ``--charge`` / ``--multiplicity`` applied (None: the file's)."""
    molecule = record.molecule
    changes = {}
    if charge is not None:
        changes["charge"] = charge
    if multiplicity is not None:
        changes["multiplicity"] = multiplicity
    return molecule.replace(**changes) if changes else molecule


def resolve(args, record):
    """A copy of ``args`` with what the run computes, by the rule of the module docstring.

    record: the :class:`~hartree.io.qcschema_input.AtomicInputRecord` of FILE, or None (an
    XYZ or molecule file: the command line alone).  The copy has ``method``, ``basis``,
    ``gradient``, ``device`` and the SCF options (``conv_tol``, ``max_cycle``, ...) merged,
    ``scf_options`` (the keywords for :func:`hartree.scf.run`, every one of
    :data:`RECORDED` filled in) and ``record``.  InputError when no basis is named or a
    keyword's value is out of range."""
    given = set(getattr(args, "given", None) or ())
    out = argparse.Namespace(**vars(args))
    out.record = record
    keywords = {}
    if record is not None:
        if "method" not in given:
            out.method = record.method
        if args.basis is None:
            out.basis = record.basis
        out.gradient = bool(args.gradient) or record.driver == "gradient"
        keywords.update(record.keywords)
    if out.basis is None:
        if record is not None:
            raise InputError(f"--basis is required: {args.file} names no basis (model.basis)")
        raise InputError("--basis is required (a basis-set name or file; a QCSchema AtomicInput FILE may name it)")
    keywords.update({key: getattr(args, dest) for dest, key in OPTION_KEYWORDS.items() if dest in given})
    device, options = scf_options(
        "gradient" if out.gradient else "energy", keywords, args.file if record is not None else None
    )
    defaults = SCFOptions()
    for name in RECORDED:
        options.setdefault(name, getattr(defaults, name))
    out.device = device
    for dest, key in OPTION_KEYWORDS.items():
        if key != "device" and key in options:  # RECORDED ones always, grid and unrestricted when given
            setattr(out, dest, options[key])
    out.scf_options = options
    return out


#: the DFT options of the command line: (flag, argparse dest)
DFT_FLAGS = (
    ("--grid", "grid"),
    ("--nlc-grid", "nlc_grid"),
    ("--unrestricted", "unrestricted"),
    ("--grid-response", "grid_response"),
)


def check_dft_flags(args, name):
    """InputError, one line, for DFT options on the command line (``args.given``) when the
    method ``name`` is no functional."""
    given = set(getattr(args, "given", None) or ())
    flags = [flag for flag, dest in DFT_FLAGS if dest in given]
    if flags and not is_functional(name):
        raise InputError(
            f"{' and '.join(flags)} {'applies' if len(flags) == 1 else 'apply'} only to DFT functionals "
            f"(e.g. --method b3lyp), not to --method {args.method}"
        )


def scf_method(args, molecule, reference=None):
    """(method, options) for :func:`hartree.scf.run` of a resolved run (:func:`resolve`):
    ``args.method`` (or the MP2 ``reference``) through :func:`hartree.keywords.method_options`
    (a functional: 'rks' or 'uks' with ``xc`` and ``grid_level``).  InputError, one line, for
    ``--grid``, ``--unrestricted`` or ``--grid-response`` without a functional,
    ``--grid-response`` without a gradient, and for checkpoints of DFT runs."""
    name = reference or args.method
    given = set(getattr(args, "given", None) or ())
    check_dft_flags(args, name)
    where = args.file if args.record is not None and "method" not in given else None
    method, options = method_options(name, molecule, args.scf_options, where)
    if args.scf_options.get("grid_response") and not args.gradient:
        raise InputError("--grid-response (keyword grid_response) applies only to gradients (--gradient)")
    if reference is not None and options.get("dispersion"):
        raise InputError("--dispersion (keyword dispersion) applies to SCF methods, not to --method mp2")
    if "xc" in options and (args.checkpoint or args.guess_from):
        raise InputError(
            "--checkpoint and --guess-from are not supported for DFT yet: a checkpoint records the "
            "method, not the functional and the grid"
        )
    return method, options


def scf_precision(args):
    """The SCF options of ``--precision`` for a run that is not --method mp2: {} for fp64,
    {'precision': 'mixed'} with a fitted K (hartree.df.mixed_k).  InputError, one line, where
    it means nothing: without --density-fitting, with --exact-k, or a scheme other than mixed."""
    if args.precision == "fp64":
        return {}
    options = args.scf_options
    if not options.get("density_fitting"):
        raise InputError(
            "--precision applies only with --method mp2 (RI-MP2) or --density-fitting (the fitted exchange)"
        )
    if options.get("exact_k"):
        raise InputError("--precision applies to the fitted exchange, not with --exact-k (the exact K is FP64)")
    if args.precision != "mixed":
        raise InputError(
            f"--precision {args.precision} applies only with --method mp2; the density-fitted SCF takes fp64 or mixed"
        )
    return {"precision": "mixed"}


def gradient_method(args, molecule):
    """(method, SCF options, grid_response) of ``hartree opt`` and ``hartree freq``: the
    method name and the DFT options of the command line (``--grid``, ``--unrestricted``,
    ``--grid-response``) through :func:`hartree.keywords.gradient_options`; InputError, one
    line, for those options without a functional; ``--density-fitting`` / ``--exact-k`` go to
    every SCF (the gradient of the fitted energy, :mod:`hartree.df.gradient`)."""
    check_dft_flags(args, args.method)
    given = set(getattr(args, "given", None) or ())
    keywords = {key: getattr(args, dest) for dest, key in OPTION_KEYWORDS.items() if dest in given}
    dft = ("grid_level", "nlc_grid_level", "unrestricted", "grid_response", "dispersion", "density_fitting", "exact_k")
    keywords = {k: v for k, v in keywords.items() if k in dft}
    method, options, grid_response = gradient_options(args.method, molecule, keywords)
    return method, options, grid_response


def dft_keywords(options, grid_response):
    """The DFT settings a gradient job records in its JSON keywords: xc, grid_level and
    grid_response (functionals), nlc_grid_level (when given), dispersion (when set;
    Hartree-Fock too)."""
    out = {}
    if "xc" in options:
        out = {"xc": options["xc"], "grid_level": options["grid_level"], "grid_response": bool(grid_response)}
        if "nlc_grid_level" in options:
            out["nlc_grid_level"] = options["nlc_grid_level"]
    if options.get("dispersion"):
        out["dispersion"] = options["dispersion"]
    return out


def grid_level(text):
    """argparse type of --grid: an integer 1..9."""
    value = integer(text)
    if not 1 <= value <= 9:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 9, got {text}")
    return value


def add_dft_arguments(group):
    """Add ``--grid``, ``--nlc-grid`` (VV10), ``--unrestricted`` and ``--grid-response`` (DFT
    functionals; the last for gradients), ``--dispersion``, ``--density-fitting`` and
    ``--exact-k`` (Hartree-Fock too) to an argparse group of ``hartree run``, ``opt`` and
    ``freq``."""
    group.add_argument(
        "--grid",
        type=grid_level,
        default=None,
        action=Given,
        metavar="N",
        help="DFT integration grid, 1 (coarse) .. 9 (fine), PySCF's levels (default: 3)",
    )
    group.add_argument(
        "--nlc-grid",
        type=grid_level,
        default=None,
        action=Given,
        metavar="N",
        help="grid of the VV10 non-local correlation of b97m-v, wb97x-v, wb97m-v, ..., 1 .. 9 (default: 1, "
        "as PySCF's nlcgrids)",
    )
    group.add_argument(
        "--unrestricted",
        action=GivenFlag,
        help="DFT: unrestricted Kohn-Sham (UKS) also for a closed-shell singlet (open shells always run UKS)",
    )
    group.add_argument(
        "--grid-response",
        action=GivenFlag,
        help="DFT gradients: add the derivative of the integration grid (Becke weights), which makes "
        "the gradient the exact derivative of the energy on its grid; recommended for optimizations "
        "on coarse grids (--grid 1, 2); default off, as in PySCF",
    )
    add_dispersion_argument(group)
    add_density_fitting_arguments(group)


def add_density_fitting_arguments(group):
    """Add ``--density-fitting [AUX]`` and ``--exact-k`` (SCF energies and gradients: ``run``,
    ``opt``, ``freq``) to an argparse group."""
    group.add_argument(
        "--density-fitting",
        nargs="?",
        const=True,
        default=None,
        action=Given,
        metavar="AUX",
        help="fit the Coulomb and exchange matrices with the auxiliary basis AUX (RI-JK; a basis-set-exchange "
        "name or a file; the flag alone: def2-universal-jkfit, or cc-pvXz-jkfit for cc-pVTZ, QZ, 5Z); "
        "Hartree-Fock and DFT energies and gradients; separate from --aux, the RI-MP2 basis; "
        "give it after FILE (or as --density-fitting=AUX)",
    )
    group.add_argument(
        "--exact-k",
        action=GivenFlag,
        help="with --density-fitting: fit J only and keep the exact exchange",
    )


def density_fitting_line(molecule, basis, options):
    """The header line naming the J/K fitting basis of a run with ``density_fitting`` in its
    SCF ``options`` (loaded now: a BasisError comes before any work), and precision 'mixed'
    when asked for; else None."""
    if not options.get("density_fitting"):
        return None
    from ..df.auxiliary import load_jk_aux

    aux = load_jk_aux(molecule, basis, options["density_fitting"])
    what = "J fitted, exact K" if options.get("exact_k") else "J and K fitted"
    if options.get("precision") == "mixed":
        what += "; K in bounded mixed precision in the early cycles, FP64 at the end"
    return f"fitting:  {aux.name}, {aux.nao} functions ({what})"


def add_dispersion_argument(group):
    """Add ``--dispersion d3bj|d3zero|d4`` to an argparse group (``run``, ``opt``, ``freq``,
    ``batch``)."""
    group.add_argument(
        "--dispersion",
        choices=DISPERSION_MODELS,
        type=str.lower,
        default=None,
        action=Given,
        help="add a dispersion correction after the SCF, with the functional's (or HF's) parameters "
        "from the dftd3/dftd4 packages: d3bj (D3, Becke-Johnson damping), d3zero (D3, zero damping), "
        "d4; energy and gradient (default: none)",
    )
