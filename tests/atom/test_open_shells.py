"""Open shells in the average-of-configuration sense (one open shell per symmetry).

Independent routes: (1) one s electron outside closed shells is a single determinant, so
Li and Na equal PySCF ROHF on the same basis; (2) for B..F and Sc (3d1), nonrelativistic
and Dirac-Fock, the textbook E_av formula evaluated on a radial grid from the converged
orbitals (tests/atom/aoc_quadrature.py) equals the SCF energy, and the energy is
stationary under a closed-open rotation; (3) one electron has no self-interaction.
"""

import copy
import math

import pytest
from aoc_quadrature import aoc_energy
from bases import even_tempered as et
from pyscf import gto, scf

from hartree.atom import DEFAULT_LIGHT_SPEED, run
from hartree.atom.config import configuration

BASES = {
    "H": [et(0.02, 2.2, 20)],
    "Li": [et(0.01, 2.4, 16)],
    "B": [et(0.04, 2.4, 13), et(0.05, 2.4, 8)],
    "C": [et(0.05, 2.4, 13), et(0.06, 2.4, 8)],
    "N": [et(0.06, 2.4, 13), et(0.07, 2.4, 8)],
    "O": [et(0.07, 2.4, 13), et(0.08, 2.4, 8)],
    "F": [et(0.08, 2.4, 13), et(0.09, 2.4, 8)],
    "Na": [et(0.02, 2.4, 15), et(0.06, 2.4, 9)],
    "Sc": [et(0.02, 2.5, 16), et(0.04, 2.5, 11), et(0.06, 2.5, 6)],
}


def _pyscf_rohf(element, spin):
    basis = {element: [[l, [float(z), 1.0]] for l, e in enumerate(BASES[element]) for z in e]}
    mol = gto.M(atom=f"{element} 0 0 0", basis=basis, spin=spin, verbose=0)
    mf = scf.ROHF(mol)
    mf.conv_tol = 1e-12
    energy = mf.kernel()
    assert mf.converged
    return energy


def test_default_configurations():
    assert configuration(7) == [(2, 0.0), (0, 3.0)]
    assert configuration(7, relativistic=True) == [(2, 0.0), (1, 0.0), (0, 1.0)]  # 2p1/2^2 2p3/2^1
    assert configuration(21, relativistic=True)[3:] == [(0, 1.0), (0, 0.0)]  # Sc 3d3/2^1


@pytest.mark.parametrize("element", ["Li", "Na"])
def test_single_s_electron_equals_pyscf_rohf(element):
    result = run(element, exponents=BASES[element], relativistic=False, energy_tol=1e-12)
    assert result.occupations[0][-1] == 1.0
    assert abs(result.energy - _pyscf_rohf(element, 1)) < 1e-8


def test_hydrogen_has_no_self_interaction():
    hf = run("H", exponents=BASES["H"], relativistic=False)
    assert abs(hf.energy - (-0.5)) < 1e-7
    assert abs(hf.components["two_electron"]) < 1e-12
    dirac = run("H", exponents=BASES["H"])  # Dirac 1s: c²(sqrt(1 - 1/c²) - 1)
    c = DEFAULT_LIGHT_SPEED
    assert abs(dirac.energy - c * c * (math.sqrt(1 - 1 / c**2) - 1)) < 1e-7


@pytest.mark.parametrize("relativistic", [False, True])
@pytest.mark.parametrize("element,z", [("B", 5), ("C", 6), ("N", 7), ("O", 8), ("F", 9), ("Sc", 21)])
def test_energy_equals_textbook_average_energy(element, z, relativistic):
    result = run(element, exponents=BASES[element], relativistic=relativistic, energy_tol=1e-12)
    assert result.converged
    assert abs(aoc_energy(result, z) - result.energy) < 1e-8


@pytest.mark.parametrize("relativistic", [False, True])
def test_stationary_under_closed_open_rotation(relativistic):
    # Na: 2s closed and 3s open share the s block; the coupling operator makes E stationary
    result = run("Na", exponents=BASES["Na"], relativistic=relativistic, energy_tol=1e-12)
    e0 = aoc_energy(result, 11)
    values = []
    for theta in (-2e-3, 2e-3):
        rotated = copy.copy(result)
        coef = [c.copy() for c in result.coefficients]
        c2, c3 = coef[0][:, 1].copy(), coef[0][:, 2].copy()
        coef[0][:, 1] = math.cos(theta) * c2 + math.sin(theta) * c3
        coef[0][:, 2] = -math.sin(theta) * c2 + math.cos(theta) * c3
        rotated.coefficients = coef
        values.append(aoc_energy(rotated, 11))
    slope = (values[1] - values[0]) / 4e-3
    curvature = (values[0] + values[1] - 2 * e0) / 4e-6
    assert abs(slope) < 1e-6
    assert curvature > 1e-3  # a minimum along the rotation


def test_autogen_lists_the_jj_configurations_with_determinant_weights():
    from hartree.atom.config import jj_configurations

    # N 2p^3 -> 2p1/2^a 2p3/2^(3-a): weights C(2,a) C(4,3-a) / C(6,3), by hand 4/20, 12/20, 4/20
    n = jj_configurations(7)
    assert [label for _, _, label in n] == ["2p3/2^3", "2p1/2^1 2p3/2^2", "2p1/2^2 2p3/2^1"]
    assert [w for _, w, _ in n] == pytest.approx([0.2, 0.6, 0.2], abs=1e-15)
    assert n[2][0] == configuration(7, relativistic=True)  # the default is one of them
    assert n[0][0] == [(2, 0.0), (0, 0.0), (0, 3.0)]
    # Fe 3d^6: C(4,a) C(6,6-a) / C(10,6) = (1, 24, 90, 80, 15) / 210
    fe = jj_configurations(26)
    assert [w * 210 for _, w, _ in fe] == pytest.approx([1, 24, 90, 80, 15], abs=1e-12)
    assert fe[0][0][3:] == [(0, 0.0), (1, 0.0)]  # 3d5/2^6 closed, 3d3/2 empty
    # closed shells and an open s shell: one configuration
    assert [w for _, w, _ in jj_configurations(10)] == [1.0]
    assert jj_configurations(11)[0][2] == "3s1/2^1"


@pytest.mark.parametrize("element,z", [("N", 7), ("Sc", 21)])
def test_every_autogen_configuration_equals_the_textbook_average_energy(element, z):
    # two open shells in one configuration (e.g. 2p1/2^1 2p3/2^2) are checked on the grid too
    from hartree.atom import AtomSCFOptions, kernel, make_nucleus
    from hartree.atom.config import jj_configurations

    for pattern, _, label in jj_configurations(z):
        result = kernel(
            z,
            BASES[element],
            make_nucleus(z),
            AtomSCFOptions(energy_tol=1e-12),
            block_shells=[n for n, _ in pattern],
            open_shells=[q for _, q in pattern],
        )
        assert abs(aoc_energy(result, z) - result.energy) < 1e-8, label


def test_autogen_one_set_of_spinors_minimizes_the_weighted_average():
    # N 2p^3: one set of spinors for the 3 jj configurations (extended average level).  Checks:
    # (i) the energy is Σ w_K E_K with each E_K the textbook AOC energy of those spinors on a
    # radial grid (independent integrals); (ii) for c -> ∞ it equals the nonrelativistic average
    # of configuration of 1s² 2s² 2p³ (the jj weights are the determinant shares); (iii) separately
    # relaxed configurations average slightly lower (each has its own orbitals).
    from hartree.atom import AtomSCFOptions, kernel, make_nucleus
    from hartree.atom.config import jj_configurations

    confs = [([n for n, _ in p], [q for _, q in p], w) for p, w, _ in jj_configurations(7)]
    opts = AtomSCFOptions(energy_tol=1e-12, device="cpu")
    res = kernel(7, BASES["N"], make_nucleus(7), opts, configurations=confs)
    assert res.energy == pytest.approx(sum(w * e for (_, _, w), e in zip(confs, res.configuration_energies)), abs=1e-10)
    grid = 0.0
    for (_, _, w), o in zip(confs, ([0, 3], [1, 2], [2, 1])):  # 2p1/2, 2p3/2 electrons per configuration
        each = copy.copy(res)
        each.occupations = [res.occupations[0], [float(o[0])], [float(o[1])]]
        grid += w * aoc_energy(each, 7)
    assert abs(grid - res.energy) < 1e-8
    big_c = kernel(
        7,
        BASES["N"],
        make_nucleus(7),
        AtomSCFOptions(energy_tol=1e-12, device="cpu", light_speed=1e6),
        configurations=confs,
    )
    nonrel = run("N", exponents=BASES["N"], relativistic=False, energy_tol=1e-12)
    assert abs(big_c.energy - nonrel.energy) < 3e-9
    separate = sum(
        w * kernel(7, BASES["N"], make_nucleus(7), opts, block_shells=b, open_shells=q).energy for b, q, w in confs
    )
    assert 0 < res.energy - separate < 1e-4


def test_autogen_command_line_and_input(tmp_path, capsys):
    from hartree.atom import kernel, make_nucleus
    from hartree.atom.config import jj_configurations
    from hartree.atom.wtbs import WTBSParameters, parse_nbs, wtbs_exponents
    from hartree.cli.main import main

    out = tmp_path / "b.json"
    basis = ["--alpha", "3.238e-2", "--beta", "1.948", "--delta", "5.573", "--gamma", "1.523", "--nbs", "s:1:12,p:1:8"]
    assert main(["atom", "B", "--autogen", "--json", str(out)] + basis) == 0
    doc = __import__("json").loads(out.read_text())
    exps = wtbs_exponents([WTBSParameters(3.238e-2, 1.948, 5.573, 1.523)], parse_nbs("s:1:12,p:1:8"))
    confs = jj_configurations(5)
    ref = kernel(
        5, exps, make_nucleus(5), configurations=[([n for n, _ in p], [q for _, q in p], w) for p, w, _ in confs]
    )
    assert doc["energy"] == pytest.approx(ref.energy, abs=1e-10) and doc["average_energy"] == doc["energy"]
    for (_, weight, label), e in zip(confs, ref.configuration_energies):
        row = [c for c in doc["configurations"] if c["configuration"] == label][0]
        assert row["energy"] == pytest.approx(e, abs=1e-10) and row["weight"] == pytest.approx(weight)
    assert doc["energy"] == pytest.approx(sum(c["weight"] * c["energy"] for c in doc["configurations"]), abs=1e-10)
    assert "weighted average of 2 configurations" in capsys.readouterr().out
    assert main(["atom", "B", "--autogen", "--nonrelativistic"] + basis) == 2
    assert "--autogen cannot be combined" in capsys.readouterr().err
    # the basis optimization then minimizes the average (thesis: jobtype='bsopt' with autogen)
    assert (
        main(
            [
                "atom",
                "B",
                "--autogen",
                "--optimize",
                "--maxfun",
                "8",
                "--rhoend",
                "1e-3",
                "--no-plot",
                "--json",
                str(tmp_path / "opt.json"),
            ]
            + basis
        )
        == 0
    )
    doc = __import__("json").loads((tmp_path / "opt.json").read_text())
    best = wtbs_exponents([WTBSParameters(*doc["optimization"]["groups"][0])], parse_nbs("s:1:12,p:1:8"))
    again = kernel(
        5, best, make_nucleus(5), configurations=[([n for n, _ in p], [q for _, q in p], w) for p, w, _ in confs]
    )
    assert doc["energy"] == pytest.approx(again.energy, abs=1e-10) == doc["optimization"]["energy"]
    assert doc["energy"] <= ref.energy + 1e-12
