"""What importing hartree loads: the start-up path stays light (issue 17).

``import hartree`` loads the version and the exceptions only; ``hartree.Molecule``,
``hartree.scf``, ``hartree.mp2`` and ``hartree.linalg`` come on first use (PEP 562) and
are the same objects as before.  ``hartree run`` imports its own command module, not the
other commands', and neither RI-MP2 (numba, scipy.linalg) nor h5py before it needs them.
Each check runs in a fresh interpreter and reads ``sys.modules``: no timings.
"""

import json
import subprocess
import sys

import pytest

#: Modules a plain ``import hartree`` must not load (heavy, or not needed by most uses).
NOT_ON_IMPORT = (
    "numpy",
    "numba",
    "scipy",
    "scipy.linalg",
    "h5py",
    "rich",
    "basis_set_exchange",
    "hartree.molecule",
    "hartree.scf",
    "hartree.mp2",
    "hartree.linalg",
    "hartree.grid",
    "hartree.atom",
    "hartree.gpu",
    "hartree.vibrations",
)


def _modules_after(code):
    """Sorted names in sys.modules after running ``code`` in a fresh interpreter."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_hartree_loads_only_version_and_errors():
    loaded = _modules_after("import hartree")
    assert not loaded & set(NOT_ON_IMPORT), sorted(loaded & set(NOT_ON_IMPORT))
    assert {m for m in loaded if m.startswith("hartree")} == {"hartree", "hartree._version", "hartree.errors"}


def test_public_names_are_the_modules_and_classes_they_were():
    import importlib

    import hartree

    for name in ("scf", "mp2", "linalg"):
        assert getattr(hartree, name) is importlib.import_module(f"hartree.{name}")
    from hartree.molecule import Molecule

    assert hartree.Molecule is Molecule
    assert hartree.scf.run is importlib.import_module("hartree.scf.driver").run
    assert set(hartree.__all__) <= set(dir(hartree))
    namespace = {}
    exec("from hartree import *", namespace)  # every name of __all__ resolves
    assert {name for name in hartree.__all__ if name in namespace} == set(hartree.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hartree.nope  # noqa: B018


def test_public_name_on_first_use_loads_its_module_only():
    loaded = _modules_after("import hartree\nhartree.Molecule")
    assert "hartree.molecule" in loaded
    assert not loaded & {"numba", "scipy.linalg", "hartree.mp2", "hartree.scf"}


def test_cli_run_imports_only_the_run_command():
    """Parsing ``hartree run`` sets up (and imports) the run command's module only; the
    others are listed by name; nothing imports RI-MP2, scipy, h5py or numba yet."""
    loaded = _modules_after(
        "from hartree.cli.main import build_parser\n"
        "args = build_parser(['run', 'w.xyz', '-b', 'sto-3g']).parse_args(['run', 'w.xyz', '-b', 'sto-3g'])\n"
        "assert args._command.name == 'run'"
    )
    assert "hartree.cli.run_command" in loaded
    others = {"atom", "basis_search", "batch", "cache", "freq", "opt", "orbitals"}
    assert not loaded & {f"hartree.cli.{name}_command" for name in others}
    heavy = {"numba", "scipy", "h5py", "basis_set_exchange", "hartree.mp2", "hartree.atom", "hartree.vibrations"}
    assert not loaded & heavy, sorted(loaded & heavy)


def test_cli_main_help_imports_no_command():
    loaded = _modules_after(
        "import contextlib, io\n"
        "from hartree.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--help']) == 0"
    )
    assert not {m for m in loaded if m.startswith("hartree.cli.") and m.endswith("_command")}
    assert "numpy" not in loaded
