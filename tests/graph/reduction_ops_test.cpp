// Reductions beyond what the ONNX node tests (opset <= 17) cover: axes as an input at
// opset 18, noop_with_empty_axes, empty reductions, older opsets' forms, softmax on extreme
// rows, and errors. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/registry.h"
#include "tests/test_util.h"

namespace braze {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor run1(const std::string& text, const std::vector<Tensor>& inputs) {
  return test::run(test::graph_from_text(text), inputs)[0];
}

// x = [[1, 2, 3], [4, 5, 6]]
Tensor x23() { return test::floats({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(ReductionOps, Opset18AxesInput) {
  // Row means: (1+2+3)/3 = 2, (4+5+6)/3 = 5.
  Tensor y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) <int64[1] axes = {1}> {
      y = ReduceMean <keepdims = 0> (x, axes) })",
                  {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({2}, {2, 5})));

  // Column maxima over a negative axis, dims kept: [[4, 5, 6]].
  y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[1,3] y) <int64[1] axes = {-2}> { y = ReduceMax(x, axes) })",
           {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 3}, {4, 5, 6})));
}

TEST(ReductionOps, Opset18NoAxesReducesEverything) {
  // 1 + 4 + 9 + 16 + 25 + 36 = 91, dims kept: [[91]].
  Tensor y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[1,1] y) { y = ReduceSumSquare(x) })",
                  {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 1}, {91})));

  // An empty axes tensor without noop_with_empty_axes also means every axis: 1*2*...*6 = 720.
  y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float y) <int64[0] axes = {}> { y = ReduceProd <keepdims = 0> (x, axes) })",
           {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({}, {720})));
}

TEST(ReductionOps, Opset18NoopWithEmptyAxes) {
  // Nothing is reduced: ReduceSum gives the input back.
  Tensor y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2,3] y) <int64[0] axes = {}> {
      y = ReduceSum <noop_with_empty_axes = 1> (x, axes) })",
                  {x23()});
  EXPECT_TRUE(test::tensors_close(y, x23()));

  // With the axes input absent, too. Reducing over no axis still applies the per-element
  // part of the reduction (ONNX's corrected spec, onnx/onnx#7394): x^2 for ReduceSumSquare,
  // |x| for ReduceL1.
  const char* sum_square = R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,2] x) => (float[2,2] y) { y = ReduceSumSquare <noop_with_empty_axes = 1> (x) })";
  y = run1(sum_square, {test::floats({2, 2}, {1, -2, 3, -4})});
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {1, 4, 9, 16})));
  const char* l1 = R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,2] x) => (float[2,2] y) { y = ReduceL1 <noop_with_empty_axes = 1> (x) })";
  y = run1(l1, {test::floats({2, 2}, {1, -2, 3, -4})});
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {1, 2, 3, 4})));

  // noop_with_empty_axes has no effect when axes are given: row sums 6 and 15.
  y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2,1] y) <int64[1] axes = {1}> {
      y = ReduceSum <noop_with_empty_axes = 1> (x, axes) })",
           {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 1}, {6, 15})));
}

TEST(ReductionOps, OlderOpsetAxesAttribute) {
  // Opset 13 ReduceL2 with an axes attribute: column norms sqrt(1+16), sqrt(4+25), sqrt(9+36).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 7, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[3] y) { y = ReduceL2 <axes = [0], keepdims = 0> (x) })");
  Tensor y = test::run(g, {x23()})[0];
  EXPECT_TRUE(test::tensors_close(
      y, test::floats({3}, {std::sqrt(17.f), std::sqrt(29.f), std::sqrt(45.f)})));
  // The attribute became input 1 (the canonical form).
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (!g.node(i).dead && g.node(i).op_type() == "ReduceL2") {
      EXPECT_FALSE(g.node(i).has_attr("axes"));
      EXPECT_TRUE(g.node(i).has_input(1));
    }

  // Opset 11 ReduceSum (axes an attribute until 12), none given: everything, 21.
  y = run1(R"(
    <ir_version: 7, opset_import: ["" : 11]>
    g (float[2,3] x) => (float[1,1] y) { y = ReduceSum(x) })",
           {x23()});
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 1}, {21})));
}

TEST(ReductionOps, IntegerAndBoolTypes) {
  // int32 row maxima and minima; means truncate as numpy's astype does: 7/2 -> 3, -7/2 -> -3.
  Tensor xi(DType::Int32, {2, 2});
  int32_t vals[] = {3, 4, -3, -4};
  for (int i = 0; i < 4; ++i) xi.set_i64(i, vals[i]);
  Tensor y = run1(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (int32[2,2] x) => (int32[2] y) <int64[1] axes = {1}> { y = ReduceMean <keepdims = 0> (x, axes) })",
                  {xi});
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.get_i64(0), 3);
  EXPECT_EQ(y.get_i64(1), -3);

  // Bool ReduceMax / ReduceMin (opset 20) are any / all.
  Tensor xb(DType::Bool, {2, 2});
  xb.set_i64(0, 1), xb.set_i64(1, 0), xb.set_i64(2, 0), xb.set_i64(3, 0);
  Tensor any = run1(R"(
    <ir_version: 9, opset_import: ["" : 20]>
    g (bool[2,2] x) => (bool[2] y) <int64[1] axes = {1}> { y = ReduceMax <keepdims = 0> (x, axes) })",
                    {xb});
  Tensor all = run1(R"(
    <ir_version: 9, opset_import: ["" : 20]>
    g (bool[2,2] x) => (bool[2] y) <int64[1] axes = {0}> { y = ReduceMin <keepdims = 0> (x, axes) })",
                    {xb});
  EXPECT_EQ(any.get_i64(0), 1);
  EXPECT_EQ(any.get_i64(1), 0);
  EXPECT_EQ(all.get_i64(0), 0);
  EXPECT_EQ(all.get_i64(1), 0);
}

TEST(ReductionOps, EmptyReductions) {
  // Reducing an axis of size 0 gives each reduction's identity (onnx/onnx#5568).
  Tensor x(DType::Float32, {2, 0});
  auto reduce = [&](const std::string& op) {
    return run1(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[2,0] x) => (float[2] y) <int64[1] axes = {1}> { y = )" +
                    op + R"( <keepdims = 0> (x, axes) })",
                {x});
  };
  EXPECT_TRUE(test::tensors_close(reduce("ReduceSum"), test::floats({2}, {0, 0})));
  EXPECT_TRUE(test::tensors_close(reduce("ReduceProd"), test::floats({2}, {1, 1})));
  EXPECT_EQ(reduce("ReduceMax").get_f64(0), -kInf);
  EXPECT_EQ(reduce("ReduceMin").get_f64(1), kInf);
  EXPECT_EQ(reduce("ReduceLogSumExp").get_f64(0), -kInf);
  EXPECT_TRUE(std::isnan(reduce("ReduceMean").get_f64(0)));
}

TEST(ReductionOps, ArgMaxSelectLastIndex) {
  // Rows [1, 3, 3] and [2, 2, 1]: first maxima at 1 and 0, last at 2 and 1; minima
  // first at 0 and 2.
  Tensor x = test::floats({2, 3}, {1, 3, 3, 2, 2, 1});
  auto arg = [&](const std::string& op, int last) {
    return run1(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (int64[2] y) { y = )" +
                    op + " <axis = 1, keepdims = 0, select_last_index = " + std::to_string(last) +
                    "> (x) }",
                {x});
  };
  EXPECT_TRUE(test::tensors_close(arg("ArgMax", 0), test::int64s({2}, {1, 0})));
  EXPECT_TRUE(test::tensors_close(arg("ArgMax", 1), test::int64s({2}, {2, 1})));
  EXPECT_TRUE(test::tensors_close(arg("ArgMin", 0), test::int64s({2}, {0, 2})));
}

TEST(ReductionOps, SoftmaxExtremeRows) {
  // Each row, worked out as numpy's x - max(x), exp, normalise would:
  //   [1e4, -1e4, 0, 1]:    exp(-1e4 - ...) underflows, so [1, 0, 0, 0]
  //   [-1e4 x 4]:           uniform 1/4 (no underflow after subtracting the max)
  //   [-inf, 0, 0, -inf]:   [0, 1/2, 1/2, 0]
  //   [-inf x 4]:           -inf - -inf = NaN everywhere
  //   [NaN, 1, 2, 3]:       the max is NaN, so everything is NaN
  //   [+inf, 1, 2, 3]:      inf - inf = NaN, so the sum and everything is NaN
  Tensor x = test::floats({6, 4}, {1e4f,      -1e4f,     0,         1,          //
                                   -1e4f,     -1e4f,     -1e4f,     -1e4f,      //
                                   -INFINITY, 0,         0,         -INFINITY,  //
                                   -INFINITY, -INFINITY, -INFINITY, -INFINITY,  //
                                   NAN,       1,         2,         3,          //
                                   INFINITY,  1,         2,         3});
  const std::string model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6,4] x) => (float[6,4] y) { y = OP(x) })";
  auto run_op = [&](const std::string& op) {
    std::string text = model;
    text.replace(text.find("OP"), 2, op);
    return run1(text, {x});
  };
  float n = NAN;
  Tensor sm = run_op("Softmax");
  EXPECT_TRUE(test::tensors_close(
      sm, test::floats({6, 4}, {1, 0, 0, 0, .25f, .25f, .25f, .25f, 0, .5f, .5f, 0,
                                n, n, n, n, n,    n,    n,    n,    n, n,   n,   n})));
  // LogSoftmax = (x - max) - log(sum(exp(x - max))): row 0 keeps its exact offsets.
  float l2 = std::log(2.f), l4 = std::log(4.f);
  Tensor lsm = run_op("LogSoftmax");
  EXPECT_TRUE(test::tensors_close(
      lsm, test::floats({6, 4},
                        {0, -2e4f, -1e4f, -9999, -l4, -l4, -l4, -l4, -INFINITY, -l2, -l2, -INFINITY,
                         n, n,     n,     n,     n,   n,   n,   n,   n,         n,   n,   n})));
  // Hardmax marks numpy's argmax: the first maximum, NaN counting as the maximum.
  Tensor hm = run_op("Hardmax");
  EXPECT_TRUE(test::tensors_close(hm, test::floats({6, 4}, {1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0,  //
                                                            1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0})));
}

TEST(ReductionOps, LegacySoftmaxFlattensAtAxis) {
  // Opset 11, axis 1 on [2,2,2]: each batch row is one softmax over 4 values.
  // Row 0 = [0, 1, 2, 3] -> e^k / (1 + e + e^2 + e^3); row 1 = [5, 5, 5, 5] -> 1/4.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 7, opset_import: ["" : 11]>
    g (float[2,2,2] x) => (float[2,2,2] y) { y = Softmax <axis = 1> (x) })");
  Tensor y = test::run(g, {test::floats({2, 2, 2}, {0, 1, 2, 3, 5, 5, 5, 5})})[0];
  double s = 1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_TRUE(test::tensors_close(
      y, test::floats({2, 2, 2}, {float(1 / s), float(std::exp(1.0) / s), float(std::exp(2.0) / s),
                                  float(std::exp(3.0) / s), .25f, .25f, .25f, .25f})));
  int reshapes = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (!g.node(i).dead && g.node(i).op_type() == "Reshape") ++reshapes;
  EXPECT_EQ(reshapes, 2);

  // Opset 7's default axis is 1; on a 2-D input that is the last axis, so no reshape.
  graph::Graph g2 = test::graph_from_text(R"(
    <ir_version: 7, opset_import: ["" : 7]>
    g (float[2,2] x) => (float[2,2] y) { y = LogSoftmax(x) })");
  EXPECT_EQ(g2.num_live_nodes(), 1u);
  Tensor y2 = test::run(g2, {test::floats({2, 2}, {0, 0, 1, 1})})[0];
  float l2 = std::log(2.f);
  EXPECT_TRUE(test::tensors_close(y2, test::floats({2, 2}, {-l2, -l2, -l2, -l2})));
}

TEST(ReductionOps, CumSumExclusiveReverse) {
  // [1, 2, 3, 4]: reverse exclusive sums are [2+3+4, 3+4, 4, 0].
  Tensor y = run1(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[4] x) => (float[4] y) <int32 axis = {0}> { y = CumSum <exclusive = 1, reverse = 1> (x, axis) })",
                  {test::floats({4}, {1, 2, 3, 4})});
  EXPECT_TRUE(test::tensors_close(y, test::floats({4}, {9, 7, 4, 0})));
  // int64 along the last axis: [[1, 3, 6], [4, 9, 15]].
  y = run1(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (int64[2,3] x) => (int64[2,3] y) <int64 axis = {-1}> { y = CumSum(x, axis) })",
           {test::int64s({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_TRUE(test::tensors_close(y, test::int64s({2, 3}, {1, 3, 6, 4, 9, 15})));
}

TEST(ReductionOps, BadAxisIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) <int64[1] axes = {2}> { y = ReduceSum(x, axes) })",
                            {"axis 2 is out of range for rank 2"});
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) <int64[2] axes = {1, -1}> { y = ReduceSum(x, axes) })",
                            {"repeat an axis"});
  test::expect_import_error(R"(
    <ir_version: 7, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2] y) { y = ReduceMean <axes = [-3]> (x) })",
                            {"ReduceMean"});
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (int64[2] y) { y = ArgMax <axis = 2> (x) })",
                            {"axis 2 is out of range"});
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Softmax <axis = -3> (x) })",
                            {"Softmax"});
  test::expect_import_error(R"(
    <ir_version: 7, opset_import: ["" : 11]>
    g (float[2,3] x) => (float[2,3] y) { y = Hardmax <axis = 2> (x) })",
                            {"out of range"});
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2,3] x) => (float[2,3] y) <int64 axis = {5}> { y = CumSum(x, axis) })",
                            {"CumSum"});
  // An attribute where opset 18 takes an input.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) { y = ReduceMax <axes = [1]> (x) })",
                            {"axes is an input"});
  // Float axes.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2] y) <float[1] axes = {1.0}> { y = ReduceMax(x, axes) })",
                            {"axes must be int64"});
}

}  // namespace
}  // namespace braze
