"""Quartet lists for the J/K kernels: screening and compaction (stream compaction).

The J/K kernels (``jk_kernels._jk_kernel``) run one unique shell quartet (ij|kl) per thread
over a *list* of the quartets of one class that survive screening, so that every lane of
a warp does useful work however sparse the density is.  The list of one launch item
(class, bra pairs P, ket pairs Q, triangular flag) is built by ``quartet_screen`` in two
passes over the TILE x TILE tiles of (bra pair, ket pair) of the item's *staircase*
(:class:`TilePlan`):

0. *staircase* (host, per item and call): ket tiles sorted once by decreasing max_tile(Q_kl)
   (:func:`ket_order`); bra tile ("row") r keeps the first n_r of them, those with
   max_tile(Q_ij) max_tile(Q_kl) max|D| >= threshold (by a relative margin
   ``STAIR_MARGIN``: the kernel repeats the exact test), found by bisection
   (:func:`row_offsets`).  One block per staircase entry, so a launch costs the tiles that
   can pass the tile test, not all (bra tile, ket tile): for an extended molecule most
   pairs are negligible (far-apart shells) and the full grid grows as pairs² ~ N⁴
   ((alanine)30 / 6-31G: 8.8e8 blocks a pass, of which 6.7e6 pass; the staircase has 9.5e6);
1. *count* (``write = 0``): per bra tile r and segment g the number of quartets
   that survive, ``counts[3 r + g]``, and one bit per staircase tile that holds
   a survivor (``tile_bits``, when ``use_bits``);
2. *write* (``write = 1``): tiles without survivors return at once (their bit); in the
   others the same test; each survivor is stored at
   ``cursor[3 r + g]++`` (warp-aggregated atomics: one atomicAdd per warp and segment),
   the cursors starting at offsets the host computed from the counts
   (:func:`plan_chunks`).

Screening of a quartet (Cauchy-Schwarz, Häser & Ahlrichs 1989), Q_ij = sqrt((ij|ij)):

    tile:     max_tile(Q_ij) max_tile(Q_kl) max|D|                           < threshold
    J needed: Q_ij Q_kl max(|D|_ij, |D|_kl)                                   >= threshold
    K needed: Q_ij Q_kl max(|D|_ik, |D|_il, |D|_jk, |D|_jl)                   >= threshold

with |D|_ab the largest |D| of shell block (a, b) over all densities.  For gradients
(``product``) the contraction is with the two-particle density Γ_ijkl, a sum of products of
two density elements, so the bound is a product (as the CPU reference,
:mod:`hartree.integrals.eri_deriv`):

    tile:     max_tile(Q_ij) max_tile(Q_kl) max|D|^2                                < threshold
    listed:   Q_ij Q_kl max(|D|_ij |D|_kl, |D|_ik |D|_jl, |D|_il |D|_jk)           >= threshold

(with both flags).  The tile test takes the global max|D|, the quartet tests each quartet's
own density blocks (those of the CPU engine, :mod:`hartree.integrals.jk`).  A tile bound
from the tile's own blocks (max over its quartets) would leave the listed quartets as they
are and drop few more tiles: counted for (alanine)30 / 6-31G (Hückel density), 13 % of the
J/K tiles and 31 % of the gradient's, each block then paying ~1024 density loads (32 x 32
shells) to save at most 256 quartet tests; it is not used.

A quartet is listed when J or K is needed; its entry is the int32 pair (ib, ik | flags << 30),
flags bit 0: J needed, bit 1: K needed.  Segments g: 0 = J and K, 1 = J only, 2 = K only;
the list of a chunk of rows holds segment 0 of its rows, then segment 1, then segment 2, so
warps see one flag value except at two boundaries.  Within a segment entries keep the tile
order: a warp of the screening kernel covers 2 bra pairs x 16 neighbouring ket pairs and
writes its survivors in lane order, so a warp of the J/K kernel mostly sees one or two bra
pairs and a run of neighbouring ket pairs (similar primitive counts, shells in index order
within a decade of Schwarz factors: :func:`hartree.gpu.pairs.pair_order`).

Lists are cut into chunks of whole rows holding at most ``capacity`` entries (the
memory budget, :mod:`hartree.gpu.memory`); chunks are packed into a buffer that is
reused wave after wave.
"""

from dataclasses import dataclass

import numpy as np

from hartree.device import cuda_source

from . import codegen

SCREEN_PARAMS = [
    ("int", "nbra"),
    ("int", "nket"),
    ("int", "tri"),
    ("int", "row0"),
    ("int", "row1"),
    ("const long long*", "row_off"),
    ("const int*", "ket_order"),
    ("const int*", "bra_sh"),
    ("const double*", "bra_q"),
    ("const double*", "bra_tq"),
    ("const int*", "ket_sh"),
    ("const double*", "ket_q"),
    ("const double*", "ket_tq"),
    ("int", "nshell"),
    ("const double*", "dmax_sh"),
    ("double", "dmax_all"),
    ("double", "threshold"),
    ("int", "with_j"),
    ("int", "with_k"),
    ("int*", "cursor"),
    ("int*", "qlist"),
    ("int", "write"),
    ("int*", "tile_bits"),
    ("int", "use_bits"),
    ("int", "product"),
]

#: entries of one list buffer at most (int32 pairs: 8 bytes each); also bounded by the
#: memory budget (:func:`list_capacity`)
MAX_ENTRIES = 1 << 29

#: fraction of the memory budget the quartet lists may take
LIST_FRACTION = 0.25

#: the count pass marks tiles holding survivors (one bit per tile) when all items' bits
#: take at most this many bytes, so the write pass skips the empty tiles at once
MAX_TILE_BIT_BYTES = 1 << 28

#: the staircase keeps ket tiles whose tile product reaches threshold (1 - STAIR_MARGIN):
#: a superset of those the kernel's test (rounded products) keeps
STAIR_MARGIN = 1e-9

#: most blocks of one screening launch (CUDA's limit of gridDim.x); larger row ranges are
#: launched in pieces of whole rows
MAX_BLOCKS = (1 << 31) - 1


@dataclass(frozen=True, eq=False)
class TilePlan:
    """The tiles the screening kernel visits for one launch item: its staircase.

    offsets: host int64 (ntb + 1,), row r (bra tile r) holds staircase entries
    [offsets[r], offsets[r+1]), the first offsets[r+1] - offsets[r] ket tiles of the ket
    order; dev_offsets: their device copy; order: device int32 (ntk,), ket tiles by
    decreasing max Q; rank: host int64 (ntk,), each ket tile's position in that order."""

    offsets: np.ndarray
    dev_offsets: object
    order: object
    rank: np.ndarray

    @property
    def blocks(self):
        """Staircase entries (blocks of a count pass over every row)."""
        return int(self.offsets[-1])

    def bit_words(self):
        """int32 words of the item's tile bits: one bit per staircase entry."""
        return (self.blocks + 31) // 32

    def position(self, bt, kt):
        """Staircase entry (block and tile bit) of tile (bra bt, ket kt), or -1 if absent."""
        r = int(self.rank[kt])
        return int(self.offsets[bt]) + r if r < self.offsets[bt + 1] - self.offsets[bt] else -1


def ket_order(tile_q):
    """(order int64 (ntk,), sorted maxima float64 (ntk,)): ket tiles by decreasing max Q,
    ties in index order."""
    tq = np.asarray(tile_q, dtype=np.float64)
    order = np.argsort(-tq, kind="stable")
    return order, tq[order]


def row_offsets(bra_tile_q, ket_sorted, dbound, threshold):
    """int64 (ntb + 1,) offsets of the staircase rows: bra tile r keeps the ket tiles k
    (sorted by decreasing max Q, ``ket_sorted``) with
    bra_tile_q[r] ket_sorted[k] dbound >= threshold (1 - STAIR_MARGIN), a prefix."""
    tb = np.asarray(bra_tile_q, dtype=np.float64) * float(dbound)
    with np.errstate(divide="ignore"):
        need = np.where(tb > 0, threshold * (1.0 - STAIR_MARGIN) / np.where(tb > 0, tb, 1.0), np.inf)
    n = np.searchsorted(-np.asarray(ket_sorted, dtype=np.float64), -need, side="right")
    out = np.zeros(len(tb) + 1, dtype=np.int64)
    np.cumsum(n, out=out[1:])
    return out


def tile_plan(builder, P, Q, dmax_all, product=None):
    """TilePlan of the item (P, Q) on `builder`'s device (a DirectJK: its threshold, array
    module and ``_ket_orders`` cache) for max |D| dmax_all; product: the threshold of the
    gradients' Γ screening (the tile bound is then dmax_all²), or None (J/K)."""
    key = (Q.key, Q.tile_start, Q.tile_stop)
    if key not in builder._ket_orders:
        order, tq = ket_order(Q.tile_q_host)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        builder._ket_orders[key] = (builder.xp.asarray(order.astype(np.int32)), tq, rank)
    order, tq, rank = builder._ket_orders[key]
    if product is None:
        offs = row_offsets(P.tile_q_host, tq, dmax_all, builder.threshold)
    else:
        offs = row_offsets(P.tile_q_host, tq, dmax_all * dmax_all, product)
    return TilePlan(offs, builder.xp.asarray(offs), order, rank)


def launch_rows(offsets, row0, row1, max_blocks=MAX_BLOCKS):
    """[(r0, r1, blocks)]: rows [row0, row1) cut into launches of whole rows holding at
    most max_blocks staircase entries each (a longer row alone), empty launches left out."""
    out = []
    r = row0
    while r < row1:
        end = int(np.searchsorted(offsets, offsets[r] + max_blocks, side="right")) - 1
        r1 = min(row1, max(end, r + 1))
        if offsets[r1] > offsets[r]:
            out.append((r, r1, int(offsets[r1] - offsets[r])))
        r = r1
    return out


def screen(builder, plan, P, Q, tri, dmax_sh, dmax_all, with_j, with_k, cursor, qlist, rows, stream, bits, product):
    """Count (qlist None) or write pass of ``quartet_screen`` over the staircase rows
    [rows[0], rows[1]) of `plan`; bits: the item's tile bits (count pass sets, write pass
    reads) or None; product: the threshold of gradients' Γ screening, or None (J/K)."""
    i32, f64 = np.int32, np.float64
    for r0, r1, nblock in launch_rows(plan.offsets, *rows):
        builder._screen_mod.launch(
            "quartet_screen",
            (nblock,),
            codegen.TILE**2,
            [
                *map(i32, (P.npair, Q.npair, tri, r0, r1)),
                plan.dev_offsets,
                plan.order,
                P.sh,
                P.q,
                P.tile_q,
                Q.sh,
                Q.q,
                Q.tile_q,
                i32(builder.basis.nshell),
                dmax_sh,
                f64(dmax_all),
                f64(builder.threshold if product is None else product),
                i32(with_j),
                i32(with_k),
                cursor,
                builder._dummy if qlist is None else qlist,
                i32(qlist is not None),
                builder._dummy if bits is None else bits,
                i32(bits is not None),
                i32(product is not None),
            ],
            stream=stream,
        )


def screen_source():
    """Source of the screening module: ``quartet_screen.cu`` (hand-written) after TILE and the
    flag shift as macros."""
    from .jk_kernels import LIST_FLAG_SHIFT

    text = cuda_source.read("hartree.gpu", "quartet_screen.cu")
    return f"#define TILE {codegen.TILE}\n#define FLAG_SHIFT {LIST_FLAG_SHIFT}\n" + text


def list_capacity(budget_bytes):
    """Entries a list buffer may hold under a memory budget (bytes; inf allowed)."""
    if budget_bytes == float("inf"):
        return MAX_ENTRIES
    return int(max(1 << 12, min(MAX_ENTRIES, budget_bytes * LIST_FRACTION // 8)))


def plan_chunks(counts, capacity):
    """Cut one item's rows into chunks of at most `capacity` entries (a row larger than
    that is a chunk alone).

    counts: int (nrow, 3), survivors per bra tile and segment.  Returns a list of
    (row0, row1, n, offsets) with n the chunk's entries and offsets int64 (row1-row0, 3):
    position of the first entry of (row, segment) in the chunk's list (segment-major)."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    rows = counts.sum(axis=1)
    cum = np.concatenate([[0], np.cumsum(rows)])
    busy = np.flatnonzero(rows)  # rows with entries (most rows of a large item have none)
    out = []
    k = 0
    while k < len(busy):
        r = int(busy[k])  # a chunk: rows r .. up to the first that would overflow it
        r1 = max(r + 1, int(np.searchsorted(cum, cum[r] + capacity, side="right")) - 1)
        n = int(cum[r1] - cum[r])
        c = counts[r:r1]
        seg_start = np.concatenate([[0], np.cumsum(c.sum(axis=0))[:-1]])
        within = np.cumsum(c, axis=0) - c  # exclusive prefix over rows
        out.append((r, r1, n, within + seg_start[None, :]))
        k = int(np.searchsorted(busy, r1))
    return out


def pack_waves(chunks, capacity):
    """Assign chunks [(item index, chunk)] to waves of one buffer: returns
    (buffer entries, [[(item index, chunk, base offset)], ...]); a wave holds chunks
    until the next one does not fit in `capacity` (or the largest chunk) entries."""
    size = max([capacity] + [c[2] for _, c in chunks]) if chunks else 0
    size = min(size, sum(c[2] for _, c in chunks)) if chunks else 0
    waves, cur, used = [], [], 0
    for k, ch in chunks:
        if cur and used + ch[2] > size:
            waves.append(cur)
            cur, used = [], 0
        cur.append((k, ch, used))
        used += ch[2]
    if cur:
        waves.append(cur)
    return size, waves


def tile_lanes(P, Q, tri, dmax_all, threshold):
    """Threads of the TILE x TILE tiles of (P, Q) that pass the tile test
    max Q_ij max Q_kl max|D| >= threshold and hold a unique quartet: the lanes a kernel
    with one tile per block keeps busy (occupancy statistics against the listed quartets).  O(n log n) in the
    tile counts: ket tiles sorted by their largest Schwarz factor."""
    T = codegen.TILE
    tb, tk = np.asarray(P.tile_q_host), np.asarray(Q.tile_q_host)
    nb = np.minimum(T, P.npair - T * np.arange(len(tb))).astype(np.float64)
    nk = np.minimum(T, Q.npair - T * np.arange(len(tk))).astype(np.float64)
    order = np.argsort(-tk, kind="stable")
    csum = np.concatenate([[0.0], np.cumsum(nk[order])])
    # ket tiles passing with bra tile b: tk >= threshold / (tb dmax_all)
    with np.errstate(divide="ignore"):
        need = np.where(tb > 0, threshold / (tb * dmax_all), np.inf)
    npass = np.searchsorted(-tk[order], -need, side="right")
    full = float((nb * csum[npass]).sum())
    if not tri:
        return int(full)
    diag = tb * tb * dmax_all >= threshold
    return int((full - float((nb * nb)[diag].sum())) / 2 + float((nb * (nb + 1) / 2)[diag].sum()))
