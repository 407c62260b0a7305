#ifdef __CUDA_ARCH__
struct Runs { int end, steps, head; };
__device__ __forceinline__ Runs warp_runs(const long long key)
{
  const int lane = threadIdx.x & 31;
  const long long prev = __shfl_up_sync(0xffffffffu, key, 1);
  const int head = lane == 0 || prev != key;
  const unsigned heads = __ballot_sync(0xffffffffu, head);
  const unsigned above = lane == 31 ? 0u : heads & (0xffffffffu << (lane + 1));
  Runs r;
  r.end = above ? __ffs(above) - 1 : 32;
  r.head = head;
  const int len = __reduce_max_sync(0xffffffffu, (unsigned)(head ? r.end - lane : 1));
  r.steps = len <= 1 ? 0 : 32 - __clz(len - 1);      // ceil(log2(longest run))
  return r;
}
__device__ __forceinline__ void run_add(const Runs& r, double* p, double v)
{
  if (r.steps == 0) { atomicAdd(p, v); return; }      // warp-uniform
  const int lane = threadIdx.x & 31;
  for (int k = 0; k < r.steps; ++k) {
    const double u = __shfl_down_sync(0xffffffffu, v, 1 << k);
    if (lane + (1 << k) < r.end) v += u;
  }
  if (r.head) atomicAdd(p, v);
}
#define WARP_ANY(x) __any_sync(0xffffffffu, (x))
#else
struct Runs { int end; };
static inline Runs warp_runs(const long long) { return Runs{0}; }
static inline void run_add(const Runs&, double* p, double v) { atomicAdd(p, v); }
#define WARP_ANY(x) (x)
#endif
