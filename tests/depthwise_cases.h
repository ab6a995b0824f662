// Depthwise convolutions and pooling in channels-last plans (#19): each case is a float32
// model x → 1x1 Conv (to `channels`) → Relu → a depthwise Conv (+ bias) and Clip(0, 6), or a
// pooling → 1x1 Conv (back to x's channels), with its 1x1 convolutions made channels-last
// products (conv_as_matmul at any size, then the pipeline), so that the depthwise convolution
// or the pooling reads a channels-last value through the Transpose in front of it, writes one
// and its kernel computes a vector of channels at a time (Lowering::lanes: schedules
// "depthwise" and "pool"; ResNet's MaxPool after its stem, MobileNet's depthwise convolutions
// between 1x1 ones). Odd sizes, strides, dilation, asymmetric pads, strides above the kernel,
// channel counts that give vectors of 8, 4 and 2 lanes, a 3-D window. The emulator test
// (tests/runtime), the codegen test (tests/codegen) and the GPU test (tests/gpu) share them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "fusion/plan.h"
#include "graph/op_context.h"
#include "graph/passes/conv_as_matmul.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "graph/registry.h"
#include "runtime/compare.h"
#include "tests/model_builder.h"
#include "tests/test_util.h"

namespace braze::test {

struct DepthwiseCase {
  const char* name;
  Shape x;           // [N, C, spatial…]
  int64_t channels;  // of the depthwise convolution
  std::vector<int64_t> kernel, strides, pads, dilations;
  // "MaxPool" or "AveragePool" (count_include_pad 0) with the kernel, strides, pads and
  // dilations in place of the depthwise convolution; empty for the convolution.
  const char* pool = "";
};

inline void PrintTo(const DepthwiseCase& c, std::ostream* os) { *os << c.name; }

inline const std::vector<DepthwiseCase>& depthwise_cases() {
  static const std::vector<DepthwiseCase> cases = {
      {"Pad1", {2, 8, 11, 9}, 24, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"Stride2", {2, 8, 13, 12}, 32, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {"Dilation2AsymmetricPads", {1, 8, 10, 12}, 16, {3, 3}, {1, 1}, {2, 1, 1, 2}, {2, 2}},
      {"FiveByFiveStride2", {2, 8, 15, 15}, 40, {5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {"StrideOverKernel", {2, 8, 13, 13}, 16, {2, 2}, {3, 3}, {0, 0, 0, 0}, {1, 1}},
      {"TwelveChannels", {1, 4, 7, 9}, 12, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"SixChannels", {1, 4, 6, 5}, 6, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"Conv3d", {1, 8, 5, 6, 7}, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}},
      {"MaxPool3x3Stride2", {2, 8, 12, 11}, 16, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, "MaxPool"},
      {"MaxPool2x2Dilation2", {1, 8, 9, 10}, 24, {2, 2}, {1, 1}, {0, 1, 1, 0}, {2, 2}, "MaxPool"},
      // Stride 1 over 64 channels: walked in patches of 4 x 8 and 2 x 7 pixels (the pointwise
      // schedule's window_patch).
      {"Stride1Patches", {2, 8, 8, 16}, 64, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {"MaxPool3x3Stride1Patches",
       {1, 8, 6, 14},
       64,
       {3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       "MaxPool"},
      {"AveragePool3x3Pad1",
       {2, 8, 11, 11},
       24,
       {3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       "AveragePool"},
      {"AveragePool3dStride2",
       {1, 8, 6, 5, 7},
       8,
       {2, 2, 2},
       {2, 2, 2},
       {0, 0, 0, 1, 1, 1},
       {1, 1, 1},
       "AveragePool"},
  };
  return cases;
}

// The case's model after the passes, in float32 or converted to `dtype` (Float16, BFloat16).
inline graph::Graph depthwise_case_graph(const DepthwiseCase& c, DType dtype) {
  ModelBuilder m(80);
  graph::Graph& g = m.g;
  const size_t spatial = c.kernel.size();
  auto one_by_one = [&](graph::ValueId v, int64_t from, int64_t to) {
    Shape w = {to, from};
    w.resize(2 + spatial, 1);
    return m.op("Conv", {v, m.weight(w), m.weight({to})});
  };
  graph::ValueId v = m.op("Relu", {one_by_one(m.input(c.x), c.x[1], c.channels)});
  graph::Attributes window = {{"kernel_shape", c.kernel}, {"strides", c.strides}, {"pads", c.pads}};
  if (std::any_of(c.dilations.begin(), c.dilations.end(), [](int64_t d) { return d != 1; }))
    window["dilations"] = c.dilations;
  if (*c.pool) {
    v = m.op(c.pool, {v}, window);
  } else {
    Shape w = {c.channels, 1};
    w.insert(w.end(), c.kernel.begin(), c.kernel.end());
    graph::Attributes a = window;
    a.erase("kernel_shape");
    a["group"] = c.channels;
    const graph::ValueId lo = g.add_constant("lo", Tensor::scalar_of(DType::Float32, 0)),
                         hi = g.add_constant("hi", Tensor::scalar_of(DType::Float32, 6));
    v = m.op("Clip", {m.op("Conv", {v, m.weight(w), m.weight({c.channels})}, a), lo, hi});
  }
  g.add_output(one_by_one(v, c.channels, c.x[1]), "y");
  graph::passes::conv_as_matmul(g, 0);
  graph::passes::run_pipeline(g);
  if (dtype != DType::Float32) {
    graph::passes::convert_precision(g, dtype);
    graph::passes::run_pipeline(g);
  }
  return std::move(g);
}

// The output against the reference's, within the tolerance of `dtype`, and for a half type
// an absolute one of two units in the last place of 1 (activations near 1; an output near 0
// is a cancellation of terms the kernel keeps in float where the reference rounds them).
inline ::testing::AssertionResult depthwise_outputs_close(const Tensor& got, const Tensor& want,
                                                          DType dtype) {
  runtime::Tolerance tol = runtime::default_tolerance(dtype);
  if (dtype != DType::Float32)
    tol.atol = std::max(tol.atol, dtype == DType::BFloat16 ? 1.6e-2 : 4e-3);
  const runtime::Comparison r = runtime::compare(got, want, tol);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.summary(got, want);
}

// Whether group gr computes the depthwise convolution, or a pooling.
inline bool has_op(const graph::Graph& g, const fusion::Group& gr, const char* op) {
  return std::any_of(gr.nodes.begin(), gr.nodes.end(),
                     [&](graph::NodeId id) { return g.node(id).op_type() == op; });
}

}  // namespace braze::test
