// The SIMT GEMM kernels run by the CPU emulator: every case of tests/gemm_simt_cases.h in
// float and double, with the heuristic default and with every candidate of the search
// space, compared element by element with the reference executor (outputs poisoned).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_simt_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

struct Prepared {
  graph::Graph g;
  fusion::Plan plan;
  std::vector<Tensor> in;
  Tensor want;
  size_t candidates = 0;  // of the GEMM group
};

Prepared prepare(const test::GemmSimtCase& c, const std::string& dtype) {
  Prepared p{test::graph_from_text(test::gemm_simt_text(c, dtype)), {}, {}, {}};
  graph::passes::run_pipeline(p.g);
  p.plan = fusion::plan_fused(p.g, codegen::kernel_lowerings());
  for (size_t i = 0; i < p.g.inputs().size(); ++i) {
    const graph::Value& v = p.g.value(p.g.inputs()[i]);
    p.in.push_back(runtime::random_tensor(v.dtype, v.shape, 40 + i, {}));
  }
  p.want = runtime::run_reference(p.g, p.in).at(0);
  for (const fusion::Group& grp : p.plan.groups)
    if (grp.kind == fusion::GroupKind::Gemm) {
      const std::vector<codegen::Tunables> cands = codegen::candidates(p.g, grp);
      for (const codegen::Tunables& t : cands) EXPECT_FALSE(t.count("tc")) << c.name;
      p.candidates = std::max(p.candidates, cands.size());
    }
  return p;
}

void expect_matches(const Prepared& p, int candidate, const std::string& what) {
  const Tensor got = test::emulate_with(p.g, p.plan, p.in, candidate, what);
  ASSERT_TRUE(got.defined());
  runtime::Comparison cmp =
      runtime::compare(got, p.want, runtime::default_tolerance(p.want.dtype()));
  EXPECT_TRUE(cmp.ok) << what << ": " << cmp.summary(got, p.want);
}

class EmulatedGemmSimt
    : public ::testing::TestWithParam<std::tuple<test::GemmSimtCase, const char*>> {};

TEST_P(EmulatedGemmSimt, EveryCandidateMatchesReference) {
  const auto& [c, dtype] = GetParam();
  Prepared p = prepare(c, dtype);
  // float: 8 tile shapes; double: the 5 with at most 32 accumulators a thread.
  ASSERT_GE(p.candidates, std::string(dtype) == "double" ? 5u : 8u);
  expect_matches(p, -1, fmt::format("{} {} default", c.name, dtype));
  for (size_t cand = 0; cand < p.candidates; ++cand)
    expect_matches(p, static_cast<int>(cand),
                   fmt::format("{} {} candidate {}", c.name, dtype, cand));
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedGemmSimt,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_simt_cases()),
                                            ::testing::Values("float", "double")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
