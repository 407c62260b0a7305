"""Damaged and truncated Molden files: every fault ends in one InputError, never in a
silently different wavefunction (hartree.io.molden_read's validation rules)."""

import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyscf import gto, scf
from pyscf.tools import molden as pyscf_molden

from hartree.cli.main import main
from hartree.errors import InputError
from hartree.io.molden import molden_text
from hartree.io.molden_read import parse_molden, read_molden

WATER = [("O", (0.00, 0.05, -0.11)), ("H", (0.02, 1.43, 0.97)), ("H", (-0.07, -1.49, 1.02))]
SAFETY_NET = "is not a valid Molden file ("  # parse_molden's last resort: must never show

# H2 in a minimal basis, written by hand: the base of the rule-by-rule tests.
H2 = """[Molden Format]
[Title]
H2 test
[Atoms] AU
H 1 1 0.0 0.0 0.0
H 2 1 0.0 0.0 1.4
[GTO]
1 0
 s 3 1.00
  3.42525091 0.15432897
  0.62391373 0.53532814
  0.16885540 0.44463454

2 0
 s 3 1.00
  3.42525091 0.15432897
  0.62391373 0.53532814
  0.16885540 0.44463454

[MO]
 Sym= A
 Ene= -0.578
 Spin= Alpha
 Occup= 2.0
 1 0.548
 2 0.548
 Sym= A
 Ene= 0.670
 Spin= Alpha
 Occup= 0.0
 1 1.212
 2 -1.212
"""
ORB2 = " Sym= A\n Ene= 0.670\n Spin= Alpha\n Occup= 0.0\n 1 1.212\n 2 -1.212\n"
GTO2 = "2 0\n s 3 1.00\n  3.42525091 0.15432897\n  0.62391373 0.53532814\n  0.16885540 0.44463454\n"
# the same molecule, unrestricted: alpha then beta orbitals
H2_UHF = H2 + H2.split("[MO]\n")[1].replace("Alpha", "Beta")
H2_UHF = H2_UHF.replace("Occup= 2.0", "Occup= 1.0")


def _pyscf_text(tmp_path_factory, name, **mol_options):
    mol = gto.M(atom=WATER, unit="Bohr", verbose=0, **mol_options)
    mf = (scf.UHF(mol) if mol.spin else scf.RHF(mol)).run()
    path = tmp_path_factory.mktemp("molden") / f"{name}.molden"
    pyscf_molden.from_scf(mf, str(path))
    return path.read_text()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{name: valid Molden text}: PySCF RHF and UHF (water, STO-3G), PySCF cartesian
    6-31G* RHF, and hartree's writer on the data read from the PySCF RHF file."""
    texts = {
        "pyscf-rhf": _pyscf_text(tmp_path_factory, "rhf", basis="sto-3g"),
        "pyscf-uhf": _pyscf_text(tmp_path_factory, "uhf", basis="sto-3g", charge=1, spin=1),
        "pyscf-cart": _pyscf_text(tmp_path_factory, "cart", basis="6-31g*", cart=True),
    }
    data = parse_molden(texts["pyscf-rhf"])
    texts["hartree-rhf"] = molden_text(
        SimpleNamespace(
            method="rhf",
            energy=-74.96,
            molecule=data.molecule,
            basis=data.basis,
            mo_energy=data.mo_energy,
            mo_coeff=data.mo_coeff,
            mo_occ=data.mo_occ,
        )
    )
    return texts


def _same_data(data, reference, norb):
    """data holds exactly the geometry, basis and first ``norb`` orbitals of reference
    (of its alpha orbitals when an unrestricted file lost all its beta orbitals)."""
    if data.mo_coeff.ndim < reference.mo_coeff.ndim:
        reference = SimpleNamespace(
            molecule=reference.molecule,
            basis=reference.basis,
            mo_energy=reference.mo_energy[0],
            mo_occ=reference.mo_occ[0],
            mo_coeff=reference.mo_coeff[0],
        )
    np.testing.assert_array_equal(data.molecule.numbers, reference.molecule.numbers)
    np.testing.assert_array_equal(data.molecule.coords, reference.molecule.coords)
    np.testing.assert_array_equal(data.basis.exponents, reference.basis.exponents)
    np.testing.assert_array_equal(data.basis.coefficients, reference.basis.coefficients)
    np.testing.assert_array_equal(data.mo_energy, reference.mo_energy[..., :norb])
    np.testing.assert_array_equal(data.mo_occ, reference.mo_occ[..., :norb])
    np.testing.assert_array_equal(data.mo_coeff, reference.mo_coeff[..., :norb])


def _check_cut(text, cut, reference):
    """text[:cut] raises InputError, or the cut lies at the end of an orbital (or of the
    file) and the data are exactly the reference's first orbitals."""
    try:
        data = parse_molden(text[:cut])
    except InputError as exc:
        assert SAFETY_NET not in str(exc) and "\n" not in str(exc), str(exc)
        return "refused"
    rest = text[cut:].lstrip(" ")
    assert text[:cut].rstrip(" ").endswith("\n"), f"cut at {cut} inside a line was read"
    assert rest.strip() == "" or rest.lstrip().startswith("Sym="), f"cut at {cut} was read"
    norb = data.mo_energy.shape[-1]
    _same_data(data, reference, norb)
    return "whole" if norb == reference.mo_energy.shape[-1] else "orbitals"


@pytest.mark.parametrize("name", ["pyscf-rhf", "pyscf-uhf", "hartree-rhf"])
def test_truncation_at_every_byte_is_refused_or_exact(files, name):
    text = files[name]
    reference = parse_molden(text)
    outcomes = {_check_cut(text, cut, reference) for cut in range(len(text))}
    assert "refused" in outcomes
    if name == "pyscf-uhf":  # a cut among the beta orbitals leaves unequal counts
        for cut in range(text.index("Spin= Beta"), len(text)):
            assert _check_cut(text, cut, reference) == "refused"
    assert _check_cut(text, len(text), reference) == "whole"


def test_truncation_of_a_larger_file_at_twentieths_and_inside_numbers(files):
    text = files["pyscf-cart"]
    reference = parse_molden(text)
    cuts = [len(text) * k // 20 for k in range(1, 20)]
    for match in list(re.finditer(r"-?\d+\.\d+(?:e[-+]\d+)?", text))[-40:]:
        cuts += range(match.start() + 1, match.end())  # inside the last numbers of [MO]
    for cut in cuts:
        assert _check_cut(text, cut, reference) == "refused", cut


def test_bug_report_cut_coefficient_and_three_quarters(files, tmp_path):
    text = files["hartree-rhf"]
    path = tmp_path / "t.molden"
    path.write_text(text[: len(text) * 3 // 4])
    with pytest.raises(InputError, match="t.molden"):
        read_molden(path)
    # a coefficient cut before its exponent: -4.32786967161E-16 must not become -4.33
    cut = H2.replace(" 2 -1.212\n", " 2 -4.32786967161E-16\n")
    assert parse_molden(cut).mo_coeff[1, 1] == pytest.approx(-4.32786967161e-16)
    with pytest.raises(InputError, match="ends in the middle of line 32: the file looks truncated"):
        parse_molden(cut[: cut.index("E-16")])


def test_cli_refuses_the_truncated_file_of_the_bug_report(files, tmp_path, capsys):
    text = files["pyscf-cart"]
    path, cube = tmp_path / "t.molden", tmp_path / "t.cube"
    path.write_text(text[: len(text) * 3 // 4])
    assert main(["orbitals", str(path), "--mo", "homo", "--cube", str(cube)]) == 2
    error = capsys.readouterr().err.strip()
    assert "t.molden" in error and "truncated" in error and len(error.splitlines()) == 1
    assert not cube.exists()


def test_valid_variants_still_read(files):
    uhf = parse_molden(files["pyscf-uhf"])
    assert (uhf.molecule.charge, uhf.molecule.multiplicity) == (1, 2)
    assert uhf.mo_coeff.shape == (2, 7, 7)
    assert parse_molden(files["pyscf-cart"]).basis.nao == 19
    h2 = parse_molden(H2)
    assert (h2.molecule.charge, h2.molecule.multiplicity, h2.title) == (0, 1, "H2 test")
    assert parse_molden(H2_UHF).mo_occ.shape == (2, 2)
    assert parse_molden(H2.rstrip("\n") + "\n\n  ").mo_coeff.shape == (2, 2)  # blank last line
    assert parse_molden(H2 + "[5D]").basis.pure  # flag, no newline
    fortran = parse_molden(H2.replace("0.548\n", "0.548D+00\n").replace("Ene= 0.670", "Ene= .67d0"))
    np.testing.assert_allclose(fortran.mo_coeff[:, 0], [0.548, 0.548])
    sparse = parse_molden(H2.replace(" 2 0.548\n", "").replace(" 1 1.212\n", ""))  # zeros skipped
    np.testing.assert_array_equal(sparse.mo_coeff, [[0.548, 0.0], [0.0, -1.212]])


# (what is damaged, text replaced, replacement, error message pattern) on the H2 file
CASES = [
    ("atom fields", "H 2 1 0.0 0.0 1.4", "H 2 1 0.0 0.0", r"line 6: .*6 fields"),
    ("atom extra field", "H 2 1 0.0 0.0 1.4", "H 2 1 0.0 0.0 1.4 7", "6 fields"),
    ("atom index", "H 2 1 0.0", "H 3 1 0.0", "atom index 3 where 2 was expected"),
    ("atom Z not integer", "H 2 1 0.0", "H 2 1.5 0.0", "'1.5' is not an integer"),
    ("atom Z zero", "H 2 1 0.0", "H 2 0 0.0", r"atomic number 0 is outside 1\.\.118"),
    ("atom Z large", "H 2 1 0.0", "H 2 119 0.0", "atomic number 119"),
    ("coordinate nan", "0.0 1.4", "0.0 nan", "'nan' is not a number"),
    ("coordinate overflow", "0.0 1.4", "0.0 1e999", "too large for a double"),
    ("coordinate cut", "0.0 1.4", "0.0 1.4x", "'1.4x' is not a number"),
    ("no unit", "[Atoms] AU", "[Atoms]", "AU or Angs"),
    ("no atoms", "H 1 1 0.0 0.0 0.0\nH 2 1 0.0 0.0 1.4\n", "", r"\[Atoms\] section has no atoms"),
    ("zero primitives", "1 0\n s 3", "1 0\n s 0", "a shell with 0 primitives"),
    ("primitive count", "1 0\n s 3", "1 0\n s 3.5", "'3.5' is not an integer"),
    ("absurd integer", "1 0\n s 3", "1 0\n s 99999999999999999999", "integer 9+ is too large"),
    ("too many primitives", "1 0\n s 3", "1 0\n s 4", r"line 13: .*does not have 2 numbers"),
    ("huge primitive count", "2 0\n s 3", "2 0\n s 999999999999", "announces 999999999999 prim"),
    ("primitive fields", "0.16885540 0.44463454\n\n2", "0.16885540 0.44463454 1.0\n\n2", "does not have 2 numbers"),
    ("negative exponent", "  3.42525091", "  -3.42525091", "exponent -3.42525091 is not positive"),
    ("zero exponent", "  3.42525091", "  0.0", "exponent 0.0 is not positive"),
    ("coefficient inf", "0.53532814", "inf", "'inf' is not a number"),
    (
        "zero contraction",
        "  3.42525091 0.15432897\n  0.62391373 0.53532814\n  0.16885540 0.44463454\n\n2",
        "  3.42525091 0\n  0.62391373 0\n  0.16885540 0\n\n2",
        "cannot be normalised",
    ),
    ("atom out of range", "2 0\n s", "3 0\n s", r"refers to atom 3, but \[Atoms\] has 2"),
    ("atom twice", "2 0\n s", "1 0\n s", "atom 1 has a second basis block"),
    ("atom header bad", "2 0\n s", "2 0 0\n s", "is not 'index 0'"),
    ("atom without shells", GTO2, "2 0\n", "last atom of .GTO. has no shells"),
    ("atom block missing", "\n2 0\n", "\n", "atom 2 of .Atoms. has no basis block"),
    ("shell kind", " s 3 1.00\n  3.4", " x 3 1.00\n  3.4", "is not 'l nprim"),
    ("shell above g", " s 3 1.00\n  3.4", " h 3 1.00\n  3.4", "above g"),
    ("scale nan", " s 3 1.00\n  3.4", " s 3 nan\n  3.4", "'nan' is not a number"),
    ("flags contradict", "[MO]", "[5D]\n[6D]\n[MO]", r"spherical and cartesian \(\[6D\]\) d"),
    ("no MO", "[MO]", "[Other]", r"no \[MO\] section"),
    ("duplicate section", "[GTO]", "[Title]\nagain\n[GTO]", r"a second \[TITLE\] section"),
    ("no Ene", " Ene= 0.670\n", "", "orbital 2 has no Ene= line"),
    ("no Occup", " Occup= 2.0\n", "", "orbital 1 has no Occup= line"),
    ("Ene nan", "Ene= 0.670", "Ene= nan", "'nan' is not a number"),
    ("Ene two numbers", "Ene= 0.670", "Ene= 0.670 1.0", "must be followed by one number"),
    ("Occup repeated", " Occup= 0.0\n", " Occup= 0.0\n Occup= 0.0\n", "a second Occup= line"),
    ("Occup above 2", "Occup= 2.0", "Occup= 2.5", "occupation 2.5, outside 0..2"),
    ("Occup negative", "Occup= 0.0", "Occup= -0.5", "occupation -0.5"),
    ("Spin", "Spin= Alpha\n Occup= 0.0", "Spin= Gamma\n Occup= 0.0", "neither Alpha nor Beta"),
    ("AO index range", " 2 -1.212", " 3 -1.212", "refers to basis function 3, but .GTO. defines 2"),
    ("AO index zero", " 1 1.212", " 0 1.212", "refers to basis function 0"),
    ("AO index repeated", " 2 -1.212", " 1 -1.212", "orbital 2 lists a basis function twice"),
    ("orbital cut short", " 2 -1.212\n", "", "orbital 2 has 1 of the 2 coefficients"),
    ("coefficient fields", " 2 -1.212", " 2 -1.212 5", "is not 'index coefficient'"),
    ("coefficient one field", " 2 -1.212", " -1.212", "is not 'index coefficient'"),
    ("coefficient text", " 2 -1.212", " 2 -1.212x", r"line 32: '-1\.212x' is not a number"),
    ("coefficient overflow", " 2 -1.212", " 2 -1e999", "too large for a double"),
    ("coefficient nan", " 2 -1.212", " 2 nan", "'nan' is not a number"),
    ("AO index not integer", " 2 -1.212", " 2.0 -1.212", "'2.0' is not an integer"),
    ("keys without coefficients", ORB2, ORB2 + " Sym= A\n Ene= 1.0\n Occup= 0.0\n", "orbital 3 has no coefficients"),
    (
        "coefficients before keys",
        "[MO]\n Sym= A\n Ene= -0.578\n Spin= Alpha\n Occup= 2.0\n",
        "[MO]\n",
        "coefficient line comes before",
    ),
    ("more orbitals than AOs", ORB2, ORB2 + ORB2, "3 alpha orbitals but only 2 basis functions"),
    ("fractional electrons", "Occup= 2.0", "Occup= 1.5", "add up to 1.5 electrons, not a whole"),
    ("no electrons", "Occup= 2.0", "Occup= 0.0", "add up to 0 electrons"),
    ("truncated", "-1.212\n", "-1.212", "ends in the middle of line 32: the file looks truncated"),
    ("coordinate huge", "0.0 1.4", "0.0 1e300", "larger than 1e\\+06 bohr"),
    ("atoms too close", "H 2 1 0.0 0.0 1.4", "H 2 1 0.0 0.0 0.01", "0.01 bohr apart"),
]


@pytest.mark.parametrize("what, old, new, message", CASES, ids=[c[0] for c in CASES])
def test_each_rule(what, old, new, message):
    assert old in H2, what
    with pytest.raises(InputError, match=message) as info:
        parse_molden(H2.replace(old, new, 1), name="Molden file h2.molden")
    assert str(info.value).startswith("Molden file h2.molden") and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("Occup= 1.0", "Occup= 2.0", r"occupation 2\.0, outside 0\.\.1"),
        (" Sym= A\n Ene= 0.670\n Spin= Beta\n Occup= 0.0\n 1 1.212\n 2 -1.212\n", "", "2 alpha and 1 beta orbitals"),
    ],
)
def test_unrestricted_rules(old, new, message):
    assert old in H2_UHF
    with pytest.raises(InputError, match=message):
        parse_molden(H2_UHF.replace(old, new, 1))


def test_unreadable_files(tmp_path):
    for content, message in (
        (b"[Atoms] AU\x00\x01", "binary data"),
        (b"[Atoms] \xff\xfe AU\n", "not a UTF-8 text file"),
    ):
        path = tmp_path / "bad.molden"
        path.write_bytes(content)
        with pytest.raises(InputError, match=message):
            read_molden(path)
    with pytest.raises(InputError, match="is a directory"):
        read_molden(tmp_path)
    with pytest.raises(InputError, match="expected text"):
        parse_molden(b"[Atoms] AU\n")


_NUMBER = re.compile(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?")
_REPLACEMENTS = [
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e999",
    "1e-320",
    "-5",
    "0",
    "-0.0",
    "2.5",
    "99999999999999999999",
    "999999999",
    "7",
    "",
    "1 2",
    "x",
]
_CHARACTERS = list("0123456789.-+eEdD =[]\nxX\tAa")


def _mutate(data, text):
    """One random damage: flip, delete or insert a byte, delete or duplicate a line,
    truncate, or replace a number."""
    kind = data.draw(
        st.sampled_from(
            ["flip", "insert", "drop", "delete line", "duplicate line", "swap lines", "truncate", "number", "number"]
        )
    )
    if kind in ("flip", "insert", "drop", "truncate"):
        at = data.draw(st.integers(0, max(len(text) - 1, 0)))
        char = data.draw(st.sampled_from(_CHARACTERS))
        return {
            "flip": text[:at] + char + text[at + 1 :],
            "insert": text[:at] + char + text[at:],
            "drop": text[:at] + text[at + 1 :],
            "truncate": text[:at],
        }[kind]
    if kind == "number":
        numbers = list(_NUMBER.finditer(text))
        if not numbers:
            return text
        match = numbers[data.draw(st.integers(0, len(numbers) - 1))]
        return text[: match.start()] + data.draw(st.sampled_from(_REPLACEMENTS)) + text[match.end() :]
    lines = text.split("\n")
    at = data.draw(st.integers(0, len(lines) - 1))
    if kind == "delete line":
        del lines[at]
    elif kind == "duplicate line":
        lines.insert(at, lines[at])
    else:
        other = data.draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
    return "\n".join(lines)


@settings(
    max_examples=600,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_files_read_consistently_or_fail_cleanly(files, data):
    text = files[data.draw(st.sampled_from(["pyscf-rhf", "pyscf-uhf", "hartree-rhf"]))]
    for _ in range(data.draw(st.integers(1, 3))):
        text = _mutate(data, text)
    try:
        out = parse_molden(text)
    except InputError as exc:
        message = str(exc)
        assert SAFETY_NET not in message and "\n" not in message, message
        return
    nao, nmo = out.basis.nao, out.mo_coeff.shape[-1]
    assert out.mo_coeff.shape[-2] == nao and nmo <= nao
    assert out.mo_energy.shape == out.mo_occ.shape == out.mo_coeff.shape[:-2] + (nmo,)
    assert out.mo_coeff.ndim in (2, 3)
    for array in (
        out.mo_coeff,
        out.mo_energy,
        out.mo_occ,
        out.basis.exponents,
        out.basis.coefficients,
        out.molecule.coords,
    ):
        assert np.all(np.isfinite(array))
    assert np.all(out.basis.exponents > 0)
    assert np.all(out.mo_occ >= -1e-5) and np.all(out.mo_occ <= 2 + 1e-5)
    assert out.molecule.nelectron >= 1
