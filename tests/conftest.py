"""Suite-wide settings.

* Tests marked ``gpu`` are skipped unless cupy can open a CUDA device
  (``hartree.device.selection.gpu_available``); scripts/gpu-check runs them on the device.
* The whole session uses its own private cache directory (``HARTREE_CACHE_DIR``, see
  :mod:`hartree.cache`): a fresh directory under pytest's temporary directory
  (``tmp_path_factory``; pytest keeps the last few runs' and removes older ones), set before
  any test module is imported.  So no test reads or writes ``~/.cache/hartree`` or a fixed
  path, and nothing built by an earlier run -- or planted by someone else -- is loaded.
  The price: every run compiles the generated ERI module with numba (about a minute) and
  the g++ builds of the emulated GPU kernels again.  To reuse a cache across runs, set
  ``HARTREE_TEST_CACHE_DIR=DIR`` (created private if missing; it must be yours and not
  writable by others, as any hartree cache).  Tests that need their own cache still set
  ``HARTREE_CACHE_DIR`` with ``monkeypatch``.
* The numba kernels of the CPU engine are compiled by a second process while the first
  tests run (:func:`hartree.warm.warm`: one-electron, Schwarz, the generated J/K module, the
  SCF and the gradient, into this session's cache and numba's).  The tests that need none
  of them (:data:`_WARM_FREE`: the atomic code, basis sets, Rys roots, point groups, NVRTC
  builds, lint...; mostly one core) run first, in their usual order, the others after them
  in theirs; the first of the others waits for that process, then loads what it compiled
  instead of compiling it (on 2 cores the generated J/K module alone takes 60-90 s).  Only
  for a run of the whole suite (no paths, ``-k`` or ``-m`` narrowing it: the README's
  command, CI) whose other tests are not all GPU tests, and not with
  ``HARTREE_TEST_WARM_UP=0``; a narrower run keeps the plain order and compiles in process
  what it needs.  The terminal summary says how long the warm-up ran and how long the tests
  waited (counted in the setup time of the first test that waited).  Tests compile whatever
  it did not (it failed, or was not started): the results are the same either way.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hartree.device.selection import gpu_available

_saved = {}

#: tests (folders and files under tests/) that need none of the kernels the warm-up compiles:
#: they run first, beside it
_WARM_FREE = (
    "atom",
    "basis",
    "gpu/test_nvrtc.py",
    "integrals/test_rys.py",
    "integrals/test_rys_program.py",
    "linalg/test_mgemm.py",
    "vibrations/test_masses.py",
    "vibrations/test_symmetry.py",
    "test_house.py",
    "test_lint.py",
    "test_molecule.py",
)
_WARM_UP = "from hartree import warm; warm.warm('cpu', gradient=True)"
_warm = {}  # the warm-up process: proc, log (its stderr), started, ended, waited


@pytest.hookimpl(trylast=True)  # after pytest's tmpdir plugin made config._tmp_path_factory
def pytest_configure(config):
    reuse = os.environ.get("HARTREE_TEST_CACHE_DIR")
    factory = getattr(config, "_tmp_path_factory", None)
    if reuse:
        path, owned = os.path.abspath(os.path.expanduser(reuse)), False
    elif factory is not None:
        path, owned = str(factory.mktemp("hartree-cache")), False
    else:  # tmpdir plugin disabled: a private random directory
        path, owned = tempfile.mkdtemp(prefix="hartree-cache-"), True
    _saved.update(previous=os.environ.get("HARTREE_CACHE_DIR"), path=path, owned=owned)
    os.environ["HARTREE_CACHE_DIR"] = path


def _warm_free(item):
    tests = item.config.rootpath / "tests"
    return any(item.path.is_relative_to(tests / folder) for folder in _WARM_FREE)


def _whole_suite(config):
    """True when the run is the whole suite: no path narrowing it (the README's command, CI),
    nothing deselected (-k, -m), not --collect-only, and HARTREE_TEST_WARM_UP is not 0."""
    if os.environ.get("HARTREE_TEST_WARM_UP") == "0" or config.option.collectonly or _warm.get("deselected"):
        return False
    whole = {config.rootpath, config.rootpath / "tests"}
    return all(Path(arg.split("::")[0]).resolve() in whole for arg in config.args)


def pytest_deselected(items):
    _warm["deselected"] = True


def _plan_warm_up(config, items):
    """Whether to warm up beside the tests (module docstring): a whole-suite run with tests
    of both kinds, the others not all GPU tests."""
    others = [item for item in items if not _warm_free(item)]
    return (
        _whole_suite(config)
        and len(others) < len(items)
        and any(item.get_closest_marker("gpu") is None for item in others)
    )


def pytest_collection_finish(session):
    """Start the warm-up process planned by pytest_collection_modifyitems."""
    if not _warm.get("planned"):
        return
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WARM_UP],
        cwd=session.config.rootpath,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    _warm.update(proc=proc, log=log, started=time.perf_counter(), ended=None, waited=0.0)


def _warm_end(wait):
    """Wait for (or, with wait False, stop) the warm-up process; note when it ended."""
    proc = _warm.get("proc")
    if proc is None or _warm["ended"] is not None:
        return
    if not wait:
        proc.kill()
    t0 = time.perf_counter()
    proc.wait()
    _warm["ended"] = time.perf_counter()
    if wait:
        _warm["waited"] += _warm["ended"] - t0


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _warm.get("proc") is not None and not _warm_free(item):
        _warm_end(wait=True)


def pytest_terminal_summary(terminalreporter):
    proc = _warm.get("proc")
    if proc is None:
        return
    _warm_end(wait=False)  # still running: the session ended before needing it (-x, ...)
    took = _warm["ended"] - _warm["started"]
    terminalreporter.write_line(
        f"numba warm-up in a second process: {took:.0f} s, exit code {proc.returncode}; "
        f"tests waited {_warm['waited']:.0f} s for it"
    )
    if proc.returncode not in (0, -9):
        _warm["log"].seek(0)
        tail = _warm["log"].read().decode(errors="replace").strip().splitlines()[-20:]
        terminalreporter.write_line("warm-up failed (the tests compiled in process instead):\n" + "\n".join(tail))


def pytest_unconfigure(config):
    _warm_end(wait=False)
    if _warm.get("log") is not None:
        _warm["log"].close()
    if not _saved:
        return
    if _saved["previous"] is None:
        os.environ.pop("HARTREE_CACHE_DIR", None)
    else:
        os.environ["HARTREE_CACHE_DIR"] = _saved["previous"]
    if _saved["owned"]:
        shutil.rmtree(_saved["path"], ignore_errors=True)
    _saved.clear()


@pytest.hookimpl(trylast=True)  # after -k and -m deselected theirs
def pytest_collection_modifyitems(config, items):
    if _plan_warm_up(config, items):
        _warm["planned"] = True
        items.sort(key=lambda item: not _warm_free(item))  # stable: each part keeps its order
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if marked and not gpu_available():
        skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
        for item in marked:
            item.add_marker(skip)
