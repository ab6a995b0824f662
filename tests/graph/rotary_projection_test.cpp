// rotary_projections (graph/passes/rotary_projection.h): the rotation of each head after a
// projection becomes one SwapPairs expression over the product's heads, its weight's columns
// interleaved head by head, and the graph computes what it did before; where a rotated head's
// values are also read unrotated, or the heads are rotated by different tables, it stays.
#include <gtest/gtest.h>

#include "graph/passes/pipeline.h"
#include "tests/rotary_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

int count_op(const graph::Graph& g, const char* name) { return graph::passes::op_counts(g)[name]; }

TEST(RotaryProjection, EveryCaseComputesTheSameAfterThePipeline) {
  for (const test::RotaryCase& c : test::rotary_cases()) {
    SCOPED_TRACE(c.name);
    const graph::Graph before = test::graph_from_text(test::rotary_text(c, "float"));
    graph::Graph after = before;
    graph::passes::run_pipeline(after);
    EXPECT_EQ(count_op(after, "SwapPairs"), static_cast<int>(c.swaps));
    // The rewritten graph has no rotate_half left: no Neg, no Concat of halves.
    if (c.swaps) EXPECT_EQ(count_op(after, "Neg"), 0);
    test::expect_same_outputs(before, after, 7);
  }
}

TEST(RotaryProjection, HeadsAlsoReadUnrotatedStay) {
  // K's heads before the rotation are also an output (a cache of unrotated keys).
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[1,6,16] x) => (float[1,2,6,8] y, float[1,2,6,8] t) {
)" + test::rotary_weight("w", 16, 16, 1) + test::rotary_table("c", "[6,8]", 6, 8, false) +
                                                    test::rotary_table("s", "[6,8]", 6, 8, true) +
                                                    R"(
      p = MatMul(x, w)  sh = Constant <value = int64[4] {1, 6, 2, 8}> ()  r = Reshape(p, sh)
      t = Transpose <perm = [0, 2, 1, 3]> (r)
)" + test::rotate_half("t", "y", 8) + R"( })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count_op(after, "SwapPairs"), 0);
  EXPECT_EQ(count_op(after, "Neg"), 1);
  test::expect_same_outputs(before, after, 7);
}

TEST(RotaryProjection, TheOpsOutputAlsoAGraphOutputKeepsItsLayout) {
  // RotaryEmbedding's 3-D output is a graph output and, split into heads, a second one: the
  // first is the rotated heads transposed back and flattened, the second the heads in place.
  const graph::Graph before = test::graph_from_text(R"(<ir_version: 10, opset_import: ["" : 23]>
    g (float[2,5,32] x, float[2,5,8] c, float[2,5,8] s) => (float[2,5,32] y, float[2,2,5,16] t) {
)" + test::rotary_weight("w", 32, 32, 3) + R"(
      p = MatMul(x, w)  y = RotaryEmbedding <num_heads = 2> (p, c, s)
      sh = Constant <value = int64[4] {2, 5, 2, 16}> ()  r = Reshape(y, sh)
      t = Transpose <perm = [0, 2, 1, 3]> (r) })");
  graph::Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count_op(after, "SwapPairs"), 1);
  EXPECT_EQ(count_op(after, "Sub"), 0);
  test::expect_same_outputs(before, after, 7);
}

}  // namespace
}  // namespace braze
