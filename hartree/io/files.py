"""The one place hartree reads a user's files and writes its outputs.

Readers (every text or JSON input goes through them, so that a damaged file ends in one
:class:`~hartree.errors.InputError` naming it, never a ``UnicodeDecodeError``):

* :func:`read_text` -- a UTF-8 text file (a byte-order mark is dropped, line ends are
  normalised to ``\\n``); missing files, directories, binary data (NUL bytes) and invalid
  UTF-8 are refused with the file's name and what is wrong.
* :func:`read_json` -- a JSON document; NaN, Infinity and numbers that overflow a double
  (``1e999``) are refused, so no non-finite number enters a calculation from a JSON input.

Writers (every output -- JSON, Molden, cube, npy, HDF5, PNG, checkpoints -- goes through
:func:`atomic_path`):

* the data go to a temporary file in the target's directory (``.NAME.HOST.PID.RANDOM.hartree-tmp``),
  created with the permissions of an ordinary new file (0666 less the umask) or those of
  the file it replaces;
* when the writer finishes, the temporary file is flushed to disk (``fsync``) and renamed
  onto the target (``os.replace``, atomic on POSIX), and the directory is synced: a reader
  sees the old file or the new one, never a part;
* on any error or signal (``KeyboardInterrupt``, :class:`~hartree.errors.Terminated`) the
  temporary file is removed and the target is untouched;
* temporary files left by a process that was killed outright (SIGKILL, power loss) are
  removed by the next write to the same target from the same host, once their process is
  gone;
* ``OSError`` becomes one line naming the user's file: :class:`~hartree.errors.ResourceError`
  for a full disk, a quota or the file-size limit (``ulimit -f``), InputError for a path
  that cannot be written (permissions, read-only file system, missing directory).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import socket

from ..errors import InputError, ResourceError

#: errno values that mean "the machine ran out of something" (exit code 5).
_RESOURCE_ERRNOS = frozenset(
    e for e in (errno.ENOSPC, errno.EFBIG, errno.ENOMEM, getattr(errno, "EDQUOT", None)) if e is not None
)
#: errno values that mean "this path cannot be used" (exit code 2).
_PATH_ERRNOS = frozenset(
    (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP)
)
_TMP_SUFFIX = ".hartree-tmp"


# ------------------------------------------------------------------------------ readers
def read_bytes(path, what="file", limit=None):
    """The bytes of the regular file ``path`` (at most ``limit`` of them: a file's head, to
    tell its format); InputError (naming ``what`` and the path) when it is missing, a
    directory, or unreadable."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError(f"{what} {path} is a directory, not a file")
    if not os.path.exists(path):
        raise InputError(f"{what} not found: {path}")
    try:
        with open(path, "rb") as handle:
            return handle.read() if limit is None else handle.read(limit)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except MemoryError:
        raise ResourceError(f"{what} {path} is too large to read into memory") from None


def decode_text(data, name="file"):
    """str from the bytes of a UTF-8 text file (see :func:`read_text`)."""
    if b"\x00" in data:
        raise InputError(f"{name} is not a text file (it contains binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not a UTF-8 text file (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(path, what="file"):
    """The text of the UTF-8 file ``path`` (line ends ``\\n``); InputError naming it when it
    is missing, a directory, binary or not UTF-8."""
    path = os.fspath(path)
    return decode_text(read_bytes(path, what), f"{what} {path}")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large for a double")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(text, name="JSON document"):
    """The value of a JSON text; InputError for invalid JSON, NaN, Infinity or overflow."""
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None
    except RecursionError:
        raise InputError(f"{name} is nested too deeply to be a hartree input") from None


def _finite_or_none(value):
    """A copy of a JSON-able value with non-finite floats (and numpy scalars) made JSON's."""
    if isinstance(value, dict):
        return {str(k): _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(doc, indent=1):
    """JSON text of a document, non-finite numbers written as null (JSON has no NaN)."""
    return json.dumps(_finite_or_none(doc), indent=indent, allow_nan=False) + "\n"


def read_json(path, what="file"):
    """The JSON document in ``path`` (see :func:`parse_json`, :func:`read_text`)."""
    path = os.fspath(path)
    return parse_json(read_text(path, what), f"{what} {path}")


# ------------------------------------------------------------------------------ errors
def output_error(exc, path):
    """The HartreeError for an OSError met while writing the output ``path``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.EFBIG:
        return ResourceError(f"cannot write {path}: the file-size limit was reached (ulimit -f); nothing was written")
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return ResourceError(f"cannot write {path}: {reason.lower()}; nothing was written")
    if exc.errno in _PATH_ERRNOS:
        return InputError(f"cannot write {path}: {reason.lower()}")
    return ResourceError(f"cannot write {path}: {reason}; nothing was written")


# ------------------------------------------------------------------------------ writers
def _host_tag():
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else
        return True
    return True


def temporary_name(target):
    """The temporary file name used for writing ``target`` (same directory)."""
    directory, base = os.path.split(target)
    return os.path.join(directory, f".{base[:120]}.{_host_tag()}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}")


def remove_stale_temporaries(target):
    """Remove temporary files of earlier writes to ``target`` whose process (on this host)
    is gone; returns the removed paths."""
    directory, base = os.path.split(target)
    prefix = f".{base[:120]}.{_host_tag()}."
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_TMP_SUFFIX)):
            continue
        pid_text = name[len(prefix) :].split(".", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(directory, name))
                removed.append(os.path.join(directory, name))
    return removed


def _fsync_path(path, directory=False):
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if directory:
            return  # some file systems do not open directories; nothing to sync
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """Context manager yielding a temporary path to write ``path`` through.

    The caller (or a library: h5py, matplotlib, numpy) writes the whole file at the
    yielded path; on a normal exit it is synced and renamed onto ``path``; on any
    exception it is removed and ``path`` keeps its old content (see the module docstring).
    The temporary file already exists (empty) with the final permissions.
    """
    target = os.path.realpath(os.fspath(path))  # write through a symbolic link, keep it
    remove_stale_temporaries(target)
    tmp = temporary_name(target)
    mode = 0o666
    with contextlib.suppress(OSError):
        mode = os.stat(target).st_mode & 0o7777 if os.path.isfile(target) else mode
    # creation inside the block that removes the file: a signal's exception arriving between
    # creating the temporary file and the try below would otherwise leave it behind
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            os.close(fd)
            if mode != 0o666:
                os.chmod(tmp, mode)
        except OSError as exc:
            raise output_error(exc, path) from None
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise output_error(exc, path) from None
        if isinstance(exc, MemoryError):
            raise ResourceError(f"not enough memory to write {path}; nothing was written") from None
        raise
    _fsync_path(os.path.dirname(target) or ".", directory=True)


@contextlib.contextmanager
def atomic_output(path, binary=False):
    """Context manager yielding an open file (text UTF-8, or binary) whose content replaces
    ``path`` atomically when the block ends without an error (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        if binary:
            with open(tmp, "wb") as handle:
                yield handle
        else:
            with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
                yield handle


def write_text(path, text):
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_output(path) as handle:
        handle.write(text)


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically."""
    with atomic_output(path, binary=True) as handle:
        handle.write(data)
