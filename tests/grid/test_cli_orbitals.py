"""``hartree orbitals`` end to end: JSON and Molden sources, cube/npy/h5/png outputs, errors."""

import h5py
import numpy as np
import pytest
from ase.io.cube import read_cube_data
from ase.units import Bohr
from pyscf.dft import numint

from hartree.cli.main import main
from hartree.io.cube import LOOP_ORDER, read_cube
from hartree.io.molden import write_molden
from hartree.io.qcschema import result_to_qcschema, write_json

from .conftest import WATER, fake_result


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sources")
    result, pmol = fake_result(WATER, "6-31g*")
    write_json(folder / "water.json", result_to_qcschema(result))
    write_molden(folder / "water.molden", result)
    return folder, result, pmol


def test_json_source_orbitals_to_cubes_npy_h5(sources, tmp_path, capsys):
    folder, result, pmol = sources
    code = main(
        [
            "orbitals",
            str(folder / "water.json"),
            "--mo",
            "homo,lumo+1",
            "--spacing",
            "0.4",
            "--bohr",
            "--margin",
            "2.0",
            "--cube",
            str(tmp_path / "w_{mo}.cube"),
            "--npy",
            str(tmp_path / "w_{mo}.npy"),
            "--h5",
            str(tmp_path / "w.h5"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "wrote cube" in out and "lattice:" in out
    homo = read_cube(tmp_path / "w_homo.cube")
    assert homo.orbitals == (5,)  # 10 electrons: HOMO is orbital 5
    points = (
        homo.origin
        + np.stack(np.meshgrid(*[np.arange(n) for n in homo.values.shape[1:]], indexing="ij"), -1).reshape(-1, 3)
        @ homo.axes
    )
    reference = numint.eval_ao(pmol, points) @ result.mo_coeff[:, [4, 6]]
    np.testing.assert_allclose(homo.values[0].ravel(), reference[:, 0], rtol=1e-5, atol=1e-9)
    lumo1 = np.load(tmp_path / "w_lumo+1.npy")
    np.testing.assert_allclose(lumo1.ravel(), reference[:, 1], rtol=0, atol=1e-10)
    with h5py.File(tmp_path / "w.h5") as handle:
        np.testing.assert_allclose(handle["values/homo"][()].ravel(), reference[:, 0], atol=1e-10)
        np.testing.assert_allclose(handle["lattice/axes"][()], homo.axes, atol=1e-6)


def test_ase_reads_the_cubes_of_hartree_orbitals(sources, tmp_path):
    """ASE's read_cube_data takes the axis order from the second comment line; it reads the
    cubes ``hartree orbitals`` writes (one orbital per file, and two in one file, where ASE
    returns the first) with the values and atoms of hartree's own reader, digit for digit."""
    folder, _, _ = sources
    common = ["orbitals", str(folder / "water.json"), "--spacing", "0.5", "--bohr", "--margin", "1.5"]
    assert main([*common, "--mo", "homo", "--cube", str(tmp_path / "homo.cube")]) == 0
    assert main([*common, "--mo", "homo,lumo", "--cube", str(tmp_path / "both.cube")]) == 0
    for name in ("homo", "both"):
        ours = read_cube(tmp_path / f"{name}.cube")
        assert ours.comments[1] == LOOP_ORDER
        assert len(set(ours.values.shape[1:])) == 3  # a transposed read could not pass
        data, atoms = read_cube_data(str(tmp_path / f"{name}.cube"))
        np.testing.assert_array_equal(data, ours.values[0])
        assert list(atoms.numbers) == list(ours.numbers) == [8, 1, 1]
        np.testing.assert_allclose(atoms.positions / Bohr, ours.coords, rtol=0, atol=1e-12)


def test_molden_source_density_and_mo_cube_with_png(sources, tmp_path, capsys):
    folder, result, _ = sources
    code = main(
        [
            "orbitals",
            str(folder / "water.molden"),
            "--mo",
            "homo,lumo",
            "--spacing",
            "0.3",
            "--cube",
            str(tmp_path / "both.cube"),
            "--png",
            str(tmp_path / "{mo}.png"),
            "-q",
        ]
    )
    assert code == 0
    both = read_cube(tmp_path / "both.cube")
    assert both.orbitals == (5, 6) and both.values.shape[0] == 2
    assert (tmp_path / "homo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code = main(
        [
            "orbitals",
            str(folder / "water.molden"),
            "--density",
            "--spacing",
            "0.3",
            "--cube",
            str(tmp_path / "rho.cube"),
        ]
    )
    assert code == 0
    assert "density integrates to" in capsys.readouterr().out
    assert read_cube(tmp_path / "rho.cube").orbitals is None


def test_errors_are_one_line_and_nothing_is_overwritten(sources, tmp_path, capsys):
    folder, _, _ = sources
    existing = tmp_path / "homo.cube"
    existing.write_text("keep")
    args = ["orbitals", str(folder / "water.json"), "--spacing", "0.4", "--cube", str(existing)]
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err and existing.read_text() == "keep"
    assert main(["orbitals", str(folder / "water.json"), "--mo", "homo,lumo", "--png", str(tmp_path / "one.png")]) == 2
    assert "{mo}" in capsys.readouterr().err
    assert main(["orbitals", str(folder / "water.json"), "--mo", "lumo+99", "--npy", str(tmp_path / "x.npy")]) == 2
    assert main(["orbitals", str(folder / "water.json")]) == 2
    assert "nothing to write" in capsys.readouterr().err
    assert main(["orbitals", str(tmp_path / "none.json"), "--npy", str(tmp_path / "y.npy")]) == 2


def test_explicit_lattice_and_point_list(sources, tmp_path):
    folder, result, pmol = sources
    code = main(
        [
            "orbitals",
            str(folder / "water.json"),
            "--mo",
            "2",
            "--bohr",
            "--origin",
            "-2",
            "-2.5",
            "-2",
            "--axes",
            "0.5",
            "0.1",
            "0",
            "0",
            "0.5",
            "0",
            "0",
            "0",
            "0.6",
            "--shape",
            "5",
            "6",
            "7",
            "--cube",
            str(tmp_path / "tilted.cube"),
            "-q",
        ]
    )
    assert code == 0
    cube = read_cube(tmp_path / "tilted.cube")
    np.testing.assert_allclose(cube.axes, [[0.5, 0.1, 0], [0, 0.5, 0], [0, 0, 0.6]])
    assert cube.values.shape == (1, 5, 6, 7)
    corner = numint.eval_ao(pmol, np.array([[-2.0, -2.5, -2.0], [-1.5, -2.4, -2.0]])) @ result.mo_coeff[:, 1]
    np.testing.assert_allclose(cube.values[0, :2, 0, 0], corner, rtol=1e-5, atol=1e-9)
    points = np.array([[0.1, 0.2, 0.3], [1.0, -0.5, 0.2]])  # Angstrom
    np.savetxt(tmp_path / "points.txt", points)
    code = main(
        [
            "orbitals",
            str(folder / "water.json"),
            "--density",
            "--points",
            str(tmp_path / "points.txt"),
            "--npy",
            str(tmp_path / "rho.npy"),
            "-q",
        ]
    )
    assert code == 0
    dm = (result.mo_coeff * result.mo_occ) @ result.mo_coeff.T
    ref = numint.eval_rho(pmol, numint.eval_ao(pmol, points / 0.529177210903), dm)
    np.testing.assert_allclose(np.load(tmp_path / "rho.npy"), ref, rtol=0, atol=1e-10)
    assert (
        main(
            [
                "orbitals",
                str(folder / "water.json"),
                "--points",
                str(tmp_path / "points.txt"),
                "--cube",
                str(tmp_path / "p.cube"),
            ]
        )
        == 2
    )


def test_checkpoint_source(sources, tmp_path):
    from hartree.grid.sources import load_wavefunction
    from hartree.scf.checkpoint import write_checkpoint

    _, result, pmol = sources
    path = tmp_path / "water.h5"
    write_checkpoint(
        path,
        molecule=result.molecule,
        basis=result.basis,
        method="rhf",
        cycle=3,
        energy=-76.0,
        dm=np.zeros((1, result.basis.nao, result.basis.nao)),
        mo_coeff=result.mo_coeff,
        mo_energy=result.mo_energy,
        mo_occ=result.mo_occ,
    )
    wfn = load_wavefunction(path)
    np.testing.assert_allclose(wfn.mo_coeff, result.mo_coeff)
    code = main(
        [
            "orbitals",
            str(path),
            "--mo",
            "homo",
            "--bohr",
            "--points",
            str(_points(tmp_path)),
            "--npy",
            str(tmp_path / "homo.npy"),
            "-q",
        ]
    )
    assert code == 0
    ref = numint.eval_ao(pmol, np.loadtxt(tmp_path / "p.txt")) @ result.mo_coeff[:, 4]
    np.testing.assert_allclose(np.load(tmp_path / "homo.npy"), ref, atol=1e-10, rtol=0)


def _points(folder):
    np.savetxt(folder / "p.txt", np.random.default_rng(5).normal(size=(30, 3)))
    return folder / "p.txt"


def test_device_option(sources, tmp_path, capsys):
    """--device cpu computes (and says so); --device gpu without a usable GPU is exit code 4
    with one line naming the reason, before any output file is written."""
    from hartree.device.selection import gpu_status

    folder, result, pmol = sources
    code = main(
        [
            "orbitals",
            str(folder / "water.json"),
            "--spacing",
            "0.5",
            "--bohr",
            "--device",
            "cpu",
            "--npy",
            str(tmp_path / "h.npy"),
        ]
    )
    assert code == 0 and "device:  cpu" in capsys.readouterr().out
    lattice_values = np.load(tmp_path / "h.npy")
    assert lattice_values.ndim == 3
    if gpu_status()[0]:
        pytest.skip("a GPU is usable here; the no-GPU error cannot be shown")
    code = main(
        [
            "orbitals",
            str(folder / "water.json"),
            "--spacing",
            "0.5",
            "--device",
            "gpu",
            "--npy",
            str(tmp_path / "g.npy"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 4
    assert "no CUDA GPU is usable" in captured.err
    assert not (tmp_path / "g.npy").exists()
