"""SCF gradients on the GPU equal the CPU engine's (the acceptance asks 1e-10 Eh/bohr):
RHF, UHF and ROHF, spherical and cartesian, with d functions (every class up to (gg|gg) is
checked without a GPU in the emulation tests, test_gradient_kernels.py)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.gradients import scf_gradient
from hartree.molecule import Molecule
from hartree.scf import run

pytestmark = pytest.mark.gpu

WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"
TIGHT = {"conv_tol": 1e-12, "conv_tol_grad": 1e-9}


@pytest.mark.parametrize(
    "method,charge,mult,basis_name,cartesian",
    [("rhf", 0, 1, "cc-pvdz", False), ("uhf", 1, 2, "6-31g**", True), ("rohf", 1, 2, "6-31g*", False)],
)
def test_gpu_gradient_equals_cpu(method, charge, mult, basis_name, cartesian):
    from hartree.gpu import GPUEngine
    from hartree.integrals.engine import CPUEngine

    mol = Molecule.from_string(WATER, charge=charge, multiplicity=mult)
    basis = load_basis(mol, basis_name, cartesian=cartesian)
    res = run(mol, basis, method, device="cpu", **TIGHT)
    cpu = scf_gradient(res, CPUEngine(mol, basis))
    gpu = scf_gradient(res, GPUEngine(mol, basis))
    np.testing.assert_allclose(gpu.gradient, cpu.gradient, rtol=0, atol=1e-10)
    assert gpu.device.startswith("cuda")
