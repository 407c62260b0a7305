"""SCF checkpoints: one HDF5 file per job, rewritten every cycle, validated when read.

Writing goes through :func:`hartree.io.files.atomic_path` (temporary file in the same
directory, fsync, atomic rename; removed on any error or signal), so a killed run leaves
the previous complete checkpoint: at most one cycle is lost.  Arrays that are not finite
are never written.

Every checkpoint carries a **fingerprint** of its job: SHA-256 over the atomic numbers and
coordinates, charge, multiplicity, the basis data (shells, exponents, coefficients,
spherical or cartesian) and the method.  :func:`plan` decides, before any work, what a run
does with the file it is given (see its docstring): a run rewrites a checkpoint only when
the file does not exist, is its own (same fingerprint: a resume) or --overwrite was given.

Every file is **sealed** (:func:`seal`): the HDF5 data start after a 512-byte user block
that holds a signature and the SHA-256 of the rest of the file.  Reading first checks the
seal, so a truncated, bit-flipped or externally edited checkpoint is refused before the
HDF5 library parses its (possibly corrupted) metadata.  Then (:func:`read_checkpoint`)
every attribute and dataset is checked: present, of the right type and shape for the
molecule and basis recorded in the file, finite, the densities symmetric, occupations in
[0, 2], and the stored fingerprint equal to the one recomputed from the data.  Anything
else is one :class:`~hartree.errors.InputError` naming the file and the fault.

Layout (format 2; format 1, written by hartree 0.1.0, has no seal and no fingerprint and is
still read)::

    user block (512 bytes): "hartree-checkpoint-seal 2 sha256 <hex of the rest>"

    attrs: hartree_checkpoint (format), hartree_version, fingerprint, method, cycle,
           energy, converged, charge, multiplicity, basis_name, basis_pure
    numbers (natm,) int64, coords (natm, 3) bohr
    basis/shell_atom, shell_l, shell_nprim, shell_prim_start, shell_center,
          exponents, coefficients           (hartree.basis.Basis flat arrays)
    dm (nset, nao, nao)                     densities in the method's convention
                                            (nset 1 for RHF, 2 for UHF and ROHF)
    mo_coeff, mo_energy, mo_occ             (absent before the first diagonalisation)

h5py is imported by the functions that open a file, not with the module: a run without a
checkpoint does not load it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np

from .._version import __version__
from ..arrays import to_numpy
from ..constants import MAX_MO_COEFFICIENT
from ..errors import InputError
from ..io.files import atomic_path
from ..io.paths import check_output_path, same_file

FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)
#: Bytes reserved before the HDF5 data for the seal (HDF5's "user block").
USERBLOCK = 512
SEAL_MAGIC = b"hartree-checkpoint-seal"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
METHODS = ("rhf", "uhf", "rohf")
_BASIS_FIELDS = (
    "shell_atom",
    "shell_l",
    "shell_nprim",
    "shell_prim_start",
    "shell_center",
    "exponents",
    "coefficients",
)
#: Largest array a checkpoint may declare (elements); guards against a damaged header
#: that would make the reader allocate terabytes.
_MAX_ELEMENTS = 2**34


@dataclass
class Checkpoint:
    """Contents of a checkpoint file (numpy arrays)."""

    method: str
    cycle: int
    energy: float
    converged: bool
    numbers: np.ndarray
    coords: np.ndarray
    charge: int
    multiplicity: int
    basis_name: str
    basis_pure: bool
    basis_arrays: dict
    dm: np.ndarray
    mo_coeff: np.ndarray | None = None
    mo_energy: np.ndarray | None = None
    mo_occ: np.ndarray | None = None
    hartree_version: str = ""
    fingerprint: str = ""

    def basis(self):
        """The hartree Basis recorded in the file."""
        from ..basis import Basis

        return Basis(name=self.basis_name, pure=self.basis_pure, **self.basis_arrays)

    def molecule(self):
        """The hartree Molecule recorded in the file."""
        from ..molecule import Molecule

        return Molecule(numbers=self.numbers, coords=self.coords, charge=self.charge, multiplicity=self.multiplicity)


# ------------------------------------------------------------------------- fingerprint
def fingerprint(numbers, coords, charge, multiplicity, basis_arrays, basis_pure, method):
    """SHA-256 (hex) identifying a job: atoms and coordinates (bohr, exact), charge,
    multiplicity, basis data and method."""
    h = hashlib.sha256(b"hartree-checkpoint-job\0")
    h.update(np.ascontiguousarray(numbers, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(coords, dtype=np.float64).tobytes())
    h.update(f"{int(charge)} {int(multiplicity)} {bool(basis_pure)} {method}\0".encode())
    for name in _BASIS_FIELDS:
        dtype = np.float64 if name in ("shell_center", "exponents", "coefficients") else np.int64
        h.update(name.encode() + b"\0")
        h.update(np.ascontiguousarray(basis_arrays[name], dtype=dtype).tobytes())
    return h.hexdigest()


def job_fingerprint(molecule, basis, method):
    """The fingerprint of a run (see :func:`fingerprint`)."""
    return fingerprint(
        molecule.numbers,
        molecule.coords,
        molecule.charge,
        molecule.multiplicity,
        {n: getattr(basis, n) for n in _BASIS_FIELDS},
        basis.pure,
        method,
    )


# ------------------------------------------------------------------------- writing
def write_checkpoint(
    path, *, molecule, basis, method, cycle, energy, dm, mo_coeff=None, mo_energy=None, mo_occ=None, converged=False
):
    """Write the SCF state atomically.

    dm: (nset, nao, nao); orbitals optional (numpy or cupy; stored as numpy).  Raises
    ValueError (a bug upstream, never user input) for non-finite values: the previous
    checkpoint then stays as it was.
    """
    arrays = {"dm": to_numpy(dm)}
    for name, value in (("mo_coeff", mo_coeff), ("mo_energy", mo_energy), ("mo_occ", mo_occ)):
        if value is not None:
            arrays[name] = to_numpy(value)
    for name, value in arrays.items():
        if not np.all(np.isfinite(value)):
            raise ValueError(f"refusing to write non-finite {name} to checkpoint {path}")
    if not np.isfinite(energy):
        raise ValueError(f"refusing to write a non-finite energy to checkpoint {path}")
    with atomic_path(path) as tmp:
        _write_hdf5(tmp, molecule, basis, method, cycle, energy, converged, arrays)
        seal(tmp)


def _write_hdf5(tmp, molecule, basis, method, cycle, energy, converged, arrays):
    """The HDF5 content of a checkpoint (after a USERBLOCK-byte user block, see seal())."""
    import h5py

    with h5py.File(tmp, "w", userblock_size=USERBLOCK) as f:
        f.attrs["hartree_checkpoint"] = FORMAT_VERSION
        f.attrs["hartree_version"] = __version__
        f.attrs["fingerprint"] = job_fingerprint(molecule, basis, method)
        f.attrs["method"] = method
        f.attrs["cycle"] = int(cycle)
        f.attrs["energy"] = float(energy)
        f.attrs["converged"] = bool(converged)
        f.attrs["charge"] = int(molecule.charge)
        f.attrs["multiplicity"] = int(molecule.multiplicity)
        f.attrs["basis_name"] = str(basis.name)
        f.attrs["basis_pure"] = bool(basis.pure)
        f["numbers"] = np.asarray(molecule.numbers)
        f["coords"] = np.asarray(molecule.coords)
        g = f.create_group("basis")
        for name in _BASIS_FIELDS:
            g[name] = np.asarray(getattr(basis, name))
        for name, value in arrays.items():
            f[name] = value


# ------------------------------------------------------------------------- seal
def _content_digest(path):
    """SHA-256 (hex) of the file after its user block."""
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(USERBLOCK)
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def seal(path):
    """Write the seal into the user block of a checkpoint file: a signature, the format and
    the SHA-256 of everything after the block.  A checkpoint whose bytes change afterwards
    (a bit flip, truncation, an edit with another HDF5 tool) no longer matches its seal and
    is refused before the HDF5 library reads it, so that damaged metadata can neither hang
    nor mislead the reader."""
    header = f"{SEAL_MAGIC.decode()} {FORMAT_VERSION} sha256 {_content_digest(path)}\n"
    with open(path, "r+b") as handle:
        handle.write(header.encode("ascii").ljust(USERBLOCK, b" "))


def seal_status(path):
    """'sealed' (seal present and matching), 'broken' (a sealed file whose seal or content
    changed), 'unsealed' (an HDF5 file with its data at offset 0: a format-1 checkpoint or
    another HDF5 file), or 'other' (not HDF5 at all)."""
    with open(path, "rb") as handle:
        head = handle.read(USERBLOCK + len(_HDF5_SIGNATURE))
    if head.startswith(_HDF5_SIGNATURE):
        return "unsealed"
    if not (head.startswith(SEAL_MAGIC) or head[USERBLOCK:] == _HDF5_SIGNATURE):
        return "other"
    fields = head[:USERBLOCK].split()
    if len(fields) != 4 or fields[0] != SEAL_MAGIC or fields[2] != b"sha256":
        return "broken"
    return "sealed" if fields[3].decode("ascii", "replace") == _content_digest(path) else "broken"


# ------------------------------------------------------------------------- reading
def is_checkpoint(path):
    """True when ``path`` looks like a hartree checkpoint: it carries the seal (intact or
    not), or it is an HDF5 file with the checkpoint attribute (format 1).  Its content is
    checked only by :func:`read_checkpoint`."""
    import h5py

    try:
        if not os.path.isfile(path):
            return False
        status = seal_status(path)
        if status != "unsealed":
            return status != "other"
        with h5py.File(path, "r") as f:
            return "hartree_checkpoint" in f.attrs
    except (OSError, ValueError, RuntimeError):
        return False


class _Reader:
    """Typed access to one open checkpoint; each accessor raises InputError on a fault."""

    def __init__(self, handle, name):
        self.f, self.name = handle, name

    def fault(self, text):
        return InputError(f"{self.name} is a damaged checkpoint: {text}")

    def attr(self, key, kind):
        if key not in self.f.attrs:
            raise self.fault(f"attribute {key!r} is missing")
        if self.f.attrs.get_id(key).get_storage_size() > 4096:
            raise self.fault(f"attribute {key!r} is implausibly large")
        value = self.f.attrs[key]
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise self.fault(f"attribute {key!r} is not a single value")
            value = value.reshape(()).item()
        if kind is str:
            if not isinstance(value, str):
                raise self.fault(f"attribute {key!r} is not text")
            return value
        if kind is bool:
            if not isinstance(value, (bool, np.bool_, int, np.integer)) or int(value) not in (0, 1):
                raise self.fault(f"attribute {key!r} is not true or false")
            return bool(value)
        if kind is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise self.fault(f"attribute {key!r} is not an integer")
            return int(value)
        if (
            isinstance(value, (bool, np.bool_))
            or not isinstance(value, (int, float, np.number))
            or not np.isfinite(value)
        ):
            raise self.fault(f"attribute {key!r} is not a finite number")
        return float(value)

    def array(self, key, shape, integer=False, optional=False):
        """Dataset ``key`` as numpy, of ``shape`` (None entries: any size), finite."""
        import h5py

        if key not in self.f:
            if optional:
                return None
            raise self.fault(f"dataset {key!r} is missing")
        data = self.f[key]
        if not isinstance(data, h5py.Dataset):
            raise self.fault(f"{key!r} is not a dataset")
        kind = data.dtype.kind
        if kind not in ("i", "u") + (() if integer else ("f",)):
            raise self.fault(f"dataset {key!r} holds {data.dtype}, not {'integers' if integer else 'numbers'}")
        if len(data.shape) != len(shape) or any(w is not None and w != s for w, s in zip(shape, data.shape)):
            want = "x".join("n" if w is None else str(w) for w in shape) or "scalar"
            got = "x".join(str(s) for s in data.shape) or "scalar"
            raise self.fault(f"dataset {key!r} has shape {got}, expected {want}")
        if int(np.prod(data.shape, dtype=np.int64)) > _MAX_ELEMENTS:
            raise self.fault(f"dataset {key!r} is implausibly large")
        value = np.array(data, dtype=np.int64 if integer else np.float64)
        if not integer and not np.all(np.isfinite(value)):
            raise self.fault(f"dataset {key!r} holds NaN or infinite values")
        return value


def _read(r):
    """Checkpoint from an open file (every check of the module docstring)."""
    import h5py

    version = r.attr("hartree_checkpoint", int)
    if version not in READABLE_FORMATS:
        raise InputError(
            f"{r.name} is a checkpoint of format {version}, which this hartree "
            f"cannot read (it reads {', '.join(map(str, READABLE_FORMATS))})"
        )
    method = r.attr("method", str)
    if method not in METHODS:
        raise r.fault(f"unknown method {method!r}")
    numbers = r.array("numbers", (None,), integer=True)
    natm = numbers.shape[0]
    coords = r.array("coords", (natm, 3))
    if "basis" not in r.f or not isinstance(r.f["basis"], h5py.Group):
        raise r.fault("group 'basis' is missing")
    nshell = r.f["basis"]["shell_l"].shape[0] if "shell_l" in r.f["basis"] else None
    if nshell is None:
        raise r.fault("dataset 'basis/shell_l' is missing")
    nprim = r.f["basis"]["exponents"].shape[0] if "exponents" in r.f["basis"] else None
    shapes = {
        "shell_atom": (nshell,),
        "shell_l": (nshell,),
        "shell_nprim": (nshell,),
        "shell_prim_start": (nshell,),
        "shell_center": (nshell, 3),
        "exponents": (nprim,),
        "coefficients": (nprim,),
    }
    arrays = {
        n: r.array(f"basis/{n}", shapes[n], integer=n.startswith("shell_") and n != "shell_center")
        for n in _BASIS_FIELDS
    }
    chk = Checkpoint(
        method=method,
        cycle=r.attr("cycle", int),
        energy=r.attr("energy", float),
        converged=r.attr("converged", bool),
        numbers=numbers,
        coords=coords,
        charge=r.attr("charge", int),
        multiplicity=r.attr("multiplicity", int),
        basis_name=r.attr("basis_name", str),
        basis_pure=r.attr("basis_pure", bool),
        basis_arrays=arrays,
        dm=np.zeros((0, 0, 0)),
        hartree_version=r.attr("hartree_version", str),
    )
    if chk.cycle < 0:
        raise r.fault("negative cycle number")
    try:
        molecule, basis = chk.molecule(), chk.basis()
    except (InputError, ValueError, TypeError) as exc:
        raise r.fault(f"its molecule or basis is invalid ({exc})") from None
    if np.any(arrays["shell_atom"] >= natm) or np.any(arrays["shell_atom"] < 0):
        raise r.fault("basis shells refer to atoms that do not exist")
    nao, nset = basis.nao, 1 if method == "rhf" else 2
    chk.dm = r.array("dm", (nset, nao, nao))
    if chk.dm.size and np.abs(chk.dm).max() > MAX_MO_COEFFICIENT:
        raise r.fault(f"density-matrix elements above {MAX_MO_COEFFICIENT:g}")
    if not np.allclose(
        chk.dm, chk.dm.transpose(0, 2, 1), rtol=0, atol=1e-8 * max(1.0, float(np.abs(chk.dm).max(initial=0.0)))
    ):
        raise r.fault("the density matrix is not symmetric")
    lead = (2,) if method == "uhf" else ()
    if "mo_coeff" in r.f:
        nmo = r.f["mo_coeff"].shape[-1] if r.f["mo_coeff"].shape else -1
        if not 1 <= nmo <= nao:
            raise r.fault(f"mo_coeff has {nmo} orbitals for {nao} basis functions")
        chk.mo_coeff = r.array("mo_coeff", lead + (nao, nmo))
        if np.abs(chk.mo_coeff).max() > MAX_MO_COEFFICIENT:
            raise r.fault(f"orbital coefficients above {MAX_MO_COEFFICIENT:g}")
        chk.mo_energy = r.array("mo_energy", lead + (nmo,), optional=True)
        chk.mo_occ = r.array("mo_occ", lead + (nmo,))
        if np.any(chk.mo_occ < 0) or np.any(chk.mo_occ > 2):
            raise r.fault("orbital occupations outside [0, 2]")
    stored = r.attr("fingerprint", str) if version >= 2 else None
    chk.fingerprint = job_fingerprint(molecule, basis, method)
    if stored is not None and stored != chk.fingerprint:
        raise r.fault("its fingerprint does not match its data (the file was altered)")
    return chk


def read_checkpoint(path):
    """Read and validate a checkpoint (module docstring); InputError for any fault."""
    import h5py

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"checkpoint not found: {path}")
    if not is_checkpoint(path):
        raise InputError(f"{path} is not a hartree checkpoint")
    try:
        status = seal_status(path)
    except OSError as exc:
        raise InputError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from None
    if status == "broken":
        raise InputError(
            f"{path} is a damaged checkpoint: its content no longer matches the "
            "seal written with it (truncated, altered or corrupted)"
        )
    try:
        with h5py.File(path, "r") as f:
            return _read(_Reader(f, path))
    except InputError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError, AttributeError) as exc:
        raise InputError(f"{path} is a damaged checkpoint: {exc}") from None


# ------------------------------------------------------------------------- relations
def compare(chk, molecule, basis, method):
    """How a checkpoint relates to a run: 'same', 'related' or 'incompatible'.

    same:        the same job (equal fingerprints)
    related:     same atoms and basis functions (exponents, coefficients, shells per
                 atom, pure/cartesian) but another geometry, charge, spin or method
    incompatible: anything else (other atoms or basis)
    """
    if chk.fingerprint == job_fingerprint(molecule, basis, method):
        return "same"
    b = chk.basis_arrays
    same_atoms = chk.numbers.shape == molecule.numbers.shape and np.array_equal(chk.numbers, molecule.numbers)
    same_functions = (
        same_atoms
        and chk.basis_pure == bool(basis.pure)
        and all(b[n].shape == np.asarray(getattr(basis, n)).shape for n in _BASIS_FIELDS)
        and all(
            np.array_equal(b[n], getattr(basis, n))
            for n in ("shell_atom", "shell_l", "shell_nprim", "shell_prim_start")
        )
        and np.allclose(b["exponents"], basis.exponents, rtol=1e-12, atol=0)
        and np.allclose(b["coefficients"], basis.coefficients, rtol=1e-12, atol=1e-14)
    )
    return "related" if same_functions else "incompatible"


def differences(chk, molecule, method):
    """Words for what differs between a related checkpoint and a run."""
    out = []
    if not np.allclose(chk.coords, molecule.coords, rtol=0, atol=1e-8):
        out.append("geometry")
    if chk.charge != molecule.charge:
        out.append("charge")
    if chk.multiplicity != molecule.multiplicity:
        out.append("multiplicity")
    if chk.method != method:
        out.append(f"method ({chk.method})")
    return ", ".join(out) or "basis data"


@dataclass(frozen=True)
class CheckpointPlan:
    """What a run does with checkpoint files (:func:`plan`).

    write: the path this run writes its checkpoint to (None: none);
    start: the Checkpoint to start from (None: the options' guess); relation: 'same'
    (a resume) or 'related' (orbitals of another job); source: the file ``start`` came
    from; notes: sentences for the report.
    """

    write: str | None = None
    start: Checkpoint | None = None
    relation: str = ""
    source: str | None = None
    notes: tuple = ()


def _starting_point(path, molecule, basis, method, what):
    """(Checkpoint, relation) of an existing checkpoint used as a guess; InputError when it
    is for other atoms or another basis."""
    chk = read_checkpoint(path)
    relation = compare(chk, molecule, basis, method)
    if relation == "incompatible":
        raise InputError(f"{what} {path} is for other atoms or another basis; it cannot start this run")
    return chk, relation


def plan(molecule, basis, method, checkpoint=None, guess="sad", guess_from=None, overwrite=False):
    """Decide, before any work, which checkpoint a run reads and which it writes.

    checkpoint: the file this run writes (``--checkpoint``):
      * absent: created (``guess='checkpoint'`` then fails: nothing to start from);
      * this job's own (same fingerprint): the run resumes from it and rewrites it;
      * another job's: with ``guess='checkpoint'`` its orbitals start the run if it is for the
        same atoms and basis, and the file is left unchanged unless ``overwrite`` (the run
        then writes no checkpoint and says so); without that guess the file is replaced
        only with ``overwrite``, else InputError;
      * not a checkpoint, or damaged: replaced only with ``overwrite`` (and never read).
    guess_from: another checkpoint to start from (``--guess-from``), read only.
    Raises InputError for every refusal; all paths are checked (directory exists and is
    writable) here.
    """
    notes = []
    start, relation, source = None, "", None
    write = os.fspath(checkpoint) if checkpoint else None
    if guess_from is not None and write is not None and os.path.exists(write) and same_file(guess_from, write):
        guess_from, guess = None, "checkpoint"
    if write is not None:
        check_output_path("--checkpoint", write, overwrite=True)
        if os.path.exists(write):
            chk, fault = None, None
            try:
                chk = read_checkpoint(write)
            except InputError as exc:
                fault = exc
            if fault is not None:
                if guess == "checkpoint" or not overwrite:
                    raise InputError(
                        f"--checkpoint: {fault}" + ("" if guess == "checkpoint" else "; use --overwrite to replace it")
                    )
                notes.append(f"replacing {write} ({fault})")
            elif compare(chk, molecule, basis, method) == "same":
                start, relation, source = chk, "same", write
            elif guess == "checkpoint":
                start, relation = _starting_point(write, molecule, basis, method, "--checkpoint")
                source = write
                if not overwrite:
                    notes.append(
                        f"{write} belongs to another job ({differences(chk, molecule, method)}"
                        "): read as the starting guess and left unchanged; this run "
                        "writes no checkpoint (--overwrite lets it replace the file)"
                    )
                    write = None
            elif not overwrite:
                what = (
                    differences(chk, molecule, method)
                    if compare(chk, molecule, basis, method) == "related"
                    else "atoms or basis set"
                )
                raise InputError(
                    f"--checkpoint {write} belongs to another job (it differs in "
                    f"{what}); use --overwrite to replace it, --guess checkpoint "
                    "to start from it, or another path"
                )
        elif guess == "checkpoint":
            raise InputError(f"--guess checkpoint, but {write} does not exist")
    elif guess == "checkpoint":
        raise InputError("--guess checkpoint needs --checkpoint FILE")
    if guess_from is not None and start is None:
        start, relation = _starting_point(guess_from, molecule, basis, method, "--guess-from")
        source = os.fspath(guess_from)
    return CheckpointPlan(write=write, start=start, relation=relation, source=source, notes=tuple(notes))
