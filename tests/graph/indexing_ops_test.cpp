// Indexing ops beyond what the ONNX node tests cover: out-of-range indices as user errors,
// the opset-18 scatter reductions, TopK's attribute form and tiebreak, data-dependent
// NonZero. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace braze {
namespace {

TEST(IndexingOps, GatherNegativeIndexAndOutOfRangeError) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] x, int64[2] i) => (float[2,2] y) { y = Gather <axis = 0> (x, i) })");
  Tensor x = test::floats({3, 2}, {1, 2, 3, 4, 5, 6});
  // Row -1 is row 2, row 0 is row 0.
  test::expect_floats(test::run(g, {x, test::int64s({2}, {-1, 0})})[0], {2, 2}, {5, 6, 1, 2});
  // Axis 0 has size 3: 3 and -4 are out of range.
  test::expect_user_error(
      [&] {
        test::run(g, {x, test::int64s({2}, {0, 3})});
      },
      {"Gather", "index 3", "indices[1]", "axis 0 of size 3"});
  test::expect_user_error(
      [&] {
        test::run(g, {x, test::int64s({2}, {-4, 0})});
      },
      {"Gather", "index -4"});
}

TEST(IndexingOps, GatherElementsOutOfRangeIndexIsAUserError) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x, int64[2,2] i) => (float[2,2] y) { y = GatherElements <axis = 1> (x, i) })");
  Tensor x = test::floats({2, 2}, {1, 2, 3, 4});
  // y[r][c] = x[r][i[r][c]]: row 0 takes columns 1, 0; row 1 takes -1 (= 1), 1.
  test::expect_floats(test::run(g, {x, test::int64s({2, 2}, {1, 0, -1, 1})})[0], {2, 2},
                      {2, 1, 4, 4});
  test::expect_user_error(
      [&] {
        test::run(g, {x, test::int64s({2, 2}, {0, 0, 2, 0})});
      },
      {"GatherElements", "index 2", "indices[1,0]", "axis 1 of size 2"});
}

TEST(IndexingOps, GatherNDBatchDimsAndOutOfRangeError) {
  // The spec's example 5: batch_dims 1, data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]]
  // -> batch 0 takes data[0][1] = [2,3], batch 1 takes data[1][0] = [4,5].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2,2] x, int64[2,1] i) => (float[2,2] y) { y = GatherND <batch_dims = 1> (x, i) })");
  Tensor x = test::floats({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  test::expect_floats(test::run(g, {x, test::int64s({2, 1}, {1, 0})})[0], {2, 2}, {2, 3, 4, 5});
  test::expect_user_error(
      [&] {
        test::run(g, {x, test::int64s({2, 1}, {1, -3})});
      },
      {"GatherND", "index -3", "axis 1 of size 2"});
}

TEST(IndexingOps, ScatterElementsOutOfRangeIndexIsAUserError) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[3] x, int64[2] i, float[2] u) => (float[3] y) { y = ScatterElements (x, i, u) })");
  Tensor x = test::floats({3}, {0, 0, 0});
  Tensor u = test::floats({2}, {7, 8});
  test::expect_floats(test::run(g, {x, test::int64s({2}, {-1, 0}), u})[0], {3}, {8, 0, 7});
  test::expect_user_error(
      [&] {
        test::run(g, {x, test::int64s({2}, {1, 5}), u});
      },
      {"ScatterElements", "index 5", "indices[1]", "axis 0 of size 3"});
}

TEST(IndexingOps, ScatterElementsReductionMaxAndMinOpset18) {
  // data [[1, 5, 3]], axis 1, indices [[0, 0, 2]], updates [[4, 0.5, 2]]:
  // max: x[0] = max(1, 4, 0.5) = 4, x[1] = 5 untouched, x[2] = max(3, 2) = 3.
  // min: x[0] = min(1, 4, 0.5) = 0.5, x[1] = 5, x[2] = min(3, 2) = 2.
  for (auto [red, want] :
       {std::pair<std::string, std::vector<float>>{"max", {4, 5, 3}}, {"min", {0.5f, 5, 2}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[1,3] x, int64[1,3] i, float[1,3] u) => (float[1,3] y) {
        y = ScatterElements <axis = 1, reduction = ")" +
                                           red + R"("> (x, i, u) })");
    Tensor y = test::run(g, {test::floats({1, 3}, {1, 5, 3}), test::int64s({1, 3}, {0, 0, 2}),
                             test::floats({1, 3}, {4, 0.5f, 2})})[0];
    test::expect_floats(y, {1, 3}, want);
  }
}

TEST(IndexingOps, ScatterReductionMaxNeedsOpset18) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 16]>
      g (float[3] x, int64[1] i, float[1] u) => (float[3] y) {
        y = ScatterElements <reduction = "max"> (x, i, u) })");
      },
      {"ScatterElements", "max", "opset 18"});
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[3] x, int64[1] i, float[1] u) => (float[3] y) {
        y = ScatterElements <reduction = "sum"> (x, i, u) })");
      },
      {"ScatterElements", "reduction", "sum"});
}

TEST(IndexingOps, ScatterNDReductionMulAndMaxOpset18) {
  // data [1, 2, 3, 4], indices [[1], [3], [1]], updates [10, 0.5, 3]:
  // mul: x[1] = 2 * 10 * 3 = 60, x[3] = 4 * 0.5 = 2.
  // max: x[1] = max(2, 10, 3) = 10, x[3] = max(4, 0.5) = 4.
  for (auto [red, want] :
       {std::pair<std::string, std::vector<float>>{"mul", {1, 60, 3, 2}}, {"max", {1, 10, 3, 4}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[4] x, int64[3,1] i, float[3] u) => (float[4] y) { y = ScatterND <reduction = ")" +
                                           red + R"("> (x, i, u) })");
    Tensor y = test::run(g, {test::floats({4}, {1, 2, 3, 4}), test::int64s({3, 1}, {1, 3, 1}),
                             test::floats({3}, {10, 0.5f, 3})})[0];
    test::expect_floats(y, {4}, want);
  }
}

TEST(IndexingOps, TopKOpset9AttributeAndLowerIndexWinsTies) {
  // x = [3, 1, 3, 2, 1]: the two largest are the two 3s, at 0 then 2 (lower index first).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 9]>
    g (float[5] x) => (float[2] v, int64[2] i) { v, i = TopK <k = 2> (x) })");
  std::vector<Tensor> y = test::run(g, {test::floats({5}, {3, 1, 3, 2, 1})});
  test::expect_floats(y[0], {2}, {3, 3});
  test::expect_int64s(y[1], {2}, {0, 2});
}

TEST(IndexingOps, TopKSmallestAlongAxis0) {
  // Columns of [[4, 1], [2, 1], [4, 0]]: smallest two of column 0 are 2 (row 1) then 4 (row
  // 0, before row 2); of column 1 they are 0 (row 2) then 1 (row 0, before row 1).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[3,2] x) => (float[2,2] v, int64[2,2] i) <int64[1] k = {2}> {
      v, i = TopK <axis = 0, largest = 0> (x, k) })");
  std::vector<Tensor> y = test::run(g, {test::floats({3, 2}, {4, 1, 2, 1, 4, 0})});
  test::expect_floats(y[0], {2, 2}, {2, 0, 4, 1});
  test::expect_int64s(y[1], {2, 2}, {1, 2, 0, 0});
}

TEST(IndexingOps, TopKKLargerThanTheAxisIsAUserError) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 11]>
      g (float[3] x) => (float[4] v, int64[4] i) <int64[1] k = {4}> { v, i = TopK (x, k) })");
      },
      {"TopK", "k = 4", "size 3"});
}

TEST(IndexingOps, OneHotNegativeIndicesWrapAndOutOfRangeAreOff) {
  // depth 3, values [off 0, on 5], axis 0: index -1 is 2; 3 and -4 are out of range (all off).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (int64[4] i) => (float[3,4] y) <float d = {3.0}, float[2] v = {0.0, 5.0}> {
      y = OneHot <axis = 0> (i, d, v) })");
  Tensor y = test::run(g, {test::int64s({4}, {0, -1, 3, -4})})[0];
  test::expect_floats(y, {3, 4},
                      {5, 0, 0, 0,  //
                       0, 0, 0, 0,  //
                       0, 5, 0, 0});
}

TEST(IndexingOps, NonZeroShapeDependsOnTheData) {
  // [[1, 0], [0, -3]]: non-zeros at (0, 0) and (1, 1) -> rows [0, 1] and columns [0, 1].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (int64[2,?] y) { y = NonZero (x) })");
  const graph::Value& out = g.value(g.outputs()[0].value);
  EXPECT_FALSE(out.has_shape);
  test::expect_int64s(test::run(g, {test::floats({2, 2}, {1, 0, 0, -3})})[0], {2, 2}, {0, 1, 0, 1});
  test::expect_int64s(test::run(g, {test::floats({2, 2}, {0, 0, 0, 0})})[0], {2, 0}, {});
}

}  // namespace
}  // namespace braze
