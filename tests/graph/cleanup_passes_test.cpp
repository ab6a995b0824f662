// The clean-up passes one at a time: fold_constants, eliminate_common_subexpressions and
// eliminate_dead_code. Each test checks what the pass removed and kept, its count, and that
// the graph computes the same outputs before and after on random inputs.
#include <gtest/gtest.h>

#include "graph/passes/constant_fold.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

TEST(CleanupPasses, ConstantSubgraphsFoldIntoOneConstantAndTheRestStays) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,4] x) => (float[3,4] y) {
      a = Constant <value = float[4] {1, 2, 3, 4}> ()  b = Constant <value = float {0.5}> ()
      c = Mul(a, b)  d = Add(c, b)  e = Relu(x)  y = Add(e, d) })");
  graph::Graph after = before;
  EXPECT_GE(graph::passes::fold_constants(after), 2);  // Mul and Add of constants
  graph::passes::eliminate_dead_code(after);
  const std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops.count("Mul"), 0u);
  EXPECT_EQ(ops.at("Add"), 1);  // x's Add stays
  EXPECT_EQ(ops.at("Relu"), 1);
  test::expect_same_outputs(before, after, 11, test::Match::Exact);
  EXPECT_EQ(graph::passes::fold_constants(after), 0) << "a second round finds nothing";
}

TEST(CleanupPasses, IdenticalNodesMergeButNotThoseWithOtherAttributesOrInputs) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,4] x, float[3,4] z) => (float[3,4] y, float[3,4] w) {
      a = Relu(x)  b = Relu(x)  c = Relu(z)
      s0 = Softmax <axis = 0> (x)  s1 = Softmax <axis = 1> (x)
      ab = Add(a, b)  abc = Add(ab, c)  y = Add(abc, s0)  w = Add(s1, s0) })");
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::eliminate_common_subexpressions(after), 1);  // b into a only
  graph::passes::eliminate_dead_code(after);
  const std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops.at("Relu"), 2);     // Relu(x) once, Relu(z) kept
  EXPECT_EQ(ops.at("Softmax"), 2);  // different axes
  test::expect_same_outputs(before, after, 11, test::Match::Exact);
}

// A merge's outputs stand for the first node's in every later node, in one sweep: the
// duplicates of merged nodes merge too, equal small constants become one, and a graph output
// keeps its own producer.
TEST(CleanupPasses, MergesCarryThroughChainsAndEqualConstantsBecomeOne) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,4] x) => (float[3,4] y, float[3,4] w) {
      k0 = Constant <value = float[4] {1, 2, 3, 4}> ()  k1 = Constant <value = float[4] {1, 2, 3, 4}> ()
      a = Relu(x)  b = Relu(x)  c = Add(a, k0)  d = Add(b, k1)  e = Neg(c)  f = Neg(d)
      ef = Mul(e, f)  y = Sigmoid(ef)  w = Sigmoid(ef) })");
  graph::Graph after = before;
  graph::passes::fold_constants(after);  // the Constant nodes become constant values
  EXPECT_EQ(graph::passes::eliminate_common_subexpressions(after), 4);  // k1, Relu, Add, Neg
  graph::passes::eliminate_dead_code(after);
  const std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops.at("Relu"), 1);
  EXPECT_EQ(ops.at("Add"), 1);
  EXPECT_EQ(ops.at("Neg"), 1);
  EXPECT_EQ(ops.at("Sigmoid"), 2);  // both produce graph outputs
  test::expect_same_outputs(before, after, 11, test::Match::Exact);
}

TEST(CleanupPasses, DeadNodesGoAndEveryOutputsProducerStays) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,4] x) => (float[3,4] y, float[3,4] x2) {
      unused = Exp(x)  unused2 = Neg(unused)  a = Relu(x)  y = Sigmoid(a)  x2 = Identity(x) })");
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::eliminate_dead_code(after), 2);  // Exp and Neg
  const std::map<std::string, int> ops = graph::passes::op_counts(after);
  EXPECT_EQ(ops.count("Exp"), 0u);
  EXPECT_EQ(ops.count("Neg"), 0u);
  EXPECT_EQ(ops.at("Relu"), 1);
  EXPECT_EQ(ops.at("Sigmoid"), 1);
  test::expect_same_outputs(before, after, 11, test::Match::Exact);
  EXPECT_EQ(graph::passes::eliminate_dead_code(after), 0);
}

}  // namespace
}  // namespace braze
