// The CPU emulator running the generated kernels of sliding-window ops (Conv, ConvTranspose,
// the pools), Resize and Einsum, and zero-size values, each compared element by element with the
// reference executor on fresh random inputs. Every node must run as a kernel, not as a CPU
// fallback.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include <fmt/format.h>

#include "fusion/plan.h"
#include "runtime/emulator.h"
#include "runtime/reference_executor.h"
#include "tests/gelu_sweep.h"
#include "tests/test_util.h"

namespace braze {
namespace {

void expect_emulated_like_reference(const std::string& text, uint64_t seed = 7) {
  SCOPED_TRACE(text);
  graph::Graph g = test::graph_from_text(text);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    inputs.push_back(test::random(v.dtype, v.shape, seed + i));
  }
  std::vector<std::string> fallbacks;
  runtime::EmulatorOptions opts;
  opts.fallbacks = &fallbacks;
  std::vector<Tensor> got = runtime::run_emulated(g, fusion::plan_unfused(g), inputs, opts);
  std::vector<Tensor> want = runtime::run_reference(g, inputs);
  EXPECT_TRUE(fallbacks.empty()) << "ran on the CPU: " << fallbacks.front();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    EXPECT_TRUE(test::tensors_close(got[i], want[i])) << "output " << i;
  }
}

// Zero-size values keep their shapes: a softmax and a layer norm over rows of length 0 write
// nothing (their kernels take no output), yet their outputs are [3,0] and [4,0], and an
// empty value feeds a later kernel (they came back as rank-0 tensors).
TEST(Emulator, ZeroSizeValuesKeepTheirShapes) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[3,0] x, float[3,2] y, float[4,0] n, float[0] w) => (float[3,0] s, float[3,2] z, float[4,0] l) {
      s = Softmax <axis = -1> (x)  c = Concat <axis = 1> (s, y)  z = Relu(c)
      l = LayerNormalization <axis = -1> (n, w, w) })");
}

// CastLike of a scalar to the type of a larger tensor (the exporters' way to write a scale in
// the model's type): code generation read the second input at the scalar's coordinates and
// crashed. It becomes a Cast (folded when its input is constant).
TEST(Emulator, CastLikeToTheTypeOfALargerTensor) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float16[3,4] x, float[1] s) => (float16[3,4] z) { sh = CastLike(s, x)  z = Mul(x, sh) })");
}

TEST(Emulator, ConvWithGroupDilationPaddingStridesAndBias) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4,7,6] x, float[6,2,3,2] w, float[6] b) => (float[2,6,6,3] y) {
      y = Conv <group = 2, dilations = [2, 1], pads = [1, 0, 2, 1], strides = [1, 2]> (x, w, b) })");
}

TEST(Emulator, ConvSameLower3dAndDepthwiseHalf) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,2,4,5,3] x, float[3,2,2,3,2] w) => (float[1,3,2,3,2] y) {
      y = Conv <auto_pad = "SAME_LOWER", strides = [2, 2, 2]> (x, w) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float16[1,3,5,5] x, float16[3,1,3,3] w, float16[3] b) => (float16[1,3,5,5] y) {
      y = Conv <group = 3, pads = [1, 1, 1, 1]> (x, w, b) })");
}

TEST(Emulator, ConvTransposeWithStrideOutputPaddingAndGroups) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4,3,4] x, float[4,3,3,2] w, float[6] b) => (float[2,6,7,11] y) {
      y = ConvTranspose <group = 2, strides = [2, 3], output_padding = [1, 0], pads = [1, 0, 0, 1],
                         dilations = [1, 2]> (x, w, b) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1,2,5] x, float[2,3,3] w) => (float[1,3,12] y) {
      y = ConvTranspose <strides = [2], output_shape = [12], auto_pad = "SAME_UPPER"> (x, w) })");
}

TEST(Emulator, MaxPoolWithIndices) {
  // Integers in [0, 10) tie often: Indices must name the first maximum, as the reference.
  for (const char* type : {"float", "uint8"})
    for (int order : {0, 1})
      expect_emulated_like_reference(fmt::format(R"(
        <ir_version: 8, opset_import: ["" : 12]>
        g ({0}[2,3,8,8] x) => ({0}[2,3,5,7] y, int64[2,3,5,7] i) {{
          y, i = MaxPool <kernel_shape = [3, 2], strides = [2, 1], pads = [1, 1, 1, 0],
                          dilations = [1, 2], ceil_mode = 1, storage_order = {1}> (x) }})",
                                                 type, order));
}

TEST(Emulator, AveragePoolCountIncludePad) {
  for (int include : {0, 1})
    expect_emulated_like_reference(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 19]>
      g (float[2,3,6,7] x) => (float[2,3,4,4] y) {{
        y = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 2, 1, 0],
                         ceil_mode = 1, count_include_pad = {}> (x) }})",
                                               include));
}

TEST(Emulator, GlobalPools) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,5,4] x, double[1,2,3,2,2] z) => (float[2,3,1,1] a, double[1,2,1,1,1] m) {
      a = GlobalAveragePool(x)  m = GlobalMaxPool(z) })");
}

TEST(Emulator, ResizeLinearCubicNearest) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,5,6] x) => (float[2,3,8,3] y) <float[4] scales = {1.0, 1.0, 1.7, 0.6}> {
      y = Resize <mode = "linear"> (x, , scales) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,6] x) => (float[1,2,9,4] y) <int64[4] sizes = {1, 2, 9, 4}> {
      y = Resize <mode = "cubic", coordinate_transformation_mode = "align_corners",
                  exclude_outside = 1, cubic_coeff_a = -0.5> (x, , , sizes) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,6] x) => (float[1,2,12,4] y) <float[4] scales = {1.0, 1.0, 2.4, 0.75}> {
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric",
                  nearest_mode = "round_prefer_ceil"> (x, , scales) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (float[1,1,5,7] x) => (float[1,1,8,3] y) <int64[2] sizes = {8, 3}> {
      y = Resize <mode = "nearest", axes = [2, 3], coordinate_transformation_mode = "half_pixel_symmetric",
                  nearest_mode = "floor"> (x, , , sizes) })");
}

TEST(Emulator, ResizeAntialiasCropAndIntegers) {
  for (const char* mode : {"linear", "cubic"})
    expect_emulated_like_reference(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[1,2,9,10] x) => (float[1,2,4,3] y) <float[2] scales = {{0.5, 0.35}}> {{
        y = Resize <mode = "{}", antialias = 1, axes = [2, 3]> (x, , scales) }})",
                                               mode));
  // roi as a constant and as a run-time input; outside the input the extrapolation value.
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,6,6] x) => (float[1,1,5,4] y)
      <float[8] roi = {0.0, 0.0, -0.2, 0.3, 1.0, 1.0, 0.7, 1.3}, int64[4] sizes = {1, 1, 5, 4}> {
      y = Resize <mode = "linear", coordinate_transformation_mode = "tf_crop_and_resize",
                  extrapolation_value = 2.5> (x, roi, , sizes) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,6,6] x, float[8] roi) => (float[1,1,5,4] y) <int64[4] sizes = {1, 1, 5, 4}> {
      y = Resize <mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize",
                  extrapolation_value = -1.0> (x, roi, , sizes) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[1,1,4,5] x) => (uint8[1,1,7,9] y) <int64[4] sizes = {1, 1, 7, 9}> {
      y = Resize <mode = "cubic"> (x, , , sizes) })");
}

TEST(Emulator, Einsum) {
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[3,4,5] a, float[3,5,2] b) => (float[3,4,2] y) { y = Einsum <equation = "bij,bjk->bik"> (a, b) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[2,1,4,4] a, float[4,3] b) => (float[2,1,4,3] y, float[4] d, float[] s) {
      y = Einsum <equation = "...ij,jk->...ik"> (a, b)
      b2 = Einsum <equation = "ij,kj->ik"> (b, b)
      d = Einsum <equation = "ii->i"> (b2)
      s = Einsum <equation = "abij->"> (a) })");
  expect_emulated_like_reference(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (int64[3,4] a, int64[4,2,3] b) => (int64[2,3] y) { y = Einsum <equation = "ij,jki->ki"> (a, b) })");
}

// Gelu into float16 / bfloat16 (braze_gelu_erf_f16 / _bf16; braze_gelu_tanh_f16 /
// braze_gelu_tanh) over every value of the type in [-12, 12]: within one unit in the last
// place of the exact value (tests/gelu_sweep.h).
TEST(Emulator, GeluIntoHalfTypesIsWithinAnUlp) {
  // Both forms into both types (the tanh form: braze_gelu_tanh_f16 / braze_gelu_tanh).
  for (auto [dt, tanh_form] : {std::pair{DType::Float16, false},
                               {DType::BFloat16, false},
                               {DType::Float16, true},
                               {DType::BFloat16, true}}) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + (tanh_form ? ", tanh form" : ", erf form"));
    const Tensor in = test::gelu_sweep_input(dt);
    graph::Graph g = test::graph_from_text(test::gelu_sweep_model(dt, in.numel(), tanh_form));
    std::vector<std::string> fallbacks;
    runtime::EmulatorOptions opts;
    opts.fallbacks = &fallbacks;
    std::vector<Tensor> got = runtime::run_emulated(g, fusion::plan_unfused(g), {in}, opts);
    EXPECT_TRUE(fallbacks.empty());
    ASSERT_EQ(got.size(), 1u);
    test::expect_gelu_sweep(in, got[0], tanh_form);
  }
}

}  // namespace
}  // namespace braze
