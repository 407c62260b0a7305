"""Exchange-correlation functionals by name: libxc components, family, exact exchange.

    f = parse_functional("b3lyp")
    f.xc_code, f.family, f.hf_exchange, f.components   # "HYB_GGA_XC_B3LYP", "GGA", 0.2, ...

Values of the functionals come from libxc (S. Lehtola, C. Steigemann, M. J. T. Oliveira and
M. A. L. Marques, SoftwareX 7, 1 (2018)), never reimplemented here.  On the CPU no
standalone libxc binding installs from wheels today (pylibxc7 builds from source only,
pylibxc2 is an empty placeholder), so hartree takes the libxc that PySCF bundles
(``pyscf.dft.libxc``), for XC evaluation only: PySCF is a runtime dependency of the ``dft``
extra (``pip install "hartree[dft]"``) and imported only when a functional is asked for, so
that hartree imports and runs Hartree-Fock without it.

Names.  The common names of :data:`ALIASES` map to explicit libxc functionals and follow
libxc's definitions: b3lyp is libxc's HYB_GGA_XC_B3LYP (with VWN-RPA correlation, as in
Gaussian), svwn is Slater exchange with VWN5 correlation (LDA_X + LDA_C_VWN), pbe0 is
HYB_GGA_XC_PBEH.  Any other name goes to PySCF's parser as it is: libxc names
("HYB_GGA_XC_B3LYP", "GGA_X_PBE,GGA_C_PBE") or PySCF's expressions ("0.5*HF + 0.5*B88, LYP").

Exact exchange (PySCF's convention, libxc's CAM parameters): the exchange matrices enter
the Fock matrix as

    alpha K + beta K_sr(ω),  K_sr with the erfc(ω r12)/r12 operator,

so the short-range fraction of exact exchange is alpha + beta and the long-range one
alpha; a global hybrid has omega = beta = 0 and alpha = :attr:`Functional.hf_exchange`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import InputError

__all__ = ["ALIASES", "Functional", "parse_functional", "libxc"]

#: Common names -> libxc functionals (X,C separated by a comma; one name for a combined XC
#: functional).  Keys are lower case without spaces.
ALIASES = {
    "svwn": "LDA_X,LDA_C_VWN",
    "lda": "LDA_X,LDA_C_VWN",
    "svwn-rpa": "LDA_X,LDA_C_VWN_RPA",
    "spw92": "LDA_X,LDA_C_PW_MOD",
    "blyp": "GGA_X_B88,GGA_C_LYP",
    "bp86": "GGA_X_B88,GGA_C_P86",
    "pbe": "GGA_X_PBE,GGA_C_PBE",
    "revpbe": "GGA_X_PBE_R,GGA_C_PBE",
    "pbesol": "GGA_X_PBE_SOL,GGA_C_PBE_SOL",
    "b3lyp": "HYB_GGA_XC_B3LYP",
    "b3lyp5": "HYB_GGA_XC_B3LYP5",
    "pbe0": "HYB_GGA_XC_PBEH",
    "b97-1": "HYB_GGA_XC_B97_1",
    "tpss": "MGGA_X_TPSS,MGGA_C_TPSS",
    "tpssh": "HYB_MGGA_XC_TPSSH",
    "scan": "MGGA_X_SCAN,MGGA_C_SCAN",
    "r2scan": "MGGA_X_R2SCAN,MGGA_C_R2SCAN",
    "m06-l": "MGGA_X_M06_L,MGGA_C_M06_L",
    "m06": "HYB_MGGA_X_M06,MGGA_C_M06",
    "m06-2x": "HYB_MGGA_X_M06_2X,MGGA_C_M06_2X",
    "cam-b3lyp": "HYB_GGA_XC_CAM_B3LYP",
    "lc-wpbe": "HYB_GGA_XC_LC_WPBE",
    "wb97x": "HYB_GGA_XC_WB97X",
    "wb97x-v": "HYB_GGA_XC_WB97X_V",
    "wb97m-v": "HYB_MGGA_XC_WB97M_V",
    "b97m-v": "MGGA_XC_B97M_V",
}

_FAMILIES = ("LDA", "GGA", "MGGA")


def libxc() -> Any:
    """PySCF's libxc module (``pyscf.dft.libxc``); InputError naming the ``dft`` extra when
    PySCF is missing."""
    try:
        from pyscf.dft import libxc as module
    except ImportError:
        raise InputError(
            'DFT needs PySCF for its libxc (exchange-correlation values): pip install "hartree[dft]"'
        ) from None
    return module


@dataclass(frozen=True)
class Component:
    """One libxc functional of a combination: its libxc id and name, its factor."""

    id: int
    name: str
    factor: float


@dataclass(frozen=True)
class Functional:
    """An exchange-correlation functional, resolved through libxc.

    name          the name as asked (lower case, spaces removed)
    xc_code       the description handed to ``pyscf.dft.libxc`` (libxc names)
    family        "LDA", "GGA" or "MGGA" (what the semilocal part needs: ρ; ρ, ∇ρ; ρ, ∇ρ, τ)
    components    the libxc functionals and factors (:class:`Component`)
    hf_exchange   fraction of full-range exact exchange (libxc's hybrid coefficient; for
                  range-separated hybrids its cam_alpha); 0 for pure functionals
    omega         range-separation parameter ω, bohr^-1; 0 when not range separated
    alpha, beta   exact exchange as alpha K + beta K_sr(ω) (module docstring)
    vv10          (b, C) of a VV10 non-local correlation the functional includes, else None
    references    libxc's references of the components
    """

    name: str
    xc_code: str
    family: str
    components: tuple[Component, ...]
    hf_exchange: float
    omega: float
    alpha: float
    beta: float
    vv10: tuple[float, float] | None
    references: tuple[str, ...]

    @property
    def is_hybrid(self) -> bool:
        """True when exact exchange enters (global or range separated)."""
        return self.alpha != 0.0 or self.beta != 0.0

    @property
    def is_range_separated(self) -> bool:
        """True when the erfc-attenuated exchange K_sr(ω) enters."""
        return self.omega != 0.0 and self.beta != 0.0


@cache
def _libxc_names() -> dict[int, str]:
    """libxc's own name (upper case) of each functional id."""
    return {int(i): name for name, i in libxc().available_libxc_functionals().items()}


def _normalise(name: str) -> str:
    return "".join(str(name).split()).lower()


def parse_functional(name: str | Functional) -> Functional:
    """The :class:`Functional` of a name (module docstring); a Functional is returned as is.

    InputError, one line, for a name neither hartree's aliases nor libxc know, for "hf"
    (not a density functional), for a dispersion suffix (named separately), and for
    functionals that need the Laplacian of the density (not supported yet).
    """
    if isinstance(name, Functional):
        return name
    key = _normalise(name)
    if not key:
        raise InputError("empty functional name")
    if "-d3" in key or "-d4" in key:
        raise InputError(f"functional {name!r}: give the dispersion correction separately, not in the name")
    module = libxc()
    xc_code = ALIASES.get(key, key.upper())
    try:
        _, terms = module.parse_xc(xc_code)
        family = module.xc_type(xc_code)
    except (KeyError, ValueError, IndexError, TypeError, AssertionError):
        raise InputError(
            f"unknown functional {name!r}; use a libxc name (e.g. HYB_GGA_XC_B3LYP) or one of "
            f"{', '.join(sorted(ALIASES))}"
        ) from None
    if family == "HF" or not terms:
        raise InputError(f"{name!r} is Hartree-Fock, not a density functional")
    if family not in _FAMILIES:
        raise InputError(f"functional {name!r} is of an unsupported libxc family ({family})")
    if module.needs_laplacian(xc_code):
        raise InputError(f"functional {name!r} needs the Laplacian of the density, which hartree does not support")
    omega, alpha, beta = (float(x) for x in module.rsh_coeff(xc_code))
    if omega == 0.0:  # PySCF before 2.8 put a global hybrid's fraction in beta
        alpha, beta = alpha + beta, 0.0
    vv10 = None
    if module.is_nlc(xc_code):
        coeff = module.nlc_coeff(xc_code)  # ((b, C), factor) per VV10 part; (b, C) before PySCF 2.8
        b, c = coeff[0][0] if isinstance(coeff[0], (tuple, list)) else coeff[:2]
        vv10 = (float(b), float(c))
    names = _libxc_names()
    components = tuple(Component(int(i), names.get(int(i), str(int(i))), float(f)) for i, f in terms)
    references = tuple(ref for i, _ in terms for ref in module.xc_reference(int(i)))
    return Functional(
        name=key,
        xc_code=xc_code,
        family=family,
        components=components,
        hf_exchange=float(module.hybrid_coeff(xc_code)),
        omega=omega,
        alpha=alpha,
        beta=beta,
        vv10=vv10,
        references=references,
    )
