// Constant nodes are imported as constant values, as initializers are, so that what is
// inferred after them while importing sees their values: a Reshape to a Constant node's shape
// has its shape, and an op expanded at import that needs its input's shape (RotaryEmbedding
// of a 4-D X, graph/ops/composite.cpp) imports after such a Reshape.
#include <gtest/gtest.h>

#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

TEST(ImportConstantNodes, AreConstantValuesSoTheShapesAfterThemAreKnown) {
  const graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,6] x) => (float[3,4] y) {
      sh = Constant <value = int64[2] {3, 4}> ()
      y = Reshape(x, sh) })");
  EXPECT_EQ(graph::passes::op_counts(g).count("Constant"), 0u);
  const graph::Value& sh = g.value(g.find_value("sh"));
  ASSERT_TRUE(sh.constant);
  EXPECT_EQ(sh.constant->to_int64s(), (std::vector<int64_t>{3, 4}));
  const graph::Value& y = g.value(g.find_value("y"));
  ASSERT_TRUE(y.has_shape);
  EXPECT_EQ(y.shape, (Shape{3, 4}));
  const std::vector<Tensor> out = test::run(g, {test::iota({2, 6})});
  test::expect_floats(out.at(0), {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
}

TEST(ImportConstantNodes, AnExpansionAfterThemSeesTheirShapes) {
  const graph::Graph g = test::graph_from_text(R"(<ir_version: 10, opset_import: ["" : 23]>
    g (float[1,5,32] x, float[1,5,8] c, float[1,5,8] s) => (float[1,2,5,16] y) {
      sh = Constant <value = int64[4] {1, 5, 2, 16}> ()
      r = Reshape(x, sh)  t = Transpose <perm = [0, 2, 1, 3]> (r)
      y = RotaryEmbedding(t, c, s) })");
  EXPECT_EQ(graph::passes::op_counts(g).count("RotaryEmbedding"), 0u);
  const graph::Value& y = g.value(g.find_value("y"));
  ASSERT_TRUE(y.has_shape);
  EXPECT_EQ(y.shape, (Shape{1, 2, 5, 16}));
}

}  // namespace
}  // namespace braze
