// codegen::settle_plan: the groups the compile runs. A fused group no schedule takes is split
// into one group per node there, each generated alone and noted with the reason.
#include <gtest/gtest.h>

#include "codegen/codegen.h"
#include "fusion/plan.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// A plan of one pointwise group holding every node of g.
fusion::Plan one_pointwise_group(const graph::Graph& g) {
  fusion::Group all;
  all.kind = fusion::GroupKind::Pointwise;
  all.nodes = g.topo_order();
  fusion::compute_boundary(g, all, g.users());
  fusion::Plan plan;
  plan.groups = {all};
  return plan;
}

TEST(SettlePlan, AFusedGroupNoScheduleTakesIsSplitWithTheReason) {
  // Size has no GPU lowering: a pointwise group holding it and a Relu cannot be one kernel.
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,8] x) => (float[4,8] y, int64 s) { y = Relu(x)  s = Size(y) })");
  const fusion::Plan plan = one_pointwise_group(g);

  const std::vector<codegen::SettledGroup> settled =
      codegen::settle_plan(g, plan, codegen::Target{});
  ASSERT_EQ(settled.size(), 2u);
  for (const codegen::SettledGroup& s : settled) {
    ASSERT_EQ(s.group.nodes.size(), 1u);
    EXPECT_NE(s.split_note.find("fused group of 2 nodes split"), std::string::npos) << s.split_note;
    EXPECT_NE(s.split_note.find("Size"), std::string::npos) << s.split_note;
  }
  EXPECT_TRUE(settled[0].code.kernel.has_value()) << settled[0].code.fallback_reason;  // Relu
  EXPECT_FALSE(settled[1].code.kernel.has_value());  // Size: the CPU reference
  EXPECT_FALSE(settled[1].code.fallback_reason.empty());
}

TEST(SettlePlan, GroupsThatGenerateAreKeptWhole) {
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,8] x) => (float[4,8] z) { y = Relu(x)  z = Neg(y) })");
  const fusion::Plan plan = one_pointwise_group(g);
  const std::vector<codegen::SettledGroup> settled =
      codegen::settle_plan(g, plan, codegen::Target{});
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].group.nodes.size(), 2u);
  EXPECT_TRUE(settled[0].code.kernel.has_value()) << settled[0].code.fallback_reason;
  EXPECT_TRUE(settled[0].split_note.empty());
}

}  // namespace
}  // namespace braze
