// RI-MP2 energy sums of one (ia|jb) block (launched by hartree/mp2/pair_energy.py); the
// element (ia|jb) is V(ii*nv1 + a, jj*nv2 + b) of a row-major block matrix read through a
// loader:
//   mp2_block_energy_f64 / _f32: V stored (double / float), leading dimension ld;
//   mp2_block_energy_ozaki<S> (S = 1..8 slices): V formed on the fly from the INT32 diagonal
//   products of the Ozaki split (hartree/linalg/ozaki.py eq. 2):
//   V = (sum_{t<S} 2^(-7 (S+1-t)) P_t) sa_r sb_c, sa = 1/ia, sb = 1/ib (powers of two): every
//   product is exact, so the values are bit for bit those of mgemm_gpu's hartree_ozaki_sum
//   (ldexp, division); no FP64 block is written or read, the S INT32 loads of an element are
//   issued together (S is a template parameter: a run-time loop serialised them, 3x slower).
// Sums in double:
// out[0] += w (ia|jb)^2 / D,  out[1] += w (ia|jb)(ib|ja) / D  (same spin only),
// D = e_i + e_j - e_a - e_b, w = 2 (j < i), 1 (j = i or not same), 0 (j > i).
// grid (ni*nj, ceil(nv1/32), ceil(nv2/32)), block (32, 8); 32x32 tiles via shared memory,
// warp-shuffle reduction, one atomic per warp in shared memory and one per block in global.
template <typename T> struct Stored {
  const T* __restrict__ v; long long ld;
  __device__ __forceinline__ double operator()(long long r, long long c) const {
    return (double)v[r * ld + c];
  }
};
template <int S> struct Ozaki {          // S slices: S INT32 loads issued together
  const int* __restrict__ p; const double* __restrict__ sa; const double* __restrict__ sb;
  long long pstride, ld; double w0;                                  // w0 = 2^(-7 (S+1))
  __device__ __forceinline__ double operator()(long long r, long long c) const {
    const int* q = p + r * ld + c;
    int v[S];
#pragma unroll
    for (int t = 0; t < S; ++t) v[t] = q[t * pstride];
    double s = 0.0, w = w0;
#pragma unroll
    for (int t = 0; t < S; ++t, w *= 128.0) s += (double)v[t] * w;  // exact products
    return s * sa[r] * sb[c];                                        // exact: powers of two
  }
};

template <typename L>
__device__ void block_energy(const L val, int ni, int nv1, int nj, int nv2,
    const double* __restrict__ eo1, const double* __restrict__ ev1,
    const double* __restrict__ eo2, const double* __restrict__ ev2, int i0, int j0, int same,
    double* __restrict__ out)
{
  __shared__ double ta[32][33];
  __shared__ double tb[32][33];
  __shared__ double red[2];
  const int ii = blockIdx.x / nj, jj = blockIdx.x % nj;
  const int i = i0 + ii, j = j0 + jj;
  if (same && j > i) return;
  const double w = (same && j < i) ? 2.0 : 1.0;
  const int a0 = blockIdx.y * 32, b0 = blockIdx.z * 32;
  const long long r0 = (long long)ii * nv1, c0 = (long long)jj * nv2;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (tx == 0 && ty == 0) { red[0] = 0.0; red[1] = 0.0; }
  for (int r = ty; r < 32; r += 8) {
    const int a = a0 + r, b = b0 + tx;
    ta[r][tx] = (a < nv1 && b < nv2) ? val(r0 + a, c0 + b) : 0.0;            // (ia|jb)
    if (same) {
      const int bb = b0 + r, aa = a0 + tx;
      tb[r][tx] = (bb < nv1 && aa < nv2) ? val(r0 + bb, c0 + aa) : 0.0;       // tb[b][a] = (ib|ja)
    }
  }
  __syncthreads();
  const double eij = eo1[i] + eo2[j];
  double sd = 0.0, sx = 0.0;
  const int b = b0 + tx;
  for (int r = ty; r < 32; r += 8) {
    const int a = a0 + r;
    if (a < nv1 && b < nv2) {
      const double x = ta[r][tx];
      const double t = x / (eij - ev1[a] - ev2[b]);
      sd += t * x;
      if (same) sx += t * tb[tx][r];
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    sd += __shfl_down_sync(0xffffffffu, sd, o);
    sx += __shfl_down_sync(0xffffffffu, sx, o);
  }
  if (tx == 0) {
    atomicAdd(&red[0], sd);
    if (same) atomicAdd(&red[1], sx);
  }
  __syncthreads();
  if (tx == 0 && ty == 0) {
    atomicAdd(out, w * red[0]);
    if (same) atomicAdd(out + 1, w * red[1]);
  }
}

#define ARGS int ni, int nv1, int nj, int nv2, const double* __restrict__ eo1, \
    const double* __restrict__ ev1, const double* __restrict__ eo2, \
    const double* __restrict__ ev2, int i0, int j0, int same, double* __restrict__ out
#define PASS ni, nv1, nj, nv2, eo1, ev1, eo2, ev2, i0, j0, same, out
extern "C" __global__ void __launch_bounds__(256)
mp2_block_energy_f64(const double* __restrict__ v, long long ld, ARGS)
{ block_energy(Stored<double>{v, ld}, PASS); }
extern "C" __global__ void __launch_bounds__(256)
mp2_block_energy_f32(const float* __restrict__ v, long long ld, ARGS)
{ block_energy(Stored<float>{v, ld}, PASS); }
#define OZAKI(S) extern "C" __global__ void __launch_bounds__(256) \
mp2_block_energy_ozaki##S(const int* __restrict__ p, long long pstride, long long ld, \
    double w0, const double* __restrict__ sa, const double* __restrict__ sb, ARGS) \
{ block_energy(Ozaki<S>{p, sa, sb, pstride, ld, w0}, PASS); }
OZAKI(1) OZAKI(2) OZAKI(3) OZAKI(4) OZAKI(5) OZAKI(6) OZAKI(7) OZAKI(8)
