"""hartree.linalg: dense linear algebra engines (mgemm: cleaved, mixed-precision GEMM).

>>> from hartree.linalg import mgemm
>>> c, info = mgemm(a, b, transb=True, precision="mixed", return_info=True)

Modules: mgemm (front end: checks, scheme resolution, cleaving), gemm_schemes (the tile
product of each scheme), gemm_precision (error bounds, estimates, GPU cost model and the
"mixed"/"auto" policies), ozaki (INT8-slice split, CPU reference), mgemm_gpu (cuBLAS
TF32/INT8 GEMMs, GPU slicing, streamed cleaver; cupy imported lazily).
"""

from .gemm_precision import PRECISIONS, choose_mixed, choose_precision, error_bound, estimated_error
from .mgemm import MGEMMInfo, mgemm

__all__ = ["mgemm", "MGEMMInfo", "PRECISIONS", "error_bound", "choose_precision", "estimated_error", "choose_mixed"]
