"""libxc built for CUDA, called through its C API (ctypes) on device arrays.

    xc = LibxcFunctional(parse_functional("pbe"), spin=0, xp=cupy)    # once per SCF
    eps, (vrho, vsigma, vlapl, vtau) = xc.eval_xc(rho)                # cupy in, cupy out

The values of the functionals still come from libxc (S. Lehtola, C. Steigemann, M. J. T.
Oliveira and M. A. L. Marques, SoftwareX 7, 1 (2018)), here a build whose work functions are
CUDA kernels: since libxc 7.1 a functional initialised with ``xc_func_init_flags(p, id,
nspin, XC_FLAGS_ON_DEVICE)`` evaluates ``xc_lda_exc_vxc`` / ``xc_gga_exc_vxc`` /
``xc_mgga_exc_vxc`` on arrays in GPU memory, and one initialised with ``XC_FLAGS_ON_HOST``
on host arrays (how the tests check this binding without a GPU).  The hybrid and
range-separation coefficients are read at set-up from PySCF's libxc
(:func:`hartree.dft.parse_functional`); only the semilocal values come from here.

Library.  The ``gpu4pyscf-libxc-cuda13x`` wheel ships such a build (libxc 7.1.2,
``gpu4pyscf/lib/deps/lib/libxc.so``, about 120 MB, no Python code); :func:`find_library`
looks, in this order, at ``$HARTREE_LIBXC_GPU`` (a path to a libxc.so), at the files of the
installed distributions :data:`DISTRIBUTIONS` (importlib.metadata) and at the folders of a
``gpu4pyscf`` package (importlib.util.find_spec, which does not import it).  Nothing is
loaded at import time.

Layouts (libxc's, point-major): unpolarised ρ (n,), σ = ∇ρ·∇ρ (n,), τ (n,); polarised
ρ (n, 2), σ (n, 3) = (αα, αβ, ββ), τ (n, 2); the outputs ε (n,), v_ρ (n, nspin), v_σ
(n, 1 | 3), v_τ (n, nspin) are those of PySCF's ``eval_xc(deriv=1)`` (the restricted ones
flattened), so that :mod:`hartree.dft.xc_integrate` takes either.  A combination (e.g.
"LDA_X,LDA_C_VWN") is the sum of its components times their factors, as PySCF sums them.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
import os

from ..errors import DeviceError

__all__ = ["DISTRIBUTIONS", "ENV", "LibxcFunctional", "find_library", "load", "missing_reason"]

#: Environment variable naming a libxc.so built for CUDA (first place looked at).
ENV = "HARTREE_LIBXC_GPU"
#: Distributions that ship one, newest CUDA first.
DISTRIBUTIONS = ("gpu4pyscf-libxc-cuda13x", "gpu4pyscf-libxc-cuda12x")
#: Where those wheels put it, relative to their installation folder.
RELATIVE = ("gpu4pyscf", "lib", "deps", "lib", "libxc.so")
#: ``xc_func_init_flags`` flags (libxc 7.1 xc.h): evaluate on the device or on the host.
FLAGS_ON_DEVICE = 1 << 18
FLAGS_ON_HOST = 1 << 19
#: libxc families; the HYB_* ones are those of libxc < 6 (mapped to their base family).
FAMILY_LDA, FAMILY_GGA, FAMILY_MGGA = 1, 2, 4
_HYBRID_FAMILIES = {32: FAMILY_GGA, 64: FAMILY_MGGA, 128: FAMILY_LDA}
_FAMILY_NAMES = {FAMILY_LDA: "LDA", FAMILY_GGA: "GGA", FAMILY_MGGA: "MGGA"}


def find_library() -> str | None:
    """Path of a libxc.so built for CUDA (module docstring), or None."""
    env = os.environ.get(ENV)
    if env:
        return env if os.path.isfile(env) else None
    for name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for entry in dist.files or ():
            if entry.name == "libxc.so":
                path = str(dist.locate_file(entry))
                if os.path.isfile(path):
                    return path
    try:
        spec = importlib.util.find_spec("gpu4pyscf")
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        path = os.path.join(folder, *RELATIVE[1:])
        if os.path.isfile(path):
            return path
    return None


def missing_reason() -> str:
    """The one line said when no GPU libxc is found."""
    env = os.environ.get(ENV)
    if env:
        return f"{ENV}={env!r} is not a file"
    return f"no libxc built for CUDA found (pip install {DISTRIBUTIONS[0]}, or set {ENV} to its libxc.so)"


def load(path: str | None = None) -> ctypes.CDLL:
    """The library at ``path`` (default :func:`find_library`) with the prototypes used here,
    loaded once per path.

    DeviceError (one line) when there is none, when it does not load, or when it predates
    libxc 7.1 (no ``xc_func_init_flags``)."""
    path = path or find_library()
    if path is None:
        raise DeviceError(missing_reason())
    return _load(os.path.realpath(path))


@functools.cache
def _load(path: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise DeviceError(f"libxc for CUDA at {path} does not load: {exc}") from None
    if not hasattr(lib, "xc_func_init_flags"):
        raise DeviceError(f"libxc at {path} is older than 7.1 (no xc_func_init_flags): it cannot run on the GPU")
    vp, i, d, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t
    lib.xc_version_string.restype = ctypes.c_char_p
    lib.xc_func_alloc.restype = vp
    lib.xc_func_init_flags.argtypes = (vp, i, i, i)
    lib.xc_func_init_flags.restype = i
    lib.xc_func_end.argtypes = (vp,)
    lib.xc_func_free.argtypes = (vp,)
    lib.xc_func_get_info.argtypes = (vp,)
    lib.xc_func_get_info.restype = vp
    lib.xc_func_info_get_family.argtypes = (vp,)
    lib.xc_func_info_get_n_ext_params.argtypes = (vp,)
    lib.xc_func_info_get_ext_params_name.argtypes = (vp, i)
    lib.xc_func_info_get_ext_params_name.restype = ctypes.c_char_p
    lib.xc_func_set_ext_params_name.argtypes = (vp, ctypes.c_char_p, d)
    lib.xc_lda_exc_vxc.argtypes = (vp, sz) + (vp,) * 3
    lib.xc_gga_exc_vxc.argtypes = (vp, sz) + (vp,) * 5
    lib.xc_mgga_exc_vxc.argtypes = (vp, sz) + (vp,) * 9
    for fn in (lib.xc_lda_exc_vxc, lib.xc_gga_exc_vxc, lib.xc_mgga_exc_vxc):
        fn.restype = None
    lib.path = path
    return lib


def _pointer(a) -> int:
    """Address of the first element of a numpy or cupy array."""
    data = a.data
    return int(data.ptr) if hasattr(data, "ptr") else int(a.ctypes.data)


class _Component:
    """One libxc functional, initialised for nspin (1 or 2) on the device or the host."""

    def __init__(self, lib, xc_id: int, nspin: int, flags: int, omega: float):
        self.lib = lib
        self.id = int(xc_id)
        self.p = lib.xc_func_alloc()
        if not self.p:
            raise DeviceError(f"libxc could not allocate functional {xc_id}")
        if lib.xc_func_init_flags(self.p, self.id, int(nspin), int(flags)) != 0:
            lib.xc_func_free(self.p)
            self.p = None
            raise DeviceError(f"functional {xc_id} is not in the libxc at {lib.path}")
        info = lib.xc_func_get_info(self.p)
        family = int(lib.xc_func_info_get_family(info))
        self.family = _HYBRID_FAMILIES.get(family, family)
        if self.family not in _FAMILY_NAMES:
            raise DeviceError(f"functional {xc_id} is of libxc family {family}, not LDA, GGA or meta-GGA")
        names = [lib.xc_func_info_get_ext_params_name(info, k) for k in range(lib.xc_func_info_get_n_ext_params(info))]
        if omega and b"_omega" in names:  # as PySCF sets a range-separated component's ω
            lib.xc_func_set_ext_params_name(self.p, b"_omega", float(omega))

    def __del__(self):
        if getattr(self, "p", None):
            self.lib.xc_func_end(self.p)
            self.lib.xc_func_free(self.p)
            self.p = None


class LibxcFunctional:
    """ε and the first derivatives of a :class:`hartree.dft.Functional` from libxc's C API.

    functional: its components (libxc ids and factors), family and ω; spin 0 (restricted:
    ρ is the total density) or 1 (α and β); xp: the array module of the inputs and outputs
    (cupy: evaluated on the GPU; numpy: on the host, through the same calls); path: the
    library (default :func:`find_library`).  DeviceError (one line) when the library or one
    of the components is missing.
    """

    def __init__(self, functional, spin: int, xp, path: str | None = None):
        self.lib = load(path)
        self.xp = xp
        self.spin = int(spin)
        self.family = functional.family
        self.on_device = xp.__name__ == "cupy"
        flags = FLAGS_ON_DEVICE if self.on_device else FLAGS_ON_HOST
        self.components = [
            (_Component(self.lib, c.id, self.spin + 1, flags, functional.omega), float(c.factor))
            for c in functional.components
        ]
        self.version = self.lib.xc_version_string().decode()

    def _inputs(self, rho):
        """(n, ρ, σ, ∇²ρ, τ) in libxc's layout from rho in PySCF's (module docstring)."""
        xp = self.xp
        mgga = self.family == "MGGA"
        if self.spin == 0:
            rows = rho if rho.ndim == 2 else rho[None]
            n = rows.shape[1]
            r = xp.ascontiguousarray(rows[0])
            sigma = lapl = tau = None
            if self.family != "LDA":
                g = rows[1:4]
                sigma = xp.ascontiguousarray((g * g).sum(axis=0))
            if mgga:
                lapl, tau = xp.zeros(n), xp.ascontiguousarray(rows[5])
            return n, r, sigma, lapl, tau
        ra, rb = (x if x.ndim == 2 else x[None] for x in rho)
        n = ra.shape[1]
        r = xp.ascontiguousarray(xp.stack([ra[0], rb[0]], axis=1))
        sigma = lapl = tau = None
        if self.family != "LDA":
            ga, gb = ra[1:4], rb[1:4]
            sigma = xp.stack([(ga * ga).sum(axis=0), (ga * gb).sum(axis=0), (gb * gb).sum(axis=0)], axis=1)
            sigma = xp.ascontiguousarray(sigma)
        if mgga:
            lapl = xp.zeros((n, 2))
            tau = xp.ascontiguousarray(xp.stack([ra[5], rb[5]], axis=1))
        return n, r, sigma, lapl, tau

    def eval_xc(self, rho):
        """(ε (n,), (v_ρ, v_σ, None, v_τ)) of rho in PySCF's ``eval_xc`` layout: spin 0 rho
        (n,) or (4 | 6, n) rows ρ, ∇ρ, 0, τ; spin 1 a pair of them (α, β).  Outputs as
        PySCF's deriv=1 (restricted (n,) each; unrestricted v_ρ (n, 2), v_σ (n, 3), v_τ
        (n, 2)); v_σ and v_τ None where the family has none."""
        xp = self.xp
        n, r, sigma, lapl, tau = self._inputs(rho)
        ns = self.spin + 1
        nsig = 3 if self.spin else 1
        eps = xp.zeros(n)
        vrho = xp.zeros((n, ns))
        vsigma = xp.zeros((n, nsig)) if self.family != "LDA" else None
        vtau = xp.zeros((n, ns)) if self.family == "MGGA" else None
        if n == 0:
            return self._shaped(eps, vrho, vsigma, vtau)
        self._before()
        for comp, factor in self.components:
            zk, vr = xp.empty(n), xp.empty((n, ns))
            if comp.family == FAMILY_LDA:
                self.lib.xc_lda_exc_vxc(comp.p, n, _pointer(r), _pointer(zk), _pointer(vr))
            elif comp.family == FAMILY_GGA:
                vs = xp.empty((n, nsig))
                args = (r, sigma, zk, vr, vs)
                self.lib.xc_gga_exc_vxc(comp.p, n, *(_pointer(a) for a in args))
                vsigma += factor * vs
            else:
                vs, vl, vt = xp.empty((n, nsig)), xp.empty((n, ns)), xp.empty((n, ns))
                args = (r, sigma, lapl, tau, zk, vr, vs, vl, vt)
                self.lib.xc_mgga_exc_vxc(comp.p, n, *(_pointer(a) for a in args))
                vsigma += factor * vs
                vtau += factor * vt
            eps += factor * zk
            vrho += factor * vr
        self._after()
        return self._shaped(eps, vrho, vsigma, vtau)

    def _shaped(self, eps, vrho, vsigma, vtau):
        if self.spin == 0:
            vrho = vrho[:, 0]
            vsigma = None if vsigma is None else vsigma[:, 0]
            vtau = None if vtau is None else vtau[:, 0]
        return eps, (vrho, vsigma, None, vtau)

    def _before(self):
        """libxc launches on the legacy default stream: let it start after the work queued
        on another current stream."""
        if self.on_device:
            stream = self.xp.cuda.get_current_stream()
            if stream.ptr != 0:
                stream.synchronize()

    def _after(self):
        """... and let later work on another current stream start after libxc's."""
        if self.on_device and self.xp.cuda.get_current_stream().ptr != 0:
            self.xp.cuda.runtime.deviceSynchronize()
