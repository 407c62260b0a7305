"""GPU grid kernels against the CPU paths (themselves checked against PySCF in
test_values.py / test_density.py): FP64 to 1e-10 absolute (values are O(1)), FP32 to 1e-5
of the largest value; spherical and cartesian bases up to g; general and JIT kernels;
fused orbitals, AO + GEMM and the separable path; densities; lattices, tilted lattices, point lists; several
slabs over two host threads.  Needs cupy and a CUDA device (``-m gpu``); no PySCF."""

import numpy as np
import pytest

from hartree.grid import evaluate_ao, evaluate_density, evaluate_orbitals, gpu, lattice_around, lattice_from_axes
from hartree.grid.api import on_lattice

from .gpu_cases import CHAIN, WATER, coefficients, scattered_points, system

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def qz():
    out = {}
    for cart in (False, True):
        mol, basis = system(WATER, "cc-pvqz", cart)
        out[cart] = mol, basis, lattice_around(mol.coords, 0.3, 2.0, unit="bohr")
    return out


def _close(values, ref, real):
    if real == "double":
        np.testing.assert_allclose(values, ref, rtol=0, atol=1e-10)
    else:
        np.testing.assert_allclose(values, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("cart", [False, True])
@pytest.mark.parametrize("flavour", ["general", "jit"])
@pytest.mark.parametrize("real", ["double", "float"])
def test_ao_values_match_cpu_up_to_g(qz, cart, flavour, real):
    mol, basis, lattice = qz[cart]
    dtype = np.float64 if real == "double" else np.float32
    ref_ao = evaluate_ao(basis, lattice).T
    ao = gpu.ao_values(basis, lattice, dtype=dtype, kernel=flavour, slab_points=20000)
    assert ao.dtype == dtype
    _close(ao, ref_ao, real)


@pytest.mark.parametrize(
    "cart,flavour,real",
    [(False, "general", "double"), (True, "jit", "float"), (True, "general", "double"), (False, "jit", "float")],
)
def test_orbitals_three_paths_match_cpu(qz, cart, flavour, real):
    mol, basis, lattice = qz[cart]
    dtype = np.float64 if real == "double" else np.float32
    coeff = coefficients(basis.nao, 3, seed=7)
    ref = evaluate_orbitals(basis, coeff, lattice).reshape(3, -1)
    for method in ("direct", "ao", "separable"):
        _close(
            gpu.orbitals(basis, coeff, lattice, dtype=dtype, kernel=flavour, method=method, slab_points=20000),
            ref,
            real,
        )


@pytest.mark.parametrize("real", ["double", "float"])
def test_density_spin_density_points_and_two_threads(real):
    mol, basis = system(CHAIN, "cc-pvtz", False)
    dtype = np.float64 if real == "double" else np.float32
    coeff = coefficients(basis.nao, basis.nao, seed=3)
    occ = np.zeros((2, basis.nao))
    occ[0, :9], occ[1, :7] = 1.0, 1.0
    pair = np.stack([coeff, coeff[:, ::-1]])
    lattice = lattice_around(mol.coords, 0.4, 2.0, unit="bohr")
    for spin in (False, True):
        ref = evaluate_density(basis, pair, occ, lattice, spin=spin)
        rho = evaluate_density(basis, pair, occ, lattice, spin=spin, dtype=dtype, device="gpu")
        _close(rho, ref, real)
    points = scattered_points(seed=5, n=5000)
    ref = evaluate_orbitals(basis, coeff[:, :10], points)
    psi = gpu.orbitals(basis, coeff[:, :10], points, dtype=dtype, devices=[0, 0], slab_points=512)
    _close(psi, ref, real)  # 10 orbitals: 8 fused + 2, over 10 slabs and 2 threads


def test_tilted_lattice_jit_and_api(qz):
    mol, basis, _ = qz[False]
    angle = 0.4
    rot = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1.0]])
    lattice = lattice_from_axes([-3.0, -3.5, -3.0], 0.25 * rot, (25, 27, 26))
    coeff = coefficients(basis.nao, 2, seed=9)
    ref = evaluate_orbitals(basis, coeff, lattice)
    for flavour in ("general", "jit"):
        psi = evaluate_orbitals(basis, coeff, lattice, device="gpu", gpu_kernel=flavour)
        np.testing.assert_allclose(psi, ref, rtol=0, atol=1e-10)
    from types import SimpleNamespace

    occ = np.zeros(basis.nao)
    occ[:5] = 2.0
    result = SimpleNamespace(
        molecule=mol,
        basis=basis,
        mo_energy=np.arange(basis.nao, dtype=float),
        mo_coeff=coefficients(basis.nao, basis.nao, seed=2),
        mo_occ=occ,
    )
    lat, on_gpu = on_lattice(result, mo="homo,lumo", density=True, lattice=lattice, device="gpu")
    _, on_cpu = on_lattice(result, mo="homo,lumo", density=True, lattice=lattice, device="cpu")
    for label in ("homo", "lumo", "density"):
        np.testing.assert_allclose(on_gpu[label], on_cpu[label], rtol=0, atol=1e-10, err_msg=label)


def test_cli_device_gpu_equals_cpu(tmp_path, capsys):
    """hartree orbitals --device gpu writes the same arrays as --device cpu (FP64, 1e-10)."""
    from types import SimpleNamespace

    from hartree.cli.main import main
    from hartree.io.qcschema import result_to_qcschema, write_json

    mol, basis = system(WATER, "6-31g*", False)
    occ = np.zeros(basis.nao)
    occ[:5] = 2.0
    result = SimpleNamespace(
        method="rhf",
        converged=True,
        energy=-76.0,
        mo_energy=np.linspace(-20.0, 3.0, basis.nao),
        mo_coeff=coefficients(basis.nao, basis.nao, seed=4),
        mo_occ=occ,
        energy_components={"one_electron": -120.0, "coulomb": 45.0, "exchange": -9.0, "nuclear_repulsion": 8.0},
        iterations=9,
        history=[],
        dipole=np.zeros(3),
        mulliken_charges=np.zeros(mol.natm),
        s_squared=None,
        wall_time=1.0,
        device="cpu (test)",
        molecule=mol,
        basis=basis,
    )
    write_json(tmp_path / "w.json", result_to_qcschema(result))
    for device in ("cpu", "gpu"):
        code = main(
            [
                "orbitals",
                str(tmp_path / "w.json"),
                "--mo",
                "homo,lumo",
                "--density",
                "--spacing",
                "0.4",
                "--bohr",
                "--device",
                device,
                "--npy",
                str(tmp_path / f"{device}_{{mo}}.npy"),
            ]
        )
        assert code == 0
        assert f"device:  {device}" in capsys.readouterr().out
    for label in ("homo", "lumo", "density"):
        np.testing.assert_allclose(
            np.load(tmp_path / f"gpu_{label}.npy"),
            np.load(tmp_path / f"cpu_{label}.npy"),
            rtol=0,
            atol=1e-10,
            err_msg=label,
        )
