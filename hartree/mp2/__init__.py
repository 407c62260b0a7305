"""hartree.mp2: RI-MP2 correlation energies (RHF and UHF references).

>>> res = hartree.scf.run(mol, basis="cc-pvdz")
>>> mp2 = hartree.mp2.run(res, aux=None, frozen_core=True, precision="fp64")
>>> mp2.correlation_energy, mp2.opposite_spin, mp2.same_spin, mp2.scs_total_energy
"""

from .auxiliary_basis import default_aux_name, load_aux_basis
from .options import MP2Options
from .result import MP2Result
from .rimp2 import frozen_core_count, kernel, run

__all__ = ["run", "kernel", "MP2Options", "MP2Result", "default_aux_name", "load_aux_basis", "frozen_core_count"]
