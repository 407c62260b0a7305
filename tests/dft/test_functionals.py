"""Functional names -> libxc: the components, families and exact-exchange parameters
against the published definitions; errors; hartree without PySCF."""

import subprocess
import sys

import pytest

from hartree.dft.functionals import ALIASES, parse_functional
from hartree.errors import InputError


@pytest.mark.parametrize(
    "name, family, components",
    [
        ("svwn", "LDA", ["LDA_X", "LDA_C_VWN"]),  # Slater + VWN5
        ("BLYP", "GGA", ["GGA_X_B88", "GGA_C_LYP"]),
        ("pbe", "GGA", ["GGA_X_PBE", "GGA_C_PBE"]),
        ("b3lyp", "GGA", ["HYB_GGA_XC_B3LYP"]),  # libxc's B3LYP, with VWN-RPA
        ("pbe0", "GGA", ["HYB_GGA_XC_PBEH"]),
        ("tpss", "MGGA", ["MGGA_X_TPSS", "MGGA_C_TPSS"]),
        ("scan", "MGGA", ["MGGA_X_SCAN", "MGGA_C_SCAN"]),
        ("r2scan", "MGGA", ["MGGA_X_R2SCAN", "MGGA_C_R2SCAN"]),
        ("M06-2X", "MGGA", ["HYB_MGGA_X_M06_2X", "MGGA_C_M06_2X"]),
        ("cam-b3lyp", "GGA", ["HYB_GGA_XC_CAM_B3LYP"]),
        ("wb97x", "GGA", ["HYB_GGA_XC_WB97X"]),
        ("wb97x-v", "GGA", ["HYB_GGA_XC_WB97X_V"]),
        ("wb97m-v", "MGGA", ["HYB_MGGA_XC_WB97M_V"]),
        ("b97m-v", "MGGA", ["MGGA_XC_B97M_V"]),
        ("gga_x_pbe, gga_c_pbe", "GGA", ["GGA_X_PBE", "GGA_C_PBE"]),  # libxc names pass through
    ],
)
def test_names_resolve_to_libxc_components(name, family, components):
    f = parse_functional(name)
    assert f.family == family
    assert [c.name for c in f.components] == components
    assert all(c.factor == 1.0 for c in f.components)
    assert f.references


def test_every_alias_resolves():
    for name in ALIASES:
        assert parse_functional(name).family in ("LDA", "GGA", "MGGA")


@pytest.mark.parametrize(
    "name, hf, omega, short_range, long_range, vv10",
    [
        ("pbe", 0.0, 0.0, 0.0, 0.0, None),
        ("b3lyp", 0.20, 0.0, 0.20, 0.20, None),  # Stephens et al. 1994
        ("pbe0", 0.25, 0.0, 0.25, 0.25, None),  # Adamo and Barone 1999
        ("m06-2x", 0.54, 0.0, 0.54, 0.54, None),  # Zhao and Truhlar 2008
        ("cam-b3lyp", 0.65, 0.33, 0.19, 0.65, None),  # Yanai, Tew, Handy 2004: α=0.19, β=0.46, μ=0.33
        ("wb97x", 1.0, 0.3, 0.157706, 1.0, None),  # Chai and Head-Gordon 2008
        ("wb97x-v", 1.0, 0.3, 0.167, 1.0, (6.0, 0.01)),  # Mardirossian and Head-Gordon 2014
        ("wb97m-v", 1.0, 0.3, 0.15, 1.0, (6.0, 0.01)),  # Mardirossian and Head-Gordon 2016
        ("b97m-v", 0.0, 0.0, 0.0, 0.0, (6.0, 0.01)),  # Mardirossian and Head-Gordon 2015
    ],
)
def test_exact_exchange_and_range_separation(name, hf, omega, short_range, long_range, vv10):
    f = parse_functional(name)
    assert f.hf_exchange == pytest.approx(hf, abs=1e-12)
    assert f.omega == pytest.approx(omega, abs=1e-12)
    assert f.alpha + f.beta == pytest.approx(short_range, abs=1e-12)  # erfc part
    assert f.alpha == pytest.approx(long_range, abs=1e-12)  # erf part
    assert f.is_hybrid == (long_range != 0.0)
    assert f.is_range_separated == (omega != 0.0)
    assert f.vv10 == vv10


@pytest.mark.parametrize(
    "name, message",
    [
        ("foo", "unknown functional 'foo'; use a libxc name"),
        ("hf", "'hf' is Hartree-Fock, not a density functional"),
        ("b3lyp-d3bj", "give the dispersion correction separately"),
        ("  ", "empty functional name"),
        ("MGGA_X_BR89", "needs the Laplacian"),
    ],
)
def test_bad_names_give_one_line(name, message):
    with pytest.raises(InputError, match=message) as error:
        parse_functional(name)
    assert "\n" not in str(error.value)


def test_hartree_works_without_pyscf_until_a_functional_is_asked_for():
    """A child process where PySCF cannot be imported: hartree and its grids import and
    run; asking for a functional names the extra to install."""
    code = (
        "import sys; sys.modules['pyscf'] = None\n"
        "import hartree, hartree.dft\n"
        "from hartree.molecule import Molecule\n"
        "grid = hartree.dft.make_grid(Molecule.from_string('H 0 0 0; H 0 0 0.74'), level=1)\n"
        "print(grid.npoints > 0)\n"
        "try:\n"
        "    hartree.dft.parse_functional('pbe')\n"
        "except hartree.errors.InputError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "True",
        'DFT needs PySCF for its libxc (exchange-correlation values): pip install "hartree[dft]"',
    ]
