"""The faults found when hartree was tried as a new user would (the reliability issue), one
test per item: each ends in one line and a documented exit code, with no traceback, no
wrong answer and no damaged or half-written file.

The damaged-file classes themselves are fuzzed in tests/test_fuzz_inputs.py, the Molden and
JSON readers rule by rule in tests/io.
"""

import os
import resource
import shutil
import signal
import stat
import threading
import time

import h5py
import numpy as np
import pytest

from hartree.cli.main import (
    EXIT_CODES,
    EXIT_CONVERGENCE,
    EXIT_INPUT,
    EXIT_RESOURCES,
    EXIT_TERMINATED,
)
from hartree.errors import InputError, ResourceError
from hartree.io.files import (
    atomic_output,
    atomic_path,
    read_json,
    read_text,
    temporary_name,
)
from hartree.scf.checkpoint import read_checkpoint, seal

from .conftest import WATER_XYZ

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def one_line(code, out, err, expected, fragment=""):
    """The common promise: the exit code, one stderr line, no traceback."""
    assert code == expected, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hartree: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in out + err


def no_temporaries(folder):
    return not [f for f in os.listdir(folder) if f.endswith("hartree-tmp") or f.endswith(".tmp")]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """w.json, w.molden and good.h5 of water/STO-3G, as the issue makes them."""
    from .conftest import run_main

    folder = tmp_path_factory.mktemp("reliability")
    (folder / "water.xyz").write_text(WATER_XYZ)
    code, _, err = run_main(
        [
            "run",
            str(folder / "water.xyz"),
            "--basis",
            "sto-3g",
            "-q",
            "--json",
            str(folder / "w.json"),
            "--molden",
            str(folder / "w.molden"),
            "--checkpoint",
            str(folder / "good.h5"),
        ]
    )
    assert code == 0, err
    return folder


@pytest.fixture
def work(outputs, tmp_path):
    """A fresh copy of the module's files in the test's own directory."""
    for name in ("water.xyz", "w.json", "w.molden", "good.h5"):
        shutil.copy(outputs / name, tmp_path / name)
    return tmp_path


# ----------------------------------------------------------------------------- 1, 2: readers
def test_1_truncated_molden_is_refused(cli, work):
    text = (work / "w.molden").read_bytes()
    (work / "t.molden").write_bytes(text[: len(text) * 3 // 4])
    one_line(
        *cli("orbitals", work / "t.molden", "--mo", "homo", "--cube", work / "t_{mo}.cube"), EXIT_INPUT, "t.molden"
    )
    assert not (work / "t_homo.cube").exists() and no_temporaries(work)


@pytest.mark.parametrize(
    "argv",
    [
        ["orbitals", "{bin}.json", "--cube", "{dir}/o_{{mo}}.cube"],
        ["atom", "{bin}.inp"],
        ["run", "{dir}/water.xyz", "-b", "{bin}.xyz"],
        ["run", "{bin}.xyz", "-b", "sto-3g"],
        ["basis-search", "Ne", "--reference", "{bin}.json"],
        ["orbitals", "{dir}/w.json", "--points", "{bin}.txt", "--npy", "{dir}/p.npy"],
    ],
)
def test_2_binary_files_are_named_not_tracebacks(cli, work, argv):
    rng = np.random.default_rng(7)
    for ext in ("json", "inp", "xyz", "txt"):
        (work / f"b.{ext}").write_bytes(bytes([0xFC]) + rng.bytes(1999))
    args = [a.format(bin=work / "b", dir=work) for a in argv]
    one_line(*cli(*args), EXIT_INPUT, "not a ")


def test_readers_name_the_file_and_fault(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1.txt is not a UTF-8 text file \(byte 0xe9"):
        read_text(tmp_path / "latin1.txt")
    with pytest.raises(InputError, match="is a directory"):
        read_text(tmp_path)
    for text, fault in (
        ("[NaN]", "NaN"),
        ("[1e999]", "too large"),
        ("{", "not valid JSON"),
        ("[Infinity]", "Infinity"),
    ):
        (tmp_path / "x.json").write_text(text)
        with pytest.raises(InputError, match=fault):
            read_json(tmp_path / "x.json")


# ----------------------------------------------------------------------------- 3, 4: checkpoints
def _damage(path, how, reseal=True):
    """Damage a checkpoint with h5py; reseal: write a matching seal afterwards, as a buggy
    writer would, so that the content checks (not only the seal) are exercised."""
    _edit(path, how)
    if reseal:
        seal(path)


def _edit(path, how):
    with h5py.File(path, "r+") as f:
        if how == "no dm":
            del f["dm"]
        elif how == "no method":
            del f.attrs["method"]
        elif how == "dm 5x5":
            del f["dm"]
            f["dm"] = np.eye(5)[None]
        elif how == "nan dm":
            f["dm"][0, 0, 0] = np.nan
        elif how == "mo_coeff 3 columns":
            c = np.array(f["mo_coeff"])
            del f["mo_coeff"]
            f["mo_coeff"] = c[:, :3]
        elif how == "altered geometry":
            f["coords"][0, 0] += 0.1


DAMAGE = ("no dm", "no method", "dm 5x5", "nan dm", "mo_coeff 3 columns", "altered geometry")


@pytest.mark.parametrize("reseal", [True, False])
@pytest.mark.parametrize("how", DAMAGE)
def test_3_4_damaged_checkpoints_end_in_one_line(cli, work, how, reseal):
    _damage(work / "good.h5", how, reseal)
    before = (work / "good.h5").read_bytes()
    one_line(
        *cli("run", work / "water.xyz", "-b", "sto-3g", "--checkpoint", work / "good.h5", "--guess", "checkpoint"),
        EXIT_INPUT,
        "damaged checkpoint",
    )
    one_line(*cli("orbitals", work / "good.h5", "--cube", work / "o.cube"), EXIT_INPUT, "damaged checkpoint")
    assert (work / "good.h5").read_bytes() == before  # never rewritten
    assert not (work / "o.cube").exists() and no_temporaries(work)


def test_4_nan_never_enters_an_scf(work):
    _damage(work / "good.h5", "nan dm")
    with pytest.raises(InputError, match="NaN"):
        read_checkpoint(work / "good.h5")


def test_3_a_damaged_seal_is_refused_before_hdf5_reads_the_file(work):
    data = bytearray((work / "good.h5").read_bytes())
    data[3] ^= 0x20  # inside the signature
    (work / "sig.h5").write_bytes(bytes(data))
    with pytest.raises(InputError, match="no longer matches the seal"):
        read_checkpoint(work / "sig.h5")


@pytest.mark.parametrize("cut", [0.25, 0.5, 0.9, 0.999])
def test_3_truncated_or_flipped_checkpoints_are_refused_by_the_seal(work, cut):
    data = (work / "good.h5").read_bytes()
    (work / "cut.h5").write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(InputError, match="no longer matches the seal"):
        read_checkpoint(work / "cut.h5")
    at = int(len(data) * cut)
    (work / "flip.h5").write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    with pytest.raises(InputError, match="no longer matches the seal"):
        read_checkpoint(work / "flip.h5")


# ----------------------------------------------------------------------------- 5, 6: whose file
def test_5_another_jobs_checkpoint_is_not_overwritten(cli, work):
    shutil.copy(work / "good.h5", work / "other.h5")
    before = (work / "other.h5").read_bytes()
    one_line(
        *cli("run", work / "water.xyz", "-b", "6-31g", "--checkpoint", work / "other.h5"),
        EXIT_INPUT,
        "belongs to another job",
    )
    assert (work / "other.h5").read_bytes() == before
    # --guess checkpoint with another job's file of other atoms/basis: refused too
    one_line(
        *cli("run", work / "water.xyz", "-b", "6-31g", "--checkpoint", work / "other.h5", "--guess", "checkpoint"),
        EXIT_INPUT,
        "other atoms or another basis",
    )
    # a compatible job (same basis, other charge) reads it and leaves it unchanged ...
    code, out, err = cli(
        "run",
        work / "water.xyz",
        "-b",
        "sto-3g",
        "-m",
        "uhf",
        "-c",
        "1",
        "--checkpoint",
        work / "other.h5",
        "--guess",
        "checkpoint",
    )
    assert code == 0, err
    assert "left unchanged" in out and (work / "other.h5").read_bytes() == before
    # ... or replaces it with --overwrite; the own job then resumes without it
    code, _, err = cli("run", work / "water.xyz", "-b", "6-31g", "--checkpoint", work / "other.h5", "--overwrite", "-q")
    assert code == 0, err
    assert read_checkpoint(work / "other.h5").basis_arrays["exponents"].size > 6
    code, out, _ = cli("run", work / "water.xyz", "-b", "6-31g", "--checkpoint", work / "other.h5")
    assert code == 0 and "restarted from checkpoint" in out
    # --guess-from reads another job's checkpoint and never writes it
    fresh = work / "fresh.h5"
    code, out, err = cli(
        "run",
        work / "water.xyz",
        "-b",
        "sto-3g",
        "-c",
        "1",
        "-m",
        "uhf",
        "--guess-from",
        work / "good.h5",
        "--checkpoint",
        fresh,
    )
    assert code == 0, err
    assert "another job" in out and read_checkpoint(fresh).charge == 1


def test_6_checkpoint_in_a_missing_directory_fails_first(cli, work):
    start = time.perf_counter()
    one_line(
        *cli("run", work / "water.xyz", "-b", "sto-3g", "--checkpoint", work / "nodir" / "x.h5"),
        EXIT_INPUT,
        "does not exist",
    )
    assert time.perf_counter() - start < 10  # before integrals, guess and SCF


# ----------------------------------------------------------------------------- 7: atomic writes
def test_7_file_size_limit_leaves_nothing_and_names_the_file(cli, work):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))  # SIGXFSZ is ignored by Python
    try:
        code, out, err = cli("run", work / "water.xyz", "-b", "sto-3g", "--json", work / "big.json", "-q")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    one_line(code, out, err, EXIT_RESOURCES, "big.json")
    assert "file-size limit" in err
    assert not (work / "big.json").exists() and no_temporaries(work)


def test_7_interrupted_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "out.cube"
    target.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_output(target) as handle:
        handle.write("new, half")
        raise KeyboardInterrupt
    assert target.read_text() == "old\n" and no_temporaries(tmp_path)


def test_7_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    target = tmp_path / "run.h5"
    stale = temporary_name(str(target)).replace(f".{os.getpid()}.", ".999999999.")
    open(stale, "w").close()
    with atomic_path(target) as tmp:
        open(tmp, "w").write("x")
    assert not os.path.exists(stale) and target.read_text() == "x"


def test_7_outputs_have_ordinary_permissions(outputs):
    umask = os.umask(0o022)
    os.umask(umask)
    for name in ("w.json", "w.molden", "good.h5"):  # checkpoints were 0600 before
        mode = stat.S_IMODE(os.stat(outputs / name).st_mode)
        assert mode == 0o666 & ~umask, (name, oct(mode))


# ----------------------------------------------------------------------------- 8: lattices
@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--spacing", "1e-6"], "beyond what any machine can store"),
        (["--margin", "-1"], "must not be negative"),
    ],
)
def test_8_lattice_requests_in_the_users_units(cli, work, args, fragment):
    code, out, err = cli("orbitals", work / "w.json", "--cube", work / "o.cube", *args)
    assert code == EXIT_INPUT and fragment in err and "Traceback" not in err
    assert not (work / "o.cube").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e999"])
def test_8_non_finite_numbers_are_usage_errors(cli, work, value):
    for flag in ("--spacing", "--margin"):
        code, _, err = cli("orbitals", work / "w.json", "--cube", work / "o.cube", f"{flag}={value}")
        assert code == EXIT_INPUT and "finite" in err and "Warning" not in err


def test_8_memory_and_disk_are_checked_before_allocating(cli, work, monkeypatch):
    from hartree import resources
    from hartree.grid import stream

    monkeypatch.setattr(resources, "available_memory", lambda: 50_000_000)
    monkeypatch.setattr(stream, "available_memory", lambda: 50_000_000)
    one_line(*cli("orbitals", work / "w.json", "--spacing", "0.05", "--png", work / "o.png"), EXIT_RESOURCES, "memory")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, hard))
    try:
        one_line(*cli("orbitals", work / "w.json", "--cube", work / "o.cube"), EXIT_RESOURCES, "file-size limit")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert not (work / "o.png").exists() and not (work / "o.cube").exists()


def test_8_cube_streamed_in_slabs_equals_the_whole_lattice(cli, work, monkeypatch):
    from hartree.grid import stream
    from hartree.io.cube import read_cube

    code, _, err = cli(
        "orbitals",
        work / "w.json",
        "--mo",
        "homo,lumo",
        "--density",
        "--spacing",
        "0.3",
        "--cube",
        work / "one_{mo}.cube",
        "--npy",
        work / "one_{mo}.npy",
        "--h5",
        work / "one.h5",
        "-q",
    )
    assert code == 0, err
    monkeypatch.setattr(stream, "SLAB_BYTES", 4000)  # a few planes per slab
    code, _, err = cli(
        "orbitals",
        work / "w.json",
        "--mo",
        "homo,lumo",
        "--density",
        "--spacing",
        "0.3",
        "--cube",
        work / "many_{mo}.cube",
        "--npy",
        work / "many_{mo}.npy",
        "--h5",
        work / "many.h5",
        "-q",
    )
    assert code == 0, err
    for label in ("homo", "lumo", "density"):
        whole, sliced = (read_cube(work / f"{kind}_{label}.cube") for kind in ("one", "many"))
        np.testing.assert_array_equal(whole.values, sliced.values)
        np.testing.assert_allclose(
            np.load(work / f"one_{label}.npy"), np.load(work / f"many_{label}.npy"), rtol=0, atol=1e-14
        )
        with h5py.File(work / "one.h5") as a, h5py.File(work / "many.h5") as b:
            np.testing.assert_allclose(a[f"values/{label}"], b[f"values/{label}"], atol=1e-14)


# ----------------------------------------------------------------------------- 9: chemistry
def test_9_no_electrons_is_bad_input(cli, work):
    one_line(*cli("run", work / "water.xyz", "-b", "sto-3g", "--charge", "10"), EXIT_INPUT, "no electrons")


def test_9_an_atom_far_from_the_rest_is_reported(cli, work):
    (work / "far.xyz").write_text("3\n\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 1e6 0 0\n")
    code, out, err = cli("run", work / "far.xyz", "-b", "sto-3g", "-m", "uhf", "-q")
    assert code in (0, EXIT_CONVERGENCE)
    assert "warning: atom 3 (H) is 1e+06 Angstrom from the nearest other atom" in err


# ----------------------------------------------------------------------------- 10: inputs kept
@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_10_an_output_never_replaces_an_input(cli, work, link):
    source = work / "water.xyz"
    target = {"same": source, "symlink": work / "s.json", "hardlink": work / "h.json"}[link]
    if link == "symlink":
        target.symlink_to(source)
    elif link == "hardlink":
        os.link(source, target)
    one_line(*cli("run", source, "-b", "sto-3g", "--json", target, "--overwrite"), EXIT_INPUT, "is the molecule file")
    assert source.read_text() == WATER_XYZ


# ----------------------------------------------------------------------------- 11: signals
def test_11_sigterm_in_process_keeps_the_checkpoint(cli, work):
    """SIGTERM during the SCF (a never-converging one: conv-tol 1e-30): exit 143, one line,
    a readable checkpoint, no temporary file."""
    chk = work / "t.h5"

    def terminate_when_written():
        for _ in range(6000):
            if chk.exists():
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.005)

    threading.Thread(target=terminate_when_written, daemon=True).start()
    code, _, err = cli(
        "run",
        work / "water.xyz",
        "-b",
        "cc-pvdz",
        "--conv-tol",
        "1e-30",
        "--max-cycle",
        "100000",
        "--checkpoint",
        chk,
        "-q",
    )
    assert code == EXIT_TERMINATED and err.startswith("hartree: terminated (signal 15)"), err
    assert len(err.strip().splitlines()) == 1
    assert read_checkpoint(chk).cycle >= 0 and no_temporaries(work)


def test_11_a_stop_request_whose_exception_was_lost_ends_the_next_cycle():
    """Python drops an exception raised inside a destructor or weak-reference callback, so a
    signal landing there would be ignored; the handlers also record the request
    (hartree.interruption), and the next SCF cycle raises it again."""
    from hartree import interruption
    from hartree.errors import Terminated
    from hartree.molecule import Molecule
    from hartree.scf import run

    records = []

    def on_cycle(record):
        records.append(record)
        if len(records) == 2:
            interruption.request_stop(signal.SIGTERM)  # as if the handler's raise was lost

    mol = Molecule.from_string("O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692")
    try:
        with pytest.raises(Terminated):
            run(mol, "sto-3g", conv_tol=1e-30, max_cycle=50, callback=on_cycle)
    finally:
        interruption.clear()
    assert len(records) == 2
    interruption.check()  # cleared: nothing raised


# ----------------------------------------------------------------------------- 14: messages
def test_14_hints_name_the_flags(cli, work):
    code, out, err = cli("run", work / "water.xyz", "-b", "sto-3g", "--max-cycle", "2")
    assert code == EXIT_CONVERGENCE
    assert "--max-cycle 4" in err and "--level-shift 0.3" in err and "max_cycle" not in err


def test_14_first_run_says_it_compiles_also_when_piped(cli, work, monkeypatch, tmp_path):
    """The one-time numba compilation is announced on the first CPU run of an installation
    (a line in the output, which tests capture as a pipe would), and not on later runs."""
    monkeypatch.setenv("HARTREE_CACHE_DIR", str(tmp_path / "cache"))
    code, out, _ = cli("run", work / "water.xyz", "-b", "sto-3g", "--device", "cpu")
    assert code == 0 and "compiled on the first run of this installation" in out
    code, out, _ = cli("run", work / "water.xyz", "-b", "sto-3g", "--device", "cpu")
    assert code == 0 and "compiled on the first run" not in out


def test_14_readme_lists_every_exit_code():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    paragraph = " ".join(text[text.index("Exit codes:") :].split("\n\n")[0].split())
    for code in EXIT_CODES:
        assert f" {code} " in paragraph, code


def test_14_atom_plot_without_optimization_is_refused(cli, work):
    one_line(*cli("atom", "He", "--plot", work / "he.png"), EXIT_INPUT, "--optimize")


def test_11_ctrl_c_during_basis_search_is_one_line(tmp_path):
    """SIGINT to the whole process group (what Ctrl-C does) while Dask workers run: one
    line, exit 130, no asyncio or worker tracebacks, no worker left behind."""
    import subprocess
    import sys

    reference = tmp_path / "ref.json"
    reference.write_text('{"He": -2.8616800}')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hartree",
            "basis-search",
            "He",
            "--reference",
            str(reference),
            "--workers",
            "1",
            "--nonrelativistic",
            "--nucleus",
            "point",
            "--threshold",
            "1e-12",
            "--nbs",
            "s:1:6",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = proc.stdout.readline()  # the first progress line: workers are running
        assert line, proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("hartree: interrupted")


def test_14_atom_optimization_prints_its_header_first(cli):
    code, out, err = cli(
        "atom",
        "He",
        "--alpha",
        "8.14e-2",
        "--beta",
        "1.953",
        "--delta",
        "4.504",
        "--gamma",
        "1.515",
        "--nbs",
        "s:1:6",
        "--nonrelativistic",
        "--optimize",
        "--maxfun",
        "30",
        "--no-plot",
    )
    assert code == 0, err
    lines = out.splitlines()
    header = next(n for n, line in enumerate(lines) if line.startswith("hartree atom: He"))
    progress = next(n for n, line in enumerate(lines) if "evaluation 25:" in line)
    assert header < progress


def test_resource_errors_are_their_own_kind():
    assert not issubclass(ResourceError, InputError)
