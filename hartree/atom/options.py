"""Typed options of the atomic (Dirac-)Hartree-Fock SCF."""

from dataclasses import dataclass

from ..device.selection import DEVICES
from ..errors import InputError

#: default speed of light (a.u.), the value of the issue; the thesis uses 137.03599976
DEFAULT_LIGHT_SPEED = 137.0359895

#: Largest speed of light (a.u.) accepted: at 1e10 the Dirac-Fock energy of He equals the
#: Hartree-Fock one to 1e-10 Eh; beyond, c^2 terms only lose digits (and overflow near 1e154).
MAX_LIGHT_SPEED = 1e10


@dataclass(frozen=True)
class AtomSCFOptions:
    """SCF settings (the thesis' $contrl/$scf groups).

    light_speed: c in a.u. (ignored when relativistic is False, i.e. c -> ∞).
    max_iterations: maxitr.  energy_tol: |ΔE| (Eh) between iterations.
    thdll, thdsl, thdss: max |ΔD| of the LL, SL and SS density blocks (thesis defaults),
    measured in the Löwdin-orthonormalized functions (S^½ ΔD S^½ per component block).
    diis: Pulay DIIS on the Fock supermatrices (else damping only); diis_space: vectors kept.
    damping: dfctr, F_used = (1-d) F_new + d F_previous (used when diis is False, and
    in the first iteration otherwise).  overlap_threshold: eigenvalues of the
    *normalized* block overlap (unit diagonal, each component block scaled apart) below
    this are dropped (canonical orthogonalization).  energy_tol is floored at the rounding
    level of the energy, 64 ε |E| (3.4e-10 Eh for Rn), which a double cannot resolve.
    device: 'cpu' (numba), 'gpu' (CuPy; DeviceError without a usable GPU) or 'auto'
    (the GPU when one is usable) for the two-electron integrals and Fock builds.
    """

    light_speed: float = DEFAULT_LIGHT_SPEED
    relativistic: bool = True
    max_iterations: int = 100
    energy_tol: float = 1e-10
    thdll: float = 1e-5
    thdsl: float = 1e-7
    thdss: float = 1e-9
    diis: bool = True
    diis_space: int = 8
    damping: float = 0.3
    overlap_threshold: float = 1e-14
    device: str = "auto"

    def __post_init__(self):
        if not 1.0 < self.light_speed <= MAX_LIGHT_SPEED:
            raise InputError(
                f"light speed must lie in (1, {MAX_LIGHT_SPEED:g}] a.u. (use the "
                f"nonrelativistic mode for c -> infinity), got {self.light_speed}"
            )
        if self.max_iterations < 1:
            raise InputError("max_iterations (maxitr) must be at least 1")
        if self.device not in DEVICES:
            raise InputError(f"unknown device {self.device!r}; choose auto, cpu or gpu")
        if not 0.0 <= self.damping < 1.0:
            raise InputError(f"damping factor dfctr must be in [0, 1), got {self.damping}")
