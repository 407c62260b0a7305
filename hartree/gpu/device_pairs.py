"""Shell pairs of one class on a backend, sorted on the device: the typed record the J/K
driver launches with.

The pair data of a class goes host -> device once (:func:`upload`); the Schwarz kernel runs
on the unsorted pairs, the pairs are sorted on the device (:func:`hartree.gpu.pairs.pair_order`
and :func:`hartree.gpu.pairs.permuted` with the backend's array module) and the tile maxima
of q are taken there too (:func:`sorted_on_device`).  The host keeps only small copies it
plans with (q, its tile maxima, the primitive offsets: downloads, never uploaded again),
and the permutation, with which a replica on another GPU sorts its own upload
(:func:`replica`) without running the Schwarz kernels again.
"""

from dataclasses import dataclass

import numpy as np

from .codegen import TILE
from .pairs import pair_order, permuted, tile_max


@dataclass(frozen=True, eq=False)
class DevicePairs:
    """Shell pairs of class key = (la, lb) on one backend, in :func:`pair_order`, or the
    pairs of tiles [tile_start, tile_stop) of that class (:meth:`tiles`).

    Device arrays (the backend's array module): sh int32 (npair, 2) shell indices;
    pst int32 (npair+1,) offsets into prim (absolute: a tile slice keeps the class's prim);
    geo float64 (npair, 6) A and A - B (bohr); prim float64 (nprimpair, 5) ζ, P, K
    (:mod:`hartree.gpu.pairs`); q float64 (npair,) Schwarz factors sqrt(max |(ab|ab)|);
    tile_q float64 (ntile,) max of q over each TILE consecutive pairs.
    Host copies (numpy) for planning: q_host (npair,), tile_q_host (ntile,), pst_host
    int64 (npair+1,); q_max: largest q (0 without pairs).
    """

    key: tuple
    sh: object
    pst: object
    geo: object
    prim: object
    q: object
    tile_q: object
    q_host: np.ndarray
    tile_q_host: np.ndarray
    pst_host: np.ndarray
    q_max: float
    tile_start: int
    tile_stop: int

    @property
    def npair(self):
        return int(self.q_host.shape[0])

    def tiles(self, t0, t1):
        """The pairs of tiles [t0, t1) (relative to this record) as a record: views of the
        arrays, prim whole (pst holds absolute offsets), tile range recorded absolute."""
        i0, i1 = t0 * TILE, min(t1 * TILE, self.npair)
        q = self.q_host[i0:i1]
        return DevicePairs(
            key=self.key,
            sh=self.sh[i0:i1],
            pst=self.pst[i0 : i1 + 1],
            geo=self.geo[i0:i1],
            prim=self.prim,
            q=self.q[i0:i1],
            tile_q=self.tile_q[t0:t1],
            q_host=q,
            tile_q_host=self.tile_q_host[t0:t1],
            pst_host=self.pst_host[i0 : i1 + 1],
            q_max=float(q.max()) if len(q) else 0.0,
            tile_start=self.tile_start + t0,
            tile_stop=self.tile_start + t1,
        )


@dataclass(frozen=True, eq=False)
class UnsortedPairs:
    """Device copies of a host PairClass's sh, pst, geo, prim (build order, no q)."""

    key: tuple
    sh: object
    pst: object
    geo: object
    prim: object

    @property
    def npair(self):
        return int(self.sh.shape[0])


def upload(xp, pc):
    """UnsortedPairs of host PairClass `pc` on array module `xp` (the one upload)."""
    return UnsortedPairs((pc.la, pc.lb), xp.asarray(pc.sh), xp.asarray(pc.pst), xp.asarray(pc.geo), xp.asarray(pc.prim))


def _host(x):
    return np.asarray(x.get() if hasattr(x, "get") else x)


def _record(xp, raw, order, q_sorted):
    """DevicePairs of `raw` (UnsortedPairs) permuted by `order`, q_sorted (device) given."""
    sh, pst, geo, prim = permuted(xp, raw.sh, raw.pst, raw.geo, raw.prim, order)
    ntile = (raw.npair + TILE - 1) // TILE
    padded = xp.zeros(ntile * TILE)
    padded[: raw.npair] = q_sorted
    q_host = _host(q_sorted)
    return DevicePairs(
        key=raw.key,
        sh=sh,
        pst=pst,
        geo=geo,
        prim=prim,
        q=q_sorted,
        tile_q=padded.reshape(ntile, TILE).max(axis=1),
        q_host=q_host,
        tile_q_host=tile_max(q_host, TILE),
        pst_host=_host(pst).astype(np.int64),
        q_max=float(q_host.max()) if raw.npair else 0.0,
        tile_start=0,
        tile_stop=ntile,
    )


def sorted_on_device(xp, raw, q):
    """(DevicePairs, permutation as host int64 (npair,)) of `raw` with Schwarz factors q
    (device, build order): sorted by :func:`pair_order` on the device."""
    order = pair_order(raw.pst[1:] - raw.pst[:-1], q, raw.sh, xp)
    return _record(xp, raw, order, q[order]), _host(order)


def replica(xp, raw, order_host, q_sorted_host):
    """DevicePairs of `raw` (another device's upload of the same class) in the order a
    first builder found (order_host, host int64), with its sorted Schwarz factors."""
    return _record(xp, raw, xp.asarray(order_host), xp.asarray(q_sorted_host))
