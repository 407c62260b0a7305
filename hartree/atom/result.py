"""Result of an atomic SCF: numbers only, no intermediates."""

from dataclasses import dataclass, field


@dataclass
class AtomResult:
    """Converged (or last) state of an atomic (Dirac-)Hartree-Fock calculation.

    energy: total electronic energy (Eh; relativistic energies exclude the rest mass).
    components: one_electron, kinetic, nuclear_attraction, coulomb, exchange (Eh).
    blocks: labels per symmetry block (s, p, ... or s1/2, p1/2, p3/2, ...).
    orbital_energies: per block, the occupied (and virtual) positive-energy eigenvalues (Eh).
    occupations: per block, electrons per occupied radial orbital (list of floats).
    exponents: per l, the exponents used (bohr^-2).  history: per-iteration dicts.
    coefficients: per block, (dim, n_occupied) coefficients of the occupied orbitals (closed
    shells, then the open one) over the normalized large functions, then (Dirac-Fock) the
    kinetically balanced small functions (d/dr + κ/r)P_i / (2c).
    device: where the two-electron part ran ('cpu' or the GPU's name).  timings: seconds
    for 'integrals' (two-electron matrices; on a GPU also 'kernels', the launches alone),
    the mean 'fock_per_iteration' (J and K of one density, the thesis' P/Q supermatrix
    formation) over 'fock_builds' builds, and 'scf_loop' (guess to convergence).
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
    device: str = "cpu"
    timings: dict = field(default_factory=dict)

    def to_dict(self):
        """JSON-ready dict (``energy`` is the total energy in Eh)."""
        return {
            "element": self.element, "z": self.z, "relativistic": self.relativistic,
            "light_speed": self.light_speed if self.relativistic else None,
            "nucleus": self.nucleus, "converged": self.converged, "energy": self.energy,
            "components": dict(self.components),
            "orbitals": [{"symmetry": b, "energies": [float(e) for e in es], "occupations": list(o)}
                         for b, es, o in zip(self.blocks, self.orbital_energies, self.occupations)],
            "exponents": [[float(x) for x in e] for e in self.exponents],
            "iterations": self.iterations, "wall_time": self.wall_time,
            "device": self.device, "timings": dict(self.timings),
            "history": self.history,
        }
