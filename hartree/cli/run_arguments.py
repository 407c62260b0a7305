"""The arguments of ``hartree run`` (its ``--help`` texts and parser), kept apart from
:mod:`hartree.cli.run_command`, which executes them; the command module re-exports
DESCRIPTION, EPILOG and add_arguments, the members :class:`hartree.cli.main.Command` asks for.
"""

from ..device.selection import DEVICES
from ..gradients import GRADIENT_SCF_DEFAULTS
from ..linalg import PRECISIONS
from ..scf import SCFOptions
from .argtypes import integer, non_negative_float, positive_float, positive_int
from .run_options import EPILOG as ATOMIC_INPUT_EPILOG
from .run_options import Given, GivenFlag, add_dft_arguments

DESCRIPTION = """\
Run a Hartree-Fock or Kohn-Sham DFT calculation on the molecule in FILE and print one line per SCF
iteration, then tables of the energy and its components, orbital energies around
the HOMO-LUMO gap, Mulliken charges, the dipole moment, <S^2> (UHF/ROHF), the
number of iterations, the wall time and the device that did the work (--device auto:
a CUDA GPU when cupy sees one, else the CPU; --gpus: which GPUs share the work, all
visible ones by default, one below 500 basis functions).  On a GPU the kernels are compiled at run time (NVRTC) the
first time a basis needs them and cached on disk; the run says when it is compiling.

With --method mp2 the SCF (RHF, or UHF for open shells; see --reference) is
followed by RI-MP2 with an auxiliary (density-fitting) basis, and a table of the
opposite-spin, same-spin and total correlation energies, MP2 and SCS-MP2 totals.

With --method FUNCTIONAL (b3lyp, pbe, svwn, pbe0, tpss, scan, r2scan, m06-2x, any libxc
name; PySCF's libxc: pip install "hartree[dft]") the SCF is Kohn-Sham DFT, RKS for
closed-shell singlets and UKS otherwise (--unrestricted: always UKS), on the grid of --grid;
the report adds the functional's libxc components and references, E_xc, the grid and the
electron count it integrates; --gradient adds the analytic gradient (--grid-response: with the
grid's derivative). Range-separated hybrids (cam-b3lyp, wb97x) and VV10 functionals (wb97m-v,
on the grid of --nlc-grid) run as the others do; ROKS and checkpoints of DFT runs are refused
(exit code 2). --dispersion d3bj|d3zero|d4 (or a suffix: b3lyp-d3bj) adds that correction
(dftd3/dftd4 packages, the functional's or HF's parameters) to the energy and the gradient.

--density-fitting [AUX] fits J and K with an auxiliary basis (default def2-universal-JKFIT,
or cc-pVXZ-JKFIT for cc-pVTZ/QZ/5Z); --exact-k fits J only. --gradient, opt and freq
differentiate the fitted energy (its derivative integrals on the CPU). --precision mixed: the
fitted K of the early cycles in a mixed precision bounded per build (else FP64), then FP64."""

EPILOG = (
    """\
molecule files:
  .xyz   XYZ in Angstrom; the comment line may say "charge=1 multiplicity=2"
  .json  QCSchema molecule (geometry in bohr), a hartree/QCSchema result, or a
         QCSchema AtomicInput (below)
  --charge and --multiplicity override what the file says; without either the
  molecule is neutral with the lowest multiplicity its electron count allows.

"""
    + ATOMIC_INPUT_EPILOG
    + """

examples:
  hartree run water.xyz --basis cc-pvdz
  hartree run water.xyz -b 6-31g* --json water.json --molden water.molden
  hartree run water.xyz -b 6-31g** --gradient --json water-grad.json   # energy and gradient
  hartree run water.xyz -b def2-svp --method b3lyp --grid 4 --json water-b3lyp.json   # RKS
  hartree run water.xyz -b def2-svp -m pbe --gradient --grid-response   # DFT gradient
  hartree run dimer.xyz -b def2-svp -m b3lyp --dispersion d3bj          # B3LYP-D3(BJ)
  hartree run water.xyz -b def2-tzvp -m b3lyp --density-fitting         # RI-JK, def2-universal-jkfit
  hartree run water.xyz -b def2-tzvp --density-fitting --precision mixed   # mixed-precision fitted K
  hartree run oh.xyz -b 6-31g* -m pbe0 --multiplicity 2                  # UKS (open shell)
  hartree run no2.xyz -b def2-svp --method uhf --multiplicity 2
  hartree run cation.xyz -b cc-pvtz -m rohf --charge 1 --multiplicity 2 --quiet
  hartree run big.xyz -b cc-pvdz --checkpoint big.h5
  hartree run big.xyz -b cc-pvdz --checkpoint big.h5 --guess checkpoint   # restart
  hartree run water.xyz -b cc-pvtz --method mp2 --frozen-core --json water-mp2.json
  hartree run taxol.xyz -b 6-31g** --device gpu --gpus 0,1
  hartree run oh.xyz -b 6-31g* -m mp2 --multiplicity 2 --aux 6-31g**-rifit   # UHF-MP2
  hartree run input.json --json out.json     # a QCSchema AtomicInput (its driver, model, keywords)"""
)

_DEFAULTS = SCFOptions()


def add_arguments(parser):
    """Add the ``run`` arguments to an argparse parser."""
    parser.add_argument(
        "file", metavar="FILE", help="molecule file (.xyz in Angstrom, QCSchema .json) or QCSchema AtomicInput .json"
    )
    model = parser.add_argument_group("model")
    model.add_argument(
        "-b",
        "--basis",
        default=None,
        metavar="NAME",
        help="basis set: a basis-set-exchange name (cc-pvdz, 6-31g*, def2-svp, ...) "
        "or a path to an NWChem/Gaussian94 basis file; required unless FILE is an AtomicInput "
        "that names one (model.basis)",
    )
    model.add_argument(
        "-m",
        "--method",
        default="rhf",
        type=str.lower,
        action=Given,
        metavar="METHOD",
        help="rhf, uhf, rohf (Hartree-Fock: restricted closed-shell, unrestricted, restricted "
        "open-shell); mp2: RI-MP2 on an RHF/UHF reference; or a DFT functional (b3lyp, pbe, "
        "svwn, pbe0, tpss, scan, r2scan, m06-2x, ... or a libxc name): RKS or UKS (default: rhf)",
    )
    model.add_argument(
        "-c", "--charge", type=integer, default=None, metavar="Q", help="total charge (default: from the file, else 0)"
    )
    model.add_argument(
        "-s",
        "--multiplicity",
        type=positive_int,
        default=None,
        metavar="M",
        help="spin multiplicity 2S+1 (default: from the file, else 1 or 2)",
    )
    model.add_argument(
        "--cartesian", action=GivenFlag, help="use cartesian (6d, 10f, ...) instead of spherical basis functions"
    )
    add_dft_arguments(model)
    model.add_argument(
        "--gradient",
        action="store_true",
        help="also compute the analytic nuclear gradient (Eh/bohr; Hartree-Fock and DFT functionals); the SCF "
        "then converges "
        f"to at least {GRADIENT_SCF_DEFAULTS['conv_tol']:g} Eh and a commutator norm of "
        f"{GRADIENT_SCF_DEFAULTS['conv_tol_grad']:g}, and --json writes a driver 'gradient' document",
    )
    scf = parser.add_argument_group("SCF")
    scf.add_argument(
        "--conv-tol",
        type=positive_float,
        default=_DEFAULTS.conv_tol,
        action=Given,
        metavar="X",
        help="energy convergence threshold in Eh (the orbital gradient must also "
        f"fall below {_DEFAULTS.conv_tol_grad:g})",
    )
    scf.add_argument(
        "--max-cycle",
        type=positive_int,
        default=_DEFAULTS.max_cycle,
        action=Given,
        metavar="N",
        help="maximum number of SCF cycles",
    )
    scf.add_argument(
        "--level-shift",
        type=non_negative_float,
        default=_DEFAULTS.level_shift,
        action=Given,
        metavar="EH",
        help="shift of the virtual orbital energies in Eh (e.g. 0.3) to steady a difficult SCF",
    )
    scf.add_argument(
        "--guess",
        choices=("sad", "core", "checkpoint"),
        default=_DEFAULTS.guess,
        action=Given,
        help="initial guess: superposition of atomic densities, core Hamiltonian, "
        "or the orbitals in --checkpoint (also those of another job with the "
        "same atoms and basis: the file is then read, and left unchanged "
        "unless --overwrite)",
    )
    scf.add_argument(
        "--guess-from",
        metavar="FILE",
        default=None,
        help="start from the orbitals in the checkpoint of another job with the "
        "same atoms and basis (other geometry, charge, spin or method); "
        "the file is only read",
    )
    scf.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="HDF5 checkpoint written every cycle; a run resumes from its own "
        "checkpoint, and replaces another job's only with --overwrite",
    )
    scf.add_argument(
        "--allow-unconverged",
        action="store_true",
        help="report (and write files for) an SCF that did not converge, with exit "
        "code 0 and a NOT CONVERGED banner, instead of failing with exit code 3",
    )
    scf.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        type=str.lower,
        action=Given,
        help="where the SCF runs: a CUDA GPU (through cupy), the CPU, or auto (the "
        "GPU when one is usable, else the CPU); the report names the device",
    )
    scf.add_argument(
        "--gpus",
        metavar="LIST",
        default=None,
        help="GPUs to use on a GPU run: 'all' or device numbers such as 0,1; the "
        "J/K work is shared between them (default: every visible device, "
        "or one below 500 basis functions, where a second GPU costs more "
        "than it saves)",
    )
    corr = parser.add_argument_group("correlation (with --method mp2)")
    corr.add_argument(
        "--reference",
        choices=("rhf", "uhf"),
        default=None,
        type=str.lower,
        help="SCF reference for MP2 (default: rhf for singlets, uhf otherwise)",
    )
    corr.add_argument(
        "--aux",
        metavar="NAME",
        default=None,
        help="auxiliary (RI-MP2 fitting) basis: a basis-set-exchange name such as "
        "cc-pvdz-rifit or a basis file (default: the RIFIT set matching "
        "--basis, e.g. cc-pvtz -> cc-pvtz-rifit)",
    )
    corr.add_argument(
        "--frozen-core",
        action="store_true",
        help="leave the core orbitals (the previous noble-gas shell of each atom) out of the correlation treatment",
    )
    corr.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp64",
        type=str.lower,
        help="arithmetic of the RI-MP2 matrix multiplications (fp64: double precision throughout; the "
        "others trade accuracy for speed; mixed stays within ~0.1 kcal/mol); with --density-fitting and "
        "no --method mp2, fp64 or mixed: the fitted K of the early SCF cycles in a mixed precision whose "
        "bound on each build's exchange-energy error is 1e-6 Eh (else FP64), the last cycles in FP64; "
        "the report names the schemes that ran and the bounds",
    )
    out = parser.add_argument_group("output files")
    out.add_argument(
        "--json", metavar="OUT", default=None, help="write the result as a QCSchema AtomicResult JSON document"
    )
    out.add_argument(
        "--molden",
        metavar="OUT",
        default=None,
        help="write geometry, basis and orbitals as a Molden file (Jmol, VMD, Molden)",
    )
    out.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing --json/--molden files and another job's "
        "--checkpoint (otherwise an error, raised before the SCF starts)",
    )
