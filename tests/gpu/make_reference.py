"""Write PySCF reference J/K for the GPU test cases: python tests/gpu/make_reference.py DIR

The GPU tests read them via HARTREE_GPU_REFDIR=DIR when neither the CPU engine nor
PySCF is available where they run.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES, build  # noqa: E402
from reference import _pyscf  # noqa: E402


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for case in CASES:
        mol, basis, dms = build(case)
        J, K, _ = _pyscf(mol, basis, dms)
        np.savez(os.path.join(outdir, case[0] + ".npz"), coords=mol.coords, dms=dms, J=J, K=K)
        print(case[0], basis.nao)


if __name__ == "__main__":
    main(sys.argv[1])
