"""The stored PySCF references (tests/stored.py): the file holds exactly the references the
test modules declare, says which versions made it, and one of them computed again now
equals its stored value."""

import importlib

from tests import stored


def _declared():
    for module in stored.MODULES:
        importlib.import_module(module)
    return stored.COMPUTE


def test_the_file_holds_exactly_the_declared_references():
    declared = _declared()
    assert sorted(stored._file()["references"]) == sorted(declared)
    meta = stored.versions()
    assert {"pyscf", "geometric", "numpy", "python", "date", "script"} <= set(meta)


def test_a_reference_computed_again_equals_the_stored_one(tmp_path, monkeypatch):
    """One of the cheaper ones (PySCF + geomeTRIC's ROHF optimization of NH2, STO-3G): with
    this PySCF and geomeTRIC the stored energy and evaluation count are what the declared
    function gives.  (Not the OH radical's UHF Hessian: its beta hole picks one of the two
    degenerate pi orbitals, so the x and y rows differ from run to run by 4e-7 Eh/bohr^2.)"""
    monkeypatch.chdir(tmp_path)  # whatever geomeTRIC writes
    name = "optimum/nh2-rohf"
    energy, evaluations = _declared()[name]()
    stored_energy, stored_evaluations = stored.stored(name)
    assert abs(energy - stored_energy) < 1e-9 and evaluations == stored_evaluations
