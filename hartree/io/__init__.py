"""hartree.io: result files for other programs.

* :mod:`hartree.io.molden` - Molden files (orbitals for Molden, Jmol, VMD).
* :mod:`hartree.io.qcschema` - QCSchema ``AtomicResult`` JSON (read and write).

Molecule readers (XYZ, QCSchema molecules) live on :class:`hartree.Molecule`.
"""

from .molden import check_molden_supported, molden_text, write_molden
from .qcschema import read_result_json, result_to_qcschema, wavefunction_arrays, write_json

__all__ = ["write_molden", "molden_text", "check_molden_supported", "result_to_qcschema",
           "write_json", "read_result_json", "wavefunction_arrays"]
