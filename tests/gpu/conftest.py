"""GPU tests: items marked ``gpu`` are skipped unless cupy sees a CUDA device."""
import pytest


def _have_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:                       # no cupy, no driver, no device
        return False


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("gpu") for item in items) and not _have_gpu():
        skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)
