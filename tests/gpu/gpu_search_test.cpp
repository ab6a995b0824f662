// Every point of the reduction search space on the GPU — rows in registers, staged in
// shared memory by cp.async, streamed with the online softmax, split over thread-block
// clusters — computes what the reference executor does, on rows holding ±1e4 and (for the
// softmax) +inf and NaN. Arena poisoned before each run. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/reduction_search_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

TEST(GpuSearchSpace, EveryReductionCandidateMatchesReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::graph_from_text(test::reduction_search_text());
  graph::passes::run_pipeline(g);
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 70 + i, {}));
  }
  in[0].set_f64(5, 1e4);  // softmax fp16: a huge element (fp16 holds 1e4)
  in[0].set_f64(32000 + 7, -1e4);
  in[0].set_f64(3 * 32000 + 11, INFINITY);
  in[1].set_f64(40000 + 3, NAN);  // softmax fp32: a NaN row
  in[1].set_f64(2 * 40000 + 9, 1e4);
  std::vector<Tensor> want = runtime::run_reference(g, in);
  fusion::Plan plan = fusion::plan_fused(g, codegen::kernel_lowerings());
  gpu::EngineOptions opts = gpu::default_engine_options();
  opts.fuse = true;
  size_t most = 0;
  for (const fusion::Group& grp : plan.groups)
    most = std::max(most, codegen::candidates(g, grp, opts.target).size());
  ASSERT_GT(most, 20u);
  for (size_t c = 0; c < most; ++c) {
    opts.candidate = static_cast<int>(c);
    auto engine = gpu::Engine::build(g, plan, opts);
    gpu::Session session(engine);
    gpu::RunOptions ro;
    ro.poison = true;
    std::vector<Tensor> got = session.run(in, ro);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::Comparison cmp =
          runtime::compare(got[i], want[i], runtime::default_tolerance(want[i].dtype()));
      EXPECT_TRUE(cmp.ok) << g.outputs()[i].name << " with candidate " << c << ": "
                          << cmp.summary(got[i], want[i]);
    }
  }
}

}  // namespace
}  // namespace braze
