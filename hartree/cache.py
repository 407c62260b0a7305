"""The one on-disk cache of what hartree generates and compiles; every entry is verified.

Kinds, one directory each under the root: ``cuda`` (NVRTC cubins, :mod:`hartree.device.compile`),
``emulate`` (g++ libraries of generated CUDA run on the CPU in tests:
:mod:`hartree.device.emulator`), ``eri_gen`` (the generated numba modules, imported from
here: unrolled ERI kernels, :mod:`hartree.integrals.eri_codegen`; the one-electron kernels,
:mod:`hartree.integrals.os_codegen`).

Layout::

    $HARTREE_CACHE_DIR, or ~/.cache/hartree      the root (created mode 0700)
      <kind>/                                    mode 0700
        <prefix><digest><suffix>                 an entry; digest: SHA-256 of its key (32 hex)
        <entry>.json                             its record: key, SHA-256 and size of the entry,
                                                 created, hartree version; mtime = last use
        <entry>.lock                             flock(2) lock taken while the entry is built
        .<entry>.<host>.<pid>.<rand>.hartree-tmp an entry being written (io.files.atomic_path)
        .build-XXXXXXXX/                         g++ work directory of a build in progress
        __pycache__/                             eri_gen only: Python's bytecode and numba's
                                                 cache of the generated modules

Keys are JSON dicts naming everything that shapes an entry: for the cubins the source text
SHA-256, compile options, GPU arch and NVRTC version; for the g++ libraries the SHA-256 of
the whole translation unit (shim + generated source + wrappers), the flags and the compiler
(path and ``--version``); for ``eri_gen`` the generated text and the SHA-256 of every
hartree module it imports, found by :func:`module_sources` (``import`` statements, followed
recursively inside the hartree package -- so ``hartree/basis`` is part of it; the top-level
``hartree/__init__.py``, only version and re-exports, is not followed).

Verification: :func:`load` (and :func:`get_or_build`) return an entry only when its record
exists, is well formed, names the same key, and the SHA-256 of the file equals the one in
the record (and ``expect_sha256`` when the caller knows the content: ``eri_gen`` compares
with the text it just generated); otherwise the entry is removed and rebuilt.  A file is
hashed once per process (then trusted while its inode, size and mtime stay the same).

Permissions: the root and each kind directory must be directories owned by the user
running hartree and not writable by group or others (a directory others can write lets
them plant code hartree would load).  The default root, which hartree makes itself, is
repaired when only its write bits are wrong (made 0700, a kind directory's entries
discarded, a warning says so: hartree 0.1.0 created it with the umask, 0775 under umask
002).  A directory named in ``HARTREE_CACHE_DIR`` is the user's and is never changed: there
:class:`CacheError` (an :class:`~hartree.errors.InputError`, exit code 2) says which and
how to fix it (``chmod 700``, ``hartree cache clear --kind K`` or another
``HARTREE_CACHE_DIR``).  Directories above the root are not checked.

Concurrency: an entry is built under an exclusive ``flock`` on ``<entry>.lock`` (threads
and processes alike) and written through a temporary file, fsync and ``os.replace``, then
its record; a reader that finds entry and record disagreeing looks again under the lock.
Two processes compiling the same entry both end with a valid one (the second uses the
first's).

Pruning (:mod:`hartree.cache_admin`, with ``info`` and ``clear``): ``prune`` drops entries whose
record is missing or damaged, names another
hartree version, or names key sources that no longer exist or changed, and entries not
used for ``older_than_days`` (the record's mtime is touched on every load).  Entries this
process loaded or stored are kept with ``keep_current``.  ``clear`` removes kind
directories outright (they are rebuilt private); running it while another hartree process
builds or loads entries can make that process fail.

numba: the generated ``eri_gen`` module is imported from its file, so numba's
``cache=True`` keeps its compiled code in ``eri_gen/__pycache__`` (numba's own mechanism,
not verified here; it lives inside the private kind directory).  numba keys that cache by
the module file's modification time and size: a module whose content changes gets a new
name (its key contains the text), and a damaged module file is written anew (new mtime),
so numba never reuses code compiled from other text.  ``NUMBA_CACHE_DIR`` moves numba's
part elsewhere.
"""

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path

from ._version import __version__
from .errors import InputError
from .io.files import atomic_path

#: Version of the record format (a record of another format is treated as missing).
FORMAT = 1

#: The kinds of entry, with what they hold.
KINDS = {
    "cuda": "NVRTC cubins of the generated CUDA kernels (GPU runs)",
    "emulate": "g++ libraries of CUDA kernels run on the CPU (J/K, lattices, atomic; emulation in tests)",
    "eri_gen": "generated numba modules (unrolled ERI kernels, one-electron kernels), with numba's cache",
}

_PACKAGE = Path(__file__).resolve().parent  # .../hartree
_lock = threading.Lock()
_checked = {}  # str(path) -> ((dev, ino, size, mtime_ns), sha256): hashed by this process
_in_use = set()  # str(path) of entries this process loaded or stored (prune keeps them)
_STALE_TEMP_S = 86400.0  # hidden leftovers (temporary files, build dirs) older than this go


class CacheError(InputError):
    """The cache directory cannot be used safely: not a directory, owned by another user,
    or writable by group or others (the message names it and the fix)."""


# ------------------------------------------------------------------------------ places
def root(create=True):
    """The cache root, ``$HARTREE_CACHE_DIR`` or ``~/.cache/hartree`` (a Path); created
    private (0700) and checked (see the module docstring) when ``create``."""
    base = os.environ.get("HARTREE_CACHE_DIR") or os.path.join("~", ".cache", "hartree")
    path = Path(os.path.abspath(os.path.expanduser(base)))
    if create:
        _private_dir(path, "the cache directory", _root_hint(path), repair=_is_default(path))
    return path


def _is_default(path):
    """True for the default root (~/.cache/hartree, made by hartree itself), which hartree
    may repair; a directory named in HARTREE_CACHE_DIR is the user's and never changed."""
    return not os.environ.get("HARTREE_CACHE_DIR")


def kind_dir(kind, create=True):
    """Directory of one kind of entry (created private and checked when ``create``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r} (known: {', '.join(KINDS)})")
    path = root(create) / kind
    if create:
        _private_dir(
            path, f"the {kind} cache directory", _kind_hint(path, kind), repair=_is_default(path), entries=True
        )
    return path


def _root_hint(path):
    return (
        f"make it private ('chmod 700 {path}', then 'hartree cache clear' unless only you "
        "could write there) or set HARTREE_CACHE_DIR to a private directory"
    )


def _kind_hint(path, kind):
    return (
        f"remove it with 'hartree cache clear --kind {kind}' (it is made again, private) "
        f"or run 'chmod 700 {path}' if only you could write there"
    )


def _private_dir(path, what, hint, repair=False, entries=False):
    """Create ``path`` private, or check it.  A directory of the user's that group or others
    may write is refused -- or, with ``repair`` (the default root, which hartree made itself,
    e.g. under umask 002 by hartree 0.1.0), made private again with a warning, its entries
    discarded when ``entries`` (someone else could have planted them)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise CacheError(
            f"cannot create {what} {path}: {(exc.strerror or str(exc)).lower()}; "
            "set HARTREE_CACHE_DIR to a directory of your own"
        ) from None
    problem = _problem(path, what)
    if problem and repair and _repairable(path):
        if entries:
            shutil.rmtree(path)
            os.makedirs(path, mode=0o700)
        else:
            os.chmod(path, 0o700)
        warnings.warn(
            f"{what} {path} was writable by group or others; it is private (0700) "
            "now" + (" and its entries were discarded" if entries else ""),
            stacklevel=3,
        )
        problem = _problem(path, what)
    if problem:
        raise CacheError(f"{problem}; {hint}")


def _repairable(path):
    """A real directory owned by this user whose only fault is its group/other write bit."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _problem(path, what):
    """Why ``path`` cannot be a cache directory, or None."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot use {what} {path}: {(exc.strerror or str(exc)).lower()}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is not a directory"
    if st.st_uid != os.geteuid():
        return (
            f"{what} {path} belongs to another user (uid {st.st_uid}); hartree loads "
            "compiled code from its cache and uses only a directory of its own"
        )
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("others", 0o002)) if st.st_mode & bit)
        return (
            f"{what} {path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}), "
            "who could plant code that hartree loads"
        )
    return None


def digest(key):
    """32 hex digits of SHA-256 of a key (a str, or a JSON dict with sorted keys)."""
    text = key if isinstance(key, str) else json.dumps(key, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_path(kind, key, suffix, prefix=""):
    """Path of the entry for ``key`` (``<kind>/<prefix><digest><suffix>``); the kind
    directory is created and checked, the entry need not exist."""
    if suffix.endswith((".json", ".lock")) or "/" in suffix + prefix or prefix.startswith("."):
        raise ValueError(f"bad entry name parts {prefix!r}, {suffix!r}")
    return kind_dir(kind) / f"{prefix}{digest(key)}{suffix}"


def _record_path(path):
    return path.with_name(path.name + ".json")


def _lock_path(path):
    return path.with_name(path.name + ".lock")


def _rm(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _is_entry(name):
    return not (name.startswith(".") or name.endswith((".json", ".lock")) or name == "__pycache__")


# ------------------------------------------------------------------------------ verification
def sha256_bytes(data):
    """Hex SHA-256 of bytes (or of str, UTF-8)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _read_record(path):
    """The record dict of the entry ``path``, or None when missing or not well formed."""
    try:
        record = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(record, dict)
        or record.get("format") != FORMAT
        or not isinstance(record.get("sha256"), str)
        or not isinstance(record.get("size"), int)
        or "key" not in record
    ):
        return None
    return record


def _canonical(key):
    return json.loads(json.dumps(key, sort_keys=True))


def _hash_open_file(path):
    """((dev, ino, size, mtime_ns), sha256) of the regular file ``path`` (not a link) owned by
    this user, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with _lock:
            known = _checked.get(str(path))
        if known is not None and known[0] == ident:
            return known
        h = hashlib.sha256()
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return ident, h.hexdigest()


def _verify(path, key, expect_sha256=None):
    """True when ``path`` holds a whole, unaltered entry for ``key`` (module docstring)."""
    record = _read_record(path)
    if record is None or record["key"] != _canonical(key):
        return False
    if expect_sha256 is not None and record["sha256"] != expect_sha256:
        return False
    found = _hash_open_file(path)
    if found is None or found[1] != record["sha256"] or found[0][2] != record["size"]:
        return False
    with _lock:
        _checked[str(path)] = found
    return True


def _discard(path):
    """Remove an entry, its record and (for a module) its bytecode and numba cache."""
    with _lock:
        _checked.pop(str(path), None)
    _rm(path)
    _rm(_record_path(path))
    pycache = path.parent / "__pycache__"
    if path.suffix == ".py" and pycache.is_dir():
        for name in os.listdir(pycache):
            if name.split(".", 1)[0] == path.stem:
                _rm(pycache / name)


@contextlib.contextmanager
def _locked(path, blocking=True):
    """Exclusive flock on ``<entry>.lock``; yields False (not taken) when not blocking and
    another thread or process holds it."""
    lock = _lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise CacheError(f"cannot use the cache lock {lock}: {(exc.strerror or str(exc)).lower()}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            taken = True
        except BlockingIOError:
            if blocking:
                raise
            taken = False
        if taken:
            with contextlib.suppress(OSError):
                os.utime(fd)  # a lock in use is never an old orphan for prune
        yield taken
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ load, store
def _hit(path, key, expect_sha256):
    """True (and the entry noted as used) when ``path`` verifies for ``key``."""
    if not _verify(path, key, expect_sha256):
        return False
    with contextlib.suppress(OSError):
        os.utime(_record_path(path))  # the record's mtime: last use, for prune
    with _lock:
        _in_use.add(str(path))
    return True


def load(kind, key, suffix, prefix="", expect_sha256=None):
    """Path of the verified entry for ``key``, or None (a damaged entry is removed)."""
    path = entry_path(kind, key, suffix, prefix)
    if _hit(path, key, expect_sha256):
        return path
    if not (os.path.lexists(path) or os.path.lexists(_record_path(path))):
        return None
    with _locked(path):  # a store may be half done: look again once it is over
        if _hit(path, key, expect_sha256):
            return path
        _discard(path)
    return None


def store(kind, key, suffix, data=None, build=None, prefix=""):
    """Write the entry for ``key`` and its record; returns its path.

    ``data``: the bytes (or str, UTF-8) of the entry; or ``build(tmp)``: a function writing
    the entry at the temporary path ``tmp`` (e.g. a compiler's output file).
    """
    path = entry_path(kind, key, suffix, prefix)
    with _locked(path):
        _write(path, kind, key, data, build)
    return path


def get_or_build(kind, key, suffix, build=None, data=None, prefix="", expect_sha256=None):
    """Path of the verified entry for ``key``, written first (:func:`store`) when missing
    or damaged; one thread or process builds, the others wait and use its entry.  With
    ``data`` the entry's content must equal it (``expect_sha256`` defaults to its hash)."""
    if data is not None and expect_sha256 is None:
        expect_sha256 = sha256_bytes(data)
    path = entry_path(kind, key, suffix, prefix)
    if _hit(path, key, expect_sha256):
        return path
    with _locked(path):
        if not _hit(path, key, expect_sha256):
            _discard(path)
            _write(path, kind, key, data, build)
    return path


def import_generated(key, text, prefix):
    """The Python module of generated source ``text``, imported from its verified ``eri_gen``
    entry (written first when missing or different from ``text``), as
    ``_hartree_<prefix><digest>`` so that numba caches its functions beside the entry."""
    import importlib.util
    import sys

    path = get_or_build("eri_gen", key, ".py", data=text.encode(), prefix=prefix)
    name = f"_hartree_{prefix}{digest(key)[:16]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _write(path, kind, key, data, build):
    """Entry then record, each atomically (the entry's lock is held)."""
    if (data is None) == (build is None):
        raise ValueError("give exactly one of data and build")
    _rm(_record_path(path))  # never an old record beside a new entry
    with atomic_path(path) as tmp:
        if data is not None:
            with open(tmp, "wb") as handle:
                handle.write(data.encode() if isinstance(data, str) else data)
        else:
            build(tmp)
    found = _hash_open_file(path)
    if found is None:
        raise CacheError(f"the cache entry {path} could not be read back after writing it")
    record = {
        "format": FORMAT,
        "kind": kind,
        "key": _canonical(key),
        "sha256": found[1],
        "size": found[0][2],
        "hartree": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with atomic_path(_record_path(path)) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
    with _lock:
        _checked[str(path)] = found
        _in_use.add(str(path))


# ------------------------------------------------------------------------------ keys
def _module_file(dotted):
    """File of the hartree module (or package) ``dotted``, or None (not hartree's / a name)."""
    parts = dotted.split(".")
    if parts[0] != "hartree" or len(parts) == 1:  # not hartree's, or its top-level
        return None  # __init__ (version, re-exports only)
    base = _PACKAGE.joinpath(*parts[1:])
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]+)", re.MULTILINE)


def _names(text):
    """'a as b, (c, d)  # note' -> ['a', 'c', 'd'] (parentheses and comments may span lines)."""
    text = re.sub(r"#[^\n]*", "", text)
    items = text.replace("(", " ").replace(")", " ").replace("\\", " ").split(",")
    return [item.split()[0] for item in items if item.split()]


def _imported(text, package):
    """Dotted names the Python ``text`` (of a module in ``package``) may import: every
    ``import`` line (also inside functions; a line scan, ast would be ten times slower on
    the generated module), and ``from X import y`` as X and X.y."""
    for match in _IMPORT.finditer(text):
        yield from _names(match.group(1))
    for match in _FROM.finditer(text):
        module, names = match.groups()
        level = len(module) - len(module.lstrip("."))
        if level:
            parts = package.split(".")
            parts = parts[: len(parts) - level + 1]
            module = ".".join(parts + ([module[level:]] if module[level:] else []))
        yield module
        yield from (f"{module}.{name}" for name in _names(names))


@functools.lru_cache(maxsize=256)
def _file_sha256(path, mtime_ns, size):
    return sha256_bytes(Path(path).read_bytes())


def _source_digest(file):
    st = os.stat(file)
    return _file_sha256(str(file), st.st_mtime_ns, st.st_size)


def module_sources(*texts, package="hartree"):
    """{'hartree/x/y.py': sha256} of every hartree module the Python ``texts`` import,
    followed recursively through the imports of those modules (within hartree only; all
    ``import`` statements count, also those inside functions; ``hartree/__init__.py`` is
    left out, else every key would cover the whole package)."""
    found = {}
    todo = [(text, package) for text in texts]
    while todo:
        text, pkg = todo.pop()
        for name in _imported(text, pkg):
            file = _module_file(name)
            if file is None:
                continue
            rel = file.relative_to(_PACKAGE.parent).as_posix()
            if rel in found:
                continue
            found[rel] = _source_digest(file)
            dotted = rel[:-3].replace("/", ".")
            todo.append((file.read_text(encoding="utf-8"), dotted.rsplit(".", 1)[0]))
    return dict(sorted(found.items()))


def _sources_current(key):
    """False when the key names sources (``module_sources``) that vanished or changed."""
    sources = key.get("sources") if isinstance(key, dict) else None
    if not isinstance(sources, dict):
        return True
    for rel, sha in sources.items():
        file = _PACKAGE.parent / rel
        try:
            if _source_digest(file) != sha:
                return False
        except OSError:
            return False
    return True


# ------------------------------------------------------------------------------ host compiler
@functools.lru_cache(maxsize=8)
def compiler_identity(compiler="g++"):
    """{'path', 'version'} of a host compiler (its ``--version`` first line), for keys."""
    path = shutil.which(compiler)
    if path is None:
        raise RuntimeError(f"{compiler} not found on the PATH")
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return {"path": path, "version": (done.stdout.splitlines() or ["?"])[0].strip()}


def shared_library(kind, source, flags, compiler="g++", prelude=None):
    """Path of a verified shared library compiled from the C++ translation unit ``source``
    (the whole text: shim, generated code, wrappers) with ``compiler flags -o LIB``; keyed
    by the text, the flags and the compiler's path and version.  ``prelude``: None, or
    (header path, its text) when the unit is that text followed by ``source``: compiled as
    ``-include HEADER`` (g++ then uses a precompiled ``HEADER.gch`` beside it, when one built
    with the same flags is there), same key and same code as with the text inline."""
    identity = compiler_identity(compiler)
    header, head = prelude if prelude is not None else (None, "")
    key = {"compiler": identity, "flags": list(flags), "source_sha256": sha256_bytes(head + source)}

    def build(tmp):
        with tempfile.TemporaryDirectory(prefix=".build-", dir=kind_dir(kind)) as work:
            cpp = os.path.join(work, "source.cpp")
            with open(cpp, "w", encoding="utf-8") as handle:
                handle.write(source)
            include = [] if header is None else ["-include", str(header)]
            done = subprocess.run(
                [identity["path"], *flags, *include, "-o", tmp, cpp], capture_output=True, text=True, check=False
            )
        if done.returncode:
            raise RuntimeError(f"{compiler} {' '.join(flags)} failed:\n{done.stderr[-3000:]}")

    return get_or_build(kind, key, ".so", build=build)
