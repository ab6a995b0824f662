// What the resize ops mean, shared by their reference implementations
// (graph/ops/resize.cpp) and their lowerings (codegen/lower/resize.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace braze::graph {

enum class ResizeMode { Nearest, Linear, Cubic };

enum class ResizeCoord {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};

enum class ResizeRounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

enum class ResizePolicy { Stretch, NotLarger, NotSmaller };

struct ResizeAttrs {
  ResizeMode mode;
  ResizeCoord coord;
  ResizeRounding rounding;
  ResizePolicy policy;
  double cubic_a;
  double extrapolation;
  bool exclude_outside;
  bool antialias;
};

// What happens along one axis of the input.
struct AxisPlan {
  int64_t in = 0, out = 0;
  double scale = 1.0;
  double roi_start = 0.0, roi_end = 1.0;
};

// The taps of linear and cubic interpolation along an axis: offsets lo .. 1 - lo from
// floor(x), the kernel's argument scaled by `stretch`.
struct TapSpan {
  double stretch;
  int64_t lo;
};

ResizeAttrs parse_resize_attrs(const Node& n);

// The axes scales, sizes and roi refer to, normalised (all axes when the attribute is absent).
std::vector<int64_t> resize_axes(const Node& n, int64_t r);

// The per-axis plan from the input shape and the (constant) scales / sizes / roi; scales and
// sizes hold a value or are null (absent or empty), roi may be null when it is not known.
std::vector<AxisPlan> plan_resize_axes(const Node& n, const ResizeAttrs& a, const Shape& x,
                                       const Tensor* scales, const Tensor* sizes,
                                       const Tensor* roi);

// The input coordinate of output coordinate j along an axis.
double original_coordinate(const ResizeAttrs& a, const AxisPlan& p, int64_t j);

TapSpan tap_span(const ResizeAttrs& a, const AxisPlan& p);

bool resize_is_identity(const ResizeAttrs& a, const AxisPlan& p);

}  // namespace braze::graph
