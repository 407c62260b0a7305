// hartree/gpu/quartet_screen.cu (written by hand, launched by hartree.gpu.jk_direct): quartet
// screening and compaction, count / write pass (see hartree.gpu.quartet_lists).  TILE and
// FLAG_SHIFT are defined by the launcher (quartet_lists.screen_source).
//
// One block per tile of the item's *staircase* (quartet_lists.TilePlan): block x of a launch
// over bra tiles [row0, row1) is staircase entry g = row_off[row0] + x; its bra tile bt is the
// row holding g (row_off: int64 (nrow + 1,) offsets of the rows), its ket tile the
// (g - row_off[bt])-th of ket_order (ket tiles by decreasing max Q).  The tile bit is bit g.
extern "C" __global__ void __launch_bounds__(256) quartet_screen(
    int nbra, int nket, int tri, int row0, int row1,
    const long long* __restrict__ row_off, const int* __restrict__ ket_order,
    const int* __restrict__ bra_sh, const double* __restrict__ bra_q,
    const double* __restrict__ bra_tq,
    const int* __restrict__ ket_sh, const double* __restrict__ ket_q,
    const double* __restrict__ ket_tq,
    int nshell, const double* __restrict__ dmax_sh, double dmax_all, double threshold,
    int with_j, int with_k, int* __restrict__ cursor, int* __restrict__ qlist, int write,
    int* __restrict__ tile_bits, int use_bits, int product)
{
  const long long tile = row_off[row0] + blockIdx.x;            // staircase entry, its bit
  int lo = row0, hi = row1;                  // row_off[lo] <= tile < row_off[hi]: bisect
  while (hi - lo > 1) {                      // (block-uniform; empty rows share an offset)
    const int mid = (lo + hi) >> 1;
    if (row_off[mid] <= tile) lo = mid; else hi = mid;
  }
  const int bt = lo, kt = ket_order[tile - row_off[lo]];        // bra tile, ket tile
  if (tri && kt > bt) return;
  if (write && use_bits && !((unsigned)tile_bits[tile >> 5] & (1u << (tile & 31)))) return;
  // product = 1 (gradients): the bound of the two-particle density Γ_ijkl is a product of two
  // density blocks, max(|D|_ij |D|_kl, |D|_ik |D|_jl, |D|_il |D|_jk) <= max|D|^2
  const double dbound = product ? dmax_all * dmax_all : dmax_all;
  if (bra_tq[bt] * ket_tq[kt] * dbound < threshold) return;  // whole tile (block-uniform)
  // a warp: 2 bra pairs x 16 neighbouring ket pairs
  const int ib = bt * TILE + threadIdx.x / TILE, ik = kt * TILE + threadIdx.x % TILE;
  int flag = 0;                                     // bit 0: J needed, bit 1: K needed
  if (ib < nbra && ik < nket && !(tri && ik > ib)) {
    const double q = bra_q[ib] * ket_q[ik];
    if (q * dbound >= threshold) {
      const int si = bra_sh[2 * ib], sj = bra_sh[2 * ib + 1];
      const int sk = ket_sh[2 * ik], sl = ket_sh[2 * ik + 1];
      if (product) {                                // listed with both flags
        const double g = fmax(dmax_sh[si * nshell + sj] * dmax_sh[sk * nshell + sl],
                              fmax(dmax_sh[si * nshell + sk] * dmax_sh[sj * nshell + sl],
                                   dmax_sh[si * nshell + sl] * dmax_sh[sj * nshell + sk]));
        if (q * g >= threshold) flag = 3;
      } else {
        if (with_j && q * fmax(dmax_sh[si * nshell + sj], dmax_sh[sk * nshell + sl]) >= threshold)
          flag |= 1;
        if (with_k && q * fmax(fmax(dmax_sh[si * nshell + sk], dmax_sh[si * nshell + sl]),
                               fmax(dmax_sh[sj * nshell + sk], dmax_sh[sj * nshell + sl]))
                          >= threshold)
          flag |= 2;
      }
    }
  }
  const int seg = flag == 3 ? 0 : (flag == 0 ? -1 : flag);  // 0: J and K, 1: J only, 2: K only
  int* cur = cursor + 3 * bt;
  const int entry = (int)((unsigned)ik | ((unsigned)flag << FLAG_SHIFT));
#ifdef __CUDA_ARCH__
  const unsigned lane = threadIdx.x & 31u;
  if (!write && use_bits && __any_sync(0xffffffffu, seg >= 0) && lane == 0u)
    atomicOr((unsigned*)tile_bits + (tile >> 5), 1u << (tile & 31));   // tile has survivors
  for (int g = 0; g < 3; ++g) {                     // warp-aggregated atomics per segment
    const unsigned m = __ballot_sync(0xffffffffu, seg == g);
    if (m == 0u) continue;                          // warp-uniform
    const int leader = __ffs(m) - 1;
    int base = 0;
    if ((int)lane == leader) base = atomicAdd(cur + g, __popc(m));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (write && seg == g) {
      const long long p = base + __popc(m & ((1u << lane) - 1u));
      qlist[2 * p] = ib;
      qlist[2 * p + 1] = entry;
    }
  }
#else                                               // serial emulation (g++): one thread at a time
  if (!write && use_bits && seg >= 0) tile_bits[tile >> 5] |= (int)(1u << (tile & 31));
  if (seg >= 0) {
    const long long p = cur[seg]++;
    if (write) { qlist[2 * p] = ib; qlist[2 * p + 1] = entry; }
  }
#endif
}
