// What the conv / pool ops mean, shared by their reference implementations
// (graph/ops/conv_pool.cpp) and their lowerings (codegen/lower/conv_pool.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

struct WindowGeometry {
  Shape in, kernel, stride, dilation, pad_begin, pad_end, out;
  size_t rank() const { return in.size(); }
};

// A window tap that lands inside the input: kernel flat index and input offset in one plane.
struct WindowTap {
  int64_t k;
  int64_t in;
};

struct ConvShapes {
  WindowGeometry g;
  int64_t n = 0, c = 0, m = 0, group = 1;
  Shape out;
};

struct PoolShapes {
  WindowGeometry g;
  int64_t n = 0, c = 0;
  Shape out;
};

ConvShapes conv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b);

// Each input element scatters W's window into the output at in_index * stride - pad_begin.
// The end pad comes out negative when output_shape asks for more than the scattered area;
// the rest is bias only.
ConvShapes conv_transpose_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b);

PoolShapes pool_shapes(const Node& node, const Shape& x);

// The windows of an Im2Col node over X [N, C, spatial...]: kernel_shape, strides, dilations,
// pads and auto_pad as Conv's; with transposed = 1 those of a ConvTranspose, its pads resolved
// and its output's spatial size given (output_spatial).
WindowGeometry im2col_geometry(const Node& node, const Shape& x);
// The windows of Im2Col node `node` over its input of shape x, channels-first or (channels_last
// = 1) channels-last.
WindowGeometry im2col_windows(const Node& node, const Shape& x);

// Im2Col (graph/ops/im2col.cpp; registered by register_conv_pool_ops).
struct OpDef;
OpDef im2col_op();

}  // namespace braze::graph
