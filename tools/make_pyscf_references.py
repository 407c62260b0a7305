"""Compute the PySCF (and geomeTRIC) references the tests read from tests/data/pyscf_references.json.

    python tools/make_pyscf_references.py            # every reference (a few minutes)
    python tools/make_pyscf_references.py NAME ...   # only these, the others kept

Each reference is a function declared in a test module with ``@computed_by_pyscf(name)``
(tests/stored.py lists the modules).  The file records the versions of PySCF, geomeTRIC,
numpy and Python and the date, so that a change of the oracle is visible in review.
"""

import datetime
import importlib
import json
import os
import platform
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests import stored  # noqa: E402


def _versions():
    import geometric
    import numpy
    import pyscf

    return {
        "pyscf": pyscf.__version__,
        "geometric": geometric.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "script": "tools/make_pyscf_references.py",
    }


def _plain(value):
    """numpy arrays and scalars as JSON lists and numbers."""
    return value.tolist()


def main(names):
    for module in stored.MODULES:
        importlib.import_module(module)
    unknown = set(names) - set(stored.COMPUTE)
    if unknown:
        raise SystemExit(f"unknown references: {', '.join(sorted(unknown))}")
    old = {}
    if names and stored.PATH.exists():
        old = json.loads(stored.PATH.read_text())["references"]
    references = {}
    for name in sorted(stored.COMPUTE):
        if names and name not in names:
            if name in old:
                references[name] = old[name]
            continue
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:  # whatever an oracle writes stays out of the tree
            here = os.getcwd()
            os.chdir(folder)
            try:
                references[name] = stored.COMPUTE[name]()
            finally:
                os.chdir(here)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    stored.PATH.parent.mkdir(parents=True, exist_ok=True)
    tmp = stored.PATH.with_suffix(".json.tmp")
    text = json.dumps({"meta": _versions(), "references": references}, indent=1, default=_plain)
    tmp.write_text(text + "\n")
    os.replace(tmp, stored.PATH)
    print(f"wrote {stored.PATH}")


if __name__ == "__main__":
    main(sys.argv[1:])
