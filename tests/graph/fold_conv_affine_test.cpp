// fold_conv_affine (#19): inference BatchNormalization and per-channel Mul / Add after a Conv
// folded into its weights and bias. Each test checks what was folded and that the graph
// computes the same outputs before and after on random inputs.
#include "graph/passes/fold_conv_affine.h"

#include <gtest/gtest.h>

#include "graph/op_context.h"
#include "graph/passes/pipeline.h"
#include "graph/registry.h"
#include "tests/test_util.h"

namespace braze {
namespace {

using graph::Graph;
using graph::ValueId;

// Positive random values (variances must be).
Tensor positive(Shape s, uint64_t seed) {
  Tensor t = test::random(DType::Float32, s, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, std::abs(t.get_f64(i)) + 0.5);
  return t;
}

// Builds x -> Conv -> (the ops `then` adds) and marks the last value the output.
Graph conv_graph(bool bias, const std::function<ValueId(Graph&, ValueId)>& then,
                 int64_t group = 1) {
  Graph g;
  const int64_t cin = 2 * group, cout = 4;
  ValueId x = g.add_value("x", DType::Float32, {2, cin, 6, 6});
  g.add_input(x);
  ValueId w = g.add_constant("w", test::random(DType::Float32, {cout, cin / group, 3, 3}, 3));
  std::vector<ValueId> ins = {x, w};
  if (bias) ins.push_back(g.add_constant("b", test::random(DType::Float32, {cout}, 4)));
  ValueId y = g.add_value("y", DType::Float32, {2, cout, 4, 4});
  graph::NodeId c = g.add_node(&graph::op("Conv"), "conv", ins, {y}, {{"group", group}}, 18);
  graph::infer_node(g, c);
  ValueId out = then(g, y);
  g.add_output(out, "out");
  return g;
}

ValueId batch_norm(Graph& g, ValueId y) {
  std::vector<ValueId> ins = {y, g.add_constant("scale", test::random(DType::Float32, {4}, 5)),
                              g.add_constant("beta", test::random(DType::Float32, {4}, 6)),
                              g.add_constant("mean", test::random(DType::Float32, {4}, 7)),
                              g.add_constant("var", positive({4}, 8))};
  ValueId z = g.add_value("z", DType::Float32, g.value(y).shape);
  graph::NodeId n =
      g.add_node(&graph::op("BatchNormalization"), "bn", ins, {z}, {{"epsilon", 1e-3}}, 15);
  graph::infer_node(g, n);
  return z;
}

ValueId binary(Graph& g, const char* op, ValueId y, Tensor k, bool constant_first = false) {
  ValueId c = g.add_constant(std::string(op) + "_k", std::move(k));
  ValueId z =
      g.add_value(g.unique_name(std::string(op) + "_out"), DType::Float32, g.value(y).shape);
  std::vector<ValueId> ins =
      constant_first ? std::vector<ValueId>{c, y} : std::vector<ValueId>{y, c};
  graph::infer_node(g, g.add_node(&graph::op(op), g.unique_name(op), ins, {z}, {}, 14));
  return z;
}

int count(const Graph& g, const char* op) { return graph::passes::op_counts(g)[op]; }

TEST(FoldConvAffine, BatchNormFoldsIntoConvWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    Graph before = conv_graph(bias, batch_norm);
    Graph after = before;
    EXPECT_EQ(graph::passes::fold_conv_affine(after), 1);
    EXPECT_EQ(count(after, "Conv"), 1);
    graph::passes::run_pipeline(after);  // conv_as_matmul then makes the Conv a product
    EXPECT_EQ(count(after, "BatchNormalization"), 0);
    test::expect_same_outputs(before, after, 7);
  }
}

TEST(FoldConvAffine, GroupedConvAndChainsOfPerChannelMulAndAddFold) {
  Graph before = conv_graph(
      true,
      [](Graph& g, ValueId y) {
        ValueId z = batch_norm(g, y);
        z = binary(g, "Mul", z, test::random(DType::Float32, {4, 1, 1}, 9));
        z = binary(g, "Add", z, test::random(DType::Float32, {1, 4, 1, 1}, 10), true);
        return binary(g, "Mul", z, Tensor::scalar_of(DType::Float32, 0.5));
      },
      2);
  Graph after = before;
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count(after, "BatchNormalization") + count(after, "Mul") + count(after, "Add"), 0);
  test::expect_same_outputs(before, after, 7);
}

TEST(FoldConvAffine, WhatIsNotPerChannelOrNotConstantStays) {
  // A Mul varying along the width, and an Add of a graph input.
  Graph spatial = conv_graph(true, [](Graph& g, ValueId y) {
    return binary(g, "Mul", y, test::random(DType::Float32, {1, 1, 1, 4}, 11));
  });
  EXPECT_EQ(graph::passes::fold_conv_affine(spatial), 0);
  Graph input = conv_graph(true, [](Graph& g, ValueId y) {
    ValueId a = g.add_value("a", DType::Float32, {4, 1, 1});
    g.add_input(a);
    ValueId z = g.add_value("z", DType::Float32, g.value(y).shape);
    graph::infer_node(g, g.add_node(&graph::op("Add"), "add", {y, a}, {z}, {}, 14));
    return z;
  });
  EXPECT_EQ(graph::passes::fold_conv_affine(input), 0);
}

TEST(FoldConvAffine, AConvOutputWithAnotherReaderStays) {
  Graph g = conv_graph(true, [](Graph& g, ValueId y) {
    ValueId z = batch_norm(g, y);
    ValueId s = g.add_value("s", DType::Float32, g.value(y).shape);
    graph::infer_node(g, g.add_node(&graph::op("Add"), "add", {z, y}, {s}, {}, 14));
    return s;
  });
  EXPECT_EQ(graph::passes::fold_conv_affine(g), 0);
}

}  // namespace
}  // namespace braze
