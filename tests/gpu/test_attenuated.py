"""Erf-attenuated (range-separated) J/K and ERI gradients of the GPU engine (issue 18).

The GPU kernels print the erf rule of :mod:`hartree.integrals.rys_program` (θ = ω²/(ω² + ρ),
the Rys rule at θT, roots θu, prefactor sqrt(θ)) into an attenuated variant of each kernel;
the references are the CPU engine's J/K and gradient with ``omega``, which equal PySCF's
``with_range_coulomb`` (tests/integrals/test_eri_erf.py), and PySCF directly for g shells
(where the CPU engine's 1/r12 J/K itself differs from PySCF's by 2.5e-12 relative).
omega > 0 is erf(ω r12)/r12, omega < 0 erfc(|ω| r12)/r12 = 1/r12 - erf (PySCF's convention).

Without a GPU the kernels run through the serial g++ emulation (``EmulatedBackend``):
one-quartet-per-thread kernels (unrolled and loop versions), cooperative J/K kernels (every
fitting class forced cooperative), the fused, cooperative and block gradient kernels, two
emulated devices (:mod:`hartree.gpu.multi`) and a CAM-B3LYP SCF and gradient on the emulated
engine.  The ``gpu``-marked tests repeat the comparisons on the device.  The 1/r12 kernels
are unchanged: their source is the attenuated one without the erf statements (and its text
was checked byte-identical to the generator's before this variant existed, 840 sources up
to (gg|gg)).
"""

import re

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.device import emulator
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule

from .cases import CASES, SG_CASE, build, densities, shell_subset

OMEGA = 0.33  #: CAM-B3LYP's ω, bohr^-1
WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"  # distorted, Angstrom
RTOL = 1e-12  #: J/K, relative to the largest element (emulated: the same serial arithmetic)
#: J/K on a real GPU, as the 1/r12 kernels' (tests/gpu/test_jk_gpu.py): atomics add in another
#: order (measured on an H200: 1.4e-12 for chno/6-31G**, erf)
GPU_RTOL = 1e-11
GTOL = 1e-10  #: gradients, Eh/bohr

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")


def _rel(x, ref):
    return float(np.abs(np.asarray(x) - ref).max() / np.abs(ref).max())


def _water(basis_name, cartesian=False):
    mol = Molecule.from_string(WATER)
    return mol, load_basis(mol, basis_name, cartesian=cartesian)


def _cpu_jk(basis, dms, omega, **kw):
    """The CPU J/K (hartree.integrals.jk.jk, the CPU engine's function) by its generic numba
    driver, whose compile is cached beside the package (the generated 1/r12 module, which
    CPUEngine.jk runs at omega = 0 and for erfc's 1/r12 part, compiles for minutes in each
    fresh test session)."""
    from hartree.integrals.jk import jk

    return jk(basis, dms, omega=omega, generated=False, **kw)


def _densities(nao, nset, seed):
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((nset, nao, nao)) * 0.1
    return d + d.transpose(0, 2, 1)


# ------------------------------------------------------------------ the printed source
def _without_erf(src):
    """An attenuated kernel's source with the erf statements taken out: θ and its uses
    (codegen.attenuate, attenuated_roots, the cooperative roots phase), the ω parameter and
    arguments, and the header's operator."""
    out = []
    for line in src.split("\n"):
        text = line.strip()
        if text.startswith("const double theta = ") or text in ("T = theta * T;", "pref = sqrt(theta) * pref;"):
            continue
        if text.endswith("u[r] = theta * u[r];"):
            assert out.pop() == "#pragma unroll"
            continue
        line = re.sub(r"^(\s*)double (T|pref) = ", r"\1const double \2 = ", line)
        line = line.replace("f < NR ? theta * v : v * pref", "f < NR ? v : v * pref")
        for erf, plain in ((", const double omega)", ")"), (", double omega)", ")"), (", omega);", ");")):
            line = line.replace(erf, plain)
        out.append(line.replace(", erf(omega r12)/r12", ""))
    return "\n".join(out)


@pytest.mark.parametrize("cls", [(0, 0, 0, 0), (1, 1, 1, 0), (2, 1, 1, 1), (3, 3, 2, 1), (4, 4, 4, 0), (4, 4, 4, 4)])
def test_attenuated_source_is_the_coulomb_source_plus_the_erf_rule(cls):
    """For J/K (one-quartet-per-thread: unrolled, sliced and loop versions; cooperative)
    and the gradient (fused, cooperative, block) kernels: the attenuated source without
    the erf statements is the 1/r12 source, which has no ω; the 1/r12 module's cache key
    is the one of before (no operator entry)."""
    from hartree.gpu import gradient_kernels, jk_kernels
    from hartree.gpu.codegen import class_name
    from hartree.gpu.tables import RysTable

    from .test_cooperative_kernels import all_cooperative

    table = RysTable.load()
    pairs = []
    for tuning in (None, all_cooperative()):
        for wj, wk in ((True, True), (False, True)):
            pairs.append(
                (
                    jk_kernels.generate(cls, table, wj, wk, False, tuning),
                    jk_kernels.generate(cls, table, wj, wk, False, tuning, attenuated=True),
                )
            )
    pairs.append((gradient_kernels.generate(cls, table), gradient_kernels.generate(cls, table, attenuated=True)))
    for plain, erf in pairs:
        assert "omega" not in plain and "theta" not in plain
        assert "theta" in erf and erf != plain
        assert _without_erf(erf) == plain
    src, key, names = jk_kernels.module_spec(cls, table, True, True, None)
    assert "operator" not in key and "omega" not in src
    src, key, names = jk_kernels.module_spec(cls, table, True, True, None, attenuated=True)
    assert key["operator"] == "erf" and not key["diag"]  # screening keeps the 1/r12 Schwarz factors
    assert names == {f"jk_{class_name(cls)}": jk_kernels.JK_ERF_PARAMS}
    assert jk_kernels.JK_ERF_PARAMS[-1] == ("double", "omega")


# ------------------------------------------------------------------ emulated kernels
@pytest.fixture(scope="module")
def water_631gs():
    """(molecule, basis, emulated GPUEngine, CPUEngine) of water/6-31G*: classes up to
    (dd|dd), one quartet per thread for J/K; fused and cooperative gradient kernels; the
    engine is shared by the tests below (its emulated kernels compile once)."""
    from hartree.gpu.engine import GPUEngine

    if not emulator.available():
        pytest.skip("g++ not available")
    mol, basis = _water("6-31g*")
    return mol, basis, GPUEngine(mol, basis, backend=emulator.EmulatedBackend()), CPUEngine(mol, basis)


@pytest.mark.parametrize("omega", [OMEGA, -OMEGA], ids=["erf", "erfc"])
def test_emulated_jk_equals_the_cpu_engine(water_631gs, omega):
    """GPUEngine.jk(omega) (two densities, J+K, J only, K only) equals the CPU J/K of omega
    to 1e-12 relative (measured 2.5e-15 erf, 2.9e-15 erfc); at omega = 0 the engine runs
    its 1/r12 kernels again."""
    mol, basis, gpu, cpu = water_631gs
    dms = _densities(basis.nao, 2, 3)
    Jr, Kr = _cpu_jk(basis, dms, omega)
    J, K = gpu.jk(dms, omega=omega)
    assert _rel(J, Jr) <= RTOL and _rel(K, Kr) <= RTOL
    J1, K1 = gpu.jk(dms[0], with_k=False, omega=omega)
    J2, K2 = gpu.jk(dms[0], with_j=False, omega=omega)
    assert K1 is None and J2 is None
    assert _rel(J1, Jr[0]) <= RTOL and _rel(K2, Kr[0]) <= RTOL
    J0, _ = gpu.jk(dms, with_k=False)
    assert _rel(J0, _cpu_jk(basis, dms, 0.0, with_k=False)[0]) <= RTOL and _rel(J0, J) > 1e-3


def test_emulated_gradient_equals_the_cpu_engine(water_631gs):
    """GPUEngine.two_electron_gradient(omega) equals the CPU engine's to 1e-10 Eh/bohr, with
    and without a Coulomb density (the SCF passes none for the erf part), UHF-like (two
    exchange densities); erfc against the CPU's 1/r12 minus erf.  The classes include the
    cooperative gradient kernels' (dp|pp), (dd|pp), (dd|dd)."""
    from hartree.gpu import gradient_kernels

    mol, basis, gpu, cpu = water_631gs
    kinds = {gradient_kernels.variant(c) for c in gpu._jk_builder().quartet_classes()}
    assert kinds == {"fused", "cooperative"}
    da, db = _densities(basis.nao, 2, 7) * 3.0
    dk = np.stack([da, db])
    for dj in (da, np.zeros_like(da)):
        ref = cpu.two_electron_gradient(dj, dk, 0.7, omega=OMEGA)
        np.testing.assert_allclose(gpu.two_electron_gradient(dj, dk, 0.7, omega=OMEGA), ref, rtol=0, atol=GTOL)
    ref = cpu.two_electron_gradient(da, dk, 0.7) - cpu.two_electron_gradient(da, dk, 0.7, omega=OMEGA)
    np.testing.assert_allclose(gpu.two_electron_gradient(da, dk, 0.7, omega=-OMEGA), ref, rtol=0, atol=GTOL)


def test_emulated_cooperative_jk_with_d_functions():
    """Every class of water/6-31G** (cartesian: d shells, p on H) forced onto the
    cooperative J/K kernels (half-warp, one- and two-warp groups, 1-3 primitive quartets a
    pass: test_cooperative_kernels.all_cooperative): erf, and erfc as J/K(0) - J/K(ω),
    equal the CPU engine's to 1e-12 relative."""
    from hartree.gpu.jk_direct import DirectJK

    from .test_cooperative_kernels import all_cooperative

    if not emulator.available():
        pytest.skip("g++ not available")
    mol, basis = _water("6-31g**", cartesian=True)
    tuning = all_cooperative()
    b = DirectJK(basis, emulator.EmulatedBackend(opt="-O1"), tuning=tuning)
    assert all(tuning.cooperative_shape(c) is not None for c in b.quartet_classes())
    assert (2, 2, 2, 2) in b.quartet_classes()
    dms = _densities(basis.nao, 2, 5)
    J, K = b.jk(dms, omega=OMEGA)
    Jr, Kr = _cpu_jk(basis, dms, OMEGA)
    assert _rel(J, Jr) <= RTOL and _rel(K, Kr) <= RTOL
    J0, K0 = b.jk(dms)
    Jr, Kr = _cpu_jk(basis, dms, -OMEGA)
    assert _rel(J0 - J, Jr) <= RTOL and _rel(K0 - K, Kr) <= RTOL
    with pytest.raises(ValueError, match="erfc"):
        b.jk(dms, omega=-OMEGA)  # the builder takes erf only; the engine forms erfc


def _pyscf_jk(mol, basis, dms, omega):
    """PySCF's J/K of erf(omega r12)/r12 with the same basis data."""
    pytest.importorskip("pyscf")
    from pyscf.scf.hf import get_jk

    from .reference import to_pyscf

    pm = to_pyscf(basis, mol.symbols, mol.coords)
    with pm.with_range_coulomb(omega):
        return get_jk(pm, dms, hermi=1)


@pytest.mark.slow
def test_emulated_g_shells_loop_version_and_block_gradient():
    """s and g shells of SG_CASE (contracted): (gg|gs) and (gg|gg) take the loop version of
    the J/K kernels (run-time slices) and (gg|gg) the block gradient kernel.  J/K against
    PySCF to 3e-12 relative (measured 9.4e-13 and 4.1e-13; the CPU engine's own 1/r12 J/K
    are 2.5e-12 from PySCF's here), the gradient against the CPU engine's to 1e-10 Eh/bohr
    (measured 4.6e-13)."""
    from hartree.gpu import codegen, gradient_kernels
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK

    if not emulator.available():
        pytest.skip("g++ not available")
    mol, basis, _ = build(SG_CASE)
    sub = shell_subset(basis, {0, 4})
    dms = densities(sub.nao, 2, 9)
    b = DirectJK(sub, emulator.EmulatedBackend(opt="-O1"))
    assert codegen.is_generic((4, 4, 4, 4)) and gradient_kernels.variant((4, 4, 4, 4)) == "block"
    J, K = b.jk(dms, omega=OMEGA)
    Jr, Kr = _pyscf_jk(mol, sub, dms, OMEGA)
    assert _rel(J, Jr) <= 3e-12 and _rel(K, Kr) <= 3e-12
    grad = DirectGradient(b, sub.shell_atom).gradient(dms[0], dms, 0.5, mol.natm, omega=OMEGA)
    ref = CPUEngine(mol, sub).two_electron_gradient(dms[0], dms, 0.5, omega=OMEGA)
    np.testing.assert_allclose(grad, ref, rtol=0, atol=GTOL)


@needs_gxx
def test_two_emulated_devices():
    """GPUEngine on two emulated devices (hartree.gpu.multi: MultiJK, MultiGradient): J/K and
    the gradient of erf and erfc equal the CPU engine's (1e-12 relative, 1e-10 Eh/bohr)."""
    from hartree.gpu.engine import GPUEngine

    from .test_multi_gpu import TwinDevice

    mol, basis = _water("sto-3g")
    eng = GPUEngine(mol, basis, backends=[TwinDevice(), TwinDevice()])
    dms = _densities(basis.nao, 2, 11)
    for omega in (OMEGA, -OMEGA):
        J, K = eng.jk(dms, omega=omega)
        Jr, Kr = _cpu_jk(basis, dms, omega)
        assert _rel(J, Jr) <= RTOL and _rel(K, Kr) <= RTOL
    ref = CPUEngine(mol, basis).two_electron_gradient(np.zeros_like(dms[0]), dms, 0.5, omega=OMEGA)
    got = eng.two_electron_gradient(np.zeros_like(dms[0]), dms, 0.5, omega=OMEGA)
    np.testing.assert_allclose(got, ref, rtol=0, atol=GTOL)
    assert eng.ndevices == 2


@needs_gxx
def test_emulated_cam_b3lyp_scf_and_gradient():
    """A CAM-B3LYP RKS of water/STO-3G on the emulated GPU engine (its exchange 0.19 K +
    0.46 K_lr(0.33) built by IncrementalJK through GPUEngine.jk(omega)) equals the CPU SCF's
    energy to 1e-9 Eh, and its gradient through the engine's two_electron_gradient(omega)
    the CPU's to 1e-8 Eh/bohr."""
    from hartree.gpu.engine import GPUEngine
    from hartree.gradients import scf_gradient
    from hartree.scf import run

    mol, basis = _water("sto-3g")
    opts = {"xc": "cam-b3lyp", "grid_level": 1, "conv_tol": 1e-11, "conv_tol_grad": 1e-8}
    ref = run(mol, basis, "rks", device="cpu", **opts)
    eng = GPUEngine(mol, basis, backend=emulator.EmulatedBackend())
    res = run(mol, basis, "rks", engine=eng, **opts)
    assert res.converged and ref.converged
    assert abs(res.energy - ref.energy) < 1e-9
    np.testing.assert_allclose(scf_gradient(res, eng).gradient, scf_gradient(ref).gradient, rtol=0, atol=1e-8)


# ------------------------------------------------------------------ the device
@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("omega", [OMEGA, -OMEGA], ids=["erf", "erfc"])
def test_gpu_jk_equals_the_cpu_engine(case, omega):
    """The device's J/K of erf and erfc equal the CPU engine's to 1e-11 relative (s..f
    shells; cc-pVTZ's f classes run cooperative kernels of the shipped tuning)."""
    from hartree.gpu import GPUEngine

    mol, basis, dms = build(case)
    Jr, Kr = _cpu_jk(basis, dms, omega)
    J, K = GPUEngine(mol, basis).jk(dms, omega=omega)
    print(f"{case[0]} omega {omega}: J {_rel(J, Jr):.2e} K {_rel(K, Kr):.2e}")
    assert _rel(J, Jr) <= GPU_RTOL and _rel(K, Kr) <= GPU_RTOL


@pytest.mark.gpu
@pytest.mark.parametrize(("basis_name", "cartesian"), [("6-31g**", True), ("cc-pvtz", False)])
def test_gpu_gradient_equals_the_cpu_engine(basis_name, cartesian):
    """The device's erf and erfc two-electron gradients equal the CPU engine's to 1e-10
    Eh/bohr (water; 6-31G** reaches the cooperative gradient kernels, cc-pVTZ f shells)."""
    from hartree.gpu import GPUEngine

    mol, basis = _water(basis_name, cartesian)
    da, db = _densities(basis.nao, 2, 7) * 3.0
    dk = np.stack([da, db])
    cpu, gpu = CPUEngine(mol, basis), GPUEngine(mol, basis)
    ref = cpu.two_electron_gradient(da, dk, 0.7, omega=OMEGA)
    np.testing.assert_allclose(gpu.two_electron_gradient(da, dk, 0.7, omega=OMEGA), ref, rtol=0, atol=GTOL)
    ref = cpu.two_electron_gradient(da, dk, 0.7) - ref
    np.testing.assert_allclose(gpu.two_electron_gradient(da, dk, 0.7, omega=-OMEGA), ref, rtol=0, atol=GTOL)


@pytest.mark.gpu
@pytest.mark.parametrize(("xc", "charge", "mult"), [("cam-b3lyp", 0, 1), ("wb97x", 1, 2)])
def test_gpu_rsh_scf_and_gradient_equal_the_cpu(xc, charge, mult):
    """RKS CAM-B3LYP and UKS ωB97X of water (H2O+) in 6-31G* on the GPU equal the CPU SCF
    energy to 1e-9 Eh and its gradient (the GPU engine's integral terms) to 1e-8 Eh/bohr."""
    from hartree.gpu import GPUEngine
    from hartree.gradients import scf_gradient
    from hartree.scf import run

    mol = Molecule.from_string(WATER, charge=charge, multiplicity=mult)
    basis = load_basis(mol, "6-31g*")
    method = "rks" if mult == 1 else "uks"
    opts = {"xc": xc, "grid_level": 2, "conv_tol": 1e-11, "conv_tol_grad": 1e-8}
    ref = run(mol, basis, method, device="cpu", **opts)
    res = run(mol, basis, method, device="gpu", **opts)
    assert res.converged and "cuda" in res.device
    assert abs(res.energy - ref.energy) < 1e-9
    got = scf_gradient(res, GPUEngine(mol, basis)).gradient
    np.testing.assert_allclose(got, scf_gradient(ref).gradient, rtol=0, atol=1e-8)
