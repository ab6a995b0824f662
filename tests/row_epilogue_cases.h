// Row programs in a GEMM's epilogue (codegen/gemm_wgmma.cpp, the row epilogue): a
// normalisation over a product's columns — BERT's LayerNorm after its output projection and
// its FFN, each with the residual added — computed in the product's kernel on sm_90a, its rows
// held whole by a cluster of blocks. `@` in the text is the element type. The codegen tests
// (tests/codegen) compile every candidate for sm_90a on the CPU; the GPU (tests/gpu) runs every
// candidate against the reference.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/test_util.h"

namespace braze::test {

struct RowEpilogueCase {
  const char* name;
  std::string text;  // ONNX text syntax, `@` for the element type
  bool fused;        // the normalisation in the product's kernel on sm_90a
  size_t kernels;    // the fused plan's kernels on sm_90a
};

inline void PrintTo(const RowEpilogueCase& c, std::ostream* os) { *os << c.name; }

// A constant `name` of `dims` (its values a few bits each, exact in every type; `base` added,
// a layer norm's scale near 1), cast to the element type.
inline std::string row_constant(const char* name, const std::vector<int>& dims, int seed,
                                double base = 0) {
  int count = 1;
  std::string shape;
  for (int d : dims) count *= d, shape += fmt::format("{}{}", shape.empty() ? "" : ",", d);
  std::string vals;
  for (int i = 0; i < count; ++i)
    vals += fmt::format("{}{}", i ? ", " : "", base + ((i * 7 + seed * 5) % 17 - 8) * 0.0625);
  return fmt::format("{0}f = Constant <value = float[{1}] {{{2}}}> ()  {0} = CastLike({0}f, x)\n",
                     name, shape, vals);
}

inline const std::vector<RowEpilogueCase>& row_epilogue_cases() {
  static const std::vector<RowEpilogueCase> cases = {
      // BERT's output projection: product, bias, residual, LayerNorm; 48 rows (a partial
      // 64-row tile), 256 columns (clusters of 1, 2, 4 or 8 blocks).
      {"BertOutput",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,128] x, @[2,24,256] res) => (@[2,24,256] y) {
)" + row_constant("w", {128, 256}, 1) +
           row_constant("bias", {256}, 2) + row_constant("gamma", {256}, 3, 1.0) +
           row_constant("beta", {256}, 4) + R"(
      p = MatMul(x, w)  pb = Add(p, bias)  h = Add(pb, res)
      y = LayerNormalization <axis = -1, epsilon = 0.00001> (h, gamma, beta) })",
       true, 1},
      // BERT-base's width over 21 rows: 768 columns in clusters of 3, 4, 6 or 8 blocks.
      {"BertWidthOddRows",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[3,7,64] x, @[3,7,768] res) => (@[3,7,768] y) {
)" + row_constant("w", {64, 768}, 5) +
           row_constant("bias", {768}, 6) + row_constant("gamma", {768}, 7, 1.0) +
           row_constant("beta", {768}, 8) + R"(
      p = MatMul(x, w)  pb = Add(p, bias)  h = Add(res, pb)
      y = LayerNormalization <axis = -1, epsilon = 0.000000000001> (h, gamma, beta) })",
       true, 1},
      // A Gemm with alpha and C (applied before the normalisation), no LayerNorm bias, and
      // element-wise ops after it.
      {"GemmAlphaThenScale",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[40,96] x) => (@[40,128] y) {
)" + row_constant("wt", {128, 96}, 9) +
           row_constant("c", {128}, 10) + row_constant("gamma", {128}, 11, 1.0) +
           row_constant("shift", {128}, 12) + R"(
      h = Gemm <alpha = 0.5, transB = 1> (x, wt, c)
      n = LayerNormalization <axis = -1, epsilon = 0.00001> (h, gamma)
      twof = Constant <value = float {2.0}> ()  two = CastLike(twof, x)
      s = Mul(n, two)  y = Add(s, shift) })",
       true, 1},
      // Pre-norm (GPT-2, ViT): the sum before the normalisation is the residual stream, read
      // again later; the product's kernel writes it and the normalised rows.
      {"PreNorm",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,128] x, @[2,24,256] res) => (@[2,24,256] y, @[2,24,256] h) {
)" + row_constant("w", {128, 256}, 13) +
           row_constant("gamma", {256}, 14, 1.0) + row_constant("beta", {256}, 15) + R"(
      p = MatMul(x, w)  h = Add(p, res)
      y = LayerNormalization <axis = -1, epsilon = 0.00001> (h, gamma, beta) })",
       true, 1},
      // A value before the normalisation other than its input is read again: the product's
      // kernel would write three results; the LayerNorm keeps its own kernel.
      {"ThreeResultsDeclined",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,128] x, @[2,24,256] res) => (@[2,24,256] y, @[2,24,256] pb) {
)" + row_constant("w", {128, 256}, 16) +
           row_constant("bias", {256}, 17) + row_constant("gamma", {256}, 18, 1.0) + R"(
      p = MatMul(x, w)  pb = Add(p, bias)  h = Add(pb, res)
      y = LayerNormalization <axis = -1, epsilon = 0.00001> (h, gamma) })",
       false, 2},
  };
  return cases;
}

inline std::string row_epilogue_text(const RowEpilogueCase& c, const std::string& dtype) {
  return with_element_type(c.text, dtype);
}

}  // namespace braze::test
