"""Electron-repulsion integrals (Rys quadrature) against PySCF, plus invariances."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hartree.basis import Basis, load_basis, normalized_coefficients
from hartree.integrals.eri import ShellPairs, eri_full
from hartree.integrals.eri_kernel import alloc_scratch, quartet_block_call
from hartree.molecule import Molecule
from tests.helpers import to_pyscf, water

ATOL = 1e-10


def custom_basis(shells, coords, pure, sort=True):
    """Basis from [(atom, l, exponents, raw coefficients)] on atoms at ``coords`` (bohr).

    sort: order the shells by (atom, l) as PySCF does (stable), so AO orders agree.
    """
    exps, coefs, nprim, start, ls, atoms = [], [], [], [], [], []
    for atom, l, e, c in sorted(shells, key=lambda s: (s[0], s[1])) if sort else shells:
        start.append(len(exps))
        nprim.append(len(e))
        exps.extend(e)
        coefs.extend(normalized_coefficients(l, e, c))
        ls.append(l)
        atoms.append(atom)
    coords = np.asarray(coords, dtype=float)
    return Basis(
        name="custom",
        pure=pure,
        shell_atom=atoms,
        shell_l=ls,
        shell_nprim=nprim,
        shell_prim_start=start,
        shell_center=coords[atoms],
        exponents=exps,
        coefficients=coefs,
    )


def random_shells(rng, natm, lmax, nshell):
    """nshell random shells (1-3 primitives) with l in 0..lmax on natm atoms."""
    out = []
    for k in range(nshell):
        l = k % (lmax + 1)
        n = int(rng.integers(1, 4))
        e = np.sort(rng.uniform(0.15, 6.0, n))[::-1]
        c = rng.uniform(0.2, 1.0, n)
        out.append((int(rng.integers(natm)), l, e, c))
    return out


def molecule_for(coords):
    coords = np.asarray(coords, dtype=float)
    return Molecule(numbers=[1] * len(coords), coords=coords, multiplicity=1 + len(coords) % 2)


def pyscf_eri(coords, basis):
    pmol = to_pyscf(molecule_for(coords), basis)
    return pmol.intor("int2e" if basis.pure else "int2e_cart")


@pytest.mark.parametrize("cartesian", [False, True])
def test_water_ccpvdz(cartesian):
    mol = water()
    basis = load_basis(mol, "cc-pvdz", cartesian=cartesian)
    ref = to_pyscf(mol, basis).intor("int2e_cart" if cartesian else "int2e")
    np.testing.assert_allclose(eri_full(basis), ref, rtol=0, atol=ATOL)


@pytest.mark.parametrize("pure", [True, False])
def test_random_basis_up_to_g(pure):
    """Random contracted shells s..g on three atoms, element-wise against PySCF."""
    rng = np.random.default_rng(7)
    coords = rng.uniform(-1.5, 1.5, (3, 3))
    basis = custom_basis(random_shells(rng, 3, 4, 7), coords, pure)
    assert basis.max_l == 4
    np.testing.assert_allclose(eri_full(basis), pyscf_eri(coords, basis), rtol=0, atol=ATOL)


def test_h_functions():
    """l = 5 (11 Rys roots for (hh|hh)); spherical."""
    coords = np.array([[0.0, 0.0, 0.0], [0.3, -0.4, 1.1]])
    shells = [
        (0, 5, [1.3], [1.0]),
        (1, 5, [0.9, 0.35], [0.6, 0.5]),
        (1, 1, [1.1], [1.0]),
        (0, 0, [2.0, 0.5], [0.4, 0.7]),
    ]
    basis = custom_basis(shells, coords, pure=True)
    np.testing.assert_allclose(eri_full(basis), pyscf_eri(coords, basis), rtol=0, atol=ATOL)


def test_schwarz_factors_bound_integrals():
    rng = np.random.default_rng(3)
    coords = rng.uniform(-2.0, 2.0, (3, 3))
    basis = custom_basis(random_shells(rng, 3, 2, 6), coords, pure=True)
    pairs = ShellPairs.build(basis)
    g = eri_full(basis, pairs)
    loc = basis.ao_loc
    for P, (a, b) in enumerate(pairs.pair_shells):
        blk = g[loc[a] : loc[a + 1], loc[b] : loc[b + 1], loc[a] : loc[a + 1], loc[b] : loc[b + 1]]
        assert pairs.schwarz[P] == pytest.approx(np.sqrt(np.abs(blk).max()), rel=1e-12)


def _block(pairs, basis, P, Q):
    scr = alloc_scratch(pairs.lmax)
    na, nb, nc, nd = quartet_block_call(
        P,
        Q,
        pairs.pair_shells,
        pairs.pair_start,
        pairs.pair_ab,
        pairs.pp,
        basis.shell_l,
        basis.pure,
        pairs.c2s,
        *scr[:2],
        scr[2],
        scr[10],
        *scr[3:10],
        pairs.rys_table,
    )
    return scr[5][: na * nb * nc * nd].reshape(na, nb, nc, nd).copy()


shell_strategy = st.tuples(st.integers(0, 1), st.integers(0, 3), st.floats(0.2, 5.0), st.floats(0.2, 5.0))


@settings(max_examples=6, deadline=None)
@given(
    st.lists(shell_strategy, min_size=2, max_size=4),
    st.lists(st.floats(-2.0, 2.0), min_size=6, max_size=6),
    st.booleans(),
)
def test_permutational_symmetry(shells, xyz, pure):
    """(ab|cd) = (cd|ab) from the kernel itself (bra and ket swapped), and
    (ab|cd) = (ba|cd) = (ab|dc) from a basis with the shell order reversed."""
    coords = np.reshape(xyz, (2, 3))
    spec = [(atom, l, [e1, e1 * 0.3 + 0.1], [0.5, 0.5]) for atom, l, e1, e2 in shells]
    basis = custom_basis(spec, coords, pure, sort=False)
    pairs = ShellPairs.build(basis)
    for P in range(len(pairs.pair_shells)):
        for Q in range(P + 1):
            np.testing.assert_allclose(
                _block(pairs, basis, P, Q), _block(pairs, basis, Q, P).transpose(2, 3, 0, 1), rtol=0, atol=ATOL
            )
    g = eri_full(basis, pairs)
    rev = custom_basis(spec[::-1], coords, pure, sort=False)
    perm = np.concatenate([np.arange(basis.ao_loc[i], basis.ao_loc[i + 1]) for i in range(basis.nshell)][::-1])
    np.testing.assert_allclose(eri_full(rev), g[np.ix_(perm, perm, perm, perm)], rtol=0, atol=ATOL)


@settings(max_examples=5, deadline=None)
@given(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3), st.integers(0, 10_000))
def test_translation_invariance(shift, seed):
    rng = np.random.default_rng(seed)
    coords = rng.uniform(-1.5, 1.5, (2, 3))
    spec = random_shells(rng, 2, 3, 4)
    g0 = eri_full(custom_basis(spec, coords, True))
    g1 = eri_full(custom_basis(spec, coords + np.asarray(shift), True))
    np.testing.assert_allclose(g1, g0, rtol=0, atol=ATOL)


def test_low_root_rys_from_boys_moments():
    """One- and two-root rules from the Boys table (eri_prim.rys_low) against rys.py."""
    from hartree.integrals.eri_prim import BOYS_TMAX, rys_low
    from hartree.integrals.rys import rys_roots_weights, rys_table_array

    table = rys_table_array()
    ts = np.concatenate(
        [[0.0, 1e-13, 1e-5, 0.3], np.linspace(0.01, 60.0, 701), BOYS_TMAX + np.array([-1e-9, 0.0, 1e-9]), [250.0, 1e4]]
    )
    f, r, w, r2, w2 = (np.empty(14) for _ in range(5))
    for t in ts:
        for nr in (1, 2):
            rys_low(nr, t, r, w, f, True)
            rys_roots_weights(nr, t, r2, w2, table)
            np.testing.assert_allclose(r[:nr], r2[:nr], rtol=1e-13, atol=0)
            np.testing.assert_allclose(w[:nr], w2[:nr], rtol=1e-13, atol=0)


@pytest.mark.parametrize("pure", [True, False])
def test_generated_kernels_every_class(pure):
    """Every class with an unrolled kernel (eri_codegen), element-wise against PySCF and
    against the generic kernel: random contracted s, p, d shells on three atoms."""
    from hartree.integrals.eri_codegen import default_classes, load_module, pair_class

    mod = load_module()
    rng = np.random.default_rng(11)
    coords = rng.uniform(-1.5, 1.5, (3, 3))
    basis = custom_basis(random_shells(rng, 3, 2, 7), coords, pure)
    pairs = ShellPairs.build(basis)
    ref = pyscf_eri(coords, basis)
    loc, L = basis.ao_loc, basis.shell_l
    seen = set()
    for P, (a, b) in enumerate(pairs.pair_shells):
        for Q, (c, d) in enumerate(pairs.pair_shells):
            if pair_class(L[a], L[b]) < pair_class(L[c], L[d]):
                continue
            got = mod.quartet_block_gen_call(
                P,
                Q,
                pairs.pair_shells,
                pairs.pair_start,
                pairs.pair_ab,
                pairs.pp,
                basis.shell_l,
                basis.pure,
                pairs.c2s,
                pairs.lmax,
                pairs.rys_table,
            )
            want = ref[loc[a] : loc[a + 1], loc[b] : loc[b + 1], loc[c] : loc[c + 1], loc[d] : loc[d + 1]]
            np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
            np.testing.assert_allclose(got, _block(pairs, basis, P, Q), rtol=0, atol=1e-12)
            seen.add((int(L[a]), int(L[b]), int(L[c]), int(L[d])))
    assert set(default_classes()) <= seen


def test_generated_source_is_deterministic():
    """The generator is a pure function of the class list (the cache key relies on it)."""
    from hartree.integrals.eri_codegen import class_source, module_source

    assert module_source() == module_source()
    src = class_source(1, 0, 0, 0)
    assert "def cart_1000(" in src and "rys_roots_weights" not in src
    assert "rys_roots_weights(3," in class_source(1, 1, 1, 1)
