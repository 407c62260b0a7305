"""hartree.cache: verified entries, permissions, locking, prune/clear/info, and the CLI."""

import argparse
import io
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from hartree import __version__, cache, cache_admin
from hartree.cli import cache_command


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A fresh private cache root for one test (nothing from the session cache)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(path))
    monkeypatch.setattr(cache, "_checked", {})
    monkeypatch.setattr(cache, "_in_use", set())
    return path


def _record(path):
    return json.loads(path.with_name(path.name + ".json").read_text())


def test_store_load_round_trip(root):
    key = {"what": "test", "n": 1, "options": ("-O1",)}
    assert cache.load("cuda", key, ".bin") is None
    path = cache.store("cuda", key, ".bin", data=b"\x00payload")
    assert path.read_bytes() == b"\x00payload" and path.parent == root / "cuda"
    assert path.name == cache.digest(key) + ".bin"
    assert cache.load("cuda", key, ".bin") == path
    rec = _record(path)
    assert rec["key"] == {"what": "test", "n": 1, "options": ["-O1"]}
    assert rec["sha256"] == cache.sha256_bytes(b"\x00payload") and rec["size"] == 8
    assert rec["hartree"] == __version__ and rec["kind"] == "cuda" and rec["created"]
    for d in (root, root / "cuda"):
        assert os.stat(d).st_mode & 0o777 == 0o700
    assert cache.load("cuda", {"what": "other"}, ".bin") is None
    assert cache.load("emulate", key, ".bin") is None  # kinds are separate


def test_get_or_build_builds_once(root):
    calls = []

    def build(tmp):
        calls.append(tmp)
        with open(tmp, "wb") as f:
            f.write(b"built")

    p1 = cache.get_or_build("emulate", "k", ".so", build=build)
    p2 = cache.get_or_build("emulate", "k", ".so", build=build)
    assert p1 == p2 and p1.read_bytes() == b"built" and len(calls) == 1
    assert not [n for n in os.listdir(p1.parent) if n.endswith(".hartree-tmp")]


@pytest.mark.parametrize("fresh_process", [False, True])
def test_corrupted_entry_detected_and_removed(root, fresh_process):
    path = cache.store("cuda", "k", ".cubin", data=b"A" * 64)
    time.sleep(0.01)
    path.write_bytes(b"B" * 64)  # same size, other content
    if fresh_process:
        cache._checked.clear()
    assert cache.load("cuda", "k", ".cubin") is None
    assert not path.exists() and not path.with_name(path.name + ".json").exists()
    rebuilt = cache.get_or_build("cuda", "k", ".cubin", data=b"A" * 64)
    assert rebuilt.read_bytes() == b"A" * 64


def test_missing_or_damaged_record(root):
    path = cache.store("cuda", "k", ".cubin", data=b"data")
    record = path.with_name(path.name + ".json")
    record.unlink()
    assert cache.load("cuda", "k", ".cubin") is None and not path.exists()
    path = cache.store("cuda", "k", ".cubin", data=b"data")
    record.write_text("{not json")
    assert cache.load("cuda", "k", ".cubin") is None and not path.exists()
    path = cache.store("cuda", "k", ".cubin", data=b"data")
    rec = json.loads(record.read_text())
    rec["key"] = "another key"
    record.write_text(json.dumps(rec))
    assert cache.load("cuda", "k", ".cubin") is None and not path.exists()


def test_expected_content_is_enforced(root):
    path = cache.get_or_build("eri_gen", "k", ".py", data="x = 1\n", prefix="mod_")
    assert path.name.startswith("mod_") and path.read_text() == "x = 1\n"
    # a valid entry with a record that matches, but not the content the caller generated
    assert cache.load("eri_gen", "k", ".py", prefix="mod_", expect_sha256=cache.sha256_bytes("x = 2\n")) is None
    path = cache.get_or_build("eri_gen", "k", ".py", data="x = 2\n", prefix="mod_")
    assert path.read_text() == "x = 2\n"


@pytest.mark.parametrize("where", ["root", "kind"])
@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_open_directories_refused(root, where, mode):
    cache.store("cuda", "k", ".cubin", data=b"x")
    target = root if where == "root" else root / "cuda"
    os.chmod(target, mode)
    try:
        with pytest.raises(cache.CacheError, match="writable by") as err:
            cache.load("cuda", "k", ".cubin")
        assert str(target) in str(err.value)
        assert ("clear --kind cuda" in str(err.value)) == (where == "kind")
    finally:
        os.chmod(target, 0o700)
    assert cache.load("cuda", "k", ".cubin") is not None


def test_default_root_made_by_an_old_umask_is_repaired(tmp_path, monkeypatch):
    """~/.cache/hartree of hartree 0.1.0 under umask 002 (0775): made private again, with a
    warning, and the entries of an open kind directory discarded (they could be planted)."""
    monkeypatch.delenv("HARTREE_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    cache.store("cuda", "k", ".cubin", data=b"x")
    top = tmp_path / ".cache" / "hartree"
    os.chmod(top, 0o775)
    os.chmod(top / "cuda", 0o775)
    with pytest.warns(UserWarning) as caught:
        assert cache.load("cuda", "k", ".cubin") is None
    messages = [str(w.message) for w in caught]
    assert any(str(top) in m and "private (0700) now" in m for m in messages)
    assert any(str(top / "cuda") in m and "entries were discarded" in m for m in messages)
    assert os.stat(top).st_mode & 0o777 == 0o700
    assert os.stat(top / "cuda").st_mode & 0o777 == 0o700


def test_directory_of_another_user_refused(root, monkeypatch):
    cache.kind_dir("cuda")
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(cache.CacheError, match="belongs to another user"):
        cache.load("cuda", "k", ".cubin")
    with pytest.raises(cache.CacheError):
        cache_admin.clear()


def test_root_that_is_a_file_refused(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(cache.CacheError, match="cannot create"):
        cache.kind_dir("cuda")


def test_bad_kind_dir_can_be_cleared(root):
    cache.store("emulate", "k", ".so", data=b"x")
    os.chmod(root / "emulate", 0o777)
    with pytest.raises(cache.CacheError):
        cache.load("emulate", "k", ".so")
    assert cache_admin.clear("emulate") == {"emulate": 1}
    assert cache.load("emulate", "k", ".so") is None
    assert os.stat(root / "emulate").st_mode & 0o777 == 0o700


def _age(path, days):
    record = path.with_name(path.name + ".json")
    stamp = time.time() - days * 86400
    os.utime(record, (stamp, stamp))


def test_prune(root, monkeypatch):
    fresh = cache.store("cuda", "fresh", ".cubin", data=b"1")
    old = cache.store("cuda", "old", ".cubin", data=b"2")
    used_old = cache.store("cuda", "used-old", ".cubin", data=b"3")
    other_version = cache.store("emulate", "v", ".so", data=b"4")
    gone = cache.store(
        "eri_gen", {"sources": {"hartree/no_such_module.py": "0" * 64}}, ".py", data="x = 1\n", prefix="m_"
    )
    changed = cache.store("eri_gen", {"sources": {"hartree/cache.py": "0" * 64}}, ".py", data="x = 2\n", prefix="m_")
    current = cache.store(
        "eri_gen", {"sources": cache.module_sources("import hartree.cache")}, ".py", data="x = 3\n", prefix="m_"
    )
    (root / "eri_gen" / "__pycache__").mkdir()
    stale_pyc = root / "eri_gen" / "__pycache__" / f"{gone.stem}.cpython-3.pyc"
    stale_pyc.write_bytes(b"")
    no_record = cache.store("cuda", "no-record", ".cubin", data=b"5")
    no_record.with_name(no_record.name + ".json").unlink()
    orphan = root / "cuda" / "orphan.cubin.json"
    orphan.write_text("{}")
    leftover = root / "cuda" / ".x.cubin.host.1.abcd.hartree-tmp"
    leftover.write_bytes(b"")
    os.utime(leftover, (time.time() - 3 * 86400,) * 2)
    rec = _record(other_version)
    rec["hartree"] = "0.0.0-other"
    other_version.with_name(other_version.name + ".json").write_text(json.dumps(rec))
    for p in (old, used_old, current):
        _age(p, 40)
    monkeypatch.setattr(cache, "_in_use", {str(used_old)})
    removed = cache_admin.prune(older_than_days=30)
    assert removed == {"cuda": 2, "emulate": 1, "eri_gen": 3}
    assert fresh.exists() and used_old.exists()
    for p in (old, other_version, gone, changed, current, no_record, orphan, leftover, stale_pyc):
        assert not p.exists(), p
    assert cache_admin.prune(older_than_days=30, keep_current=False) == {"cuda": 1, "emulate": 0, "eri_gen": 0}
    assert fresh.exists() and not used_old.exists()


def test_info_and_clear(root):
    assert cache_admin.info()["exists"] is False and not root.exists()  # info creates nothing
    a = cache.store("cuda", "a", ".cubin", data=b"x" * 100)
    cache.store("cuda", "b", ".cubin", data=b"y" * 50)
    cache.store("emulate", "c", ".so", data=b"z")
    (root / "compiled").mkdir()  # first-run markers (cli.first_run): known
    (root / "mine").mkdir()
    _age(a, 2)
    report = cache_admin.info()
    assert report["root"] == str(root) and report["problem"] is None
    assert report["other"] == ["mine"]
    cuda = report["kinds"]["cuda"]
    assert cuda["entries"] == 2 and cuda["bytes"] >= 150
    assert cuda["newest_use"] - cuda["oldest_use"] > 86400
    assert report["kinds"]["eri_gen"]["entries"] == 0
    assert cache_admin.clear("cuda") == {"cuda": 2}
    assert cache_admin.info()["kinds"]["cuda"]["entries"] == 0
    assert cache_admin.clear() == {"emulate": 1}
    assert (root / "compiled").is_dir()  # only the kinds are removed


def test_concurrent_builds_in_threads(root):
    calls, paths, errors = [], [], []
    barrier = threading.Barrier(2)

    def build(tmp):
        calls.append(1)
        time.sleep(0.2)
        with open(tmp, "wb") as f:
            f.write(b"compiled")

    def worker():
        try:
            barrier.wait()
            paths.append(cache.get_or_build("emulate", "same", ".so", build=build))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(calls) == 1 and paths[0] == paths[1]
    assert cache.load("emulate", "same", ".so").read_bytes() == b"compiled"


def test_concurrent_stores_in_threads(root):
    errors = []

    def worker(i):
        try:
            for j in range(20):
                cache.store("cuda", "k", ".cubin", data=f"{i}-{j}".encode() * (i + 1))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    cache._checked.clear()
    path = cache.load("cuda", "k", ".cubin")
    assert path is not None and path.read_bytes() in (b"0-19", b"1-191-19")


_CHILD = """
import sys, time
from hartree import cache
def build(tmp):
    time.sleep(0.5)
    open(tmp, "wb").write(sys.argv[1].encode())
p = cache.get_or_build("emulate", "shared", ".so", build=build)
assert cache.load("emulate", "shared", ".so") == p
print(p.read_text())
"""


def test_two_processes_build_one_entry(root):
    env = dict(os.environ, HARTREE_CACHE_DIR=str(root))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, name], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for name in ("first", "second")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    texts = {out.strip() for out, _ in outs}
    assert len(texts) == 1 and texts <= {"first", "second"}  # one built, the other reused


def test_module_sources_follow_imports():
    from hartree.integrals.eri_codegen import module_key, module_source

    sources = module_key(module_source([(0, 0, 0, 0)]))["sources"]
    for name in (
        "hartree/integrals/eri_prim.py",
        "hartree/integrals/rys.py",
        "hartree/integrals/eri_kernel.py",
        "hartree/integrals/jk.py",
        "hartree/integrals/eri_pairs.py",
        "hartree/basis/__init__.py",
        "hartree/basis/angular.py",
    ):
        assert name in sources, name
    assert "hartree/__init__.py" not in sources and "hartree/scf/driver.py" not in sources
    assert all(len(v) == 64 for v in sources.values())
    text = "from .eri_prim import (BOYS_TABLE,  # comment\n    U)\n"
    assert "hartree/integrals/eri_prim.py" in cache.module_sources(text, package="hartree.integrals")


def test_eri_module_content_checked_before_import(root, monkeypatch):
    from hartree.integrals import eri_codegen

    monkeypatch.setattr(eri_codegen, "_LOADED", {})
    classes = [(0, 0, 0, 0)]
    mod = eri_codegen.load_module(classes)
    path = eri_codegen.cache_dir() / os.path.basename(mod.__file__)
    text = eri_codegen.module_source(classes)
    assert path.read_text() == text
    sys.modules.pop(mod.__name__, None)
    path.write_text(text.replace("Unrolled Rys", "Tampered"))
    cache._checked.clear()
    eri_codegen._LOADED.clear()
    mod = eri_codegen.load_module(classes)
    assert path.read_text() == text and hasattr(mod, "cart_block_gen")
    sys.modules.pop(mod.__name__, None)


@pytest.mark.skipif(not cache.shutil.which("g++"), reason="needs g++")
def test_shared_library_keyed_by_flags(root):
    import ctypes

    src = 'extern "C" int answer() { return 42; }\n'
    a = cache.shared_library("emulate", src, ["-O0", "-shared", "-fPIC"])
    b = cache.shared_library("emulate", src, ["-O1", "-shared", "-fPIC"])
    assert a != b and ctypes.CDLL(str(a)).answer() == 42
    assert _record(a)["key"]["compiler"]["version"]
    assert cache.shared_library("emulate", src, ["-O0", "-shared", "-fPIC"]) == a
    with pytest.raises(RuntimeError, match="failed"):
        cache.shared_library("emulate", "this is not C++", ["-shared", "-fPIC"])
    assert not [n for n in os.listdir(a.parent) if n.startswith(".")]


@pytest.mark.skipif(not cache.shutil.which("g++"), reason="needs g++")
def test_emulator_shim_precompiled_and_libraries_built_side_by_side(root, tmp_path):
    """The emulator's shim is a header entry with g++'s precompiled form beside it, which g++
    uses (-H marks a used .gch with '!'); a library built behind it is the entry of the same
    unit with the shim inline (one key); one compile() call of several sources returns their
    modules in the order of the sources."""
    import ctypes

    import numpy as np

    from hartree.device import emulator

    header = emulator.precompiled_shim(["-O0", "-std=c++17", "-fPIC", "-w"])
    gch = header.with_name(header.name + ".gch")
    assert header.read_text() == emulator.shim() and gch.is_file() and _record(gch)["key"] == _record(header)["key"]
    flags = ["-O0", "-std=c++17", "-shared", "-fPIC", "-w"]
    src = 'extern "C" double root2() { return sqrt(2.0) + fmax(0.0, -1.0); }\n'
    lib = cache.shared_library("emulate", src, flags, prelude=(header, emulator.shim()))
    root2 = ctypes.CDLL(str(lib)).root2
    root2.restype = ctypes.c_double
    assert root2() == 2.0**0.5
    assert cache.shared_library("emulate", emulator.shim() + src, flags) == lib
    (tmp_path / "unit.cpp").write_text(src)
    done = subprocess.run(
        ["g++", *flags, "-H", "-include", str(header), "-o", str(tmp_path / "unit.so"), str(tmp_path / "unit.cpp")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"! {gch}" in done.stderr.splitlines()

    kernel = 'extern "C" __global__ void fill_{0}(double* out) {{ out[threadIdx.x] = {0} + threadIdx.x; }}\n'
    modules = emulator.EmulatedBackend().compile([(kernel.format(k), None, None) for k in range(5)])
    for k, module in enumerate(modules):
        out = np.zeros(3)
        module.launch(f"fill_{k}", 1, 3, [out])
        assert out.tolist() == [k, k + 1, k + 2]


def _cli(*argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet", action="store_true")
    cache_command.add_arguments(parser)
    args = parser.parse_args(argv)
    out = io.StringIO()
    code = cache_command.execute(args, Console(file=out, width=120))
    return code, out.getvalue()


def test_cli(root):
    cache.store("cuda", "a", ".cubin", data=b"x" * 2048)
    code, out = _cli("info")
    assert code == 0 and str(root) in out and "cuda" in out and "2.2 KiB" in out
    code, out = _cli("prune", "--days", "1")
    assert code == 0 and "removed 0 entries" in out
    code, out = _cli("clear", "--kind", "cuda")
    assert code == 0 and "removed 1 entry" in out and "cuda 1" in out
    code, out = _cli("--quiet", "info")
    assert out.startswith("0 entries")
    with pytest.raises(cache.InputError, match="--days"):
        _cli("clear", "--days", "3")
