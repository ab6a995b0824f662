// Normalizations beyond what the ONNX node tests (opset <= 17) cover: GroupNormalization at
// opsets 18 and 21, LayerNormalization's optional outputs, BatchNormalization's training
// mode and opset 7's spatial=0, InstanceNormalization above opset 6, and errors. Expected
// values are worked out by hand in the comments (epsilon = 0 where that keeps them exact).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_util.h"

namespace braze {
namespace {

// X of shape [1, 4, 2]: channels [0, 0], [2, 2], [1, 5], [1, 5]. With two groups:
//   group 0 = {0, 0, 2, 2}: mean 1, variance 1 -> normalized [-1, -1], [1, 1]
//   group 1 = {1, 5, 1, 5}: mean 3, variance 4 -> normalized [-1, 1], [-1, 1]
Tensor group_x() { return test::floats({1, 4, 2}, {0, 0, 2, 2, 1, 5, 1, 5}); }

TEST(NormalizationOps, GroupNormOpset18PerGroupScale) {
  // Scale [2, 3] and bias [10, 20] per group: group 0 -> 2n + 10, group 1 -> 3n + 20.
  Tensor want = test::floats({1, 4, 2}, {8, 8, 12, 12, 17, 23, 17, 23});
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,4,2] x) => (float[1,4,2] y) <float[2] s = {2, 3}, float[2] b = {10, 20}> {
      y = GroupNormalization <num_groups = 2, epsilon = 0.0> (x, s, b) })");
  EXPECT_TRUE(test::tensors_close(test::run(g, {group_x()})[0], want));

  // Scale and bias as graph inputs (not constants) take another path to per-channel form.
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,4,2] x, float[2] s, float[2] b) => (float[1,4,2] y) {
      y = GroupNormalization <num_groups = 2, epsilon = 0.0> (x, s, b) })"),
                       {group_x(), test::floats({2}, {2, 3}), test::floats({2}, {10, 20})})[0];
  EXPECT_TRUE(test::tensors_close(y, want));
}

TEST(NormalizationOps, GroupNormOpset21PerChannelScale) {
  // Scale [1, 2, 3, 4], bias [0, 0, 10, 10] per channel:
  //   c0: 1*[-1, -1] = [-1, -1]   c1: 2*[1, 1] = [2, 2]
  //   c2: 3*[-1, 1] + 10 = [7, 13]   c3: 4*[-1, 1] + 10 = [6, 14]
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[1,4,2] x) => (float[1,4,2] y) <float[4] s = {1, 2, 3, 4}, float[4] b = {0, 0, 10, 10}> {
      y = GroupNormalization <num_groups = 2, epsilon = 0.0> (x, s, b) })"),
                       {group_x()})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 4, 2}, {-1, -1, 2, 2, 7, 13, 6, 14})));
}

TEST(NormalizationOps, GroupNormBadShapes) {
  // Opset 18 wants one scale per group, opset 21 one per channel.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[1,4,2] x, float[4] s, float[4] b) => (float[1,4,2] y) {
      y = GroupNormalization <num_groups = 2> (x, s, b) })",
                            {"[num_groups] = [2]"});
  test::expect_import_error(R"(
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[1,4,2] x, float[2] s, float[2] b) => (float[1,4,2] y) {
      y = GroupNormalization <num_groups = 2> (x, s, b) })",
                            {"scale must have shape [4]"});
  test::expect_import_error(R"(
    <ir_version: 10, opset_import: ["" : 21]>
    g (float[1,4,2] x, float[4] s, float[4] b) => (float[1,4,2] y) {
      y = GroupNormalization <num_groups = 3> (x, s, b) })",
                            {"num_groups 3 does not divide the 4 channels"});
}

// X = [[1, 1, 3, 3], [0, 0, 0, 4]]: row 0 has mean 2, variance 1; row 1 mean 1, variance
// (1 + 1 + 1 + 9) / 4 = 3. Scale [1, 2, 1, 2], B [0, 0, 1, 1]:
//   row 0: normalized [-1, -1, 1, 1]        -> Y = [-1, -2, 2, 3]
//   row 1: normalized [-1, -1, -1, 3]/sqrt3 -> Y = [-1, -2, -1, 6]/sqrt3 + [0, 0, 1, 1]
const char* kLayerNorm = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2,4] x) => (OUTS) <float[4] s = {1, 2, 1, 2}, float[4] b = {0, 0, 1, 1}> {
    NAMES = LayerNormalization <epsilon = 0.0> (x, s, b) })";

std::string layer_norm_model(const std::string& outs, const std::string& names) {
  std::string t = kLayerNorm;
  t.replace(t.find("OUTS"), 4, outs);
  t.replace(t.find("NAMES"), 5, names);
  return t;
}

TEST(NormalizationOps, LayerNormOptionalOutputs) {
  Tensor x = test::floats({2, 4}, {1, 1, 3, 3, 0, 0, 0, 4});
  float r3 = 1 / std::sqrt(3.f);
  Tensor want_y = test::floats({2, 4}, {-1, -2, 2, 3, -r3, -2 * r3, -r3 + 1, 6 * r3 + 1});

  auto all = test::run(test::graph_from_text(layer_norm_model(
                           "float[2,4] y, float[2,1] mean, float[2,1] inv", "y, mean, inv")),
                       {x});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(test::tensors_close(all[0], want_y));
  EXPECT_TRUE(test::tensors_close(all[1], test::floats({2, 1}, {2, 1})));
  EXPECT_TRUE(test::tensors_close(all[2], test::floats({2, 1}, {1, r3})));

  // Y alone; Y and Mean.
  auto y_only = test::run(test::graph_from_text(layer_norm_model("float[2,4] y", "y")), {x});
  ASSERT_EQ(y_only.size(), 1u);
  EXPECT_TRUE(test::tensors_close(y_only[0], want_y));
  auto y_mean = test::run(
      test::graph_from_text(layer_norm_model("float[2,4] y, float[2,1] mean", "y, mean")), {x});
  ASSERT_EQ(y_mean.size(), 2u);
  EXPECT_TRUE(test::tensors_close(y_mean[1], test::floats({2, 1}, {2, 1})));
}

TEST(NormalizationOps, LayerNormStatisticsAreStashType) {
  // float16 X: Mean and InvStdDev are float32 (stash_type 1), Y float16.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float16[1,2] x, float16[2] s) => (float16[1,2] y, float[1,1] mean, float[1,1] inv) {
      y, mean, inv = LayerNormalization <epsilon = 0.0> (x, s) })");
  Tensor x(DType::Float16, {1, 2}), s(DType::Float16, {2});
  x.set_f64(0, 1), x.set_f64(1, 3), s.set_f64(0, 1), s.set_f64(1, 1);
  auto outs = test::run(g, {x, s});
  EXPECT_EQ(outs[0].dtype(), DType::Float16);
  EXPECT_EQ(outs[1].dtype(), DType::Float32);
  EXPECT_EQ(outs[2].dtype(), DType::Float32);
  // [1, 3]: mean 2, variance 1 -> Y = [-1, 1].
  EXPECT_EQ(outs[0].get_f64(0), -1);
  EXPECT_EQ(outs[0].get_f64(1), 1);
  EXPECT_EQ(outs[1].get_f64(0), 2);
}

TEST(NormalizationOps, LayerNormScaleMustBroadcast) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4] x, float[3] s) => (float[2,4] y) { y = LayerNormalization(x, s) })",
                            {"does not broadcast"});
}

TEST(NormalizationOps, BatchNormTrainingMode) {
  // One channel, X = [[[0, 2]], [[2, 4]]]: batch mean 2, population variance (4+0+0+4)/4 = 2.
  // Y = (x - 2) / sqrt(2) * 3 + 1; running stats with momentum 0.5 from mean 10, var 4:
  // 10*0.5 + 2*0.5 = 6 and 4*0.5 + 2*0.5 = 3.
  auto outs = test::run(test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,1,2] x) => (float[2,1,2] y, float[1] rm, float[1] rv)
      <float[1] s = {3}, float[1] b = {1}, float[1] m = {10}, float[1] v = {4}> {
      y, rm, rv = BatchNormalization <training_mode = 1, momentum = 0.5, epsilon = 0.0> (x, s, b, m, v) })"),
                        {test::floats({2, 1, 2}, {0, 2, 2, 4})});
  float k = 3 / std::sqrt(2.f);
  EXPECT_TRUE(test::tensors_close(outs[0], test::floats({2, 1, 2}, {-2 * k + 1, 1, 1, 2 * k + 1})));
  EXPECT_TRUE(test::tensors_close(outs[1], test::floats({1}, {6})));
  EXPECT_TRUE(test::tensors_close(outs[2], test::floats({1}, {3})));

  // Extra outputs outside training mode are invalid (ONNX: "extra outputs are invalid").
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,1,2] x, float[1] s, float[1] b, float[1] m, float[1] v) => (float[2,1,2] y, float[1] rm) {
      y, rm = BatchNormalization(x, s, b, m, v) })",
                            {"training mode"});
}

TEST(NormalizationOps, BatchNormOpset7NonSpatial) {
  // spatial=0: statistics per activation, shape (C x D1) = [2, 2]. Mean 0, scale 1,
  // variance [[1, 4], [9, 16]] (std [[1, 2], [3, 4]]), bias [[0, 1], [2, 3]]: Y = X / std + B.
  //   batch 0, X = [[2, 4], [6, 8]] -> [[2, 3], [4, 5]]
  //   batch 1, X = [[1, 2], [3, 4]] -> [[1, 2], [3, 4]]
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 3, opset_import: ["" : 7]>
    g (float[2,2,2] x) => (float[2,2,2] y)
      <float[2,2] s = {1, 1, 1, 1}, float[2,2] b = {0, 1, 2, 3}, float[2,2] m = {0, 0, 0, 0},
       float[2,2] v = {1, 4, 9, 16}> {
      y = BatchNormalization <spatial = 0, epsilon = 0.0> (x, s, b, m, v) })"),
                       {test::floats({2, 2, 2}, {2, 4, 6, 8, 1, 2, 3, 4})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2, 2}, {2, 3, 4, 5, 1, 2, 3, 4})));
}

TEST(NormalizationOps, BatchNormScaleShape) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[2,3,2] x, float[2] s, float[3] b, float[3] m, float[3] v) => (float[2,3,2] y) {
      y = BatchNormalization(x, s, b, m, v) })",
                            {"scale must have shape [3]"});
}

TEST(NormalizationOps, InstanceNormalization) {
  // X [1, 2, 2]: channel 0 = [0, 2] (mean 1, variance 1), channel 1 = [3, 3] (variance 0).
  // Scale [2, 1], B [0, 5]: channel 0 -> [-2, 2]; channel 1 -> 0 * ... + 5 = [5, 5].
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2] x) => (float[1,2,2] y) <float[2] s = {2, 1}, float[2] b = {0, 5}> {
      y = InstanceNormalization <epsilon = 0.0001> (x, s, b) })"),
                       {test::floats({1, 2, 2}, {0, 2, 3, 3})})[0];
  float k = 2 / std::sqrt(1.0001f);
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 2, 2}, {-k, k, 5, 5})));
}

TEST(NormalizationOps, LpNormalization) {
  // Rows [3, -4] and [0, 0]: L1 -> [3/7, -4/7], L2 -> [3/5, -4/5]; a zero row stays zero.
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (float[2,2] y) { y = LpNormalization <p = P> (x) })";
  Tensor x = test::floats({2, 2}, {3, -4, 0, 0});
  for (int p : {1, 2}) {
    std::string t = model;
    t.replace(t.find("P>"), 1, std::to_string(p));
    Tensor y = test::run(test::graph_from_text(t), {x})[0];
    float d = p == 1 ? 7 : 5;
    EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {3 / d, -4 / d, 0, 0}))) << "p=" << p;
  }
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (float[2,2] y) { y = LpNormalization <p = 3> (x) })",
                            {"p must be 1 or 2"});
}

TEST(NormalizationOps, MeanVarianceNormalizationAxes) {
  // axes [1] on [2, 2]: rows [1, 3] and [5, 5] -> (x - mean) / (std + 1e-9): [-1, 1], [0, 0].
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (float[2,2] y) { y = MeanVarianceNormalization <axes = [1]> (x) })"),
                       {test::floats({2, 2}, {1, 3, 5, 5})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({2, 2}, {-1, 1, 0, 0})));
  // The default axes [0, 2, 3] need rank 4.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,2] x) => (float[2,2] y) { y = MeanVarianceNormalization(x) })",
                            {"out of range"});
}

TEST(NormalizationOps, LrnWindow) {
  // size 2 on 3 channels of one pixel, x = [1, 2, 3]: the window of channel c is [c, c+1]
  // (floor((size-1)/2) = 0 before, ceil((size-1)/2) = 1 after), clipped to the channels.
  // bias 1, alpha 2 (alpha/size = 1), beta 1: y_c = x_c / (1 + sum of squares in the window)
  //   c0: 1 / (1 + 1 + 4) = 1/6   c1: 2 / (1 + 4 + 9) = 1/7   c2: 3 / (1 + 9) = 3/10
  Tensor y = test::run(test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,1,1] x) => (float[1,3,1,1] y) { y = LRN <size = 2, alpha = 2.0, beta = 1.0, bias = 1.0> (x) })"),
                       {test::floats({1, 3, 1, 1}, {1, 2, 3})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 3, 1, 1}, {1.f / 6, 1.f / 7, 3.f / 10})));
}

}  // namespace
}  // namespace braze
