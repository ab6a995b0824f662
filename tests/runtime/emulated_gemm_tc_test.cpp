// The tensor-core GEMM kernels run by the CPU emulator, whose stand-ins for cp.async,
// ldmatrix and mma.sync (codegen/device/mma.cuh) follow the PTX fragment layouts: each
// small case in float16 and bfloat16, and every tile candidate on cases covering the four
// operand layouts, compared with the reference executor (outputs poisoned) and with a
// float64 run of the same graph.
#include <gtest/gtest.h>

#include <fmt/format.h>

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

Prepared prepare(const test::GemmTcCase& c, const std::string& dtype) {
  Prepared p{test::graph_from_text(test::gemm_tc_text(c, dtype)), {}, {}, {}, {}};
  graph::passes::run_pipeline(p.g);
  p.plan = fusion::plan_fused(p.g);
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
    for (const codegen::Tunables& t : codegen::candidates(p.g, grp))
      p.tc_candidates += t.count("tc") && t.at("tc") == 1;
  return p;
}

void expect_matches(const Prepared& p, int candidate, const std::string& what) {
  const Tensor got = test::emulate_with(p.g, p.plan, p.in, candidate, what);
  ASSERT_TRUE(got.defined());
  runtime::Comparison cmp = runtime::compare(got, p.want, runtime::default_tolerance(p.want.dtype()));
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

}  // namespace
}  // namespace braze
