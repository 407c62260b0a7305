"""The two-electron part of an SCF gradient on one GPU (driver; backend-neutral).

    builder = DirectGradient(direct_jk, shell_atom)
    g = builder.gradient(dj, dk, k_factor, natm)      # numpy (natm, 3), hartree/bohr

It reuses everything the J/K builder of the same basis has on the device
(:class:`hartree.gpu.jk_direct.DirectJK`): the shell pairs of each class in their launch
order, their Schwarz factors, the quartet screening and list machinery, the Rys table.  What
it adds: per pair class two more primitive-pair tables, K weighted by 2α and by 2β (eq. (2)
of :mod:`hartree.gpu.gradient_kernels`), uploaded in build order and gathered on the device
into the launch order with the J/K builder's permutation; and per quartet class the gradient
kernel of :mod:`hartree.gpu.gradient_kernels`, run over quartet lists of the same machinery
screened by Schwarz factors times a bound of the two-particle density, the largest product of
two density blocks of the quartet (taken over DJ and every DK; ``product`` screening of
:mod:`hartree.gpu.quartet_lists`, as the CPU reference :mod:`hartree.integrals.eri_deriv`).
"""

import numpy as np

from . import codegen, cooperative_gradient, gradient_kernels
from .pairs import permutation_rows


def _i32(x):
    return np.int32(x)


class DirectGradient:
    """Gradient kernels over the pairs and lists of ``jk`` (a DirectJK) on its backend.

    shell_atom: int (nshell,) the atom of each shell of ``jk.basis``.
    """

    def __init__(self, jk, shell_atom):
        self.jk = jk
        xp = self.xp = jk.xp
        self.shell_atom = xp.asarray(np.asarray(shell_atom, dtype=np.int32))
        self.weighted = {}
        self.exps = {}  # (α, β) per primitive pair, launch order (the fused kernels)
        for pc in jk.pair_classes:
            host = jk.host_classes[pc]
            _, rows = permutation_rows(host.pst, jk.pair_orders[pc])
            rows = xp.asarray(rows)
            tables = []
            for col in (0, 1):  # K times 2α (first shell), 2β (second shell)
                prim = host.prim.copy()
                prim[:, 4] *= 2.0 * host.prim_exp[:, col]
                tables.append(xp.asarray(prim)[rows])
            self.weighted[pc] = tuple(tables)
            self.exps[pc] = xp.asarray(np.ascontiguousarray(host.prim_exp))[rows]
        self._modules, self._erf_modules = {}, {}  # {class: module}, 1/r12 and erf
        #: set to a dict to collect seconds per quartet class ({'2100': s, ...}; profiling only)
        self.profile = None

    def _compile(self, classes, attenuated=False):
        """{class: module} of the gradient kernels (compiled or loaded from the cache);
        attenuated: those of erf(omega r12)/r12, whose cache key adds ``"operator": "erf"``."""
        store = self._erf_modules if attenuated else self._modules
        todo = [c for c in classes if c not in store]
        specs = []
        for cls in todo:
            key = {
                "kind": "rys_gradient",
                "variant": gradient_kernels.variant(cls),
                "class": list(cls),
                "precision": "fp64",
                "generator": codegen.GENERATOR_VERSION,
                "rys_table": self.jk.table.sha256,
            }
            if attenuated:
                key["operator"] = "erf"
            name = gradient_kernels.kernel_name(cls)
            src = gradient_kernels.generate(cls, self.jk.table, attenuated)
            specs.append((src, key, {name: gradient_kernels.params(cls, attenuated)}))
        for cls, mod in zip(todo, self.jk.backend.compile(specs)):
            store[cls] = mod
        return {c: store[c] for c in classes}

    def prepare(self, attenuated=False):
        """Compile (or load from the cache) the kernel of every quartet class (attenuated:
        the erf(omega r12)/r12 kernels)."""
        self._compile(self.jk.quartet_classes(), attenuated)

    def screen(self, dj, dk):
        """Cartesian densities and their screening data on this device: (dm_cart
        (1 + nk, ncart, ncart) with DJ first, dmax_sh (nshell, nshell), max |D|), from dj
        (nao, nao) and dk (nk, nao, nao) of the final AO basis (numpy or backend arrays)."""
        jk, xp = self.jk, self.xp
        dk = xp.asarray(dk, dtype=np.float64).reshape(-1, jk.basis.nao, jk.basis.nao)
        stack = xp.concatenate([xp.asarray(dj, dtype=np.float64)[None], dk])
        dm_cart, dmax_sh, dmax_all, _ = jk.screen_density(stack)
        return dm_cart, dmax_sh, dmax_all

    def gradient(self, dj, dk, k_factor, natm, omega=0.0):
        """1/2 Σ Γ d(ab|cd)/dR per atom, numpy (natm, 3), hartree/bohr (Γ: eq. (1) of
        :mod:`hartree.gpu.gradient_kernels`); dj (nao, nao) and dk (nk, nao, nao)
        symmetric densities of the final AO basis (numpy or the backend's arrays).
        omega (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12 (screened with the 1/r12
        Schwarz factors, which bound it)."""
        if omega < 0:
            raise ValueError("omega < 0 (erfc) is 1/r12 - erf: GPUEngine forms the difference")
        jk = self.jk
        dm_cart, dmax_sh, dmax_all = self.screen(dj, dk)
        if dmax_all == 0.0:
            return np.zeros((natm, 3))
        items = jk.launch_list(dmax_all)
        if self.profile is None:
            grad = self.accumulate([items], dm_cart, dmax_sh, dmax_all, k_factor, natm, omega=omega)
        else:  # one class at a time, timed (serialises the classes: profiling only)
            batches = [[item] for item in items]
            grad = self.accumulate(batches, dm_cart, dmax_sh, dmax_all, k_factor, natm, timed=True, omega=omega)
        out = grad.get() if hasattr(grad, "get") else np.asarray(grad)
        return np.asarray(out).reshape(natm, 3)

    def accumulate(self, batches, dm_cart, dmax_sh, dmax_all, k_factor, natm, timed=False, omega=0.0):
        """Σ over the launch items of `batches` (an iterable of lists of J/K launch items of
        this device's builder, each list one :meth:`DirectJK.run_batch`) of the gradient
        kernels' contributions: a backend array (3 natm,), hartree/bohr, still on this
        device.  dm_cart, dmax_sh, dmax_all: :meth:`screen`'s, on this device.  timed:
        add each batch's seconds to ``profile`` under its (first item's) class name.
        omega (bohr^-1): 0 for 1/r12, > 0 for erf(omega r12)/r12."""
        jk, xp = self.jk, self.xp
        grad = xp.zeros(3 * natm)
        mods = self._compile(jk.quartet_classes(), omega != 0.0)
        nk = dm_cart.shape[0] - 1
        ncart = jk.basis.ncart
        dj_c, dk_c = dm_cart[0], xp.ascontiguousarray(dm_cart[1:])
        table = jk._tab
        # Γ-bound screening (quartet_lists): |Γ| <= (1 + |k| nk) max-product of two blocks
        screen = jk.threshold / (1.0 + abs(k_factor) * nk)

        def run(item, buf, base, n, stream):
            if n <= 0:
                return
            cls, P, Q, tri = item
            Pa, Pb = self.weighted[P.key]
            Qa, _ = self.weighted[Q.key]
            kind = gradient_kernels.variant(cls)
            if kind == "cooperative":
                tpq, tpb, shared = cooperative_gradient.launch_config(cls)
                tab = table[int(jk.table.offsets[gradient_kernels.table_roots(cls)]) :]
            else:
                tpq, tpb, shared, tab = 1, gradient_kernels.THREADS, 0, table
            mods[cls].launch(
                gradient_kernels.kernel_name(cls),
                ((n * tpq + tpb - 1) // tpb,),
                tpb,
                [
                    _i32(n),
                    buf[2 * base : 2 * (base + n)],
                    _i32(tri),
                    P.sh,
                    P.pst,
                    P.geo,
                    P.prim,
                    Pa,
                    Pb,
                    Q.sh,
                    Q.pst,
                    Q.geo,
                    Q.prim,
                    Qa,
                    jk.cart_loc,
                    self.shell_atom,
                    dj_c,
                    dk_c,
                    _i32(nk),
                    np.float64(0.5 * k_factor),
                    _i32(ncart),
                    grad,
                    tab,
                    *((self.exps[P.key], self.exps[Q.key]) if kind != "block" else ()),
                    *((np.float64(omega),) if omega else ()),
                ],
                stream=stream,
                **({"shared_mem": shared} if shared else {}),
            )

        for batch in batches:
            stop = jk.backend.timer() if timed else None
            jk.run_batch(None, batch, dm_cart, dmax_sh, dmax_all, None, None, runner=run, product=screen)
            if timed:
                name = codegen.class_name(batch[0][1])
                self.profile[name] = self.profile.get(name, 0.0) + stop()
        return grad
