"""Analytic SCF gradients against PySCF (the oracle) and finite differences of our own
energies: the integral terms with random densities and s..g functions, the whole gradient
of RHF, UHF and ROHF (spherical and cartesian, neutral, charged and open-shell)."""

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.errors import InputError
from hartree.gpu.engine import GPUEngine
from hartree.gradients import gradient, scf_gradient
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule
from hartree.scf import run
from tests.helpers import to_pyscf

#: a distorted water (no symmetry: every component of the gradient is non-zero)
WATER = "O 0.0 0.1 0.1173; H 0.1 0.7572 -0.4692; H 0.0 -0.7572 -0.4292"
TIGHT = {"conv_tol": 1e-12, "conv_tol_grad": 1e-9}

# s, p, d, f and g functions on O; s, p, d on H (a test basis, NWChem format)
SPDFG = """BASIS "ao basis" PRINT
O    S
    130.70932     0.15432897
     23.808861    0.53532814
      6.4436083   0.44463454
O    S
      0.38038896  1.0
O    P
      5.0331513   0.15591627
      1.1695961   0.60768372
      0.38038896  0.39195739
O    D
      1.2         1.0
O    F
      0.9         1.0
O    G
      0.7         1.0
H    S
      3.42525091  0.15432897
      0.62391373  0.53532814
      0.16885540  0.44463454
H    P
      0.8         1.0
H    D
      1.1         1.0
END
"""


def _pyscf_scf(pmol, method):
    import pyscf.scf

    mf = {"rhf": pyscf.scf.RHF, "uhf": pyscf.scf.UHF, "rohf": pyscf.scf.ROHF}[method](pmol)
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel()
    assert mf.converged
    return mf


@pytest.fixture(scope="module")
def spdfg(tmp_path_factory):
    path = tmp_path_factory.mktemp("basis") / "spdfg.nw"
    path.write_text(SPDFG)
    mol = Molecule.from_string(WATER)
    return mol, path


@pytest.mark.parametrize("cartesian", [False, True], ids=["spherical", "cartesian"])
def test_integral_terms_equal_pyscf_with_random_densities(spdfg, cartesian):
    """Both integral terms of the gradient, contracted with random symmetric densities, equal
    PySCF's derivative integrals (int2e_ip1, the hcore generator, int1e_ipovlp) contracted the
    same way, with every class up to (gg|gg) (derivatives reach h)."""
    mol, path = spdfg
    basis = load_basis(mol, str(path), cartesian=cartesian)
    assert int(basis.max_l) == 4
    pmol = to_pyscf(mol, basis)
    rng = np.random.default_rng(7)
    n = basis.nao
    da, db, w = (x + x.T for x in rng.standard_normal((3, n, n)) * 0.3)
    engine = CPUEngine(mol, basis)
    sl = pmol.aoslice_by_atom()[:, 2:]

    # two-electron term: 1/2 sum Gamma d(ab|cd)/dR = -2 sum_(a on atom) Gamma (nabla a b|cd)
    ip1 = pmol.intor("int2e_ip1")
    dj = da + db
    for dk, factor in ((dj[None], 0.5), (np.stack([da, db]), 1.0)):
        gam = np.einsum("ab,cd->abcd", dj, dj)
        for d in dk:
            gam -= 0.5 * factor * (np.einsum("ac,bd->abcd", d, d) + np.einsum("ad,bc->abcd", d, d))
        ref = np.array([-2.0 * np.einsum("xabcd,abcd->x", ip1[:, p0:p1], gam[p0:p1]) for p0, p1 in sl])
        got = engine.two_electron_gradient(dj, dk, factor)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    del ip1

    # one-electron term: sum D dh/dR (PySCF's hcore generator, operator term included)
    # - sum W dS/dR
    import pyscf.grad.rhf

    grad = pyscf.grad.rhf.Gradients(pmol.RHF())
    hcore_deriv = grad.hcore_generator(pmol)
    s1 = pmol.intor("int1e_ipovlp")
    ref = np.array(
        [
            np.einsum("xij,ij->x", hcore_deriv(ia), dj) + 2.0 * np.einsum("xij,ij->x", s1[:, p0:p1], w[p0:p1])
            for ia, (p0, p1) in enumerate(sl)
        ]
    )
    got = engine.one_electron_gradient(dj, w)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


HYDROXYL = "O 0.0 0.0 0.0; H 0.1 0.2 0.97"
CASES = [
    # (label, geometry, charge, multiplicity, method, basis, cartesian)
    ("water-rhf-ccpvdz", WATER, 0, 1, "rhf", "cc-pvdz", False),
    ("water-rhf-631gs-cart", WATER, 0, 1, "rhf", "6-31g*", True),
    ("water+-uhf-ccpvdz", WATER, 1, 2, "uhf", "cc-pvdz", False),
    ("water+-rohf-631gs-cart", WATER, 1, 2, "rohf", "6-31g*", True),
    ("hydroxyl-uhf-631gss", HYDROXYL, 0, 2, "uhf", "6-31g**", False),
    ("hydroxide-rhf-631+gs", HYDROXYL, -1, 1, "rhf", "6-31+g*", False),
    ("water++-rohf-triplet-ccpvdz", WATER, 2, 3, "rohf", "cc-pvdz", False),
]


@pytest.mark.parametrize("label,geometry,charge,mult,method,basis_name,cartesian", CASES, ids=[c[0] for c in CASES])
def test_gradient_equals_pyscf(label, geometry, charge, mult, method, basis_name, cartesian):
    """The whole gradient equals PySCF's nuc_grad_method() on the same basis data to 1e-7
    Eh/bohr, the energies agree, and the forces sum to zero (translational invariance)."""
    mol = Molecule.from_string(geometry, charge=charge, multiplicity=mult)
    basis = load_basis(mol, basis_name, cartesian=cartesian)
    res = run(mol, basis, method, device="cpu", **TIGHT)
    g = scf_gradient(res)
    mf = _pyscf_scf(to_pyscf(mol, basis), method)
    ref = mf.nuc_grad_method().kernel()
    assert abs(res.energy - mf.e_tot) < 1e-9
    np.testing.assert_allclose(g.gradient, ref, rtol=0, atol=1e-7)
    assert np.abs(g.gradient.sum(axis=0)).max() < 1e-10
    np.testing.assert_allclose(sum(g.components.values()), g.gradient, rtol=0, atol=1e-14)
    assert g.method == method and g.energy == res.energy and g.gradient.shape == (mol.natm, 3)


@pytest.mark.parametrize("method,charge,mult", [("rhf", 0, 1), ("uhf", 1, 2), ("rohf", 1, 2)])
def test_gradient_equals_finite_differences_of_our_energies(method, charge, mult):
    """Five-point central differences (h = 1e-3 bohr) of our own SCF energies, every
    coordinate, to 1e-6 Eh/bohr."""
    mol = Molecule.from_string(WATER, charge=charge, multiplicity=mult)
    g = gradient(mol, "6-31g", method, device="cpu", **TIGHT).gradient
    h = 1e-3
    fd = np.zeros_like(g)
    for a in range(mol.natm):
        for x in range(3):
            e = {}
            for k in (-2, -1, 1, 2):
                coords = mol.coords.copy()
                coords[a, x] += k * h
                e[k] = run(mol.replace(coords=coords), "6-31g", method, device="cpu", **TIGHT).energy
            fd[a, x] = (e[-2] - 8 * e[-1] + 8 * e[1] - e[2]) / (12 * h)
    np.testing.assert_allclose(g, fd, rtol=0, atol=1e-6)


def test_the_gpu_engine_gradient_terms_in_emulation():
    """GPUEngine's gradient members on the serial CPU emulation of its kernels (the one- and
    two-electron gradient kernels) equal the CPU engine's."""
    from hartree.device import emulator

    if not emulator.available():
        pytest.skip("g++ not available")
    mol = Molecule.from_string(WATER)
    basis = load_basis(mol, "6-31g*")
    rng = np.random.default_rng(3)
    da, db = (x + x.T for x in rng.standard_normal((2, basis.nao, basis.nao)) * 0.3)
    cpu, gpu = CPUEngine(mol, basis), GPUEngine(mol, basis, backend=emulator.EmulatedBackend())
    ref = cpu.one_electron_gradient(da, db)
    # both kernels are printed from the programs of hartree.integrals.os_program: equal to
    # rounding (the GPU differentiates both centres per pair, the CPU the bra of every pair)
    np.testing.assert_allclose(gpu.one_electron_gradient(da, db), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    for dk, factor in ((da[None], 0.5), (np.stack([da, db]), 1.0)):
        ref = cpu.two_electron_gradient(da, dk, factor)
        np.testing.assert_allclose(
            gpu.two_electron_gradient(da, dk, factor), ref, rtol=0, atol=1e-12 * np.abs(ref).max()
        )
    assert gpu.notes == []


def test_an_unconverged_scf_has_no_gradient():
    mol = Molecule.from_string(WATER)
    res = run(mol, "sto-3g", "rhf", device="cpu", max_cycle=1, allow_unconverged=True)
    assert not res.converged
    with pytest.raises(InputError, match="did not converge"):
        scf_gradient(res)
