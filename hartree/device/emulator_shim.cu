// ---- CPU emulation shim (tests only): lets g++ run generated CUDA serially
// (hartree.device.emulator puts it before the source and one cpu_<kernel> loop per kernel)
#include <cmath>
#include <cstddef>
#include <math.h>
#include <algorithm>
#define __device__
#define __global__
#define __forceinline__ inline
#define __constant__ static const
#define __launch_bounds__(...)
struct ht_dim3 { unsigned x, y, z; };
static thread_local ht_dim3 blockIdx, threadIdx, blockDim, gridDim;   // one set per host thread
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline double atomicAdd(double* p, double v) { double o = *p; *p += v; return o; }
using std::sqrt; using std::fmax; using std::fabs; using std::min; using std::max;
#define HT_EMULATION 1           // cooperative kernels (cooperative_kernels.py): one lane per group,
#define __syncwarp(...)          // groups run one after the other
#define __syncthreads()
