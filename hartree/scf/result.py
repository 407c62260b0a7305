"""The SCF result object: results only, no intermediates, no methods that compute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class SCFResult:
    """Outcome of one SCF run (all quantities in atomic units).

    method            'rhf' | 'uhf' | 'rohf' | 'rks' | 'uks'
    converged         bool; False results are never presented as converged
    energy            total energy, Eh, from a full (non-incremental) Fock build, plus the
                      dispersion correction when one was asked for
    energy_components dict of floats (Eh): one_electron, coulomb, exchange (Kohn-Sham:
                      the c_x-scaled exact exchange), xc (Kohn-Sham only: E_xc),
                      nuclear_repulsion, dispersion (only with a correction), total
    mo_energy         RHF/RKS/ROHF (nmo,); UHF/UKS (2, nmo)   Eh (ROHF: effective-Fock
                      eigenvalues); the arrays below follow RHF's layout for RKS, UHF's for UKS
    mo_coeff          RHF/ROHF (nao, nmo); UHF (2, nao, nmo)
    mo_occ            RHF/ROHF (nmo,) in {0,1,2}; UHF (2, nmo) in {0,1}
    iterations        number of SCF cycles (diagonalisations) performed
    history           list of IterationRecord (cycle 0 is the guess build)
    dipole            (3,) a.u. (e bohr) about the origin (0,0,0): nuclear + electronic
    mulliken_charges  (natm,) Mulliken atomic charges, e
    s_squared         <S^2> for UHF and ROHF (ROHF: exactly S(S+1)); None for RHF
    wall_time         seconds
    device            engine description, e.g. "cpu (numba, 2 threads)"
    molecule, basis   the inputs
    density           (nset, nao, nao) density of the final orbitals (RHF: total;
                      UHF/ROHF: alpha, beta) — extra to the architecture table
    notes             tuple of human-readable remarks (guess used, restart, dropped
                      linear dependencies, fallback events) — extra to the table
    timings           dict, wall seconds per stage (hartree.scf.kernel.STAGES: one_electron,
                      guess, grid, jk, xc, other, analysis; the device synchronised at each stage
                      boundary) and the number of full/incremental J/K builds
                      (full_builds, incremental_builds; early_screening_builds and
                      mixed_precision_builds: those with a loose threshold, those asked
                      for in mixed precision) — extra to the table
    xc                the functional of a Kohn-Sham run (as given), None for Hartree-Fock
    dft               Kohn-Sham only, else None: dict with xc, grid_level, grid_points and
                      electrons_integrated (the grid's electron count for the final SCF
                      density; float) — :meth:`hartree.scf.ks.KohnSham.summary`
    density_fitting   None (exact J/K), or what was fitted (:meth:`hartree.df.engine.FittedEngine.summary`):
                      aux_basis, naux, exact_k, storage ('stored' | 'split' | 'host' |
                      'direct': hartree.df.storage), tensor_bytes, device_bytes, host_bytes,
                      pairs_kept, pairs_total (the orbital pairs B keeps: hartree.df.pairs),
                      precision (None, or the mixed-precision K builds: hartree.df.mixed_k)
                      range_separated (per attenuated operator fitted: omega, metric_rank,
                      storage, sizes; hartree.df.range_separated)
    dispersion        None, or the correction added after the SCF (plain JSON types: model,
                      label, functional, parameters, package, version, three_body, energy
                      in Eh) — :func:`hartree.dft.dispersion.dispersion_record`
    """

    method: str
    converged: bool
    energy: float
    energy_components: dict
    mo_energy: Any
    mo_coeff: Any
    mo_occ: Any
    iterations: int
    history: list
    dipole: Any
    mulliken_charges: Any
    s_squared: float | None
    wall_time: float
    device: str
    molecule: Any
    basis: Any
    density: Any = None
    notes: tuple = field(default=())
    timings: dict = field(default_factory=dict)
    xc: str | None = None
    dft: dict | None = None
    dispersion: dict | None = None
    density_fitting: dict | None = None

    def homo_lumo(self):
        """(HOMO, LUMO) orbital energies in Eh; UHF takes the highest/lowest over both
        spins; LUMO is None when every orbital is occupied."""
        e = np.asarray(self.mo_energy).ravel()
        occ = np.asarray(self.mo_occ).ravel()
        homo = float(e[occ > 0].max()) if np.any(occ > 0) else None
        lumo = float(e[occ == 0].min()) if np.any(occ == 0) else None
        return homo, lumo
