// Gated products (graph/passes/gated_matmuls.h): two products of one activation against
// constant weights whose outputs meet in an element-wise expression, as Llama's MLP (SiLU
// written out) and GeGLU write them. The pipeline interleaves the weights into one product
// and the GEMM's epilogue reads the two halves as each lane's pair of adjacent accumulators,
// so the whole expression is one kernel. `@` in the text is the element type. The emulator
// (tests/runtime) and the GPU (tests/gpu, every candidate) run them against the reference.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/test_util.h"

namespace braze::test {

struct GatedCase {
  const char* name;
  std::string text;      // ONNX text syntax, `@` for the element type
  Shape gated_weight;    // the interleaved weight as MatMul reads it: [k, 2n]
  size_t gemm_kernels;   // GEMM groups of the fused plan (the gated one included)
  size_t other_kernels;  // the other groups
};

inline void PrintTo(const GatedCase& c, std::ostream* os) { *os << c.name; }

// A constant [k, n] weight named `name` with a few bits a value (exact in every type), cast to
// the element type.
inline std::string gated_weight(const char* name, int k, int n, int seed) {
  std::string vals;
  for (int i = 0; i < k * n; ++i)
    vals += fmt::format("{}{}", i ? ", " : "", ((i * 7 + seed * 5) % 17 - 8) * 0.0625);
  return fmt::format(
      "{0}f = Constant <value = float[{1},{2}] {{{3}}}> ()  {0} = CastLike({0}f, x)\n", name, k, n,
      vals);
}

// A constant [k, n] weight selecting column c of its input for output c (ones on the
// diagonal): a product after the gated one that passes its values on unrounded, so that the
// float16 rounding of the gated values (once in the kernel, after every op in the reference)
// is not summed over k and compared at the reference's tolerance.
inline std::string selection_weight(const char* name, int k, int n) {
  std::string vals;
  for (int i = 0; i < k * n; ++i)
    vals += fmt::format("{}{}", i ? ", " : "", i / n == i % n ? 1 : 0);
  return fmt::format(
      "{0}f = Constant <value = float[{1},{2}] {{{3}}}> ()  {0} = CastLike({0}f, x)\n", name, k, n,
      vals);
}

inline const std::vector<GatedCase>& gated_cases() {
  static const std::vector<GatedCase> cases = {
      // Llama's MLP as the dynamo exporter writes it: SiLU as x · Sigmoid(x), the down
      // projection after (its own GEMM kernel; a selection here, see selection_weight).
      {"LlamaMlp",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,40,64] x) => (@[1,40,64] y) {
)" + gated_weight("wg", 64, 96, 1) +
           gated_weight("wu", 64, 96, 2) + selection_weight("wd", 96, 64) + R"(
      gt = MatMul(x, wg)  up = MatMul(x, wu)  sg = Sigmoid(gt)  si = Mul(gt, sg)  h = Mul(si, up)
      y = MatMul(h, wd) })",
       {64, 192},
       2,
       0},
      // GeGLU over 21 rows (3 x 7), GELU written out in its erf form (one Gelu after the
      // passes), the gate second.
      {"GeGluOddRows",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[3,7,32] x) => (@[3,7,40] y) {
)" + gated_weight("wu", 32, 40, 4) +
           gated_weight("wg", 32, 40, 5) + R"(
      up = MatMul(x, wu)  gt = MatMul(x, wg)
      sqf = Constant <value = float {1.41421356}> ()  sq = CastLike(sqf, x)
      onef = Constant <value = float {1.0}> ()  one = CastLike(onef, x)
      halff = Constant <value = float {0.5}> ()  half = CastLike(halff, x)
      d = Div(gt, sq)  e = Erf(d)  e1 = Add(e, one)  m = Mul(gt, e1)  ge = Mul(m, half)
      y = Mul(up, ge) })",
       {32, 80},
       1,
       0},
      // 37 columns a half (no vector stores of the pairs), a residual read in the epilogue.
      {"OddColumnsWithResidual",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[24,48] x, @[24,37] r) => (@[24,37] y) {
)" + gated_weight("wg", 48, 37, 6) +
           gated_weight("wu", 48, 37, 7) + R"(
      gt = MatMul(x, wg)  up = MatMul(x, wu)  sg = Sigmoid(gt)  si = Mul(gt, sg)  h = Mul(si, up)
      y = Add(h, r) })",
       {48, 74},
       1,
       0},
      // Phi-3's MLP: one product of the fused gate and up, chunked in two by a Split (its
      // weight's columns interleaved in place).
      {"ChunkedGateUp",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,36,64] x) => (@[1,36,48] y) {
)" + gated_weight("wgu", 64, 96, 10) +
           R"(
      gu = MatMul(x, wgu)  sp = Constant <value = int64[2] {48, 48}> ()  gt, up = Split <axis = 2> (gu, sp)
      sg = Sigmoid(gt)  si = Mul(gt, sg)  y = Mul(si, up) })",
       {64, 96},
       1,
       0},
      // A column pair written out in the model, after a Gemm with alpha (and B transposed).
      {"GemmAlphaColumnPair",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[21,32] x) => (@[21,40] y) {
)" + gated_weight("w", 80, 32, 11) +
           R"(
      m = Gemm <alpha = 0.5, transB = 1> (x, w)
      z = Constant <value = int64[1] {0}> ()  o = Constant <value = int64[1] {1}> ()
      e = Constant <value = int64[1] {80}> ()  t = Constant <value = int64[1] {2}> ()
      ev = Slice(m, z, e, o, t)  od = Slice(m, o, e, o, t)
      sg = Sigmoid(ev)  si = Mul(ev, sg)  y = Mul(si, od) })",
       {80, 32},
       1,
       0},
      // The result split into heads in the epilogue: [1, 33, 64] -> [1, 4, 33, 16].
      {"GatedIntoHeads",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,33,64] x) => (@[1,4,33,16] y) {
)" + gated_weight("wg", 64, 64, 8) +
           gated_weight("wu", 64, 64, 9) + R"(
      gt = MatMul(x, wg)  up = MatMul(x, wu)  sg = Sigmoid(gt)  si = Mul(gt, sg)  h = Mul(up, si)
      hs = Constant <value = int64[4] {1, 33, 4, 16}> ()  hr = Reshape(h, hs)
      y = Transpose <perm = [0, 2, 1, 3]> (hr) })",
       {64, 128},
       1,
       0},
  };
  return cases;
}

inline std::string gated_text(const GatedCase& c, const std::string& dtype) {
  return with_element_type(c.text, dtype);
}

}  // namespace braze::test
