"""Reference results computed once with PySCF (and geomeTRIC) and stored with their versions.

Some references cost far more than the check they serve: eighteen displaced SCFs for IR
intensities, a whole geometry optimization.  A test module declares such a reference as a
function of no arguments returning JSON data (numbers, lists, dicts), decorated with
``@computed_by_pyscf("name")``, and reads it with ``stored("name")``.

    python tools/make_pyscf_references.py      # -> tests/data/pyscf_references.json

runs every declared function (the modules in ``MODULES``) and writes them with the PySCF,
geomeTRIC, numpy and Python versions and the date; ``tests/test_stored_references.py``
checks that the file holds exactly the declared names and recomputes one entry.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

PATH = Path(__file__).parent / "data" / "pyscf_references.json"

#: the test modules that declare stored references (imported by the tools script)
MODULES = (
    "tests.vibrations.test_hessian",
    "tests.optimize.test_optimize_vs_pyscf",
)

#: name -> the function computing it, filled by :func:`computed_by_pyscf` when a module is imported
COMPUTE: dict[str, Callable[[], object]] = {}


def computed_by_pyscf(name: str):
    """Declare ``function`` (no arguments, JSON data out) as the stored reference ``name``."""

    def register(function):
        # the same source line again is the same declaration: pytest (--import-mode=importlib)
        # and tests/test_stored_references.py may each import a declaring module once
        old = COMPUTE.get(name)
        if old is not None and _where(old) != _where(function):
            raise ValueError(f"stored reference {name!r} declared twice")
        COMPUTE[name] = function
        return function

    return register


def _where(function) -> tuple[str, int]:
    """Source file and first line of a declared function."""
    return function.__code__.co_filename, function.__code__.co_firstlineno


@functools.cache
def _file() -> dict:
    with open(PATH) as f:
        return json.load(f)


def stored(name: str):
    """The stored value of reference ``name`` (as JSON gave it: lists, floats, dicts)."""
    references = _file()["references"]
    if name not in references:
        raise KeyError(f"no stored reference {name!r} in {PATH}: run python tools/make_pyscf_references.py")
    return references[name]


def versions() -> dict:
    """The versions and date the stored file was made with."""
    return _file()["meta"]
