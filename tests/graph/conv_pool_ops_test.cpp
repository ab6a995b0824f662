// Conv, ConvTranspose and the pools beyond what the ONNX node tests cover: newer opsets
// (AveragePool dilations, 19), grouped 1-D conv, MaxPool indices in both storage orders,
// ceil_mode's dropped last window, global pools, and the errors for bad shapes.
// Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace braze {
namespace {

TEST(ConvPoolOps, AveragePoolDilationsOpset19) {
  // X = 1..16 as 4x4, 2x2 kernel dilated by 2 (a 3x3 footprint), stride 1 -> 2x2 output.
  // out[0,0] = (x00 + x02 + x20 + x22) / 4 = (1 + 3 + 9 + 11) / 4 = 6, and each step right
  // adds 1, each step down adds 4.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 9, opset_import: ["" : 19]>
    g (float[1,1,4,4] x) => (float[1,1,2,2] y) {
      y = AveragePool <kernel_shape = [2, 2], dilations = [2, 2]> (x)
    })");
  Tensor x = test::floats({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Tensor y = test::run(g, {x})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 1, 2, 2}, {6, 7, 10, 11})));
}

TEST(ConvPoolOps, AveragePoolDilationsWithPadsCountIncludePad) {
  // 1-D X = (1, 2, 4), kernel 2 dilated by 2, pads 1 each side: the padded row is
  // (p, 1, 2, 4, p) and the windows take padded positions {0,2}, {1,3}, {2,4}:
  // {p,2}, {1,4}, {2,p}. Excluding pads: 2, 2.5, 2; including them (divisor 2): 1, 2.5, 1.
  for (int cip : {0, 1}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 9, opset_import: ["" : 19]>
      g (float[1,1,3] x) => (float[1,1,3] y) {
        y = AveragePool <kernel_shape = [2], dilations = [2], pads = [1, 1], count_include_pad = )" +
                                           std::to_string(cip) + R"(> (x)
      })");
    Tensor y = test::run(g, {test::floats({1, 1, 3}, {1, 2, 4})})[0];
    Tensor want =
        cip ? test::floats({1, 1, 3}, {1, 2.5f, 1}) : test::floats({1, 1, 3}, {2, 2.5f, 2});
    EXPECT_TRUE(test::tensors_close(y, want)) << "count_include_pad = " << cip;
  }
}

TEST(ConvPoolOps, GroupedConv1DWithBias) {
  // Two groups of one channel each. Channel 0 = (1,2,3,4) with kernel (1,1) and bias 10:
  // (3,5,7) + 10; channel 1 = (5,6,7,8) with kernel (1,-1) and bias 20: (-1,-1,-1) + 20.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,2,4] x, float[2,1,2] w, float[2] b) => (float[1,2,3] y) { y = Conv <group = 2> (x, w, b) })");
  Tensor y = test::run(g, {test::floats({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                           test::floats({2, 1, 2}, {1, 1, 1, -1}), test::floats({2}, {10, 20})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 2, 3}, {13, 15, 17, 19, 19, 19})));
}

TEST(ConvPoolOps, ConvWeightsDisagreeingWithInputChannelsIsAUserError) {
  // W [2,2,3,3] with group 1 expects 2 input channels; X has 3.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,3,5,5] x, float[2,2,3,3] w) => (float[1,2,3,3] y) { y = Conv(x, w) })",
                            {"Conv", "[2,2,3,3]", "[1,3,5,5]", "input channels"});
}

TEST(ConvPoolOps, ConvKernelLargerThanPaddedInputIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,1,2,2] x, float[1,1,3,3] w) => (float[1,1,1,1] y) { y = Conv(x, w) })",
                            {"Conv", "larger than the padded input"});
}

TEST(ConvPoolOps, ConvBadAttributesAreUserErrors) {
  auto model = [](const std::string& attrs) {
    return R"(
      <ir_version: 8, opset_import: ["" : 11]>
      g (float[1,2,5,5] x, float[2,2,3,3] w) => (float[1,2,3,3] y) { y = Conv <)" +
           attrs + R"(> (x, w) })";
  };
  test::expect_import_error(model("strides = [1, 0]"), {"Conv", "strides"});
  test::expect_import_error(model("pads = [1, 1]"), {"Conv", "pads", "needs 4"});
  test::expect_import_error(model("kernel_shape = [2, 2]"), {"Conv", "kernel_shape"});
  test::expect_import_error(model("auto_pad = \"SAME\""), {"Conv", "auto_pad"});
  test::expect_import_error(model("group = 2"), {"Conv", "group 2"});
}

TEST(ConvPoolOps, ConvTransposeOutputPadding) {
  // 1-D X = (1,2), W = (1,1), stride 2, output_padding 1: the full output has
  // 2*(2-1) + 2 + 1 = 5 positions; x0 scatters to 0..1, x1 to 2..3, position 4 stays 0.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,1,2] x, float[1,1,2] w) => (float[1,1,5] y) {
      y = ConvTranspose <strides = [2], output_padding = [1]> (x, w)
    })");
  Tensor y = test::run(g, {test::floats({1, 1, 2}, {1, 2}), test::floats({1, 1, 2}, {1, 1})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 1, 5}, {1, 1, 2, 2, 0})));
}

TEST(ConvPoolOps, ConvTransposeOutputShapeTooLargeIsAUserError) {
  // The scattered output has 3*(3-1) + 3 = 9 positions; 12 is a full stride beyond it.
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[1,1,3] x, float[1,1,3] w) => (float[1,1,12] y) {
      y = ConvTranspose <strides = [3], output_shape = [12]> (x, w)
    })",
                            {"ConvTranspose", "output_shape"});
}

TEST(ConvPoolOps, MaxPoolIndicesInBothStorageOrders) {
  // X [1,1,2,3] = [[1,2,10],[4,9,5]], 2x2 windows at columns 0 and 1:
  // {1,2,4,9} -> 9 at (1,1); {2,10,9,5} -> 10 at (0,2).
  // Row-major indices: 1*3+1 = 4 and 0*3+2 = 2; column-major (h + w*H): 1+1*2 = 3, 0+2*2 = 4.
  for (int order : {0, 1}) {
    graph::Graph g = test::graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 12]>
      g (float[1,1,2,3] x) => (float[1,1,1,2] y, int64[1,1,1,2] i) {
        y, i = MaxPool <kernel_shape = [2, 2], storage_order = )" +
                                           std::to_string(order) + R"(> (x)
      })");
    std::vector<Tensor> out = test::run(g, {test::floats({1, 1, 2, 3}, {1, 2, 10, 4, 9, 5})});
    EXPECT_TRUE(test::tensors_close(out[0], test::floats({1, 1, 1, 2}, {9, 10})));
    Tensor want = order ? test::int64s({1, 1, 1, 2}, {3, 4}) : test::int64s({1, 1, 1, 2}, {4, 2});
    EXPECT_TRUE(test::tensors_close(out[1], want)) << "storage_order = " << order;
  }
}

TEST(ConvPoolOps, MaxPoolCeilModeDropsAWindowStartingInTheEndPadding) {
  // Length 4, kernel 2, stride 2, pads (0,1): ceil((4+1-2)/2)+1 = 3 windows, but the third
  // would start at 4, inside the end padding, so it is dropped: windows {1,5} and {3,2}.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[1,1,4] x) => (float[1,1,2] y) {
      y = MaxPool <kernel_shape = [2], strides = [2], pads = [0, 1], ceil_mode = 1> (x)
    })");
  Tensor y = test::run(g, {test::floats({1, 1, 4}, {1, 5, 3, 2})})[0];
  EXPECT_TRUE(test::tensors_close(y, test::floats({1, 1, 2}, {5, 3})));
}

TEST(ConvPoolOps, GlobalPools) {
  // Two channels of a [1,2,2,2] input: (1,2,3,6) and (-1,-2,-3,-4).
  Tensor x = test::floats({1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -4});
  graph::Graph avg = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,2] x) => (float[1,2,1,1] y) { y = GlobalAveragePool(x) })");
  EXPECT_TRUE(test::tensors_close(test::run(avg, {x})[0], test::floats({1, 2, 1, 1}, {3, -2.5f})));
  graph::Graph max = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,2,2] x) => (float[1,2,1,1] y) { y = GlobalMaxPool(x) })");
  EXPECT_TRUE(test::tensors_close(test::run(max, {x})[0], test::floats({1, 2, 1, 1}, {6, -1})));
}

TEST(ConvPoolOps, PoolKernelLargerThanInputIsAUserError) {
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[1,1,2,2] x) => (float[1,1,1,1] y) { y = MaxPool <kernel_shape = [3, 3]> (x) })",
                            {"MaxPool", "larger than the padded input", "[1,1,2,2]"});
  test::expect_import_error(R"(
    <ir_version: 8, opset_import: ["" : 12]>
    g (float[1,1,4,4] x) => (float[1,1,1,1] y) { y = AveragePool <kernel_shape = [3]> (x) })",
                            {"AveragePool", "kernel_shape"});
}

}  // namespace
}  // namespace braze
