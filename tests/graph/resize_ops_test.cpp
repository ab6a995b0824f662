// Resize beyond what the ONNX node tests cover (they stop at opset 13 for Resize): opset 18's
// axes, antialias and keep_aspect_ratio_policy, opset 19's half_pixel_symmetric, opset 10's
// two-input form, integer rounding and invalid nodes. Expected values are worked out by hand
// in the comments.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace braze {
namespace {

TEST(ResizeOps, Opset18AxesResizeOnlyTheLastAxis) {
  // Linear, half_pixel, axis 1 only, 3 -> 6: x_original = (j + 0.5) / 2 - 0.5 =
  // -0.25, 0.25, 0.75, 1.25, 1.75, 2.25; outside [0, 2] the edge value is used, so row
  // [1, 2, 3] becomes [1, 1.25, 1.75, 2.25, 2.75, 3] and row [4, 5, 6] the same plus 3.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x) => (float[2,6] y) <float[1] scales = {2.0}> {
      y = Resize <mode = "linear", axes = [-1]> (x, , scales) })");
  test::expect_floats(test::run(g, {test::iota({2, 3})})[0], {2, 6},
                      {1, 1.25, 1.75, 2.25, 2.75, 3, 4, 4.25, 4.75, 5.25, 5.75, 6});
}

TEST(ResizeOps, Opset18AntialiasLinearDownscale) {
  // [1..8] -> 4 with scale 0.5. Antialiasing stretches the triangle filter to radius 2:
  // x_original = 2j + 0.5, taps at floor - 1 .. floor + 2 with weights (1 - |o - 0.5| / 2)
  // = .25, .75, .75, .25, normalised by their sum 2 to 1/8, 3/8, 3/8, 1/8.
  //   j=0: taps 0(edge),0,1,2 -> values 1,1,2,3 -> (1 + 3 + 6 + 3) / 8 = 1.625
  //   j=1: values 2,3,4,5 -> (2 + 9 + 12 + 5) / 8 = 3.5;   j=2: 4,5,6,7 -> 5.5
  //   j=3: values 6,7,8,8(edge) -> (6 + 21 + 24 + 8) / 8 = 7.375
  // Without antialias it would be plain linear at 0.5, 2.5, 4.5, 6.5: 1.5, 3.5, 5.5, 7.5.
  for (auto [aa, want] : {std::pair<int, std::vector<float>>{1, {1.625f, 3.5f, 5.5f, 7.375f}},
                          {0, {1.5f, 3.5f, 5.5f, 7.5f}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[1,8] x) => (float[1,4] y) <float[1] scales = {0.5}> {
        y = Resize <mode = "linear", antialias = )" +
                                           std::to_string(aa) + R"(, axes = [1]> (x, , scales) })");
    test::expect_floats(test::run(g, {test::iota({1, 8})})[0], {1, 4}, want);
  }
}

TEST(ResizeOps, Opset18SizesKeepAspectRatio) {
  // Input 4x6, sizes [3, 3] on axes 2, 3: the ratios are 0.75 and 0.5.
  // not_larger takes 0.5: output round(2), round(3) = 2x3. Nearest with half_pixel maps
  // j -> 2j + 0.5, which round_prefer_floor takes down to 2j: rows 0, 2 and columns 0, 2, 4
  // of 1..24, i.e. [1, 3, 5] and [13, 15, 17].
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,1,4,6] x) => (float[1,1,2,3] y) <int64[2] sizes = {3, 3}> {
      y = Resize <axes = [2, 3], keep_aspect_ratio_policy = "not_larger"> (x, , , sizes) })");
  test::expect_floats(test::run(g, {test::iota({1, 1, 4, 6})})[0], {1, 1, 2, 3},
                      {1, 3, 5, 13, 15, 17});
  // not_smaller takes 0.75: 4 * 0.75 = 3, 6 * 0.75 = 4.5 rounds half up to 5.
  graph::Graph g2 = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,1,4,6] x) => (float[1,1,3,5] y) <int64[2] sizes = {3, 3}> {
      y = Resize <axes = [2, 3], keep_aspect_ratio_policy = "not_smaller"> (x, , , sizes) })");
  EXPECT_EQ(g2.value(g2.outputs()[0].value).shape, (Shape{1, 1, 3, 5}));
}

TEST(ResizeOps, Opset19HalfPixelSymmetric) {
  // [1, 2, 3, 4], scale 0.625: the target width 2.5 floors to 2. adjustment = 2 / 2.5 = 0.8,
  // offset = (4 / 2) * (1 - 0.8) = 0.4, x_original = 0.4 + (j + 0.5) / 0.625 - 0.5 = 0.7, 2.3
  // -> linear values 1.7, 3.3 (half_pixel would give 0.3, 1.9 -> 1.3, 2.9).
  for (auto [mode, want] :
       {std::pair<std::string, std::vector<float>>{"half_pixel_symmetric", {1.7f, 3.3f}},
        {"half_pixel", {1.3f, 2.9f}}}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 19]>
      g (float[4] x) => (float[2] y) <float[1] scales = {0.625}> {
        y = Resize <mode = "linear", coordinate_transformation_mode = ")" +
                                           mode + R"("> (x, , scales) })");
    test::expect_floats(test::run(g, {test::iota({4})})[0], {2}, want);
  }
}

TEST(ResizeOps, Opset10TwoInputFormIsAsymmetric) {
  // Opset 10 maps x_original = j / scale. Nearest upsampling rounds down: scale 3 on
  // [1, 2] gives 0, 0.33, 0.67, 1, 1.33, 1.67 -> 1 1 1 2 2 2.
  graph::Graph up = test::graph_from_text(R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[1,1,2,2] x) => (float[1,1,4,6] y) <float[4] scales = {1.0, 1.0, 2.0, 3.0}> {
      y = Resize <mode = "nearest"> (x, scales) })");
  test::expect_floats(test::run(up, {test::iota({1, 1, 2, 2})})[0], {1, 1, 4, 6},
                      {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Downsampling by 0.6 picks j / 0.6 = 0, 1.67 rounded up: columns 0 and 2 of row 0.
  graph::Graph down = test::graph_from_text(R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[1,1,2,4] x) => (float[1,1,1,2] y) <float[4] scales = {1.0, 1.0, 0.6, 0.6}> {
      y = Resize <mode = "nearest"> (x, scales) })");
  test::expect_floats(test::run(down, {test::iota({1, 1, 2, 4})})[0], {1, 1, 1, 2}, {1, 3});
  // Linear at j / 2 = 0, 0.5, 1, 1.5 (clamped at the edge): [1, 1.5, 2, 2] per row, rows
  // likewise blended: row 0.5 is the mean of [1, 2] and [3, 4].
  graph::Graph lin = test::graph_from_text(R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[1,1,2,2] x) => (float[1,1,4,4] y) <float[4] scales = {1.0, 1.0, 2.0, 2.0}> {
      y = Resize <mode = "linear"> (x, scales) })");
  test::expect_floats(test::run(lin, {test::iota({1, 1, 2, 2})})[0], {1, 1, 4, 4},
                      {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
}

TEST(ResizeOps, IntegerOutputRoundsToNearest) {
  // uint8 [0, 255] -> 4 linear half_pixel: x_original -0.25, 0.25, 0.75, 1.25 ->
  // 0, 63.75, 191.25, 255 -> rounded 0, 64, 191, 255.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[2] x) => (uint8[4] y) <float[1] scales = {2.0}> {
      y = Resize <mode = "linear"> (x, , scales) })");
  Tensor x(DType::UInt8, {2});
  x.set_i64(0, 0);
  x.set_i64(1, 255);
  Tensor y = test::run(g, {x})[0];
  ASSERT_EQ(y.dtype(), DType::UInt8);
  std::vector<int64_t> want = {0, 64, 191, 255};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(y.get_i64(i), want[i]) << "at " << i;
}

TEST(ResizeOps, InvalidNodesAreUserErrors) {
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[8] y) <float[1] scales = {2.0}, int64[1] sizes = {8}> {
        y = Resize (x, , scales, sizes) })");
      },
      {"Resize", "scales and sizes"});
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2,4] x) => (float[4,8] y) <float[1] scales = {2.0}> { y = Resize (x, , scales) })");
      },
      {"Resize", "scales has 1 values for 2 axes"});
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[8] y) <float[1] scales = {2.0}> {
        y = Resize <mode = "bilinear"> (x, , scales) })");
      },
      {"Resize", "mode", "bilinear"});
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[8] y) <float[1] scales = {2.0}> {
        y = Resize <coordinate_transformation_mode = "tf_crop_and_resize"> (x, , scales) })");
      },
      {"Resize", "roi"});
  test::expect_user_error(
      [] {
        test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[8] y) <float[1] scales = {-2.0}> { y = Resize (x, , scales) })");
      },
      {"Resize", "positive"});
}

}  // namespace
}  // namespace braze
