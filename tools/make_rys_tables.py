"""Generate hartree/integrals/data/rys_tables.npz: Chebyshev fits of Rys roots and weights.

Run:  python tools/make_rys_tables.py [--nproc 2] [--out PATH]

Reference (all in mpmath, ``mp.dps = DPS``):

1. Boys moments  mu_m = F_m(T) = int_0^1 t^(2m) exp(-T t^2) dt
                      = gamma(m + 1/2, T) / (2 T^(m + 1/2))       (T > 0),
                      = 1 / (2m + 1)                              (T = 0),
   i.e. the moments of the measure  d lambda(u) = exp(-T u) u^(-1/2) du / 2  on u in [0, 1].
2. Recurrence coefficients alpha_k, beta_k of the monic orthogonal polynomials
   pi_{k+1}(u) = (u - alpha_k) pi_k(u) - beta_k pi_{k-1}(u)  by Chebyshev's algorithm
   (Gautschi, "Orthogonal polynomials", Alg. 2.1) from mu_0 .. mu_{2N-1}.  The
   algorithm is ill-conditioned (it loses ~15 digits for N = 14 here), hence 100 digits.
   The n-point rule uses the leading n coefficients, so one pass serves every n <= N.
3. Gauss nodes u_i = zeros of pi_n (double-precision eigenvalues of the Jacobi matrix,
   refined by Newton's method in mpmath) and Christoffel weights
   w_i = 1 / sum_{k<n} pi_k(u_i)^2 / (beta_0 ... beta_k).
4. Large-T asymptote: int_0^1 -> int_0^inf, whose u-measure is exp(-T u) u^(-1/2) du / 2,
   i.e. generalized Laguerre with alpha = -1/2 after u = v / T:
   u_i = v_i / T,  w_i = lambda_i / sqrt(T),  v_i = x_i^2 (x_i the positive zeros of H_2n),
   lambda_i = the half-line Gauss-Hermite weights h_i (alpha_k = 2k + 1/2,
   beta_k = k (k - 1/2), beta_0 = sqrt(pi)/2).

Fit: on [0, T_max(n)) uniform intervals of width H = 1, on each a Chebyshev interpolant
of degree DEG = 13 (first-kind nodes) of every u_i(T) and w_i(T), fitted directly: within
one interval a weight changes by a bounded factor, so the fit keeps relative accuracy
(a pilot showed the coefficients reach rounding level, ~3e-16 relative, by j = 12 for
every n and T).  The coefficients come from double-double node values combined in
extended precision (numpy longdouble).  The size of the last two coefficients relative
to min |f| on the interval is stored per n as ``tail`` (convergence check, ~4e-16);
tests/integrals/test_rys.py checks the evaluated rules against this module's reference.

T_max(n) is the first interval edge from which on the asymptote agrees with the exact
rule to < ASYM_TOL relative (checked at 1, 1.25, 1.5, 2, 3 and 4 times the edge).

Output (np.savez_compressed): header, generator_version, dps, max_nroots, width, degree,
tmax (n = 0..N, float), nint (intervals per n), offsets (start of n's block in coef),
coef (per n a block (nint[n], 2n, DEG+1): roots' series then weights'), asym_u and asym_w
((N+1, N): v_i and lambda_i of the n-point asymptote), tail, sha256 (of tmax, nint,
offsets, coef, asym_u, asym_w bytes).  About 2 minutes on 2 processes.
"""

import argparse
import hashlib
import os
import sys
import time

import mpmath as mp
import numpy as np

GENERATOR_VERSION = "1"
DPS = 100
MAX_NROOTS = 14
H = 1.0  # interval width in T
DEG = 13  # Chebyshev degree per interval
ASYM_TOL = 2e-16  # relative agreement required of the asymptote at and beyond T_max

_HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(_HERE, "..", "hartree", "integrals", "data", "rys_tables.npz")


# ----------------------------------------------------------------------------- reference
def boys_moments(T, nmom):
    """mpf list F_0(T) .. F_{nmom-1}(T) (current mp precision); T >= 0 (mpf or str/float)."""
    T = mp.mpf(T)
    if T == 0:
        return [mp.mpf(1) / (2 * m + 1) for m in range(nmom)]
    out = []
    for m in range(nmom):
        a = mp.mpf(m) + mp.mpf(1) / 2
        out.append(mp.gammainc(a, 0, T) / (2 * mp.power(T, a)))
    return out


def chebyshev_algorithm(mu, N):
    """Recurrence coefficients (alpha[0..N-1], beta[0..N-1]) from moments mu[0..2N-1]."""
    alpha = [mp.mpf(0)] * N
    beta = [mp.mpf(0)] * N
    sig_prev = [mp.mpf(0)] * (2 * N)  # sigma_{k-2, l}
    sig = list(mu)  # sigma_{k-1, l}
    alpha[0] = mu[1] / mu[0]
    beta[0] = mu[0]
    for k in range(1, N):
        new = [mp.mpf(0)] * (2 * N)
        for l in range(k, 2 * N - k):
            new[l] = sig[l + 1] - alpha[k - 1] * sig[l] - beta[k - 1] * sig_prev[l]
        alpha[k] = new[k + 1] / new[k] - sig[k] / sig[k - 1]
        beta[k] = new[k] / sig[k - 1]
        sig_prev, sig = sig, new
    return alpha, beta


def gauss_rule(alpha, beta, n):
    """n-point Gauss rule (nodes ascending, weights) as mpf lists from recurrence coeffs."""
    J = np.zeros((n, n))
    for k in range(n):
        J[k, k] = float(alpha[k])
        if k + 1 < n:
            J[k, k + 1] = J[k + 1, k] = float(mp.sqrt(beta[k + 1]))
    guess = np.linalg.eigvalsh(J)
    nodes, weights = [], []
    tol = mp.mpf(10) ** (-mp.mp.dps + 10)
    for g in guess:
        x = mp.mpf(g)
        for _ in range(60):
            # monic recurrence for pi_n and its derivative (Newton step)
            p0, p1, d0, d1 = mp.mpf(0), mp.mpf(1), mp.mpf(0), mp.mpf(0)
            for k in range(n):
                b = beta[k] if k > 0 else 0
                p2 = (x - alpha[k]) * p1 - b * p0
                d2 = p1 + (x - alpha[k]) * d1 - b * d0
                p0, p1, d0, d1 = p1, p2, d1, d2
            dx = p1 / d1
            x -= dx
            if abs(dx) <= tol * abs(x):
                break
        else:
            raise RuntimeError("Newton did not converge")
        # Christoffel number: 1 / sum_k pi_k(x)^2 / ||pi_k||^2
        s, p0, p1, nrm = mp.mpf(0), mp.mpf(0), mp.mpf(1), mp.mpf(1)
        for k in range(n):
            nrm *= beta[k]
            s += p1 * p1 / nrm
            b = beta[k] if k > 0 else 0
            p0, p1 = p1, (x - alpha[k]) * p1 - b * p0
        nodes.append(x)
        weights.append(1 / s)
    return nodes, weights


def all_rules(T, nmax=MAX_NROOTS, dps=DPS):
    """Exact rules for n = 1..nmax at one T: list of (nodes, weights) mpf lists."""
    with mp.workdps(dps):
        mu = boys_moments(T, 2 * nmax)
        alpha, beta = chebyshev_algorithm(mu, nmax)
        return [gauss_rule(alpha, beta, n) for n in range(1, nmax + 1)]


def exact_roots_weights(n, T, dps=DPS):
    """Exact Rys rule for one (n, T), rounded to float64: (roots, weights) arrays.

    T may be a float, str or mpf; the reference uses mp.dps = dps.
    """
    with mp.workdps(dps):
        mu = boys_moments(T, 2 * n)
        alpha, beta = chebyshev_algorithm(mu, n)
        x, w = gauss_rule(alpha, beta, n)
        return np.array([float(v) for v in x]), np.array([float(v) for v in w])


def asymptotic_rules(nmax=MAX_NROOTS, dps=DPS):
    """Half-range Hermite rules: (v, lam) mpf lists per n with u = v/T, w = lam/sqrt(T)."""
    with mp.workdps(dps):
        alpha = [2 * k + mp.mpf(1) / 2 for k in range(nmax)]
        beta = [mp.sqrt(mp.pi) / 2] + [k * (k - mp.mpf(1) / 2) for k in range(1, nmax)]
        return [gauss_rule(alpha, beta, n) for n in range(1, nmax + 1)]


# ----------------------------------------------------------------------------- fitting
def cheb_nodes(deg):
    """First-kind Chebyshev nodes x_j = cos(pi (j + 1/2) / (deg + 1)) in mpf."""
    return [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / (deg + 1)) for j in range(deg + 1)]


def _to_ld(v):
    """mpf -> numpy longdouble via a double-double split."""
    hi = float(v)
    lo = float(v - hi)
    return np.longdouble(hi) + np.longdouble(lo)


def _eval_interval(args):
    """Worker: exact rules at the DEG+1 Chebyshev nodes of interval k (T in [kH, (k+1)H))."""
    k, nmax = args
    with mp.workdps(DPS):
        out = []
        for x in cheb_nodes(DEG):
            T = (k + (x + 1) / 2) * mp.mpf(H)
            rules = all_rules(T, nmax)
            out.append([([_to_ld(v) for v in r[0]], [_to_ld(v) for v in r[1]]) for r in rules])
        return k, out


def cheb_coeffs(values):
    """Chebyshev coefficients c_j (longdouble) of the interpolant at first-kind nodes.

    values: (..., DEG+1) at x_j = cos(pi (j+1/2)/(DEG+1)); returns (..., DEG+1) with
    f(x) = sum_j c_j T_j(x)  (c_0 not halved).
    """
    m = DEG + 1
    j = np.arange(m, dtype=np.longdouble)
    theta = np.pi * (j + np.longdouble(0.5)) / m
    C = np.cos(np.outer(np.arange(m, dtype=np.longdouble), theta)) * (np.longdouble(2) / m)
    C[0] /= 2
    return values @ C.T


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--tmax", type=float, default=None, help="debug: cap T range")
    args = ap.parse_args(argv)
    t0 = time.time()
    nmax = MAX_NROOTS

    # 1. asymptote and T_max(n)
    asym = asymptotic_rules(nmax)
    tmax = np.zeros(nmax + 1)
    with mp.workdps(DPS):
        for n in range(1, nmax + 1):
            v, lam = asym[n - 1]
            edge = 1
            while True:
                ok = True
                for f in (1.0, 1.25, 1.5, 2.0, 3.0, 4.0):
                    T = mp.mpf(edge * H * f)
                    x, w = all_rules(T, n)[n - 1]
                    for i in range(n):
                        eu = abs(v[i] / T / x[i] - 1)
                        ew = abs(lam[i] / mp.sqrt(T) / w[i] - 1)
                        if max(eu, ew) > ASYM_TOL:
                            ok = False
                            break
                    if not ok:
                        break
                if ok:
                    break
                edge += 1
            tmax[n] = edge * H
            print(f"n={n:2d}  T_max={tmax[n]:g}", flush=True)
    if args.tmax is not None:
        tmax = np.minimum(tmax, args.tmax)
    nint = (np.round(tmax / H)).astype(np.int64)
    nint_all = int(nint.max())

    # 2. exact rules at every Chebyshev node of every interval
    jobs = [(k, int(max(n for n in range(1, nmax + 1) if nint[n] > k))) for k in range(nint_all)]
    results = {}
    if args.nproc > 1:
        import multiprocessing as mpr

        with mpr.Pool(args.nproc) as pool:
            for k, out in pool.imap_unordered(_eval_interval, jobs):
                results[k] = out
                print(f"  interval {k} done  ({time.time() - t0:.0f} s)", flush=True)
    else:
        for job in jobs:
            k, out = _eval_interval(job)
            results[k] = out

    # 3. Chebyshev coefficients; layout per n: (nint[n], 2n, DEG+1), roots first
    offsets = np.zeros(nmax + 2, dtype=np.int64)
    blocks = []
    tail = np.zeros(nmax + 1)
    for n in range(1, nmax + 1):
        vals = np.zeros((nint[n], 2 * n, DEG + 1), dtype=np.longdouble)
        for k in range(nint[n]):
            for j in range(DEG + 1):
                x, w = results[k][j][n - 1]
                vals[k, :n, j] = x
                vals[k, n:, j] = w
        c = cheb_coeffs(vals)
        scale = np.min(np.abs(vals), axis=2)
        tail[n] = float(np.max((np.abs(c[..., -1]) + np.abs(c[..., -2])) / scale))
        blocks.append(c.astype(np.float64).ravel())
        offsets[n + 1] = offsets[n] + blocks[-1].size
    coef = np.concatenate(blocks)
    asym_u = np.zeros((nmax + 1, nmax))
    asym_w = np.zeros((nmax + 1, nmax))
    for n in range(1, nmax + 1):
        v, lam = asym[n - 1]
        asym_u[n, :n] = [float(t) for t in v]
        asym_w[n, :n] = [float(t) for t in lam]
    meta = dict(
        header=np.array(
            f"generated by tools/make_rys_tables.py (version {GENERATOR_VERSION}, "
            f"mpmath {mp.__version__}, mp.dps={DPS}); do not edit"
        ),
        generator_version=np.array(GENERATOR_VERSION),
        dps=np.array(DPS),
        max_nroots=np.array(nmax),
        width=np.array(H),
        degree=np.array(DEG),
        tmax=tmax,
        nint=nint,
        offsets=offsets,
        coef=coef,
        asym_u=asym_u,
        asym_w=asym_w,
        tail=tail,
    )
    digest = hashlib.sha256()
    for key in ("tmax", "nint", "offsets", "coef", "asym_u", "asym_w"):
        digest.update(np.ascontiguousarray(meta[key]).tobytes())
    meta["sha256"] = np.array(digest.hexdigest())
    np.savez_compressed(args.out, **meta)
    print("tail (max rel. size of last two coefficients) per n:", tail[1:])
    print(f"wrote {args.out}: {coef.size} coefficients, sha256 {digest.hexdigest()}, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
