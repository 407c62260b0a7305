
// One region r1 < r2 of R^k, eq. (R1): a = m + 1/2, m = (n1+k)/2, b = (n2-k)/2 >= 1
__device__ __forceinline__ double ht_region(int n1, int n2, double p2, int k, double s, double sqrt_s)
{
    const int m = (n1 + k) >> 1;
    const int b = (n2 - k) >> 1;
    const double a = m + 0.5;
    const double y = p2 / s;
    double term = 1.0, total = 1.0;
    for (int j = 1; j < b; ++j) {
        term *= (a + (j - 1)) * HT_INV[j] * y;      // (a)_j / j! y^j, no division
        total += term;
    }
    double den = 4.0 * sqrt_s;
    for (int j = 0; j < b; ++j) den *= p2;
    for (int j = 0; j < m; ++j) den *= s;
    return HT_GHALF[m] * HT_FACT[b - 1] * total / den;
}

// R^k(n1, p1; n2, p2) of two primitives r^n e^{-p r^2} (both regions)
__device__ __forceinline__ double ht_rk(int n1, double p1, int n2, double p2, int k)
{
    const double s = p1 + p2;
    const double sq = sqrt(s);
    return ht_region(n1, n2, p2, k, s, sq) + ht_region(n2, n1, p1, k, s, sq);
}

// Sum_k c_k R^k(f_a f_b; f_c f_d) over three-term pair densities; ck[k] for k = 0..KMAX-1
__device__ double ht_exch(int fa, int fb, int fc, int fd, const double* __restrict__ ck,
                          const double* __restrict__ fz, const int* __restrict__ fn,
                          const double* __restrict__ f0, const double* __restrict__ f1)
{
    const double s1 = fz[fa] + fz[fb], s2 = fz[fc] + fz[fd];
    const int n1 = fn[fa] + fn[fb], n2 = fn[fc] + fn[fd];
    const double a0 = f0[fa], a1 = f1[fa], b0 = f0[fb], b1 = f1[fb];
    const double c0 = f0[fc], c1 = f1[fc], d0 = f0[fd], d1 = f1[fd];
    const double u[3] = {a0 * b0, a0 * b1 + a1 * b0, a1 * b1};
    const double v[3] = {c0 * d0, c0 * d1 + c1 * d0, c1 * d1};
    const double s = s1 + s2;
    const double sq = sqrt(s);
    double acc = 0.0;
    for (int k = 0; k < HT_KMAX; ++k) {
        const double c = ck[k];
        if (c == 0.0) continue;
        double sum = 0.0;
        for (int x = 0; x < 3; ++x) {
            if (u[x] == 0.0) continue;
            for (int y = 0; y < 3; ++y) {
                if (v[y] == 0.0) continue;
                const int m1 = n1 + 2 * x, m2 = n2 + 2 * y;
                sum += u[x] * v[y] * (ht_region(m1, m2, s2, k, s, sq) + ht_region(m2, m1, s1, k, s, sq));
            }
        }
        acc += c * sum;
    }
    return acc;
}

// ---- one element (i <= j) of each matrix; written at (i, j) and (j, i)
__device__ __forceinline__ void ht_coulomb_elem(long long i, long long j, int nprim, const int* __restrict__ pn,
                                                const double* __restrict__ pp, double* out)
{
    const double r = ht_rk(pn[i], pp[i], pn[j], pp[j], 0);
    out[i * nprim + j] = r;
    out[j * nprim + i] = r;
}

__device__ __forceinline__ void ht_tri_elem(long long i, long long j, int nrow, const int* __restrict__ rf1,
                                            const int* __restrict__ rf2, const int* __restrict__ rblk, int nblk,
                                            const double* __restrict__ ck, const double* __restrict__ fz,
                                            const int* __restrict__ fn, const double* __restrict__ f0,
                                            const double* __restrict__ f1, double* out)
{
    const int p = rf1[i], q = rf2[i], r = rf1[j], s = rf2[j];
    const double* c = ck + (rblk[i] * nblk + rblk[j]) * HT_KMAX;
    double e = ht_exch(p, r, q, s, c, fz, fn, f0, f1);
    if (r != s) e = 0.5 * (e + ht_exch(p, s, q, r, c, fz, fn, f0, f1));   // r = s: E(pr;qr)
    out[i * nrow + j] = e;
    out[j * nrow + i] = e;
}

__device__ __forceinline__ void ht_ls_elem(long long i, long long j, int nrow, const int* __restrict__ rl,
                                           const int* __restrict__ rs, const int* __restrict__ rblk, int nblk,
                                           const double* __restrict__ ck, const double* __restrict__ fz,
                                           const int* __restrict__ fn, const double* __restrict__ f0,
                                           const double* __restrict__ f1, double* out)
{
    const double* c = ck + (rblk[i] * nblk + rblk[j]) * HT_KMAX;
    const double e = ht_exch(rl[i], rl[j], rs[i], rs[j], c, fz, fn, f0, f1);
    out[i * nrow + j] = e;
    out[j * nrow + i] = e;
}

// ---- 2-D mapping: thread (x, y) of a tile -> (i = row, j = column); tiles under the diagonal exit
#define HT_2D(n) \
    const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; \
    const long long i = blockIdx.y * (long long)blockDim.y + threadIdx.y; \
    if (i >= (n) || j >= (n) || j < i) return;

// ---- 1-D mapping (the thesis' grid-stride loop over the packed upper triangle):
//      t -> column j with j(j+1)/2 <= t < (j+1)(j+2)/2 (closed form + fix-up), row i = t - j(j+1)/2
#define HT_1D_LOOP(n) \
    const long long total = (long long)(n) * ((n) + 1) / 2; \
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; \
         t += (long long)blockDim.x * gridDim.x) { \
        long long j = (long long)((sqrt(8.0 * (double)t + 1.0) - 1.0) * 0.5); \
        while (j * (j + 1) / 2 > t) --j; \
        while ((j + 1) * (j + 2) / 2 <= t) ++j; \
        const long long i = t - j * (j + 1) / 2;

extern "C" __global__ void atom_coulomb_prim(int nprim, const int* __restrict__ pn,
                                             const double* __restrict__ pp, double* out)
{
    HT_2D(nprim)
    ht_coulomb_elem(i, j, nprim, pn, pp, out);
}

extern "C" __global__ void atom_exchange_tri(int nrow, const int* __restrict__ rf1, const int* __restrict__ rf2,
                                             const int* __restrict__ rblk, int nblk, const double* __restrict__ ck,
                                             const double* __restrict__ fz, const int* __restrict__ fn,
                                             const double* __restrict__ f0, const double* __restrict__ f1,
                                             double* out)
{
    HT_2D(nrow)
    ht_tri_elem(i, j, nrow, rf1, rf2, rblk, nblk, ck, fz, fn, f0, f1, out);
}

extern "C" __global__ void atom_exchange_ls(int nrow, const int* __restrict__ rl, const int* __restrict__ rs,
                                            const int* __restrict__ rblk, int nblk, const double* __restrict__ ck,
                                            const double* __restrict__ fz, const int* __restrict__ fn,
                                            const double* __restrict__ f0, const double* __restrict__ f1,
                                            double* out)
{
    HT_2D(nrow)
    ht_ls_elem(i, j, nrow, rl, rs, rblk, nblk, ck, fz, fn, f0, f1, out);
}

extern "C" __global__ void atom_coulomb_prim_1d(int nprim, const int* __restrict__ pn,
                                                const double* __restrict__ pp, double* out)
{
    HT_1D_LOOP(nprim)
        ht_coulomb_elem(i, j, nprim, pn, pp, out);
    }
}

extern "C" __global__ void atom_exchange_tri_1d(int nrow, const int* __restrict__ rf1, const int* __restrict__ rf2,
                                                const int* __restrict__ rblk, int nblk, const double* __restrict__ ck,
                                                const double* __restrict__ fz, const int* __restrict__ fn,
                                                const double* __restrict__ f0, const double* __restrict__ f1,
                                                double* out)
{
    HT_1D_LOOP(nrow)
        ht_tri_elem(i, j, nrow, rf1, rf2, rblk, nblk, ck, fz, fn, f0, f1, out);
    }
}

extern "C" __global__ void atom_exchange_ls_1d(int nrow, const int* __restrict__ rl, const int* __restrict__ rs,
                                               const int* __restrict__ rblk, int nblk, const double* __restrict__ ck,
                                               const double* __restrict__ fz, const int* __restrict__ fn,
                                               const double* __restrict__ f0, const double* __restrict__ f1,
                                               double* out)
{
    HT_1D_LOOP(nrow)
        ht_ls_elem(i, j, nrow, rl, rs, rblk, nblk, ck, fz, fn, f0, f1, out);
    }
}
