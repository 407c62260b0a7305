"""NEWUOA optimization of the WTBS parameters (jobtype='bsopt', --optimize)."""

import json
import math

import pytest

from hartree.atom import AtomSCFOptions, make_nucleus
from hartree.atom.input import parse_input
from hartree.atom.optimize import NewuoaOptions, optimize_wtbs
from hartree.atom.wtbs import WTBSParameters, parse_nbs, wtbs_exponents
from hartree.atom.scf import kernel
from hartree.cli.main import main
from hartree.errors import InputError


def test_newuoa_reaches_a_local_minimum():
    nuc = make_nucleus(2)
    opts = AtomSCFOptions(relativistic=False, energy_tol=1e-12)
    windows = parse_nbs("s:1:7")
    res = optimize_wtbs(2, WTBSParameters(0.12, 2.3, 4.5, 1.5), windows, nuc, opts,
                        NewuoaOptions(rhobeg=0.1, rhoend=1e-5, maxfun=400))
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


def test_newuoa_options_checked():
    with pytest.raises(InputError, match="rhoend < rhobeg"):
        NewuoaOptions(rhobeg=1e-4, rhoend=0.1)


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
    assert doc["optimization"]["evaluations"] <= 31
    assert doc["energy"] == pytest.approx(min(e for e in doc["optimization"]["energies"] if e is not None), abs=1e-10)
