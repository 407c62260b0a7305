"""Test helpers shared by hartree's test suite: bridges to PySCF (the oracle).

PySCF is imported here, in tests only, never under hartree/.

    from tests.helpers import to_pyscf, water
    mol = water(); basis = load_basis(mol, "cc-pvdz")
    pmol = to_pyscf(mol, basis)          # same geometry, same basis data, same AO order
    np.testing.assert_allclose(my_overlap, pmol.intor("int1e_ovlp"), atol=1e-12)
"""

import numpy as np

from hartree.basis import load_basis, primitive_norm
from hartree.constants import ANGSTROM_IN_BOHR, atomic_number
from hartree.molecule import Molecule

# Equilibrium-ish geometries (Angstrom) for quick tests.
_WATER = "O 0.0 0.0 0.1173; H 0.0 0.7572 -0.4692; H 0.0 -0.7572 -0.4692"


def water(**kw):
    """Water near its equilibrium geometry (C2v, O-H 0.958 Angstrom)."""
    return Molecule.from_string(_WATER, **kw)


def pyscf_basis_dict(molecule, basis):
    """{atom label: PySCF basis list} reproducing `basis` exactly, one label per atom.

    Coefficients are divided by the primitive norm N(l, a) because PySCF multiplies by
    it (and renormalises the contraction, a no-op for our already normalised shells).
    """
    per_atom = {}
    for ish in range(basis.nshell):
        atom = int(basis.shell_atom[ish])
        l = int(basis.shell_l[ish])
        e = basis.shell_exponents(ish)
        c = basis.shell_coefficients(ish) / primitive_norm(l, e)
        per_atom.setdefault(atom, []).append([l, *([float(a), float(b)] for a, b in zip(e, c))])
    return {f"{molecule.symbols[i]}{i + 1}": per_atom.get(i, []) for i in range(molecule.natm)}


def to_pyscf(molecule, basis, **kw):
    """A built ``pyscf.gto.Mole`` with our geometry (bohr), charge, spin, cart flag and
    exactly our basis data: one PySCF shell per hartree shell, same AO order.

    `basis` may be a hartree Basis or anything `load_basis` accepts.
    Extra keyword arguments go to ``pyscf.gto.M`` (e.g. verbose).
    """
    import pyscf.gto

    if not hasattr(basis, "shell_l"):
        basis = load_basis(molecule, basis)
    atoms = [
        (f"{s}{i + 1}", tuple(map(float, xyz))) for i, (s, xyz) in enumerate(zip(molecule.symbols, molecule.coords))
    ]
    kw.setdefault("verbose", 0)
    return pyscf.gto.M(
        atom=atoms,
        basis=pyscf_basis_dict(molecule, basis),
        unit="Bohr",
        charge=molecule.charge,
        spin=molecule.multiplicity - 1,
        cart=not basis.pure,
        **kw,
    )


def pyscf_reference_mol(molecule, basis_name, cartesian=False, **kw):
    """A PySCF Mole with basis-set-exchange data handed to PySCF in PySCF's own
    general-contraction format, raw coefficients, independent of hartree's basis code:
    PySCF normalises, splits SP shells (as its parser does) and sorts shells by l.

    (BSE's NWChem/Gaussian writers reorder general-contraction columns, so parsing
    their text would give a different AO order from PySCF's built-in basis files;
    the JSON order used here is the order of those files.)
    """
    import basis_set_exchange as bse
    import pyscf.gto

    elements = sorted(set(molecule.symbols))
    data = bse.get_basis(basis_name, elements=elements, header=False)["elements"]
    basis = {}
    for el in elements:
        shells = []
        for sh in data[str(atomic_number(el))]["electron_shells"]:
            exps = [float(e) for e in sh["exponents"]]
            rows = [[float(c) for c in row] for row in sh["coefficients"]]
            if len(sh["angular_momentum"]) > 1:  # SP: one shell per l
                for l, row in zip(sh["angular_momentum"], rows):
                    shells.append([l, *([e, c] for e, c in zip(exps, row))])
            else:
                shells.append([sh["angular_momentum"][0], *([e, *col] for e, col in zip(exps, zip(*rows)))])
        basis[el] = shells
    atoms = [(s, tuple(map(float, xyz))) for s, xyz in zip(molecule.symbols, molecule.coords)]
    kw.setdefault("verbose", 0)
    return pyscf.gto.M(
        atom=atoms,
        basis=basis,
        unit="Bohr",
        charge=molecule.charge,
        spin=molecule.multiplicity - 1,
        cart=cartesian,
        **kw,
    )


def random_molecule(rng, natm=4, elements=("H", "C", "N", "O"), box=4.0, min_dist=1.2, charge=None):
    """A random neutral-or-charged closed/open-shell molecule for property tests.

    rng: numpy Generator; positions uniform in a cube of side `box` Angstrom, resampled
    until all pairs are at least `min_dist` Angstrom apart.  Multiplicity is the default
    (1 or 2).
    """
    symbols = [str(s) for s in rng.choice(elements, size=natm)]
    coords = []
    while len(coords) < natm:
        p = rng.uniform(0.0, box, size=3)
        if all(np.linalg.norm(p - q) >= min_dist for q in coords):
            coords.append(p)
    numbers = [atomic_number(s) for s in symbols]
    q = 0 if charge is None else charge
    return Molecule(numbers=numbers, coords=np.array(coords) * ANGSTROM_IN_BOHR, charge=q)


def water_cation_c1():
    """H2O+ (doublet) without symmetry, coordinates in bohr (the density-fitting tests)."""
    return Molecule.from_string("O 0.00 0.05 -0.11; H 0.02 1.43 0.97; H -0.07 -1.49 1.02", unit="bohr", charge=1)


def pyscf_grids(pmol, grid):
    """A PySCF ``Grids`` for ``pmol`` holding hartree's points and weights (copies): PySCF
    builds and prunes its own grid only while ``grids.coords`` is None
    (KohnShamDFT.initialize_grids), so these are used as they are."""
    from pyscf import dft

    grids = dft.gen_grid.Grids(pmol)
    grids.coords, grids.weights = np.array(grid.coords), np.array(grid.weights)
    return grids


def pyscf_ks(mol, basis, xc, level=1, nlc_level=None, method=None):
    """PySCF's Kohn-Sham object (not run, PySCF's default tolerances) of the same libxc
    functional (``parse_functional(xc).xc_code``) with hartree's basis data (to_pyscf) on
    hartree's grid of ``level`` as ``grids`` and, unless ``nlc_level`` is None, the grid of
    ``nlc_level`` as ``nlcgrids`` (the VV10 grid).  method 'rks' or 'uks'; by default RKS
    for a singlet, UKS otherwise."""
    from pyscf import dft

    from hartree.dft import make_grid, parse_functional

    pmol = to_pyscf(mol, basis)
    if method is None:
        method = "rks" if mol.multiplicity == 1 else "uks"
    mf = (dft.RKS if method == "rks" else dft.UKS)(pmol)
    mf.xc = parse_functional(xc).xc_code
    mf.grids = pyscf_grids(pmol, make_grid(mol, level=level))
    if nlc_level is not None:
        mf.nlcgrids = pyscf_grids(pmol, make_grid(mol, level=nlc_level))
    return mf


def pyscf_ks_converged(mol, basis, xc, dm0, level=1, nlc_level=1):
    """PySCF's converged RKS (singlet) or UKS (pyscf_ks, both grids hartree's; conv_tol
    1e-12 Eh, conv_tol_grad 1e-9), started from ``dm0``, hartree's converged density of
    shape (nao, nao), (1, nao, nao) for RKS or (2, nao, nao) for UKS: a few cycles instead
    of a dozen; the converged energy does not depend on the start."""
    mf = pyscf_ks(mol, basis, xc, level=level, nlc_level=nlc_level)
    dm0 = np.asarray(dm0)
    if mol.multiplicity == 1 and dm0.ndim == 3:
        dm0 = dm0[0]
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel(dm0=dm0)
    assert mf.converged
    return mf


def pyscf_density_fitted(mol, basis, aux, method, xc=None, only_dfj=False, level=1):
    """PySCF's density-fitted SCF object (not run, conv_tol 1e-12) with hartree's orbital and
    auxiliary basis data (pyscf_basis_dict: same shells, same order); method 'rhf', 'uhf',
    'rohf', or with ``xc`` 'rks'/'uks' on hartree's grid of ``level`` (pyscf_ks)."""
    from pyscf import scf

    if xc is None:
        mf = {"rhf": scf.RHF, "uhf": scf.UHF, "rohf": scf.ROHF}[method](to_pyscf(mol, basis))
    else:
        mf = pyscf_ks(mol, basis, xc, level=level, method=method)
    mf = mf.density_fit(auxbasis=pyscf_basis_dict(mol, aux), only_dfj=only_dfj)
    mf.conv_tol = 1e-12
    return mf


def emulated_backend():
    """The g++ emulation of the GPU backend (generated CUDA run serially on the CPU); the test
    is skipped where g++ is missing."""
    import pytest

    from hartree.device import emulator

    if not emulator.available():
        pytest.skip("g++ is needed to emulate the GPU kernels")
    return emulator.EmulatedBackend()


def cuda_backend():
    """The CUDA backend of the current GPU (gpu-marked tests only)."""
    from hartree.device.backend import CudaBackend

    return CudaBackend()
