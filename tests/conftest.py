"""Suite-wide: tests marked ``gpu`` are skipped unless cupy can open a CUDA device
(``hartree.gpu.device.gpu_available``); scripts/gpu-check runs them on the device."""
import pytest

from hartree.gpu.device import gpu_available


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if marked and not gpu_available():
        skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
        for item in marked:
            item.add_marker(skip)
