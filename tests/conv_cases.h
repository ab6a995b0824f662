// Convolutions for the implicit-GEMM path (#19): each case is a float32 model x → Conv(W, b)
// → Relu → a 3x3 Conv (pads 1) → + the Relu's output → Relu, converted to float16 or bfloat16
// with its convolutions made channels-last products (conv_as_matmul at any size, then the
// pipeline): the first convolution reads the model's input (cast and moved channels-last by
// a kernel of its own), the second a GEMM's channels-last output, with a residual epilogue.
// Odd sizes, strides above the kernel, dilation, asymmetric pads, 2-D and 3-D windows, maps of
// 7x7 pixels whose tiles span images, and a stem of 3 channels (its windows padded to 8
// channels in half precision, as the compile script does for sm_90a: pad_narrow_windows). The
// codegen test (tests/codegen), the emulator test (tests/runtime) and the GPU test (tests/gpu)
// share them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "fusion/plan.h"
#include "graph/op_context.h"
#include "graph/passes/conv_as_matmul.h"
#include "graph/passes/narrow_windows.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "graph/passes/weights_k_major.h"
#include "graph/registry.h"
#include "runtime/compare.h"
#include "tests/model_builder.h"
#include "tests/test_util.h"

namespace braze::test {

struct ConvCase {
  const char* name;
  Shape x;  // [N, C, spatial…]
  int64_t cout;
  std::vector<int64_t> kernel, strides, pads, dilations;
  // Whether the first convolution's windows are read in place by the wgmma schedule in half
  // precision (its input channels a multiple of 64, or padded to 8); the second one's always are.
  bool first_in_place;
};

inline const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"Pad1", {2, 64, 9, 11}, 64, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"Stride2", {2, 64, 15, 13}, 64, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true},
      {"Dilation2AsymmetricPads", {1, 128, 12, 10}, 64, {3, 3}, {1, 1}, {2, 1, 1, 2}, {2, 2}, true},
      {"OneByOneStride2", {3, 64, 14, 14}, 128, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {"Rect5x3Strides2x1", {2, 64, 16, 9}, 64, {5, 3}, {2, 1}, {2, 1, 2, 1}, {1, 1}, true},
      {"StrideOverKernel", {2, 64, 13, 13}, 64, {2, 2}, {3, 3}, {0, 0, 0, 0}, {1, 1}, true},
      {"SevenBySevenMaps", {3, 128, 7, 7}, 128, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {"Conv3d", {1, 64, 5, 6, 7}, 64, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, true},
      {"ThirtyTwoChannels", {2, 32, 10, 10}, 64, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {"ThreeChannelStem", {2, 3, 20, 18}, 64, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, true},
  };
  return cases;
}

// The case's model in `dtype` (Float16 or BFloat16; Float32 as --precision tf32 leaves it, the
// products' weights k-major) after the passes, convolutions as channels-last products.
inline graph::Graph conv_case_graph(const ConvCase& c, DType dtype) {
  ModelBuilder m(50);
  graph::Graph& g = m.g;
  const graph::ValueId x = m.input(c.x);
  Shape w1 = {c.cout, c.x[1]}, w2 = {c.cout, c.cout};
  for (int64_t k : c.kernel) w1.push_back(k);
  for (size_t d = 0; d < c.kernel.size(); ++d) w2.push_back(3);
  const graph::ValueId r =
      m.op("Relu", {m.op("Conv", {x, m.weight(w1), m.weight({c.cout})},
                         {{"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}})});
  const graph::ValueId c2 = m.op("Conv", {r, m.weight(w2), m.weight({c.cout})},
                                 {{"pads", std::vector<int64_t>(2 * c.kernel.size(), 1)}});
  g.add_output(m.op("Relu", {m.op("Add", {c2, r})}), "y");
  graph::passes::conv_as_matmul(g, 0);
  graph::passes::run_pipeline(g);
  if (dtype == DType::Float32) {  // as --precision tf32 leaves it
    graph::passes::store_weights_k_major_as(g, DType::Float32);
    return std::move(g);
  }
  graph::passes::convert_precision(g, dtype);
  graph::passes::run_pipeline(g);
  if (graph::passes::pad_narrow_windows(g) > 0) graph::passes::run_pipeline(g);
  return std::move(g);
}

// Whether group gr holds an Im2Col, and whether it is a product's kernel that reads the windows
// in place (an implicit-GEMM convolution).
inline bool has_windows(const graph::Graph& g, const fusion::Group& gr) {
  return std::any_of(gr.nodes.begin(), gr.nodes.end(),
                     [&](graph::NodeId id) { return g.node(id).op_type() == "Im2Col"; });
}
inline bool reads_windows(const graph::Graph& g, const fusion::Group& gr) {
  return gr.kind == fusion::GroupKind::Gemm && has_windows(g, gr);
}

// Three of a product's candidates where running all of them takes too long: the default, the
// first persistent ping-pong tile and the first 256-row tile.
inline std::vector<codegen::Tunables> three_candidates(const std::vector<codegen::Tunables>& all) {
  if (all.empty()) return all;
  std::vector<codegen::Tunables> some = {all[0]};
  for (const char* key : {"pp", "cw"}) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const codegen::Tunables& t) { return t.count(key) > 0; });
    if (it != all.end()) some.push_back(*it);
  }
  return some;
}

// The output (float32: the model's interface) against the reference's, within the tolerance
// of the `dtype` it was computed in (tf32 for Float32: float16's 10 mantissa bits), and its
// absolute one at least two units in the last place of 1 in that type, the activations'
// magnitude: a fused kernel keeps in float what the reference rounds to half between the
// product and the residual Add, so an output near 0 (a cancellation) differs by the units of
// its terms.
inline ::testing::AssertionResult conv_outputs_close(const Tensor& got, const Tensor& want,
                                                     DType dtype) {
  if (dtype == DType::Float32) dtype = DType::Float16;
  runtime::Tolerance tol = runtime::default_tolerance(dtype);
  tol.atol = std::max(tol.atol, dtype == DType::BFloat16 ? 1.6e-2 : 4e-3);
  const runtime::Comparison c = runtime::compare(got, want, tol);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.summary(got, want);
}

}  // namespace braze::test
