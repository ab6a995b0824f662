#include "runtime/compare.h"

#include <cmath>

#include <fmt/format.h>

namespace braze::runtime {

Tolerance default_tolerance(DType dt) {
  switch (dt) {
    case DType::Float32:
    case DType::Float64:
      return {1e-3, 1e-5};
    // Half types: a fused kernel keeps intermediates in float where the unfused graph rounds
    // each one to half, so results differ by a few units in the last place.
    case DType::Float16:
      return {1e-2, 1e-3};
    case DType::BFloat16:
      return {5e-2, 1e-2};
    default:
      return {0, 0};
  }
}

Comparison compare(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  Comparison c;
  if (actual.dtype() != expected.dtype()) {
    c.ok = false;
    c.problem = fmt::format("dtype {} but expected {}", dtype_name(actual.dtype()),
                            dtype_name(expected.dtype()));
    return c;
  }
  if (actual.shape() != expected.shape()) {
    c.ok = false;
    c.problem = fmt::format("shape {} but expected {}", shape_str(actual.shape()),
                            shape_str(expected.shape()));
    return c;
  }
  c.numel = actual.numel();
  double worst_excess = -1;
  bool exact = !is_float(actual.dtype());
  double diff_sq = 0, ref_sq = 0;
  for (int64_t i = 0; i < c.numel; ++i) {
    if (exact) {
      bool same = is_unsigned_int(actual.dtype()) ? actual.get_u64(i) == expected.get_u64(i)
                                                  : actual.get_i64(i) == expected.get_i64(i);
      if (!same) {
        double d = std::fabs(static_cast<double>(actual.get_i64(i)) -
                             static_cast<double>(expected.get_i64(i)));
        ++c.mismatches;
        if (d > c.max_abs) c.max_abs = d;
        if (d > worst_excess) worst_excess = d, c.worst = i;
      }
      continue;
    }
    double a = actual.get_f64(i), e = expected.get_f64(i);
    if (std::isnan(a) || std::isnan(e) || std::isinf(a) || std::isinf(e)) {
      bool same = (std::isnan(a) && std::isnan(e)) || a == e;
      if (!same) {
        ++c.mismatches;
        ++c.nan_mismatches;
        if (worst_excess < INFINITY) worst_excess = INFINITY, c.worst = i;
      }
      continue;
    }
    double d = std::fabs(a - e);
    diff_sq += d * d;
    ref_sq += e * e;
    double rel = e != 0 ? d / std::fabs(e) : (d == 0 ? 0 : INFINITY);
    if (d > c.max_abs) c.max_abs = d;
    if (rel > c.max_rel) c.max_rel = rel;
    double excess = d - (tol.atol + tol.rtol * std::fabs(e));
    if (excess > 0) {
      ++c.mismatches;
      if (excess > worst_excess) worst_excess = excess, c.worst = i;
    }
  }
  c.ok = c.mismatches == 0;
  c.rel_l2 = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  return c;
}

std::string Comparison::summary(const Tensor& actual, const Tensor& expected) const {
  if (!problem.empty()) return problem;
  std::string errs = fmt::format("max abs err {:.3g}, max rel err {:.3g}", max_abs, max_rel);
  if (ok) return "ok (" + errs + ")";
  std::string where;
  if (worst >= 0) {
    Shape idx(actual.rank());
    int64_t f = worst;
    for (int64_t d = actual.rank() - 1; d >= 0; --d) {
      idx[d] = actual.shape()[d] ? f % actual.shape()[d] : 0;
      f = actual.shape()[d] ? f / actual.shape()[d] : 0;
    }
    where = fmt::format("; worst at {}: got {:.9g}, expected {:.9g}", shape_str(idx),
                        actual.get_f64(worst), expected.get_f64(worst));
  }
  return fmt::format(
      "{} of {} elements differ{}; {}{}", mismatches, numel,
      nan_mismatches ? fmt::format(" ({} NaN/Inf on one side only)", nan_mismatches) : "", errs,
      where);
}

}  // namespace braze::runtime
