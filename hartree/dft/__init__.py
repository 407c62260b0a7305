"""hartree.dft: the pieces of Kohn-Sham DFT (in progress; the SCF uses them through
:mod:`hartree.scf.ks`, method 'rks'/'uks' with ``xc=``).

>>> from hartree.dft import make_grid, parse_functional, xc_energy_potential
>>> grid = make_grid(mol, level=3)                      # Grid: coords (n, 3) bohr, weights (n,)
>>> exc, vxc, nelec = xc_energy_potential(basis, grid, dm, "pbe")

Modules: grid_data (radii, ξ, level tables), grids (radial and Lebedev rules, Becke /
Stratmann partition, pruning, :func:`make_grid`), functionals (names -> libxc through PySCF's
bundled libxc, family, exact exchange, range separation, VV10), numint (AO values and their
first and second derivatives on points, ρ, ∇ρ, τ, E_xc and V_xc; :func:`make_xc_cache`),
ao_cache (screened blocks of a grid and their AO values, kept between SCF cycles within a
memory budget), xc_integrate (the XC loop written once for numpy and cupy, and the
XCKernels protocol of a device), xc_kernels and ao_kernels (the CPU's kernels: numba, PySCF's
libxc), xc_gpu (the GPU's: xc_gpu.cu, cuBLAS GEMMs) and libxc_gpu (libxc built for CUDA
through its C API), xc_gradient (the nuclear gradient of E_xc, :func:`xc_gradient`),
grid_response (derivatives of the grid's weights), vv10 (VV10 non-local correlation: E_nlc,
V_nlc and the fixed-grid gradient) and vv10_response (its gradient's grid response).
PySCF is needed for the functionals (the ``dft`` extra) and imported only when one is asked
for; see docs/dft.md.
"""

from .functionals import Functional, parse_functional
from .grids import Grid, make_grid
from .numint import ao_values, make_xc_cache, xc_energy_potential
from .xc_gradient import xc_gradient

__all__ = [
    "Grid",
    "make_grid",
    "Functional",
    "parse_functional",
    "ao_values",
    "make_xc_cache",
    "xc_energy_potential",
    "xc_gradient",
]
