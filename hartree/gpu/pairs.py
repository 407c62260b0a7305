"""GPU view of a basis: shell pairs grouped by class (la, lb), host side (numpy).

Derived from :class:`hartree.basis.Basis`, never the other way round.  Each unordered
shell pair {i, j} appears once, in the class (max(l_i, l_j), min(l_i, l_j)) with the
higher-l shell first (for equal l: i >= j).  Per pair and per primitive pair we store
what the Rys kernels read (all in bohr / bohr^-2):

* ``sh``   int32 (npair, 2): shell indices (i, j)
* ``geo``  float64 (npair, 6): A (centre of i) and A - B
* ``pst``  int32 (npair+1): offsets of the pair's primitive pairs in ``prim``
* ``prim`` float64 (nprimpair, 5): ζ = a+b, P = (aA + bB)/ζ, and
  K = c_a c_b f(l_a) f(l_b) exp(-a b |A-B|² / ζ)   (Gaussian product theorem)
  with c the stored coefficients (normalised primitives, contraction normalised) and
  f(l) the libcint angular factor (f(0) = 1/sqrt(4π), f(1) = sqrt(3/(4π)), else 1);
  f(l), P and μ|A-B|² come from :mod:`hartree.integrals.gaussian_product`, shared with
  the CPU pair tables.
* ``q``    float64 (npair,): Schwarz factors sqrt(max |(ab|ab)|) (set by the driver).
* ``prim_exp`` float64 (nprimpair, 2): the exponents (a, b) of each primitive pair (the
  derivative kernels weight K by 2a or 2b: Obara & Saika's rule for d/dA, d/dB).

Pairs are later re-ordered (:func:`pair_order` on the host, gathered on the device: :mod:`hartree.gpu.device_pairs`)
by primitive-pair count, then by decade of ``q`` (so that tiles of the quartet grid can be
screened as a whole), then by shell indices (so that the quartets of a warp digest into
neighbouring J/K elements).
"""

from dataclasses import dataclass, replace

import numpy as np

from hartree.integrals.gaussian_product import angular_factor, product_centre_array, product_exponent_array


@dataclass(frozen=True, eq=False)
class PairClass:
    """Shell pairs of one class (la >= lb); arrays as described in the module docstring."""

    la: int
    lb: int
    sh: np.ndarray
    geo: np.ndarray
    pst: np.ndarray
    prim: np.ndarray
    q: np.ndarray
    prim_exp: np.ndarray | None = None

    @property
    def npair(self):
        return int(self.sh.shape[0])

    @property
    def max_nprim(self):
        return int(np.diff(self.pst).max()) if self.npair else 0


#: primitive pairs whose weight |K| (π/ζ)^(3/2) is below this fraction of the largest one
#: in their shell pair are dropped (relative change of any integral ~ this x nprim²)
PRIM_CUTOFF = 1e-15


def build_pair_classes(basis, prim_cutoff=PRIM_CUTOFF):
    """Dict {(la, lb): PairClass} for all classes with at least one pair (q = 0).

    prim_cutoff: primitive-pair screening threshold (0 keeps every primitive pair)."""
    ls = np.asarray(basis.shell_l)
    lmax = int(ls.max())
    out = {}
    for la in range(lmax + 1):
        for lb in range(la + 1):
            pairs = class_pairs(basis, la, lb)
            if len(pairs):
                out[(la, lb)] = _pair_class(basis, la, lb, pairs, prim_cutoff)
    return out


def class_pairs(basis, la, lb):
    """The shell pairs (i, j) of class (la, lb), la >= lb: l_i = la, l_j = lb, i >= j when
    la == lb; int (npair, 2), i-major (the order of the GPU pair classes and one-electron
    launches)."""
    ls = np.asarray(basis.shell_l)
    ia, ib = np.flatnonzero(ls == la), np.flatnonzero(ls == lb)
    if la == lb:
        ii, jj = np.tril_indices(len(ia))
        return np.stack([ia[ii], ia[jj]], axis=1)
    return np.stack(np.meshgrid(ia, ib, indexing="ij"), axis=-1).reshape(-1, 2)


def _pair_class(basis, la, lb, pairs, prim_cutoff):
    """PairClass of `pairs` (npair, 2); vectorised over pairs of equal primitive counts."""
    fa, fb = angular_factor(la), angular_factor(lb)
    centers = np.asarray(basis.shell_center)
    geo = np.empty((len(pairs), 6))
    geo[:, :3] = centers[pairs[:, 0]]
    geo[:, 3:] = centers[pairs[:, 0]] - centers[pairs[:, 1]]
    exps, coefs = np.asarray(basis.exponents), np.asarray(basis.coefficients)
    npi = basis.shell_nprim[pairs[:, 0]]
    npj = basis.shell_nprim[pairs[:, 1]]
    rows, owner, expo = [], [], []
    for ni, nj in sorted(set(zip(npi.tolist(), npj.tolist()))):
        sel = np.flatnonzero((npi == ni) & (npj == nj))
        I, J = pairs[sel, 0], pairs[sel, 1]
        ia = basis.shell_prim_start[I][:, None] + np.arange(ni)  # (n, ni)
        jb = basis.shell_prim_start[J][:, None] + np.arange(nj)  # (n, nj)
        a, b = exps[ia][:, :, None], exps[jb][:, None, :]
        zeta = a + b  # (n, ni, nj)
        A, B = centers[I], centers[J]
        ab2 = np.einsum("nx,nx->n", A - B, A - B)[:, None, None]
        K = (
            (coefs[ia] * fa)[:, :, None] * (coefs[jb] * fb)[:, None, :] * np.exp(-product_exponent_array(a, b, ab2))
        )  # Gaussian product
        P = product_centre_array(a[..., None], b[..., None], A[:, None, None, :], B[:, None, None, :])
        blk = np.concatenate([zeta[..., None], P, K[..., None]], axis=-1).reshape(len(sel), -1, 5)
        # primitive-pair screening: weight |K| (π/ζ)^(3/2) (the s-type overlap of the
        # primitive pair) below prim_cutoff x the pair's largest weight is dropped
        weight = np.abs(blk[:, :, 4]) * (np.pi / blk[:, :, 0]) ** 1.5
        keep = weight >= prim_cutoff * weight.max(axis=1, keepdims=True)
        rows.append(blk[keep])
        ab = np.stack(np.broadcast_arrays(a, b), axis=-1).reshape(len(sel), -1, 2)
        expo.append(ab[keep])
        owner.append(np.broadcast_to(sel[:, None], keep.shape)[keep])
    owner = np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64)
    order = np.argsort(owner, kind="stable")  # group rows by pair, user order
    prim = np.concatenate(rows)[order] if rows else np.zeros((0, 5))
    prim_exp = np.concatenate(expo)[order] if expo else np.zeros((0, 2))
    pst = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(pairs)), out=pst[1:])
    return PairClass(
        la=la,
        lb=lb,
        sh=pairs.astype(np.int32),
        geo=geo,
        pst=pst.astype(np.int32),
        prim=prim,
        q=np.zeros(len(pairs)),
        prim_exp=prim_exp,
    )


#: width of the q bins of the pair order (:func:`pair_order`), in decades
Q_BIN_DECADES = 1.0


def pair_order(counts, q, sh, xp=np):
    """Permutation of the pairs of one class: primitive-pair count descending (the
    threads of a warp loop over similar counts), then floor(log10 q / Q_BIN_DECADES)
    descending, then shell i, then shell j.

    A tile spans at most two neighbouring bins (about two decades of q), so tile screening
    keeps most of its power, while consecutive pairs share their first shell and run over
    neighbouring second shells: the quartets of a warp then add into a few rows and nearby
    columns of J and K (fewer, better coalesced atomics than a plain q-descending order).

    counts int (npair,), q float (npair,), sh int (npair, 2), arrays of the array module
    `xp` (numpy or cupy: the driver sorts on the device); returns int64 (npair,) of `xp`.
    The keys are exact in float64 and (i, j) is unique within a class, so the order is the
    same whatever sort the array module uses."""
    q = xp.asarray(q, dtype=xp.float64)
    qbin = xp.floor(xp.log10(xp.where(q > 0, q, 1e-300)) / Q_BIN_DECADES)
    sh = xp.asarray(sh)
    keys = xp.stack([sh[:, 1], sh[:, 0], -qbin, -xp.asarray(counts)]).astype(xp.float64)
    return xp.lexsort(keys).astype(xp.int64)


def permutation_rows(pst, order):
    """For pairs taken in `order` (int (npair,)): the new offsets int64 (npair+1,) and, for
    each new primitive row, the old row it comes from, int64 (nprimpair,) (the primitive
    rows of a pair stay together, in their order).  pst: int (npair+1,) old offsets; numpy."""
    pst = np.asarray(pst, dtype=np.int64)
    counts = (pst[1:] - pst[:-1])[order]
    new = np.zeros(len(order) + 1, dtype=np.int64)
    new[1:] = np.cumsum(counts)
    rows = np.arange(int(new[-1]), dtype=np.int64)
    owner = np.searchsorted(new, rows, side="right") - 1  # new pair of each new row
    # row r of new pair p comes from old row pst[order[p]] + (r - new[p])
    return new, rows - new[owner] + pst[:-1][order][owner]


def permuted(sh, pst, geo, prim, order):
    """(sh, pst int32, geo, prim) of the pairs in `order` (int (npair,)), host arrays."""
    new, rows = permutation_rows(pst, order)
    return sh[order], new.astype(np.int32), geo[order], prim[rows]


def sorted_by(pc, q):
    """A copy of `pc` (host) with Schwarz factors q (npair,), pairs in :func:`pair_order`."""
    q = np.asarray(q, dtype=np.float64)
    order = pair_order(np.diff(pc.pst), q, pc.sh)
    sh, pst, geo, prim = permuted(pc.sh, pc.pst, pc.geo, pc.prim, order)
    prim_exp = None if pc.prim_exp is None else pc.prim_exp[permutation_rows(pc.pst, order)[1]]
    return replace(pc, sh=sh, geo=geo, pst=pst, prim=prim, q=q[order], prim_exp=prim_exp)


def tile_max(q, tile):
    """max of q over consecutive tiles of `tile` entries, (ceil(len(q)/tile),)."""
    n = (len(q) + tile - 1) // tile
    padded = np.zeros(n * tile)
    padded[: len(q)] = q
    return padded.reshape(n, tile).max(axis=1)
