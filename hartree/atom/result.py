"""Result of an atomic SCF: numbers only, no intermediates."""

from dataclasses import dataclass, field

from .angular import Block


def _exponent_entry(e, l, relativistic):
    """JSON form of exponents[l]: a list, or {label: list} for separate κ exponents."""
    if isinstance(e, tuple):
        return {Block(l, l).label: [float(x) for x in e[0]], Block(l, -l - 1).label: [float(x) for x in e[1]]}
    return [float(x) for x in e]


@dataclass
class AtomResult:
    """Converged (or last) state of an atomic (Dirac-)Hartree-Fock calculation.

    energy: total electronic energy (Eh; relativistic energies exclude the rest mass).
    components: one_electron, kinetic, nuclear_attraction, coulomb, exchange (Eh).
    blocks: labels per symmetry block (s, p, ... or s1/2, p1/2, p3/2, ...).
    orbital_energies: per block, the occupied (and virtual) positive-energy eigenvalues (Eh).
    occupations: per block, electrons per occupied radial orbital (list of floats).
    exponents: per l, the exponents used (bohr^-2; an array, or a pair of arrays (j = l-1/2,
    j = l+1/2) where the κ symmetries of l have their own); block_exponents: the same per
    symmetry block (one array per entry of ``blocks``).  history: per-iteration dicts.
    coefficients: per block, (dim, n_occupied) coefficients of the occupied orbitals (closed
    shells, then the open one) over the normalized large functions, then (Dirac-Fock) the
    kinetically balanced small functions (d/dr + κ/r)P_i / (2c).
    device: where the two-electron part ran ('cpu' or the GPU's name).  timings: seconds
    for 'integrals' (two-electron matrices; on a GPU also 'kernels', the launches alone),
    the mean 'fock_per_iteration' (J and K of one density, the thesis' P/Q supermatrix
    formation) over 'fock_builds' builds, and 'scf_loop' (guess to convergence).
    configuration_energies: with several configurations (one set of orbitals, extended
    average level), the energy of each configuration with these orbitals (Eh); ``energy`` is
    their weighted average.
    """

    element: str
    z: int
    relativistic: bool
    light_speed: float
    nucleus: str
    converged: bool
    energy: float
    components: dict
    blocks: list
    orbital_energies: list
    occupations: list
    exponents: list
    iterations: int
    history: list = field(default_factory=list)
    wall_time: float = 0.0
    coefficients: list = field(default_factory=list)
    block_exponents: list = field(default_factory=list)
    device: str = "cpu"
    timings: dict = field(default_factory=dict)
    configuration_energies: list = field(default_factory=list)

    def to_dict(self):
        """JSON-ready dict (``energy`` is the total energy in Eh)."""
        return {
            "element": self.element,
            "z": self.z,
            "relativistic": self.relativistic,
            "light_speed": self.light_speed if self.relativistic else None,
            "nucleus": self.nucleus,
            "converged": self.converged,
            "energy": self.energy,
            "components": dict(self.components),
            "orbitals": [
                {"symmetry": b, "energies": [float(e) for e in es], "occupations": list(o)}
                for b, es, o in zip(self.blocks, self.orbital_energies, self.occupations)
            ],
            "exponents": [_exponent_entry(e, l, self.relativistic) for l, e in enumerate(self.exponents)],
            "basis": [
                {"symmetry": b, "exponents": [float(x) for x in e]} for b, e in zip(self.blocks, self.block_exponents)
            ],
            "iterations": self.iterations,
            "wall_time": self.wall_time,
            "device": self.device,
            "timings": dict(self.timings),
            "history": self.history,
            **({"configuration_energies": list(self.configuration_energies)} if self.configuration_energies else {}),
        }
