// hartree/dft/vv10.cu (written by hand, launched by hartree.dft.vv10.CudaPairs): the pair sums
// of VV10 non-local correlation (Vydrov and Van Voorhis, J. Chem. Phys. 133, 244103 (2010);
// the equations are in hartree/dft/vv10.py's docstring).
//
// outer (5, n) row-major: x, y, z (bohr), omega0, kappa of the points i;
// inner (6, m) row-major: x, y, z, omega0, kappa, w n of the points j;
// fuw (3, n): F_i = -3/2 sum_j T_ij, U_i = sum_j T_ij (1/g + 1/(g + g')),
// W_i = sum_j T_ij (1/g + 1/(g + g')) R_ij^2, with T_ij = w_j n_j / (g g' (g + g')),
// g = omega0_i R^2 + kappa_i, g' = omega0_j R^2 + kappa_j.  One division per pair, as the
// numba kernel (hartree.dft.vv10._pair_kernel): d = 1/(g g' (g + g')), T = w n d and
// T (1/g + 1/(g + g')) = T d g' (2g + g').
// One thread per outer point, the inner points in order; the threads of a block read the
// same inner point at once (a broadcast).
extern "C" __global__ void vv10_pairs(const double* __restrict__ outer, int n, const double* __restrict__ inner,
    int m, double* __restrict__ fuw)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double x = outer[i], y = outer[n + i], z = outer[2 * (long long)n + i];
  const double w0 = outer[3 * (long long)n + i], kap = outer[4 * (long long)n + i];
  const double* __restrict__ ix = inner;
  const double* __restrict__ iy = inner + m;
  const double* __restrict__ iz = inner + 2 * (long long)m;
  const double* __restrict__ iw0 = inner + 3 * (long long)m;
  const double* __restrict__ ikap = inner + 4 * (long long)m;
  const double* __restrict__ irw = inner + 5 * (long long)m;
  double f = 0.0, u = 0.0, w = 0.0;
  for (int j = 0; j < m; ++j) {
    const double dx = __ldg(ix + j) - x, dy = __ldg(iy + j) - y, dz = __ldg(iz + j) - z;
    const double r2 = dx * dx + dy * dy + dz * dz;
    const double gp = r2 * __ldg(iw0 + j) + __ldg(ikap + j);
    const double g = r2 * w0 + kap;
    const double gt = g + gp;
    const double d = 1.0 / (g * gp * gt);
    double t = __ldg(irw + j) * d;
    f += t;
    t = t * d * gp * (gt + g);
    u += t;
    w += t * r2;
  }
  fuw[i] = -1.5 * f;
  fuw[n + i] = u;
  fuw[2 * (long long)n + i] = w;
}
