"""Reference J/K for the GPU tests, from the first source available:

1. ``hartree.integrals.engine.CPUEngine`` (numba; the intended oracle: CPU vs GPU);
2. PySCF (test dependency) with exactly the same basis data;
3. ``$HARTREE_GPU_REFDIR/<case>.npz`` written by ``tests/gpu/make_reference.py``
   (for machines that have neither, e.g. the GPU machine before the CPU engine exists;
   tried first when HARTREE_GPU_PREFER_STORED=1, to skip the CPU kernels' numba compile).

Returns (J, K, source) or None when nothing is available.
"""

import os

import numpy as np


def _cpu_engine(mol, basis, dms):
    try:
        from hartree.integrals.engine import CPUEngine
    except ImportError:
        return None
    try:
        engine = CPUEngine(mol, basis)
    except (TypeError, AttributeError):  # wants a full hartree.Molecule: next source
        return None
    J, K = engine.jk(dms, with_j=True, with_k=True)
    return np.asarray(J), np.asarray(K), "CPUEngine"


def to_pyscf(basis, symbols, coords):
    """pyscf Mole with the basis data of `basis` (coordinates in bohr)."""
    from pyscf import gto

    atoms, bas = [], {}
    for ia, (sym, xyz) in enumerate(zip(symbols, coords)):
        label = f"{sym}{ia + 1}"
        atoms.append((label, tuple(float(v) for v in xyz)))
        shells = []
        for ish in np.flatnonzero(np.asarray(basis.shell_atom) == ia):
            l = int(basis.shell_l[ish])
            a = basis.shell_exponents(ish)
            c = basis.shell_coefficients(ish) / gto.gto_norm(l, a)
            shells.append([l] + [[float(x), float(y)] for x, y in zip(a, c)])
        bas[label] = shells
    mol = gto.Mole(atom=atoms, unit="bohr", basis=bas, cart=not basis.pure)
    mol.spin = sum(gto.charge(s) for s in symbols) % 2
    return mol.build()


def _pyscf(mol, basis, dms):
    try:
        import pyscf  # noqa: F401  (availability check)
    except ImportError:
        return None
    from pyscf.scf.hf import get_jk

    pm = to_pyscf(basis, mol.symbols, mol.coords)
    # PySCF's direct J/K (libcint integrals with 8-fold symmetry, hermi=0: no assumption on
    # the densities) instead of the full (ij|kl) array and two einsums: equal to 2e-13
    # relative on the (gg|gg) case of test_classes, 2 s instead of 15 s
    J, K = get_jk(pm, np.asarray(dms), hermi=0)
    return np.asarray(J), np.asarray(K), "pyscf"


def _stored(name, mol, dms):
    d = os.environ.get("HARTREE_GPU_REFDIR")
    path = os.path.join(d, name + ".npz") if d else None
    if not path or not os.path.exists(path):
        return None
    z = np.load(path)
    if not (np.allclose(z["coords"], mol.coords, atol=1e-14) and np.allclose(z["dms"], dms, atol=1e-15)):
        raise AssertionError(f"{path} was made for another geometry or density")
    return z["J"], z["K"], "stored pyscf reference"


def reference_jk(name, mol, basis, dms):
    """(J, K, source) for case `name`, or None; J, K (nset, nao, nao)."""
    order = [lambda: _cpu_engine(mol, basis, dms), lambda: _pyscf(mol, basis, dms), lambda: _stored(name, mol, dms)]
    if os.environ.get("HARTREE_GPU_PREFER_STORED") == "1":  # GPU machine: no numba compile
        order.insert(0, order.pop())
    for get in order:
        out = get()
        if out is not None:
            return out
    return None
