"""Reference J/K for the GPU tests.

    python tests/gpu/make_reference.py DIR      # PySCF J/K of CASES -> DIR/<case>.npz
    python tests/gpu/make_reference.py --classes
        # CPU-engine J/K of SG_CASE (every class up to (gg|gg)) -> tests/gpu/data/
        # jk_sg_reference.npz (committed, ~0.3 MB), checked against PySCF when installed

The GPU tests read DIR via HARTREE_GPU_REFDIR=DIR when neither the CPU engine nor
PySCF is available where they run.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES, SG_CASE, SG_REFERENCE, build  # noqa: E402
from reference import _cpu_engine, _pyscf  # noqa: E402


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for case in CASES:
        mol, basis, dms = build(case)
        J, K, _ = _pyscf(mol, basis, dms)
        np.savez(os.path.join(outdir, case[0] + ".npz"), coords=mol.coords, dms=dms, J=J, K=K)
        print(case[0], basis.nao)


def classes():
    mol, basis, dms = build(SG_CASE)
    J, K, source = _cpu_engine(mol, basis, dms)
    np.savez_compressed(SG_REFERENCE, coords=mol.coords, dms=dms, J=J, K=K)
    print(SG_CASE[0], "nao", basis.nao, "source", source, "bytes", os.path.getsize(SG_REFERENCE))
    ref = _pyscf(mol, basis, dms)
    if ref is not None:
        for name, x, y in (("J", J, ref[0]), ("K", K, ref[1])):
            print(f"{name}: CPU engine vs PySCF, max rel. error {np.abs(x - y).max() / np.abs(y).max():.2e}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--classes"]:
        classes()
    else:
        main(sys.argv[1])
