"""The exchange-correlation part of a Kohn-Sham SCF (RKS, UKS; Kohn & Sham 1965).

The kernel runs RKS on the RHF layout and UKS on the UHF one (:mod:`hartree.scf.fock`),
with the exact exchange scaled by the functional's fraction c_x and, from this module,

    F += V_xc,   E += E_xc

evaluated by :func:`hartree.dft.xc_energy_potential` on one molecular grid built when the
SCF starts.  The AO values (and gradients) on that grid do not change between cycles: the
first evaluation keeps them (:class:`hartree.dft.ao_cache.AOCache`, within its memory
budget) and every later one reuses them.

Exact exchange (:func:`exchange_terms`): a global hybrid's c_x K, and a range-separated
hybrid's alpha K + beta K_sr(ω) = (alpha + beta) K - beta K_lr(ω) (libxc's CAM parameters,
:mod:`hartree.dft.functionals`; K_lr with the erf(ω r12)/r12 operator, built by
``engine.jk(omega=ω)``; Yanai, Tew & Handy, Chem. Phys. Lett. 393, 51 (2004)).  The SCF
kernel builds the sum, incrementally like J.  Both engines build erf-attenuated J/K and their
gradients: the CPU engine's numba kernels and the GPU engine's generated CUDA kernels
(:mod:`hartree.gpu.codegen`, the same erf rule of :mod:`hartree.integrals.rys_program`).

Device: the XC integration runs where the SCF's arrays live (:mod:`hartree.dft.xc_integrate`,
one algorithm with per-device kernels).  With numpy densities (the CPU engine) it is numba
and PySCF's libxc (:class:`hartree.dft.xc_kernels.CPUKernels`); with cupy densities (a GPU
engine) the grid, the AO values within the GPU memory budget, ρ, libxc (built for CUDA) and
V_xc stay on the device (:class:`hartree.dft.xc_gpu.GPUKernels`): per cycle only E_xc and the
electron count come to the host.  Without a GPU build of libxc the densities go to the host
for PySCF's libxc and the potentials back, and :meth:`KohnSham.note` says so; past the
memory budget the AO values of the remaining blocks are recomputed in every cycle, never an
out-of-memory crash (:class:`hartree.dft.ao_cache.AOCache`).

VV10 (b97m-v, libxc's vv10, ...): the non-local correlation E_nlc of the total density and
its potential V_nlc (:class:`hartree.dft.vv10.NonLocal`) are added to E_xc and to every
spin's V_xc, on a second, coarser grid (level ``nlc_grid_level``, default
:data:`hartree.dft.vv10.NLC_GRID_LEVEL` = 1) with its own AO cache on the same device;
:attr:`KohnSham.terms` keeps the semilocal E_xc and E_nlc apart for the energy components
('xc' and 'vv10').
"""

from __future__ import annotations

import numpy as np

from ..arrays import array_module, to_numpy


def checked_functional(xc):
    """The :class:`hartree.dft.Functional` of the name ``xc``, or InputError (one line) when
    it is not parsable (:func:`hartree.dft.parse_functional`)."""
    from ..dft import parse_functional

    return parse_functional(xc)


def exchange_terms(functional):
    """The exact exchange of ``functional`` (a :class:`hartree.dft.Functional`) as a tuple of
    (omega, factor): the SCF's exchange matrix is sum factor K(omega), in Hartree-Fock's
    units (:mod:`hartree.scf.fock` with c_x = 1), K(0) of 1/r12 and K(omega) of
    erf(omega r12)/r12 (omega in bohr^-1).  Global hybrid: ((0, c_x),); range separated:
    alpha K + beta K_sr = (alpha + beta) K - beta K_lr (CAM-B3LYP: 0.19 K + 0.46 K_lr(0.33)),
    terms with a zero factor left out (LC-ωPBE: K_lr only); pure functional: ()."""
    f = functional
    if not f.is_range_separated:
        return ((0.0, float(f.hf_exchange)),) if f.hf_exchange != 0.0 else ()
    terms = ((0.0, float(f.alpha + f.beta)), (float(f.omega), float(-f.beta)))
    return tuple((w, c) for w, c in terms if c != 0.0)


def _reference(text):
    """libxc's reference text on one line: 'A. Author.,  J. Chem. Phys. 1, 2 (3)' (libxc's
    '.,' and two spaces between authors and journal) becomes 'A. Author, J. Chem. Phys. 1, 2 (3)'."""
    return " ".join(str(text).replace(".,  ", ", ").split())


class KohnSham:
    """E_xc and V_xc of the SCF densities on one grid.

    molecule, basis: the SCF's; xc: a functional name; grid_level: 1..9
    (:func:`hartree.dft.make_grid`); kernels: the :class:`hartree.dft.xc_integrate.XCKernels`
    to integrate with (None: chosen at the first call from the density's array module, CPU
    for numpy, :class:`hartree.dft.xc_gpu.GPUKernels` on the current GPU for cupy).  Call with
    ``dm`` (nset, nao, nao) in the kernel's layout (RKS: the total density, nset 1; UKS:
    alpha and beta) in any array module; returns (E_xc in Eh, V_xc (nset, nao, nao) in the
    same array module), E_xc including VV10's E_nlc.  ``nelec`` holds the electron count the
    grid integrated for the last density (float, UKS: the sum); ``terms`` the last energy's
    parts, {'xc': semilocal E_xc} plus 'vv10': E_nlc for a VV10 functional (Eh).
    nlc_grid_level: the VV10 grid's level (module docstring).
    """

    def __init__(self, molecule, basis, xc, grid_level=3, kernels=None, nlc_grid_level=None):
        from ..dft import make_grid
        from ..dft.vv10 import NLC_GRID_LEVEL

        self.functional = checked_functional(xc)
        self.name = xc
        self.hf_exchange = float(self.functional.hf_exchange)
        #: the exchange as ((omega, factor), ...), :func:`exchange_terms`
        self.exchange = exchange_terms(self.functional)
        self.basis = basis
        self.grid = make_grid(molecule, level=grid_level)
        self.grid_level = grid_level
        self.nelec = float("nan")
        self._kernels = kernels
        self._ao_cache = None  # the AO values on the grid, kept from the first evaluation on
        self.terms = {}
        self.nlc_grid = self._nlc = self.nlc_grid_level = None
        self.nlc_nelec = float("nan")
        if self.functional.vv10 is not None:
            self.nlc_grid_level = NLC_GRID_LEVEL if nlc_grid_level is None else int(nlc_grid_level)
            self.nlc_grid = make_grid(molecule, level=self.nlc_grid_level)

    @staticmethod
    def _kernels_for(xp, nset):
        """The XC kernels of arrays of module xp: the GPU's for cupy, else the CPU's."""
        if xp is not np:
            from ..device.backend import CudaBackend
            from ..dft.xc_gpu import GPUKernels

            return GPUKernels(CudaBackend(), nset=nset)
        from ..dft.xc_kernels import CPUKernels

        return CPUKernels()

    def __call__(self, dm):
        from ..dft.numint import make_xc_cache, xc_energy_potential

        xp = array_module(dm)
        restricted = dm.shape[0] == 1
        if self._ao_cache is None:
            kernels = self._kernels or self._kernels_for(xp, dm.shape[0])
            self._ao_cache = make_xc_cache(self.basis, self.grid, self.functional, kernels=kernels)
        kxp = self._ao_cache.kernels.xp
        here = dm if kxp is xp else kxp.asarray(to_numpy(dm))
        exc, vxc, nelec = xc_energy_potential(
            self.basis, self.grid, here[0] if restricted else here, self.functional, cache=self._ao_cache
        )
        self.nelec = float(nelec) if restricted else float(nelec[0] + nelec[1])
        vxc = vxc[None] if restricted else vxc
        self.terms = {"xc": float(exc)}
        if self.nlc_grid is not None:  # VV10 of the total density, in every spin's potential
            if self._nlc is None:
                from ..dft.vv10 import NonLocal

                self._nlc = NonLocal(self.basis, self.nlc_grid, self.functional, kernels=self._ao_cache.kernels)
            enlc, vnlc, self.nlc_nelec = self._nlc(here[0] if restricted else here[0] + here[1])
            self.terms["vv10"] = enlc
            vxc = vxc + vnlc
        exc = sum(self.terms.values())
        return float(exc), (vxc if kxp is xp else xp.asarray(to_numpy(vxc)))

    def device_summary(self):
        """Where the XC integration ran: {device ('cpu', 'cuda', 'emulated'), libxc (the
        library that evaluated the functional), blocks, cached_blocks, cached_bytes}, or None
        before the first evaluation."""
        cache = self._ao_cache
        if cache is None:
            return None
        return {
            "device": cache.kernels.name,
            "libxc": cache.kernels.libxc_description(),
            "blocks": int(cache.nblock),
            "cached_blocks": int(cache.ncached),
            "cached_bytes": int(cache.cached_bytes),
        }

    def summary(self):
        """The record of SCFResult.dft (plain JSON types): the functional as given, its libxc
        description (``xc_code``), family, exact-exchange fraction, components (libxc name and
        id, factor, libxc's references), the libxc version and reference, the grid level, its
        number of points, the electron count it integrated for the density of the last
        energy and where the integration ran (:meth:`device_summary`)."""
        from ..dft.functionals import libxc

        module = libxc()
        f = self.functional
        components = [
            {
                "name": c.name,
                "libxc_id": int(c.id),
                "factor": float(c.factor),
                "references": [_reference(r) for r in module.xc_reference(int(c.id))],
            }
            for c in f.components
        ]
        return {
            "xc": self.name,
            "xc_code": f.xc_code,
            "family": f.family,
            "hf_exchange": self.hf_exchange,
            "components": components,
            "libxc": {"version": str(module.__version__), "reference": _reference(module.__reference__)},
            "grid_level": int(self.grid_level),
            "grid_points": int(len(self.grid.weights)),
            "electrons_integrated": float(self.nelec),
            "xc_integration": self.device_summary(),
            **({} if self.nlc_grid is None else {"vv10": self.vv10_summary()}),
        }

    def vv10_summary(self):
        """VV10's part of :meth:`summary`: b, C, the NLC grid's level and points, the
        electron count it integrated, the last E_nlc (Eh); None without VV10."""
        if self.nlc_grid is None:
            return None
        b, c = self.functional.vv10
        return {
            "b": float(b),
            "C": float(c),
            "grid_level": int(self.nlc_grid_level),
            "grid_points": int(len(self.nlc_grid.weights)),
            "electrons_integrated": float(self.nlc_nelec),
            "energy": float(self.terms.get("vv10", float("nan"))),
        }

    def note(self):
        """One line for SCFResult.notes: functional, grid, integrated electrons and, when
        the XC integration ran on a GPU, where the functional was evaluated, with the
        device's own notes (a host libxc fallback, a memory budget cut)."""
        line = (
            f"Kohn-Sham {self.name} ({self.functional.family}, exact exchange {self.hf_exchange:g}); "
            f"grid level {self.grid_level}, {len(self.grid.weights)} points, "
            f"{self.nelec:.8f} electrons integrated"
        )
        if self.nlc_grid is not None:
            line += f"; VV10 on grid level {self.nlc_grid_level} ({len(self.nlc_grid.weights)} points)"
        cache = self._ao_cache
        if cache is None or cache.kernels.name == "cpu":
            return line
        info = self.device_summary()
        extra = [
            f"XC integration on the {info['device']} device, AO values of {info['cached_blocks']} of "
            f"{info['blocks']} blocks kept ({info['cached_bytes'] / 2**20:.0f} MiB), libxc: {info['libxc']}"
        ]
        extra += [n for n in (*cache.kernels.notes, *cache.notes) if n not in extra]
        return "; ".join([line, *extra])
