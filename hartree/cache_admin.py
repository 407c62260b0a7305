"""Looking after the cache of :mod:`hartree.cache`: what it holds, clearing, pruning.

Used by ``hartree cache info|clear|prune`` (:mod:`hartree.cli.cache_command`); the rules
(what counts as stale, which directories may be touched) are those of the cache's module
docstring.
"""

import contextlib
import os
import shutil
import stat
import time
from pathlib import Path

from . import cache as store
from ._version import __version__
from .cache import (
    _STALE_TEMP_S,
    KINDS,
    CacheError,
    _discard,
    _is_entry,
    _kind_hint,
    _locked,
    _problem,
    _read_record,
    _record_path,
    _rm,
    _root_hint,
    _sources_current,
    root,
)


def _tree_bytes(path):
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_size
    return total


def info():
    """What the cache holds: {'root', 'exists', 'problem', 'other', 'kinds': {kind: {'path',
    'entries', 'bytes', 'oldest_use', 'newest_use' (epoch seconds or None), 'problem'}}}.
    Creates nothing."""
    top = root(create=False)
    out = {"root": str(top), "exists": top.is_dir(), "problem": None, "other": [], "kinds": {}}
    if out["exists"]:
        problem = _problem(top, "the cache directory")
        out["problem"] = problem and f"{problem}; {_root_hint(top)}"
        out["other"] = sorted(n for n in os.listdir(top) if n not in KINDS and n != "compiled")
    for kind in KINDS:
        d = top / kind
        row = {"path": str(d), "entries": 0, "bytes": 0, "oldest_use": None, "newest_use": None, "problem": None}
        if d.is_dir():
            problem = _problem(d, f"the {kind} cache directory")
            row["problem"] = problem and f"{problem}; {_kind_hint(d, kind)}"
            uses = []
            for name in os.listdir(d):
                if _is_entry(name):
                    row["entries"] += 1
                    with contextlib.suppress(OSError):
                        uses.append(os.stat(_record_path(d / name)).st_mtime)
            row["bytes"] = _tree_bytes(d)
            if uses:
                row["oldest_use"], row["newest_use"] = min(uses), max(uses)
        out["kinds"][kind] = row
    return out


def clear(kind=None):
    """Remove every entry (of one kind, or of all): the kind directories are deleted and
    made again on next use.  Returns {kind: entries removed}.  Only directories owned by
    this user are touched (CacheError otherwise); nothing else under the root is."""
    kinds = list(KINDS) if kind is None else [kind]
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown cache kind {kind!r} (known: {', '.join(KINDS)})")
    top = root(create=False)
    removed = {}
    for k in kinds:
        d = top / k
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            os.remove(d)  # a link where a kind directory belongs: drop it
            removed[k] = 0
            continue
        if st.st_uid != os.geteuid():
            raise CacheError(f"the {k} cache directory {d} belongs to another user; it was left alone")
        removed[k] = sum(1 for name in os.listdir(d) if _is_entry(name))
        shutil.rmtree(d)
    with store._lock:
        for p in [p for p in store._checked if Path(p).parent.name in kinds]:
            del store._checked[p]
        store._in_use.difference_update({p for p in store._in_use if Path(p).parent.name in kinds})
    return removed


def _stale(path, cutoff):
    """Why prune drops the entry ``path``, or None to keep it."""
    record = _read_record(path)
    if record is None:
        return "no valid record"
    if record.get("hartree") != __version__:
        return "made by another hartree version"
    if not _sources_current(record["key"]):
        return "its sources changed"
    try:
        if os.lstat(path).st_size != record["size"]:
            return "damaged"
        if os.stat(_record_path(path)).st_mtime < cutoff:
            return "not used recently"
    except OSError:
        return "unreadable"
    return None


def _old(path, age_s):
    try:
        return time.time() - os.lstat(path).st_mtime > age_s
    except OSError:
        return False


def prune(older_than_days=30, keep_current=True, kinds=None):
    """Drop stale entries (module docstring) and leftovers; returns {kind: entries removed}.

    An entry being built (its lock held) is left alone; with ``keep_current`` so are the
    entries this process loaded or stored.
    """
    top = root(create=False)
    if not top.is_dir():
        return {}
    problem = _problem(top, "the cache directory")
    if problem:
        raise CacheError(f"{problem}; {_root_hint(top)}")
    cutoff = time.time() - float(older_than_days) * 86400.0
    with store._lock:
        current = set(store._in_use) if keep_current else set()
    removed = {}
    for kind in kinds or KINDS:
        d = top / kind
        if d.is_dir():
            problem = _problem(d, f"the {kind} cache directory")
            if problem:
                raise CacheError(f"{problem}; {_kind_hint(d, kind)}")
            removed[kind] = _prune_kind(d, cutoff, current)
    return removed


def _prune_kind(d, cutoff, current):
    count = 0
    for name in os.listdir(d):
        path = d / name
        if _is_entry(name):
            if str(path) in current or _stale(path, cutoff) is None:
                continue
            with _locked(path, blocking=False) as taken:
                if taken and _stale(path, cutoff) is not None:
                    _discard(path)
                    count += 1
        elif name.endswith(".json") and not os.path.lexists(d / name[:-5]):  # orphan record
            with _locked(d / name[:-5], blocking=False) as taken:
                if taken and not os.path.lexists(d / name[:-5]):
                    _rm(path)
    for name in os.listdir(d):  # orphan locks, leftovers of dead writes and builds
        path = d / name
        if name.endswith(".lock") and not os.path.lexists(d / name[:-5]) and _old(path, 3600):
            with _locked(d / name[:-5], blocking=False) as taken:
                if taken:
                    _rm(path)
        elif name.startswith(".") and _old(path, _STALE_TEMP_S):
            _rm(path)
    pycache = d / "__pycache__"
    if pycache.is_dir():  # bytecode and numba cache of removed modules
        for name in os.listdir(pycache):
            if not (d / (name.split(".", 1)[0] + ".py")).exists():
                _rm(pycache / name)
    return count
