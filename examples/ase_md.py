"""Molecular dynamics on hartree's Hartree-Fock surface through ASE.

Optimize a molecule with ASE's BFGS on hartree's RHF energies and analytic forces
(``hartree.ase.Hartree``), give the atoms Maxwell-Boltzmann velocities, run a few steps of
velocity-Verlet dynamics and show how well the total energy is conserved:

    python examples/ase_md.py                                # water, RHF/sto-3g, 5 steps of 0.5 fs
    python examples/ase_md.py --basis 6-31g --steps 40 --temperature 500
    python examples/ase_md.py --method uhf --charge 1 --multiplicity 2  # the water cation

Units are ASE's: energies eV, lengths Angstrom, forces eV/Angstrom, time fs on the printed
lines.  Every SCF after the first starts from the previous orbitals (the calculator does this
when only the positions moved).  Velocity Verlet conserves the total energy up to an error
that shrinks as the square of the time step, plus what the SCF tolerance leaves in the
forces; the last line gives the drift E_tot(last step) - E_tot(0) and the largest deviation.

``main(argv)`` returns the records it printed (``Run``), for tests and notebooks.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib

import numpy as np
from ase import units
from ase.io import read
from ase.md.velocitydistribution import Stationary, ZeroRotation
from ase.md.verlet import VelocityVerlet
from ase.optimize import BFGS

from hartree.ase import Hartree

try:  # ASE 3.29 renamed MaxwellBoltzmannDistribution
    from ase.md.velocitydistribution import thermalize_momenta as thermalize
except ImportError:  # ASE < 3.29
    from ase.md.velocitydistribution import MaxwellBoltzmannDistribution as thermalize

WATER = pathlib.Path(__file__).resolve().parent / "water.xyz"


@dataclasses.dataclass
class OptStep:
    """One geometry of the BFGS optimization: positions (natm, 3) Angstrom, energy eV, fmax
    (the largest atomic force norm) eV/Angstrom."""

    step: int
    positions: np.ndarray
    energy: float
    fmax: float


@dataclasses.dataclass
class MDFrame:
    """One step of the dynamics: time fs, positions (natm, 3) Angstrom, velocities (natm, 3)
    Angstrom per ASE time unit, potential and kinetic energy eV."""

    step: int
    time_fs: float
    positions: np.ndarray
    velocities: np.ndarray
    epot: float
    ekin: float

    @property
    def etot(self) -> float:
        """Total energy (eV)."""
        return self.epot + self.ekin


@dataclasses.dataclass
class Run:
    """What ``main`` printed: the optimization, the dynamics and the atomic masses (u)."""

    optimization: list[OptStep]
    optimized: bool
    frames: list[MDFrame]
    masses: np.ndarray

    @property
    def drift(self) -> float:
        """E_tot(last frame) - E_tot(first frame), eV."""
        return self.frames[-1].etot - self.frames[0].etot

    @property
    def max_deviation(self) -> float:
        """Largest |E_tot(frame) - E_tot(first frame)|, eV."""
        return max(abs(f.etot - self.frames[0].etot) for f in self.frames)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--xyz", default=str(WATER), help="molecule (XYZ, Angstrom; default: examples/water.xyz)")
    p.add_argument("--basis", default="sto-3g", help="basis set (default: sto-3g)")
    p.add_argument("--method", default="rhf", choices=["rhf", "uhf", "rohf"], help="SCF method (default: rhf)")
    p.add_argument("--charge", type=int, default=0, help="total charge (default: 0)")
    p.add_argument("--multiplicity", type=int, default=None, help="2S+1 (default: the lowest)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"], help="where hartree runs")
    p.add_argument("--fmax", type=float, default=0.05, help="BFGS threshold, eV/Angstrom (default: 0.05)")
    p.add_argument("--opt-steps", type=int, default=50, help="most BFGS steps (default: 50; 0: no optimization)")
    p.add_argument("--steps", type=int, default=5, help="velocity-Verlet steps (default: 5)")
    p.add_argument("--timestep", type=float, default=0.5, help="time step, fs (default: 0.5)")
    p.add_argument("--temperature", type=float, default=300.0, help="initial temperature, K (default: 300)")
    p.add_argument("--seed", type=int, default=7, help="seed of the initial velocities (default: 7)")
    return p.parse_args(argv)


def optimize(atoms, fmax: float, steps: int) -> tuple[list[OptStep], bool]:
    """BFGS on ``atoms`` (calculator attached); one line per geometry."""
    records: list[OptStep] = []
    print(f"BFGS to fmax {fmax} eV/Angstrom")
    print(f"{'step':>5} {'energy / eV':>18} {'fmax / (eV/A)':>14}")

    def observe():
        energy = atoms.get_potential_energy()
        fm = float(np.linalg.norm(atoms.get_forces(), axis=1).max())
        records.append(OptStep(len(records), atoms.get_positions().copy(), energy, fm))
        print(f"{records[-1].step:5d} {energy:18.8f} {fm:14.6f}")

    opt = BFGS(atoms, logfile=None)
    opt.attach(observe, interval=1)
    converged = bool(opt.run(fmax=fmax, steps=steps))
    print("converged" if converged else f"NOT converged in {steps} steps (the dynamics starts from the last geometry)")
    return records, converged


def dynamics(atoms, steps: int, timestep_fs: float, temperature: float, seed: int) -> list[MDFrame]:
    """Velocity Verlet from Maxwell-Boltzmann velocities (no net momentum or rotation)."""
    thermalize(atoms, temperature_K=temperature, rng=np.random.default_rng(seed))
    Stationary(atoms)
    ZeroRotation(atoms)
    frames: list[MDFrame] = []
    print(f"\nvelocity Verlet: {steps} steps of {timestep_fs} fs from {temperature} K (seed {seed})")
    print(f"{'step':>5} {'t / fs':>7} {'Epot / eV':>18} {'Ekin / eV':>11} {'Etot / eV':>18} {'Etot-Etot(0) / eV':>18}")

    def observe():
        frame = MDFrame(
            step=len(frames),
            time_fs=len(frames) * timestep_fs,
            positions=atoms.get_positions().copy(),
            velocities=atoms.get_velocities().copy(),
            epot=atoms.get_potential_energy(),
            ekin=atoms.get_kinetic_energy(),
        )
        frames.append(frame)
        change = frame.etot - frames[0].etot
        energies = f"{frame.epot:18.8f} {frame.ekin:11.8f} {frame.etot:18.8f} {change:18.2e}"
        print(f"{frame.step:5d} {frame.time_fs:7.2f} {energies}")

    md = VelocityVerlet(atoms, timestep=timestep_fs * units.fs, logfile=None)
    md.attach(observe, interval=1)
    md.run(steps)
    return frames


def main(argv=None) -> Run:
    args = parse_args(argv)
    atoms = read(args.xyz)
    atoms.calc = Hartree(
        basis=args.basis, method=args.method, charge=args.charge, multiplicity=args.multiplicity, device=args.device
    )
    name = pathlib.Path(args.xyz).name
    print(f"{atoms.get_chemical_formula()} from {name}: {args.method.upper()}/{args.basis}, {len(atoms)} atoms")
    records, converged = optimize(atoms, args.fmax, args.opt_steps) if args.opt_steps > 0 else ([], True)
    frames = dynamics(atoms, args.steps, args.timestep, args.temperature, args.seed)
    run = Run(records, converged, frames, atoms.get_masses().copy())
    print(
        f"\ntotal energy drift over {frames[-1].time_fs:g} fs: {run.drift:+.2e} eV "
        f"(largest deviation {run.max_deviation:.2e} eV; kinetic energy at the start {frames[0].ekin:.2e} eV)"
    )
    return run


if __name__ == "__main__":
    main()
