"""Output paths checked before any computation starts.

:func:`check_outputs` is called by every command with all the files it will write and
all the files it reads, before the first integral is computed, so that a run never ends
late (after hours of SCF) because an output cannot be written, and never replaces a file
the user gave as input.  Rules, each ending in one :class:`~hartree.errors.InputError`
(exit code 2) naming the option and the path:

* an output may not be a directory or another non-regular file (a device, a FIFO);
* its directory must exist and be writable;
* two outputs may not name the same file, and no output may be one of the inputs (compared
  by real path and by inode, so symbolic and hard links count) -- not even with --overwrite;
* an existing output is replaced only with --overwrite.

Checkpoints follow a rule of their own (:mod:`hartree.scf.checkpoint`): a run may rewrite
its own checkpoint without --overwrite.
"""

from __future__ import annotations

import os
import stat

from ..errors import InputError


def _identity(path):
    """(device, inode) of an existing file, else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def same_file(a, b):
    """True when paths ``a`` and ``b`` name the same file (real path or inode)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    ia, ib = _identity(a), _identity(b)
    return ia is not None and ia == ib


def check_output_path(flag, path, overwrite=False, exists_ok=False):
    """InputError unless ``path`` can be created or replaced (see the module docstring).

    exists_ok: an existing regular file is fine without ``overwrite`` (the caller decided,
    e.g. a run's own checkpoint)."""
    path = os.fspath(path)
    if not path or path.endswith(os.sep):
        raise InputError(f"{flag} {path!r} is not a file name")
    if os.path.isdir(path):
        raise InputError(f"{flag} {path} is a directory")
    if os.path.lexists(path):
        try:
            mode = os.stat(path).st_mode
        except OSError:  # a dangling symbolic link: the target will be created
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise InputError(f"{flag} {path} exists and is not a regular file")
    target = os.path.realpath(path)
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise InputError(f"{flag} {path}: directory {os.path.dirname(os.path.abspath(path))} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: directory {parent} is not writable")
    if os.path.exists(path) and not (overwrite or exists_ok):
        raise InputError(f"{flag} {path} already exists; use --overwrite to replace it")


def check_outputs(outputs, inputs=(), overwrite=False):
    """Check every output before any work (module docstring).

    outputs: (flag, path) pairs, or (flag, path, exists_ok) triples; None paths are skipped.
    inputs: (what, path) pairs of the files the command reads (None skipped).
    """
    inputs = [(what, os.fspath(p)) for what, p in inputs if p is not None]
    seen = []
    for entry in outputs:
        flag, path = entry[0], entry[1]
        exists_ok = bool(entry[2]) if len(entry) > 2 else False
        if path is None:
            continue
        path = os.fspath(path)
        for what, source in inputs:
            if os.path.exists(source) and same_file(path, source):
                raise InputError(
                    f"{flag} {path} is the {what}; an output may not replace an input (choose another name)"
                )
        for other_flag, other in seen:
            if same_file(path, other):
                raise InputError(f"{other_flag} and {flag} both name {path}")
        check_output_path(flag, path, overwrite, exists_ok)
        seen.append((flag, path))
