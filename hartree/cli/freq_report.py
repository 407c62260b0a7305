"""The report of ``hartree freq``: one line per displacement, the table of vibrations and
the thermochemistry.  Pure layout: the numbers come from a
:class:`hartree.vibrations.FrequencyResult` (kcal/mol and cal/(mol K) through its constants)."""

from .dft_report import method_label
from .report import plain_table


def progress_line(event):
    """'[ 3/18] O1 -y   E -75.983974512 Eh   6 cycles   0.31 s' for a finished displacement."""
    width = len(str(event.total))
    return (
        f"[{event.done:>{width}d}/{event.total}] {event.label:<9s} E {event.energy:.9f} Eh  "
        f"{event.iterations:3d} cycles  {event.seconds:6.2f} s"
    )


def vibration_table(result):
    """rich Table: mode, frequency (and scaled frequency), IR intensity, reduced mass,
    force constant."""
    analysis = result.analysis
    nvib = len(analysis.frequencies)
    kind = {"linear": "3N-5", "nonlinear": "3N-6", "atom": "an atom has none"}[analysis.rotor]
    table = plain_table(f"harmonic vibrations ({kind}: {nvib}; negative frequencies are imaginary)")
    table.add_column("mode", justify="right")
    table.add_column("freq (cm-1)", justify="right")
    scaled = analysis.scale_factor != 1.0
    if scaled:
        table.add_column(f"x {analysis.scale_factor:g} (cm-1)", justify="right")
    table.add_column("IR (km/mol)", justify="right")
    table.add_column("red. mass (u)", justify="right")
    table.add_column("k (mdyn/A)", justify="right")
    for k in range(nvib):
        row = [str(k + 1), f"{analysis.frequencies[k]:.2f}"]
        if scaled:
            row.append(f"{analysis.scaled_frequencies[k]:.2f}")
        row.append("-" if analysis.ir_intensities is None else f"{analysis.ir_intensities[k]:.4f}")
        row += [f"{analysis.reduced_masses[k]:.4f}", f"{analysis.force_constants[k]:.4f}"]
        table.add_row(*row)
    return table


def _qrrho_text(thermo):
    if thermo.qrrho is None:
        return "RRHO"
    what = "entropy" if thermo.qrrho == "grimme" else "entropy and energy"
    return f"quasi-RRHO ({thermo.qrrho}: {what}, cut-off {thermo.qrrho_cutoff:g} cm-1)"


def contributions_table(result):
    """rich Table of the thermal contributions: E, H in kcal/mol (the electronic energy
    left out), S, Cv, Cp in cal/(mol K)."""
    thermo = result.thermochemistry
    constants = result.analysis.constants
    kcal = constants.hartree_kcal_mol
    cal = 1000.0 * kcal  # cal/(mol K) per Eh/K
    table = plain_table(f"thermal contributions at {thermo.temperature:g} K, {thermo.pressure:g} Pa")
    table.caption = "E, H: kcal/mol (E0 left out); S, Cv, Cp: cal/(mol K)"
    table.caption_justify = "left"
    table.add_column("", no_wrap=True)
    for title in ("E", "H", "S", "Cv", "Cp"):
        table.add_column(title, justify="right")
    total = {"energy": 0.0, "enthalpy": 0.0, "entropy": 0.0, "cv": 0.0, "cp": 0.0}
    for name, part in thermo.contributions.items():
        e0 = thermo.electronic_energy if name == "electronic" else 0.0
        values = {
            "energy": part.energy - e0,
            "enthalpy": part.enthalpy - e0,
            "entropy": part.entropy,
            "cv": part.cv,
            "cp": part.cp,
        }
        for key in total:
            total[key] += values[key]
        table.add_row(name, *_row(values, kcal, cal))
    table.add_row("total", *_row(total, kcal, cal), style="bold")
    return table


def _row(values, kcal, cal):
    return [
        f"{values['energy'] * kcal:.4f}",
        f"{values['enthalpy'] * kcal:.4f}",
        f"{values['entropy'] * cal:.4f}",
        f"{values['cv'] * cal:.4f}",
        f"{values['cp'] * cal:.4f}",
    ]


def energies_table(result):
    """rich Table: E0, ZPE, E0 + ZPE, E, H, T S, G in Eh (and the corrections in kcal/mol)."""
    thermo = result.thermochemistry
    kcal = result.analysis.constants.hartree_kcal_mol
    e0 = thermo.electronic_energy
    table = plain_table("energies (Eh; corrections to E0 in kcal/mol)", show_header=False)
    table.add_column("quantity")
    table.add_column("Eh", justify="right")
    table.add_column("kcal/mol", justify="right")
    temperature = f"{thermo.temperature:g} K"
    rows = [
        ("electronic energy E0", e0, None),
        ("zero-point energy", thermo.zero_point_energy, thermo.zero_point_energy),
        ("E0 + ZPE", e0 + thermo.zero_point_energy, thermo.zero_point_energy),
        (f"internal energy E ({temperature})", thermo.internal_energy, thermo.internal_energy - e0),
        (f"enthalpy H ({temperature})", thermo.enthalpy, thermo.enthalpy - e0),
        (f"T S ({temperature})", thermo.temperature * thermo.entropy, thermo.temperature * thermo.entropy),
        (f"Gibbs free energy G ({temperature})", thermo.gibbs_free_energy, thermo.gibbs_free_energy - e0),
    ]
    for label, value, correction in rows:
        table.add_row(label, f"{value:.10f}", "" if correction is None else f"{correction * kcal:+.4f}")
    return table


def final_line(result):
    """The one line of --quiet (also the last line of the full report)."""
    thermo = result.thermochemistry
    return (
        f"{method_label(result.method, result.gradient.scf.xc)}/{result.basis}: E0 {thermo.electronic_energy:.10f} Eh, "
        f"ZPE {thermo.zero_point_energy:.10f} Eh, H {thermo.enthalpy:.10f} Eh, "
        f"G({thermo.temperature:g} K) {thermo.gibbs_free_energy:.10f} Eh"
    )


def print_frequency_report(console, result):
    """The vibrations, the thermochemistry tables and the notes."""
    console.print()
    console.print(vibration_table(result))
    thermo = result.thermochemistry
    console.print()
    console.print(
        f"ideal gas, {_qrrho_text(thermo)}; point group {result.analysis.point_group}, "
        f"rotational symmetry number {thermo.symmetry_number}, {result.analysis.rotor} rotor, "
        f"electronic degeneracy {thermo.multiplicity}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(contributions_table(result))
    console.print()
    console.print(energies_table(result))
    imaginary = result.thermochemistry.imaginary_frequencies
    if imaginary.size:
        listed = ", ".join(f"{f:.2f}" for f in imaginary)
        console.print(
            f"note: imaginary frequencies left out of the thermochemistry: {listed} cm-1", markup=False, soft_wrap=True
        )
    for note in result.notes:
        if "imaginary" not in note:
            console.print(f"note: {note}", markup=False, soft_wrap=True)
