"""Fuzzing every input kind through the command line, in process (the reliability issue).

Hypothesis mutates valid inputs -- XYZ, QCSchema AtomicInput JSON, Molden, result JSON, the
thesis' atom .inp and SCF checkpoints (HDF5, both byte-level and structural damage) -- by truncation, byte flips,
inserted bytes, deleted or doubled lines, numbers replaced by NaN, infinities, huge,
negative or zero values, and wrong counts.  Each mutant goes through the command that reads
it, with tiny bases and coarse lattices.  The promise checked for every one:

* the exit code is one of the documented ones and never 1 (a crash);
* no traceback, and a failure is one ``hartree: error:`` line (warnings may precede it);
* no output file of a failed run and no temporary file remains; a successful run's outputs
  are complete (cube files read back whole, JSON parses).

Each command is also bounded in time (SIGALRM, :data:`SECONDS_PER_RUN`): a mutated size
that makes a run take minutes is a fault too.  About a minute of CI in all.
"""

import contextlib
import io
import json
import os
import re
import shutil
import signal

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hartree.cli.main import EXIT_CODES, EXIT_CRASH, main
from hartree.io.cube import read_cube
from hartree.molecule import Molecule
from hartree.scf.checkpoint import seal

WATER = "3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n"
HELIUM_INP = """He, Dirac-Coulomb-HF, point nucleus, 8 s functions
 $contrl jobtype='energy' c=137.0359895 $end
 $nuc znuc=2 nucmdl=1 $end
 $bas nsym=1 bastype='wtbs' ngroup=1 $end
 $wtbs wtbspara=8.14e-2, 1.953, 4.504, 1.515
       nbs=8 start=1 groups=1 $end
 $econfig nclose=1 nopen=0 freeel=0 autogen=.false. nconf=0 $end
 $scf maxitr=30 ixtrp=1 dfctr=0.3 thdll=1.0e-5 thdsl=1.0d-7 thdss=1.0e-9 $end
"""
SECONDS_PER_RUN = 30
#: Examples per input kind: a fixed sequence in CI (derandomized, about a minute in all);
#: HARTREE_FUZZ_EXAMPLES=2000 HARTREE_FUZZ_RANDOM=1 for a longer, random hunt.
EXAMPLES = int(os.environ.get("HARTREE_FUZZ_EXAMPLES", "150"))
NUMBERS = ["nan", "inf", "-inf", "1e999", "-5", "0", "1e308", "-1e-300", "99999999999999999999", "2.5", "1e6", "-0"]
_NUMBER = re.compile(rb"[-+]?\d+\.?\d*(?:[eEdD][-+]?\d+)?")
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("HARTREE_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


#: the valid runs of the fixture may compile numba kernels first (a cold cache: minutes)
COMPILE_SECONDS = 900


class _TooLong(BaseException):
    """A run over its time (a BaseException, so that the CLI's own handlers let it through)."""


def _alarm(signum, frame):
    raise _TooLong


def run(argv, seconds=SECONDS_PER_RUN):
    """(exit code, stdout, stderr) of main(argv), SIGALRM after `seconds`."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    except _TooLong:
        pytest.fail(f"hartree {' '.join(map(str, argv))} ran over {seconds} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def check(argv, folder, outputs):
    """Run and check the promises of the module docstring; returns the exit code."""
    before = set(os.listdir(folder))
    code, out, err = run(argv)
    assert code in EXIT_CODES and code != EXIT_CRASH, (argv, code, err)
    assert "Traceback" not in out + err, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("hartree: warning:")]
    if code != 0:
        assert len(lines) == 1 and lines[0].startswith("hartree: error: "), err
        for path in outputs:
            assert not os.path.exists(path) or os.path.basename(path) in before, (argv, path)
    else:
        for path in outputs:
            if path.endswith(".cube"):
                read_cube(path)
            elif path.endswith(".json"):
                with open(path, encoding="utf-8") as handle:
                    json.load(handle)
    leftovers = [f for f in os.listdir(folder) if f.endswith(("hartree-tmp", ".tmp"))]
    assert not leftovers, leftovers
    for path in outputs:
        if os.path.exists(path) and os.path.basename(path) not in before:
            os.remove(path)
    return code


# ------------------------------------------------------------------------------ mutations
@st.composite
def mutated(draw, data):
    """Bytes of ``data`` after one to three random mutations."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete_line", "double_line", "number", "number"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "truncate":
            data = data[:at]
        elif kind == "flip":
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
        elif kind == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
        elif kind in ("delete_line", "double_line"):
            lines = data.split(b"\n")
            n = draw(st.integers(0, len(lines) - 1))
            lines[n : n + 1] = [] if kind == "delete_line" else [lines[n], lines[n]]
            data = b"\n".join(lines)
        else:
            numbers = list(_NUMBER.finditer(data))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                data = data[: m.start()] + draw(st.sampled_from(NUMBERS)).encode() + data[m.end() :]
    return data


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """Valid inputs: water.xyz, a result JSON, a Molden file, a checkpoint, a He .inp."""
    folder = tmp_path_factory.mktemp("fuzz_valid")
    (folder / "water.xyz").write_text(WATER)
    (folder / "he.inp").write_text(HELIUM_INP)
    code, _, err = run(
        [
            "run",
            folder / "water.xyz",
            "-b",
            "sto-3g",
            "-q",
            "--json",
            folder / "w.json",
            "--molden",
            folder / "w.molden",
            "--checkpoint",
            folder / "w.h5",
        ],
        seconds=COMPILE_SECONDS,
    )
    assert code == 0, err
    code, _, err = run(["atom", folder / "he.inp", "-q"], seconds=COMPILE_SECONDS)
    assert code == 0, err
    # the lattice kernels compile on their first call: here, not inside a timed example
    code, _, err = run(
        ["orbitals", folder / "w.json", "--density", "--spacing", "0.6", "--cube", folder / "warm.cube", "-q"],
        seconds=COMPILE_SECONDS,
    )
    assert code == 0, err
    return folder


def _fuzz(valid, folder, name, data, argv, outputs):
    path = folder / name
    path.write_bytes(data)
    argv = [a.format(input=path, dir=folder) if isinstance(a, str) else a for a in argv]
    check(argv, folder, [o.format(dir=folder) for o in outputs])


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_xyz(valid, tmp_path, data):
    blob = data.draw(mutated(WATER.encode()))
    _fuzz(
        valid,
        tmp_path,
        "m.xyz",
        blob,
        ["run", "{input}", "-b", "sto-3g", "--max-cycle", "12", "-q", "--json", "{dir}/o.json"],
        ["{dir}/o.json"],
    )


def _atomic_input():
    """A QCSchema v1 AtomicInput (driver gradient, keywords) of the water molecule, one
    member per line (so that line mutations delete or double members)."""
    doc = {
        "schema_name": "qcschema_input",
        "schema_version": 1,
        "molecule": Molecule.from_string(WATER).to_qcschema(),
        "driver": "gradient",
        "model": {"method": "rhf", "basis": "sto-3g"},
        "keywords": {"conv_tol": 1e-8, "level_shift": 0.1, "device": "cpu"},
        "extras": {},
    }
    return json.dumps(doc, indent=1).encode()


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_atomic_input(valid, tmp_path, data):
    blob = data.draw(mutated(_atomic_input()))
    _fuzz(
        valid,
        tmp_path,
        "m.json",
        blob,
        ["run", "{input}", "--max-cycle", "12", "-q", "--json", "{dir}/o.json"],
        ["{dir}/o.json"],
    )


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_molden(valid, tmp_path, data):
    blob = data.draw(mutated((valid / "w.molden").read_bytes()))
    _fuzz(
        valid,
        tmp_path,
        "m.molden",
        blob,
        ["orbitals", "{input}", "--mo", "homo", "--spacing", "0.6", "--cube", "{dir}/o.cube", "-q"],
        ["{dir}/o.cube"],
    )


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_result_json(valid, tmp_path, data):
    blob = data.draw(mutated((valid / "w.json").read_bytes()))
    _fuzz(
        valid,
        tmp_path,
        "m.json",
        blob,
        ["orbitals", "{input}", "--density", "--spacing", "0.6", "--cube", "{dir}/o.cube", "-q"],
        ["{dir}/o.cube"],
    )


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_atom_input(valid, tmp_path, data):
    blob = data.draw(mutated(HELIUM_INP.encode()))
    _fuzz(valid, tmp_path, "m.inp", blob, ["atom", "{input}", "-q", "--json", "{dir}/o.json"], ["{dir}/o.json"])


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_checkpoint_bytes(valid, tmp_path, data):
    """Byte-level damage of the HDF5 file (truncation, flips: mostly unreadable files)."""
    blob = data.draw(mutated((valid / "w.h5").read_bytes()))
    shutil.copy(valid / "water.xyz", tmp_path / "water.xyz")
    _fuzz(
        valid,
        tmp_path,
        "m.h5",
        blob,
        ["orbitals", "{input}", "--mo", "homo", "--spacing", "0.6", "--cube", "{dir}/o.cube", "-q"],
        ["{dir}/o.cube"],
    )


def _damage_h5(path, draw):
    """Structural damage of a readable checkpoint: a dataset or attribute deleted, values
    made NaN/inf/huge, arrays cut, attributes of the wrong type."""
    with h5py.File(path, "r+") as f:
        names = []
        f.visit(lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None)
        kind = draw(st.sampled_from(["delete", "value", "cut", "attr_delete", "attr_value"]))
        if kind in ("attr_delete", "attr_value"):
            key = draw(st.sampled_from(sorted(f.attrs)))
            if kind == "attr_delete":
                del f.attrs[key]
            else:
                f.attrs[key] = draw(st.sampled_from([np.nan, -7, 10**12, "text", 2.5, True]))
            return
        name = draw(st.sampled_from(sorted(names)))
        value = np.array(f[name])
        del f[name]
        if kind == "delete":
            return
        if kind == "cut" and value.ndim and value.shape[-1] > 1:
            f[name] = value[..., : draw(st.integers(0, value.shape[-1] - 1))]
            return
        flat = value.astype(np.float64).ravel()
        if flat.size:
            flat[draw(st.integers(0, flat.size - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -5.0, 0.0, 1e6])
            )
        f[name] = flat.reshape(value.shape).astype(value.dtype if value.dtype.kind == "f" else np.float64)


@FUZZ_SETTINGS
@given(data=st.data())
def test_fuzz_checkpoint_structure(valid, tmp_path, data):
    """Readable but damaged checkpoints (seal broken, or rewritten to match), given to a
    restart and to the orbital plotter."""
    shutil.copy(valid / "w.h5", tmp_path / "m.h5")
    shutil.copy(valid / "water.xyz", tmp_path / "water.xyz")
    _damage_h5(tmp_path / "m.h5", data.draw)
    if data.draw(st.booleans(), label="reseal"):  # as a buggy writer would: content checks
        seal(tmp_path / "m.h5")
    before = (tmp_path / "m.h5").read_bytes()
    check(
        [
            "run",
            tmp_path / "water.xyz",
            "-b",
            "sto-3g",
            "--checkpoint",
            tmp_path / "m.h5",
            "--guess",
            "checkpoint",
            "--max-cycle",
            "12",
            "-q",
        ],
        tmp_path,
        [],
    )
    check(
        ["orbitals", tmp_path / "m.h5", "--mo", "homo", "--spacing", "0.6", "--cube", tmp_path / "o.cube", "-q"],
        tmp_path,
        [str(tmp_path / "o.cube")],
    )
    if (tmp_path / "m.h5").read_bytes() != before:
        # a restart may rewrite its own checkpoint only after reading it as valid
        from hartree.scf.checkpoint import read_checkpoint

        read_checkpoint(tmp_path / "m.h5")
