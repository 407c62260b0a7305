"""The table of integral kinds: what each kind is, its limits, and which code serves it on
the CPU and on the GPU.

One :class:`IntegralKind` per kind, in :data:`KINDS`.  Implementations are named as data
(module and attribute path, :class:`Implementation`), not imported here: the table can be
read without numba compiling or a GPU present, and ``tests/integrals/test_spec.py`` checks
that every named function exists, that the limits equal the modules' own constants, and
that the engines serve the kinds the table says (``engine_method``, a member of
:class:`hartree.engine.IntegralEngine`).

Kinds that are planned but not written are entries with ``implemented=False`` and no
implementation: :func:`implementation` refuses them (nothing routes to them, no stub
pretends to work).  Adding a kind: write its kernels (for a Rys kind, a rule or schedule of
:mod:`hartree.integrals.rys_program`; for a one-electron kind, an integral of
:mod:`hartree.integrals.os_program` -- products of 1-D factors, new 1-D rules where needed --
in the operator tables of its printers, :mod:`hartree.integrals.os_codegen` (numba) and the
GPU kernel files over :mod:`hartree.gpu.os_printer` (CUDA)), then give its entry the
implementations and, when methods need it through an engine, the ``engine_method`` (with
that member added to :mod:`hartree.engine` and both engines).

Units: atomic units throughout (bohr, hartree).  Angular-momentum limits: ``max_l`` per
shell (the basis data model allows l <= 6, :data:`hartree.basis.MAX_L`) and ``max_l_total``
the largest sum over the centres (bounded by the Rys rules: n roots integrate polynomials of
degree 2n-1 in t², so a kind of total l needs l//2 + 1 <= 14 roots, the size of both
tables: :data:`hartree.integrals.rys.MAX_NROOTS`, the GPU Chebyshev table).
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class Implementation(NamedTuple):
    """A function (or method) serving a kind: ``module``:``attribute`` (dotted for a
    method, e.g. ``DirectJK.launch``), with a sentence on what it returns."""

    module: str
    attribute: str
    returns: str


class IntegralKind(NamedTuple):
    """One kind of integral (module docstring)."""

    name: str
    operator: str  #: the operator between the basis functions
    centres: int  #: basis functions in the integrand (2: <a|O|b>, 3: (ab|P), 4: (ab|cd))
    derivative_order: int  #: 0: the integrals; 1: first derivatives by nuclear coordinates
    reference: str  #: the equations the kernels follow
    implemented: bool
    max_l: int | None = None  #: per shell (None: not implemented)
    max_l_total: int | None = None  #: sum over the centres
    cpu: Implementation | None = None
    gpu: Implementation | None = None
    engine_method: str | None = None  #: member of hartree.engine.IntegralEngine serving it
    note: str = ""


_OS = "Obara & Saika, J. Chem. Phys. 84, 3963 (1986) (1-D recurrences)"
_OS_PROGRAM = "; the program: hartree.integrals.os_program"
_RYS = (
    "Rys, Dupuis & King, J. Comput. Chem. 4, 154 (1983) (quadrature, VRR); Head-Gordon & Pople, "
    "J. Chem. Phys. 89, 5777 (1988) (HRR); the program: hartree.integrals.rys_program"
)
_ONE = "hartree.integrals.one_electron"
_ONE_GPU = "hartree.gpu.one_electron_gpu"
_DF = "hartree.integrals.three_center"

KINDS: tuple[IntegralKind, ...] = (
    IntegralKind(
        "overlap", "1", 2, 0, _OS + _OS_PROGRAM, True, 6, 12,
        cpu=Implementation(_ONE, "overlap", "S (nao, nao)"),
        gpu=Implementation(_ONE_GPU, "OneElectronGPU.overlap", "S (nao, nao), cupy"),
        engine_method="overlap",
    ),
    IntegralKind(
        "kinetic", "-∇²/2", 2, 0, _OS + "; kinetic from the ket differentiated twice" + _OS_PROGRAM, True, 6, 12,
        cpu=Implementation(_ONE, "kinetic", "T (nao, nao), hartree"),
        gpu=Implementation(_ONE_GPU, "OneElectronGPU.kinetic", "T (nao, nao), hartree, cupy"),
        engine_method="kinetic",
    ),
    IntegralKind(
        "nuclear", "-Σ_C Z_C / |r - C|", 2, 0,
        "Dupuis, Rys & King, J. Chem. Phys. 65, 111 (1976) (Rys quadrature of point charges)" + _OS_PROGRAM,
        True, 6, 12,
        cpu=Implementation(_ONE, "nuclear", "V (nao, nao), hartree"),
        gpu=Implementation(_ONE_GPU, "OneElectronGPU.nuclear", "V (nao, nao), hartree, cupy"),
        engine_method="nuclear",
    ),
    IntegralKind(
        "dipole", "r - origin", 2, 0, _OS + "; x - Cx = (x - Bx) + (Bx - Cx)" + _OS_PROGRAM, True, 6, 12,
        cpu=Implementation(_ONE, "dipole", "(3, nao, nao), bohr"),
        gpu=Implementation(_ONE_GPU, "OneElectronGPU.dipole", "(3, nao, nao), bohr, cupy"),
        engine_method="dipole",
    ),
    IntegralKind(
        "quadrupole", "(r - origin)(r - origin)^T", 2, 0, _OS, False,
        note="higher multipoles: os_program's integrals with the operator r applied twice; not written",
    ),
    IntegralKind(
        "eri", "1/|r1 - r2|, (ab|cd)", 4, 0, _RYS, True, 6, 24,
        cpu=Implementation("hartree.integrals.jk", "jk", "J, K (nset, nao, nao); eri.eri_full: the tensor"),
        gpu=Implementation("hartree.gpu.jk_direct", "DirectJK.launch", "J, K contributions of one quartet class"),
        engine_method="jk",
        note="contracted with densities (direct J/K); the tensor only for tests (CPUEngine.eri)",
    ),
    IntegralKind(
        "int3c2e", "1/|r1 - r2|, (ab|P)", 3, 0, _RYS + " (the ERI class (la lb|lP 0))", True, 6, 18,
        cpu=Implementation(_DF, "int3c2e", "(nao, nao, naux), hartree"),
        gpu=Implementation("hartree.gpu.eri3c", "ThreeCenterBuilder.int3c", "(nao, nao, naux batch), cupy"),
        engine_method="int3c2e",
        note="density fitting (RI-J/K of the SCF through the engine; RI-MP2 directly); the kernels allow "
        "l_a + l_b + l_P <= 26",
    ),
    IntegralKind(
        "int2c2e", "1/|r1 - r2|, (P|Q)", 2, 0, _RYS + " (as (P 1|Q) with the unit function)", True, 6, 12,
        cpu=Implementation(_DF, "int2c2e", "(naux, naux), hartree"),
        gpu=Implementation("hartree.gpu.eri3c", "ThreeCenterBuilder.int2c", "(naux, naux), cupy"),
        engine_method="int2c2e",
        note="density fitting metric",
    ),
    # ---------------------------------------------------------------- to come (not written)
    IntegralKind(
        "one_electron_deriv1", "∂/∂R of <a|b>, <a|-∇²/2|b>, <a|-Σ Z_C/|r-C||b>", 2, 1,
        _OS + " (eq. 20: ∂/∂A_x φ_a = 2α φ_(a+1x) - a_x φ_(a-1x)); ∂/∂C = -(∂/∂A + ∂/∂B) for the operator centre"
        + _OS_PROGRAM,
        True, 5, 10,
        cpu=Implementation("hartree.integrals.one_electron_deriv", "one_electron_gradient",
                           "Σ D d(T+V)/dR - Σ W dS/dR per atom (natm, 3), hartree/bohr"),
        gpu=Implementation("hartree.gpu.one_electron_deriv_gpu", "OneElectronGradientGPU.gradient",
                           "Σ D d(T+V)/dR - Σ W dS/dR per atom (natm, 3), hartree/bohr"),
        engine_method="one_electron_gradient",
        note="gradients: contracted with the density and the energy-weighted density, never stored",
    ),
    IntegralKind(
        "eri_deriv1", "∂/∂R of (ab|cd)", 4, 1, _RYS + "; derivative by the Gaussian-exponent rule", True, 5, 20,
        cpu=Implementation("hartree.integrals.eri_deriv", "eri_gradient",
                           "1/2 Σ Γ d(ab|cd)/dR per atom (natm, 3), hartree/bohr"),
        gpu=Implementation("hartree.gpu.gradient", "DirectGradient.gradient",
                           "1/2 Σ Γ d(ab|cd)/dR per atom (natm, 3), hartree/bohr"),
        engine_method="two_electron_gradient",
        note="gradients: contracted with the two-particle density quartet by quartet, never the derivative "
        "tensor; raised and lowered classes of the energy's kernels (CPU: the generic numba primitive stage; "
        "GPU: the device functions printed from the Rys program, hartree.gpu.gradient_kernels)",
    ),
    IntegralKind(
        "int3c2e_deriv1", "∂/∂R of (ab|P)", 3, 1, _RYS + "; orbital centres by the Gaussian-exponent rule "
        "(Obara & Saika eq. 20), the auxiliary centre by translational invariance", True, 6, 18,
        cpu=Implementation("hartree.integrals.three_center_deriv", "grad3c",
                           "Σ Γ_abP d(ab|P)/dR per atom (natm, 3), hartree/bohr"),
        gpu=Implementation("hartree.gpu.eri3c_gradient", "ThreeCenterGradient.grad3c",
                           "Σ Γ_abP d(ab|P)/dR per atom (3 natm,), hartree/bohr, cupy"),
        engine_method="int3c2e_gradient",
        note="gradients of density-fitted energies: contracted with a 3-index Γ (symmetric in a, b; aux-shell "
        "batches), never stored; raised and lowered classes of the int3c2e kernels (CPU: l_a + l_b + l_P <= 25; "
        "GPU: the energy's device functions of (la±1 lb|lc 0), (la lb±1|lc 0), hartree.gpu.eri3c_gradient)",
    ),
    IntegralKind(
        "int2c2e_deriv1", "∂/∂R of (P|Q)", 2, 1, _RYS + " (the bra of (P 1|Q) differentiated)", True, 6, 12,
        cpu=Implementation("hartree.integrals.three_center_deriv", "grad2c",
                           "Σ Γ_PQ d(P|Q)/dR per atom (natm, 3), hartree/bohr"),
        gpu=Implementation("hartree.gpu.eri3c_gradient", "ThreeCenterGradient.grad2c",
                           "Σ Γ_PQ d(P|Q)/dR per atom (3 natm,), hartree/bohr, cupy"),
        engine_method="int2c2e_gradient",
        note="gradients of density-fitted energies (the metric term)",
    ),
    IntegralKind(
        "eri_erf", "erf(ω r12)/r12, (ab|cd)", 4, 0, _RYS + "; roots of T ω²/(ω² + ρ), weights × ω/sqrt(ω² + ρ)", True,
        6, 24,
        cpu=Implementation("hartree.integrals.jk", "jk", "J, K (nset, nao, nao) with omega > 0"),
        gpu=Implementation("hartree.gpu.jk_direct", "DirectJK.jk", "J, K (nset, nao, nao) with omega > 0"),
        engine_method="jk",
        note="range-separated hybrids: the Rys rule at a scaled T and prefactor (rys_program.ATTENUATION), "
        "printed into an attenuated variant of the numba and CUDA kernels (the 1/r12 ones keep their text); "
        "engine.jk(omega=...) and two_electron_gradient(omega=...): erf for omega > 0, erfc = 1/r12 - erf "
        "for omega < 0; screened with the 1/r12 Schwarz factors, which bound both",
    ),
    IntegralKind(
        "int3c2e_erf", "erf(ω r12)/r12, (ab|P)", 3, 0, _RYS + "; roots of T ω²/(ω² + ρ), weights × ω/sqrt(ω² + ρ)",
        True, 6, 18,
        cpu=Implementation(_DF, "int3c2e", "(nao, nao, naux) with omega > 0, hartree"),
        gpu=Implementation("hartree.gpu.eri3c", "ThreeCenterBuilder.int3c", "(nao, nao, naux batch) with omega > 0"),
        engine_method="int3c2e",
        note="range-separated density fitting (hartree.df.range_separated): the quadrature of eri_erf in the "
        "three-index kernels, omega a run-time argument (numba: the 1/r12 kernel; CUDA: an erf variant of each "
        "class, e3_<class>_erf); engine.int3c2e(omega=...): erf for omega > 0, erfc = 1/r12 - erf for omega < 0",
    ),
    IntegralKind(
        "int2c2e_erf", "erf(ω r12)/r12, (P|Q)", 2, 0, _RYS + " (as (P 1|Q)); the quadrature of int3c2e_erf", True,
        6, 12,
        cpu=Implementation(_DF, "int2c2e", "(naux, naux) with omega > 0, hartree"),
        gpu=Implementation("hartree.gpu.eri3c", "ThreeCenterBuilder.int2c", "(naux, naux) with omega > 0, cupy"),
        engine_method="int2c2e",
        note="the metric of a range-separated fit; engine.int2c2e(omega=...): erf for omega > 0, erfc for "
        "omega < 0; singular in practice for omega of 0.1-0.4 (hartree.df.range_separated)",
    ),
    IntegralKind(
        "int3c2e_erf_deriv1", "∂/∂R of erf(ω r12)/r12, (ab|P)", 3, 1, _RYS + "; the quadrature of int3c2e_erf "
        "in the raised and lowered classes of int3c2e_deriv1", True, 6, 18,
        cpu=Implementation("hartree.integrals.three_center_deriv", "grad3c",
                           "Σ Γ_abP d(ab|P)/dR per atom (natm, 3) with omega > 0, hartree/bohr"),
        gpu=Implementation("hartree.gpu.eri3c_gradient", "ThreeCenterGradient.grad3c",
                           "Σ Γ_abP d(ab|P)/dR per atom (3 natm,) with omega > 0, hartree/bohr, cupy"),
        engine_method="int3c2e_gradient",
        note="gradients of range-separated fits (hartree.df.gradient): omega a run-time argument (numba: the "
        "1/r12 derivative kernel; CUDA: an erf variant of each class, g3_<class>_erf, its own cache key); "
        "engine.int3c2e_gradient(omega=...): erf for omega > 0, erfc = 1/r12 - erf for omega < 0",
    ),
    IntegralKind(
        "int2c2e_erf_deriv1", "∂/∂R of erf(ω r12)/r12, (P|Q)", 2, 1, _RYS + " (the bra of (P 1|Q) differentiated); "
        "the quadrature of int3c2e_erf", True, 6, 12,
        cpu=Implementation("hartree.integrals.three_center_deriv", "grad2c",
                           "Σ Γ_PQ d(P|Q)/dR per atom (natm, 3) with omega > 0, hartree/bohr"),
        gpu=Implementation("hartree.gpu.eri3c_gradient", "ThreeCenterGradient.grad2c",
                           "Σ Γ_PQ d(P|Q)/dR per atom (3 natm,) with omega > 0, hartree/bohr, cupy"),
        engine_method="int2c2e_gradient",
        note="the metric term of a range-separated fit's gradient (CUDA: g3_<class>_metric_erf); "
        "engine.int2c2e_gradient(omega=...): erf for omega > 0, erfc for omega < 0",
    ),
    IntegralKind(
        "ao_values", "φ_a(r_g) and its derivatives at points r_g", 1, 1, "direct evaluation of the shells", False,
        note="DFT grids (values and gradients at arbitrary points); the orbital lattices of "
        "hartree.grid evaluate orbitals on regular grids through their own kernels",
    ),
    IntegralKind(
        "ecp", "Σ_C U_C(r) semi-local effective core potential", 2, 0,
        "McMurchie & Davidson, J. Comput. Phys. 44, 289 (1981)", False,
        note="effective core potentials: radial quadrature of the semi-local terms",
    ),
)  # fmt: skip

_BY_NAME = {k.name: k for k in KINDS}


def kind(name: str) -> IntegralKind:
    """The entry of ``name`` (KeyError for an unknown kind)."""
    return _BY_NAME[name]


def implementation(name: str, device: str):
    """The function (or unbound method) serving kind ``name`` on ``device`` ('cpu' or
    'gpu'), imported; NotImplementedError for a kind (or device) without one."""
    k = kind(name)
    impl = k.cpu if device == "cpu" else k.gpu if device == "gpu" else None
    if impl is None:
        raise NotImplementedError(f"integral kind {name!r} has no {device} implementation")
    obj = importlib.import_module(impl.module)
    for part in impl.attribute.split("."):
        obj = getattr(obj, part)
    return obj
