"""4-component Dirac-Coulomb-HF against PySCF's DHF (same basis, c, nucleus).

He and Be run PySCF live; heavier atoms compare with energies that
tests/atom/make_dhf_references.py computed with PySCF (its DHF takes minutes there).
"""

import json
import os

import pytest
from bases import exponents
from make_dhf_references import pyscf_dhf

from hartree.atom import DEFAULT_LIGHT_SPEED, AtomSCFOptions, kernel, make_nucleus
from hartree.atom.config import atomic_number

DHF = AtomSCFOptions(energy_tol=1e-11)
REFS = json.load(open(os.path.join(os.path.dirname(__file__), "data", "dhf_references.json")))


def _dhf(element, model, options=DHF):
    z = atomic_number(element)
    return kernel(z, exponents(element), make_nucleus(z, model), options)


@pytest.mark.parametrize("model", ["point", "gaussian"])
@pytest.mark.parametrize("element", ["He", "Be"])
def test_matches_pyscf_dhf_live(element, model):
    result = _dhf(element, model)
    assert result.converged
    assert abs(result.energy - pyscf_dhf(element, model)) < 1e-8


@pytest.mark.parametrize("model", ["point", "gaussian"])
@pytest.mark.parametrize("element", ["Ne", "Mg", "Ar", "Ca", "Zn", "Kr"])
def test_matches_pyscf_dhf_stored(element, model):
    if element not in REFS or model not in REFS[element]:
        pytest.fail(f"no stored PySCF reference for {element}/{model}; run make_dhf_references.py")
    assert REFS["light_speed"] == DEFAULT_LIGHT_SPEED
    result = _dhf(element, model)
    assert abs(result.energy - REFS[element][model]) < 1e-8


def test_neon_spinors_and_nonrelativistic_limit():
    result = _dhf("Ne", "point")
    assert result.blocks == ["s1/2", "p1/2", "p3/2"]
    assert result.occupations == [[2.0, 2.0], [2.0], [4.0]]
    # spin-orbit splitting of Ne 2p: p1/2 below p3/2 by ~4.6 mEh (DF limit 0.00456)
    split = result.orbital_energies[2][0] - result.orbital_energies[1][0]
    assert 0.004 < split < 0.005
    # c -> large: the Dirac-Fock energy tends to the HF energy in the same basis
    big_c = _dhf("Ne", "point", AtomSCFOptions(light_speed=1e5, energy_tol=1e-11))
    hf = _dhf("Ne", "point", AtomSCFOptions(relativistic=False, energy_tol=1e-11))
    assert abs(big_c.energy - hf.energy) < 1e-6
    # and the relativistic lowering scales as 1/c² (ratio of shifts at c and 2c is ~4)
    c2 = _dhf("Ne", "point", AtomSCFOptions(light_speed=2 * DEFAULT_LIGHT_SPEED, energy_tol=1e-11))
    assert (result.energy - hf.energy) / (c2.energy - hf.energy) == pytest.approx(4.0, rel=0.01)


def test_sphere_nucleus_close_to_gaussian():
    # same rms radius: the finite-size shift of the uniform sphere is within a few % of the
    # Gaussian one (the shift depends mostly on <r²>)
    point, gauss, sphere = (_dhf("Ar", m).energy for m in ("point", "gaussian", "sphere"))
    assert gauss > point and sphere > point
    assert (sphere - point) / (gauss - point) == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("model", ["point", "gaussian"])
def test_per_kappa_basis_matches_pyscf_dhf(model):
    # p1/2 and p3/2 with different exponents (PySCF: shells with kappa = 1 and -2); the
    # PySCF energies are stored by make_dhf_references.py Ne:kappa
    from bases import kappa_exponents

    result = kernel(10, kappa_exponents("Ne"), make_nucleus(10, model), DHF)
    assert result.blocks == ["s1/2", "p1/2", "p3/2"] and [len(e) for e in result.block_exponents] == [10, 7, 6]
    assert abs(result.energy - REFS["Ne:kappa"][model]) < 1e-8
