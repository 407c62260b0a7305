"""The Kohn-Sham part of the ``hartree run`` report: the functional and the grid.

``dft_table`` lays out ``SCFResult.dft`` (:meth:`hartree.scf.ks.KohnSham.summary`): the
functional as named and its libxc components with factors and libxc's references, the
exact-exchange fraction, the grid (level, number of points) and the electron count the grid
integrates for the final density, beside the molecule's, and for VV10 functionals b, C and
the VV10 grid.  The energy components, E_xc and E_nlc among them, are in the report's
energy table (:func:`hartree.cli.report.energy_table`).
``dispersion_table`` lays out ``SCFResult.dispersion`` (model, parameters, package; the
energy is a row of the energy table).  ``dft_line`` is the header line of ``hartree opt``
and ``hartree freq`` with a functional or a dispersion correction, ``method_label`` the
method of their closing lines ('RKS-B3LYP', as hartree run's).
"""

from .report import plain_table


def _label_value_table(title):
    """An empty header-less table titled ``title`` in the report's style with two columns:
    the label and its value (folded when longer than the line)."""
    table = plain_table(title, show_header=False)
    table.add_column("")
    table.add_column("", overflow="fold")
    return table


def dft_table(result):
    """The 'Kohn-Sham DFT' table of a Kohn-Sham result (None for Hartree-Fock)."""
    info = getattr(result, "dft", None)
    if not info:
        return None
    table = _label_value_table("Kohn-Sham DFT")
    spin = "restricted (RKS)" if str(result.method).lower() == "rks" else "unrestricted (UKS)"
    table.add_row("functional", f"{info['xc']}: {info['family']}, {spin}")
    cx = float(info["hf_exchange"])
    table.add_row("exact exchange", f"{cx:g} (hybrid)" if cx else "none (pure functional)")
    for n, comp in enumerate(info["components"]):
        factor = "" if comp["factor"] == 1.0 else f"{comp['factor']:g} x "
        table.add_row("libxc" if n == 0 else "", f"{factor}{comp['name']} (id {comp['libxc_id']})")
        for ref in comp["references"]:
            table.add_row("", f"  {ref}")
    libxc = info.get("libxc") or {}
    if libxc:
        table.add_row("libxc version", f"{libxc['version']} ({libxc['reference']})")
    table.add_row("grid", f"level {info['grid_level']}, {info['grid_points']} points")
    nelec = float(info["electrons_integrated"])
    expected = int(result.molecule.nelectron)
    table.add_row("electrons on the grid", f"{nelec:.8f} (exact {expected}, error {nelec - expected:+.1e})")
    vv10 = info.get("vv10")
    if vv10:  # VV10 non-local correlation on its own grid (hartree.dft.vv10)
        table.add_row(
            "VV10", f"b = {vv10['b']:g}, C = {vv10['C']:g} (Vydrov and Van Voorhis, J. Chem. Phys. 133, 244103 (2010))"
        )
        table.add_row("VV10 grid", f"level {vv10['grid_level']}, {vv10['grid_points']} points")
        n_nlc = float(vv10["electrons_integrated"])
        table.add_row("electrons on it", f"{n_nlc:.8f} (error {n_nlc - expected:+.1e})")
    return table


def dispersion_table(result):
    """The 'Dispersion correction' table of a result with one (None without)."""
    info = getattr(result, "dispersion", None)
    if not info:
        return None
    table = _label_value_table("Dispersion correction")
    three = "with the three-body (ATM) term" if info["three_body"] else "two-body"
    table.add_row("model", f"{info['label']}, {three}, added after the SCF")
    table.add_row("parameters", f"{info['parameters']} ({info['package']} {info['version']})")
    table.add_row("energy", f"{float(info['energy']):.10f} Eh")
    return table


def print_dft_report(console, result):
    """Print the Kohn-Sham table of a Kohn-Sham result and the dispersion table of a result
    with a correction on a rich Console (nothing for plain HF)."""
    for table in (dft_table(result), dispersion_table(result)):
        if table is not None:
            console.print()
            console.print(table)


def method_label(method, xc=None):
    """'RHF', or for Kohn-Sham 'RKS-B3LYP' ('UKS-PBE'): the method as the closing lines name it."""
    return (f"{method}-{xc}" if xc else str(method)).upper()


def dft_line(method, options, grid_response):
    """'DFT:      b3lyp, RKS, grid level 3, gradients without the grid response' for the SCF
    ``method`` and ``options`` of a functional (:func:`hartree.keywords.gradient_options`),
    with ', dispersion d3bj' when ``options`` has one; 'dispersion: d3bj' for Hartree-Fock
    with one, else None."""
    dispersion = options.get("dispersion")
    if "xc" not in options:
        return f"dispersion: {dispersion}" if dispersion else None
    response = "with" if grid_response else "without"
    return (
        f"DFT:      {options['xc']}, {str(method).upper()}, grid level {options['grid_level']}, "
        f"gradients {response} the grid response" + (f", dispersion {dispersion}" if dispersion else "")
    )
