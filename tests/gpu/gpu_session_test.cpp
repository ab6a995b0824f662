// A session's first kernel reads weights that have landed: cuMemcpyHtoD from pageable memory
// returns once the bytes are staged, before their DMA completes, and sessions launch on a
// non-blocking stream that does not wait for the legacy stream's copies. A large weight, a
// one-element input (its upload is over at once) and a kernel that reads every weight element
// straight away: without Engine::load's wait, the tail of the weight can still be in flight.
#include <gtest/gtest.h>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/ir.h"
#include "graph/registry.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"

namespace braze {
namespace {

TEST(GpuSession, TheFirstKernelReadsWeightsThatHaveLanded) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  constexpr int64_t kN = int64_t{48} << 20;  // 192 MB of float32 weight
  for (uint64_t seed : {1u, 2u, 3u}) {
    graph::Graph g;
    const graph::ValueId x = g.add_value("x", DType::Float32, {1});
    g.add_input(x);
    const graph::ValueId w = g.add_constant(
        "w", runtime::random_tensor(DType::Float32, {kN}, seed, runtime::RandomSpec{}));
    const graph::ValueId y = g.add_value("y", DType::Float32, {kN});
    g.add_node(graph::find_op("", "Add"), "add", {w, x}, {y}, {});
    g.add_output(y, "y");
    auto engine = gpu::Engine::build(g, fusion::make_plan(g, true, codegen::kernel_lowerings()),
                                     gpu::default_engine_options());
    gpu::Session session(engine);  // loads the engine: the weight's upload
    const std::vector<Tensor> in = {
        runtime::random_tensor(DType::Float32, {1}, seed + 10, runtime::RandomSpec{})};
    gpu::RunOptions ro;
    ro.poison = true;
    const std::vector<Tensor> got = session.run(in, ro);
    const std::vector<Tensor> want = runtime::run_reference(g, in);
    const runtime::Comparison cmp = runtime::compare(got[0], want[0], {0, 0});
    EXPECT_TRUE(cmp.ok) << "seed " << seed << ": " << cmp.summary(got[0], want[0]);
  }
}

}  // namespace
}  // namespace braze
