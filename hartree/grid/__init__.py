"""hartree.grid: orbitals and densities on 3-D lattices and point lists.

>>> from hartree.grid import lattice_around, evaluate_orbitals, select_orbitals
>>> lat = lattice_around(mol.coords, spacing=0.1, margin=4.0)   # Angstrom by default
>>> homo, = select_orbitals("homo", result.mo_occ)
>>> psi = evaluate_orbitals(basis, result.mo_coeff[:, homo.index], lat)[0]

Modules: lattice (Lattice, lattice_around, lattice_from_axes), orbitals (the API:
evaluate_ao, evaluate_orbitals, evaluate_density, ao_blocks), select (orbital names),
sources (wavefunctions from a result JSON or a Molden file), picture (isosurface PNG).

The methods are written once for the CPU and the GPU: evaluate (choice of method, blocks,
GEMM with the coefficients, densities, the separable contraction, output assembly, over
numpy or cupy arrays), geometry (a lattice or point list cut into blocks), device (the
GridDevice contract: what a device supplies).  Devices: cpu_device (CPUGrid: the numba
kernels of cpu -- general AO kernel, any points -- and separable -- the separable
expansion's plan, 1-D tables, B table and exp-free AO rows); gpu (GPUGrid, ``device="gpu"``
or "auto" in evaluate_orbitals/evaluate_density, ``--device`` in ``hartree orbitals``:
screening lists, fused orbital kernel, AO values per slab; cupy imported only when
called), gpu_basis (the basis flattened per atom for the kernels), gpu_codegen (CUDA C
generated at run time around the templates orbital_*.cu: general kernel and per-molecule
JIT kernel), gpu_separable (the B kernel of the separable expansion, separable_b.cu).
Devices, compilation, the g++ emulator of the tests and the multi-GPU queue of slabs are
the device layer, :mod:`hartree.device`.
"""

from .lattice import Lattice, lattice_around, lattice_from_axes
from .orbitals import evaluate_ao, evaluate_density, evaluate_orbitals
from .select import OrbitalChoice, select_orbitals, spin_occupations

__all__ = [
    "Lattice",
    "lattice_around",
    "lattice_from_axes",
    "evaluate_ao",
    "evaluate_orbitals",
    "evaluate_density",
    "select_orbitals",
    "OrbitalChoice",
    "spin_occupations",
]
