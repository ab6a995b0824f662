// Device memory limits (#21): an engine needing more than the GPU has free fails up front with
// "out of GPU memory", its size and the GPU's free memory, and the process goes on using the
// GPU afterwards. Skips without a GPU.
#include <braze/error.h>
#include <gtest/gtest.h>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/ir.h"
#include "graph/registry.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"

namespace braze {
namespace {

// y = Expand(x, [n]) returned whole: an output of n floats in the engine's arena.
std::shared_ptr<gpu::Engine> expand_engine(int64_t n, graph::Graph& g) {
  const graph::ValueId x = g.add_value("x", DType::Float32, {1});
  g.add_input(x);
  const graph::ValueId s = g.add_constant("s", Tensor::from_int64s({n}, {1}));
  const graph::ValueId y = g.add_value("y", DType::Float32, {n});
  g.add_node(graph::find_op("", "Expand"), "expand", {x, s}, {y}, {});
  g.add_output(y, "y");
  return gpu::Engine::build(g, fusion::make_plan(g, true, codegen::kernel_lowerings()),
                            gpu::default_engine_options());
}

TEST(GpuMemory, AnEngineLargerThanTheGpuFailsUpFrontAndTheGpuStaysUsable) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const int64_t n = static_cast<int64_t>(gpu::device_info().memory_bytes / 4 + (int64_t{1} << 28));
  graph::Graph big;
  auto engine = expand_engine(n, big);
  try {
    gpu::Session session(engine);
    FAIL() << "a session of an engine larger than the GPU was created";
  } catch (const DeviceError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of GPU memory: the engine"), std::string::npos) << m;
    EXPECT_NE(m.find("GiB of intermediates"), std::string::npos) << m;
    EXPECT_NE(m.find("GiB free of"), std::string::npos) << m;
  }
  graph::Graph small;
  auto ok = expand_engine(1000, small);
  gpu::Session session(ok);
  const std::vector<Tensor> in = {Tensor::from_floats({2.5f}, {1})};
  const Tensor got = session.run(in)[0];
  const Tensor want = runtime::run_reference(small, in)[0];
  EXPECT_TRUE(runtime::compare(got, want, {0, 0}).ok);
}

}  // namespace
}  // namespace braze
