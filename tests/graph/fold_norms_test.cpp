// fold_norms_into_products: a LayerNormalization read by products (and element-wise ops)
// becomes statistics, weights γ W and an epilogue; the graph computes the same outputs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "graph/passes/dce.h"
#include "graph/passes/fold_norms.h"
#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

int count(const graph::Graph& g, const std::string& op) {
  const std::map<std::string, int> ops = graph::passes::op_counts(g);
  return ops.count(op) ? ops.at(op) : 0;
}

// `name = Constant` of a float [rows, cols] of values in (-1, 1), the same for the same seed.
std::string weights(const char* name, int rows, int cols, unsigned seed) {
  std::string v;
  for (int i = 0; i < rows * cols; ++i) {
    seed = seed * 1103515245u + 12345u;
    v += fmt::format("{}{:.4f}", i ? ", " : "", static_cast<double>((seed >> 8) % 2000) / 1000 - 1);
  }
  return fmt::format("{} = Constant <value = float[{},{}] {{{}}}> ()", name, rows, cols, v);
}

// The LayerNormalization left computing Mean and InvStdDev only, its output read by nothing.
void expect_statistics_only(const graph::Graph& g) {
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(i));
    if (n.dead || n.op_type() != "LayerNormalization") continue;
    EXPECT_TRUE(g.users()[n.outputs[0]].empty()) << "LN(x) is still read";
    ASSERT_EQ(n.outputs.size(), 3u);
    EXPECT_EQ(g.value(n.outputs[1]).dtype, DType::Float32);
  }
}

// BERT's post-norm block: LN(x) projected (through the rows Reshape) and added back as the
// residual.
std::string post_norm() {
  return R"(<ir_version: 8, opset_import: ["" : 18]>
  g (float[2,5,16] x, float[2,5,24] r) => (float[2,5,24] y, float[2,5,16] z) {
    )" + weights("w", 16, 24, 3) +
         R"(
    gm = Constant <value = float[16] {1.5, 0.5, 1, 2, 0.25, 1, 1, 0.75, 1.25, 1, 0.5, 2, 1, 1, 0.9, 1.1}> ()
    bt = Constant <value = float[16] {0.1, -0.2, 0, 0.3, 0, 0, 0.5, -1, 0, 0.2, 0, 0, 0.1, 0, 0, -0.3}> ()
    h = LayerNormalization <axis = -1, epsilon = 1e-5> (x, gm, bt)
    sh = Constant <value = int64[2] {10, 16}> ()  rows = Reshape(h, sh)
    mm = MatMul(rows, w)  sh2 = Constant <value = int64[3] {2, 5, 24}> ()  p = Reshape(mm, sh2)
    y = Add(p, r)  z = Add(h, x) })";
}

TEST(FoldNorms, APostNormBlockComputesTheSameWithoutLnOfX) {
  graph::Graph before = test::graph_from_text(post_norm());
  graph::passes::run_pipeline(before);
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::fold_norms_into_products(after), 1);
  graph::passes::eliminate_dead_code(after);
  EXPECT_EQ(count(after, "LayerNormalization"), 1);
  EXPECT_EQ(count(after, "MatMul"), 1);
  expect_statistics_only(after);
  test::expect_same_outputs(before, after, 21);
  EXPECT_EQ(graph::passes::fold_norms_into_products(after), 0) << "its statistics are read now";
}

TEST(FoldNorms, KMajorWeightsKeepTheirLayout) {
  // As store_weights_k_major leaves them: a constant Wᵀ behind a Transpose (no pipeline here:
  // fold_constants would fold a float32 one).
  const graph::Graph before = test::graph_from_text(
      R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[6,16] x) => (float[6,8] y) {
      gm = Constant <value = float[16] {1.5, 0.5, 1, 2, 0.25, 1, 1, 0.75, 1.25, 1, 0.5, 2, 1, 1, 0.9, 1.1}> ()
      h = LayerNormalization <axis = -1> (x, gm)
      )" +
      weights("wt", 8, 16, 5) + R"(  w = Transpose <perm = [1, 0]> (wt)  y = MatMul(h, w) })");
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::fold_norms_into_products(after), 1);
  graph::passes::eliminate_dead_code(after);
  EXPECT_EQ(count(after, "Transpose"), 1);
  expect_statistics_only(after);
  test::expect_same_outputs(before, after, 23);
}

TEST(FoldNorms, NormsReadOtherwiseStay) {
  for (const char* reader : {"y = Softmax <axis = -1> (h)", "y = Identity(h)"}) {
    graph::Graph g = test::graph_from_text(std::string(R"(<ir_version: 8, opset_import: ["" : 18]>
      g (float[6,16] x) => (float[6,16] y, float[6,8] q) {
        gm = Constant <value = float[16] {1.0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}> ()
        h = LayerNormalization <axis = -1> (x, gm)
        )") + weights("w", 16, 8, 5) + "  q = MatMul(h, w)  " +
                                           reader + " }");
    graph::passes::run_pipeline(g);
    EXPECT_EQ(graph::passes::fold_norms_into_products(g), 0) << reader;
  }
  graph::Graph out = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[6,16] x) => (float[6,16] h, float[6,8] q) {
      gm = Constant <value = float[16] {1.0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}> ()
      h = LayerNormalization <axis = -1> (x, gm)
      )" + weights("w", 16, 8, 5) + "  q = MatMul(h, w) }");
  graph::passes::run_pipeline(out);
  EXPECT_EQ(graph::passes::fold_norms_into_products(out), 0) << "LN(x) is a graph output";
}

}  // namespace
}  // namespace braze
