// How the resize ops (graph/ops/resize.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/resize.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

// ---- GPU index map -----------------------------------------------------------------------
// On the GPU one thread computes one output element. Per resized axis the host folds the
// constants (scale, roi, tap span) and the kernel computes the input coordinate with the
// same double operations as original_coordinate, so nearest rounding picks the same input
// index; linear and cubic then loop over the axis' taps, the loops nested across axes (the
// reference's separable passes as one tensor-product sum). Interpolation runs in double;
// integers are rounded and saturated as the reference stores them.

std::string dlit(double v) { return "(" + cuda_literal(ComputeType::Double, v) + ")"; }

// Where a roi input that is not a constant is read: its start and end, as doubles.
struct RoiCode {
  std::string start, end;
};

std::string coordinate_code(const ResizeAttrs& a, const AxisPlan& p, const std::string& j,
                            const RoiCode* roi) {
  const std::string x = "(double)" + j;
  const double s = p.scale, len_in = static_cast<double>(p.in), width = s * len_in;
  switch (a.coord) {
    case ResizeCoord::HalfPixel:
      return fmt::format("({} + 0.5) / {} - 0.5", x, dlit(s));
    case ResizeCoord::HalfPixelSymmetric: {
      double adjustment = static_cast<double>(p.out) / width;
      double offset = len_in / 2 * (1 - adjustment);
      return fmt::format("{} + ({} + 0.5) / {} - 0.5", dlit(offset), x, dlit(s));
    }
    case ResizeCoord::PytorchHalfPixel:
      return p.out > 1 ? fmt::format("({} + 0.5) / {} - 0.5", x, dlit(s)) : "0.0";
    case ResizeCoord::AlignCorners:
      return width == 1 ? "0.0" : fmt::format("{} * {} / {}", x, dlit(len_in - 1), dlit(width - 1));
    case ResizeCoord::Asymmetric:
      return fmt::format("{} / {}", x, dlit(s));
    case ResizeCoord::TfHalfPixelForNn:
      return fmt::format("({} + 0.5) / {}", x, dlit(s));
    case ResizeCoord::TfCropAndResize:
      if (roi) {
        if (width == 1)
          return fmt::format("0.5 * ({} + {}) * {}", roi->start, roi->end, dlit(len_in - 1));
        return fmt::format("{0} * {2} + {3} * ({1} - {0}) * {2} / {4}", roi->start, roi->end,
                           dlit(len_in - 1), x, dlit(width - 1));
      }
      if (width == 1) return dlit(0.5 * (p.roi_start + p.roi_end) * (len_in - 1));
      return fmt::format("{} + {} * {} * {} / {}", dlit(p.roi_start * (len_in - 1)), x,
                         dlit(p.roi_end - p.roi_start), dlit(len_in - 1), dlit(width - 1));
  }
  return x;
}

// The nearest input index of coordinate x (a double local), clamped to the input.
std::string nearest_code(CudaIndexCtx& ctx, ResizeRounding r, const std::string& x, int64_t in) {
  std::string base = ctx.let("double", fmt::format("floor({})", x));
  std::string frac = fmt::format("({} - {})", x, base);
  std::string v;
  switch (r) {
    case ResizeRounding::RoundPreferFloor:
      v = fmt::format("({} <= 0.5 ? {} : {} + 1.0)", frac, base, base);
      break;
    case ResizeRounding::RoundPreferCeil:
      v = fmt::format("({} < 0.5 ? {} : {} + 1.0)", frac, base, base);
      break;
    case ResizeRounding::Floor:
      v = base;
      break;
    case ResizeRounding::Ceil:
      v = fmt::format("({} == 0.0 ? {} : {} + 1.0)", frac, base, base);
      break;
  }
  return ctx.let("long long", fmt::format("(long long)fmin(fmax({}, 0.0), {})", v,
                                          dlit(static_cast<double>(in - 1))));
}

std::pair<double, double> int_range(DType dt) {
  switch (dt) {
    case DType::Int8:
      return {-128.0, 127.0};
    case DType::Int16:
      return {-32768.0, 32767.0};
    case DType::Int32:
      return {-2147483648.0, 2147483647.0};
    case DType::Int64:
      return {-9223372036854775808.0, 9223372036854775807.0};
    case DType::UInt8:
      return {0.0, 255.0};
    case DType::UInt16:
      return {0.0, 65535.0};
    case DType::UInt32:
      return {0.0, 4294967295.0};
    default:
      return {0.0, 18446744073709551615.0};
  }
}

// A double value r as output dtype dt's compute type: rounded to nearest and saturated
// (NaN to 0) for integers, as the reference's stores do.
std::string store_code(CudaIndexCtx& ctx, DType dt, const std::string& r) {
  const ComputeType t = compute_type(dt);
  if (is_float(dt)) return t == ComputeType::Double ? r : fmt::format("({})({})", t, r);
  std::string v = ctx.let("double", fmt::format("nearbyint({})", r));
  auto [lo, hi] = int_range(dt);
  return fmt::format("({0} != {0} ? {1} : ({0} <= {2} ? {3} : ({0} >= {4} ? {5} : ({6}){0})))", v,
                     cuda_literal(t, 0), dlit(lo), cuda_literal(t, lo), dlit(hi),
                     cuda_literal(t, hi), t);
}

// The extrapolation value as the reference stores it in dtype dt, a literal of its compute type.
std::string stored_literal(DType dt, double v) {
  Tensor one(dt, Shape{});
  one.set_f64(0, is_float(dt) ? v : std::nearbyint(v));
  return cuda_literal(compute_type(dt), one.get_f64(0));
}

std::string resize_cuda(CudaIndexCtx& ctx) {
  const Node& n = ctx.node();
  const ResizeAttrs a = parse_resize_attrs(n);
  const Shape& x = ctx.in_shape(0);
  const DType dt = ctx.in_dtype(0);
  const std::string t = cuda_compute_type(dt);
  // Scales and sizes fix the output shape, so they are constants here; roi may be read at run
  // time (tf_crop_and_resize only).
  auto given = [&](size_t i) -> const Tensor* {
    if (!ctx.has_input(i) || checked_numel(ctx.in_shape(i)) == 0) return nullptr;
    const Tensor* v = ctx.in_value(i);
    if (!v) throw CudaUnsupported{n.describe() + ": scales or sizes is not a constant"};
    return v;
  };
  const bool crop = a.coord == ResizeCoord::TfCropAndResize;
  const bool roi_runtime = crop && ctx.in_value(1) == nullptr;
  const Tensor* roi = crop && !roi_runtime ? ctx.in_value(1) : nullptr;
  const std::vector<AxisPlan> plan = plan_resize_axes(n, a, x, given(2), given(3), roi);
  const std::vector<int64_t> axes = resize_axes(n, static_cast<int64_t>(x.size()));
  const int64_t na = static_cast<int64_t>(axes.size());

  std::vector<std::string> coords;
  for (size_t d = 0; d < x.size(); ++d) coords.push_back(ctx.coord(d));
  std::vector<size_t> moving;
  std::vector<RoiCode> roi_code(x.size());
  for (int64_t i = 0; i < na; ++i) {
    size_t d = static_cast<size_t>(axes[static_cast<size_t>(i)]);
    if (roi_runtime) {
      roi_code[d].start = ctx.let("double", "(double)" + ctx.load(1, {fmt::format("{}LL", i)}));
      roi_code[d].end = ctx.let("double", "(double)" + ctx.load(1, {fmt::format("{}LL", na + i)}));
    }
  }
  for (size_t d = 0; d < x.size(); ++d)
    if (!resize_is_identity(a, plan[d]) || (roi_runtime && !roi_code[d].start.empty()))
      moving.push_back(d);
  if (moving.empty()) return ctx.load(0, coords);

  // Input coordinates, and the condition that one falls outside the input (crop only).
  std::vector<std::string> xs(x.size()), outside;
  for (size_t d : moving) {
    const AxisPlan& p = plan[d];
    xs[d] =
        ctx.let("double", coordinate_code(a, p, coords[d], roi_runtime ? &roi_code[d] : nullptr));
    if (crop)
      outside.push_back(
          fmt::format("{0} < 0.0 || {0} > {1}", xs[d], dlit(static_cast<double>(p.in - 1))));
  }
  const std::string any_outside = fmt::format("{}", fmt::join(outside, " || "));

  if (a.mode == ResizeMode::Nearest) {
    for (size_t d : moving) coords[d] = nearest_code(ctx, a.rounding, xs[d], plan[d].in);
    if (!crop) return ctx.load(0, coords);
    return ctx.select(
        any_outside, t, [&] { return stored_literal(dt, a.extrapolation); },
        [&] { return ctx.load(0, coords); });
  }

  // Linear and cubic: per axis, floor(x) and its fraction, the tap span and (when weights
  // are renormalised) their sum.
  const bool normalize = a.antialias || a.exclude_outside;
  std::vector<std::string> base(x.size()), frac(x.size()), sum(x.size());
  std::vector<TapSpan> span(x.size());
  auto tap = [&](size_t d, const std::string& k) {
    // The weight and the (unclamped) input index of tap k of axis d.
    const TapSpan& sp = span[d];
    std::string o = sp.lo == 0 ? "(double)" + k : fmt::format("(double)({} + {}LL)", k, sp.lo);
    std::string u = ctx.let(
        "double", sp.stretch == 1.0 ? fmt::format("{} - {}", o, frac[d])
                                    : fmt::format("({} - {}) * {}", o, frac[d], dlit(sp.stretch)));
    std::string w;
    if (a.mode == ResizeMode::Linear) {
      w = fmt::format("fmax(0.0, 1.0 - fabs({}))", u);
    } else {
      std::string au = ctx.let("double", fmt::format("fabs({})", u));
      w = fmt::format(
          "({0} <= 1.0 ? ({1} * {0} - {2}) * {0} * {0} + 1.0 : ({0} < 2.0 ? ((({0} - 5.0) * {0} + "
          "8.0) * {0} - 4.0) * {3} : 0.0))",
          au, dlit(a.cubic_a + 2), dlit(a.cubic_a + 3), dlit(a.cubic_a));
    }
    std::string idx = ctx.let("double", fmt::format("{} + {}", base[d], o));
    if (a.exclude_outside)
      w = fmt::format("(({0} < 0.0 || {0} >= {1}) ? 0.0 : {2})", idx,
                      dlit(static_cast<double>(plan[d].in)), w);
    return std::pair{ctx.let("double", w), idx};
  };
  auto interpolate = [&] {
    for (size_t d : moving) {
      base[d] = ctx.let("double", fmt::format("floor({})", xs[d]));
      frac[d] = ctx.let("double", fmt::format("{} - {}", xs[d], base[d]));
      span[d] = tap_span(a, plan[d]);
      if (normalize)
        sum[d] = ctx.accumulate("double", "0.0", 2 - 2 * span[d].lo,
                                [&](const std::string& acc, const std::string& k) {
                                  return fmt::format("{} + {}", acc, tap(d, k).first);
                                });
    }
    std::function<std::string(size_t)> level = [&](size_t m) -> std::string {
      if (m == moving.size()) return "(double)" + ctx.load(0, coords);
      const size_t d = moving[m];
      return ctx.accumulate(
          "double", "0.0", 2 - 2 * span[d].lo, [&](const std::string& acc, const std::string& k) {
            auto [w, idx] = tap(d, k);
            std::string wv = ctx.let(
                "double", normalize ? fmt::format("({0} != 0.0 ? {1} / {0} : {1})", sum[d], w) : w);
            coords[d] =
                ctx.let("long long", fmt::format("(long long)fmin(fmax({}, 0.0), {})", idx,
                                                 dlit(static_cast<double>(plan[d].in - 1))));
            return fmt::format("{} + {} * {}", acc, wv, level(m + 1));
          });
    };
    return level(0);
  };
  std::string r =
      crop ? ctx.select(
                 any_outside, "double", [&] { return dlit(a.extrapolation); }, interpolate)
           : interpolate();
  return store_code(ctx, dt, r);
}

}  // namespace

void lower_resize_ops(LoweringTable& t) { t.add("Resize").index = resize_cuda; }

}  // namespace braze::codegen
