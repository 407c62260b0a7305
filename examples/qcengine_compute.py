"""hartree through QCEngine: ``qcengine.compute(AtomicInput, "hartree")``.

Importing ``hartree.qcengine`` registers the program "hartree" with QCEngine; after that any
code that speaks QCSchema (QCFractal, workflow tools, your own scripts) runs hartree like any
other quantum-chemistry program:

    python examples/qcengine_compute.py                      # water, RHF/sto-3g
    python examples/qcengine_compute.py --basis '6-31g*' --device cpu

It computes the energy and the analytic gradient of the molecule and prints each
``return_result`` (energy in Eh; gradient in Eh/bohr, one row per atom), then sends an input
hartree cannot run (an unknown basis set) and prints the FailedOperation QCEngine returns
instead of raising.  ``main(argv)`` returns the three results.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import qcengine
from qcelemental.models import AtomicInput

import hartree
import hartree.qcengine  # noqa: F401  (registers the program "hartree" with QCEngine)

WATER = pathlib.Path(__file__).resolve().parent / "water.xyz"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="energy and gradient through qcengine.compute(..., 'hartree')")
    p.add_argument("--xyz", default=str(WATER), help="molecule (XYZ, Angstrom; default: examples/water.xyz)")
    p.add_argument("--basis", default="sto-3g", help="basis set (default: sto-3g)")
    p.add_argument("--method", default="rhf", choices=["rhf", "uhf", "rohf"], help="SCF method (default: rhf)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"], help="where hartree runs")
    return p.parse_args(argv)


def main(argv=None):
    """Returns (energy AtomicResult, gradient AtomicResult, FailedOperation)."""
    args = parse_args(argv)
    # A QCSchema molecule (geometry in bohr); qcelemental.models.Molecule works as well.
    molecule = hartree.Molecule.from_xyz(args.xyz).to_qcschema()
    model = {"method": args.method, "basis": args.basis}
    keywords = {"device": args.device}  # and SCF options: conv_tol, max_cycle, level_shift, ...

    energy = qcengine.compute(
        AtomicInput(molecule=molecule, driver="energy", model=model, keywords=keywords), "hartree", raise_error=True
    )
    print(f"{args.method.upper()}/{args.basis} energy (return_result): {energy.return_result:.10f} Eh")
    props = energy.properties
    print(f"  {props.calcinfo_nbasis} basis functions, {props.scf_iterations} SCF iterations, success {energy.success}")

    gradient = qcengine.compute(
        AtomicInput(molecule=molecule, driver="gradient", model=model, keywords=keywords), "hartree", raise_error=True
    )
    print(f"gradient (return_result, Eh/bohr), energy {gradient.properties.return_energy:.10f} Eh:")
    for symbol, row in zip(gradient.molecule.symbols, np.asarray(gradient.return_result).reshape(-1, 3)):
        print(f"  {symbol:2s} {row[0]:15.10f} {row[1]:15.10f} {row[2]:15.10f}")

    bad_model = {"method": args.method, "basis": "no-such-basis"}
    bad = AtomicInput(molecule=molecule, driver="energy", model=bad_model, keywords=keywords)
    failed = qcengine.compute(bad, "hartree")  # no exception: a FailedOperation
    print(f"bad input -> {type(failed).__name__}: success {failed.success}, error type {failed.error.error_type}")
    print(f"  {failed.error.error_message.strip().splitlines()[-1]}")
    return energy, gradient, failed


if __name__ == "__main__":
    main()
