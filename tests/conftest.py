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
* With pytest-xdist (``-n 2``, the README's test command), the workers share the
  controller's cache directory (handed over in ``workerinput``), so what one worker
  compiles the other loads; the cache's writes are atomic, so two workers building the
  same entry at once only build it twice.
"""

import os
import shutil
import tempfile

import pytest

from hartree.device.selection import gpu_available

_saved = {}


@pytest.hookimpl(trylast=True)  # after pytest's tmpdir plugin made config._tmp_path_factory
def pytest_configure(config):
    reuse = os.environ.get("HARTREE_TEST_CACHE_DIR")
    factory = getattr(config, "_tmp_path_factory", None)
    shared = getattr(config, "workerinput", {}).get("hartree_cache_dir")  # an xdist worker
    if shared:
        path, owned = shared, False
    elif reuse:
        path, owned = os.path.abspath(os.path.expanduser(reuse)), False
    elif factory is not None:
        path, owned = str(factory.mktemp("hartree-cache")), False
    else:  # tmpdir plugin disabled: a private random directory
        path, owned = tempfile.mkdtemp(prefix="hartree-cache-"), True
    _saved.update(previous=os.environ.get("HARTREE_CACHE_DIR"), path=path, owned=owned)
    os.environ["HARTREE_CACHE_DIR"] = path


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist (controller): hand the session's cache directory to each worker."""
    node.workerinput["hartree_cache_dir"] = _saved["path"]


def pytest_unconfigure(config):
    if not _saved:
        return
    if _saved["previous"] is None:
        os.environ.pop("HARTREE_CACHE_DIR", None)
    else:
        os.environ["HARTREE_CACHE_DIR"] = _saved["previous"]
    if _saved["owned"]:
        shutil.rmtree(_saved["path"], ignore_errors=True)
    _saved.clear()


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if marked and not gpu_available():
        skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
        for item in marked:
            item.add_marker(skip)
