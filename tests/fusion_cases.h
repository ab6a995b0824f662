// Graphs with the patterns the fusion pass must fuse, and how many kernels each becomes.
// Structure and emulated outputs are checked in tests/fusion; the same graphs run on the
// GPU in tests/gpu.
#pragma once

#include <cstddef>
#include <vector>

namespace braze::test {

struct FusionCase {
  const char* name;
  const char* text;  // ONNX text syntax
  size_t kernels;    // groups the fused plan must have
  const char* kind;  // kind of the single group when it matters ("" = any)
};

inline const std::vector<FusionCase>& fusion_cases() {
  static const std::vector<FusionCase> cases = {
      {"DecomposedSoftmaxIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[4,37] x, float[4,37] mask) => (float[4,37] y) {
      s = Constant <value = float {0.125}> ()  a = Mul(x, s)  b = Add(a, mask)
      ax = Constant <value = int64[1] {1}> ()
      m = ReduceMax(b, ax)  d = Sub(b, m)  e = Exp(d)  z = ReduceSum(e, ax)  y = Div(e, z) })",
       1, "reduction"},
      {"DecomposedLayerNormIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[3,5,64] x, float[64] w, float[64] b) => (float[3,5,64] y) {
      ax = Constant <value = int64[1] {-1}> ()
      mu = ReduceMean(x, ax)  d = Sub(x, mu)  two = Constant <value = float {2.0}> ()  sq = Pow(d, two)
      var = ReduceMean(sq, ax)  eps = Constant <value = float {1e-5}> ()  ve = Add(var, eps)  sd = Sqrt(ve)
      n = Div(d, sd)  s = Mul(n, w)  y = Add(s, b) })",
       1, ""},
      {"LlamaRmsNormIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[2,7,96] x, float16[96] w) => (float16[2,7,96] y) {
      xf = Cast <to = 1> (x)  two = Constant <value = float {2.0}> ()  p = Pow(xf, two)
      ax = Constant <value = int64[1] {-1}> ()  m = ReduceMean(p, ax)
      eps = Constant <value = float {1e-6}> ()  a = Add(m, eps)  s = Sqrt(a)  r = Reciprocal(s)
      n = Mul(xf, r)  nh = Cast <to = 10> (n)  y = Mul(w, nh) })",
       1, ""},
      {"MatMulBiasErfGeluIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,9,32] x, float[32,48] w, float[48] b) => (float[2,9,48] y) {
      mm = MatMul(x, w)  h = Add(mm, b)
      r2 = Constant <value = float {1.4142135}> ()  d = Div(h, r2)  e = Erf(d)
      one = Constant <value = float {1.0}> ()  e1 = Add(e, one)  m = Mul(h, e1)
      half = Constant <value = float {0.5}> ()  y = Mul(m, half) })",
       1, "gemm"},
      {"TransposeReshapeAddSiluIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,6,4,5] x, float[6,20] b) => (float[2,6,20] y) {
      t = Transpose <perm = [0, 2, 1, 3]> (x)  sh = Constant <value = int64[3] {2, 6, 20}> ()
      r = Reshape(t, sh)  a = Add(r, b)  s = Sigmoid(a)  y = Mul(a, s) })",
       1, "pointwise"},
      {"AttentionProjectionWritesTheHeadLayout", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,7,32] x, float[32,32] w, float[32] b) => (float[2,4,7,8] y) {
      mm = MatMul(x, w)  h = Add(mm, b)  sh = Constant <value = int64[4] {2, 7, 4, 8}> ()
      r = Reshape(h, sh)  y = Transpose <perm = [0, 2, 1, 3]> (r) })",
       1, ""},
      {"TransposedOperandIsALayout", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,5,8] q, float[2,3,5,8] k) => (float[2,3,5,5] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  mm = MatMul(q, kt)
      s = Constant <value = float {0.35}> ()  y = Mul(mm, s) })",
       1, ""},
  };
  return cases;
}

}  // namespace braze::test
