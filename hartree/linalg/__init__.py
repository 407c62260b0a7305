"""hartree.linalg: dense linear algebra engines (mgemm: cleaved, mixed-precision GEMM).

>>> from hartree.linalg import mgemm
>>> c, info = mgemm(a, b, transb=True, precision="mixed", return_info=True)
"""

from .mgemm import PRECISIONS, MGEMMInfo, choose_precision, error_bound, mgemm

__all__ = ["mgemm", "MGEMMInfo", "PRECISIONS", "error_bound", "choose_precision"]
