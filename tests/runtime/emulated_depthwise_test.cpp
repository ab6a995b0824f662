// Depthwise convolutions and pooling in channels-last plans on the CPU emulator (#19,
// tests/depthwise_cases.h): the depthwise convolution's or the pooling's kernel computes a
// vector of channels at a time (schedule "depthwise", its W stored channels-last behind a
// Transpose; "pool"), and the outputs match the reference executor's, in float32 and float16.
#include <gtest/gtest.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/depthwise_weights.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"
#include "tests/depthwise_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

class EmulatedDepthwise : public ::testing::TestWithParam<std::tuple<test::DepthwiseCase, DType>> {
};

TEST_P(EmulatedDepthwise, ChannelsAtATimeMatchTheReference) {
  const auto& [c, dtype] = GetParam();
  const graph::Graph g = test::depthwise_case_graph(c, dtype);
  const graph::Users users = g.users();
  int weights = 0;
  for (size_t id = 0; id < g.num_nodes(); ++id)
    weights += !g.node(static_cast<graph::NodeId>(id)).dead &&
               graph::passes::is_depthwise_weight(g, users, static_cast<graph::NodeId>(id));
  EXPECT_EQ(weights, *c.pool ? 0 : 1) << "the depthwise W is stored channels-last";
  const codegen::Target target = test::h200a();
  const fusion::Plan plan = codegen::plan_for(g, true, target);
  const char* op = *c.pool ? c.pool : "Conv";
  int loops = 0;
  for (const fusion::Group& gr : plan.groups) {
    if (!test::has_op(g, gr, op)) continue;
    ++loops;
    const codegen::GroupCode code = codegen::generate(g, gr, target);
    ASSERT_TRUE(code.kernel) << code.fallback_reason;
    EXPECT_EQ(codegen::schedule_name(g, *code.kernel), *c.pool ? "pool" : "depthwise");
  }
  EXPECT_EQ(loops, 1);
  const std::vector<Tensor> in = test::random_inputs(g, 71);
  const Tensor want = runtime::run_reference(g, in).at(0);
  const Tensor got = test::emulate_with(g, plan, in, -1, c.name);
  ASSERT_TRUE(got.defined());
  EXPECT_TRUE(test::depthwise_outputs_close(got, want, dtype)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedDepthwise,
                         ::testing::Combine(::testing::ValuesIn(test::depthwise_cases()),
                                            ::testing::Values(DType::Float32, DType::Float16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace braze
