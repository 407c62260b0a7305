"""Energy sums of one (ia|jb) block of RI-MP2: the numba kernel (numpy arrays) and the CUDA
kernels of block_energy.cu (cupy arrays), the same sums in both.

For the block V[i - i0, a, j - j0, b] = (ia|jb) (seed eq. 20) and D_ijab = e_i + e_j - e_a - e_b

    direct   = sum_ij w_ij sum_ab (ia|jb)^2 / D_ijab,
    exchange = sum_ij w_ij sum_ab (ia|jb)(ib|ja) / D_ijab   (one spin only),

w = 2 for j < i, 1 for j = i, 0 for j > i within one spin (pairs j > i are not formed), and
w = 1 between spins (seed eq. 14 split into opposite- and same-spin parts as in
:mod:`hartree.mp2.rimp2`).  On the GPU the block is read either stored (FP64 or FP32, leading
dimension ld) or formed on the fly from the INT32 diagonal products of the Ozaki split
(hartree/linalg/ozaki.py eq. 2), so that "mixed" writes no FP64 block.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from hartree.device import cuda_source

__all__ = ["block_energy_sums", "cuda_block_energy", "energy_source"]


@numba.njit(cache=True, parallel=True)
def block_energy_sums(v, e1o, e1v, e2o, e2v, i0, j0, same):
    """(sum w (ia|jb)^2 / D, sum w (ia|jb)(ib|ja) / D) for the block v[i - i0, a, j - j0, b] =
    (ia|jb), D = e_i + e_j - e_a - e_b; w = 1 unless ``same``, then 2 (j < i), 1 (j = i),
    0 (j > i); the exchange sum only with ``same`` (nv1 = nv2 then).  Per-pair partial sums
    go to arrays summed afterwards (no parfor reduction variables: some numba versions
    reject conditional reductions)."""
    ni, nv1, nj, nv2 = v.shape
    pd = np.zeros(ni * nj)
    px = np.zeros(ni * nj)
    for ij in numba.prange(ni * nj):
        ii = ij // nj
        jj = ij % nj
        i = i0 + ii
        j = j0 + jj
        w = 1.0
        if same and j > i:
            w = 0.0
        elif same and j < i:
            w = 2.0
        if w > 0.0:
            eij = e1o[i] + e2o[j]
            blk = np.ascontiguousarray(v[ii, :, jj, :])  # (ia|jb) for this (i, j)
            sd = 0.0
            sx = 0.0
            for a in range(nv1):
                ea = eij - e1v[a]
                for b in range(nv2):
                    iajb = blk[a, b]
                    t = iajb / (ea - e2v[b])
                    sd += t * iajb
                    if same:
                        sx += t * blk[b, a]
            pd[ij] = w * sd
            px[ij] = w * sx
    return pd.sum(), px.sum()


def energy_source() -> str:
    """CUDA text of the energy kernels mp2_block_energy_f64, _f32 and _ozaki1.._ozaki8
    (block_energy.cu)."""
    return cuda_source.read("hartree.mp2", "block_energy.cu")


@functools.lru_cache(maxsize=8)
def _energy_module(device_id):
    import cupy

    return _RawLauncher(cupy.RawModule(code=energy_source(), options=("-std=c++17",)))


def cuda_block_energy(xp):
    """The CUDA energy kernels of the current device of ``xp`` (cupy): compiled once per
    device and process (cupy caches the binary on disk); ``.launch(name, grid, block, args)``."""
    return _energy_module(xp.cuda.Device().id)


class _RawLauncher:
    """Launches kernels of a cupy RawModule by name: grid (3 ints), block (1 to 3 ints)."""

    def __init__(self, module):
        self.module = module

    def launch(self, name, grid, block, args):
        f = self.module.get_function(name)
        f(tuple(grid), tuple(block) + (1,) * (3 - len(block)), tuple(args))
