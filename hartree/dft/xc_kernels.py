"""The CPU kernels of the XC integration (:class:`hartree.dft.xc_integrate.XCKernels`):
numba for the AO values and the pointwise sums (:mod:`hartree.dft.ao_kernels`), PySCF's
libxc for the functional, numpy arrays throughout.

    kernels = CPUKernels()
    cache = AOCache(basis, grid, 1, radii, kernels=kernels)
"""

from __future__ import annotations

import numpy as np

from ..resources import available_memory
from .ao_kernels import block_values, contract_gradient, contract_rows, contract_tau, scale_rows
from .functionals import libxc

__all__ = ["BLOCK_POINTS", "BUDGET_FRACTION", "CPUKernels", "DEFAULT_BUDGET_BYTES", "SCRATCH_BYTES", "default_budget"]

#: Largest default memory budget of the cached AO values, bytes.
DEFAULT_BUDGET_BYTES = 2 * 1024**3
#: Fraction of the available memory the default budget may take.
BUDGET_FRACTION = 0.25
#: Values computed at once for the blocks past the budget, bytes (at least one block).
SCRATCH_BYTES = 64 * 1024**2
#: Default number of points per block.
BLOCK_POINTS = 512


def default_budget() -> int:
    """Bytes of AO values kept between SCF cycles (:mod:`hartree.dft.ao_cache`): min(2 GiB,
    available memory / 4)."""
    have = available_memory()
    if have is None:
        return DEFAULT_BUDGET_BYTES
    return int(min(DEFAULT_BUDGET_BYTES, BUDGET_FRACTION * have))


class CPUKernels:
    """numba and PySCF's libxc on numpy arrays (the XC integration of the CPU path)."""

    name = "cpu"
    xp = np
    block_points = BLOCK_POINTS
    scratch_bytes = SCRATCH_BYTES
    contract_rows = staticmethod(contract_rows)
    contract_tau = staticmethod(contract_tau)
    scale_rows = staticmethod(scale_rows)
    contract_gradient = staticmethod(contract_gradient)

    def __init__(self):
        self.notes = []

    def default_budget(self, basis, nset: int = 1) -> int:
        """min(2 GiB, available memory / 4) (:func:`default_budget`)."""
        return default_budget()

    def prepare(self, cache) -> None:
        """Nothing to move: the cache's host arrays are the kernels' arrays."""

    def block_values(self, cache, b0: int, b1: int):
        """AO values of blocks b0..b1-1 (points renumbered from b0's), numba
        (:func:`hartree.dft.ao_kernels.block_values`)."""
        p0 = cache.starts[b0]
        s0, s1 = cache.shell_start[b0], cache.shell_start[b1]
        return block_values(
            cache.prepared,
            cache.coords[p0 : cache.starts[b1]],
            cache.starts[b0 : b1 + 1] - p0,
            cache.shells[s0:s1],
            cache.shell_start[b0 : b1 + 1] - s0,
            cache.deriv,
        )

    @staticmethod
    def libxc_description() -> str:
        """Which libxc evaluated the functional."""
        return "PySCF's libxc on the host"

    @staticmethod
    def eval_xc(functional, rho, spin: int):
        """PySCF's ``libxc.eval_xc(xc_code, rho, spin, deriv=1)[:2]``."""
        return libxc().eval_xc(functional.xc_code, rho, spin=spin, deriv=1)[:2]
