"""Basis-set size search (thesis §2.1.1) and its Dask parallelism, on tiny cases.

Independent checks: the accepted window meets the threshold when its parameters are
re-optimized on their own, and one function fewer does not (so the search stopped at the
right place); the Dask run gives the same windows and energies as the serial one.
"""

import json
import sys

import pytest

from hartree.atom import AtomSCFOptions, kernel, make_nucleus
from hartree.atom.basis_search import (
    DaskExecutor,
    SearchSpec,
    dask_client,
    occupied_per_l,
    search_elements,
    size_search,
)
from hartree.atom.optimize import NewuoaOptions, optimize_wtbs
from hartree.atom.wtbs import Window, WTBSParameters, parse_nbs, wtbs_exponents
from hartree.cli.main import main
from hartree.errors import InputError

HF = AtomSCFOptions(relativistic=False)
NEWUOA = NewuoaOptions(rhobeg=0.1, rhoend=1e-3, maxfun=40)
HE_LIMIT = -2.861679996  # numerical HF limit (also in test_cli_atom)


def he_spec(threshold=2e-6, nbs="s:1:12"):
    return SearchSpec(
        z=2,
        start=(WTBSParameters(0.0814, 1.953, 4.504, 1.515),),
        windows=tuple(parse_nbs(nbs)),
        reference=HE_LIMIT,
        threshold=threshold,
        nucleus="point",
        options=HF,
        newuoa=NEWUOA,
    )


def test_size_search_stops_at_the_smallest_window_that_meets_the_threshold():
    spec = he_spec()
    res = size_search(spec, batch=2)
    (w,) = res.windows
    assert res.relative_error <= spec.threshold
    # the reported energy is the energy of the reported basis
    e = kernel(2, wtbs_exponents(res.groups, res.windows), make_nucleus(2), HF).energy
    assert e == pytest.approx(res.energy, abs=1e-10)
    assert abs(e - HE_LIMIT) / abs(HE_LIMIT) == pytest.approx(res.relative_error, rel=1e-9)
    # one function fewer, optimized from the same start, misses the threshold
    smaller = [Window(0, 1, w.end - 1)]
    worse = optimize_wtbs(2, list(res.groups), smaller, make_nucleus(2), HF, NEWUOA)
    assert abs(worse.energy - HE_LIMIT) / abs(HE_LIMIT) > spec.threshold
    assert w.end < 12 and [c["accepted"] for c in res.candidates if c["step"] == "end"][-1] is False


def test_dask_search_equals_serial_and_runs_elements_in_parallel():
    ne = SearchSpec(
        z=10,
        start=(WTBSParameters(9.943e-2, 1.945, 4.988, 1.392),),
        windows=tuple(parse_nbs("s:1:10,p:1:6")),
        reference=-128.547098109,
        threshold=5e-3,
        nucleus="point",
        options=HF,
        newuoa=NewuoaOptions(rhobeg=0.1, rhoend=1e-3, maxfun=15),
    )
    serial = search_elements([he_spec(), ne], batch=2)
    with dask_client(2, processes=False) as client:
        parallel = search_elements([he_spec(), ne], DaskExecutor(client), batch=2)
    for a, b in zip(serial, parallel):
        assert a.nbs() == b.nbs()
        assert a.energy == pytest.approx(b.energy, abs=1e-10)
    assert parallel[1].relative_error <= 5e-3 and len(parallel[1].candidates) > 3


def test_search_errors():
    with pytest.raises(InputError, match="start from larger windows"):
        size_search(he_spec(threshold=1e-9, nbs="s:1:6"))
    with pytest.raises(InputError, match="must be negative"):
        SearchSpec(z=2, start=(WTBSParameters(0.1, 2, 3, 1),), windows=(Window(0, 1, 5),), reference=2.0)
    assert occupied_per_l(36, True, 2) == [4, 3, 1]
    assert occupied_per_l(36, False, 2) == [4, 3, 1]
    # Pd 4d10 5s0 given explicitly: 4 s, 3 p and 2 d shells (Madelung would give 5s2 4d8: 5 s shells)
    assert occupied_per_l(46, True, 2, [(4, 0.0), (3, 0.0), (3, 0.0), (2, 0.0), (2, 0.0)]) == [4, 3, 2]
    assert occupied_per_l(46, True, 2) == [5, 3, 2]


def test_missing_dask_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import now raises ImportError
    with pytest.raises(InputError, match=r"needs dask.distributed.*pip install 'hartree\[distributed\]'"):
        with dask_client(1):
            pass


def test_basis_search_command(tmp_path, capsys):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"He": {"energy": HE_LIMIT}, "comment": "numerical HF"}))
    out = tmp_path / "bs.json"
    argv = [
        "basis-search",
        "He",
        "--reference",
        str(ref),
        "--nonrelativistic",
        "--threshold",
        "2e-6",
        "--nucleus",
        "point",
        "--margin",
        "-6",
        "--maxfun",
        "40",
        "--rhobeg",
        "0.1",
        "--rhoend",
        "1e-3",
        "--workers",
        "1",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())["results"][0]
    assert doc["meets_threshold"] and doc["relative_error"] <= 2e-6
    assert f"He: {doc['nbs']}  E = {doc['energy']:.10f} Eh  rel. error {doc['relative_error']:.2e}" in text
    exps = wtbs_exponents([WTBSParameters(*doc["groups"][0])], parse_nbs(doc["nbs"]))
    assert kernel(2, exps, make_nucleus(2), HF).energy == pytest.approx(doc["energy"], abs=1e-10)
    # errors: element missing from the reference file, unreadable JSON
    assert main(["basis-search", "Ne", "--reference", str(ref)]) == 2
    assert "has no energy for Ne" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    assert main(["basis-search", "He", "--reference", str(bad)]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    # per-κ windows are not searched (one window per l)
    assert (
        main(
            [
                "basis-search",
                "He",
                "--reference",
                str(ref),
                "--alpha",
                "0.1",
                "--beta",
                "2",
                "--delta",
                "3",
                "--gamma",
                "1",
                "--nbs",
                "s1/2:1:10",
            ]
        )
        == 2
    )
    assert "one window per l" in capsys.readouterr().err
