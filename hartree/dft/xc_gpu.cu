// hartree/dft/xc_gpu.cu (written by hand, launched by hartree.dft.xc_gpu): the kernels of
// the XC integration on the GPU.  A template: {{maxl}} is filled with the largest l of the
// basis (the shell values are compiled for l = 0..maxl).
//
// Layout (as hartree.dft.ao_kernels on the CPU): a block of m points and k screened
// functions is stored AO-major, (ncomp, k, m) row-major, ncomp 1 (values), 4 (values,
// d/dx, d/dy, d/dz) or 10 (then d2/dxx, dxy, dxz, dyy, dyz, dzz); the blocks of one call
// lie one after the other in `out`, block j at out_start[j].
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

// Component (A, B) of the second derivatives, T = 4..9 of ao_blocks (A <= B; xx, xy, xz,
// yy, yz, zz): with n = (i, j, k) and R2 = sum_q 4 a_q^2 c_q exp(-a_q r^2),
//   d_a d_b phi = x_a x_b P R2 + [delta_ab P + n_a P x_b / x_a + n_b P x_a / x_b] R1
//                 + n_a (n_b - delta_ab) P / (x_a x_b) R0,
// in the order of operations of hartree.dft.ao_kernels._second (equal to rounding).
__device__ __forceinline__ int nonneg(int n) {{ return n > 0 ? n : 0; }}

template <int L, int A, int B>
__device__ __forceinline__ void cartesian2(const double* px, const double* py, const double* pz, double r0,
    double r1, double r2, double* cart)
{{
  int c = 0;
#pragma unroll
  for (int i = L; i >= 0; --i) {{
#pragma unroll
    for (int j = L - i; j >= 0; --j) {{
      const int k = L - i - j;
      const int na = A == 0 ? i : (A == 1 ? j : k);
      const int nb = B == 0 ? i : (B == 1 ? j : k);
      double t = A == B ? px[i] * py[j] * pz[k] : 0.0;
      if (na)
        t += na * px[nonneg(i - (A == 0) + (B == 0))] * py[nonneg(j - (A == 1) + (B == 1))]
             * pz[nonneg(k - (A == 2) + (B == 2))];
      if (nb)
        t += nb * px[nonneg(i + (A == 0) - (B == 0))] * py[nonneg(j + (A == 1) - (B == 1))]
             * pz[nonneg(k + (A == 2) - (B == 2))];
      double v = px[i + (A == 0) + (B == 0)] * py[j + (A == 1) + (B == 1)] * pz[k + (A == 2) + (B == 2)] * r2
                 + t * r1;
      const int sec = na * (nb - (A == B));
      if (sec)
        v += sec * px[nonneg(i - (A == 0) - (B == 0))] * py[nonneg(j - (A == 1) - (B == 1))]
             * pz[nonneg(k - (A == 2) - (B == 2))] * r0;
      cart[c] = v;
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

// Values (and, with deriv, gradients; with SECOND, the second derivatives too) of one shell
// of angular momentum L at one point: component t goes to row + t * tstride.
template <int L, bool SECOND>
__device__ __forceinline__ void shell_values(double dx, double dy, double dz, double r0, double r1, double r2,
    int deriv, int pure, const double* __restrict__ c2s, double* __restrict__ row, long long tstride, int m)
{{
  constexpr int NP = L + (SECOND ? 3 : 2);
  double px[NP], py[NP], pz[NP];
  px[0] = py[0] = pz[0] = 1.0;
#pragma unroll
  for (int n = 1; n < NP; ++n) {{
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
  if constexpr (SECOND) {{
    cartesian2<L, 0, 0>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 4 * tstride, m);
    cartesian2<L, 0, 1>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 5 * tstride, m);
    cartesian2<L, 0, 2>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 6 * tstride, m);
    cartesian2<L, 1, 1>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 7 * tstride, m);
    cartesian2<L, 1, 2>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 8 * tstride, m);
    cartesian2<L, 2, 2>(px, py, pz, r0, r1, r2, cart);
    store<L>(cart, pure, c2s, row + 9 * tstride, m);
  }}
}}

// AO values (and derivatives) of the screened shells of a range of blocks: deriv 0 or 1
// (ao_blocks), or 2 (ao_blocks2, SECOND: a kernel of its own, so that the second derivatives'
// registers do not weigh on the SCF's values and gradients).
//   CUDA block (j, g): grid block j, shells shell_start[j] + g, + gridDim.y, ... of it;
//   thread: points threadIdx.x, + blockDim.x, ... of the block.
// c_q carries libcint's f(l) (hartree.grid.cpu.prepare_basis).
template <bool SECOND>
__device__ __forceinline__ void ao_values(const double* __restrict__ points, const long long* __restrict__ block_start,
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
      double r0 = 0.0, r1 = 0.0, s2 = 0.0;
      for (int q = q0; q < q1; ++q) {{
        const double a = exponents[q];
        const double e = coefficients[q] * exp(-a * r2);
        r0 += e;
        r1 += -2.0 * a * e;
        if (SECOND) s2 += 4.0 * a * a * e;
      }}
      switch (l) {{
        case 0: shell_values<0, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
        case 1: shell_values<1, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#if MAXL >= 2
        case 2: shell_values<2, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 3
        case 3: shell_values<3, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 4
        case 4: shell_values<4, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 5
        case 5: shell_values<5, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#endif
#if MAXL >= 6
        case 6: shell_values<6, SECOND>(dx, dy, dz, r0, r1, s2, deriv, pure, w, rows + p, tstride, m); break;
#endif
        default: break;
      }}
    }}
  }}
}}

#define AO_PARAMS const double* __restrict__ points, const long long* __restrict__ block_start, \
    const long long* __restrict__ shells, const long long* __restrict__ shell_start, \
    const long long* __restrict__ shell_col, const long long* __restrict__ block_nao, \
    const long long* __restrict__ out_start, int deriv, const int* __restrict__ shell_l, \
    const int* __restrict__ shell_nprim, const int* __restrict__ shell_prim_start, \
    const double* __restrict__ shell_center, const double* __restrict__ exponents, \
    const double* __restrict__ coefficients, int pure, const double* __restrict__ c2s, \
    const int* __restrict__ c2s_loc, double* __restrict__ out
#define AO_ARGS points, block_start, shells, shell_start, shell_col, block_nao, out_start, deriv, shell_l, \
    shell_nprim, shell_prim_start, shell_center, exponents, coefficients, pure, c2s, c2s_loc, out

extern "C" __global__ void ao_blocks(AO_PARAMS) {{ ao_values<false>(AO_ARGS); }}

extern "C" __global__ void ao_blocks2(AO_PARAMS) {{ ao_values<true>(AO_ARGS); }}

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

// The per-AO sums of the XC gradient's basis-function term (hartree.dft.xc_gradient, eq. (1),
// before its factor -2; the same sums as hartree.dft.ao_kernels.contract_gradient):
//   sum_p [d_x phi_ip u_ip + sum_y d_xy phi_ip v_y,ip],
//   u = w_rho c_0 + sum_y w_grad,y c_y,   v_y = w_grad,y c_0 + w_tau c_y,
// c_0 = D phi, c_y = D d_y phi (c (1 | 4, k, m)); ao (4 | 10, k, m); coef (ncoef, mc): the
// chunk's weighted rows w_rho (, w_grad x, y, z (, w_tau)), this block's points from column
// p0; ncoef 1 (LDA), 4 (GGA) or 5 (meta-GGA).
// contract_gradient: one group of GRAD_LANES threads (a warp) per AO i and segment s of
// seg_points points (so that a block of few functions and many points still fills the GPU);
// the lanes stride over the segment's points, a shuffle sums them, and lane 0 writes
// partial (nseg, 3, k).  Under the serial emulator a group is one thread.
// add_partials: out[x, index[i]] += sum_s partial[s, x, i], the segments in order (the sum
// is the same in every run: no atomics); out (3, nao), the rows index[i] of one block distinct.
#ifdef HT_EMULATION
#define GRAD_LANES 1
#else
#define GRAD_LANES 32
#endif
extern "C" __global__ void contract_gradient(const double* __restrict__ ao, const double* __restrict__ c,
    const double* __restrict__ coef, int k, int m, int ncoef, int p0, int mc, int seg_points,
    double* __restrict__ partial)
{{
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long g = t / GRAD_LANES;
  const int lane = (int)(t % GRAD_LANES);
  const int i = (int)(g % k);
  const int seg = (int)(g / k);
  const int pa = seg * seg_points;
  if (pa >= m) return;   // whole groups: k x nseg of GRAD_LANES threads
  const int pb = min(m, pa + seg_points);
  const long long km = (long long)k * m;
  const double* a = ao + (long long)i * m;
  const double* ci = c + (long long)i * m;
  const double* w = coef + p0;
  double g0 = 0.0, g1 = 0.0, g2 = 0.0;
  if (ncoef == 1) {{
    for (int p = pa + lane; p < pb; p += GRAD_LANES) {{
      const double u = w[p] * ci[p];
      g0 += a[km + p] * u;
      g1 += a[2 * km + p] * u;
      g2 += a[3 * km + p] * u;
    }}
  }} else {{
    for (int p = pa + lane; p < pb; p += GRAD_LANES) {{
      const double c0 = ci[p], cx = ci[km + p], cy = ci[2 * km + p], cz = ci[3 * km + p];
      const double wx = w[mc + p], wy = w[2 * (long long)mc + p], wz = w[3 * (long long)mc + p];
      const double u = w[p] * c0 + wx * cx + wy * cy + wz * cz;
      double v0 = wx * c0, v1 = wy * c0, v2 = wz * c0;
      if (ncoef > 4) {{
        const double wt = w[4 * (long long)mc + p];
        v0 += wt * cx;
        v1 += wt * cy;
        v2 += wt * cz;
      }}
      const double axy = a[5 * km + p], axz = a[6 * km + p], ayz = a[8 * km + p];
      g0 += a[km + p] * u + a[4 * km + p] * v0 + axy * v1 + axz * v2;
      g1 += a[2 * km + p] * u + axy * v0 + a[7 * km + p] * v1 + ayz * v2;
      g2 += a[3 * km + p] * u + axz * v0 + ayz * v1 + a[9 * km + p] * v2;
    }}
  }}
#if GRAD_LANES > 1
#pragma unroll
  for (int o = GRAD_LANES / 2; o > 0; o /= 2) {{
    g0 += __shfl_down_sync(0xffffffffu, g0, o);
    g1 += __shfl_down_sync(0xffffffffu, g1, o);
    g2 += __shfl_down_sync(0xffffffffu, g2, o);
  }}
#endif
  if (lane == 0) {{
    double* out = partial + (long long)seg * 3 * k + i;
    out[0] = g0;
    out[k] = g1;
    out[2 * (long long)k] = g2;
  }}
}}

extern "C" __global__ void add_partials(const double* __restrict__ partial, int nseg, int k,
    const long long* __restrict__ index, int nao, double* __restrict__ out)
{{
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= 3 * k) return;
  const int x = t / k, i = t % k;
  double s = 0.0;
  for (int seg = 0; seg < nseg; ++seg) s += partial[((long long)seg * 3 + x) * k + i];
  out[(long long)x * nao + index[i]] += s;
}}
