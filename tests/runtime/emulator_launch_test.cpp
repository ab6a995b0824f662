// The CPU emulator's launch contract (runtime/emulator_shim.h), on hand-written kernels:
// every thread of every block runs exactly once with its blockIdx, threadIdx, blockDim and
// gridDim; __syncthreads orders shared memory within a block; __shfl_xor_sync exchanges
// within a warp of 32.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/emulator.h"

namespace braze {
namespace {

TEST(EmulatorLaunch, EveryThreadOfEveryBlockRunsOnceWithItsIndices) {
  const char* src = R"(
__global__ void each_thread(float* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned id = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  out[id] += 1.0f + id;
}
)";
  const std::array<unsigned, 3> grid = {3, 2, 2}, block = {8, 4, 2};
  std::vector<float> out(3 * 2 * 2 * 8 * 4 * 2, 0.0f);
  runtime::run_emulated_kernel(src, "each_thread", out.data(), grid, block);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], 1.0f + static_cast<float>(i)) << "thread " << i;
}

TEST(EmulatorLaunch, SyncthreadsOrdersSharedMemoryWithinABlock) {
  const char* src = R"(
__global__ void reverse(float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = (float)(blockIdx.x * 1000 + threadIdx.x);
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}
)";
  std::vector<float> out(4 * 128, -1.0f);
  runtime::run_emulated_kernel(src, "reverse", out.data(), {4, 1, 1}, {128, 1, 1});
  for (unsigned b = 0; b < 4; ++b)
    for (unsigned t = 0; t < 128; ++t)
      ASSERT_EQ(out[b * 128 + t], static_cast<float>(b * 1000 + 127 - t)) << b << "," << t;
}

TEST(EmulatorLaunch, ShuffleXorExchangesWithinAWarp) {
  const char* src = R"(
__global__ void butterfly(float* out) {
  float v = (float)threadIdx.x;
  v = __shfl_xor_sync(0xffffffffu, v, 16);
  out[threadIdx.x] = v;
}
)";
  std::vector<float> out(64, -1.0f);
  runtime::run_emulated_kernel(src, "butterfly", out.data(), {1, 1, 1}, {64, 1, 1});
  for (unsigned t = 0; t < 64; ++t) ASSERT_EQ(out[t], static_cast<float>(t ^ 16u)) << "lane " << t;
}

}  // namespace
}  // namespace braze
