// The passes that turn the exporters' attention-mask arithmetic into views: gathers_as_reshapes
// (a gather over constant indices that reads its data in order), drop_neutral_operands (And with
// all true, Or with all false) and sink_expands (an Expand moved below element-wise ops, or
// dropped where the consumer broadcasts). Each test checks what changed, the count, and that
// the graph computes the same outputs before and after on random inputs.
#include <gtest/gtest.h>

#include "graph/passes/dce.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/sink_expands.h"
#include "tests/test_util.h"

namespace braze {
namespace {

int count(const graph::Graph& g, const std::string& op) {
  const std::map<std::string, int> ops = graph::passes::op_counts(g);
  return ops.count(op) ? ops.at(op) : 0;
}

// The dynamo exporter's `mask[batch_idx, None, None, kv_idx]`: GatherND over the (b, s) pairs
// in order is the mask reshaped to [B, 1, 1, S].
TEST(MaskPasses, GatherNdOverEveryPairInOrderBecomesAReshape) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (bool[2,3] m) => (bool[2,1,1,3] y) {
      i = Constant <value = int64[2,1,1,3,2] {0,0, 0,1, 0,2, 1,0, 1,1, 1,2}> ()
      y = GatherND(m, i) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "GatherND"), 0);
  EXPECT_EQ(count(after, "Reshape"), 1);
  test::expect_same_outputs(before, after, 3, test::Match::Exact);
}

TEST(MaskPasses, GathersThatPermuteRepeatOrSkipElementsStay) {
  for (const char* indices : {"int64[2,1,1,3,2] {0,0, 0,2, 0,1, 1,0, 1,1, 1,2}",     // permuted
                              "int64[2,1,1,3,2] {0,0, 0,1, 0,1, 1,0, 1,1, 1,2}"}) {  // repeated
    const graph::Graph before =
        test::graph_from_text(std::string(R"(<ir_version: 8, opset_import: ["" : 18]>
      g (bool[2,3] m) => (bool[2,1,1,3] y) { i = Constant <value = )") +
                              indices + R"(> ()  y = GatherND(m, i) })");
    graph::Graph after = before;
    graph::passes::run_pipeline(after, {});
    EXPECT_EQ(count(after, "GatherND"), 1) << indices;
    test::expect_same_outputs(before, after, 3, test::Match::Exact);
  }
  const graph::Graph part = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2,2] y) {
      i = Constant <value = int64[2] {0, 1}> ()  y = Gather <axis = 1> (x, i) })");
  graph::Graph after = part;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "Gather"), 1) << "a part of the data is no reshape";
}

TEST(MaskPasses, GatherOfEveryIndexAlongAnAxisBecomesAReshape) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3,4] x) => (float[2,3,4] y) {
      i = Constant <value = int64[3] {0, 1, 2}> ()  y = Gather <axis = 1> (x, i) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "Gather"), 0);
  test::expect_same_outputs(before, after, 5, test::Match::Exact);
}

TEST(MaskPasses, AndWithAllTrueAndOrWithAllFalseLeaveTheOtherOperand) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (bool[2,1,1,3] m, bool[2,3] n) => (bool[2,1,3,3] y, bool[2,3] z) {
      t = Constant <value = bool[1,1,3,1] {1, 1, 1}> ()  y = And(t, m)
      f = Constant <value = bool[3] {0, 0, 0}> ()  z = Or(n, f) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "And"), 0);
  EXPECT_EQ(count(after, "Or"), 0);
  EXPECT_EQ(count(after, "Expand"), 1) << "the constant broadcast m: y is m expanded";
  test::expect_same_outputs(before, after, 7, test::Match::Exact);
}

TEST(MaskPasses, AndWithAFalseElementStays) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (bool[2,1,1,3] m) => (bool[2,1,3,3] y) {
      t = Constant <value = bool[1,1,3,1] {1, 0, 1}> ()  y = And(t, m) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "And"), 1);
  test::expect_same_outputs(before, after, 7, test::Match::Exact);
}

// BERT's mask after the passes above: Where over the expanded [B,1,S,S] mask, added to the
// scores. The Where moves above the Expand (it computes [B,1,1,S]) and the Add's broadcast
// takes the Expand's place.
TEST(MaskPasses, AnExpandSinksBelowWhereAndTheScoresAddBroadcastsInstead) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (bool[2,1,1,3] m, float[2,4,3,3] s) => (float[2,4,3,3] y) {
      shape = Constant <value = int64[4] {2, 1, 3, 3}> ()  e = Expand(m, shape)
      zero = Constant <value = float {0}> ()  low = Constant <value = float {-1e30}> ()
      w = Where(e, zero, low)  y = Add(s, w) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after, {});
  EXPECT_EQ(count(after, "Expand"), 0);
  EXPECT_EQ(count(after, "Where"), 1);
  for (size_t i = 0; i < after.num_nodes(); ++i) {
    const graph::Node& n = after.node(static_cast<graph::NodeId>(i));
    if (!n.dead && n.op_type() == "Where")
      EXPECT_EQ(after.value(n.outputs[0]).shape, (Shape{2, 1, 1, 3}));
  }
  test::expect_same_outputs(before, after, 9, test::Match::Exact);
}

TEST(MaskPasses, AnExpandWithSeveralReadersStaysWhereABroadcastCannotTakeIt) {
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,1,3] x) => (float[2,4,3] y, float[2,4,3] z) {
      shape = Constant <value = int64[3] {2, 4, 3}> ()  e = Expand(x, shape)
      y = Neg(e)  z = Relu(e) })");
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::sink_expands(after), 0);
  EXPECT_EQ(count(after, "Expand"), 1);
  test::expect_same_outputs(before, after, 13, test::Match::Exact);
}

}  // namespace
}  // namespace braze
