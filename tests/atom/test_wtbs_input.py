"""WTBS exponent generation, the thesis-format input reader and its error messages."""

import os

import numpy as np
import pytest

from hartree.atom import read_input, run, run_input
from hartree.atom.input import parse_input
from hartree.atom.wtbs import Window, WTBSParameters, parse_nbs, wtbs_exponents, wtbs_pool
from hartree.errors import InputError

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "atom", "ne.inp")


def test_pool_follows_recursive_huzinaga_klobukowski_form():
    # zeta_1 = a, zeta_2 = a b, zeta_k = zeta_{k-1} b (1 + g (k/N)^d), computed by hand
    a, b, d, g, n = 0.1, 2.0, 3.0, 1.5, 4
    pool = wtbs_pool(WTBSParameters(alpha=a, beta=b, delta=d, gamma=g), n)
    z3 = a * b * b * (1 + g * (3 / 4) ** 3)
    z4 = z3 * b * (1 + g * 1.0)
    np.testing.assert_allclose(pool, [a, a * b, z3, z4], rtol=1e-15)


def test_windows_take_slices_of_one_pool():
    params = [WTBSParameters(5.716e-2, 1.749, 5.695, 1.486)]  # Rn, Table 2.1 (alpha, beta, delta, gamma)
    exps = wtbs_exponents(params, parse_nbs("s:1:32,p:1:27,d:3:23,f:6:19"))
    pool = wtbs_pool(params[0], 32)
    assert [len(e) for e in exps] == [32, 27, 21, 14]
    np.testing.assert_array_equal(exps[2], pool[2:23])
    np.testing.assert_array_equal(exps[3], pool[5:19])


def test_pool_rejects_non_positive_exponents():
    with pytest.raises(InputError, match=r"give exponents outside \[1e-12, 1e\+16\]"):
        wtbs_pool(WTBSParameters(alpha=0.1, beta=2.0, delta=1.0, gamma=-3.0), 6)
    with pytest.raises(InputError, match="exponents outside"):  # overflow, no warning
        wtbs_pool(WTBSParameters(alpha=0.1, beta=1e200, delta=1.0, gamma=1.0), 6)


def test_nbs_errors():
    with pytest.raises(InputError, match="start index 5 is beyond the end index 3"):
        parse_nbs("s:1:10,p:5:3")
    with pytest.raises(InputError, match="must look like s:1:32"):
        parse_nbs("x:1:3")
    with pytest.raises(InputError, match="no basis window for symmetry p"):
        wtbs_exponents([WTBSParameters(0.1, 2, 3, 1)], [Window(0, 1, 5), Window(2, 1, 4)])
    with pytest.raises(InputError, match="outside the pool"):
        wtbs_exponents([WTBSParameters(0.1, 2, 3, 1)], [Window(0, 1, 12)], pool_sizes=[10])


def test_example_input_reads_and_matches_command_line_basis():
    job = read_input(EXAMPLE)
    assert job.z == 10 and job.nucleus.model == "gaussian" and job.jobtype == "energy"
    assert [len(e) for e in job.exponents] == [23, 16]
    assert job.block_shells == [2, 1, 1]
    assert job.options.thdsl == 1e-7  # Fortran 1.0d-7
    direct = wtbs_exponents([WTBSParameters(9.943e-2, 1.945, 4.988, 1.392)], parse_nbs("s:1:23,p:1:16"))
    for a, b in zip(job.exponents, direct):
        np.testing.assert_array_equal(a, b)


GOOD = """He test
 $contrl jobtype='energy' $end
 $nuc znuc=2 nucmdl=1 $end
 $bas nsym=1 bastype='wtbs' ngroup=1 $end
 $wtbs wtbspara=8.140e-2,1.953,4.504,1.515 nbs=18 start=1 groups=1 $end
 $econfig nclose=1 nopen=0 freeel=0 $end
 $scf maxitr=50 $end
"""


def _parse(text):
    return parse_input(text.splitlines(), "t.inp")


def test_input_energy_equals_api_energy():
    job = _parse(GOOD)
    from hartree.atom import kernel

    e_file = kernel(job.z, job.exponents, job.nucleus, job.options, block_shells=job.block_shells).energy
    e_api = run("He", wtbs=(8.140e-2, 1.953, 4.504, 1.515), nbs="s:1:18").energy
    assert e_file == pytest.approx(e_api, abs=1e-12)


@pytest.mark.parametrize(
    "edit,message",
    [
        (
            lambda t: t.replace(" $wtbs wtbspara=8.140e-2,1.953,4.504,1.515 nbs=18 start=1 groups=1 $end\n", ""),
            r"t.inp: missing group \$wtbs",
        ),
        (lambda t: t.replace("$econfig nclose=1 nopen=0 freeel=0 $end", ""), r"missing group \$econfig"),
        (lambda t: t.replace("maxitr=50", "maxiter=50"), r"t.inp:7: unknown keyword 'maxiter' in group \$scf"),
        (lambda t: t.replace("$scf", "$scff"), r"t.inp:7: unknown group '\$scff'"),
        (lambda t: t.replace("groups=1 $end", "groups=1 npool=10 $end"), r"t.inp:5: .*outside the pool"),
        (lambda t: t.replace("nclose=1", "nclose=19"), r"t.inp:6: more electrons than spinors in s1/2"),
        (lambda t: t.replace("nbs=18", "nbs=0"), r"t.inp:5: nbs of s1/2 must be at least 1"),
        (lambda t: t.replace("jobtype='energy'", "jobtype='bsopt'"), r"missing group \$newuoa"),
        (lambda t: t.replace("nucmdl=1", "nucmdl=7"), r"t.inp:3: nucmdl must be"),
        (lambda t: t.replace("nbs=18", "nbs=18,3"), r"t.inp:5: key 'nbs' needs 1 values"),
        (
            lambda t: t.replace("wtbspara=8.140e-2,1.953,4.504,1.515", "wtbspara=8.140e-2,1.953"),
            r"wtbspara needs 4 numbers per group",
        ),
        (lambda t: t.replace(" $scf maxitr=50 $end", " $scf maxitr=50"), r"t.inp:7: group \$scf is not closed"),
    ],
)
def test_input_errors_name_line_and_key(edit, message):
    with pytest.raises(InputError, match=message):
        _parse(edit(GOOD))


def test_start_beyond_end_of_pool_in_input():
    # a window starting beyond the end of the pool (start=19 > npool=18) names the keys
    text = GOOD.replace("nbs=18 start=1", "nbs=2 start=19").replace("groups=1 $end", "groups=1 npool=18 $end")
    with pytest.raises(InputError, match=r"t.inp:5: window 19:20 of s lies outside the pool .*npool"):
        _parse(text)


def test_rdin_basis_and_per_kappa_windows():
    text = GOOD.replace("bastype='wtbs'", "bastype='rdin'").replace(
        " $wtbs wtbspara=8.140e-2,1.953,4.504,1.515 nbs=18 start=1 groups=1 $end\n", " 3\n 0.5\n 2.0\n 8.0d0\n"
    )
    job = _parse(text)
    np.testing.assert_array_equal(job.exponents[0], [0.5, 2.0, 8.0])
    # nbs/start/groups per κ symmetry (thesis §3.5): p1/2 and p3/2 take their own windows
    ne = open(EXAMPLE).read()
    text = ne.replace("nbs=23,16,16 start=1,1,1 groups=1,1,1", "nbs=23,16,15 start=1,2,1 groups=1,1,1")
    job = parse_input(text.splitlines(), "ne.inp")
    pool = wtbs_pool(WTBSParameters(9.943e-2, 1.945, 4.988, 1.392), 23)
    assert job.windows == [Window(0, 1, 23), Window(1, 2, 17, 0, 1), Window(1, 1, 15, 0, -2)]
    np.testing.assert_array_equal(job.exponents[1][0], pool[1:17])  # p1/2
    np.testing.assert_array_equal(job.exponents[1][1], pool[0:15])  # p3/2
    nonrel = text.replace("c=137.0359895", "c=137.0359895 relativistic=.false.")
    with pytest.raises(
        InputError,
        match=r"ne.inp:6: 'nbs' differs between the two κ symmetries of l=1; "
        r"relativistic=.false. needs one window per l",
    ):
        parse_input(nonrel.splitlines(), "ne.inp")
    # rdin: different lists for p1/2 and p3/2 give a per-κ pair
    rdin = (
        ne.replace("bastype='wtbs' ngroup=1", "bastype='rdin'")
        .replace(" $wtbs wtbspara=9.943e-2, 1.945, 4.988, 1.392   ! alpha, beta, delta, gamma\n", "")
        .replace("       nbs=23,16,16 start=1,1,1 groups=1,1,1 $end\n", "3\n0.5\n3.0\n20.0\n2\n0.4\n2.0\n2\n0.3\n1.5\n")
    )
    job = parse_input(rdin.splitlines(), "ne.inp")
    assert [list(x) for x in job.exponents[1]] == [[0.4, 2.0], [0.3, 1.5]]


def test_per_kappa_windows_parse_and_equal_windows_match_shared():
    params = [WTBSParameters(9.943e-2, 1.945, 4.988, 1.392)]
    wins = parse_nbs("s:1:23,p1/2:1:16,p3/2:2:16:1")
    assert wins[1:] == [Window(1, 1, 16, 0, 1), Window(1, 2, 16, 0, -2)]
    exps = wtbs_exponents(params, wins)
    pool = wtbs_pool(params[0], 23)
    np.testing.assert_array_equal(exps[1][0], pool[0:16])
    np.testing.assert_array_equal(exps[1][1], pool[1:16])
    for bad, message in (
        ("s:1:10,p1/2:1:5", "per-κ windows of l = 1 need both p1/2 and p3/2"),
        ("s:1:10,p5/2:1:5", "p5/2 is not a symmetry"),
        ("s:1:10,p:1:5,p3/2:1:5", "symmetry p3/2 has two windows"),
    ):
        with pytest.raises(InputError, match=message):
            wtbs_exponents(params, parse_nbs(bad))
    # identical per-κ windows are the shared basis: same energy to rounding
    shared = run("Ne", wtbs=(9.943e-2, 1.945, 4.988, 1.392), nbs="s:1:12,p:1:8", device="cpu")
    split = run("Ne", wtbs=(9.943e-2, 1.945, 4.988, 1.392), nbs="s:1:12,p1/2:1:8,p3/2:1:8", device="cpu")
    assert split.energy == pytest.approx(shared.energy, abs=1e-10)
    assert split.to_dict()["basis"][1] == {"symmetry": "p1/2", "exponents": list(shared.block_exponents[1])}


def test_run_input_example_energy():
    # thesis Ne set (Table 2.1), Gaussian nucleus: close to the Dirac-Fock limit
    # -128.6919... (5e-9 relative criterion of the thesis: |ΔE| < 6.4e-7 Eh)
    _, result = run_input(EXAMPLE)
    assert result.converged
    assert result.energy == pytest.approx(-128.6919294, abs=2e-6)


def test_open_shell_input_matches_default_configuration():
    path = os.path.join(os.path.dirname(EXAMPLE), "n_open.inp")
    job, result = run_input(path)
    assert job.block_shells == [2, 1, 0] and job.open_shells == [0.0, 0.0, 1.0]
    assert result.occupations == [[2.0, 2.0], [2.0], [1.0]]
    ref = run("N", wtbs=(5.976e-2, 1.923, 5.183, 1.442), nbs="s:1:23,p:1:16", nucleus="gaussian")
    assert result.energy == pytest.approx(ref.energy, abs=1e-10)
    bad = open(path).read().replace("freeel=0,0,1", "freeel=0,0,5")
    with pytest.raises(InputError, match=r"n.inp:6: freeel of p3/2 must be in \(0, 4\]"):
        parse_input(bad.splitlines(), "n.inp")


AUTOGEN = """N, all jj configurations
 $contrl jobtype='energy' device='cpu' $end
 $nuc znuc=7 nucmdl=1 $end
 $bas nsym=3 bastype='wtbs' $end
 $wtbs wtbspara=5.976e-2, 1.923, 5.183, 1.442 nbs=14,9,9 $end
 $econfig nclose=2,1,0 nopen=0,0,1 freeel=0,0,1 {extra} $end
{lines} $scf maxitr=60 $end
"""


def test_autogen_and_nconf_configurations_in_input():
    job = parse_input(AUTOGEN.format(extra="autogen=.true.", lines="").splitlines())
    assert [(c[0], c[1], c[3]) for c in job.configurations] == [
        ([2, 0, 0], [0.0, 0.0, 3.0], "2p3/2^3"),
        ([2, 0, 0], [0.0, 1.0, 2.0], "2p1/2^1 2p3/2^2"),
        ([2, 1, 0], [0.0, 0.0, 1.0], "2p1/2^2 2p3/2^1"),
    ]
    assert job.options.device == "cpu"
    # nconf lines: electrons above nclose per symmetry (2 on top of p1/2 closes it)
    job = parse_input(
        AUTOGEN.format(extra="nconf=2", lines="0 0 3\n0 2 1\n").replace("nclose=2,1,0", "nclose=2,0,0").splitlines()
    )
    assert [(c[0], c[1], c[2]) for c in job.configurations] == [
        ([2, 0, 0], [0.0, 0.0, 3.0], 0.5),
        ([2, 1, 0], [0.0, 0.0, 1.0], 0.5),
    ]
    for extra, lines, message in (
        ("nconf=2", "0 0 3\n", "nconf=2 but 1 configuration"),
        ("nconf=1", "0 0 5\n", "do not fit one p3/2 shell"),
        ("autogen=.true. nconf=1", "0 0 3\n", "either autogen"),
        ("", "0 0 3\n", "need nconf"),
    ):
        with pytest.raises(InputError, match=message):
            parse_input(AUTOGEN.format(extra=extra, lines=lines).splitlines())
    with pytest.raises(InputError, match="device must be"):
        parse_input(AUTOGEN.format(extra="", lines="").replace("device='cpu'", "device='tpu'").splitlines())


def test_thesis_table_rows():
    from hartree.atom.wtbs import THESIS_TABLE_2_1, thesis_basis

    # rows as printed in Table 2.1 (alpha, beta, delta, gamma; windows)
    assert THESIS_TABLE_2_1["Xe"] == (54, (5.981e-2, 1.802, 5.862, 1.490), "s:1:30,p:1:25,d:3:20", "1S")
    assert THESIS_TABLE_2_1["Kr"][1:3] == ((6.804e-2, 1.859, 5.510, 1.370), "s:1:29,p:1:23,d:3:17")
    assert len(THESIS_TABLE_2_1) == 80 and "Yb" not in THESIS_TABLE_2_1
    params, windows = thesis_basis(86)
    assert params == WTBSParameters(5.716e-2, 1.749, 5.695, 1.486) and windows[3] == Window(3, 6, 19)
    with pytest.raises(InputError, match="Table 2.1 of the thesis has no basis set for Yb"):
        thesis_basis("Yb")
