// Row programs in a GEMM's epilogue (tests/row_epilogue_cases.h) on the GPU: on sm_90a the
// normalisation runs in the product's kernel (the wgmma schedule's row epilogue, its rows held
// by clusters of 1 to 8 blocks); every candidate of that kernel built and run with the arena
// poisoned and compared element by element with the reference executor. Elsewhere the plan
// keeps the normalisation apart, and the whole plan is compared. Skips without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_test_util.h"
#include "tests/row_epilogue_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuRowEpilogue
    : public ::testing::TestWithParam<std::tuple<test::RowEpilogueCase, const char*>> {};

bool normalises(const graph::Graph& g, const fusion::Group& grp) {
  for (graph::NodeId id : grp.nodes)
    if (g.node(id).op_type() == "LayerNormalization") return true;
  return false;
}

// Every output of a run of `engine` on `in` (the arena poisoned first) against `want`.
void expect_outputs(std::shared_ptr<const gpu::Engine> engine, const std::vector<Tensor>& in,
                    const std::vector<Tensor>& want, const std::string& what) {
  gpu::Session session(std::move(engine));
  gpu::RunOptions ro;
  ro.poison = true;
  const std::vector<Tensor> got = session.run(in, ro);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(test::tensors_close(got[k], want[k])) << what << " output " << k;
}

TEST_P(GpuRowEpilogue, EveryCandidateMatchesTheReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::row_epilogue_text(c, dtype));
  const graph::Graph before = g;
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  const std::vector<Tensor> in = test::random_inputs(g, 61);
  const std::vector<Tensor> want = runtime::run_reference(before, in);
  const std::string what = fmt::format("{} {}", c.name, dtype);
  {
    // The whole plan with its default kernels, every output.
    std::vector<gpu::Step> steps = base;
    gpu::Engine::compile_steps(steps, o.arch, o, nullptr);
    expect_outputs(gpu::Engine::assemble(g, std::move(steps), o.arch), in, want, what);
  }
  size_t fused = 0, built = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (!normalises(g, base[gi].group) || base[gi].group.kind != fusion::GroupKind::Gemm) continue;
    ++fused;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(*base[gi].kernel), "wgmma");
    for (const codegen::Tunables& t : codegen::candidates(g, base[gi].group, o.target)) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, gi, t, o, &why);
      ASSERT_TRUE(engine) << what << ": " << tun << why;
      expect_outputs(engine, in, want, what + ": " + tun);
      ++built;
    }
  }
  EXPECT_EQ(fused, c.fused && o.target.sm90a ? 1u : 0u) << what;
  if (fused) EXPECT_GE(built, 2u) << what;
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuRowEpilogue,
                         ::testing::Combine(::testing::ValuesIn(test::row_epilogue_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
