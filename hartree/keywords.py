"""QCSchema keywords -> the arguments of :func:`hartree.scf.run`: the one mapping used by
``hartree run`` (an AtomicInput file, or the command line's own options), ``hartree batch``
and the QCEngine harness (:mod:`hartree.qcengine`).

    device, options = scf_options("gradient", {"conv_tol": 1e-10, "device": "cpu"})
    result = hartree.scf.run(molecule, basis, method, device=device, **options)

The names and JSON types accepted are :data:`hartree.io.qcschema_input.KEYWORDS` (every
:class:`hartree.scf.SCFOptions` field that is plain data, and ``device``); values are
checked there and, for their ranges, by SCFOptions.  Rule for the driver ``gradient``: the
SCF converges at least as tightly as :data:`hartree.gradients.GRADIENT_SCF_DEFAULTS`
(``conv_tol`` and ``conv_tol_grad`` are the smaller of the keyword and that default), as
``hartree run --gradient`` always did.
"""

from __future__ import annotations

from .device.selection import DEVICES
from .errors import InputError
from .gradients import GRADIENT_SCF_DEFAULTS
from .io.qcschema_input import check_keywords
from .scf import SCFOptions


def scf_options(driver, keywords, where=None):
    """(device, options) for ``driver`` ('energy' | 'gradient') from ``keywords`` (a dict
    of :data:`~hartree.io.qcschema_input.KEYWORDS` entries): ``device`` is 'auto' unless
    given, ``options`` the SCFOptions fields to pass to :func:`hartree.scf.run` (module
    docstring).  InputError naming ``where`` (the input, when the keywords come from one)
    and the keyword for a bad name or value."""
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
    check = {**options, "checkpoint": "-"} if options.get("guess") == "checkpoint" else options
    try:
        SCFOptions(**check)
    except InputError as exc:
        raise InputError(f"{prefix}{exc}") from None
    return device, options
