// Generator ops beyond what the ONNX node tests cover: Shape's start/end, Constant's scalar
// and list attributes (opset 12+), unsupported constants, Range edge cases, EyeLike's k, and
// Shape folding from shapes alone. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "graph/passes/constant_fold.h"
#include "tests/test_util.h"

namespace braze {
namespace {

Tensor shape_of(const std::string& attrs) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 21]>
    g (float[2,3,4,5] x) => (int64[?] y) { y = Shape )" +
                                         attrs + R"( (x) })");
  return test::run(g, {test::random(DType::Float32, {2, 3, 4, 5})})[0];
}

TEST(GeneratorOps, ShapeStartEnd) {
  // Dims [2,3,4,5]: negative start/end count from the back, then clamp to [0, 4].
  test::expect_int64s(shape_of(""), {4}, {2, 3, 4, 5});
  test::expect_int64s(shape_of("<start = -3, end = -1>"), {2}, {3, 4});
  test::expect_int64s(shape_of("<start = 1, end = 100>"), {3}, {3, 4, 5});
  test::expect_int64s(shape_of("<start = -100, end = 1>"), {1}, {2});
  test::expect_int64s(shape_of("<end = 0>"), {0}, {});
  test::expect_int64s(shape_of("<start = 3, end = 1>"), {0}, {});  // start after end: empty
}

TEST(GeneratorOps, ShapeAndSizeFoldFromShapesAlone) {
  // x is a graph input with no value: Shape and Size still fold, from its shape [2,3,4].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,3,4] x) => (int64[2] s, int64 n) { s = Shape <start = 1> (x)
                                                  n = Size (x) })");
  EXPECT_EQ(graph::passes::fold_constants(g), 2);
  const graph::Value& s = g.value(g.outputs()[0].value);
  const graph::Value& n = g.value(g.outputs()[1].value);
  ASSERT_TRUE(s.constant && n.constant);
  test::expect_int64s(*s.constant, {2}, {3, 4});
  test::expect_int64s(*n.constant, {}, {24});
}

TEST(GeneratorOps, ConstantValueInts) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[3] x) => (int64[3] y) { c = Constant <value_ints = [7, -2, 9]> ()
                                     y = Add (x, c) })");
  // [1, 1, 1] + [7, -2, 9]
  test::expect_int64s(test::run(g, {test::int64s({3}, {1, 1, 1})})[0], {3}, {8, -1, 10});
}

TEST(GeneratorOps, ConstantScalarAndListAttributes) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float x) => (float a, float[2] b, int64 c, float d) {
      a = Constant <value_float = 2.5> ()
      b = Constant <value_floats = [0.25, -4.0]> ()
      c = Constant <value_int = -7> ()
      d = Identity (x) })");
  std::vector<Tensor> y = test::run(g, {test::floats({}, {1})});
  ASSERT_EQ(y[0].shape(), Shape{});
  EXPECT_EQ(y[0].get_f64(0), 2.5);
  ASSERT_EQ(y[1].shape(), Shape{2});
  EXPECT_EQ(y[1].get_f64(0), 0.25);
  EXPECT_EQ(y[1].get_f64(1), -4.0);
  test::expect_int64s(y[2], {}, {-7});
}

TEST(GeneratorOps, ConstantStringIsUnsupportedAndTwoValuesAreAnError) {
  try {
    test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float x) => (float y) { c = Constant <value_string = "hi"> ()
                                 y = Identity (x) })");
    FAIL() << "expected an UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("value_string"), std::string::npos) << e.what();
  }
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float x) => (float y) { c = Constant <value_int = 1, value_float = 2.0> ()
                                 y = Identity (x) })");
      },
      {"Constant", "exactly one", "value_float, value_int"});
}

TEST(GeneratorOps, ConstantOfShapeWithIntValue) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 9]>
    g (float x) => (int32[2,3] y) <int64[2] s = {2, 3}> {
      y = ConstantOfShape <value = int32[1] {-4}> (s) })");
  Tensor y = test::run(g, {test::floats({}, {0})})[0];
  ASSERT_EQ(y.dtype(), DType::Int32);
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.get_i64(i), -4);
}

Tensor range_of(const std::string& type, const std::string& s, const std::string& l,
                const std::string& d) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float x) => ()" + type + R"([?] y) <)" +
                                         type + " s = {" + s + "}, " + type + " l = {" + l + "}, " +
                                         type + " d = {" + d + R"(}> { y = Range (s, l, d) })");
  return test::run(g, {test::floats({}, {0})})[0];
}

TEST(GeneratorOps, RangeCounts) {
  // ceil((9 - 3) / 3) = 2: [3, 6]; ceil((4 - 10) / -2) = 3: [10, 8, 6]; wrong direction: empty.
  test::expect_int64s(range_of("int64", "3", "9", "3"), {2}, {3, 6});
  test::expect_int64s(range_of("int64", "10", "4", "-2"), {3}, {10, 8, 6});
  test::expect_int64s(range_of("int64", "1", "5", "-1"), {0}, {});
  // ceil((1.0 - 0.0) / 0.3) = ceil(3.33) = 4: [0, 0.3, 0.6, 0.9].
  Tensor f = range_of("double", "0.0", "1.0", "0.3");
  ASSERT_EQ(f.shape(), Shape{4});
  EXPECT_DOUBLE_EQ(f.get_f64(3), 0.9);
  test::expect_user_error([] { range_of("int32", "0", "4", "0"); }, {"Range", "delta"});
}

TEST(GeneratorOps, EyeLikeOffDiagonalAndDtype) {
  // 3x4 with k = 2 (upper): ones at (0, 2) and (1, 3); k = -2 (lower): one at (2, 0).
  for (auto [k, want] :
       {std::pair<int, std::vector<int64_t>>{2, {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
        {-2, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 9]>
      g (float[3,4] x) => (int64[3,4] y) { y = EyeLike <k = )" +
                                           std::to_string(k) + R"(, dtype = 7> (x) })");
    test::expect_int64s(test::run(g, {test::random(DType::Float32, {3, 4})})[0], {3, 4}, want);
  }
}

}  // namespace
}  // namespace braze
