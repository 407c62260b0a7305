"""The end-of-run report: rich tables of energies, orbitals, charges and dipole.

The helpers that pick numbers (frontier orbitals, gap) are pure functions;
``print_report`` only lays them out on a rich Console.  ``formula`` is
:func:`hartree.molecule.hill_formula` (``Molecule.formula``), under the name the commands use.
"""

import numpy as np
from rich import box
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..molecule import hill_formula as formula  # noqa: F401  (re-exported for the commands)

#: One hartree in electronvolt (CODATA 2018).
HARTREE_IN_EV = 27.211386245988
#: One atomic unit of electric dipole moment (e a0) in debye (CODATA 2018).
AU_DIPOLE_IN_DEBYE = 2.541746473

_OCC_TOL = 1e-8


def _homo_index(mo_occ):
    occupied = np.flatnonzero(np.asarray(mo_occ) > _OCC_TOL)
    return int(occupied[-1]) if occupied.size else -1


def frontier_rows(mo_energy, mo_occ, below=4, above=4):
    """Rows (number from 1, label, occupation, energy) for HOMO-below .. LUMO+above.

    Labels count from the highest occupied orbital (HOMO) and the one after it
    (LUMO); orbitals are taken in the order given (ascending energy).
    """
    mo_energy = np.asarray(mo_energy, dtype=float)
    mo_occ = np.asarray(mo_occ, dtype=float)
    homo = _homo_index(mo_occ)
    rows = []
    for n in range(max(homo - below, 0), min(homo + 2 + above, len(mo_energy))):
        if n <= homo:
            label = "HOMO" if n == homo else f"HOMO-{homo - n}"
        else:
            label = "LUMO" if n == homo + 1 else f"LUMO+{n - homo - 1}"
        rows.append((n + 1, label, float(mo_occ[n]), float(mo_energy[n])))
    return rows


def orbital_sets(result):
    """[(title, mo_energy, mo_occ)]: one set for RHF/ROHF, alpha and beta for UHF."""
    mo_energy = np.asarray(result.mo_energy, dtype=float)
    mo_occ = np.asarray(result.mo_occ, dtype=float)
    if mo_energy.ndim == 2:
        return [("alpha", mo_energy[0], mo_occ[0]), ("beta", mo_energy[1], mo_occ[1])]
    return [("", mo_energy, mo_occ)]


def homo_lumo_gap(result):
    """(E_HOMO, E_LUMO, gap) in Eh over all spin sets, or None without virtual orbitals."""
    homos, lumos = [], []
    for _, energy, occ in orbital_sets(result):
        homo = _homo_index(occ)
        if homo >= 0:
            homos.append(energy[homo])
        if homo + 1 < len(energy):
            lumos.append(energy[homo + 1])
    if not homos or not lumos:
        return None
    e_homo, e_lumo = max(homos), min(lumos)
    return float(e_homo), float(e_lumo), float(e_lumo - e_homo)


def dipole_debye(dipole_au):
    """(x, y, z, |mu|) in debye from a dipole vector in atomic units."""
    mu = np.asarray(dipole_au, dtype=float) * AU_DIPOLE_IN_DEBYE
    return float(mu[0]), float(mu[1]), float(mu[2]), float(np.linalg.norm(mu))


def final_energy_line(result):
    """The one-line summary (all that ``--quiet`` prints), e.g. 'E(RHF/sto-3g) = -74.962929094 Eh';
    Kohn-Sham 'E(RKS-B3LYP/6-31g) = ...' or 'E(UKS-PBE/6-31g) = ...' (not Gaussian's 'RPBE',
    which names another functional)."""
    xc = getattr(result, "xc", None)
    method = f"{result.method}-{xc}" if xc else str(result.method)
    dispersion = getattr(result, "dispersion", None)
    if dispersion:  # 'E(RKS-B3LYP-D3BJ/def2-svp)': the energy includes the correction
        method += f"-{dispersion['model']}"
    line = f"E({method.upper()}/{result.basis.name}) = {float(result.energy):.10f} Eh"
    if not result.converged:
        line += "  [NOT CONVERGED]"
    return line


def plain_table(title, show_header=True):
    """A rich Table in the report's style (simple head, no outer edge, left title)."""
    return Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        show_header=show_header,
    )


def energy_table(result):
    """Total energy and its components."""
    comps = result.energy_components
    table = plain_table("Energy")
    table.add_column("term")
    table.add_column("Eh", justify="right")
    rows = [("one-electron", comps["one_electron"]), ("Coulomb", comps["coulomb"])]
    if "xc" in comps:  # Kohn-Sham: the scaled exact exchange and E_xc
        rows += [("exact exchange", comps["exchange"]), ("exchange-correlation", comps["xc"])]
        if "vv10" in comps:  # VV10 non-local correlation (hartree.dft.vv10)
            rows.append(("VV10 non-local correlation", comps["vv10"]))
    else:
        rows.append(("exchange", comps["exchange"]))
    rows.append(("nuclear repulsion", comps["nuclear_repulsion"]))
    if "dispersion" in comps:  # added after the SCF (hartree.dft.dispersion)
        rows.append((f"dispersion {result.dispersion['label']}", comps["dispersion"]))
    for name, value in rows:
        table.add_row(name, f"{float(value):.10f}")
    table.add_row(Text("total", style="bold"), Text(f"{float(result.energy):.10f}", style="bold"), end_section=True)
    return table


def orbital_table(title, mo_energy, mo_occ):
    """Orbital energies around the HOMO-LUMO gap, in Eh and eV with occupations."""
    table = plain_table(f"Orbital energies{' (' + title + ')' if title else ''}")
    for name, justify in (("#", "right"), ("orbital", "left"), ("occ", "right"), ("Eh", "right"), ("eV", "right")):
        table.add_column(name, justify=justify)
    for number, label, occ, energy in reversed(frontier_rows(mo_energy, mo_occ)):
        style = "bold" if label in ("HOMO", "LUMO") else None
        table.add_row(str(number), label, f"{occ:g}", f"{energy:.6f}", f"{energy * HARTREE_IN_EV:.4f}", style=style)
    return table


def charges_table(result):
    """Mulliken charges per atom."""
    table = plain_table("Mulliken charges")
    table.add_column("#", justify="right")
    table.add_column("atom")
    table.add_column("charge", justify="right")
    for n, (symbol, q) in enumerate(zip(result.molecule.symbols, result.mulliken_charges)):
        table.add_row(str(n + 1), symbol, f"{float(q):+.6f}")
    table.add_row("", "sum", f"{float(np.sum(result.mulliken_charges)):+.6f}")
    return table


def dipole_table(result):
    """Dipole moment components and length in debye (and atomic units)."""
    table = plain_table("Dipole moment")
    for name in ("", "x", "y", "z", "total"):
        table.add_column(name, justify="right" if name else "left")
    mu_d = dipole_debye(result.dipole)
    mu_au = [x / AU_DIPOLE_IN_DEBYE for x in mu_d]
    table.add_row("debye", *(f"{x:.6f}" for x in mu_d))
    table.add_row("a.u.", *(f"{x:.6f}" for x in mu_au))
    return table


def summary_table(result):
    """Method, convergence, iterations, gap, <S^2>, wall time and device."""
    table = plain_table("Summary", show_header=False)
    table.add_column("")
    table.add_column("")
    basis = result.basis
    kind = "spherical" if basis.pure else "cartesian"
    xc = getattr(result, "xc", None)
    table.add_row("method", f"{str(result.method).upper()} {xc}" if xc else str(result.method).upper())
    table.add_row("basis", f"{basis.name} ({basis.nao} {kind} functions)")
    table.add_row("converged", Text("yes") if result.converged else Text("NO", style="bold red"))
    table.add_row("iterations", str(result.iterations))
    gap = homo_lumo_gap(result)
    if gap is not None:
        table.add_row("HOMO-LUMO gap", f"{gap[2]:.6f} Eh = {gap[2] * HARTREE_IN_EV:.4f} eV")
    if result.s_squared is not None:
        s = (result.molecule.multiplicity - 1) / 2
        table.add_row("<S^2>", f"{float(result.s_squared):.6f} (exact {s * (s + 1):.4f})")
    table.add_row("total energy", Text(f"{float(result.energy):.10f} Eh", style="bold"))
    table.add_row("wall time", f"{float(result.wall_time):.2f} s")
    stages = stage_times_text(getattr(result, "timings", None) or {})
    if stages:
        table.add_row("time by stage", stages)
    table.add_row("device", str(result.device))
    return table


def stage_times_text(timings):
    """'J/K 12.31 s (3 full + 12 incremental builds), guess 0.84 s, ...' from
    SCFResult.timings; '' when there are none."""
    if not timings:
        return ""
    nfull, ninc = timings.get("full_builds", 0), timings.get("incremental_builds", 0)
    early = timings.get("early_screening_builds", 0)
    mixed = timings.get("mixed_precision_builds", 0)
    parts = [
        f"J/K {timings.get('jk', 0.0):.2f} s ({nfull} full + {ninc} incremental builds"
        + (f", {early} with early screening" if early else "")
        + (f", {mixed} asked for in mixed precision" if mixed else "")
        + ")"
    ]
    for key, label in (
        ("guess", "guess"),
        ("one_electron", "one-electron"),
        ("grid", "DFT grid"),
        ("xc", "XC"),
        ("other", "Fock/DIIS/diagonalisation"),
        ("analysis", "analysis"),
    ):
        if key in timings and (key not in ("grid", "xc") or timings[key] > 0):  # grid, xc: Kohn-Sham only
            parts.append(f"{label} {timings[key]:.2f} s")
    return ", ".join(parts)


def not_converged_banner(message):
    """A loud red panel saying the SCF did not converge."""
    return Panel(
        Text(message),
        title=Text("NOT CONVERGED", style="bold red"),
        border_style="bold red",
        box=box.HEAVY,
        expand=False,
    )


def print_report(console, result):
    """Print every results table for an SCFResult on a rich Console."""
    tables = [energy_table(result)]
    tables += [orbital_table(title, energy, occ) for title, energy, occ in orbital_sets(result)]
    tables += [charges_table(result), dipole_table(result), summary_table(result)]
    for table in tables:
        console.print()
        console.print(table)


def mp2_energy_line(mp2, basis_name):
    """The one-line MP2 summary (all that ``--quiet`` prints with --method mp2), e.g.
    'E(MP2/cc-pvdz) = -76.2307897371 Eh'."""
    return f"E(MP2/{basis_name}) = {float(mp2.total_energy):.10f} Eh"


def _orbital_count(value):
    """'4' for RHF counts, '4 alpha, 3 beta' for UHF (alpha, beta) tuples."""
    if isinstance(value, (tuple, list)):
        return f"{value[0]} alpha, {value[1]} beta"
    return str(value)


def mp2_table(mp2):
    """RI-MP2 energies (Eh): reference, spin components, MP2 and SCS-MP2."""
    table = plain_table("RI-MP2")
    table.add_column("term")
    table.add_column("Eh", justify="right")
    reference = str(mp2.reference).upper()
    rows = [
        (f"SCF energy ({reference})", mp2.scf_energy),
        ("opposite-spin correlation", mp2.opposite_spin),
        ("same-spin correlation", mp2.same_spin),
        ("MP2 correlation", mp2.correlation_energy),
    ]
    for name, value in rows:
        table.add_row(name, f"{float(value):.10f}")
    table.add_row(
        Text("MP2 total", style="bold"), Text(f"{float(mp2.total_energy):.10f}", style="bold"), end_section=True
    )
    table.add_row("SCS-MP2 correlation", f"{float(mp2.scs_correlation_energy):.10f}")
    table.add_row("SCS-MP2 total", f"{float(mp2.scs_total_energy):.10f}", end_section=True)
    return table


def mp2_summary_table(mp2):
    """Auxiliary basis, orbital spaces, precision, device and time of an RI-MP2 run."""
    table = plain_table("RI-MP2 summary", show_header=False)
    table.add_column("")
    table.add_column("")
    table.add_row("reference", str(mp2.reference).upper())
    table.add_row("aux basis", f"{mp2.aux_basis} ({mp2.naux} functions)")
    table.add_row("frozen core orbitals", str(mp2.frozen_core))
    table.add_row("active occupied / virtual", f"{_orbital_count(mp2.nocc)} / {_orbital_count(mp2.nvir)}")
    table.add_row("precision", str(mp2.precision))
    table.add_row("device", str(mp2.device))
    table.add_row("time", f"{float(mp2.wall_time):.2f} s")
    for note in getattr(mp2, "notes", ()):  # e.g. the "mixed" slice calibration
        table.add_row("note", str(note))
    return table


def print_mp2_report(console, mp2):
    """Print the RI-MP2 tables for an MP2Result on a rich Console."""
    for table in (mp2_table(mp2), mp2_summary_table(mp2)):
        console.print()
        console.print(table)
