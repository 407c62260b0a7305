"""NEWUOA optimization of the WTBS parameters (jobtype='bsopt', --optimize)."""

import json
import math

import pytest

from hartree.atom import AtomSCFOptions, make_nucleus
from hartree.atom.input import parse_input
from hartree.atom.optimize import NewuoaOptions, optimize_wtbs
from hartree.atom.scf import kernel
from hartree.atom.wtbs import Window, WTBSParameters, parse_nbs, wtbs_exponents
from hartree.cli.main import main
from hartree.errors import InputError


def test_newuoa_reaches_a_local_minimum():
    nuc = make_nucleus(2)
    opts = AtomSCFOptions(relativistic=False, energy_tol=1e-12)
    windows = parse_nbs("s:1:7")
    res = optimize_wtbs(
        2, WTBSParameters(0.12, 2.3, 4.5, 1.5), windows, nuc, opts, NewuoaOptions(rhobeg=0.1, rhoend=1e-5, maxfun=400)
    )
    assert res.energy < res.start_energy - 1e-5
    # local minimum: no coordinate step of 1e-3 (in ln α, ln β, δ, γ) lowers the energy by > 1e-9
    p = res.parameters
    x = [math.log(p.alpha), math.log(p.beta), p.delta, p.gamma]
    for i in range(4):
        for step in (-1e-3, 1e-3):
            y = list(x)
            y[i] += step
            q = WTBSParameters(math.exp(y[0]), math.exp(y[1]), y[2], y[3])
            e = kernel(2, wtbs_exponents([q], windows), nuc, opts).energy
            assert e > res.energy - 1e-9
    # the reported optimum is the energy of the reported parameters
    assert kernel(2, wtbs_exponents([p], windows), nuc, opts).energy == pytest.approx(res.energy, abs=1e-10)


def test_newuoa_options_checked(monkeypatch):
    with pytest.raises(InputError, match="rhoend < rhobeg"):
        NewuoaOptions(rhobeg=1e-4, rhoend=0.1)
    monkeypatch.setitem(__import__("sys").modules, "nlopt", None)  # as if nlopt were not installed
    with pytest.raises(InputError, match="needs the nlopt package"):
        optimize_wtbs(2, WTBSParameters(0.12, 2.3, 4.5, 1.5), parse_nbs("s:1:6"), make_nucleus(2))


BSOPT = """He optimization
 $contrl jobtype='bsopt' $end
 $nuc znuc=2 nucmdl=3 $end
 $bas nsym=1 bastype='wtbs' $end
 $wtbs wtbspara=0.12,2.3,4.5,1.5 nbs=6 $end
 $newuoa rhobeg=0.1 rhoend=1e-3 maxfun=30 $end
 $econfig nclose=1 $end
"""


def test_bsopt_input_and_cli(tmp_path, capsys):
    path = tmp_path / "he.inp"
    path.write_text(BSOPT)
    job = parse_input(BSOPT.splitlines(), "he.inp")
    assert job.newuoa == {"rhobeg": 0.1, "rhoend": 1e-3, "iprint": 0, "maxfun": 30}
    out = tmp_path / "he.json"
    assert main(["atom", str(path), "--json", str(out)]) == 0
    assert "Optimized WTBS parameters" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["energy"] <= doc["optimization"]["start_energy"]
    assert (
        doc["optimization"]["evaluations"]
        <= 30
        == len(doc["optimization"]["history"]) + 30 - doc["optimization"]["evaluations"]
    )
    assert doc["energy"] == pytest.approx(min(e for e in doc["optimization"]["energies"] if e is not None), abs=1e-10)
    assert (tmp_path / "he.png").stat().st_size > 1000 and doc["optimization"]["plot"].endswith("he.png")


def test_one_group_per_l_and_history():
    # Ne (HF) with separate s and p groups: 8 parameters; the optimum is the energy of its
    # parameters, the history holds every evaluation and its running minimum ends there
    nuc = make_nucleus(10)
    opts = AtomSCFOptions(relativistic=False)
    start = WTBSParameters(9.943e-2, 1.945, 4.988, 1.392)
    windows = [Window(0, 1, 10, 0), Window(1, 1, 6, 1)]
    res = optimize_wtbs(10, [start, start], windows, nuc, opts, NewuoaOptions(rhobeg=0.1, rhoend=1e-3, maxfun=60))
    assert len(res.groups) == 2 and res.evaluations == len(res.history) <= 60
    assert res.groups[0] != res.groups[1]
    e = kernel(10, wtbs_exponents(res.groups, windows), nuc, opts).energy
    assert e == pytest.approx(res.energy, abs=1e-10)
    assert res.history[0]["energy"] == pytest.approx(res.start_energy, abs=0)
    best = res.best_so_far()
    assert best[-1] == res.energy and all(b >= a for a, b in zip(best[1:], best[:-1]))
    assert res.energy < res.start_energy - 1e-3
    # only the p group active: the s group stays exactly at its start values
    part = optimize_wtbs(
        10, res.groups, windows, nuc, opts, NewuoaOptions(rhobeg=0.05, rhoend=1e-3, maxfun=20), active=[1]
    )
    assert part.groups[0] == res.groups[0] and part.energy <= res.energy + 1e-10
    assert kernel(10, wtbs_exponents(part.groups, windows), nuc, opts).energy == pytest.approx(part.energy, abs=1e-10)
    with pytest.raises(InputError, match="the windows use groups"):
        optimize_wtbs(10, [start], windows, nuc, opts)


def test_history_plot_is_a_png(tmp_path):
    from matplotlib.image import imread

    from hartree.atom.plot import plot_history

    nuc = make_nucleus(2)
    res = optimize_wtbs(
        2,
        WTBSParameters(0.12, 2.3, 4.5, 1.5),
        parse_nbs("s:1:6"),
        nuc,
        AtomSCFOptions(relativistic=False),
        NewuoaOptions(rhobeg=0.1, rhoend=1e-3, maxfun=25),
    )
    path = plot_history(res, str(tmp_path / "he.png"))
    image = imread(path)
    assert image.shape[0] > 300 and image.shape[1] > 400
    assert image[..., :3].std() > 0.05  # not a blank canvas


def test_free_exponents_newuoa():
    # He (Dirac-Fock, Gaussian nucleus) with 6 free s1/2 exponents from a WTBS set: the
    # energy never rises above the start, the returned exponents give the returned energy
    # through kernel(), and the function count is unchanged
    from hartree.atom.optimize import exponents_per_l, optimize_exponents, symmetry_exponents

    nuc = make_nucleus(2, "gaussian")
    opts = AtomSCFOptions()
    start = wtbs_exponents([WTBSParameters(0.12, 2.3, 4.5, 1.5)], parse_nbs("s:1:6"))
    res = optimize_exponents(2, start, nuc, opts, NewuoaOptions(rhobeg=0.1, rhoend=1e-4, maxfun=60))
    assert res.start_energy == pytest.approx(kernel(2, start, nuc, opts).energy, abs=1e-12)
    assert res.energy < res.start_energy - 1e-4 and res.evaluations == len(res.history) <= 60
    assert all(h["energy"] is None or h["energy"] >= res.energy for h in res.history)
    assert res.energy == min(h["energy"] for h in res.history if h["energy"] is not None)
    assert list(res.exponents) == ["s1/2"] and len(res.exponents["s1/2"]) == 6
    assert kernel(2, res.per_l, nuc, opts).energy == pytest.approx(res.energy, abs=1e-12)
    # Ne: only p1/2 free; s1/2 and p3/2 stay exactly at their start exponents
    ne = wtbs_exponents([WTBSParameters(9.943e-2, 1.945, 4.988, 1.392)], parse_nbs("s:1:9,p:1:5"))
    nuc10 = make_nucleus(10, "gaussian")
    part = optimize_exponents(10, ne, nuc10, opts, NewuoaOptions(rhobeg=0.05, rhoend=1e-3, maxfun=15), active=["p1/2"])
    fixed = symmetry_exponents(ne)
    assert part.exponents["s1/2"] == fixed["s1/2"].tolist() and part.exponents["p3/2"] == fixed["p3/2"].tolist()
    assert part.exponents["p1/2"] != fixed["p1/2"].tolist() and part.energy <= part.start_energy
    assert kernel(10, exponents_per_l(part.exponents), nuc10, opts).energy == pytest.approx(part.energy, abs=1e-12)
    # bad input: a clear InputError
    with pytest.raises(InputError, match="active symmetries"):
        optimize_exponents(2, start, nuc, opts, active=["p1/2"])
    with pytest.raises(InputError, match="positive finite"):
        optimize_exponents(2, [[0.5, -1.0, 3.0]], nuc, opts)
    with pytest.raises(InputError, match="at least 2 free exponents"):
        optimize_exponents(2, [[0.5]], nuc, opts)
    with pytest.raises(InputError, match="closer than the ratio"):
        optimize_exponents(2, [[0.5, 0.51, 3.0]], nuc, opts)
    for bad in ("s3/2", "q"):
        with pytest.raises(InputError, match="unknown symmetr"):
            optimize_exponents(10, {"s1/2": [1.0, 3.0], "p1/2": [1.0], "p3/2": [1.0], bad: [1.0]}, nuc10, opts)
