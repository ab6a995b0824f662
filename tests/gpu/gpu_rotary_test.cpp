// Rotary embeddings after a projection (tests/rotary_cases.h) on the GPU: the rotation in its
// product's kernel (wgmma on sm_90a, mma.sync elsewhere), every candidate of that kernel's
// search space built and run with the arena poisoned and compared element by element with the
// reference executor on the graph before the passes. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/column_pairs.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_test_util.h"
#include "tests/rotary_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuRotary : public ::testing::TestWithParam<std::tuple<test::RotaryCase, const char*>> {};

bool rotates(const graph::Graph& g, const fusion::Group& grp) {
  return std::any_of(grp.nodes.begin(), grp.nodes.end(),
                     [&](graph::NodeId id) { return graph::is_swap_pairs(g.node(id)); });
}

TEST_P(GpuRotary, EveryCandidateRotates) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::rotary_text(c, dtype));
  const graph::Graph before = g;
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  EXPECT_EQ(base.size(), c.kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 67);
  const Tensor want = runtime::run_reference(before, in).at(0);
  size_t rotating = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (!rotates(g, base[gi].group)) continue;
    ++rotating;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(*base[gi].kernel), o.target.sm90a ? "wgmma" : "mma");
    test::expect_every_candidate_matches(g, base, gi, o, in, want,
                                         fmt::format("{} {}", c.name, dtype));
  }
  EXPECT_EQ(rotating, c.swaps);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuRotary,
                         ::testing::Combine(::testing::ValuesIn(test::rotary_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
