"""One reader and one writer: no module opens files or writes outputs behind their back.

Every user file is read through ``hartree.io.files`` (``read_text``, ``read_json``,
``read_bytes``) and every output written through its atomic writer (``atomic_path``,
``atomic_output``).  This test walks the syntax tree of every module of the package and
fails on a call that opens or writes a file -- ``open``, ``Path.open``/``write_text``/
``write_bytes``/``read_text``/``read_bytes``, ``h5py.File``, ``numpy.save``/``savez``/``load``/
``loadtxt``/``savetxt``, ``json.dump``/``json.load``, ``savefig`` -- outside the modules below,
each allowed for a stated reason.  A new module that needs such a call must go through
``hartree.io.files`` or be added here with its reason, in review.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "hartree"

#: module -> why it may open files itself
ALLOWED = {
    "io/files.py": "the one reader and atomic writer",
    "resources.py": "reads /proc and cgroup files of the running process",
    "scf/checkpoint.py": "HDF5 through h5py on the atomic writer's temporary file; the seal "
    "reads and writes the user block of that file",
    "cache.py": "the compile cache: entries written through atomic_path, hashed when loaded",
    "cli/first_run.py": "an empty marker file in the cache directory",
    "cli/orbitals_command.py": "numpy and h5py write the atomic writer's temporary files; "
    "--points .npy read with allow_pickle=False",
    "grid/stream.py": "numpy memory map and h5py on the atomic writer's temporary files",
    "grid/picture.py": "matplotlib writes the atomic writer's temporary file",
    "atom/plot.py": "matplotlib writes the atomic writer's temporary file",
    "optimize/plot.py": "matplotlib writes the atomic writer's temporary file",
    "mp2/cpu_device.py": "scratch HDF5 of (ia|P) in a private temporary directory",
    "device/compile.py": "cubins through the cache (hartree.cache)",
    "device/cuda_source.py": "the package's hand-written .cu files (importlib.resources)",
    "integrals/rys.py": "package data tables (numpy.load of the shipped .npz)",
    "gpu/tables.py": "package data tables (numpy.load of the shipped .npz)",
}

_FUNCTIONS = {"open"}
_METHODS = {
    "write_text",
    "write_bytes",
    "read_text",
    "read_bytes",
    "savefig",
    "dump",
    "File",
    "save",
    "savez",
    "savez_compressed",
    "load",
    "loadtxt",
    "savetxt",
    "genfromtxt",
    "fdopen",
}
_OWNERS = {"json", "h5py", "np", "numpy", "os", "fig", "plt"}


def _file_calls(tree):
    """(line, text) of calls that open or write files."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FUNCTIONS:
            found.append((node.lineno, func.id))
        elif isinstance(func, ast.Attribute) and func.attr in _METHODS:
            owner = func.value
            name = owner.id if isinstance(owner, ast.Name) else None
            if func.attr in ("write_text", "write_bytes", "read_text", "read_bytes", "savefig") or name in _OWNERS:
                found.append((node.lineno, f"{name or '...'}.{func.attr}"))
    return found


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_file_access_outside_the_io_layer(path):
    relative = str(path.relative_to(PACKAGE))
    if relative in ALLOWED:
        return
    calls = _file_calls(ast.parse(path.read_text(), filename=str(path)))
    assert not calls, (
        f"{relative} opens or writes files itself at "
        f"{', '.join(f'line {n} ({what})' for n, what in calls)}: use "
        "hartree.io.files (read_text, read_json, atomic_path) or add the module "
        "to ALLOWED with its reason"
    )


def test_allowed_modules_exist():
    for relative in ALLOWED:
        assert (PACKAGE / relative).exists(), relative
