"""The table of integral kinds (hartree.integrals.spec) against the code it names."""

import inspect

import numpy as np
import pytest

from hartree.basis import MAX_L
from hartree.engine import IntegralEngine
from hartree.gpu.engine import GPUEngine
from hartree.gpu.tables import RysTable
from hartree.integrals import spec
from hartree.integrals.engine import CPUEngine
from hartree.integrals.eri_kernel import LMAX_ERI
from hartree.integrals.one_electron import MAX_L as ONE_ELECTRON_MAX_L
from hartree.integrals.rys import MAX_NROOTS
from hartree.integrals.three_center_deriv import LTOT_MAX_DERIV
from hartree.integrals.three_center_kernels import LTOT_MAX

IMPLEMENTED = [k for k in spec.KINDS if k.implemented]
PLANNED = [k for k in spec.KINDS if not k.implemented]
#: kinds served on the CPU only so far (their GPU kernels are not written; nothing routes there)
CPU_ONLY: set[str] = set()


def test_names_are_unique_and_the_planned_kinds_are_listed():
    names = [k.name for k in spec.KINDS]
    assert len(names) == len(set(names))
    assert {"overlap", "kinetic", "nuclear", "dipole", "eri", "int3c2e", "int2c2e"} <= {k.name for k in IMPLEMENTED}
    assert {"ao_values", "ecp"} <= {k.name for k in PLANNED}
    assert {
        "one_electron_deriv1",
        "eri_deriv1",
        "eri_erf",
        "int3c2e_deriv1",
        "int2c2e_deriv1",
        "int3c2e_erf",
        "int2c2e_erf",
        "int3c2e_erf_deriv1",
        "int2c2e_erf_deriv1",
    } <= {k.name for k in IMPLEMENTED}


@pytest.mark.parametrize("k", IMPLEMENTED, ids=lambda k: k.name)
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_named_functions_exist(k, device):
    impl = getattr(k, device)
    if device == "gpu" and k.name in CPU_ONLY:
        assert impl is None and k.engine_method is None, f"{k.name} has a GPU implementation: drop it from CPU_ONLY"
        with pytest.raises(NotImplementedError):
            spec.implementation(k.name, device)
        return
    assert impl is not None, f"{k.name}: no {device} implementation named"
    fn = spec.implementation(k.name, device)
    assert callable(fn), impl
    assert fn.__qualname__.endswith(impl.attribute.split(".")[-1])


@pytest.mark.parametrize("k", PLANNED, ids=lambda k: k.name)
def test_planned_kinds_route_nowhere(k):
    assert k.cpu is None and k.gpu is None and k.engine_method is None and k.max_l is None
    for device in ("cpu", "gpu"):
        with pytest.raises(NotImplementedError):
            spec.implementation(k.name, device)


@pytest.mark.parametrize("k", IMPLEMENTED, ids=lambda k: k.name)
def test_limits_are_the_modules_limits(k):
    """max_l is the basis model's (the derivative kernels': one less, for the raised shell);
    max_l_total fits the Rys tables of both devices and the kernels' own limits."""
    from hartree.integrals import eri_deriv, one_electron_deriv

    if k.name == "eri_deriv1":
        assert k.max_l == eri_deriv.MAX_L_DERIV
    elif k.name == "one_electron_deriv1":
        assert k.max_l == one_electron_deriv.MAX_L_DERIV
    else:
        assert k.max_l == MAX_L
    assert k.max_l_total == k.centres * k.max_l
    nroots = k.max_l_total // 2 + 1
    assert nroots <= MAX_NROOTS and nroots <= RysTable.load().max_nroots
    if k.name == "eri":
        assert LMAX_ERI >= k.max_l
    elif k.name in ("int3c2e", "int3c2e_erf", "int2c2e", "int2c2e_erf"):
        assert LTOT_MAX >= k.max_l_total
    elif k.name in ("int3c2e_deriv1", "int2c2e_deriv1", "int3c2e_erf_deriv1", "int2c2e_erf_deriv1"):
        assert LTOT_MAX_DERIV >= k.max_l_total
    elif k.centres == 2:
        assert ONE_ELECTRON_MAX_L >= k.max_l


def test_engines_serve_the_kinds_the_table_says():
    """Each engine_method is a member of the contract and of both engines, with the
    contract's signature; the contract declares no integral kind the table lacks."""
    methods = {k.engine_method for k in IMPLEMENTED if k.engine_method}
    assert methods == {
        "overlap",
        "kinetic",
        "nuclear",
        "dipole",
        "jk",
        "int3c2e",
        "int2c2e",
        "int3c2e_gradient",
        "int2c2e_gradient",
        "one_electron_gradient",
        "two_electron_gradient",
    }
    for name in methods:
        want = inspect.signature(getattr(IntegralEngine, name))
        for engine in (CPUEngine, GPUEngine):
            assert list(inspect.signature(getattr(engine, name)).parameters) == list(want.parameters), (engine, name)


@pytest.fixture(scope="module")
def water():
    from hartree.basis import load_basis
    from hartree.molecule import Molecule

    mol = Molecule.from_string("O 0 0 0.12; H 0 0.76 -0.47; H 0 -0.76 -0.47")
    return mol, load_basis(mol, "6-31g*")


def test_cpu_engine_serves_through_the_named_functions(water):
    """On the CPU the engine's matrices are those of the table's functions."""
    from hartree.basis import load_basis

    mol, basis = water
    engine = CPUEngine(mol, basis)
    np.testing.assert_array_equal(engine.overlap(), spec.implementation("overlap", "cpu")(basis))
    np.testing.assert_array_equal(engine.kinetic(), spec.implementation("kinetic", "cpu")(basis))
    numbers = np.asarray(mol.numbers, dtype=np.float64)
    np.testing.assert_array_equal(engine.nuclear(), spec.implementation("nuclear", "cpu")(basis, numbers, mol.coords))
    np.testing.assert_array_equal(engine.dipole(), spec.implementation("dipole", "cpu")(basis, np.zeros(3)))
    D = np.random.default_rng(0).standard_normal((basis.nao, basis.nao))
    D = D + D.T
    J, K = engine.jk(D)
    J2, K2 = spec.implementation("eri", "cpu")(basis, D)
    np.testing.assert_allclose(J, J2, rtol=0, atol=1e-12 * np.abs(J).max())
    np.testing.assert_allclose(K, K2, rtol=0, atol=1e-12 * np.abs(K).max())
    aux = load_basis(mol, "def2-universal-jkfit")
    np.testing.assert_array_equal(engine.int2c2e(aux), spec.implementation("int2c2e", "cpu")(aux))
    np.testing.assert_array_equal(
        engine.int3c2e(aux, (2, 5)), spec.implementation("int3c2e", "cpu")(basis, aux, (2, 5))
    )
    np.testing.assert_array_equal(engine.int2c2e(aux, 0.3), spec.implementation("int2c2e_erf", "cpu")(aux, omega=0.3))
    np.testing.assert_array_equal(
        engine.int3c2e(aux, (2, 5), 0.3), spec.implementation("int3c2e_erf", "cpu")(basis, aux, (2, 5), omega=0.3)
    )
    rng = np.random.default_rng(1)
    g3 = rng.standard_normal((basis.nao, basis.nao, int(aux.ao_loc[5] - aux.ao_loc[2])))
    g3 = g3 + g3.transpose(1, 0, 2)
    g2 = rng.standard_normal((aux.nao, aux.nao))
    g2 = g2 + g2.T
    np.testing.assert_array_equal(
        engine.int3c2e_gradient(aux, g3, (2, 5), 0.3),
        spec.implementation("int3c2e_erf_deriv1", "cpu")(basis, aux, g3, (2, 5), natm=mol.natm, omega=0.3),
    )
    np.testing.assert_array_equal(
        engine.int2c2e_gradient(aux, g2, 0.3),
        spec.implementation("int2c2e_erf_deriv1", "cpu")(aux, g2, natm=mol.natm, omega=0.3),
    )
