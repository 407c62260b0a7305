"""Shared pieces of the vibration tests: small molecules, PySCF's analytic Hessians (the
oracle) and PySCF's physical constants as a hartree PhysicalConstants, and one finished
water RHF/6-31g frequency job reused by several tests."""

import contextlib
import io

import numpy as np
import pytest

from hartree.cli.main import main
from hartree.molecule import Molecule
from hartree.vibrations import PhysicalConstants, frequencies
from tests.helpers import to_pyscf

WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"
WATER_XYZ = """3
water, Angstrom
O   0.000000   0.000000   0.117300
H   0.000000   0.757200  -0.469200
H   0.000000  -0.757200  -0.469200
"""
HCN = "H 0 0 -1.06; C 0 0 0; N 0 0 1.15"
CO2 = "O 0 0 -1.16; C 0 0 0; O 0 0 1.16"


def run_main(*argv):
    """``main(argv)`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def pyscf_scf(molecule, basis, method="rhf"):
    """A converged PySCF SCF object on exactly our basis."""
    import pyscf.scf

    mf = {"rhf": pyscf.scf.RHF, "uhf": pyscf.scf.UHF}[method](to_pyscf(molecule, basis))
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel()
    assert mf.converged
    return mf


def plain_mole(molecule):
    """A PySCF Mole with atoms named by element only (tests.helpers.to_pyscf numbers them,
    H2, H3, which PySCF's symmetry detection, and so its symmetry number, treats as
    different atoms)."""
    import pyscf.gto

    return pyscf.gto.M(
        atom=[(s, tuple(map(float, xyz))) for s, xyz in zip(molecule.symbols, molecule.coords)],
        basis="sto-3g",
        unit="Bohr",
        charge=molecule.charge,
        spin=molecule.multiplicity - 1,
        verbose=0,
    )


def pyscf_hessian(mf):
    """PySCF's analytic Hessian of a converged SCF, as our (3N, 3N) Eh/bohr^2."""
    h = mf.Hessian().kernel()
    n = h.shape[0]
    return h.transpose(0, 2, 1, 3).reshape(3 * n, 3 * n)


def pyscf_constants():
    """PySCF's CODATA 2014 constants (pyscf.data.nist) as a PhysicalConstants."""
    from pyscf.data import nist

    return PhysicalConstants(
        hartree_joule=nist.HARTREE2J,
        bohr_meter=nist.BOHR_SI,
        atomic_mass_kg=nist.ATOMIC_MASS,
        planck=nist.PLANCK,
        boltzmann=nist.BOLTZMANN,
        avogadro=nist.AVOGADRO,
        speed_of_light=nist.LIGHT_SPEED_SI,
        elementary_charge=nist.E_CHARGE,
        vacuum_permittivity=1.0 / (4e-7 * np.pi * nist.LIGHT_SPEED_SI**2),
        source="pyscf.data.nist (CODATA 2014)",
    )


@pytest.fixture(scope="session")
def water():
    return Molecule.from_string(WATER)


@pytest.fixture(scope="session")
def water_631g(water):
    """hartree's RHF/6-31g frequency job on water (18 displaced gradients, serial)."""
    return frequencies(water, "6-31g", "rhf", device="cpu")


@pytest.fixture(scope="session")
def water_631g_pyscf(water):
    """(PySCF RHF object, analytic Hessian (9, 9)) for water RHF/6-31g."""
    mf = pyscf_scf(water, "6-31g")
    return mf, pyscf_hessian(mf)
