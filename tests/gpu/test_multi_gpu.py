"""J/K on several devices (hartree.gpu.multi): the work items cover every unique quartet
once, and the reduced J/K equal the single-device result (1e-13 relative: only the order
of the sums differs).  Without a GPU, two *emulated* devices (g++-compiled kernels, each
with its own accumulators and host thread) stand in; with one GPU, two backends on the
same device exercise the threads, queue and reduction; with two GPUs, the real thing.
"""

import threading

import numpy as np
import pytest

from hartree.device import emulator
from hartree.gpu import codegen
from hartree.molecule import Molecule

from .cases import CASES, build

needs_gxx = pytest.mark.skipif(not emulator.available(), reason="g++ not available")

_LOCK = threading.Lock()


class TwinDevice(emulator.EmulatedBackend):
    """An emulated device for the multi-device tests: its own accumulators and host
    thread, kernels run by g++ code.  Launches are serialised by a lock (older shims kept
    block indices in globals).  With a `meet` barrier, the first J/K launch of each device
    waits until every device holds an item, so that each one provably takes work (on
    GPUs the split depends on timing)."""

    def __init__(self, meet=None):
        super().__init__()
        self.launches = 0
        self.meet = meet
        self.pair_args = []  # bra/ket shell-pair arrays each J/K launch received

    def compile(self, specs):
        return [_Locked(m, self) for m in super().compile(specs)]


class _Locked:
    def __init__(self, module, owner):
        self.module, self.owner = module, owner

    def launch(self, name, grid, block, args, stream=None):
        if name.startswith("jk_") and self.owner.launches == 0 and self.owner.meet:
            self.owner.meet.wait(timeout=60)
        with _LOCK:
            if name.startswith("jk_"):
                self.owner.launches += 1
                self.owner.pair_args += [args[3], args[7]]
            self.module.launch(name, grid, block, args, stream)


def hydrogen_chain(n=14):
    """n H atoms on a zigzag line (bohr): many s shell pairs, so the (ss|ss) class has
    several tiles and is cut into triangle blocks."""
    coords = np.array([[1.4 * i, 0.6 * (i % 2), 0.0] for i in range(n)])
    return Molecule(numbers=np.ones(n, dtype=int), coords=coords, charge=0, multiplicity=1 + n % 2, symbols=("H",) * n)


def _unique_quartets(builder, item):
    cost, cls, P, Q, tri = item
    n, m = P.npair, Q.npair
    return n * (n + 1) // 2 if tri else n * m


def test_split_items_cover_each_quartet_once():
    """Counted over all items, each class keeps exactly its unique quartets."""
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK
    from hartree.gpu.multi import split_items

    if not emulator.available():
        pytest.skip("g++ not available (the builder runs the Schwarz kernels)")
    mol = hydrogen_chain()
    basis = load_basis(mol, "6-31g")
    b = DirectJK(basis, emulator.EmulatedBackend(), threshold=0.0)
    launches = b.launch_list(1.0)
    items = split_items(launches, 2, 0.0, 1.0, pieces=8)
    assert len(items) > len(launches)  # the big class was cut
    per_class = {}
    for it in items:
        per_class[it[1]] = per_class.get(it[1], 0) + _unique_quartets(b, it)
    for _cost, cls, P, Q, tri in launches:
        n, m = P.npair, Q.npair
        assert per_class[cls] == (n * (n + 1) // 2 if tri else n * m), cls
    # costliest first, total estimated cost preserved
    costs = [it[0] for it in items]
    assert costs == sorted(costs, reverse=True)
    assert abs(sum(costs) - sum(t[0] for t in launches)) <= 1e-9 * sum(costs)
    # slices start at tile boundaries (tile screening data stays aligned)
    for it in items:
        assert it[2].tile_q.shape[0] == -(-it[2].npair // codegen.TILE)


@needs_gxx
@pytest.mark.parametrize("which", ["h_chain", "chno"])
def test_two_emulated_devices_match_one(which):
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK
    from hartree.gpu.multi import MultiJK

    if which == "h_chain":
        mol = hydrogen_chain()
        basis = load_basis(mol, "6-31g")
        rng = np.random.default_rng(7)
        d = rng.standard_normal((2, basis.nao, basis.nao)) / basis.nao
        dms = d + d.transpose(0, 2, 1)
    else:
        mol, basis, dms = build(CASES[0])
    J1, K1 = DirectJK(basis, emulator.EmulatedBackend()).jk(dms)
    meet = threading.Barrier(2)
    devs = [TwinDevice(meet), TwinDevice(meet)]
    multi = MultiJK(basis, devs)
    J2, K2 = multi.jk(dms)
    assert J2.shape == dms.shape and K2.shape == dms.shape
    np.testing.assert_allclose(J2, J1, rtol=0, atol=1e-13 * np.abs(J1).max())
    np.testing.assert_allclose(K2, K1, rtol=0, atol=1e-13 * np.abs(K1).max())
    assert all(d.launches > 0 for d in devs) and not meet.broken
    assert sum(multi.last_split.values()) == sum(d.launches for d in devs)
    # each device launched on its own copies of the pair data (on GPUs: its own memory)
    for dev, b in zip(devs, multi.builders):
        mine = [P.sh for P in b.pairs.values()]
        others = [P.sh for o in multi.builders if o is not b for P in o.pairs.values()]
        for a in dev.pair_args:
            assert any(np.shares_memory(a, m) for m in mine)
            assert not any(np.shares_memory(a, m) for m in others)
    # J only / K only through the same queue
    J3, K3 = multi.jk(dms[0], with_k=False)
    assert K3 is None
    np.testing.assert_allclose(J3, J1[0], rtol=0, atol=1e-11 * np.abs(J1).max())


@needs_gxx
def test_scf_on_two_emulated_devices_matches_cpu_engine():
    """Whole RHF through GPUEngine with two emulated devices (one-electron integrals from
    the generated kernels too) = CPU engine energy within 1e-9 Eh."""
    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.scf import run

    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    basis = load_basis(mol, "sto-3g")
    opts = dict(guess="core", conv_tol=1e-10)
    ref = run(mol, basis, device="cpu", **opts)
    eng = GPUEngine(mol, basis, backends=[TwinDevice(), TwinDevice()])
    res = run(mol, basis, engine=eng, **opts)
    assert res.converged and "2 emulated devices" in res.device
    assert abs(res.energy - ref.energy) < 1e-9
    np.testing.assert_allclose(res.dipole, ref.dipole, atol=1e-6)


@needs_gxx
def test_gradient_on_two_emulated_devices_matches_one():
    """MultiGradient: the H chain's (ss|ss) class cut into blocks and shared out; the
    two-electron gradient equals the one-device DirectGradient's (1e-12 relative: only
    the order of the sums differs), and each device took items."""
    from hartree.basis import load_basis
    from hartree.gpu.gradient import DirectGradient
    from hartree.gpu.jk_direct import DirectJK
    from hartree.gpu.multi import MultiGradient, MultiJK

    mol = hydrogen_chain()
    basis = load_basis(mol, "6-31g")
    rng = np.random.default_rng(11)
    d = rng.standard_normal((2, basis.nao, basis.nao)) / basis.nao
    d = d + d.transpose(0, 2, 1)
    ref = DirectGradient(DirectJK(basis, emulator.EmulatedBackend()), basis.shell_atom).gradient(d[0], d, 0.5, mol.natm)
    multi = MultiGradient(MultiJK(basis, [TwinDevice(), TwinDevice()]), basis.shell_atom)
    got = multi.gradient(d[0], d, 0.5, mol.natm)
    assert got.shape == (mol.natm, 3)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert len(multi.last_split) == 2 and sum(multi.last_split.values()) > 1


@needs_gxx
def test_scf_gradient_on_two_emulated_devices_matches_cpu():
    """The whole RHF gradient through GPUEngine with two emulated devices equals the CPU
    engine's (1e-8 Eh/bohr; the SCF converged to 1e-10).  Six H atoms in STO-3G: only s
    shells, so few kernels to compile with g++."""
    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine
    from hartree.gradients import scf_gradient
    from hartree.scf import run

    mol = hydrogen_chain(6)
    basis = load_basis(mol, "sto-3g")
    opts = dict(guess="core", conv_tol=1e-10)
    ref = scf_gradient(run(mol, basis, device="cpu", **opts))
    eng = GPUEngine(mol, basis, backends=[TwinDevice(), TwinDevice()])
    got = scf_gradient(run(mol, basis, engine=eng, **opts), eng)
    np.testing.assert_allclose(got.gradient, ref.gradient, rtol=0, atol=1e-8)
    assert sum(eng._gradient.last_split.values()) >= 1


class _Event:
    def __init__(self):
        self.polls = 0


class StreamedTwin(TwinDevice):
    """TwinDevice with the stream/event methods of CudaBackend (events finish after two
    polls), so that the in-flight bookkeeping of the CUDA path runs on the CPU."""

    def fork(self, n):
        return [f"stream{i}" for i in range(n)]

    def join(self, streams):
        self.joined = len(streams)

    def record(self, stream):
        return _Event()

    def done(self, event):
        event.polls += 1
        return event.polls > 2

    def to_here(self, x):
        return x.copy()


@needs_gxx
def test_inflight_bookkeeping_of_the_stream_path():
    from hartree.basis import load_basis
    from hartree.gpu.jk_direct import DirectJK
    from hartree.gpu.multi import MultiJK

    mol = hydrogen_chain()
    basis = load_basis(mol, "6-31g")
    dm = np.eye(basis.nao) / basis.nao
    J1, K1 = DirectJK(basis, emulator.EmulatedBackend()).jk(dm)
    devs = [StreamedTwin(), StreamedTwin()]
    multi = MultiJK(basis, devs)
    J2, K2 = multi.jk(dm)
    assert all(d.joined == multi.builders[0].nstreams for d in devs)
    np.testing.assert_allclose(J2, J1, rtol=0, atol=1e-13 * np.abs(J1).max())
    np.testing.assert_allclose(K2, K1, rtol=0, atol=1e-13 * np.abs(K1).max())


def test_parse_gpus():
    from hartree.device.selection import parse_gpus
    from hartree.errors import DeviceError, InputError

    assert parse_gpus(None, 2) == [0, 1] and parse_gpus("all", 3) == [0, 1, 2]
    assert parse_gpus("1,0", 2) == [1, 0] and parse_gpus(1, 2) == [1]
    assert parse_gpus([0], 1) == [0]
    for bad in ("0,,1", "gpu0", "0,0", ""):
        with pytest.raises(InputError):
            parse_gpus(bad, 2)
    with pytest.raises(DeviceError, match="not visible"):
        parse_gpus("0,2", 2)
    with pytest.raises(DeviceError, match="no CUDA device"):
        parse_gpus("all", 0)


# ------------------------------------------------------------------ on real GPUs
@pytest.mark.gpu
@pytest.mark.parametrize("which", ["h_chain", "h2o"])
def test_two_backends_on_one_gpu_match_single(which):
    """Threads + queue + reduction on real CUDA streams (both 'devices' are GPU 0); the
    40-atom H chain has (ss|ss) split into many triangle blocks."""
    from hartree.basis import load_basis
    from hartree.device.backend import CudaBackend
    from hartree.gpu.jk_direct import DirectJK
    from hartree.gpu.multi import MultiJK

    if which == "h_chain":
        mol = hydrogen_chain(40)
        basis = load_basis(mol, "6-31g")
        dms = np.eye(basis.nao)[None] / basis.nao
    else:
        mol, basis, dms = build(CASES[0])
    J1, K1 = DirectJK(basis, CudaBackend(0)).jk(dms)
    multi = MultiJK(basis, [CudaBackend(0), CudaBackend(0)])
    J2, K2 = multi.jk(dms)
    print(f"{which}: items per backend: {multi.last_split}")
    np.testing.assert_allclose(J2.get(), J1.get(), rtol=0, atol=1e-13 * float(abs(J1).max()))
    np.testing.assert_allclose(K2.get(), K1.get(), rtol=0, atol=1e-13 * float(abs(K1).max()))
    if which == "h_chain":  # the (ss|ss) class was cut
        assert sum(multi.last_split.values()) > 1


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["h_chain", "cnf_ccpvdz_cart"])
def test_all_visible_gpus_match_single(which):
    import cupy

    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine

    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        pytest.skip("needs two GPUs")
    if which == "h_chain":
        mol = hydrogen_chain(40)
        basis = load_basis(mol, "6-31g")
        dms = np.eye(basis.nao)[None] / basis.nao
    else:
        mol, basis, dms = build(CASES[2])
    J1, K1 = GPUEngine(mol, basis, devices=[0]).jk(dms)
    eng = GPUEngine(mol, basis, devices=list(range(n)))
    J2, K2 = eng.jk(dms)
    split = eng._jk_builder().last_split
    print(f"{which}: {n} GPUs, items per device: {split}; {eng.device}")
    np.testing.assert_allclose(J2, J1, rtol=0, atol=1e-13 * np.abs(J1).max())
    np.testing.assert_allclose(K2, K1, rtol=0, atol=1e-13 * np.abs(K1).max())
    assert f"cuda:{','.join(map(str, range(n)))}" in eng.device


@pytest.mark.gpu
def test_gradient_on_all_visible_gpus_matches_one():
    """MultiGradient on every visible GPU (the H chain's (ss|ss) cut into blocks) equals
    DirectGradient on GPU 0 to 1e-12 relative."""
    import cupy

    from hartree.basis import load_basis
    from hartree.gpu import GPUEngine

    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        pytest.skip("needs two GPUs")
    mol = hydrogen_chain(40)
    basis = load_basis(mol, "6-31g")
    rng = np.random.default_rng(3)
    d = rng.standard_normal((basis.nao, basis.nao)) / basis.nao
    d = d + d.T
    one = GPUEngine(mol, basis, devices=[0]).two_electron_gradient(d, d[None], 0.5)
    eng = GPUEngine(mol, basis, devices=list(range(n)))
    got = eng.two_electron_gradient(d, d[None], 0.5)
    print(f"{n} GPUs, batches per device: {eng._gradient.last_split}")
    np.testing.assert_allclose(got, one, rtol=0, atol=1e-12 * np.abs(one).max())
    assert len(eng._gradient.last_split) == n  # each device ran (the split depends on timing)
