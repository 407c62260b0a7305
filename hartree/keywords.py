"""QCSchema keywords and method names -> the arguments of :func:`hartree.scf.run`: the one
mapping used by ``hartree run`` (an AtomicInput file, or the command line's own options),
``hartree batch`` and the QCEngine harness (:mod:`hartree.qcengine`).

    device, options = scf_options("energy", {"conv_tol": 1e-10, "grid_level": 2})
    method, options = method_options("b3lyp", molecule, options)  # 'rks', {..., 'xc': 'b3lyp'}
    result = hartree.scf.run(molecule, basis, method, device=device, **options)

The names and JSON types accepted are :data:`hartree.io.qcschema_input.KEYWORDS` (every
:class:`hartree.scf.SCFOptions` field that is plain data, ``device`` and ``unrestricted``);
values are checked there and, for their ranges, by SCFOptions.  Rule for the driver
``gradient``: the SCF converges at least as tightly as
:data:`hartree.gradients.GRADIENT_SCF_DEFAULTS` (``conv_tol`` and ``conv_tol_grad`` are the
smaller of the keyword and that default), as ``hartree run --gradient`` always did.

Methods (``model.method``, ``hartree run --method``): rhf, uhf and rohf are Hartree-Fock;
any other name is an exchange-correlation functional (:func:`hartree.dft.parse_functional`:
libxc names and hartree's aliases svwn, pbe, b3lyp, ...) and runs Kohn-Sham DFT: RKS for a
closed-shell singlet, UKS otherwise or with the keyword ``unrestricted`` (``--unrestricted``),
on the grid of ``grid_level`` (``--grid``, 1..9, default 3).  Refused with one InputError:
the method names rks, uks and roks (a functional is named instead; ROKS is not implemented),
``nlc_grid_level`` (``--nlc-grid``, the grid of
VV10's non-local part, default 1) with a functional without VV10, ``grid_level``,
``nlc_grid_level``, ``unrestricted`` or ``grid_response`` with Hartree-Fock, and any
functional when PySCF (the ``dft`` extra, for libxc) is missing.  Range-separated hybrids
(cam-b3lyp, wb97x, wb97x-v, ...) run energies and gradients on the CPU and the GPU
(erf-attenuated J/K and ERI gradients on both engines).

Dispersion (keyword ``dispersion``, ``--dispersion``: 'd3bj', 'd3zero' or 'd4'; an SCF
option, added by :func:`hartree.scf.run` after the SCF, with its gradient in every gradient):
Hartree-Fock and functionals alike, with the parameters of the dftd3/dftd4 packages;
:func:`method_options` refuses, before any work, a method the package has no parameters for
(:mod:`hartree.dft.dispersion`).  A method name may carry the model as a suffix, as chemists
write it (:func:`split_dispersion`): b3lyp-d3bj, b3lyp-d3(bj), pbe0-d4, rhf-d3bj, and -d3 for
the zero-damping D3 (Grimme 2010's original).  Refused in one line: a name that libxc knows
as one functional fitted with its own dispersion (wb97x-d3 is libxc's ωB97X-D3, not ωB97X
with D3), and a suffix with a different ``dispersion`` keyword.

Density fitting (keywords ``density_fitting``: true or an auxiliary basis, and ``exact_k``;
``--density-fitting [AUX]``, ``--exact-k``) is an SCF option of energies and gradients (the
driver ``gradient``, batch opt/freq tasks, ASE forces): :func:`hartree.gradients.scf_gradient`
differentiates the fitted energy (:mod:`hartree.df.gradient`), the fitted long-range exchange
of a range-separated hybrid (:mod:`hartree.df.range_separated`) included.

Gradients (``--gradient``, driver ``gradient``, ``hartree opt``, ``hartree freq``, batch
tasks gradient/opt/freq, ASE forces) exist for every SCF method here (RHF, UHF, ROHF, RKS,
UKS): :func:`gradient_options` is :func:`method_options` plus ``grid_response`` (keyword
``grid_response``, ``--grid-response``; default False as in PySCF), the argument of
:func:`hartree.gradients.scf_gradient` that adds the derivative of the integration grid.
:func:`check_gradient_method` refuses, before any work, a method name without gradients.
"""

from __future__ import annotations

import math

from .device.selection import DEVICES
from .errors import InputError
from .gradients import GRADIENT_SCF_DEFAULTS
from .io.qcschema_input import check_keywords
from .scf import SCFOptions

#: Hartree-Fock methods (every other SCF method name is a functional)
HF_METHODS = ("rhf", "uhf", "rohf")
#: keywords that choose how a functional runs, not SCF options: left in the options of
#: :func:`scf_options` for :func:`method_options`, which takes them out
METHOD_KEYWORDS = ("unrestricted", "grid_response")
#: the grid level of a Kohn-Sham run when no grid_level is given (SCFOptions' default)
DEFAULT_GRID_LEVEL = SCFOptions().grid_level


def scf_options(driver, keywords, where=None):
    """(device, options) for ``driver`` ('energy' | 'gradient') from ``keywords`` (a dict
    of :data:`~hartree.io.qcschema_input.KEYWORDS` entries): ``device`` is 'auto' unless
    given, ``options`` the SCFOptions fields to pass to :func:`hartree.scf.run` (module
    docstring) and the :data:`METHOD_KEYWORDS` given, which :func:`method_options` takes out.
    InputError naming ``where`` (the input, when the keywords come from one) and the keyword
    for a bad name or value."""
    prefix = f"{where}: " if where else ""
    options = check_keywords(keywords, where or "keywords")
    device = options.pop("device", "auto")
    if device not in DEVICES:
        raise InputError(f"{prefix}keywords.device must be one of {', '.join(DEVICES)}, got {device!r}")
    if driver == "gradient":
        defaults = SCFOptions()
        for name in ("conv_tol", "conv_tol_grad"):
            options[name] = min(options.get(name, getattr(defaults, name)), GRADIENT_SCF_DEFAULTS[name])
    elif driver != "energy":
        raise InputError(f"driver must be energy or gradient, got {driver!r}")
    # the ranges, now: one line before any work (the checkpoint a 'checkpoint' guess reads
    # is a command-line option, given to hartree.scf.run beside these options)
    check = {k: v for k, v in options.items() if k not in METHOD_KEYWORDS}
    if options.get("guess") == "checkpoint":
        check["checkpoint"] = "-"
    try:
        SCFOptions(**check)
    except InputError as exc:
        raise InputError(f"{prefix}{exc}") from None
    return device, options


def _aliases():
    """hartree's functional aliases (hartree.dft is imported only when a method needs it)."""
    from .dft.functionals import ALIASES

    return ALIASES


#: dispersion suffixes of method names -> hartree's model names (:func:`split_dispersion`)
DISPERSION_SUFFIXES = (("-d3(bj)", "d3bj"), ("-d3bj", "d3bj"), ("-d3zero", "d3zero"), ("-d3", "d3zero"), ("-d4", "d4"))


def _libxc_name(name):
    """libxc's code of ``name`` when hartree's aliases or PySCF's parser know it, else None."""
    from .dft.functionals import parse_functional

    try:
        return parse_functional(name).xc_code
    except InputError:
        return None


def split_dispersion(method):
    """(method name, dispersion model or None): 'b3lyp-d3bj' -> ('b3lyp', 'd3bj'),
    'rhf-d4' -> ('rhf', 'd4'), 'pbe' -> ('pbe', None); lower case.  InputError, one line,
    for a name that libxc knows as one functional with its own dispersion parameters
    (wb97x-d3 is libxc's WB97X_D3, not ωB97X plus D3)."""
    name = str(method).lower()
    for suffix, model in DISPERSION_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            base = name[: -len(suffix)]
            whole = None if base in HF_METHODS else _libxc_name(name.replace("-", "_"))
            if whole is not None:
                raise InputError(
                    f"method {method!r} is libxc's functional {whole}, fitted with its own dispersion "
                    "correction, which hartree does not provide; choose another functional"
                )
            return base, model
    return name, None


def is_functional(method):
    """True when the method name is read as a functional (not rhf, uhf, rohf or mp2, with or
    without a dispersion suffix)."""
    return split_dispersion(method)[0] not in (*HF_METHODS, "mp2")


def checked_functional(method, where=None):
    """The :class:`hartree.dft.Functional` of the method name ``method``, or one InputError:
    rks/uks/roks named as methods, unknown names, a missing PySCF (module docstring)."""
    from .scf.ks import checked_functional as ks_functional

    prefix = f"{where}: " if where else ""
    name = split_dispersion(method)[0]
    if name == "roks":
        raise InputError(
            f"{prefix}ROKS (restricted open-shell Kohn-Sham) is not implemented; name the functional "
            "(e.g. b3lyp): open shells run UKS"
        )
    if name == "hf":
        raise InputError(f"{prefix}method 'hf': use rhf, uhf or rohf")
    if name in ("rks", "uks"):
        raise InputError(
            f"{prefix}method {name!r}: name the functional instead (e.g. b3lyp, pbe): closed shells run "
            "RKS, others UKS, and 'unrestricted' (--unrestricted) asks for UKS"
        )
    try:
        functional = ks_functional(name)
    except InputError as exc:
        text = str(exc)
        if text.startswith("unknown functional"):
            hint = text.split("; use ", 1)[-1]
            text = f"unknown method {name!r}: use rhf, uhf, rohf, mp2 or a functional: {hint}"
        elif text.startswith("DFT needs PySCF") and name not in _aliases():  # a typo, or a functional
            text = f"unknown method {name!r}: not rhf, uhf, rohf or mp2; if it is a functional, {text}"
        raise InputError(f"{prefix}{text}") from None
    factors = [c.factor for c in functional.components] + [functional.hf_exchange]
    if not all(math.isfinite(x) for x in factors):  # PySCF's parser takes '1e999*b88'
        raise InputError(f"{prefix}functional {name!r} has a factor that is not a finite number")
    return functional


def _check_dispersion(name, options, prefix):
    """One InputError line when ``options['dispersion']`` is set and its package has no
    parameters for the method ``name`` (:func:`hartree.dft.dispersion.check_parameters`)."""
    model = options.get("dispersion")
    if model is None:
        return
    from .dft.dispersion import check_parameters

    try:
        check_parameters(name, model)
    except InputError as exc:
        raise InputError(f"{prefix}{exc}") from None


def method_options(method, molecule, options, where=None):
    """(method for :func:`hartree.scf.run`, options) for the method name ``method`` on
    ``molecule``: rhf/uhf/rohf as they are; a functional -> 'rks' for a closed-shell
    singlet unless ``options['unrestricted']``, else 'uks', with ``xc`` added and
    ``grid_level`` (default :data:`DEFAULT_GRID_LEVEL`) set.  ``options``: those of
    :func:`scf_options` (not changed; the copy returned has no :data:`METHOD_KEYWORDS`).
    InputError, one line naming ``where``, for the refusals of the module docstring."""
    prefix = f"{where}: " if where else ""
    name, suffix_model = split_dispersion(method)
    if suffix_model is not None:
        given = options.get("dispersion")
        if given is not None and given != suffix_model:
            raise InputError(
                f"{prefix}method {method!r} names the dispersion {suffix_model} and the dispersion {given!r} "
                "was also given: name one"
            )
        options = {**options, "dispersion": suffix_model}
    out = {k: v for k, v in options.items() if k not in METHOD_KEYWORDS}
    if name == "mp2":
        raise InputError(f"{prefix}method 'mp2' is not an SCF method; RI-MP2 runs with hartree run --method mp2")
    if name in HF_METHODS:
        dft = ("grid_level", "nlc_grid_level", "unrestricted", "grid_response")
        given = [k for k in dft if k in options and options[k] is not False]
        if given:
            raise InputError(
                f"{prefix}{' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} only to DFT "
                f"functionals, not to {name.upper()}" + (" (use method 'uhf')" if "unrestricted" in given else "")
            )
        _check_dispersion(name, options, prefix)
        return name, out
    functional = checked_functional(name, where)
    if "nlc_grid_level" in options and functional.vv10 is None:
        raise InputError(f"{prefix}nlc_grid_level (--nlc-grid) applies only to VV10 functionals, not to {name!r}")
    _check_dispersion(name, options, prefix)
    closed = molecule.multiplicity == 1 and molecule.nelectron % 2 == 0
    scf = "rks" if closed and not options.get("unrestricted") else "uks"
    out["xc"] = name
    out.setdefault("grid_level", DEFAULT_GRID_LEVEL)
    return scf, out


def gradient_options(method, molecule, options, where=None):
    """(method for :func:`hartree.scf.run`, SCF options, grid_response) of a gradient:
    :func:`method_options` and the keyword ``grid_response`` (bool, default False) for
    :func:`hartree.gradients.scf_gradient` (with a VV10 functional, of both grids);
    InputError, one line, for ``grid_response`` with Hartree-Fock (through
    :func:`method_options`)."""
    scf, out = method_options(method, molecule, options, where)
    return scf, out, bool(options.get("grid_response", False))


def check_gradient_method(method, what, where=None):
    """One InputError line, before any work, when the method name ``method`` has no analytic
    gradient for ``what`` ('--gradient', 'hartree opt', ...): a name that is neither
    Hartree-Fock nor a functional :func:`checked_functional` accepts (roks, unknown names).
    RI-MP2 is each caller's own refusal.  Returns None."""
    if not is_functional(method):
        return
    prefix = f"{where}: " if where else ""
    try:
        checked_functional(method)
    except InputError as exc:
        raise InputError(f"{prefix}{what}: {exc}") from None
