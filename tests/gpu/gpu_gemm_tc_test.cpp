// The tensor-core GEMM schedule on the GPU: every case in float16 and bfloat16, with the
// heuristic default and with every tensor-core candidate of the search space, built into
// an engine, run with the arena poisoned, and compared element by element with the
// reference executor and, by relative Frobenius error, with a float64 run of the same graph.
// Then float32 at --precision tf32: every case with the default and every tf32 candidate,
// held to a relative L2 error of 1e-3 against float64 with no element left poisoned, and
// the hardware's cvt.rna.tf32 rounding checked on exact values. Skips without a GPU (or on
// one older than sm_80).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

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
#include "tests/gemm_tc_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

bool is_tc(const codegen::Tunables& t) { return t.count("tc") && t.at("tc") == 1; }

// Builds the case in `dtype` (float at tf32) into an engine once with the heuristic default
// and once with each tensor-core candidate, runs it with the arena poisoned, and compares:
// 16-bit, element by element with the reference executor and within 1e-2 relative L2 of
// float64; tf32, within 1e-3 relative L2 of float64 with every element finite.
void check_every_candidate(const test::GemmTcCase& c, const char* dtype, bool tf32) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  gpu::EngineOptions o = gpu::default_engine_options();
  if (o.target.sm < 80)
    GTEST_SKIP() << "tensor-core GEMM needs sm_80+, the GPU is " << o.arch.name();
  o.target.tf32 = tf32;
  graph::Graph g = test::graph_from_text(test::gemm_tc_text(c, dtype));
  graph::passes::run_pipeline(g);
  graph::Graph g64 = test::graph_from_text(test::gemm_tc_text(c, "double"));
  graph::passes::run_pipeline(g64);
  std::vector<Tensor> in, in64;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 300 + i, {}));
    in64.push_back(test::to_double(in.back()));
  }
  const Tensor want = runtime::run_reference(g, in).at(0);
  const Tensor want64 = runtime::run_reference(g64, in64).at(0);

  const std::vector<gpu::Step> base =
      gpu::generate_steps(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o.target);
  const size_t gemm = test::gemm_step(base);
  ASSERT_LT(gemm, base.size());
  ASSERT_TRUE(base[gemm].kernel.has_value()) << base[gemm].fallback_reason;
  EXPECT_TRUE(is_tc(base[gemm].kernel->tunables)) << "the default is the tensor-core schedule";

  std::vector<codegen::Tunables> tunes{base[gemm].kernel->tunables};
  for (const codegen::Tunables& t : codegen::candidates(g, base[gemm].group, o.target))
    if (is_tc(t)) tunes.push_back(t);
  ASSERT_GE(tunes.size(), 7u);
  for (size_t ti = 0; ti < tunes.size(); ++ti) {
    std::string what = fmt::format("{} {}{} candidate {}", c.name, dtype, tf32 ? " tf32" : "", ti);
    std::string why;
    auto engine = test::engine_with(g, base, gemm, tunes[ti], o, &why);
    ASSERT_TRUE(engine) << what << ": " << why;
    const Tensor got = test::run_poisoned(engine, in);
    ASSERT_TRUE(got.defined());
    if (tf32) {
      EXPECT_TRUE(test::tf32_close(got, want64)) << what;
      continue;
    }
    runtime::Comparison cmp = runtime::compare(got, want, runtime::default_tolerance(want.dtype()));
    EXPECT_TRUE(cmp.ok) << what << ": " << cmp.summary(got, want);
    EXPECT_LE(test::relative_frobenius(got, want64), 1e-2) << what;
  }
}

class GpuGemmTc : public ::testing::TestWithParam<std::tuple<test::GemmTcCase, const char*>> {};

TEST_P(GpuGemmTc, EveryCandidateMatchesReference) {
  const auto& [c, dtype] = GetParam();
  check_every_candidate(c, dtype, false);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGemmTc,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_tc_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// float32 at --precision tf32.
class GpuGemmTf32 : public ::testing::TestWithParam<test::GemmTcCase> {};

TEST_P(GpuGemmTf32, EveryCandidateWithinTf32Error) {
  check_every_candidate(GetParam(), "float", true);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGemmTf32, ::testing::ValuesIn(test::gemm_tf32_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// The hardware's rounding: as tests/runtime/emulated_gemm_tc_test.cpp checks the emulator's.
TEST(GpuGemmTf32, RoundsToNearestTiesAway) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  gpu::EngineOptions o = gpu::default_engine_options();
  if (o.target.sm < 80)
    GTEST_SKIP() << "tf32 tensor cores need sm_80+, the GPU is " << o.arch.name();
  o.target.tf32 = true;
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float[16,8] a, float[8,8] b) => (float[16,8] y) { y = MatMul(a, b) })");
  graph::passes::run_pipeline(g);
  const double tie = 1 + std::ldexp(1.0, -11), up = 1 + std::ldexp(1.0, -10);
  const std::vector<std::pair<double, double>> rows = {{tie, up},
                                                       {-tie, -up},
                                                       {tie - std::ldexp(1.0, -20), 1.0},
                                                       {tie + std::ldexp(1.0, -20), up},
                                                       {3.0, 3.0}};
  Tensor a(DType::Float32, {16, 8}), b(DType::Float32, {8, 8});
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t k = 0; k < 8; ++k) a.set_f64(i * 8 + k, rows[i % rows.size()].first);
  for (int64_t i = 0; i < 64; ++i) b.set_f64(i, 1.0);
  auto engine = gpu::Engine::build(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o);
  ASSERT_TRUE(engine->steps().at(0).kernel.has_value());
  EXPECT_TRUE(is_tc(engine->steps()[0].kernel->tunables));
  gpu::Session session(engine);
  gpu::RunOptions ro;
  ro.poison = true;
  const Tensor y = session.run({a, b}, ro).at(0);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(y.get_f64(i * 8 + j), 8 * rows[i % rows.size()].second) << i << ", " << j;
}

// Not a check: prints each candidate's throughput on large products (run with
// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*').
TEST(GpuGemmTc, DISABLED_Throughput) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  gpu::EngineOptions o = gpu::default_engine_options();
  o.target.tf32 = true;  // the float32 products at tf32
  for (const char* text : {R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[4096,4096] a, float16[4096,4096] b) => (float16[4096,4096] y) { y = MatMul(a, b) })",
                           R"(<ir_version: 8, opset_import: ["" : 20]>
        g (bfloat16[8192,4096] x, bfloat16[4096,4096] w, bfloat16[4096] c) => (bfloat16[8192,4096] y) {
          m = Gemm <transB = 1> (x, w, c)  y = Gelu(m) })",
                           R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[512,1024] a, float16[1024,1024] b) => (float16[512,1024] y) { y = MatMul(a, b) })",
                           R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float[4096,4096] a, float[4096,4096] b) => (float[4096,4096] y) { y = MatMul(a, b) })",
                           R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float[8192,4096] x, float[4096,4096] w, float[4096] c) => (float[8192,4096] y) {
          m = Gemm <transB = 1> (x, w, c)  y = Gelu(m) })"})
    test::print_candidate_throughput(text, o, 12, 10);
}

}  // namespace
}  // namespace braze
