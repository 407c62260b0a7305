"""hartree.vibrations: harmonic frequencies, IR intensities and thermochemistry.

>>> from hartree.vibrations import frequencies, harmonic_analysis, thermochemistry
>>> res = frequencies(mol, "6-31g*", "rhf")          # Hessian from 6N analytic gradients
>>> res.frequencies, res.ir_intensities              # cm^-1 (imaginary < 0), km/mol
>>> res.zero_point_energy, res.thermochemistry.gibbs_free_energy   # Eh
>>> a = harmonic_analysis(hessian, mol)              # any (3N, 3N) Hessian, Eh/bohr^2
>>> thermochemistry(a, energy=-76.0, temperature=350.0, pressure=1e5)

See docs/frequencies.md for the equations, units and conventions.
"""

from .analysis import harmonic_analysis
from .driver import FREQUENCY_METHODS, frequencies
from .executors import DaskExecutor, GPUWorkersExecutor, SerialExecutor, open_executor
from .hessian import DEFAULT_STEP, FREQUENCY_SCF_DEFAULTS, finite_difference_hessian
from .masses import default_masses, masses_from_text
from .result import Contribution, FrequencyResult, HarmonicAnalysis, Thermochemistry
from .symmetry import PointGroup, point_group
from .thermo import thermochemistry
from .units import CODATA, PhysicalConstants

__all__ = [
    "frequencies",
    "harmonic_analysis",
    "thermochemistry",
    "finite_difference_hessian",
    "point_group",
    "default_masses",
    "masses_from_text",
    "open_executor",
    "SerialExecutor",
    "DaskExecutor",
    "GPUWorkersExecutor",
    "FrequencyResult",
    "HarmonicAnalysis",
    "Thermochemistry",
    "Contribution",
    "PointGroup",
    "PhysicalConstants",
    "CODATA",
    "DEFAULT_STEP",
    "FREQUENCY_SCF_DEFAULTS",
    "FREQUENCY_METHODS",
]
