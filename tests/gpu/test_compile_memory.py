"""Modules already loaded in this process are returned without starting compile threads
(each new engine asks for its kernels again; a thread pool per request cost ~2 ms a module
on an H100 host)."""

import pytest

from hartree.device import compile as device_compile


def test_loaded_modules_skip_the_thread_pool(monkeypatch):
    monkeypatch.setattr(device_compile, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(device_compile, "nvrtc_version", lambda: "13.0")
    jobs = [("// a", {"kind": "test", "n": 1}), ("// b", {"kind": "test", "n": 2})]
    modules = [object(), object()]
    memory = {}
    for (source, key), module in zip(jobs, modules):
        memory[device_compile._digest(device_compile.full_key(key, source))] = module
    monkeypatch.setattr(device_compile, "_memory", memory)

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool was started for modules already loaded")

    monkeypatch.setattr(device_compile, "ThreadPoolExecutor", no_pool)
    assert device_compile.compile_kernels(jobs) == modules
    with pytest.raises(AssertionError, match="thread pool"):  # one missing: the pool runs
        device_compile.compile_kernels(jobs + [("// c", {"kind": "test", "n": 3})])
