"""Compiling ahead of time what a run needs: ``hartree cache warm`` (and the Python API).

The first CPU run of an installation compiles numba's kernels; the first GPU run of a basis
compiles the CUDA kernels of its angular-momentum classes (NVRTC) and cupy's own kernels.
:func:`warm` does that work before any real job, by running a tiny real calculation in
process, part by part, each timed:

* the **warm-up job**: water (experimental geometry), RHF, with the STO-3G basis and, on
  every atom, one uncontracted shell of each angular momentum STO-3G lacks up to ``lmax``
  (exponent :data:`EXTRA_EXPONENT`): :func:`warm_basis`.  Its shell pairs hold every class
  (l_a, l_b) with l_a >= l_b <= lmax, so its shell quartets hold every class up to
  (lmax lmax|lmax lmax) (:func:`gpu_quartet_classes`);
* **cpu**: the one-electron integrals (S, T, V), the shell pairs and Schwarz factors, one J/K
  build (the generated ERI module and its driver), the SCF (SAD guess, DIIS, Mulliken
  charges, dipole) and, with ``gradient``, the analytic gradient's derivative kernels.  numba
  compiles a function per argument types, not per angular momentum: once compiled, the same
  machine code serves every l, so ``lmax`` only sets the warm-up basis;
* **gpu**: :meth:`hartree.gpu.GPUEngine.prepare` (J/K, Schwarz and one-electron kernels of
  every class of the warm-up basis, written to the ``cuda`` cache), the SCF on the GPU
  (cupy's kernels, cached by cupy) and, with ``gradient``, the gradient kernels.  A later run
  whose basis has classes above ``lmax`` compiles those at its start (and says so).

The compiled code goes where a run would put it (numba's cache, ``$HARTREE_CACHE_DIR``),
so ``warm`` must run with the environment of the later jobs.  Time spent inside numba's
compiler is measured with numba's ``numba:compile`` events (:class:`CompileClock`); a
function loaded from numba's cache raises no such event.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Water at the experimental equilibrium geometry (O-H 0.9572 Angstrom, H-O-H 104.52 deg).
WATER_XYZ = """\
O      0.000000000     0.000000000     0.117300000
H      0.000000000     0.756950327    -0.468582277
H      0.000000000    -0.756950327    -0.468582277"""

#: Exponent (bohr^-2) of the uncontracted shells added to STO-3G up to lmax.
EXTRA_EXPONENT = 0.8

#: Largest --lmax: the largest l of the CPU ERI code (hartree.integrals.eri_kernel.LMAX_ERI).
LMAX_MAX = 6

#: Default --lmax: d functions, as in the README's job (6-31G**) and cc-pVDZ.
LMAX_DEFAULT = 2


@dataclass
class Part:
    """One timed part of a warm-up: what it did, wall seconds, seconds inside numba's
    compiler (top-level compilations only), and a detail for the user (or '')."""

    name: str
    seconds: float
    compile_seconds: float
    detail: str = ""


class CompileClock:
    """Seconds spent compiling with numba while the clock is installed (a context manager).

    Listens to numba's ``numba:compile`` events; a compilation that triggers others (a
    function compiling its callees) counts once, from its start to its end.  ``seconds``:
    total; ``functions``: {qualified name: seconds} of the top-level compilations; ``events``:
    [(name, start, seconds)] with start in ``time.perf_counter()`` seconds.
    """

    def __init__(self):
        self.seconds = 0.0
        self.functions = {}
        self.events = []
        self._depth = 0
        self._start = 0.0
        self._name = ""
        self._listener = None

    def _on_start(self, event):
        self._depth += 1
        if self._depth == 1:
            self._start = time.perf_counter()
            dispatcher = (event.data or {}).get("dispatcher")
            py_func = getattr(dispatcher, "py_func", None)
            self._name = f"{getattr(py_func, '__module__', '?')}.{getattr(py_func, '__qualname__', '?')}"

    def _on_end(self, event):
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0:
            spent = time.perf_counter() - self._start
            self.seconds += spent
            self.functions[self._name] = self.functions.get(self._name, 0.0) + spent
            self.events.append((self._name, self._start, spent))

    def __enter__(self):
        from numba.core import event

        clock = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                clock._on_start(ev)

            def on_end(self, ev):
                clock._on_end(ev)

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc):
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        return False


def warm_molecule():
    """The warm-up molecule: water at its experimental geometry (hartree.Molecule)."""
    from .molecule import Molecule

    return Molecule.from_string(WATER_XYZ)


def warm_basis(molecule, lmax=LMAX_DEFAULT):
    """STO-3G on ``molecule`` plus, on every atom, one uncontracted shell of exponent
    EXTRA_EXPONENT for each l from (the atom's largest STO-3G l) + 1 to ``lmax`` (a Basis,
    spherical, shells grouped by atom)."""
    from .basis import Basis, load_basis, normalized_coefficients

    base = load_basis(molecule, "sto-3g")
    atom, ls, nprim, center, exps, coefs = [], [], [], [], [], []
    for ia in range(molecule.natm):
        shells = np.flatnonzero(base.shell_atom == ia)
        for ish in shells:
            atom.append(ia)
            ls.append(int(base.shell_l[ish]))
            nprim.append(int(base.shell_nprim[ish]))
            center.append(base.shell_center[ish])
            exps.extend(base.shell_exponents(ish))
            coefs.extend(base.shell_coefficients(ish))
        top = int(base.shell_l[shells].max()) if len(shells) else -1
        for l in range(top + 1, lmax + 1):
            atom.append(ia)
            ls.append(l)
            nprim.append(1)
            center.append(molecule.coords[ia])
            exps.append(EXTRA_EXPONENT)
            coefs.extend(normalized_coefficients(l, [EXTRA_EXPONENT], [1.0]))
    return Basis(
        name=f"sto-3g+l<={lmax}",
        pure=True,
        shell_atom=atom,
        shell_l=ls,
        shell_nprim=nprim,
        shell_prim_start=np.concatenate([[0], np.cumsum(nprim)[:-1]]).astype(np.int64),
        shell_center=np.reshape(center, (-1, 3)),
        exponents=exps,
        coefficients=coefs,
        atom_symbols=tuple(molecule.symbols),
    )


def gpu_quartet_classes(basis):
    """The quartet classes (l_a, l_b, l_c, l_d) whose J/K kernels the GPU engine compiles
    for ``basis``: one per pair of its shell-pair classes, bra class >= ket class, in the
    order of :meth:`hartree.gpu.jk_direct.DirectJK.quartet_classes` (host only, no GPU)."""
    from .gpu.pairs import build_pair_classes

    pcs = sorted(build_pair_classes(basis))
    return [pcs[a] + pcs[b] for a in range(len(pcs)) for b in range(a + 1)]


def _timed(name, clock, work, report, detail=""):
    """Run ``work()``; report and return (its value, the Part)."""
    before, t0 = clock.seconds, time.perf_counter()
    value = work()
    part = Part(name, time.perf_counter() - t0, clock.seconds - before, detail(value) if callable(detail) else detail)
    report(part)
    return value, part


def _cpu_parts(molecule, basis, gradient, clock, report):
    from . import scf
    from .gradients import scf_gradient
    from .integrals.engine import CPUEngine

    engine = CPUEngine(molecule, basis)
    parts = []
    _, p = _timed("one-electron integrals (S, T, V)", clock, lambda: (engine.overlap(), engine.hcore()), report)
    parts.append(p)
    _, p = _timed("shell pairs and Schwarz factors", clock, engine.shell_pairs, report)
    parts.append(p)
    dm = np.eye(basis.nao) * 0.1
    _, p = _timed("J/K build (generated ERI kernels)", clock, lambda: engine.jk(dm), report)
    parts.append(p)
    result, p = _timed(
        "SCF: RHF, SAD guess, Mulliken charges, dipole",
        clock,
        lambda: scf.run(molecule, basis, "rhf", engine=engine),
        report,
        lambda r: f"{r.iterations} cycles",
    )
    parts.append(p)
    if gradient:
        _, p = _timed("gradient (derivative integrals)", clock, lambda: scf_gradient(result, engine), report)
        parts.append(p)
    return parts


def _cached_cubins():
    """Number of compiled CUDA modules in the cache (kind ``cuda``)."""
    from . import cache

    try:
        return sum(1 for name in cache.kind_dir("cuda").iterdir() if name.suffix == ".cubin")
    except OSError:
        return 0


def _gpu_parts(molecule, basis, gradient, clock, report):
    from . import scf
    from .gradients import scf_gradient
    from .scf.driver import make_engine, resolve_gpus

    engine = make_engine(molecule, basis, 1e-13, "gpu", resolve_gpus(None, basis.nao))
    classes = gpu_quartet_classes(basis)
    before = _cached_cubins()
    parts = []
    _, p = _timed(
        f"GPU kernels: J/K of {len(classes)} classes, Schwarz, one-electron (NVRTC)",
        clock,
        engine.prepare,
        report,
        lambda _: f"{_cached_cubins() - before} new modules",
    )
    parts.append(p)
    result, p = _timed(
        "SCF on the GPU (cupy's kernels)",
        clock,
        lambda: scf.run(molecule, basis, "rhf", engine=engine),
        report,
        lambda r: f"{r.iterations} cycles",
    )
    parts.append(p)
    if gradient:
        before = _cached_cubins()
        _, p = _timed(
            "gradient kernels (NVRTC)",
            clock,
            lambda: scf_gradient(result, engine),
            report,
            lambda _: f"{_cached_cubins() - before} new modules",
        )
        parts.append(p)
    return parts


def warm(device="cpu", lmax=LMAX_DEFAULT, gradient=False, report: Callable[[Part], None] | None = None):
    """Compile (or load from the caches) what runs on ``device`` ('cpu' or 'gpu', resolved)
    need, up to angular momentum ``lmax`` (module docstring).  ``report(part)`` is called
    after each part.  Returns the list of Parts.  Raises InputError for an lmax outside
    1..LMAX_MAX; ConvergenceError if the warm-up SCF fails to converge (a bug)."""
    from .errors import InputError

    if not 1 <= int(lmax) <= LMAX_MAX:
        raise InputError(f"lmax must lie between 1 and {LMAX_MAX}, not {lmax}")
    if device not in ("cpu", "gpu"):
        raise InputError(f"device must be 'cpu' or 'gpu', not {device!r}")
    report = report or (lambda part: None)
    molecule = warm_molecule()
    basis = warm_basis(molecule, int(lmax))
    with CompileClock() as clock:
        run = _gpu_parts if device == "gpu" else _cpu_parts
        return run(molecule, basis, gradient, clock, report)
