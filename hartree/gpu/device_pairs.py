"""Shell pairs of one class on a backend, in their launch order: the typed record the J/K
driver launches with.

The pair data of a class go host -> device once (:func:`upload`); the Schwarz kernel runs on
the unsorted pairs; their Schwarz factors q (npair doubles) come down, the host finds the
order (:func:`hartree.gpu.pairs.pair_order`) and the new primitive rows
(:func:`hartree.gpu.pairs.permutation_rows`), and the pair data are gathered on the device
with those indices (:func:`sorted_on_device`): only the indices go up, the pair data are
never copied back to the host nor uploaded again.  The host keeps small copies it plans
with (q, its tile maxima, the primitive offsets) and the permutation, with which a replica
on another GPU orders its own upload (:func:`replica`) without running the Schwarz kernels
again.
"""

from dataclasses import dataclass

import numpy as np

from .codegen import TILE
from .pairs import pair_order, permutation_rows, tile_max


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
    """Device copies of a host PairClass's sh, pst, geo, prim (build order, no q), and the
    host PairClass itself (``host``: its sh and pst order the pairs)."""

    key: tuple
    sh: object
    pst: object
    geo: object
    prim: object
    host: object

    @property
    def npair(self):
        return int(self.sh.shape[0])


def upload(xp, pc):
    """UnsortedPairs of host PairClass `pc` on array module `xp` (the one upload)."""
    arrays = (xp.asarray(pc.sh), xp.asarray(pc.pst), xp.asarray(pc.geo), xp.asarray(pc.prim))
    return UnsortedPairs((pc.la, pc.lb), *arrays, host=pc)


def _host(x):
    return np.asarray(x.get() if hasattr(x, "get") else x)


def _record(xp, raw, order, q_sorted):
    """DevicePairs of `raw` (UnsortedPairs) in `order` (host int64 (npair,)), with the
    sorted Schwarz factors q_sorted (host float64 (npair,)): gathered on the device."""
    pst_host, rows = permutation_rows(raw.host.pst, order)
    index = xp.asarray(order)
    q = np.ascontiguousarray(q_sorted, dtype=np.float64)
    tile_q = tile_max(q, TILE)
    return DevicePairs(
        key=raw.key,
        sh=raw.sh[index],
        pst=xp.asarray(pst_host.astype(np.int32)),
        geo=raw.geo[index],
        prim=raw.prim[xp.asarray(rows)],
        q=xp.asarray(q),
        tile_q=xp.asarray(tile_q),
        q_host=q,
        tile_q_host=tile_q,
        pst_host=pst_host,
        q_max=float(q.max()) if raw.npair else 0.0,
        tile_start=0,
        tile_stop=len(tile_q),
    )


def sorted_on_device(xp, raw, q):
    """(DevicePairs, permutation as host int64 (npair,)) of `raw` with Schwarz factors q
    (device, build order): the order found on the host from q, the data gathered on the
    device."""
    q_host = _host(q)
    order = pair_order(np.diff(raw.host.pst), q_host, raw.host.sh).astype(np.int64)
    return _record(xp, raw, order, q_host[order]), order


def replica(xp, raw, order_host, q_sorted_host):
    """DevicePairs of `raw` (another device's upload of the same class) in the order a
    first builder found (order_host, host int64), with its sorted Schwarz factors."""
    return _record(xp, raw, np.asarray(order_host, dtype=np.int64), np.asarray(q_sorted_host))
