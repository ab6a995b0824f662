// The expression emitter (codegen/emitter.h) on its own: a group's element-wise chain
// inlined with only the group's inputs loaded, a value asked for twice at one coordinate
// computed once (within its scope), parameters registered once each, run-time checks
// numbered, broadcast coordinates.
#include <gtest/gtest.h>

#include <set>

#include "codegen/emitter.h"
#include "tests/test_util.h"

namespace braze {
namespace {

const char* kChain = R"(<ir_version: 8, opset_import: ["" : 18]>
  g (float[4,8] x, float[8] b) => (float[4,8] y) { s = Add(x, b)  r = Relu(s)  y = Exp(r) })";

graph::ValueId value_named(const graph::Graph& g, const std::string& name) {
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(static_cast<graph::ValueId>(v)).name == name) return static_cast<graph::ValueId>(v);
  ADD_FAILURE() << "no value " << name;
  return graph::kNoValue;
}

TEST(Emitter, AChainIsInlinedAndOnlyTheGroupsInputsAreParameters) {
  const graph::Graph g = test::graph_from_text(kChain);
  codegen::Emitter e(g, [](graph::NodeId) { return true; });
  const std::vector<std::string> at = e.unravel("i", {4, 8});
  ASSERT_EQ(at.size(), 2u);
  const std::string y = e.value_at(value_named(g, "y"), at);
  EXPECT_FALSE(y.empty());
  std::set<std::string> names;
  for (const codegen::Param& p : e.params()) names.insert(g.value(p.value).name);
  EXPECT_EQ(names, (std::set<std::string>{"x", "b"}));  // s and r stay in registers
  EXPECT_NE(e.signature().find("__restrict__"), std::string::npos) << e.signature();
}

TEST(Emitter, AValueAskedTwiceAtOneCoordinateIsComputedOnceWithinItsScope) {
  const graph::Graph g = test::graph_from_text(kChain);
  codegen::Emitter e(g, [](graph::NodeId) { return true; });
  const graph::ValueId y = value_named(g, "y");
  const std::vector<std::string> at = e.unravel("i", {4, 8});
  const std::string first = e.value_at(y, at);
  const size_t len = e.body().size();
  EXPECT_EQ(e.value_at(y, at), first);
  EXPECT_EQ(e.body().size(), len) << "no new statement for a memoised value";
  e.value_at(y, {"0LL", "1LL"});
  EXPECT_GT(e.body().size(), len) << "another coordinate is computed";
  e.push_scope();
  const size_t inner = e.body().size();
  e.value_at(y, {"2LL", "3LL"});
  EXPECT_GT(e.body().size(), inner);
  e.pop_scope();
  const size_t after = e.body().size();
  e.value_at(y, {"2LL", "3LL"});
  EXPECT_GT(e.body().size(), after)
      << "a value computed in a closed scope is computed again outside it";
}

TEST(Emitter, ValuesOutsideTheGroupAreLoadedNotComputed) {
  const graph::Graph g = test::graph_from_text(kChain);
  const graph::NodeId exp_node = g.value(value_named(g, "y")).producer;
  codegen::Emitter e(g, [&](graph::NodeId n) { return n == exp_node; });  // only Exp in the kernel
  e.value_at(value_named(g, "y"), e.unravel("i", {4, 8}));
  ASSERT_EQ(e.params().size(), 1u);
  EXPECT_EQ(g.value(e.params()[0].value).name, "r");
  EXPECT_EQ(e.input_param(value_named(g, "r")), e.input_param(value_named(g, "r")));
  EXPECT_EQ(e.params().size(), 1u) << "a parameter is registered once";
}

TEST(Emitter, ChecksAreNumberedFromOneAndBroadcastReadsIndexZero) {
  const graph::Graph g = test::graph_from_text(kChain);
  codegen::Emitter e(g, [](graph::NodeId) { return true; });
  EXPECT_EQ(e.add_check("index out of range"), 1);
  EXPECT_EQ(e.add_check("negative size"), 2);
  EXPECT_EQ(e.errors(), (std::vector<std::string>{"index out of range", "negative size"}));
  const std::vector<std::string> c = codegen::broadcast_coords({"a", "b", "c"}, {2, 3, 4}, {3, 1});
  EXPECT_EQ(c, (std::vector<std::string>{"b", "0LL"}));
}

}  // namespace
}  // namespace braze
