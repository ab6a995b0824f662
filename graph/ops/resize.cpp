// Resize (opsets 10 to 19): nearest, linear and cubic interpolation over any subset of axes,
// every coordinate transformation mode, antialiasing, keep_aspect_ratio_policy.
//
// The reference is separable: each resized axis is interpolated in turn, in double, through
// a table of taps (input index, weight) per output coordinate. Taps outside the input take
// the edge value (or are dropped and the rest renormalised with exclude_outside), which is
// the spec's edge padding. Opset 10's form (X, scales) is rewritten into opset 11's layout
// (X, roi, scales, sizes) with the attributes that reproduce its behaviour. On the GPU each
// output element computes its own taps (see codegen/lower/resize.cpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "graph/ops/families.h"
#include "graph/ops/helpers.h"
#include "graph/ops/resize.h"

namespace braze::graph {
namespace {

using namespace ops;

[[noreturn]] void fail(const Node& n, const std::string& msg) {
  throw UserError(fmt::format("{}: {}", n.describe(), msg));
}

template <class E>
E pick(const Node& n, const char* attr, std::initializer_list<std::pair<const char*, E>> choices) {
  std::string v = n.attr_string(attr);
  std::vector<std::string> names;
  for (const auto& [name, e] : choices) {
    if (v == name) return e;
    names.push_back(name);
  }
  fail(n, fmt::format("{} must be one of {}, not '{}'", attr, fmt::join(names, ", "), v));
}

bool flag(const Node& n, const char* attr) {
  int64_t v = n.attr_int(attr);
  if (v != 0 && v != 1) fail(n, fmt::format("{} must be 0 or 1, not {}", attr, v));
  return v != 0;
}

}  // namespace

ResizeAttrs parse_resize_attrs(const Node& n) {
  ResizeAttrs a;
  a.mode = pick<ResizeMode>(n, "mode",
                            {{"nearest", ResizeMode::Nearest},
                             {"linear", ResizeMode::Linear},
                             {"cubic", ResizeMode::Cubic}});
  a.coord = pick<ResizeCoord>(n, "coordinate_transformation_mode",
                              {{"half_pixel", ResizeCoord::HalfPixel},
                               {"half_pixel_symmetric", ResizeCoord::HalfPixelSymmetric},
                               {"pytorch_half_pixel", ResizeCoord::PytorchHalfPixel},
                               {"align_corners", ResizeCoord::AlignCorners},
                               {"asymmetric", ResizeCoord::Asymmetric},
                               {"tf_half_pixel_for_nn", ResizeCoord::TfHalfPixelForNn},
                               {"tf_crop_and_resize", ResizeCoord::TfCropAndResize}});
  a.rounding = pick<ResizeRounding>(n, "nearest_mode",
                                    {{"round_prefer_floor", ResizeRounding::RoundPreferFloor},
                                     {"round_prefer_ceil", ResizeRounding::RoundPreferCeil},
                                     {"floor", ResizeRounding::Floor},
                                     {"ceil", ResizeRounding::Ceil}});
  a.policy = pick<ResizePolicy>(n, "keep_aspect_ratio_policy",
                                {{"stretch", ResizePolicy::Stretch},
                                 {"not_larger", ResizePolicy::NotLarger},
                                 {"not_smaller", ResizePolicy::NotSmaller}});
  a.cubic_a = n.attr_float("cubic_coeff_a");
  a.extrapolation = n.attr_float("extrapolation_value");
  a.exclude_outside = flag(n, "exclude_outside");
  a.antialias = flag(n, "antialias");
  if (!std::isfinite(a.cubic_a)) fail(n, "cubic_coeff_a must be finite");
  return a;
}

namespace {}  // namespace

// The axes scales, sizes and roi refer to, normalised (all axes when the attribute is absent).
std::vector<int64_t> resize_axes(const Node& n, int64_t r) {
  std::vector<int64_t> axes;
  if (n.has_attr("axes")) {
    axes = n.attr_ints("axes");
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (int64_t& ax : axes) {
      if (ax < -r || ax >= r) fail(n, fmt::format("axis {} is out of range for rank {}", ax, r));
      if (ax < 0) ax += r;
      if (seen[ax])
        fail(n, fmt::format("axes [{}] repeat an axis", fmt::join(n.attr_ints("axes"), ",")));
      seen[ax] = true;
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  return axes;
}

namespace {

using Axes = std::vector<int64_t>;

void plan_from_scales(const Node& n, const Axes& axes, const Tensor& scales,
                      std::vector<AxisPlan>& plan) {
  const int64_t na = static_cast<int64_t>(axes.size());
  if (!is_float(scales.dtype()))
    fail(n, fmt::format("scales must be floating, not {}", dtype_name(scales.dtype())));
  if (scales.numel() != na)
    fail(n, fmt::format("scales has {} values for {} axes", scales.numel(), na));
  for (int64_t i = 0; i < na; ++i) {
    double s = scales.get_f64(i);
    AxisPlan& p = plan[axes[i]];
    if (!(s > 0) || !std::isfinite(s))
      fail(n, fmt::format("scale {} of axis {} must be positive", s, axes[i]));
    double len = std::floor(static_cast<double>(p.in) * s);
    if (len > 4.0e18) fail(n, fmt::format("scale {} makes axis {} too long", s, axes[i]));
    p.scale = s;
    p.out = static_cast<int64_t>(len);
  }
}

// Sizes kept as given per axis (stretch), or one scale for every axis, the smallest
// (not_larger) or largest (not_smaller).
void plan_from_sizes(const Node& n, const ResizeAttrs& a, const Axes& axes, const Tensor& sizes,
                     std::vector<AxisPlan>& plan) {
  const int64_t na = static_cast<int64_t>(axes.size());
  if (!is_integer(sizes.dtype()))
    fail(n, fmt::format("sizes must be int64, not {}", dtype_name(sizes.dtype())));
  if (sizes.numel() != na)
    fail(n, fmt::format("sizes has {} values for {} axes", sizes.numel(), na));
  std::vector<int64_t> want = sizes.to_int64s();
  for (int64_t i = 0; i < na; ++i) {
    const AxisPlan& p = plan[axes[i]];
    if (want[i] < 0) fail(n, fmt::format("size {} of axis {} is negative", want[i], axes[i]));
    if (p.in == 0 && want[i] != 0)
      fail(n, fmt::format("axis {} is empty and cannot be resized to {}", axes[i], want[i]));
  }
  if (a.policy == ResizePolicy::Stretch) {
    for (int64_t i = 0; i < na; ++i) {
      AxisPlan& p = plan[axes[i]];
      p.out = want[i];
      p.scale = p.in ? static_cast<double>(want[i]) / static_cast<double>(p.in) : 1.0;
    }
    return;
  }
  double s = 0;
  bool first = true;
  for (int64_t i = 0; i < na; ++i) {
    const AxisPlan& p = plan[axes[i]];
    if (p.in == 0) continue;
    double si = static_cast<double>(want[i]) / static_cast<double>(p.in);
    if (first || (a.policy == ResizePolicy::NotLarger ? si < s : si > s)) s = si;
    first = false;
  }
  for (int64_t i = 0; i < na; ++i) {
    AxisPlan& p = plan[axes[i]];
    if (p.in == 0) continue;
    double len = s * static_cast<double>(p.in) + 0.5;  // rounds halves up
    if (len > 4.0e18) fail(n, fmt::format("sizes make axis {} too long", axes[i]));
    p.scale = s;
    p.out = static_cast<int64_t>(len);
  }
}

void plan_roi(const Node& n, const Axes& axes, const Tensor& roi, std::vector<AxisPlan>& plan) {
  const int64_t na = static_cast<int64_t>(axes.size());
  if (!is_float(roi.dtype()))
    fail(n, fmt::format("roi must be floating, not {}", dtype_name(roi.dtype())));
  if (roi.numel() != 2 * na)
    fail(n, fmt::format("roi has {} values; it needs {} (a start and an end per axis)", roi.numel(),
                        2 * na));
  for (int64_t i = 0; i < na; ++i) {
    AxisPlan& p = plan[axes[i]];
    p.roi_start = roi.get_f64(i);
    p.roi_end = roi.get_f64(na + i);
    if (!std::isfinite(p.roi_start) || !std::isfinite(p.roi_end))
      fail(n, fmt::format("roi of axis {} must be finite", axes[i]));
  }
}

}  // namespace

// The per-axis plan from the input shape and the (constant) scales / sizes / roi; scales and
// sizes hold a value or are null (absent or empty), roi may be null when it is not known.
std::vector<AxisPlan> plan_resize_axes(const Node& n, const ResizeAttrs& a, const Shape& x,
                                       const Tensor* scales, const Tensor* sizes,
                                       const Tensor* roi) {
  const int64_t r = static_cast<int64_t>(x.size());
  const Axes axes = resize_axes(n, r);
  std::vector<AxisPlan> plan(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) plan[i].in = plan[i].out = x[i];
  if ((scales != nullptr) == (sizes != nullptr))
    fail(n, scales ? "scales and sizes must not both be given"
                   : "one of scales and sizes must be given");
  if (scales)
    plan_from_scales(n, axes, *scales, plan);
  else
    plan_from_sizes(n, a, axes, *sizes, plan);
  if (roi) plan_roi(n, axes, *roi, plan);
  return plan;
}

namespace {

// Scales / sizes as the op reads them: absent or empty inputs count as not given.
const Tensor* optional_value(const InferCtx& ctx, size_t i) {
  if (!ctx.has_input(i) || checked_numel(ctx.shape(i)) == 0) return nullptr;
  return &ctx.require_value(i);
}
const Tensor* optional_value(const RefCtx& ctx, size_t i) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return nullptr;
  return &ctx.input(i);
}

// ---- interpolation ---------------------------------------------------------------------
struct Taps {
  std::vector<int64_t> first;  // per output coordinate, its first tap; first[out] ends the last
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> extrapolate;  // tf_crop_and_resize outside the input
};

double cubic_kernel(double u, double A) {
  u = std::fabs(u);
  if (u <= 1) return ((A + 2) * u - (A + 3)) * u * u + 1;
  if (u < 2) return (((u - 5) * u + 8) * u - 4) * A;
  return 0;
}

}  // namespace

// The input coordinate of output coordinate j along an axis.
double original_coordinate(const ResizeAttrs& a, const AxisPlan& p, int64_t j) {
  double x = static_cast<double>(j), s = p.scale;
  double len_in = static_cast<double>(p.in);
  // The target length before flooring to an integer: align_corners and tf_crop_and_resize
  // divide by it, as the ONNX reference and its node tests do.
  double width = s * len_in;
  switch (a.coord) {
    case ResizeCoord::HalfPixel:
      return (x + 0.5) / s - 0.5;
    case ResizeCoord::HalfPixelSymmetric: {
      double adjustment = static_cast<double>(p.out) / width;
      double offset = len_in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / s - 0.5;
    }
    case ResizeCoord::PytorchHalfPixel:
      return p.out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case ResizeCoord::AlignCorners:
      return width == 1 ? 0.0 : x * (len_in - 1) / (width - 1);
    case ResizeCoord::Asymmetric:
      return x / s;
    case ResizeCoord::TfHalfPixelForNn:
      return (x + 0.5) / s;
    case ResizeCoord::TfCropAndResize:
      if (width == 1) return 0.5 * (p.roi_start + p.roi_end) * (len_in - 1);
      return p.roi_start * (len_in - 1) +
             x * (p.roi_end - p.roi_start) * (len_in - 1) / (width - 1);
  }
  return x;
}

namespace {

int64_t nearest_index(ResizeRounding r, double x) {
  double base = std::floor(x), frac = x - base;
  auto b = static_cast<int64_t>(base);
  if (frac == 0) return b;
  switch (r) {
    case ResizeRounding::RoundPreferFloor:
      return frac <= 0.5 ? b : b + 1;
    case ResizeRounding::RoundPreferCeil:
      return frac < 0.5 ? b : b + 1;
    case ResizeRounding::Floor:
      return b;
    case ResizeRounding::Ceil:
      return b + 1;
  }
  return b;
}

}  // namespace

TapSpan tap_span(const ResizeAttrs& a, const AxisPlan& p) {
  // Kernel radius, stretched by 1/scale when antialiasing a downscale.
  double radius = a.mode == ResizeMode::Cubic ? 2.0 : 1.0;
  double stretch = a.antialias ? std::min(p.scale, 1.0) : 1.0;
  // An axis with outputs has scale >= 1 / (2 * length), so the cap only keeps the
  // conversion defined for an axis with none.
  double reach = std::min(radius / stretch, 2 * radius * static_cast<double>(p.in + 1));
  return {stretch, static_cast<int64_t>(std::floor(-reach)) + 1};
}

namespace {

Taps make_taps(const Node& n, const ResizeAttrs& a, const AxisPlan& p) {
  Taps t;
  double limit = static_cast<double>(p.in) - 1;
  const auto [stretch, lo] = tap_span(a, p);
  for (int64_t j = 0; j < p.out; ++j) {
    t.first.push_back(static_cast<int64_t>(t.index.size()));
    double x = original_coordinate(a, p, j);
    bool outside = a.coord == ResizeCoord::TfCropAndResize && (x < 0 || x > limit);
    t.extrapolate.push_back(outside);
    if (outside) continue;
    if (!std::isfinite(x) || std::fabs(x) > 1e15)
      fail(n, fmt::format("output coordinate {} maps to input coordinate {}, out of range", j, x));
    if (a.mode == ResizeMode::Nearest) {
      t.index.push_back(std::clamp<int64_t>(nearest_index(a.rounding, x), 0, p.in - 1));
      t.weight.push_back(1.0);
      continue;
    }
    double base = std::floor(x), frac = x - base;
    size_t begin = t.index.size();
    double sum = 0;
    for (int64_t o = lo; o <= 1 - lo; ++o) {
      double u = (static_cast<double>(o) - frac) * stretch;
      double w = a.mode == ResizeMode::Cubic ? cubic_kernel(u, a.cubic_a)
                                             : std::max(0.0, 1 - std::fabs(u));
      int64_t idx = static_cast<int64_t>(base) + o;
      if (a.exclude_outside && (idx < 0 || idx >= p.in)) w = 0;
      t.index.push_back(std::clamp<int64_t>(idx, 0, p.in - 1));
      t.weight.push_back(w);
      sum += w;
    }
    if ((a.antialias || a.exclude_outside) && sum != 0)
      for (size_t k = begin; k < t.weight.size(); ++k) t.weight[k] /= sum;
  }
  t.first.push_back(static_cast<int64_t>(t.index.size()));
  return t;
}

// Resizes axis d of `cur` (shape `shape`) in place according to p.
void resize_axis(const Node& n, const ResizeAttrs& a, std::vector<double>& cur, Shape& shape,
                 size_t d, const AxisPlan& p) {
  Taps t = make_taps(n, a, p);
  Shape next_shape = shape;
  next_shape[d] = p.out;
  checked_nbytes(DType::Float64, next_shape, n.describe() + " intermediate");
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= shape[i];
  for (size_t i = d + 1; i < shape.size(); ++i) inner *= shape[i];
  std::vector<double> next(static_cast<size_t>(checked_numel(next_shape)), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < p.out; ++j) {
      double* dst = &next[static_cast<size_t>((o * p.out + j) * inner)];
      if (t.extrapolate[j]) {
        std::fill(dst, dst + inner, a.extrapolation);
        continue;
      }
      for (int64_t k = t.first[j]; k < t.first[j + 1]; ++k) {
        const double* src = &cur[static_cast<size_t>((o * p.in + t.index[k]) * inner)];
        double w = t.weight[k];
        for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
  cur = std::move(next);
  shape = std::move(next_shape);
}

}  // namespace

bool resize_is_identity(const ResizeAttrs& a, const AxisPlan& p) {
  if (p.out != p.in || std::fabs(p.scale - 1.0) > 1e-9) return false;
  return a.coord != ResizeCoord::TfCropAndResize ||
         (p.roi_start == 0 && std::fabs(p.roi_end - 1.0) <= 1e-9);
}

namespace {

// ---- the op ----------------------------------------------------------------------------
// Opset 10 takes (X, scales) and always maps coordinates as asymmetric. Its nearest mode
// rounds down when upsampling and up when downsampling (what ONNX Runtime and the opset-10
// node tests do); with constant scales that all shrink, that is nearest_mode "ceil".
void upgrade_resize(Graph& g, NodeId id) {
  Node& node = g.node(id);
  if (node.opset >= 11) return;
  if (node.inputs.size() != 2)
    fail(node, fmt::format("opset {} takes inputs X and scales", node.opset));
  ValueId scales = node.inputs[1];
  node.inputs = {node.inputs[0], kNoValue, scales};
  node.attrs.insert_or_assign("coordinate_transformation_mode", std::string("asymmetric"));
  if (node.attr_string("mode") != "nearest") return;
  bool shrinks = false, grows = false;
  if (scales != kNoValue && g.value(scales).constant) {
    for (double s : g.value(scales).constant->to_doubles()) {
      shrinks |= s < 1;
      grows |= s > 1;
    }
  }
  node.attrs.insert_or_assign("nearest_mode", std::string(shrinks && !grows ? "ceil" : "floor"));
}

OpDef resize_op() {
  OpDef d;
  d.name = "Resize";
  d.since = 10;
  d.min_inputs = 1;
  d.max_inputs = 4;
  d.attrs = {attr_i("antialias", 0),
             attr_opt("axes", AttrType::Ints),
             attr_s("coordinate_transformation_mode", "half_pixel"),
             attr_f("cubic_coeff_a", -0.75),
             attr_i("exclude_outside", 0),
             attr_f("extrapolation_value", 0.0),
             attr_s("keep_aspect_ratio_policy", "stretch"),
             attr_s("mode", "nearest"),
             attr_s("nearest_mode", "round_prefer_floor")};
  d.shape_inputs = {1, 2, 3};
  d.types = kNumericTypes;
  d.upgrade = upgrade_resize;
  d.infer = [](InferCtx& ctx) {
    ctx.set_dtype(0, ctx.dtype(0));
    const Node& n = ctx.node();
    ResizeAttrs a = parse_resize_attrs(n);
    const Shape& x = ctx.shape(0);
    if (x.empty()) ctx.fail("X must have rank 1 or more");
    bool has_roi = ctx.has_input(1) && checked_numel(ctx.shape(1)) > 0;
    if (a.coord == ResizeCoord::TfCropAndResize && !has_roi)
      ctx.fail("tf_crop_and_resize needs the roi input");
    // roi matters only to tf_crop_and_resize; it is checked here when already known.
    const Tensor* roi = a.coord == ResizeCoord::TfCropAndResize ? ctx.value(1) : nullptr;
    std::vector<AxisPlan> plan =
        plan_resize_axes(n, a, x, optional_value(ctx, 2), optional_value(ctx, 3), roi);
    Shape out;
    for (const AxisPlan& p : plan) out.push_back(p.out);
    ctx.set_shape(0, out);
  };
  d.reference = [](RefCtx& ctx) {
    const Node& n = ctx.node();
    ResizeAttrs a = parse_resize_attrs(n);
    const Tensor& x = ctx.input(0);
    const Tensor* roi = a.coord == ResizeCoord::TfCropAndResize ? optional_value(ctx, 1) : nullptr;
    std::vector<AxisPlan> plan =
        plan_resize_axes(n, a, x.shape(), optional_value(ctx, 2), optional_value(ctx, 3), roi);
    std::vector<double> cur(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) cur[i] = x.get_f64(i);
    Shape shape = x.shape();
    for (size_t dd = 0; dd < plan.size(); ++dd)
      if (!resize_is_identity(a, plan[dd])) resize_axis(n, a, cur, shape, dd, plan[dd]);
    Tensor& y = ctx.output(0);
    bool integral = !is_float(y.dtype());
    for (int64_t i = 0; i < y.numel(); ++i)
      y.set_f64(i, integral ? std::nearbyint(cur[i]) : cur[i]);
  };
  return d;
}

}  // namespace

void register_resize_ops(std::vector<OpDef>& r) { r.push_back(resize_op()); }

}  // namespace braze::graph
