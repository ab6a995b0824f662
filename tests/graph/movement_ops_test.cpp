// Data-movement ops beyond what the ONNX node tests cover: opsets 18 and 19, the attribute forms
// of older opsets, clamping edge cases and invalid nodes. Expected values are worked out by
// hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace braze {
namespace {

// Expects a float tensor of `shape` holding `want`.
TEST(MovementOps, SplitOpset18NumOutputsUnevenLastChunk) {
  // 7 elements into 3: chunks of ceil(7/3) = 3, the last one 7 - 2*3 = 1.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[7] x) => (float[3] a, float[3] b, float[1] c) {
      a, b, c = Split <num_outputs = 3> (x) })");
  std::vector<Tensor> y = test::run(g, {test::iota({7})});
  ASSERT_EQ(y.size(), 3u);
  test::expect_floats(y[0], {3}, {1, 2, 3});
  test::expect_floats(y[1], {3}, {4, 5, 6});
  test::expect_floats(y[2], {1}, {7});
}

TEST(MovementOps, SplitOpset18NumOutputsAlongAxis1) {
  // [2,4] into 2 along axis 1: columns 0-1 and 2-3.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,4] x) => (float[2,2] a, float[2,2] b) {
      a, b = Split <axis = -1, num_outputs = 2> (x) })");
  std::vector<Tensor> y = test::run(g, {test::iota({2, 4})});
  test::expect_floats(y[0], {2, 2}, {1, 2, 5, 6});
  test::expect_floats(y[1], {2, 2}, {3, 4, 7, 8});
}

TEST(MovementOps, SplitNumOutputsThatCannotBeMetIsAUserError) {
  // 5 into 4: chunks of 2 would leave -1 for the last.
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[5] x) => (float[2] a, float[2] b, float[2] c, float[1] d) {
        a, b, c, d = Split <num_outputs = 4> (x) })");
      },
      {"Split", "cannot be split"});
}

TEST(MovementOps, SplitOpset11AttributeForm) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 6, opset_import: ["" : 11]>
    g (float[2,3] x) => (float[2,1] a, float[2,2] b) {
      a, b = Split <axis = 1, split = [1, 2]> (x) })");
  std::vector<Tensor> y = test::run(g, {test::iota({2, 3})});
  test::expect_floats(y[0], {2, 1}, {1, 4});
  test::expect_floats(y[1], {2, 2}, {2, 3, 5, 6});
}

TEST(MovementOps, PadOpset18WithAxes) {
  // Only axis 1 (given as -1) is padded: 1 before, 2 after, with 9.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2,6] y)
      <int64[2] pads = {1, 2}, float v = {9.0}, int64[1] axes = {-1}> {
      y = Pad(x, pads, v, axes) })");
  Tensor y = test::run(g, {test::iota({2, 3})})[0];
  test::expect_floats(y, {2, 6},
                      {9, 1, 2, 3, 9, 9,  //
                       9, 4, 5, 6, 9, 9});
}

TEST(MovementOps, PadOpset19Wrap) {
  // Axis 1 gets 2 before and 1 after; wrap takes columns from the other end:
  // row [1,2,3] -> [2,3 | 1,2,3 | 1].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 9, opset_import: ["" : 19]>
    g (float[2,3] x) => (float[2,6] y) <int64[4] pads = {0, 2, 0, 1}> {
      y = Pad <mode = "wrap"> (x, pads) })");
  Tensor y = test::run(g, {test::iota({2, 3})})[0];
  test::expect_floats(y, {2, 6},
                      {2, 3, 1, 2, 3, 1,  //
                       5, 6, 4, 5, 6, 4});
}

TEST(MovementOps, PadWrapBeforeOpset19IsAUserError) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[3] x) => (float[4] y) <int64[2] pads = {1, 0}> {
        y = Pad <mode = "wrap"> (x, pads) })");
      },
      {"Pad", "wrap"});
}

TEST(MovementOps, PadReflectAndEdgeWithPadsLargerThanTheAxis) {
  // [1,2,3] padded by 3 on both sides. reflect mirrors without repeating the border,
  // period 4: ... 2 3 2 | 1 2 3 | 2 1 2 ...; edge repeats the border.
  for (auto [mode, want] :
       {std::pair<std::string, std::vector<float>>{"reflect", {2, 3, 2, 1, 2, 3, 2, 1, 2}},
        {"edge", {1, 1, 1, 1, 2, 3, 3, 3, 3}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[3] x) => (float[9] y) <int64[2] pads = {3, 3}> { y = Pad <mode = ")" +
                                           mode + R"("> (x, pads) })");
    test::expect_floats(test::run(g, {test::iota({3})})[0], {9}, want);
  }
}

TEST(MovementOps, PadNegativePadsCropBeforeEdgePadding) {
  // [1,2,3,4]: crop 1 at the front -> [2,3,4], then edge-pad 2 at the back -> [2,3,4,4,4].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[5] y) <int64[2] pads = {-1, 2}> {
      y = Pad <mode = "edge"> (x, pads) })");
  test::expect_floats(test::run(g, {test::iota({4})})[0], {5}, {2, 3, 4, 4, 4});
}

TEST(MovementOps, PadOpset2AttributeForm) {
  // pads and value as attributes (opset < 11): 1 before and 1 after on axis 0 only.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 3, opset_import: ["" : 7]>
    g (float[2,2] x) => (float[4,2] y) { y = Pad <pads = [1, 0, 1, 0], value = 7.5> (x) })");
  test::expect_floats(test::run(g, {test::iota({2, 2})})[0], {4, 2},
                      {7.5, 7.5, 1, 2, 3, 4, 7.5, 7.5});
}

TEST(MovementOps, SliceOpset9AttributeForm) {
  // x = 1..12 as [3,4]; rows 1..2, columns 0..2 (end -1 is column 3, exclusive).
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 4, opset_import: ["" : 9]>
    g (float[3,4] x) => (float[2,3] y) {
      y = Slice <starts = [1, 0], ends = [3, -1], axes = [0, 1]> (x) })");
  test::expect_floats(test::run(g, {test::iota({3, 4})})[0], {2, 3}, {5, 6, 7, 9, 10, 11});
}

TEST(MovementOps, SliceOpset9DefaultAxesAndOutOfRangeEnds) {
  // axes default to [0]; end 1000 clamps to 3.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 4, opset_import: ["" : 9]>
    g (float[3,2] x) => (float[2,2] y) { y = Slice <starts = [1], ends = [1000]> (x) })");
  test::expect_floats(test::run(g, {test::iota({3, 2})})[0], {2, 2}, {3, 4, 5, 6});
}

TEST(MovementOps, SliceNegativeStepsClampToTheEnds) {
  // start 20 clamps to the last index 9, end INT64_MIN to -1 (before the first): 9, 6, 3, 0
  // step -3 -> elements 10, 7, 4, 1 of x = 1..10.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[10] x) => (float[4] y)
      <int64[1] s = {20}, int64[1] e = {-9223372036854775808}, int64[1] a = {0},
       int64[1] st = {-3}> {
      y = Slice(x, s, e, a, st) })");
  test::expect_floats(test::run(g, {test::iota({10})})[0], {4}, {10, 7, 4, 1});
}

TEST(MovementOps, SliceZeroStepIsAUserError) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[1] y)
        <int64[1] s = {0}, int64[1] e = {4}, int64[1] a = {0}, int64[1] st = {0}> {
        y = Slice(x, s, e, a, st) })");
      },
      {"Slice", "steps"});
}

TEST(MovementOps, SqueezeAndUnsqueezeOpset11AttributeForm) {
  // Squeeze axes 0 and -2 of [1,3,1,2] -> [3,2]; Unsqueeze axes 0 and -1 of the rank-4
  // output -> [1,3,2,1]. Elements keep their order.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 6, opset_import: ["" : 11]>
    g (float[1,3,1,2] x) => (float[3,2] s, float[1,3,2,1] u) {
      s = Squeeze <axes = [0, -2]> (x)
      u = Unsqueeze <axes = [0, -1]> (s) })");
  std::vector<Tensor> y = test::run(g, {test::iota({1, 3, 1, 2})});
  test::expect_floats(y[0], {3, 2}, {1, 2, 3, 4, 5, 6});
  test::expect_floats(y[1], {1, 3, 2, 1}, {1, 2, 3, 4, 5, 6});
}

TEST(MovementOps, SqueezeOpset11WithoutAxesDropsEveryOne) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 6, opset_import: ["" : 11]>
    g (float[1,2,1] x) => (float[2] y) { y = Squeeze(x) })");
  test::expect_floats(test::run(g, {test::iota({1, 2, 1})})[0], {2}, {1, 2});
}

TEST(MovementOps, SqueezeOfANonUnitAxisIsAUserError) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 6, opset_import: ["" : 11]>
      g (float[2,3] x) => (float[3] y) { y = Squeeze <axes = [0]> (x) })");
      },
      {"Squeeze", "axis 0"});
}

TEST(MovementOps, ReshapeWithABadElementCountIsAUserError) {
  // 6 elements cannot become 4 * 2 = 8.
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[2,3] x) => (float[4,2] y) <int64[2] s = {4, 2}> { y = Reshape(x, s) })");
      },
      {"Reshape", "[2,3]", "[4,2]"});
}

TEST(MovementOps, ReshapeZeroCopiesUnlessAllowzero) {
  // [2,3,4] with shape [0,-1]: 0 copies 2, -1 becomes 12.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2,3,4] x) => (float[2,12] y) <int64[2] s = {0, -1}> { y = Reshape(x, s) })");
  Tensor y = test::run(g, {test::iota({2, 3, 4})})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  // With allowzero = 1 the 0 is a real zero, and 0 with -1 is forbidden.
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[2,3,4] x) => (float[2,12] y) <int64[2] s = {0, -1}> {
        y = Reshape <allowzero = 1> (x, s) })");
      },
      {"Reshape", "allowzero"});
}

TEST(MovementOps, TransposeWithABadPermIsAUserError) {
  for (const char* perm : {"[0, 0]", "[0, 2]", "[1, 0, 2]"}) {
    test::expect_user_error(
        [perm] {
          test::graph_from_text(std::string(R"(
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[2,3] x) => (float[3,2] y) { y = Transpose <perm = )") +
                                perm + R"(> (x) })");
        },
        {"Transpose", "perm"});
  }
}

TEST(MovementOps, ConcatWithAZeroSizeInput) {
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,0] a, float[2,2] b) => (float[2,2] y) { y = Concat <axis = 1> (a, b) })");
  Tensor a(DType::Float32, {2, 0});
  test::expect_floats(test::run(g, {a, test::iota({2, 2})})[0], {2, 2}, {1, 2, 3, 4});
}

TEST(MovementOps, ExpandBroadcastsBothWays) {
  // [3,1] with shape [2,1,4] -> [2,3,4]: each row value repeated 4 times, twice over.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,1] x) => (float[2,3,4] y) <int64[3] s = {2, 1, 4}> { y = Expand(x, s) })");
  std::vector<float> want;
  for (int rep = 0; rep < 2; ++rep)
    for (float v : {1.f, 2.f, 3.f}) want.insert(want.end(), 4, v);
  test::expect_floats(test::run(g, {test::iota({3, 1})})[0], {2, 3, 4}, want);
}

TEST(MovementOps, TriluWithKBeyondTheMatrix) {
  // k = 5 on a 2x3 matrix: upper keeps nothing, lower keeps everything.
  for (auto [upper, want] :
       {std::pair<int, std::vector<float>>{1, {0, 0, 0, 0, 0, 0}}, {0, {1, 2, 3, 4, 5, 6}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[2,3] x) => (float[2,3] y) <int64 k = {5}> { y = Trilu <upper = )" +
                                           std::to_string(upper) + R"(> (x, k) })");
    test::expect_floats(test::run(g, {test::iota({2, 3})})[0], {2, 3}, want);
  }
}

// Each graph is invalid; importing it must give a UserError naming the op, never a crash.
TEST(MovementOps, InvalidNodesAreUserErrors) {
  struct Case {
    const char* op;
    std::string graph;  // opset 18 unless the text says otherwise
  };
  const std::vector<Case> cases = {
      {"Reshape", R"((float[2,3] x) => (float[6] y) <int64[2] s = {-1, -1}>
          { y = Reshape(x, s) })"},
      {"Reshape", R"((float[2,3] x) => (float[6] y) <int64[2] s = {-2, 3}>
          { y = Reshape(x, s) })"},
      {"Reshape", R"((float[2,3] x) => (float[6] y) <int64[3] s = {2, 3, 0}>
          { y = Reshape(x, s) })"},
      {"Reshape", R"((float[2,3] x) => (float[6] y) <float[1] s = {6}> { y = Reshape(x, s) })"},
      {"Reshape", R"((float[2,3] x) => (float[6] y) <int64[2] s = {4611686018427387904, 4}>
          { y = Reshape(x, s) })"},
      {"Flatten", R"((float[2,3] x) => (float[6] y) { y = Flatten <axis = 3> (x) })"},
      {"Squeeze", R"((float[1,3] x) => (float[3] y) <int64[1] a = {2}> { y = Squeeze(x, a) })"},
      {"Squeeze", R"((float[1,3] x) => (float[3] y) <float[1] a = {0}> { y = Squeeze(x, a) })"},
      {"Unsqueeze", R"((float[3] x) => (float[1,1,3] y) <int64[2] a = {0, -3}>
          { y = Unsqueeze(x, a) })"},
      {"Unsqueeze", R"((float[3] x) => (float[1,3] y) <int64[1] a = {2}>
          { y = Unsqueeze(x, a) })"},
      {"Expand", R"((float[3] x) => (float[3] y) <int64[1] s = {-3}> { y = Expand(x, s) })"},
      {"Expand", R"((float[3] x) => (float[3] y) <int64[1] s = {2}> { y = Expand(x, s) })"},
      {"Concat", R"((float[2,3] a, float[3] b) => (float[6] y) { y = Concat <axis = 0> (a, b) })"},
      {"Concat", R"((float[2,3] a, float[3,3] b) => (float[6] y)
          { y = Concat <axis = 1> (a, b) })"},
      {"Concat", R"((float[2] a, float[2] b) => (float[4] y) { y = Concat <axis = 1> (a, b) })"},
      {"Concat", R"((float[2] a, int64[2] b) => (float[4] y) { y = Concat <axis = 0> (a, b) })"},
      {"Split", R"((float[4] x) => (float[2] a, float[2] b) <int64[2] s = {3, 3}>
          { a, b = Split(x, s) })"},
      {"Split", R"((float[4] x) => (float[2] a, float[2] b) <int64[2] s = {5, -1}>
          { a, b = Split(x, s) })"},
      {"Split", R"((float[4] x) => (float[2] a, float[2] b) <int64[1] s = {4}>
          { a, b = Split(x, s) })"},
      {"Split", R"((float[5] x) => (float[2] a, float[2] b) { a, b = Split(x) })"},
      {"Split", R"((float[4] x) => (float[2] a, float[2] b)
          { a, b = Split <num_outputs = 3> (x) })"},
      {"Split", R"((float[4] x) => (float[2] a, float[2] b) <int64[2] s = {2, 2}>
          { a, b = Split <num_outputs = 2> (x, s) })"},
      {"Slice", R"((float[4] x) => (float[1] y) <int64[2] s = {0, 0}, int64[1] e = {4}>
          { y = Slice(x, s, e) })"},
      {"Slice", R"((float[4] x) => (float[1] y)
          <int64[1] s = {0}, int64[1] e = {4}, int64[1] a = {1}> { y = Slice(x, s, e, a) })"},
      {"Slice", R"((float[4,4] x) => (float[1] y)
          <int64[2] s = {0, 0}, int64[2] e = {4, 4}, int64[2] a = {1, -1}>
          { y = Slice(x, s, e, a) })"},
      {"Tile", R"((float[2,3] x) => (float[6] y) <int64[1] r = {2}> { y = Tile(x, r) })"},
      {"Tile", R"((float[2] x) => (float[6] y) <int64[1] r = {-1}> { y = Tile(x, r) })"},
      {"Tile", R"((float[2] x) => (float[6] y) <int64[1] r = {9223372036854775807}>
          { y = Tile(x, r) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[1] p = {1}> { y = Pad(x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {-4, 5}> { y = Pad(x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {-2, -2}> { y = Pad(x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {-9223372036854775808, 1}>
          { y = Pad(x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {9223372036854775807, 1}>
          { y = Pad(x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {1, 1}>
          { y = Pad <mode = "mirror"> (x, p) })"},
      {"Pad", R"((float[0] x) => (float[2] y) <int64[2] p = {1, 1}>
          { y = Pad <mode = "reflect"> (x, p) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {-3, 2}>
          { y = Pad <mode = "edge"> (x, p) })"},
      {"Pad", R"((float[3,3] x) => (float[3] y)
          <int64[4] p = {1, 1, 1, 1}, float v = {0}, int64[2] a = {0, -2}>
          { y = Pad(x, p, v, a) })"},
      {"Pad", R"((float[3] x) => (float[3] y) <int64[2] p = {1, 1}, int64 v = {0}>
          { y = Pad(x, p, v) })"},
      {"DepthToSpace", R"((float[1,8,2,2] x) => (float[1] y)
          { y = DepthToSpace <blocksize = 0> (x) })"},
      {"DepthToSpace", R"((float[1,8,2,2] x) => (float[1] y)
          { y = DepthToSpace <blocksize = 2, mode = "RDC"> (x) })"},
      {"DepthToSpace", R"((float[1,6,2,2] x) => (float[1] y)
          { y = DepthToSpace <blocksize = 2> (x) })"},
      {"DepthToSpace", R"((float[8,2,2] x) => (float[1] y)
          { y = DepthToSpace <blocksize = 2> (x) })"},
      {"SpaceToDepth", R"((float[1,1,3,4] x) => (float[1] y)
          { y = SpaceToDepth <blocksize = 2> (x) })"},
      {"Trilu", R"((float[3] x) => (float[3] y) { y = Trilu(x) })"},
      {"Trilu", R"((float[3,3] x) => (float[3,3] y) <int64[2] k = {1, 2}> { y = Trilu(x, k) })"},
      {"Transpose", R"((float[2,3] x) => (float[3,2] y) { y = Transpose <perm = [-1, 0]> (x) })"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.graph);
    test::expect_user_error(
        [&] {
          test::graph_from_text(std::string("<ir_version: 8, opset_import: [\"\" : 18]>\ng ") +
                                c.graph);
        },
        {c.op});
  }
}

TEST(MovementOps, EdgeCasesAtTheLimits) {
  // Slice: step INT64_MIN takes only the start; start INT64_MAX clamps to the last index.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5] x) => (float[1] y)
      <int64[1] s = {9223372036854775807}, int64[1] e = {-9223372036854775808},
       int64[1] st = {-9223372036854775808},
       int64[1] a = {-1}> {
      y = Slice(x, s, e, a, st) })");
  test::expect_floats(test::run(g, {test::iota({5})})[0], {1}, {5});
  // Trilu: k = INT64_MIN keeps the whole upper part and none of the lower.
  for (auto [upper, want] :
       {std::pair<int, std::vector<float>>{1, {1, 2, 3, 4}}, {0, {0, 0, 0, 0}}}) {
    graph::Graph t = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[2,2] x) => (float[2,2] y) <int64 k = {-9223372036854775808}> {
        y = Trilu <upper = )" + std::to_string(upper) +
                                           R"(> (x, k) })");
    test::expect_floats(test::run(t, {test::iota({2, 2})})[0], {2, 2}, want);
  }
  // Pad of a zero-size tensor by a huge amount on another axis: an empty output, no maps built.
  graph::Graph p = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[0,2] x) => (float[0,1000000000002] y) <int64[4] pads = {0, 1000000000000, 0, 0}> {
      y = Pad <mode = "edge"> (x, pads) })");
  Tensor y = test::run(p, {Tensor(DType::Float32, {0, 2})})[0];
  EXPECT_EQ(y.shape(), (Shape{0, 1000000000002}));
  // Tile with a zero repeat, int8 data (every dtype moves as raw bytes).
  graph::Graph tl = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int8[2,2] x) => (int8[0,4] y) <int64[2] r = {0, 2}> { y = Tile(x, r) })");
  Tensor x8(DType::Int8, {2, 2});
  EXPECT_EQ(test::run(tl, {x8})[0].shape(), (Shape{0, 4}));
}

}  // namespace
}  // namespace braze
