// pad_narrow_windows (#19): a half-precision stem's channels-last windows of 3 channels read X
// padded to 8 channels, the product's weight rows padded with zeros to match; the outputs are
// the reference's before the rewrite, with W stored k-major (after the precision pass) or as
// it is (straight after conv_as_matmul); float32 graphs and 8 channels are left alone.
#include <gtest/gtest.h>

#include "graph/passes/conv_as_matmul.h"
#include "graph/passes/narrow_windows.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "tests/model_builder.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// x [2, c, 13, 11] → Conv 7x7 / 2, pads 3 (+ bias) → Relu, its convolution a channels-last
// product.
graph::Graph stem(int64_t c) {
  test::ModelBuilder m(90);
  const graph::ValueId x = m.input({2, c, 13, 11});
  m.g.add_output(m.op("Relu", {m.op("Conv", {x, m.weight({16, c, 7, 7}), m.weight({16})},
                                    {{"strides", std::vector<int64_t>{2, 2}},
                                     {"pads", std::vector<int64_t>{3, 3, 3, 3}}})}),
                 "y");
  graph::passes::conv_as_matmul(m.g, 0);
  return std::move(m.g);
}

int count(const graph::Graph& g, const char* op) { return graph::passes::op_counts(g)[op]; }

TEST(PadNarrowWindows, KMajorWeightsAfterThePrecisionPass) {
  graph::Graph before = stem(3);
  graph::passes::run_pipeline(before);
  graph::passes::convert_precision(before, DType::Float16);
  graph::passes::run_pipeline(before);
  graph::Graph after = before;
  EXPECT_EQ(graph::passes::pad_narrow_windows(after), 1);
  graph::passes::run_pipeline(after);
  EXPECT_EQ(count(after, "Pad"), 1);
  EXPECT_EQ(graph::passes::pad_narrow_windows(after), 0) << "8 channels are not narrow";
  test::expect_same_outputs(before, after, 5);
}

TEST(PadNarrowWindows, PlainWeightsAsConvAsMatmulLeavesThem) {
  graph::Graph g = stem(3);
  graph::passes::convert_precision(g, DType::Float16);
  graph::Graph after = g;
  EXPECT_EQ(graph::passes::pad_narrow_windows(after), 1);
  graph::passes::run_pipeline(g);
  graph::passes::run_pipeline(after);
  test::expect_same_outputs(g, after, 6);
}

TEST(PadNarrowWindows, Float32AndWideChannelsStayAsTheyAre) {
  graph::Graph f32 = stem(3);
  graph::passes::run_pipeline(f32);
  EXPECT_EQ(graph::passes::pad_narrow_windows(f32), 0);
  graph::Graph wide = stem(16);
  graph::passes::run_pipeline(wide);
  graph::passes::convert_precision(wide, DType::Float16);
  graph::passes::run_pipeline(wide);
  EXPECT_EQ(graph::passes::pad_narrow_windows(wide), 0);
}

}  // namespace
}  // namespace braze
