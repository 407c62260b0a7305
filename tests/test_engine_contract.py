"""The engine contract (hartree.engine.IntegralEngine): both engines implement all of it with
the same signatures, the GPU engine can be built and inspected without a GPU, and the SCF
(kernel, driver, SAD guess) calls nothing outside the contract."""

import inspect

import numpy as np
import pytest

from hartree.basis import load_basis
from hartree.df.engine import FittedEngine
from hartree.engine import IntegralEngine
from hartree.gpu.engine import GPUEngine
from hartree.integrals.engine import CPUEngine
from hartree.molecule import Molecule

WATER = "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692"


def _contract_members():
    """(methods, properties, attributes) the protocol declares."""
    methods, props = [], []
    for name, value in vars(IntegralEngine).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            props.append(name)
        elif callable(value):
            methods.append(name)
    return methods, props, [n for n in IntegralEngine.__annotations__ if not n.startswith("_")]


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.fixture(scope="module")
def water():
    mol = Molecule.from_string(WATER)
    return mol, load_basis(mol, "sto-3g")


def test_the_contract_declares_what_methods_need():
    methods, props, attrs = _contract_members()
    assert set(methods) == {
        "array_module",
        "use",
        "for_molecule",
        "overlap",
        "kinetic",
        "nuclear",
        "hcore",
        "dipole",
        "jk",
        "int2c2e",
        "int3c2e",
        "int2c2e_gradient",
        "int3c2e_gradient",
        "one_electron_gradient",
        "two_electron_gradient",
    }
    assert set(props) == {"device", "scf_note"}
    assert set(attrs) == {"molecule", "basis", "screening_threshold", "notes"}


@pytest.mark.parametrize("engine_cls", [CPUEngine, GPUEngine, FittedEngine])
def test_both_engines_have_every_member_with_the_contract_signature(engine_cls):
    """Both engines, and the density-fitting wrapper (hartree.df.engine.FittedEngine)."""
    methods, props, _ = _contract_members()
    for name in methods:
        assert _params(getattr(engine_cls, name)) == _params(getattr(IntegralEngine, name)), name
    for name in props:
        assert isinstance(getattr(engine_cls, name, None), property) or name == "device", name


def test_both_engines_are_contract_instances_and_the_gpu_engine_needs_no_gpu(water):
    """Building a GPUEngine (no backend given) and checking it against the protocol creates no
    backend: no device is touched before the first call that needs one."""
    mol, basis = water
    cpu = CPUEngine(mol, basis, screening_threshold=1e-12)
    gpu = GPUEngine(mol, basis, screening_threshold=1e-12)
    for eng in (cpu, gpu):
        assert isinstance(eng, IntegralEngine)
        assert eng.notes == [] and eng.screening_threshold == 1e-12
        assert eng.molecule is mol and eng.basis is basis
    assert gpu._backends is None  # nothing created by construction or the isinstance check
    assert cpu.array_module() is np and cpu.scf_note is None
    with cpu.use():
        pass
    other = cpu.for_molecule(mol, basis)
    assert isinstance(other, CPUEngine) and other.screening_threshold == 1e-12
    assert not hasattr(gpu, "eri")  # the full ERI tensor is not part of the contract


def test_nuclear_of_given_charges(water):
    mol, basis = water
    eng = CPUEngine(mol, basis)
    np.testing.assert_array_equal(eng.nuclear(mol.numbers, mol.coords), eng.nuclear())
    one = eng.nuclear([8.0], mol.coords[:1])
    two = eng.nuclear([1.0, 1.0], mol.coords[1:])
    np.testing.assert_allclose(one + two, eng.nuclear(), rtol=0, atol=1e-13)
    with pytest.raises(TypeError, match="both"):
        eng.nuclear([8.0])


class _ContractOnly:
    """Wraps an engine and lets through only the contract's members (an AssertionError for
    anything else), counting ``for_molecule`` calls."""

    def __init__(self, engine):
        methods, props, attrs = _contract_members()
        self._inner = engine
        self._allowed = set(methods) | set(props) | set(attrs)
        self.derived = 0

    def __getattr__(self, name):
        if name not in self._allowed:
            raise AssertionError(f"the SCF asked the engine for {name!r}, which is not in the contract")
        if name == "for_molecule":
            self.derived += 1
        return getattr(self._inner, name)


@pytest.mark.parametrize("method,guess", [("rhf", "sad"), ("uhf", "core"), ("rohf", "sad")])
def test_the_scf_calls_only_the_contract(water, method, guess):
    from hartree.scf import guess as sad
    from hartree.scf import run

    mol, basis = water
    mol = Molecule.from_string(WATER, charge=1, multiplicity=2) if method != "rhf" else mol
    sad._SAD_CACHE.clear()
    eng = _ContractOnly(CPUEngine(mol, basis))
    res = run(mol, basis, method, engine=eng, guess=guess, conv_tol=1e-9)
    ref = run(mol, basis, method, device="cpu", guess=guess, conv_tol=1e-9)
    assert res.converged and abs(res.energy - ref.energy) < 1e-10
    assert eng.derived == 0  # the host SAD guess builds no engine at all
