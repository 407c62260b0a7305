// Ozaki split on the GPU: slicing, row maxima and sums, diagonal summation
// (launched by hartree/linalg/mgemm_gpu.py; equations of hartree/linalg/ozaki.py)

extern "C" __global__ void hartree_ozaki_slice(
    const double* __restrict__ x, const double* __restrict__ inv, signed char* __restrict__ out,
    long long rows, long long cols, long long ldo, int nslice, int reverse)
{
    // eq. (1) of hartree/linalg/ozaki.py: t = 128 r, q = rint(t), r <- t - q (exact)
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols) return;
    long long i = idx / cols, p = idx - i * cols;
    double r = x[idx] * inv[i];
    signed char* o = out + i * (long long)nslice * ldo + p;
    for (int s = 0; s < nslice; ++s) {
        double t = r * 128.0;
        double q = rint(t);                 // nearest, ties to even (numpy's rint)
        o[(long long)(reverse ? nslice - 1 - s : s) * ldo] = (signed char)q;
        r = t - q;
    }
}

extern "C" __global__ void hartree_row_absmax_sum(
    const double* __restrict__ x, long long cols, double* __restrict__ amax,
    double* __restrict__ asum)
{
    // one block (256 threads) per row: max_p |x_ip| and sum_p |x_ip| in one pass
    __shared__ double smax[256];
    __shared__ double ssum[256];
    long long i = blockIdx.x;
    double m = 0.0, s = 0.0;
    for (long long p = threadIdx.x; p < cols; p += blockDim.x) {
        double v = fabs(x[i * cols + p]);
        m = fmax(m, v);
        s += v;
    }
    smax[threadIdx.x] = m;
    ssum[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            smax[threadIdx.x] = fmax(smax[threadIdx.x], smax[threadIdx.x + w]);
            ssum[threadIdx.x] += ssum[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        amax[i] = smax[0];
        asum[i] = ssum[0];
    }
}

extern "C" __global__ void hartree_ozaki_sum(
    const int* __restrict__ p, long long pstride, long long ldp, int nd, int first_d,
    const double* __restrict__ inv_a, const double* __restrict__ inv_b,
    double* __restrict__ c, long long m, long long n)
{
    // eq. (2): c_ij = (sum_{d = S+1 .. 2} 2^(-7 d) P_d[i,j]) / inv_a[i] / inv_b[j], the
    // smallest diagonal first; ldexp is exact, so each step rounds once (as on the CPU)
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * n) return;
    long long i = idx / n, j = idx - i * n;
    double s = 0.0;
    for (int t = 0; t < nd; ++t)
        s += ldexp((double)p[t * pstride + i * ldp + j], -7 * (first_d - t));
    c[idx] = s / inv_a[i] / inv_b[j];
}
