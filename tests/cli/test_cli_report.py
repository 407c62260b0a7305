"""The pure helpers behind the results tables and iteration lines."""

import io
import math
from types import SimpleNamespace

import numpy as np
import pytest
from rich.console import Console

from hartree.cli.progress import ITERATION_HEADER, ScfProgress, iteration_line
from hartree.cli.report import (
    AU_DIPOLE_IN_DEBYE,
    HARTREE_IN_EV,
    dipole_debye,
    formula,
    frontier_rows,
    homo_lumo_gap,
    orbital_table,
)


def test_constants_are_codata_2018():
    assert HARTREE_IN_EV == 27.211386245988
    assert AU_DIPOLE_IN_DEBYE == 2.541746473


def test_hill_formula():
    assert formula(("O", "H", "H")) == "H2O"
    assert formula(("C", "H", "H", "H", "H")) == "CH4"
    assert formula(("H", "C", "Cl", "C", "N", "H")) == "C2H2ClN"
    assert formula(("Na", "Cl")) == "ClNa"


def test_frontier_window_rhf():
    energy = np.arange(20, dtype=float) - 10.0
    occ = np.array([2.0] * 7 + [0.0] * 13)
    rows = frontier_rows(energy, occ)
    labels = [r[1] for r in rows]
    assert labels == ["HOMO-4", "HOMO-3", "HOMO-2", "HOMO-1", "HOMO", "LUMO", "LUMO+1", "LUMO+2", "LUMO+3", "LUMO+4"]
    assert rows[4] == (7, "HOMO", 2.0, -4.0)
    assert rows[5] == (8, "LUMO", 0.0, -3.0)


def test_frontier_window_clipped_at_the_ends():
    rows = frontier_rows([-1.0, -0.5, 0.3], [2, 0, 0])
    assert [r[1] for r in rows] == ["HOMO", "LUMO", "LUMO+1"]
    rows = frontier_rows([-1.0, -0.5], [2, 2])
    assert [r[1] for r in rows] == ["HOMO-1", "HOMO"]


def test_uhf_gap_uses_both_spins():
    result = SimpleNamespace(
        mo_energy=np.array([[-1.0, -0.6, 0.2], [-0.9, -0.1, 0.3]]), mo_occ=np.array([[1, 1, 0], [1, 0, 0]])
    )
    e_homo, e_lumo, gap = homo_lumo_gap(result)
    assert (e_homo, e_lumo) == (-0.6, -0.1)
    assert gap == pytest.approx(0.5, abs=1e-15)


def test_no_gap_without_virtuals():
    assert homo_lumo_gap(SimpleNamespace(mo_energy=np.array([-1.0]), mo_occ=np.array([2.0]))) is None


def test_dipole_in_debye():
    x, y, z, total = dipole_debye([0.0, 0.3, -0.4])
    assert (x, y) == (0.0, pytest.approx(0.3 * 2.541746473, abs=1e-15))
    assert total == pytest.approx(0.5 * 2.541746473, abs=1e-14)


def test_iteration_line_fits_80_columns_and_handles_missing_values():
    record = SimpleNamespace(
        cycle=0,
        energy=-1234.123456789012,
        delta_energy=math.nan,
        gradient_norm=3.6,
        diis_error=None,
        step="guess",
        time=0.5,
    )
    line = iteration_line(record)
    assert len(ITERATION_HEADER) <= 80 and len(line) <= 80
    fields = line.split()
    assert fields[:3] == ["0", "-1234.123456789012", "-"]
    assert fields[3:] == ["3.6e+00", "-", "guess", "0.50"]


def test_orbital_table_shows_ev():
    console = Console(width=80, record=True)
    console.print(orbital_table("", np.array([-0.5, 0.25]), np.array([2.0, 0.0])))
    text = console.export_text()
    assert "-13.6057" in text  # -0.5 Eh in eV
    assert "6.8028" in text  # 0.25 Eh in eV
    assert "HOMO" in text and "LUMO" in text


def _records():
    return [
        SimpleNamespace(
            cycle=0, energy=-74.68, delta_energy=math.nan, gradient_norm=3.0, diis_error=1.4, step="guess", time=0.1
        ),
        SimpleNamespace(
            cycle=1, energy=-74.92, delta_energy=-0.24, gradient_norm=0.46, diis_error=0.2, step="diis", time=0.2
        ),
    ]


def test_progress_plain_lines_when_not_a_terminal():
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=False)
    with ScfProgress(console) as progress:
        for record in _records():
            progress(record)
    lines = buffer.getvalue().splitlines()
    assert lines == [ITERATION_HEADER] + [iteration_line(r) for r in _records()]


def test_progress_spinner_on_a_terminal_stops_cleanly():
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, force_terminal=True)
    with pytest.raises(KeyboardInterrupt):
        with ScfProgress(console) as progress:
            progress(_records()[0])
            assert progress._status is not None  # spinner running
            raise KeyboardInterrupt
    assert progress._status is None  # stopped on the way out
    assert "-74.680000000000" in buffer.getvalue()


def test_progress_quiet_prints_nothing():
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=True)
    with ScfProgress(console, show_lines=False) as progress:
        progress(_records()[1])
    assert buffer.getvalue() == ""
