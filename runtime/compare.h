// Comparing tensors the way ONNX Runtime's backend tests do:
// |actual - expected| <= atol + rtol * |expected| for floating dtypes, exact for integers
// and bool, NaN equal to NaN, shapes and dtypes equal.
#pragma once

#include <braze/tensor.h>

#include <string>

namespace braze::runtime {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};

// Defaults by dtype: float32/float64 rtol 1e-3 atol 1e-5 (ONNX Runtime's backend tests);
// float16 rtol 1e-2 atol 1e-3, bfloat16 rtol 5e-2 atol 1e-2; integers and bool exact.
Tolerance default_tolerance(DType dt);

struct Comparison {
  bool ok = true;
  int64_t numel = 0;
  int64_t mismatches = 0;
  int64_t nan_mismatches = 0;  // NaN or Inf on one side only
  double max_abs = 0;
  double max_rel = 0;
  double rel_l2 = 0;    // ||actual - expected|| / ||expected|| over the finite elements (floats)
  int64_t worst = -1;   // flat index of the largest excess over tolerance
  std::string problem;  // dtype or shape disagreement
  // One line: "ok (max abs 1e-7, max rel 2e-6)" or what differs and where.
  std::string summary(const Tensor& actual, const Tensor& expected) const;
};

Comparison compare(const Tensor& actual, const Tensor& expected, Tolerance tol);

}  // namespace braze::runtime
