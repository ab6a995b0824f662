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

// One Resize node's output element: the input coordinates per moving axis, then nearest's
// pick or linear / cubic's taps, each step a member function.
class ResizeLowering {
 public:
  explicit ResizeLowering(CudaIndexCtx& ctx)
      : ctx_(ctx), n_(ctx.node()), a_(parse_resize_attrs(n_)), x_(ctx.in_shape(0)) {}

  std::string lower() {
    const DType dt = ctx_.in_dtype(0);
    // Scales and sizes fix the output shape, so they are constants here; roi may be read at
    // run time (tf_crop_and_resize only).
    crop_ = a_.coord == ResizeCoord::TfCropAndResize;
    roi_runtime_ = crop_ && ctx_.in_value(1) == nullptr;
    const Tensor* roi = crop_ && !roi_runtime_ ? ctx_.in_value(1) : nullptr;
    plan_ = plan_resize_axes(n_, a_, x_, given(2), given(3), roi);
    for (size_t d = 0; d < x_.size(); ++d) coords_.push_back(ctx_.coord(d));
    find_moving_axes();
    if (moving_.empty()) return ctx_.load(0, coords_);
    const std::string any_outside = input_coordinates();
    if (a_.mode == ResizeMode::Nearest) {
      for (size_t d : moving_) coords_[d] = nearest_code(ctx_, a_.rounding, xs_[d], plan_[d].in);
      if (!crop_) return ctx_.load(0, coords_);
      return ctx_.select(
          any_outside, cuda_compute_type(dt), [&] { return stored_literal(dt, a_.extrapolation); },
          [&] { return ctx_.load(0, coords_); });
    }
    std::string r = crop_ ? ctx_.select(
                                any_outside, "double", [&] { return dlit(a_.extrapolation); },
                                [&] { return interpolate(); })
                          : interpolate();
    return store_code(ctx_, dt, r);
  }

 private:
  const Tensor* given(size_t i) {
    if (!ctx_.has_input(i) || checked_numel(ctx_.in_shape(i)) == 0) return nullptr;
    const Tensor* v = ctx_.in_value(i);
    if (!v) throw CudaUnsupported{n_.describe() + ": scales or sizes is not a constant"};
    return v;
  }

  // The axes whose coordinate moves (a run-time roi's too), its start and end read first.
  void find_moving_axes() {
    const std::vector<int64_t> axes = resize_axes(n_, static_cast<int64_t>(x_.size()));
    const int64_t na = static_cast<int64_t>(axes.size());
    roi_code_.resize(x_.size());
    for (int64_t i = 0; i < na; ++i) {
      size_t d = static_cast<size_t>(axes[static_cast<size_t>(i)]);
      if (roi_runtime_) {
        roi_code_[d].start =
            ctx_.let("double", "(double)" + ctx_.load(1, {fmt::format("{}LL", i)}));
        roi_code_[d].end =
            ctx_.let("double", "(double)" + ctx_.load(1, {fmt::format("{}LL", na + i)}));
      }
    }
    for (size_t d = 0; d < x_.size(); ++d)
      if (!resize_is_identity(a_, plan_[d]) || (roi_runtime_ && !roi_code_[d].start.empty()))
        moving_.push_back(d);
  }

  // Input coordinates; returns the condition that one falls outside the input (crop only).
  std::string input_coordinates() {
    xs_.assign(x_.size(), "");
    std::vector<std::string> outside;
    for (size_t d : moving_) {
      const AxisPlan& p = plan_[d];
      xs_[d] = ctx_.let("double",
                        coordinate_code(a_, p, coords_[d], roi_runtime_ ? &roi_code_[d] : nullptr));
      if (crop_)
        outside.push_back(
            fmt::format("{0} < 0.0 || {0} > {1}", xs_[d], dlit(static_cast<double>(p.in - 1))));
    }
    return fmt::format("{}", fmt::join(outside, " || "));
  }

  // The weight and the (unclamped) input index of tap k of axis d.
  std::pair<std::string, std::string> tap(size_t d, const std::string& k) {
    const TapSpan& sp = span_[d];
    std::string o = sp.lo == 0 ? "(double)" + k : fmt::format("(double)({} + {}LL)", k, sp.lo);
    std::string u = ctx_.let(
        "double", sp.stretch == 1.0 ? fmt::format("{} - {}", o, frac_[d])
                                    : fmt::format("({} - {}) * {}", o, frac_[d], dlit(sp.stretch)));
    std::string w;
    if (a_.mode == ResizeMode::Linear) {
      w = fmt::format("fmax(0.0, 1.0 - fabs({}))", u);
    } else {
      std::string au = ctx_.let("double", fmt::format("fabs({})", u));
      w = fmt::format(
          "({0} <= 1.0 ? ({1} * {0} - {2}) * {0} * {0} + 1.0 : ({0} < 2.0 ? ((({0} - 5.0) * {0} + "
          "8.0) * {0} - 4.0) * {3} : 0.0))",
          au, dlit(a_.cubic_a + 2), dlit(a_.cubic_a + 3), dlit(a_.cubic_a));
    }
    std::string idx = ctx_.let("double", fmt::format("{} + {}", base_[d], o));
    if (a_.exclude_outside)
      w = fmt::format("(({0} < 0.0 || {0} >= {1}) ? 0.0 : {2})", idx,
                      dlit(static_cast<double>(plan_[d].in)), w);
    return {ctx_.let("double", w), idx};
  }

  // Linear and cubic: per axis, floor(x) and its fraction, the tap span and (when weights
  // are renormalised) their sum; then the taps' loops nested across the moving axes.
  std::string interpolate() {
    normalize_ = a_.antialias || a_.exclude_outside;
    base_.assign(x_.size(), "");
    frac_.assign(x_.size(), "");
    sum_.assign(x_.size(), "");
    span_.assign(x_.size(), TapSpan{});
    for (size_t d : moving_) {
      base_[d] = ctx_.let("double", fmt::format("floor({})", xs_[d]));
      frac_[d] = ctx_.let("double", fmt::format("{} - {}", xs_[d], base_[d]));
      span_[d] = tap_span(a_, plan_[d]);
      if (normalize_)
        sum_[d] = ctx_.accumulate("double", "0.0", 2 - 2 * span_[d].lo,
                                  [&](const std::string& acc, const std::string& k) {
                                    return fmt::format("{} + {}", acc, tap(d, k).first);
                                  });
    }
    return level(0);
  }

  // The weighted sum over moving axis m's taps of the sums over the axes after it.
  std::string level(size_t m) {
    if (m == moving_.size()) return "(double)" + ctx_.load(0, coords_);
    const size_t d = moving_[m];
    return ctx_.accumulate(
        "double", "0.0", 2 - 2 * span_[d].lo, [&](const std::string& acc, const std::string& k) {
          auto [w, idx] = tap(d, k);
          std::string wv = ctx_.let(
              "double", normalize_ ? fmt::format("({0} != 0.0 ? {1} / {0} : {1})", sum_[d], w) : w);
          coords_[d] =
              ctx_.let("long long", fmt::format("(long long)fmin(fmax({}, 0.0), {})", idx,
                                                dlit(static_cast<double>(plan_[d].in - 1))));
          return fmt::format("{} + {} * {}", acc, wv, level(m + 1));
        });
  }

  CudaIndexCtx& ctx_;
  const Node& n_;
  const ResizeAttrs a_;
  const Shape& x_;
  bool crop_ = false, roi_runtime_ = false, normalize_ = false;
  std::vector<AxisPlan> plan_;
  std::vector<std::string> coords_, xs_, base_, frac_, sum_;
  std::vector<size_t> moving_;
  std::vector<RoiCode> roi_code_;
  std::vector<TapSpan> span_;
};

std::string resize_cuda(CudaIndexCtx& ctx) { return ResizeLowering(ctx).lower(); }

}  // namespace

void lower_resize_ops(LoweringTable& t) { t.add("Resize").index = resize_cuda; }

}  // namespace braze::codegen
