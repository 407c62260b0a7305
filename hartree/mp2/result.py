"""The RI-MP2 result object: results only (energies in hartree), no intermediates."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Grimme's spin-component scaling (J. Chem. Phys. 118, 9095 (2003)).
SCS_OS = 6.0 / 5.0
SCS_SS = 1.0 / 3.0


@dataclass(frozen=True)
class MP2Result:
    """Outcome of one RI-MP2 calculation.

    reference          'rhf' | 'uhf'
    scf_energy         reference energy, Eh
    correlation_energy E_OS + E_SS, Eh
    opposite_spin      E_OS, Eh (alpha-beta pairs)
    same_spin          E_SS, Eh (alpha-alpha + beta-beta pairs)
    total_energy       scf_energy + correlation_energy
    scs_correlation_energy  6/5 E_OS + 1/3 E_SS (SCS-MP2, Grimme 2003)
    scs_total_energy   scf_energy + scs_correlation_energy
    frozen_core        number of frozen (doubly occupied / per spin) core orbitals
    nocc, nvir         active occupied and virtual orbitals (UHF: (alpha, beta) tuples)
    aux_basis, naux    auxiliary basis name and size
    precision          mgemm scheme used for the GEMMs ('fp64', 'mixed', ...)
    device             where the work ran; wall_time seconds; timings: dict of stage seconds
    gemm               list of dicts summarising the GEMM calls per step and scheme
    notes              lines on what was decided at run time (e.g. the "mixed" calibration)
    calibration        GPU "mixed": per pair sum, the slice-count calibration record (block
                       shape, FP64 block sums, tried slice counts with errors, chosen S)
    """

    reference: str
    scf_energy: float
    correlation_energy: float
    opposite_spin: float
    same_spin: float
    frozen_core: int
    nocc: object
    nvir: object
    aux_basis: str
    naux: int
    precision: str
    device: str
    wall_time: float
    timings: dict = field(default_factory=dict)
    gemm: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    calibration: list = field(default_factory=list)

    @property
    def total_energy(self):
        return self.scf_energy + self.correlation_energy

    @property
    def scs_correlation_energy(self):
        return SCS_OS * self.opposite_spin + SCS_SS * self.same_spin

    @property
    def scs_total_energy(self):
        return self.scf_energy + self.scs_correlation_energy

    def properties(self):
        """Flat dict of the energies (Eh) for reports and JSON, singles zero for RHF/UHF
        references.  The mp2_* names are QCSchema v1 AtomicResultProperties fields; the
        scs_mp2_* ones are not, and :func:`hartree.io.qcschema.result_to_qcschema` writes
        them to ``extras.hartree.properties`` under the same names."""
        return {
            "mp2_singles_energy": 0.0,
            "mp2_doubles_energy": self.correlation_energy,
            "mp2_correlation_energy": self.correlation_energy,
            "mp2_total_energy": self.total_energy,
            "mp2_opposite_spin_correlation_energy": self.opposite_spin,
            "mp2_same_spin_correlation_energy": self.same_spin,
            "scs_mp2_correlation_energy": self.scs_correlation_energy,
            "scs_mp2_total_energy": self.scs_total_energy,
        }
