// Graph::users() and shared_users(): computed once while the graph stays as it is, computed
// again after any change to its nodes, and never shared between a graph and its copy.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "graph/ir.h"
#include "graph/registry.h"

namespace braze {
namespace {

struct Small {
  graph::Graph g;
  graph::ValueId x, a, b;
  graph::NodeId relu, neg;
};

// a = Relu(x), b = Neg(a)
Small small() {
  Small s;
  s.x = s.g.add_value("x", DType::Float32, {4});
  s.g.add_input(s.x);
  s.a = s.g.add_value("a", DType::Float32, {4});
  s.b = s.g.add_value("b", DType::Float32, {4});
  s.relu = s.g.add_node(graph::find_op("", "Relu"), "relu", {s.x}, {s.a});
  s.neg = s.g.add_node(graph::find_op("", "Neg"), "neg", {s.a}, {s.b});
  s.g.add_output(s.b, "b");
  return s;
}

TEST(GraphUsers, SharedUntilTheNodesChange) {
  Small s = small();
  const graph::Graph& cg = s.g;
  const auto first = cg.shared_users();
  EXPECT_EQ(cg.shared_users(), first) << "computed again without a change";
  EXPECT_EQ((*first)[s.a], std::vector<graph::NodeId>{s.neg});

  s.g.node(s.neg).inputs[0] = s.x;  // through the non-const accessor
  EXPECT_EQ(cg.users()[s.x], (std::vector<graph::NodeId>{s.relu, s.neg}));
  EXPECT_TRUE(cg.users()[s.a].empty());
  EXPECT_EQ((*first)[s.a], std::vector<graph::NodeId>{s.neg}) << "a snapshot held stays as it was";

  const graph::ValueId c = s.g.add_value("c", DType::Float32, {4});
  const graph::NodeId abs = s.g.add_node(graph::find_op("", "Abs"), "abs", {s.b}, {c});
  EXPECT_EQ(cg.users().size(), cg.num_values());
  EXPECT_EQ(cg.users()[s.b], std::vector<graph::NodeId>{abs});
  s.g.kill_node(abs);
  EXPECT_TRUE(cg.users()[s.b].empty());
  const graph::ValueId y = s.g.add_value("y", DType::Float32, {4});
  s.g.replace_all_uses(s.x, y);
  EXPECT_TRUE(cg.users()[s.x].empty());
  EXPECT_EQ(cg.users()[y], (std::vector<graph::NodeId>{s.relu, s.neg}));
}

TEST(GraphUsers, ACopyHasItsOwn) {
  Small s = small();
  const auto original = static_cast<const graph::Graph&>(s.g).shared_users();
  graph::Graph copy = s.g;
  copy.node(s.neg).inputs[0] = s.x;
  EXPECT_EQ(static_cast<const graph::Graph&>(s.g).shared_users(), original);
  EXPECT_EQ(copy.users()[s.x].size(), 2u);
  EXPECT_EQ(s.g.users()[s.x].size(), 1u);
}

TEST(GraphUsers, ThreadsAskingAtOnceShareOneResult) {
  Small s = small();
  const graph::Graph& cg = s.g;
  std::vector<std::shared_ptr<const graph::Users>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cg.shared_users(); });
  for (std::thread& t : threads) t.join();
  for (const auto& u : got) EXPECT_EQ(u, got[0]);
}

}  // namespace
}  // namespace braze
