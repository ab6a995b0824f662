// The GPU path's generated kernels, run by the CPU emulator on every op case, compared
// element by element with the reference executor on fresh random inputs (outputs poisoned).
#include <gtest/gtest.h>

#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/compare.h"
#include "runtime/emulator.h"
#include "runtime/inputs.h"
#include "runtime/reference_executor.h"
#include "tests/op_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class EmulatedOps : public ::testing::TestWithParam<test::OpCase> {};

TEST_P(EmulatedOps, MatchesReference) {
  const test::OpCase& c = GetParam();
  graph::Graph g = test::graph_from_text(c.text);
  graph::passes::run_pipeline(g);
  runtime::RandomSpec spec;
  spec.int_hi = c.int_hi;
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    in.push_back(runtime::random_tensor(v.dtype, v.shape, 17 + i, spec));
  }
  std::vector<Tensor> want = runtime::run_reference(g, in);
  for (bool fuse : {true, false}) {
    std::vector<std::string> fallbacks;
    runtime::EmulatorOptions eo;
    eo.fallbacks = &fallbacks;
    std::vector<Tensor> got = runtime::run_emulated(g, fusion::make_plan(g, fuse), in, eo);
    EXPECT_TRUE(fallbacks.empty()) << fallbacks.front();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      runtime::Comparison cmp = runtime::compare(got[i], want[i], {c.rtol, c.atol});
      EXPECT_TRUE(cmp.ok) << g.outputs()[i].name << (fuse ? " (fused): " : " (unfused): ") << cmp.summary(got[i], want[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedOps, ::testing::ValuesIn(test::op_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braze
