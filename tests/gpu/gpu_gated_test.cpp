// Gated products (tests/gated_cases.h) on the GPU: the gated expression in its product's
// kernel (wgmma on sm_90a, mma.sync elsewhere), every candidate of that kernel's search space
// built and run with the arena poisoned and compared element by element with the reference
// executor. Skips without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/column_pairs.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gated_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuGated : public ::testing::TestWithParam<std::tuple<test::GatedCase, const char*>> {};

bool reads_a_column_pair(const graph::Graph& g, const fusion::Group& grp) {
  for (graph::NodeId id : grp.nodes)
    if (graph::column_pair_parity(g, g.node(id)) >= 0) return true;
  return false;
}

TEST_P(GpuGated, EveryCandidateComputesTheGatedExpression) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::gated_text(c, dtype));
  const graph::Graph before = g;
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  EXPECT_EQ(base.size(), c.gemm_kernels + c.other_kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 59);
  const Tensor want = runtime::run_reference(before, in).at(0);
  size_t gated = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (!reads_a_column_pair(g, base[gi].group)) continue;
    ++gated;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(*base[gi].kernel), o.target.sm90a ? "wgmma" : "mma");
    test::expect_every_candidate_matches(g, base, gi, o, in, want,
                                         fmt::format("{} {}", c.name, dtype));
  }
  EXPECT_EQ(gated, 1u);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGated,
                         ::testing::Combine(::testing::ValuesIn(test::gated_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
