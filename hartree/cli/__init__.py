"""hartree.cli: the ``hartree`` command line (argparse front end, rich output).

* :mod:`hartree.cli.main` - parser, subcommand registry, errors -> exit codes.
* :mod:`hartree.cli.run_command` - ``hartree run``: one SCF calculation.
* :mod:`hartree.cli.progress` - live per-iteration lines and spinner.
* :mod:`hartree.cli.report` - the results tables.
"""
