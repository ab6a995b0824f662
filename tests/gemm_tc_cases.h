// Graphs for the tensor-core GEMM schedule, written once for float16, bfloat16 and float32
// at --precision tf32 ("$T" in the text is the element type): both layouts of each
// operand, Gemm's alpha / beta / bias, activation and layout epilogues, a broadcast batch,
// sizes that are multiples of no tile. Used by tests/codegen (NVRTC), tests/runtime (the
// CPU emulator) and tests/gpu.
#pragma once

#include <braze/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

namespace braze::test {

struct GemmTcCase {
  const char* name;
  const char* text;  // ONNX text syntax, "$T" for the element type
  bool a_kcontig;    // A stored [M, K] (else [K, M], Gemm transA)
  bool b_kcontig;    // B stored [N, K] (Gemm transB; else [K, N])
  bool large;        // too slow for the CPU emulator
};
inline void PrintTo(const GemmTcCase& c, std::ostream* os) { *os << c.name; }

inline const std::vector<GemmTcCase>& gemm_tc_cases() {
  static const std::vector<GemmTcCase> cases = {
      {"matmul_bias_relu", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[77,64] a, $T[64,200] b, $T[200] c) => ($T[77,200] y) {
          m = MatMul(a, b)  s = Add(m, c)  y = Relu(s) })",
       true, false, false},
      {"gemm_transb_bias_gelu", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[77,64] a, $T[200,64] b, $T[200] c) => ($T[77,200] y) {
          m = Gemm <transB = 1> (a, b, c)  y = Gelu(m) })",
       true, true, false},
      {"gemm_transb_odd_n", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[77,64] a, $T[201,64] b) => ($T[77,201] y) {
          m = Gemm <transB = 1> (a, b)  y = Relu(m) })",
       true, true, false},
      {"gemm_transa_alpha_beta", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[64,80] a, $T[64,200] b, $T[1,200] c) => ($T[80,200] y) {
          y = Gemm <alpha = 0.5, beta = 2.0, transA = 1> (a, b, c) })",
       false, false, false},
      {"gemm_transa_transb", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[48,88] a, $T[136,48] b) => ($T[88,136] y) {
          y = Gemm <transA = 1, transB = 1> (a, b) })",
       false, true, false},
      {"batched_broadcast", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[2,1,77,48] a, $T[3,48,200] b) => ($T[2,3,77,200] y) {
          m = MatMul(a, b)  y = Relu(m) })",
       true, false, false},
      {"epilogue_transpose", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[45,32] a, $T[32,72] b) => ($T[72,45] y) {
          m = MatMul(a, b)  y = Transpose <perm = [1, 0]> (m) })",
       true, false, false},
      {"long_k_many_tiles", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[1100,520] a, $T[136,520] b, $T[136] c) => ($T[1100,136] y) {
          y = Gemm <transB = 1> (a, b, c) })",
       true, true, true},
      {"batched_linear", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[4,129,256] x, $T[256,384] w, $T[384] bb) => ($T[4,129,384] y) {
          m = MatMul(x, w)  s = Add(m, bb)  y = Gelu(s) })",
       true, false, true},
  };
  return cases;
}

// For tf32: the cases above in float, and sizes a 16-byte copy of floats allows but one of
// half elements does not (k and contiguous dims multiples of 4, not 8).
inline const std::vector<GemmTcCase>& gemm_tf32_cases() {
  static const std::vector<GemmTcCase> cases = [] {
    std::vector<GemmTcCase> c = gemm_tc_cases();
    c.push_back({"fp32_k_and_n_multiples_of_4", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[37,36] a, $T[36,132] b, $T[132] c) => ($T[37,132] y) {
          m = MatMul(a, b)  s = Add(m, c)  y = Gelu(s) })",
                 true, false, false});
    c.push_back({"fp32_transa_transb_multiples_of_4", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[20,44] a, $T[69,20] b, $T[44,1] c) => ($T[44,69] y) {
          y = Gemm <alpha = 1.5, beta = -0.5, transA = 1, transB = 1> (a, b, c) })",
                 false, true, false});
    return c;
  }();
  return cases;
}

// The case's text for element type `dtype` ("float16", "bfloat16", "double" …).
inline std::string gemm_tc_text(const GemmTcCase& c, const std::string& dtype) {
  std::string s = c.text;
  for (size_t p = s.find("$T"); p != std::string::npos; p = s.find("$T", p + dtype.size()))
    s.replace(p, 2, dtype);
  return s;
}

// The same values as float64.
inline Tensor to_double(const Tensor& t) {
  Tensor d(DType::Float64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.set_f64(i, t.get_f64(i));
  return d;
}

// ||got - want||_F / ||want||_F.
inline double relative_frobenius(const Tensor& got, const Tensor& want) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_f64(i), e = got.get_f64(i) - w;
    diff += e * e;
    norm += w * w;
  }
  return std::sqrt(diff / norm);
}

// Whether the tensor core's tf32 result `got` (float32) is as close to the float64 result
// `want64` as rounding the operands to a 10-bit mantissa allows: relative L2 error within
// 1e-3 and every element finite (poisoned outputs read as NaN).
inline ::testing::AssertionResult tf32_close(const Tensor& got, const Tensor& want64) {
  for (int64_t i = 0; i < got.numel(); ++i)
    if (!std::isfinite(got.get_f64(i)))
      return ::testing::AssertionFailure() << "element " << i << " is " << got.get_f64(i);
  const double rel = relative_frobenius(got, want64);
  if (!(rel <= 1e-3)) return ::testing::AssertionFailure() << "relative L2 error " << rel;
  return ::testing::AssertionSuccess() << "relative L2 error " << rel;
}

}  // namespace braze::test
