// The SIMT GEMM schedule on the GPU: every case of tests/gemm_simt_cases.h in float and
// double, with every candidate of the search space, built into an engine, run with the
// arena poisoned, and compared element by element with the reference executor. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_simt_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuGemmSimt : public ::testing::TestWithParam<std::tuple<test::GemmSimtCase, const char*>> {};

TEST_P(GpuGemmSimt, EveryCandidateMatchesReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const gpu::EngineOptions o = gpu::default_engine_options();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::gemm_simt_text(c, dtype));
  graph::passes::run_pipeline(g);
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 500 + i, {}));
  }
  const Tensor want = runtime::run_reference(g, in).at(0);

  const std::vector<gpu::Step> base =
      gpu::generate_steps(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o.target);
  const size_t gemm = test::gemm_step(base);
  ASSERT_LT(gemm, base.size());
  ASSERT_TRUE(base[gemm].kernel.has_value()) << base[gemm].fallback_reason;
  const std::vector<codegen::Tunables> tunes = codegen::candidates(g, base[gemm].group, o.target);
  ASSERT_GE(tunes.size(), std::string(dtype) == "double" ? 5u : 8u);
  for (size_t ti = 0; ti < tunes.size(); ++ti) {
    ASSERT_FALSE(tunes[ti].count("tc"));
    std::string what = fmt::format("{} {} candidate {}", c.name, dtype, ti);
    std::string why;
    auto engine = test::engine_with(g, base, gemm, tunes[ti], o, &why);
    ASSERT_TRUE(engine) << what << ": " << why;
    const Tensor got = test::run_poisoned(engine, in);
    ASSERT_TRUE(got.defined());
    runtime::Comparison cmp = runtime::compare(got, want, runtime::default_tolerance(want.dtype()));
    EXPECT_TRUE(cmp.ok) << what << ": " << cmp.summary(got, want);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGemmSimt,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_simt_cases()),
                                            ::testing::Values("float", "double")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// Not a check: prints each candidate's throughput on the float32 products of issue #6 (run
// with --gtest_also_run_disabled_tests --gtest_filter='*SimtThroughput*').
TEST(GpuGemmSimt, DISABLED_SimtThroughput) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const gpu::EngineOptions o = gpu::default_engine_options();
  for (const auto& [m, n, k] : std::vector<std::tuple<int, int, int>>{{8192, 8192, 8192},
                                                                      {4096, 3072, 768},
                                                                      {4096, 768, 3072},
                                                                      {128, 768, 768},
                                                                      {128, 3072, 768}}) {
    test::print_candidate_throughput(fmt::format(R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float[{0},{2}] a, float[{2},{1}] b) => (float[{0},{1}] y) {{ y = MatMul(a, b) }})",
                                                 m, n, k),
                                     o, 64, m >= 8192 ? 10 : 50);
  }
}

}  // namespace
}  // namespace braze
