"""Checkpoint of the displaced gradients of a finite-difference Hessian (JSON).

Every finished displacement is added to the file, which is rewritten atomically
(:func:`hartree.io.files.write_text`) after each one, so an interrupted ``freq`` (SIGINT,
SIGTERM, a killed batch job) loses at most the displacements that were running.  Given
the same file again, a run computes only the missing ones.

Layout (``schema``: ``hartree_freq_checkpoint``, ``version``: 1)::

    {"schema": ..., "version": 1, "fingerprint": "<sha256 hex>",
     "job": {"method": ..., "basis": ..., "natm": N, "step_bohr": h, "displacements": 6N},
     "displacements": {"<index>": {"energy": Eh, "gradient": [3N floats, Eh/bohr],
                                   "dipole": [3 floats, e bohr]}, ...}}

Index k displaces cartesian coordinate k // 2 by +h (k even) or -h (k odd).  Floats are
written with Python's shortest round-trip repr, so a resumed Hessian is bit-identical.
The fingerprint hashes everything the gradients depend on: atomic numbers, coordinates,
charge, multiplicity, the basis data, the method, the step and the SCF tolerances.  A file
with another fingerprint (another job) or damaged content is refused with one line, and
replaced only when the caller says so (``--overwrite``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from ..errors import InputError
from ..io.files import read_json, write_text

SCHEMA = "hartree_freq_checkpoint"
VERSION = 1


def fingerprint(molecule, basis, method, step, scf_tolerances) -> str:
    """sha256 hex digest of the job (module docstring); ``scf_tolerances`` a dict."""
    digest = hashlib.sha256()
    for array in (
        np.asarray(molecule.numbers, dtype=np.int64),
        np.asarray(molecule.coords, dtype=np.float64),
        np.asarray(basis.shell_atom, dtype=np.int64),
        np.asarray(basis.shell_l, dtype=np.int64),
        np.asarray(basis.shell_nprim, dtype=np.int64),
        np.asarray(basis.exponents, dtype=np.float64),
        np.asarray(basis.coefficients, dtype=np.float64),
    ):
        digest.update(np.ascontiguousarray(array).tobytes())
    meta = {
        "charge": int(molecule.charge),
        "multiplicity": int(molecule.multiplicity),
        "pure": bool(basis.pure),
        "method": str(method),
        "step": repr(float(step)),
        "scf": {k: repr(v) for k, v in sorted(scf_tolerances.items())},
    }
    digest.update(json.dumps(meta, sort_keys=True).encode())
    return digest.hexdigest()


class DisplacementCheckpoint:
    """The checkpoint file of one job: ``records`` {index: (energy, gradient (N, 3), dipole (3,))}."""

    def __init__(self, path, job_fingerprint, job, records=None):
        self.path = os.fspath(path)
        self.fingerprint = job_fingerprint
        self.job = dict(job)
        self.records = dict(records or {})

    @classmethod
    def open(cls, path, job_fingerprint, job, overwrite=False):
        """The checkpoint at ``path``: its records when the file exists and belongs to this
        job, else empty.  InputError when it belongs to another job or is damaged, unless
        ``overwrite`` (then it is started afresh and replaced at the first write)."""
        path = os.fspath(path)
        if not os.path.exists(path):
            return cls(path, job_fingerprint, job)
        try:
            records = _read(path, job_fingerprint, job)
        except InputError:
            if overwrite:
                return cls(path, job_fingerprint, job)
            raise
        return cls(path, job_fingerprint, job, records)

    def add(self, index, energy, gradient, dipole):
        """Record one displacement and rewrite the file atomically."""
        self.records[int(index)] = (float(energy), np.asarray(gradient, dtype=np.float64), np.asarray(dipole))
        doc = {
            "schema": SCHEMA,
            "version": VERSION,
            "fingerprint": self.fingerprint,
            "job": self.job,
            "displacements": {
                str(k): {"energy": e, "gradient": [float(x) for x in g.ravel()], "dipole": [float(x) for x in d]}
                for k, (e, g, d) in sorted(self.records.items())
            },
        }
        write_text(self.path, json.dumps(doc, allow_nan=False) + "\n")


def _read(path, job_fingerprint, job):
    """Records of a checkpoint file that belongs to this job (InputError otherwise)."""
    doc = read_json(path, "freq checkpoint")
    where = f"checkpoint {path}"
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{where} is not a hartree freq checkpoint; choose another --checkpoint or use --overwrite")
    if doc.get("version") != VERSION:
        raise InputError(f"{where} has version {doc.get('version')!r}, this hartree reads version {VERSION}")
    if doc.get("fingerprint") != job_fingerprint:
        other = doc.get("job") if isinstance(doc.get("job"), dict) else {}
        what = ", ".join(f"{k} {other.get(k)}" for k in ("method", "basis", "natm", "step_bohr") if k in other)
        raise InputError(
            f"{where} belongs to another job ({what or 'different input'}: molecule, basis, method, step or SCF "
            "tolerances differ); use --overwrite to replace it or choose another --checkpoint"
        )
    entries = doc.get("displacements")
    if not isinstance(entries, dict):
        raise InputError(f"{where} is damaged: no displacements record")
    natm, total = int(job["natm"]), int(job["displacements"])
    records = {}
    for key, entry in entries.items():
        try:
            index = int(key)
            energy = float(entry["energy"])
            gradient = np.array(entry["gradient"], dtype=np.float64)
            dipole = np.array(entry["dipole"], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where} is damaged: displacement {key!r} is incomplete") from None
        if not 0 <= index < total or gradient.shape != (3 * natm,) or dipole.shape != (3,):
            raise InputError(f"{where} is damaged: displacement {key!r} has the wrong index or size")
        if not (math.isfinite(energy) and np.all(np.isfinite(gradient)) and np.all(np.isfinite(dipole))):
            raise InputError(f"{where} is damaged: displacement {key!r} has non-finite numbers")
        records[index] = (energy, gradient.reshape(natm, 3), dipole)
    return records
