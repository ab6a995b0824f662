// Gelu (erf form) with a float16 / bfloat16 result over every value of the type in
// [-12, 12], the infinities and a NaN, against the exact x Φ(x) rounded to the type: at most
// one unit in the last place off (the rounding of a float within 5.8e-6 / 3.2e-4 relative of
// x Φ(x): ops.cuh's braze_gelu_erf_f16 / _bf16) and off at all on under 1% of the values;
// NaN where the exact value is NaN (x = -inf: -inf times 0, as in the reference executor),
// +inf at +inf. The tanh form (approximate = "tanh") likewise (braze_gelu_tanh_f16 /
// braze_gelu_tanh), against x / (1 + e^(-2u)) in double. Shared by the emulator's and
// the GPU's tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "braze/tensor.h"
#include "graph/half.h"

namespace braze::test {

inline float half_bits_value(DType dt, uint16_t b) {
  return dt == DType::Float16 ? half_to_float(b) : bf16_to_float(b);
}

inline Tensor gelu_sweep_input(DType dt) {
  std::vector<uint16_t> bits;
  bool nan = false;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = half_bits_value(dt, static_cast<uint16_t>(b));
    if (std::isnan(f) ? !nan : (std::isinf(f) || std::fabs(f) <= 12.f))
      bits.push_back(static_cast<uint16_t>(b));
    nan = nan || std::isnan(f);
  }
  Tensor t(dt, {static_cast<int64_t>(bits.size())});
  std::memcpy(t.raw(), bits.data(), bits.size() * 2);
  return t;
}

inline std::string gelu_sweep_model(DType dt, int64_t n, bool tanh_form = false) {
  const std::string type = dt == DType::Float16 ? "float16" : "bfloat16";
  const std::string v = type + "[" + std::to_string(n) + "]";
  return R"(<ir_version: 8, opset_import: ["" : 20]> g ()" + v + " x) => (" + v +
         " y) { y = Gelu " + (tanh_form ? "<approximate = \"tanh\"> " : "") + "(x) }";
}

// GELU of finite x in double: x Φ(x), or the tanh form as x / (1 + e^(-2u)) (no cancellation).
inline double gelu_exact(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

inline void expect_gelu_sweep(const Tensor& in, const Tensor& got, bool tanh_form = false) {
  ASSERT_EQ(got.dtype(), in.dtype());
  ASSERT_EQ(got.numel(), in.numel());
  const DType dt = in.dtype();
  auto ordered = [](uint16_t b) {
    return (b & 0x8000) ? -static_cast<int>(b & 0x7fff) : static_cast<int>(b);
  };
  int64_t off = 0;
  for (int64_t i = 0; i < in.numel(); ++i) {
    const uint16_t xb = in.data<uint16_t>()[i], gb = got.data<uint16_t>()[i];
    const double x = half_bits_value(dt, xb);
    const double exact = x == -INFINITY ? NAN : x == INFINITY ? x : gelu_exact(x, tanh_form);
    const float want_f = static_cast<float>(exact);
    const uint16_t wb = dt == DType::Float16 ? float_to_half(want_f) : float_to_bf16(want_f);
    const double g = half_bits_value(dt, gb), w = half_bits_value(dt, wb);
    if (std::isnan(w) || std::isnan(g)) {
      EXPECT_TRUE(std::isnan(w) && std::isnan(g)) << "x = " << x << ": " << g << " against " << w;
      continue;
    }
    const int d = std::abs(ordered(gb) - ordered(wb));
    EXPECT_LE(d, 1) << "x = " << x << ": " << g << " against " << w << " (exact " << exact << ")";
    off += d != 0;
  }
  EXPECT_LT(off, in.numel() / 100) << off << " of " << in.numel() << " values one unit off";
  std::cout << off << " of " << in.numel() << " values one unit off\n";
}

}  // namespace braze::test
