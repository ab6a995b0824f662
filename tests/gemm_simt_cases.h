// Graphs for the SIMT GEMM schedule, written once for float and double ("$T" in the text is
// the element type): sizes 1, 7, 33, 129, 131 that no tile divides, both layouts of each
// operand, Gemm's alpha / beta / C, a bias + Gelu epilogue, broadcast batches, operands read
// through the emitter (a fused Transpose, a Cast, a vector), sizes that take the vector
// loads and stores, and an output stored transposed.
// Used by tests/codegen (NVRTC), tests/runtime (the CPU emulator) and tests/gpu.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace braze::test {

struct GemmSimtCase {
  const char* name;
  const char* text;  // ONNX text syntax, "$T" for the element type
};
inline void PrintTo(const GemmSimtCase& c, std::ostream* os) { *os << c.name; }

inline const std::vector<GemmSimtCase>& gemm_simt_cases() {
  static const std::vector<GemmSimtCase> cases = {
      {"one_by_one", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[1,1] a, $T[1,1] b) => ($T[1,1] y) { y = MatMul(a, b) })"},
      {"matmul_bias_gelu_7x33x131", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[7,131] a, $T[131,33] b, $T[33] c) => ($T[7,33] y) {
          m = MatMul(a, b)  s = Add(m, c)  y = Gelu(s) })"},
      {"matmul_129x131x33", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[129,33] a, $T[33,131] b) => ($T[129,131] y) { y = MatMul(a, b) })"},
      {"gemm_transa_alpha_beta", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[33,131] a, $T[33,129] b, $T[1,129] c) => ($T[131,129] y) {
          y = Gemm <alpha = 0.5, beta = 2.0, transA = 1> (a, b, c) })"},
      {"gemm_transb_bias_k7", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[131,7] a, $T[129,7] b, $T[129] c) => ($T[131,129] y) {
          y = Gemm <transB = 1> (a, b, c) })"},
      {"gemm_transa_transb_full_c", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[33,7] a, $T[131,33] b, $T[7,131] c) => ($T[7,131] y) {
          y = Gemm <transA = 1, transB = 1, beta = 0.25> (a, b, c) })"},
      {"batched_broadcast", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[2,1,33,7] a, $T[3,7,129] b) => ($T[2,3,33,129] y) {
          m = MatMul(a, b)  y = Relu(m) })"},
      {"matrix_vector", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[33,129] a, $T[129] v) => ($T[33] y) { y = MatMul(a, v) })"},
      {"fused_transpose_operand", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[2,33,7] q, $T[2,129,7] k) => ($T[2,33,129] y) {
          kt = Transpose <perm = [0, 2, 1]> (k)  y = MatMul(q, kt) })"},
      {"cast_operand", R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[33,20] a, $T[20,36] b) => ($T[33,36] y) {
          ac = Cast <to = $E> (a)  y = MatMul(ac, b) })"},
      {"aligned_many_k_tiles", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[131,260] a, $T[260,68] b, $T[68] c) => ($T[131,68] y) {
          m = MatMul(a, b)  s = Add(m, c)  y = Relu(s) })"},
      {"aligned_transa_transb", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[36,132] a, $T[72,36] b) => ($T[132,72] y) {
          y = Gemm <transA = 1, transB = 1> (a, b) })"},
      {"epilogue_transpose", R"(<ir_version: 8, opset_import: ["" : 20]>
        g ($T[45,32] a, $T[32,72] b) => ($T[72,45] y) {
          m = MatMul(a, b)  y = Transpose <perm = [1, 0]> (m) })"},
  };
  return cases;
}

// The case's text for element type `dtype` ("float" or "double"); "$E" is its ONNX enum.
inline std::string gemm_simt_text(const GemmSimtCase& c, const std::string& dtype) {
  std::string s = c.text;
  auto replace = [&s](const std::string& from, const std::string& to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  };
  replace("$T", dtype);
  replace("$E", dtype == "double" ? "11" : "1");
  return s;
}

}  // namespace braze::test
