"""Which engine the SCF tests use.

Default: hartree's own CPUEngine.  HARTREE_SCF_TEST_ENGINE=pyscf selects the
PySCF-backed test engine (tests/scf/pyscf_engine.py), which isolates the SCF
layer from hartree's integral code when chasing a failure.
"""

import os


def engine_class():
    """The engine class for SCF tests (see module docstring)."""
    if os.environ.get("HARTREE_SCF_TEST_ENGINE", "").lower() == "pyscf":
        from tests.scf.pyscf_engine import PySCFEngine

        return PySCFEngine
    from hartree.integrals.engine import CPUEngine

    return CPUEngine


def make_engine(molecule, basis, screening_threshold=1e-13):
    """An engine instance for (molecule, basis)."""
    return engine_class()(molecule, basis, screening_threshold=screening_threshold)
