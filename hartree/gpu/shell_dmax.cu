// hartree/gpu/shell_dmax.cu (written by hand, launched by hartree.gpu.jk_direct):
// max |D| over each shell-pair block (a, b) and all densities; one thread per block
extern "C" __global__ void shell_dmax(const double* __restrict__ dm, int nset, int ncart,
    const int* __restrict__ cart_loc, int nshell, double* __restrict__ out)
{
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nshell * nshell) return;
  const int a = t / nshell, b = t % nshell;
  double m = 0.0;
  for (int s = 0; s < nset; ++s)
    for (int p = cart_loc[a]; p < cart_loc[a + 1]; ++p)
      for (int q = cart_loc[b]; q < cart_loc[b + 1]; ++q)
        m = fmax(m, fabs(dm[((long long)s * ncart + p) * ncart + q]));
  out[t] = m;
}
