"""Reading Molden files: our own (round trip) and PySCF's (pyscf.tools.molden.from_mo)."""

import numpy as np
import pytest
from pyscf.dft import numint
from pyscf.tools import molden as pyscf_molden

from hartree.basis import cart2sph
from hartree.errors import InputError
from hartree.grid import evaluate_orbitals
from hartree.io.molden import molden_text, spherical_shell_order, write_molden
from hartree.io.molden_read import parse_molden, read_molden
from hartree.io.shells import cartesian_norm

POINTS = np.random.default_rng(11).normal(scale=1.8, size=(250, 3))  # bohr


def _values(basis, coeff):
    return evaluate_orbitals(basis, coeff, POINTS, method="ao")


@pytest.mark.parametrize("cart", [False, True])
@pytest.mark.parametrize("unrestricted", [False, True])
def test_round_trip_gives_identical_orbitals(tmp_path, water, make_result, cart, unrestricted):
    result, _ = make_result(water, "cc-pvqz", cartesian=cart, unrestricted=unrestricted)
    path = tmp_path / "water.molden"
    write_molden(path, result)
    data = read_molden(path)
    assert data.basis.pure == (not cart) and data.basis.nao == result.basis.nao
    np.testing.assert_array_equal(data.molecule.numbers, result.molecule.numbers)
    np.testing.assert_allclose(data.molecule.coords, result.molecule.coords, atol=1e-11)
    assert data.molecule.multiplicity == result.molecule.multiplicity
    np.testing.assert_allclose(data.mo_energy, result.mo_energy, atol=1e-11)
    np.testing.assert_allclose(data.mo_occ, result.mo_occ)
    np.testing.assert_allclose(data.basis.exponents, result.basis.exponents, rtol=1e-13)
    np.testing.assert_allclose(data.basis.coefficients, result.basis.coefficients, rtol=1e-12)
    np.testing.assert_allclose(data.mo_coeff, result.mo_coeff, atol=1e-12)
    if unrestricted:
        for s in range(2):
            np.testing.assert_allclose(
                _values(data.basis, data.mo_coeff[s]), _values(result.basis, result.mo_coeff[s]), atol=1e-12
            )


@pytest.mark.parametrize("cart", [False, True])
def test_pyscf_written_files_reproduce_pyscf_orbitals(tmp_path, water, make_result, cart):
    result, mol = make_result(water, "cc-pvqz", cartesian=cart)
    path = tmp_path / "pyscf.molden"
    pyscf_molden.from_mo(mol, str(path), result.mo_coeff, occ=result.mo_occ, ene=result.mo_energy)
    data = read_molden(path)
    assert data.basis.max_l == 4
    reference = (numint.eval_ao(mol, POINTS) @ result.mo_coeff).T
    np.testing.assert_allclose(_values(data.basis, data.mo_coeff), reference, rtol=0, atol=1e-10)


def test_angstrom_fortran_exponents_sparse_lines_and_sp_shells(tmp_path, water, make_result):
    result, _ = make_result(water, "6-31g*")
    text = molden_text(result)
    # Angstrom coordinates, Fortran D exponents, zero coefficients left out
    lines, out, in_atoms = text.splitlines(), [], False
    for line in lines:
        fields = line.split()
        if line.startswith("[Atoms]"):
            out.append("[Atoms] Angs")
            in_atoms = True
            continue
        if line.startswith("["):
            in_atoms = False
        if in_atoms:
            xyz = [float(v) * 0.529177210903 for v in fields[3:6]]
            out.append(" ".join(fields[:3] + [f"{v:.12f}" for v in xyz]))
        elif (
            len(fields) == 2
            and "e" in fields[1]
            and fields[0].isdigit()
            and (fields[0] == "1" or abs(float(fields[1])) < 0.05)
        ):
            continue  # sparse [MO]: drop small coefficients and AO 1 (every orbital sparse)
        else:
            out.append(line.replace("e", "D") if len(fields) == 2 and "." in fields[0] else line)
    data = parse_molden("\n".join(out) + "\n")
    expected = np.where(np.abs(result.mo_coeff) < 0.05, 0.0, result.mo_coeff)  # spherical: no scaling
    expected[0] = 0.0  # Molden AO 1 is hartree AO 0 (O 1s)
    assert np.count_nonzero(expected) < expected.size
    np.testing.assert_allclose(data.mo_coeff, expected, atol=1e-13)
    np.testing.assert_allclose(data.molecule.coords, result.molecule.coords, atol=1e-10)
    np.testing.assert_allclose(data.basis.exponents, result.basis.exponents, rtol=1e-13)
    # an sp shell line gives the same functions as separate s and p shells
    sp = (
        "[Molden Format]\n[Atoms] AU\nH 1 1 0.0 0.0 0.0\n[GTO]\n1 0\nsp 2 1.00\n"
        "0.5 0.4 0.6\n0.1 0.7 0.5\n\n[MO]\nEne= -0.5\nSpin= Alpha\nOccup= 1.0\n1 1.0\n4 0.5\n"
    )
    sep = (
        "[Molden Format]\n[Atoms] AU\nH 1 1 0.0 0.0 0.0\n[GTO]\n1 0\ns 2 1.00\n0.5 0.4\n0.1 0.7\n"
        "p 2 1.00\n0.5 0.6\n0.1 0.5\n\n[MO]\nEne= -0.5\nSpin= Alpha\nOccup= 1.0\n1 1.0\n4 0.5\n"
    )
    a, b = parse_molden(sp), parse_molden(sep)
    assert a.molecule.multiplicity == 2
    np.testing.assert_allclose(_values(a.basis, a.mo_coeff), _values(b.basis, b.mo_coeff), atol=1e-14)


def test_mixed_5d10f_flags(water, make_result):
    """[5D10F]: spherical d, cartesian f; read as a cartesian basis with the same orbitals."""
    result, _ = make_result(water, "cc-pvtz")
    basis, coeff = result.basis, result.mo_coeff
    text = molden_text(result).replace("[5D7F]\n[9G]\n", "[5D10F]\n")
    head, _ = text.split("[MO]\n")
    from hartree.io.molden import cartesian_shell_order_and_scale
    from hartree.io.shells import shells_by_atom

    rows = []
    for shells in shells_by_atom(basis, 3):
        for sh in shells:
            l, a0 = int(basis.shell_l[sh]), int(basis.ao_loc[sh])
            block = coeff[a0 : a0 + 2 * l + 1]
            if l == 3:  # cartesian f: C_cart = C_l C_sph, Molden order, times the component norms
                positions, norms = cartesian_shell_order_and_scale(3)
                cart = cart2sph(3) @ block
                rows += [cart[p] * n for p, n in zip(positions, norms)]
            else:
                rows += [block[p] for p in spherical_shell_order(l)]
    rows = np.array(rows)
    mo = ["[MO]"]
    for n in range(rows.shape[1]):
        mo += [" Sym= A", f" Ene= {result.mo_energy[n]:.12f}", " Spin= Alpha", f" Occup= {result.mo_occ[n]}"]
        mo += [f" {k + 1} {c:.16e}" for k, c in enumerate(rows[:, n])]
    data = parse_molden(head + "\n".join(mo) + "\n")
    assert not data.basis.pure
    np.testing.assert_allclose(_values(data.basis, data.mo_coeff), _values(basis, coeff), atol=1e-12)
    assert cartesian_norm(2, 0, 0) > 1  # the norms above really scale


def test_bad_files(tmp_path):
    with pytest.raises(InputError, match="no \\[GTO\\]"):
        parse_molden("[Molden Format]\n[Atoms] AU\nH 1 1 0 0 0\n[MO]\n")
    with pytest.raises(InputError, match="AU or Angs"):
        parse_molden("[Atoms]\nH 1 1 0 0 0\n[GTO]\n1 0\ns 1 1.0\n1.0 1.0\n\n[MO]\nEne= 0\n1 1.0\n")
    with pytest.raises(InputError, match="basis function 3"):
        parse_molden("[Atoms] AU\nH 1 1 0 0 0\n[GTO]\n1 0\ns 1 1.0\n1.0 1.0\n\n[MO]\nEne= 0\nOccup= 1\n3 1.0\n")
    with pytest.raises(InputError, match="Molden file not found"):
        read_molden(tmp_path / "missing.molden")
