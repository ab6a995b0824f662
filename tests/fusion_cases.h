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
      // A residual computed from other kernels' values by element-wise ops read by the
      // epilogue alone (LayerNorm's output rebuilt from its input and statistics), and a
      // rank-one correction mean ⊗ c: computed in the GEMM's epilogue, not written whole.
      {"EpilogueComputesItsResidualAndCorrection", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,9,32] a, float[2,9,48] x, float[2,9,1] mu, float[2,9,1] rs, float[32,48] w, float[48] c, float[48] gm, float[48] bt) => (float[2,9,48] y) {
      mm = MatMul(a, w)  t = Mul(mu, c)  u = Sub(mm, t)  v = Mul(u, rs)
      xs = Sub(x, mu)  xr = Mul(xs, rs)  xg = Mul(xr, gm)  h = Add(xg, bt)  y = Add(v, h) })",
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
      // A loop op joins its only consumer's kernel: MobileNet's depthwise convolution and
      // ReLU6 write the clipped value once.
      {"DepthwiseConvClipIsOneKernel", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,6,9,7] x, float[6,1,3,3] w, float[6] b) => (float[2,6,9,7] y) {
      c = Conv <group = 6, pads = [1, 1, 1, 1]> (x, w, b)
      lo = Constant <value = float {0.0}> ()  hi = Constant <value = float {6.0}> ()
      y = Clip(c, lo, hi) })",
       1, "pointwise"},
      // ResNet's stem: the convolution and Relu one kernel, the pooling (which reads each
      // Relu output several times) another.
      {"ConvReluThenMaxPoolIsTwoKernels", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,3,16,16] x, float[4,3,3,3] w) => (float[1,4,8,8] y) {
      c = Conv <pads = [1, 1, 1, 1]> (x, w)  r = Relu(c)
      y = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (r) })",
       2, ""},
      // A convolution read by two kernels is computed once, in its own.
      {"ConvReadTwiceStaysItsOwnKernel", R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,3,8,8] x, float[4,3,3,3] w) => (float[1,4,6,6] y, float[1,4,6,6] z) {
      c = Conv (x, w)  y = Relu(c)  z = Sigmoid(c) })",
       3, ""},
  };
  return cases;
}

}  // namespace braze::test
