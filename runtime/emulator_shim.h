// The CPU emulator's stand-ins for CUDA, prepended (after graph/half.h) to a generated
// kernel so g++ can compile it. Kernels run with their launch grid; a block with one
// thread runs in the caller's thread, a larger block runs its threads concurrently with a
// barrier for __syncthreads and, per warp of 32, a barrier and exchange slots for the warp
// shuffles. __shared__ variables become function statics: blocks run one at a time, so
// they are shared by exactly one block's threads, as on the GPU.
#define BRAZE_CPU_EMULATION 1
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
#include <math.h>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __restrict__ __restrict

using std::isfinite;
using std::isinf;
using std::isnan;

struct braze_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
static thread_local braze_dim3 threadIdx, blockIdx;
static braze_dim3 blockDim, gridDim;
static thread_local std::barrier<>* braze_emu_barrier = nullptr;

struct braze_emu_warp {
  std::barrier<> bar{32};
  unsigned long long slot[32];
};
static thread_local braze_emu_warp* braze_emu_my_warp = nullptr;
static thread_local unsigned braze_emu_lane = 0;

inline void __syncthreads() {
  if (braze_emu_barrier) braze_emu_barrier->arrive_and_wait();
}

inline void __syncwarp(unsigned = 0xffffffffu) {
  if (braze_emu_my_warp) braze_emu_my_warp->bar.arrive_and_wait();
}

template <class T>
T __shfl_xor_sync(unsigned, T v, int off) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  braze_emu_warp* w = braze_emu_my_warp;
  if (!w) return v;  // a lone thread: its partners would be itself
  std::memcpy(&w->slot[braze_emu_lane], &v, sizeof(T));
  w->bar.arrive_and_wait();
  T r;
  std::memcpy(&r, &w->slot[braze_emu_lane ^ static_cast<unsigned>(off)], sizeof(T));
  w->bar.arrive_and_wait();
  return r;
}

// Warp-wide instructions (ldmatrix, mma in codegen/device/mma.cuh): every lane publishes a
// pointer, `f` runs with all 32 of them, and no lane leaves before every lane is done, so
// the data pointed to stays valid while partners read it.
template <class F>
void braze_emu_warp_exchange(const void* mine, F&& f) {
  braze_emu_warp* w = braze_emu_my_warp;
  if (!w) {
    std::fprintf(stderr, "emulator: a warp-wide instruction outside a full warp\n");
    std::abort();
  }
  w->slot[braze_emu_lane] = reinterpret_cast<unsigned long long>(mine);
  w->bar.arrive_and_wait();
  const void* all[32];
  for (int i = 0; i < 32; ++i) all[i] = reinterpret_cast<const void*>(w->slot[i]);
  f(all);
  w->bar.arrive_and_wait();
}

inline float __fdividef(float a, float b) { return a / b; }
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, 8);
  return d;
}
inline int atomicCAS(int* p, int cmp, int v) {
  int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return old;
}

struct __half {
  unsigned short bits;
};
struct __nv_bfloat16 {
  unsigned short bits;
};
inline float __half2float(__half h) { return braze::half_to_float(h.bits); }
inline __half __float2half_rn(float f) { return __half{braze::float_to_half(f)}; }
inline float __bfloat162float(__nv_bfloat16 h) { return braze::bf16_to_float(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{braze::float_to_bf16(f)}; }

// Runs `entry` over the grid: blocks one after another, each block's threads together.
static void braze_emu_run(const std::function<void()>& entry, braze_dim3 grid, braze_dim3 block) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        if (threads == 1) {
          blockIdx = {bx, by, bz};
          threadIdx = {0, 0, 0};
          entry();
          continue;
        }
        std::barrier<> barrier(threads);
        std::vector<braze_emu_warp> warps((threads + 31) / 32);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            blockIdx = {bx, by, bz};
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            braze_emu_barrier = &barrier;
            braze_emu_my_warp = threads % 32 == 0 ? &warps[t / 32] : nullptr;
            braze_emu_lane = t % 32;
            entry();
          });
        for (auto& th : pool) th.join();
      }
}
