// The tensor-core GEMM kernels run by the CPU emulator, whose stand-ins for cp.async,
// ldmatrix, ld.shared, cvt.rna.tf32 and mma.sync (codegen/device/mma.cuh) follow the PTX
// fragment layouts: each small case in float16 and bfloat16 and in float32 at tf32, and
// every tile candidate on cases covering the four operand layouts, compared with the
// reference executor (outputs poisoned) and with a float64 run of the same graph.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_tc_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

struct Prepared {
  graph::Graph g;
  fusion::Plan plan;
  std::vector<Tensor> in;
  Tensor want, want64;  // the reference executor in the graph's type, and in float64
  size_t tc_candidates = 0;
};

codegen::Target emulated_target(bool tf32) {
  codegen::Target t;
  t.emulated = true;
  t.tf32 = tf32;
  return t;
}

Prepared prepare(const test::GemmTcCase& c, const std::string& dtype, bool tf32 = false) {
  Prepared p{test::graph_from_text(test::gemm_tc_text(c, dtype)), {}, {}, {}, {}};
  graph::passes::run_pipeline(p.g);
  p.plan = fusion::plan_fused(p.g, codegen::kernel_lowerings());
  graph::Graph g64 = test::graph_from_text(test::gemm_tc_text(c, "double"));
  graph::passes::run_pipeline(g64);
  std::vector<Tensor> in64;
  for (size_t i = 0; i < p.g.inputs().size(); ++i) {
    const graph::Value& v = p.g.value(p.g.inputs()[i]);
    p.in.push_back(runtime::random_tensor(v.dtype, v.shape, 90 + i, {}));
    in64.push_back(test::to_double(p.in.back()));
  }
  p.want = runtime::run_reference(p.g, p.in).at(0);
  p.want64 = runtime::run_reference(g64, in64).at(0);
  for (const fusion::Group& grp : p.plan.groups)
    for (const codegen::Tunables& t : codegen::candidates(p.g, grp, emulated_target(tf32)))
      p.tc_candidates += t.count("tc") && t.at("tc") == 1;
  return p;
}

void expect_matches(const Prepared& p, int candidate, const std::string& what) {
  const Tensor got = test::emulate_with(p.g, p.plan, p.in, candidate, what);
  ASSERT_TRUE(got.defined());
  runtime::Comparison cmp =
      runtime::compare(got, p.want, runtime::default_tolerance(p.want.dtype()));
  EXPECT_TRUE(cmp.ok) << what << ": " << cmp.summary(got, p.want);
  EXPECT_LE(test::relative_frobenius(got, p.want64), 1e-2) << what;
}

class EmulatedGemmTc : public ::testing::TestWithParam<std::tuple<test::GemmTcCase, const char*>> {
};

TEST_P(EmulatedGemmTc, DefaultScheduleMatchesReference) {
  const auto& [c, dtype] = GetParam();
  Prepared p = prepare(c, dtype);
  ASSERT_GE(p.tc_candidates, 8u) << "the tensor-core schedule applies";
  expect_matches(p, -1, std::string(c.name) + " " + dtype);
}

std::vector<test::GemmTcCase> small_cases() {
  std::vector<test::GemmTcCase> r;
  for (const test::GemmTcCase& c : test::gemm_tc_cases())
    if (!c.large) r.push_back(c);
  return r;
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedGemmTc,
                         ::testing::Combine(::testing::ValuesIn(small_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// Every tile shape, warp layout and pipeline depth computes the same function, for each of
// the four operand layouts (A [M,K] / [K,M] x B [K,N] / [N,K]).
TEST(EmulatedGemmTcSearchSpace, EveryCandidateMatchesReference) {
  const std::vector<std::pair<const char*, const char*>> runs = {
      {"matmul_bias_relu", "float16"},
      {"gemm_transb_bias_gelu", "bfloat16"},
      {"gemm_transa_alpha_beta", "float16"},
      {"gemm_transa_transb", "bfloat16"},
  };
  for (const auto& [name, dtype] : runs) {
    const test::GemmTcCase* c = nullptr;
    for (const test::GemmTcCase& k : test::gemm_tc_cases())
      if (std::string(k.name) == name) c = &k;
    ASSERT_NE(c, nullptr);
    Prepared p = prepare(*c, dtype);
    ASSERT_GE(p.tc_candidates, 8u);
    for (size_t cand = 0; cand < p.tc_candidates; ++cand)
      expect_matches(p, static_cast<int>(cand),
                     fmt::format("{} {} candidate {}", name, dtype, cand));
  }
}

// --precision tf32: float32 products on the tensor-core schedule (m16n8k8, operands
// rounded to tf32), against the reference executor in float64: relative L2 error within
// 1e-3, no element left poisoned.
Tensor run_tf32(const Prepared& p, int candidate) {
  runtime::EmulatorOptions eo;
  eo.candidate = candidate;
  eo.tf32 = true;
  std::vector<std::string> fallbacks;
  eo.fallbacks = &fallbacks;
  std::vector<Tensor> got = runtime::run_emulated(p.g, p.plan, p.in, eo);
  EXPECT_TRUE(fallbacks.empty());
  EXPECT_EQ(got.size(), 1u);
  return got.at(0);
}

class EmulatedGemmTf32 : public ::testing::TestWithParam<test::GemmTcCase> {};

TEST_P(EmulatedGemmTf32, DefaultScheduleWithinTf32Error) {
  const test::GemmTcCase& c = GetParam();
  Prepared p = prepare(c, "float", true);
  ASSERT_GE(p.tc_candidates, 6u) << "the tensor-core schedule applies at tf32";
  EXPECT_TRUE(test::tf32_close(run_tf32(p, -1), p.want64)) << c.name;
}

std::vector<test::GemmTcCase> small_tf32_cases() {
  std::vector<test::GemmTcCase> r;
  for (const test::GemmTcCase& c : test::gemm_tf32_cases())
    if (!c.large) r.push_back(c);
  return r;
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedGemmTf32, ::testing::ValuesIn(small_tf32_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Every tf32 tile shape, warp layout and pipeline depth, on the four operand layouts (with a
// bias + Gelu epilogue, Gemm's alpha / beta / C, odd sizes) and a broadcast batch.
TEST(EmulatedGemmTf32SearchSpace, EveryCandidateWithinTf32Error) {
  for (const char* name :
       {"gemm_transb_bias_gelu", "matmul_bias_relu", "gemm_transa_alpha_beta", "gemm_transa_transb",
        "batched_broadcast", "fp32_transa_transb_multiples_of_4"}) {
    const test::GemmTcCase* c = nullptr;
    for (const test::GemmTcCase& k : test::gemm_tf32_cases())
      if (std::string(k.name) == name) c = &k;
    ASSERT_NE(c, nullptr);
    Prepared p = prepare(*c, "float", true);
    ASSERT_GE(p.tc_candidates, 6u);
    double worst = 0;
    for (size_t cand = 0; cand < p.tc_candidates; ++cand) {
      const Tensor got = run_tf32(p, static_cast<int>(cand));
      EXPECT_TRUE(test::tf32_close(got, p.want64)) << name << " candidate " << cand;
      worst = std::max(worst, test::relative_frobenius(got, p.want64));
    }
    std::printf("tf32 %-36s %zu candidates, worst relative L2 error %.3g\n", name, p.tc_candidates,
                worst);
  }
}

// cvt.rna.tf32.f32 rounds to nearest with ties away from zero at the 10th mantissa bit:
// 1 + 2^-11 (a tie) becomes 1 + 2^-10, -(1 + 2^-11) becomes -(1 + 2^-10), a hair below
// the tie rounds down to 1, and the mma reads the rounded values (truncation would give 1
// for all four). Each output element sums k = 8 products with 1, exactly.
TEST(EmulatedGemmTf32Rounding, RoundsToNearestTiesAway) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float[16,8] a, float[8,8] b) => (float[16,8] y) { y = MatMul(a, b) })");
  graph::passes::run_pipeline(g);
  const double tie = 1 + std::ldexp(1.0, -11), up = 1 + std::ldexp(1.0, -10);
  const std::vector<std::pair<double, double>> rows = {// a's value -> rounded
                                                       {tie, up},
                                                       {-tie, -up},
                                                       {tie - std::ldexp(1.0, -20), 1.0},
                                                       {tie + std::ldexp(1.0, -20), up},
                                                       {3.0, 3.0}};
  Tensor a(DType::Float32, {16, 8}), b(DType::Float32, {8, 8});
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t k = 0; k < 8; ++k) a.set_f64(i * 8 + k, rows[i % rows.size()].first);
  for (int64_t i = 0; i < 64; ++i) b.set_f64(i, 1.0);
  runtime::EmulatorOptions eo;
  eo.tf32 = true;
  std::vector<std::string> fallbacks;
  eo.fallbacks = &fallbacks;
  const Tensor y =
      runtime::run_emulated(g, fusion::plan_fused(g, codegen::kernel_lowerings()), {a, b}, eo)
          .at(0);
  EXPECT_TRUE(fallbacks.empty());
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(y.get_f64(i * 8 + j), 8 * rows[i % rows.size()].second) << i << ", " << j;
}

}  // namespace
}  // namespace braze
