// hartree/dft/xc_gpu.cu (written by hand, launched by hartree.dft.xc_gpu): the kernels of
// the XC integration on the GPU.  A template: {{maxl}} is filled with the largest l of the
// basis (the shell values are compiled for l = 0..maxl).
//
// Layout (as hartree.dft.ao_kernels on the CPU): a block of m points and k screened
// functions is stored AO-major, (ncomp, k, m) row-major, ncomp 1 (values) or 4 (values,
// d/dx, d/dy, d/dz); the blocks of one call lie one after the other in `out`, block j at
// out_start[j].
#define MAXL {maxl}

// One component T of the cartesian functions of a shell of angular momentum L at one point:
// T = 0 the values, 1-3 d/dx, d/dy, d/dz.  With P = x^i y^j z^k (px, py, pz the powers of
// the point relative to the shell's centre), R0 = sum_q c_q exp(-a_q r^2) and
// R1 = sum_q (-2 a_q) c_q exp(-a_q r^2):
//   phi = P R0,   d_x phi = x P R1 + i x^(i-1) y^j z^k R0.
// The components run in PySCF's order (i from L down, then j from L - i down), so that
// every loop unrolls and cart stays in registers.
template <int L, int T>
__device__ __forceinline__ void cartesian(const double* px, const double* py, const double* pz, double r0,
    double r1, double* cart)
{{
  int c = 0;
#pragma unroll
  for (int i = L; i >= 0; --i) {{
#pragma unroll
    for (int j = L - i; j >= 0; --j) {{
      const int k = L - i - j;
      if constexpr (T == 0) {{
        cart[c] = px[i] * py[j] * pz[k] * r0;
      }} else if constexpr (T == 1) {{
        cart[c] = px[i + 1] * py[j] * pz[k] * r1;
        if (i) cart[c] += i * px[i > 0 ? i - 1 : 0] * py[j] * pz[k] * r0;
      }} else if constexpr (T == 2) {{
        cart[c] = px[i] * py[j + 1] * pz[k] * r1;
        if (j) cart[c] += j * px[i] * py[j > 0 ? j - 1 : 0] * pz[k] * r0;
      }} else {{
        cart[c] = px[i] * py[j] * pz[k + 1] * r1;
        if (k) cart[c] += k * px[i] * py[j] * pz[k > 0 ? k - 1 : 0] * r0;
      }}
      ++c;
    }}
  }}
}}

// Store one component of a shell's functions at one point: row[f * m] for its functions f,
// the cartesian ones as they are or, for pure shells of L >= 2, C_l^T of them
// (c2s (ncart, 2L+1) row-major: spherical f = sum_c c2s[c, f] cartesian c).
template <int L>
__device__ __forceinline__ void store(const double* cart, int pure, const double* __restrict__ c2s,
    double* __restrict__ row, int m)
{{
  constexpr int NC = (L + 1) * (L + 2) / 2;
  if (pure && L >= 2) {{
    constexpr int NF = 2 * L + 1;
    constexpr int UNROLL = L <= 3 ? NF : 1;   // g and higher: rolled (NVRTC took 28 s for g, 210 s for i)
#pragma unroll UNROLL
    for (int f = 0; f < NF; ++f) {{
      double v = 0.0;
#pragma unroll
      for (int c = 0; c < NC; ++c) {{
        const double w = c2s[c * NF + f];
        if (w != 0.0) v += w * cart[c];
      }}
      row[(long long)f * m] = v;
    }}
  }} else {{
#pragma unroll
    for (int c = 0; c < NC; ++c) row[(long long)c * m] = cart[c];
  }}
}}

// Values (and, with deriv, gradients) of one shell of angular momentum L at one point:
// component t goes to row + t * tstride.
template <int L>
__device__ __forceinline__ void shell_values(double dx, double dy, double dz, double r0, double r1, int deriv,
    int pure, const double* __restrict__ c2s, double* __restrict__ row, long long tstride, int m)
{{
  double px[L + 2], py[L + 2], pz[L + 2];
  px[0] = py[0] = pz[0] = 1.0;
#pragma unroll
  for (int n = 1; n <= L + 1; ++n) {{
    px[n] = px[n - 1] * dx;
    py[n] = py[n - 1] * dy;
    pz[n] = pz[n - 1] * dz;
  }}
  double cart[(L + 1) * (L + 2) / 2];
  cartesian<L, 0>(px, py, pz, r0, r1, cart);
  store<L>(cart, pure, c2s, row, m);
  if (!deriv) return;
  cartesian<L, 1>(px, py, pz, r0, r1, cart);
  store<L>(cart, pure, c2s, row + tstride, m);
  cartesian<L, 2>(px, py, pz, r0, r1, cart);
  store<L>(cart, pure, c2s, row + 2 * tstride, m);
  cartesian<L, 3>(px, py, pz, r0, r1, cart);
  store<L>(cart, pure, c2s, row + 3 * tstride, m);
}}

// AO values (and gradients) of the screened shells of a range of blocks.
//   CUDA block (j, g): grid block j, shells shell_start[j] + g, + gridDim.y, ... of it;
//   thread: points threadIdx.x, + blockDim.x, ... of the block.
// c_q carries libcint's f(l) (hartree.grid.cpu.prepare_basis).
extern "C" __global__ void ao_blocks(const double* __restrict__ points, const long long* __restrict__ block_start,
    const long long* __restrict__ shells, const long long* __restrict__ shell_start,
    const long long* __restrict__ shell_col, const long long* __restrict__ block_nao,
    const long long* __restrict__ out_start, int deriv, const int* __restrict__ shell_l,
    const int* __restrict__ shell_nprim, const int* __restrict__ shell_prim_start,
    const double* __restrict__ shell_center, const double* __restrict__ exponents,
    const double* __restrict__ coefficients, int pure, const double* __restrict__ c2s,
    const int* __restrict__ c2s_loc, double* __restrict__ out)
{{
  const int j = blockIdx.x;
  const long long p0 = block_start[j];
  const int m = (int)(block_start[j + 1] - p0);
  const long long tstride = block_nao[j] * m;
  double* blk = out + out_start[j];
  for (long long js = shell_start[j] + blockIdx.y; js < shell_start[j + 1]; js += gridDim.y) {{
    const long long sh = shells[js];
    double* rows = blk + shell_col[js] * m;
    const int l = shell_l[sh];
    const double* w = c2s + c2s_loc[l];
    const int q0 = shell_prim_start[sh], q1 = q0 + shell_nprim[sh];
    const double cx = shell_center[3 * sh], cy = shell_center[3 * sh + 1], cz = shell_center[3 * sh + 2];
    for (int p = threadIdx.x; p < m; p += blockDim.x) {{
      const double dx = points[3 * (p0 + p)] - cx;
      const double dy = points[3 * (p0 + p) + 1] - cy;
      const double dz = points[3 * (p0 + p) + 2] - cz;
      const double r2 = dx * dx + dy * dy + dz * dz;
      double r0 = 0.0, r1 = 0.0;
      for (int q = q0; q < q1; ++q) {{
        const double a = exponents[q];
        const double e = coefficients[q] * exp(-a * r2);
        r0 += e;
        r1 += -2.0 * a * e;
      }}
      switch (l) {{
        case 0: shell_values<0>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
        case 1: shell_values<1>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#if MAXL >= 2
        case 2: shell_values<2>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 3
        case 3: shell_values<3>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 4
        case 4: shell_values<4>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 5
        case 5: shell_values<5>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 6
        case 6: shell_values<6>(dx, dy, dz, r0, r1, deriv, pure, w, rows + p, tstride, m); break;
#endif
        default: break;
      }}
    }}
  }}
}}

// out[x, p] = sum_i ao[x, i, p] c[i, p], x < nrow: rho = sum_mu (D phi)_mu phi_mu and the
// grad rho rows (times 1/2).  ao (>= nrow, k, m), c (k, m), out (nrow, m); thread (p, x).
extern "C" __global__ void contract_rows(const double* __restrict__ ao, const double* __restrict__ c, int k,
    int m, int nrow, double* __restrict__ out)
{{
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = blockIdx.y;
  if (p >= m || x >= nrow) return;
  const double* a = ao + (long long)x * k * m + p;
  double s = 0.0;
  for (int i = 0; i < k; ++i) s += a[(long long)i * m] * c[(long long)i * m + p];
  out[(long long)x * m + p] = s;
}}

// out[p] = 1/2 sum_x sum_i ao[1 + x, i, p] c1[x, i, p]: tau = 1/2 sum D grad phi . grad phi,
// c1 = D grad phi (3, k, m).
extern "C" __global__ void contract_tau(const double* __restrict__ ao, const double* __restrict__ c1, int k, int m,
    double* __restrict__ out)
{{
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  double s = 0.0;
  for (int x = 0; x < 3; ++x)
    for (int i = 0; i < k; ++i)
      s += ao[((long long)(1 + x) * k + i) * m + p] * c1[((long long)x * k + i) * m + p];
  out[p] = 0.5 * s;
}}

// out[i, p] = sum_{{x < nrow}} coef[x, p] ao[x, i, p]: the weighted functions w_rho phi / 2 +
// sum_x w_grad,x d_x phi whose product with phi^T is half of V_xc.  Thread (p, i, i + gridDim.y, ...).
extern "C" __global__ void scale_rows(const double* __restrict__ ao, const double* __restrict__ coef, int k,
    int m, int nrow, double* __restrict__ out)
{{
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  for (int i = blockIdx.y; i < k; i += gridDim.y) {{
    double s = coef[p] * ao[(long long)i * m + p];
    for (int x = 1; x < nrow; ++x) s += coef[(long long)x * m + p] * ao[((long long)x * k + i) * m + p];
    out[(long long)i * m + p] = s;
  }}
}}
