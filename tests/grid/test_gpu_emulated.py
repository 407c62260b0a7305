"""The GPU grid path without a GPU: generated CUDA compiled by NVRTC (CI catches a broken
generator), and the same sources run serially through g++ (hartree.device.emulator) against
the CPU values, which test_values.py checks against PySCF.  Tolerances as for the GPU:
FP64 1e-10 absolute (values are O(1)), FP32 1e-5 of the largest value."""

import numpy as np
import pytest

from hartree.device import emulator
from hartree.device.work_queue import run_dynamic
from hartree.errors import InputError
from hartree.grid import evaluate_ao, evaluate_density, evaluate_orbitals, gpu, lattice_around
from hartree.grid import gpu_codegen as cg
from hartree.grid.select import spin_occupations

from .gpu_cases import CHAIN, WATER, coefficients, scattered_points, system

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="needs g++")
BE = emulator.EmulatedBackend(opt="-O1")


@pytest.fixture(scope="module")
def qz():
    """Water cc-pVQZ (s..g): {cartesian: (mol, basis, lattice)}."""
    out = {}
    for cart in (False, True):
        mol, basis = system(WATER, "cc-pvqz", cart)
        out[cart] = mol, basis, lattice_around(mol.coords, 0.55, 1.5, unit="bohr")
    return out


def _nvrtc():
    from hartree.device import nvrtc

    if not nvrtc.available():
        pytest.skip("libnvrtc not found")
    return nvrtc


@pytest.mark.parametrize("case", ["qz-general-double", "qz-general-float", "small-jit"])
def test_generated_sources_compile_with_nvrtc_without_spills(qz, case):
    """Every kernel kind through NVRTC for sm_90: no errors, and no local memory (spills)."""
    nvrtc = _nvrtc()
    if case == "small-jit":
        mol, basis = system(CHAIN, "6-31g*", True)
        gb = gpu.grid_basis(basis)
        jobs = [("double", "mo", cg.MAX_NORB, 2), ("float", "ao", 1, 4)]
    else:
        gb = gpu.grid_basis(qz[case.endswith("float")][1])
        assert gb.ls == (0, 1, 2, 3, 4)
        jobs = (
            [("double", "mo", cg.MAX_NORB, 2), ("double", "ao", 1, 1)]
            if case.endswith("double")
            else [("float", "mo", 1, 4)]
        )
    for real, kind, norb, ppt in jobs:
        kinds = gb.kinds if case == "small-jit" else None
        src = cg.generate(real, gb.pure, kind, norb=norb, ls=gb.ls, kinds=kinds, ppt=ppt)
        resources = nvrtc.cubin_resources(nvrtc.compile_source(src, "sm_90").image)
        name = "orb_mo" if kind == "mo" else "orb_ao"
        assert set(resources) >= {"orb_screen", name}
        assert resources[name]["frame_bytes"] == 0, resources  # no local memory: no spills
    if case == "small-jit":
        from hartree.grid.gpu_separable import source

        for real in ("double", "float"):
            resources = nvrtc.cubin_resources(nvrtc.compile_source(source(real), "sm_90").image)
            assert resources["sep_b"]["frame_bytes"] == 0


@needs_gxx
@pytest.mark.parametrize(
    "real,flavour,cart,ppt",
    [
        ("double", "general", False, 1),
        ("double", "jit", True, 2),
        ("float", "jit", False, 4),
        ("float", "general", True, 2),
    ],
)
def test_emulated_ao_values_match_cpu_up_to_g(qz, real, flavour, cart, ppt):
    mol, basis, lattice = qz[cart]
    dtype = np.float64 if real == "double" else np.float32
    ref = evaluate_ao(basis, lattice).T
    ao = gpu.ao_values(basis, lattice, dtype=dtype, kernel=flavour, backend=BE, slab_points=700, ppt=ppt)
    assert ao.dtype == dtype and ao.shape == ref.shape
    if real == "double":
        np.testing.assert_allclose(ao, ref, rtol=0, atol=1e-10)
    else:
        np.testing.assert_allclose(ao, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@needs_gxx
@pytest.mark.parametrize("cart", [False, True])
def test_emulated_orbitals_direct_gemm_and_separable_paths(qz, cart):
    mol, basis, lattice = qz[cart]
    coeff = coefficients(basis.nao, 3, seed=4)
    ref = evaluate_orbitals(basis, coeff, lattice).reshape(3, -1)
    flavour = "jit" if cart else "general"
    for method, ppt in (("direct", 1), ("direct", 4), ("ao", 2), ("separable", None)):
        psi = gpu.orbitals(
            basis,
            coeff,
            lattice,
            kernel=flavour,
            method=method,
            backend=BE,
            ppt=ppt,
            slab_points=1500,
            devices=[0, 0] if method == "separable" else None,
        )
        np.testing.assert_allclose(psi, ref, rtol=0, atol=1e-10, err_msg=f"{method} ppt={ppt}")


@needs_gxx
def test_emulated_points_density_and_two_host_threads():
    mol, basis = system(CHAIN, "cc-pvdz", False)
    gb = gpu.grid_basis(basis)
    assert len(gb.kinds) == 2 and gb.natm == 6  # O and H kinds, shared by the atoms
    points = scattered_points(seed=2)
    coeff = coefficients(basis.nao, basis.nao, seed=1)
    occ = np.zeros((2, basis.nao))
    occ[0, :8], occ[1, :6] = 1.0, 1.0
    ref = evaluate_density(basis, np.stack([coeff, coeff[:, ::-1]]), occ, points, spin=True)
    sets = [(coeff[:, :8].T, np.ones(8)), (coeff[:, ::-1][:, :6].T, -np.ones(6))]
    rho = gpu.density(basis, sets, points, kernel="jit", backend=BE, devices=[0, 0], slab_points=300, ppt=4)
    np.testing.assert_allclose(rho, ref, rtol=0, atol=1e-10)
    psi = gpu.orbitals(
        basis, coeff[:, :2], points, kernel="general", backend=BE, devices=[0, 0], slab_points=256, ppt=1
    )
    np.testing.assert_allclose(psi, evaluate_orbitals(basis, coeff[:, :2], points), rtol=0, atol=1e-10)
    assert spin_occupations(occ).shape == (2, basis.nao)


def test_dynamic_scheduler_runs_every_item_once_and_reports_errors():
    seen = []
    done = run_dynamic(
        list(range(23)),
        [BE, BE, BE],
        lambda backend: backend,
        lambda state, item: seen.append(item),
    )
    assert sorted(seen) == list(range(23)) and sorted(done) == list(range(23))
    assert set(done.values()) <= {0, 1, 2}

    def fail(state, item):
        if item == 5:
            raise ValueError("slab 5")

    with pytest.raises(ValueError, match="slab 5"):
        run_dynamic(list(range(10)), [BE, BE], lambda backend: backend, fail)


def test_primitive_radii_bound_each_primitive(qz):
    """Between its radius and its shell's (beyond which the shell is skipped) a primitive
    adds < threshold/nprim to any function of the shell."""
    basis = qz[False][1]
    gb = gpu.grid_basis(basis, threshold=1e-9)
    r = np.linspace(0.0, 60.0, 20001)
    for s in range(gb.sh_l.size):
        l, p0, n = int(gb.sh_l[s]), int(gb.sh_p0[s]), int(gb.sh_nprim[s])
        for q in range(p0, p0 + n):
            beyond = r[(r * r > gb.p_rcut2[q] * 1.0001) & (r * r <= gb.sh_rcut2[s])]
            bound = 2.0**l * (2 * l + 1) * abs(gb.p_coef[q]) * beyond**l * np.exp(-gb.p_exp[q] * beyond**2)
            assert bound.size == 0 or bound.max() < 1e-9 / n
        assert gb.p_rcut2[p0 : p0 + n].max() <= gb.sh_rcut2[s] * 1.0001


def test_kernel_choice_by_size(qz):
    from hartree.grid.separable import make_plan

    basis = qz[False][1]
    assert make_plan(basis).nterm <= gpu.separable_terms_bound(basis)
    gb = gpu.grid_basis(basis)
    assert gpu.choose_kernel(gb, 1000) == "general"
    assert gpu.choose_kernel(gb, 10**8) == "jit"
    assert gpu.choose_kernel(gb, 10**8, "general") == "general"
    with pytest.raises(InputError):
        gpu.choose_kernel(gb, 10, "fast")


@needs_gxx
def test_screening_lists_grow_linearly_with_chain_length():
    """Atoms listed per tile stay bounded as a chain grows: total work ~ N, not N^2."""
    from hartree.basis import load_basis
    from hartree.molecule import Molecule

    totals = {}
    for n in (32, 96):
        mol = Molecule.from_string("\n".join(f"H 0 0 {2.0 * i}" for i in range(n)), unit="bohr")
        basis = load_basis(mol, "sto-3g")
        lattice = lattice_around(mol.coords, 0.5, 3.0, unit="bohr")
        runner, slab, _ = gpu.make_runner(basis, np.zeros(basis.nao), lattice, kernel="general", backend=BE)
        _, count, _ = runner.screen(slab)
        totals[n] = int(count.sum()), int(count.max()), lattice.npoints
    radius = np.sqrt(gpu.grid_basis(basis).atom_rcut2.max())  # ~14 bohr for H/STO-3G
    (t32, m32, p32), (t96, m96, p96) = totals[32], totals[96]
    assert m96 == m32 <= 2 * radius / 2.0 + 8  # atoms within reach of a tile
    assert t96 / t32 < 1.15 * (p96 / p32)  # entries grow like the lattice
