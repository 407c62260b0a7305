"""load_basis against PySCF: AO counts and order, exact basis data, errors."""

import numpy as np
import pytest

from hartree.basis import load_basis, resolve_basis_name
from hartree.errors import BasisError
from hartree.molecule import Molecule
from tests.helpers import pyscf_reference_mol, to_pyscf, water

HCN = "C 0 0 0; N 0 0 1.156; H 0 0 -1.064"
HBR = "Br 0 0 0; H 0 0 1.414"
KR = "Kr 0 0 0"


def _expanded_ao_loc(pmol):
    """PySCF ao_loc with each general-contraction shell split into nctr shells."""
    loc = [0]
    for ib in range(pmol.nbas):
        l = pmol.bas_angular(ib)
        size = 2 * l + 1 if not pmol.cart else (l + 1) * (l + 2) // 2
        loc += [loc[-1] + size * (k + 1) for k in range(pmol.bas_nctr(ib))]
    return np.array(loc)


CASES = [
    (mol, name)
    for mol in ("water", HCN)
    for name in ("sto-3g", "6-31g**", "cc-pvdz", "cc-pvtz", "def2-tzvp", "aug-cc-pvdz", "cc-pvqz")
]
CASES += [(HBR, "cc-pvtz"), (HBR, "6-31g**"), (KR, "def2-svp"), (KR, "cc-pvdz")]


def _mol(spec):
    return water() if spec == "water" else Molecule.from_string(spec)


@pytest.mark.parametrize("cartesian", [False, True])
@pytest.mark.parametrize("spec, name", CASES)
def test_same_functions_as_pyscf_from_bse(spec, name, cartesian):
    """Our shells handed to PySCF (to_pyscf) equal PySCF's own build from the same
    basis-set-exchange data: same AO count, order and functions (overlap to 1e-12)."""
    mol = _mol(spec)
    basis = load_basis(mol, name, cartesian=cartesian)
    ours = to_pyscf(mol, basis)
    ref = pyscf_reference_mol(mol, name, cartesian=cartesian)
    assert basis.nao == ours.nao == ref.nao
    np.testing.assert_array_equal(basis.ao_loc, ours.ao_loc)
    np.testing.assert_array_equal(basis.ao_loc, _expanded_ao_loc(ref))
    s_ours = ours.intor("int1e_ovlp")
    np.testing.assert_allclose(s_ours, ref.intor("int1e_ovlp"), rtol=0, atol=1e-12)
    # contracted functions are normalised (spherical; cartesian d+ are not, as in PySCF)
    if not cartesian:
        np.testing.assert_allclose(np.diag(s_ours), 1.0, atol=1e-12)
    assert basis.ncart == ours.nao_cart()
    # the stored coefficients are PySCF's libcint coefficients shell by shell
    for ish in range(basis.nshell):
        np.testing.assert_allclose(basis.shell_coefficients(ish), ours._libcint_ctr_coeff(ish).ravel(), rtol=1e-13)


@pytest.mark.parametrize("cartesian", [False, True])
@pytest.mark.parametrize(
    "spec, name, atol",
    [
        ("water", "6-31g**", 1e-6),
        (HCN, "6-31g**", 1e-6),
        ("water", "def2-tzvp", 1e-12),
        (HBR, "def2-svp", 1e-12),
        (HCN, "sto-3g", 1e-7),
        (KR, "6-31g**", 1e-12),
    ],
)
def test_equals_pyscf_builtin_basis(spec, name, atol, cartesian):
    """Against pyscf.gto.M(basis=name) with PySCF's own basis files (printed to fewer
    digits for Pople bases, hence the looser atol): same order, same functions."""
    import pyscf.gto

    mol = _mol(spec)
    basis = load_basis(mol, name, cartesian=cartesian)
    ref = pyscf.gto.M(
        atom=[(s, tuple(x)) for s, x in zip(mol.symbols, mol.coords)],
        unit="Bohr",
        basis=name,
        cart=cartesian,
        spin=mol.multiplicity - 1,
        verbose=0,
    )
    assert [l.split() for l in ref.ao_labels()] == [l.split() for l in basis.ao_labels()]
    np.testing.assert_allclose(to_pyscf(mol, basis).intor("int1e_ovlp"), ref.intor("int1e_ovlp"), rtol=0, atol=atol)


@pytest.mark.parametrize("name", ["cc-pvdz", "cc-pvtz"])
def test_dunning_order_and_span_vs_pyscf_builtin(name):
    """PySCF's built-in Dunning files hold the 'optimised' contractions (free primitives
    removed from the contracted functions), so functions differ; the AO labels and the
    space spanned by each (atom, l) block must still agree."""
    import pyscf.gto

    mol = _mol(HCN)
    basis = load_basis(mol, name)
    ours = to_pyscf(mol, basis)
    ref = pyscf.gto.M(atom=[(s, tuple(x)) for s, x in zip(mol.symbols, mol.coords)], unit="Bohr", basis=name, verbose=0)
    assert [l.split()[2:] for l in ref.ao_labels()] == [l.split()[2:] for l in basis.ao_labels()]
    s11 = ours.intor("int1e_ovlp")
    s12 = pyscf.gto.intor_cross("int1e_ovlp", ours, ref)
    s22 = ref.intor("int1e_ovlp")
    np.testing.assert_allclose(s12 @ np.linalg.solve(s22, s12.T), s11, atol=1e-9)


def test_case_insensitive_and_aliases():
    mol = water()
    ref = load_basis(mol, "cc-pVDZ")
    for alias in ("CC-PVDZ", "ccpvdz", "cc_pvdz"):
        b = load_basis(mol, alias)
        np.testing.assert_array_equal(b.coefficients, ref.coefficients)
    assert resolve_basis_name("6-31g**") == "6-31G**"
    assert resolve_basis_name("6-31G(d,p)") == "6-31G**"
    assert load_basis(mol, "6-31G(d,p)").nao == 24
    assert load_basis(mol, "cc-pVDZ(fi/sf/fw)").nao == 24  # a name with slashes, not a path


def test_general_contraction_and_sp_split():
    mol = water()
    b = load_basis(mol, "cc-pvtz")  # O s: (10s) -> [4s] with two free primitives
    o = b.shell_atom == 0
    assert list(b.shell_l[o]) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
    assert list(b.shell_nprim[o]) == [10, 10, 1, 1, 5, 1, 1, 1, 1, 1]
    assert np.all(b.coefficients != 0)
    b = load_basis(mol, "6-31g")  # O: s(6), sp(3), sp(1) -> s s s p p
    assert list(b.shell_l[b.shell_atom == 0]) == [0, 0, 0, 1, 1]
    np.testing.assert_array_equal(b.shell_exponents(1), b.shell_exponents(3))


def test_dict_assignment_and_files(tmp_path):
    import basis_set_exchange as bse

    mol = Molecule.from_string(HBR)
    b = load_basis(mol, {"Br": "cc-pvdz", "h": "sto-3g"})
    assert b.nao == 27 + 1 and "Br: cc-pvdz" in b.name
    np.testing.assert_array_equal(load_basis(mol, {35: "cc-pvdz", "H": "sto-3g"}).coefficients, b.coefficients)
    (tmp_path / "br.nw").write_text(bse.get_basis("cc-pvdz", elements=[35], fmt="nwchem"))
    (tmp_path / "br.gbs").write_text(bse.get_basis("cc-pvdz", elements=[35], fmt="gaussian94"))
    ref = to_pyscf(mol, b).intor("int1e_ovlp")
    for f in ("br.nw", "br.gbs"):
        fb = load_basis(mol, {"default": "sto-3g", "Br": str(tmp_path / f)})
        assert fb.nao == b.nao
        # BSE's writers reorder general-contraction columns: same space, maybe other order
        np.testing.assert_allclose(
            np.sort(np.diag(to_pyscf(mol, fb).intor("int1e_ovlp"))), np.sort(np.diag(ref)), atol=1e-12
        )
    plain = load_basis(Molecule.from_string("Br 0 0 0"), tmp_path / "br.nw")  # a Path works
    assert plain.nao == 27


@pytest.mark.parametrize(
    "basis, match",
    [
        ("def2-svp", "basis def2-svp uses an effective core potential for I; ECPs are not supported"),
        ("lanl2dz", "effective core potential for I"),
        ("6-31g", "basis 6-31g has no functions for element I"),
        ("cc-pvdzz", r"unknown basis set 'cc-pvdzz' \(did you mean cc-pVDZ"),
        ("no-such-basis", "unknown basis set 'no-such-basis'"),
        ("/nonexistent/dir/x.nw", "basis file not found: /nonexistent/dir/x.nw"),
        ({"H": "sto-3g"}, "no basis given for element I"),
        (3, "basis must be a name"),
        ({"Qq": "sto-3g"}, "basis dict key 'Qq' is not an element symbol"),
    ],
)
def test_errors(basis, match):
    mol = Molecule.from_string("I 0 0 0; H 0 0 1.61")
    with pytest.raises(BasisError, match=match):
        load_basis(mol, basis)


def test_file_errors(tmp_path):
    mol = Molecule.from_string("H 0 0 0; H 0 0 0.74")
    k = tmp_path / "k.nw"
    k.write_text('BASIS "ao basis" PRINT\nH    K\n      1.0  1.0\nEND\n')
    with pytest.raises(BasisError, match="angular momentum l=7 for H; hartree supports l <= 6"):
        load_basis(mol, str(k))
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    with pytest.raises(BasisError, match="cannot tell the format"):
        load_basis(mol, str(junk))
    bad = tmp_path / "bad.nw"
    bad.write_text('BASIS "ao basis" PRINT\nH    S\n   abc def\nEND\n')
    with pytest.raises(BasisError, match="cannot parse basis file"):
        load_basis(mol, str(bad))
    other = tmp_path / "c.nw"
    other.write_text('BASIS "ao basis" PRINT\nC    S\n  1.0  1.0\nEND\n')
    with pytest.raises(BasisError, match="has no functions for element H"):
        load_basis(mol, str(other))


def test_h_functions_l5():
    mol = Molecule.from_string("Ne 0 0 0")
    b = load_basis(mol, "cc-pv5z")
    assert b.max_l == 5
    ref = pyscf_reference_mol(mol, "cc-pv5z")
    assert b.nao == ref.nao
    np.testing.assert_allclose(to_pyscf(mol, b).intor("int1e_ovlp"), ref.intor("int1e_ovlp"), rtol=0, atol=1e-12)
