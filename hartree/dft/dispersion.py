"""Dispersion corrections D3(BJ), D3(zero) and D4 through the dftd3 and dftd4 packages.

    energy, grad = dispersion_energy_gradient(molecule, "b3lyp", "d3bj", gradient=True)
    # energy in Eh, grad (natm, 3) in Eh/bohr

The corrections are added to an SCF energy after the SCF (they depend on the nuclei only, not
on the density): E = E_SCF + E_disp and dE/dR = dE_SCF/dR + dE_disp/dR.  Nothing is
reimplemented here: the energies, gradients and damping parameters are those of

* ``d3bj``: DFT-D3 with Becke-Johnson (rational) damping (S. Grimme, J. Antony, S. Ehrlich and
  H. Krieg, J. Chem. Phys. 132, 154104 (2010); S. Grimme, S. Ehrlich and L. Goerigk,
  J. Comput. Chem. 32, 1456 (2011)), the dftd3 package's ``RationalDampingParam``;
* ``d3zero``: DFT-D3 with the original zero damping (Grimme et al. 2010),
  ``ZeroDampingParam``;
* ``d4``: DFT-D4 (E. Caldeweyher, S. Ehlert, A. Hansen, H. Neugebauer, S. Spicher,
  C. Bannwarth and S. Grimme, J. Chem. Phys. 150, 154122 (2019)), the dftd4 package's
  ``DampingParam`` with the molecule's total charge (D4's atomic charges come from its own
  electronegativity equilibration model, not from the SCF).

Three-body terms follow the packages' defaults: D3 is two-body only (s9 = 0, the D3 of most
programs and PySCF's 'd3bj'/'d3zero'), D4 includes the Axilrod-Teller-Muto term (s9 = 1,
PySCF's 'd4').

Parameters come from the packages' own tables by functional name
(:func:`parameter_name`): Hartree-Fock (rhf, uhf, rohf) is 'hf'; hartree's aliases
(:data:`hartree.dft.functionals.ALIASES`) are passed under the names the packages know
(:data:`PARAMETER_NAMES`: b3lyp5 takes b3lyp's parameters, as dftd3's own table does;
m06-l and m06-2x are m06l and m062x); a libxc name equal to an alias's definition
('HYB_GGA_XC_B3LYP') is read as that alias; any other plain name goes to the package as
written.  A combination without parameters (svwn with any model, m06-2x with d3bj or d4,
r2scan with d3zero, expressions such as '0.5*HF + 0.5*B88, LYP') is refused with one
InputError naming the functional, the model and the package.

The packages are imported only when a correction is asked for: they are part of the ``dft``
extra where wheels exist (Linux x86_64; dftd3 also macOS arm64 and Windows); a missing one
is an InputError naming it.  Their C libraries run on the host whatever the SCF's device.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import InputError
from ..scf.options import DISPERSION_MODELS
from .functionals import ALIASES

__all__ = [
    "DISPERSION_MODELS",
    "PARAMETER_NAMES",
    "check_parameters",
    "dispersion_energy_gradient",
    "dispersion_record",
    "model_label",
    "parameter_name",
]

#: hartree's functional names whose parameters the packages keep under another name
PARAMETER_NAMES = {"b3lyp5": "b3lyp", "m06-l": "m06l", "m06-2x": "m062x"}
#: Hartree-Fock method names: the packages' 'hf' parameters
_HF_NAMES = ("hf", "rhf", "uhf", "rohf")
#: model -> (package, damping class in the package's interface module, three-body term)
_MODELS = {
    "d3bj": ("dftd3", "RationalDampingParam", False),
    "d3zero": ("dftd3", "ZeroDampingParam", False),
    "d4": ("dftd4", "DampingParam", True),
}
#: model -> how papers and reports write it
_LABELS = {"d3bj": "D3(BJ)", "d3zero": "D3(zero)", "d4": "D4"}
#: names handed to the packages' C libraries: letters, digits, '-', '_' (no expressions)
_PLAIN_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]*")


def model_label(model):
    """'D3(BJ)', 'D3(zero)' or 'D4' for a model name of :data:`DISPERSION_MODELS`."""
    return _LABELS[str(model).lower()]


def _checked_model(model):
    name = str(model).lower()
    if name not in _MODELS:
        raise InputError(f"unknown dispersion model {str(model)[:40]!r}; choose one of {', '.join(DISPERSION_MODELS)}")
    return name


def parameter_name(functional):
    """The name under which the packages' tables hold the parameters of ``functional`` (a
    hartree method or functional name, any case): 'hf' for Hartree-Fock, the alias for a
    libxc definition of one, :data:`PARAMETER_NAMES` where the packages' name differs,
    else the name in lower case."""
    name = "".join(str(functional).lower().split())
    if name in _HF_NAMES:
        return "hf"
    if name not in ALIASES:
        for alias, code in ALIASES.items():  # 'HYB_GGA_XC_B3LYP' -> 'b3lyp'
            if code.lower() == name:
                name = alias
                break
    return PARAMETER_NAMES.get(name, name)


def _interface(package):
    """The ``interface`` module of dftd3 or dftd4, and the package's version."""
    try:
        if package == "dftd3":
            import dftd3 as module
            from dftd3 import interface
        else:
            import dftd4 as module
            from dftd4 import interface
    except ImportError:
        raise InputError(
            f'the dispersion correction needs the {package} package: pip install "hartree[dft]" '
            f"(or pip install {package}; conda-forge has it for every platform)"
        ) from None
    return interface, str(getattr(module, "__version__", "unknown"))


def _damping(functional, model):
    """(damping parameter object, parameter name, package, version, three-body) or one
    InputError (module docstring)."""
    model = _checked_model(model)
    package, cls, three_body = _MODELS[model]
    interface, version = _interface(package)
    name = parameter_name(functional)
    try:
        if not _PLAIN_NAME.fullmatch(name):
            raise RuntimeError(name)
        param = getattr(interface, cls)(method=name, atm=three_body)
    except RuntimeError:
        raise InputError(
            f"no {model_label(model)} dispersion parameters for {str(functional)[:60]!r} in {package} {version} "
            f"(looked up as {name[:60]!r}); choose another --dispersion model or functional"
        ) from None
    return param, name, package, version, three_body


def check_parameters(functional, model):
    """None when the package of ``model`` has parameters for ``functional``; else one
    InputError (an unknown model, a missing package, no parameters).  Cheap: no geometry."""
    _damping(functional, model)


def dispersion_energy_gradient(molecule, functional_name, model, gradient=False):
    """(E_disp in Eh, dE_disp/dR as numpy (natm, 3) in Eh/bohr, or None unless ``gradient``)
    of ``model`` ('d3bj' | 'd3zero' | 'd4') with the parameters of ``functional_name`` (a
    functional, or rhf/uhf/rohf/hf for Hartree-Fock) for ``molecule`` (coordinates in bohr;
    D4 also takes its charge).  InputError as :func:`check_parameters`."""
    param, _, package, version, _ = _damping(functional_name, model)
    interface, _ = _interface(package)
    numbers = np.ascontiguousarray(molecule.numbers, dtype=np.int32)
    positions = np.ascontiguousarray(molecule.coords, dtype=np.float64)
    try:
        if package == "dftd4":
            disp = interface.DispersionModel(numbers, positions, charge=float(molecule.charge))
        else:
            disp = interface.DispersionModel(numbers, positions)
        res = disp.get_dispersion(param, grad=bool(gradient))
    except RuntimeError as exc:  # e.g. an element the model has no reference data for
        raise InputError(f"{package} {version}: {exc}") from None
    energy = float(res["energy"])
    grad = np.array(res["gradient"], dtype=np.float64).reshape(len(numbers), 3) if gradient else None
    return energy, grad


def dispersion_record(molecule, functional_name, model):
    """The record of ``SCFResult.dispersion`` (plain JSON types): model, its label, the
    functional named, the parameter set looked up, package and version, the three-body
    term and the energy (Eh) for ``molecule``."""
    _, name, package, version, three_body = _damping(functional_name, model)
    energy, _ = dispersion_energy_gradient(molecule, functional_name, model)
    return {
        "model": str(model).lower(),
        "label": model_label(model),
        "functional": str(functional_name).lower(),
        "parameters": name,
        "package": package,
        "version": version,
        "three_body": bool(three_body),
        "energy": energy,
    }
