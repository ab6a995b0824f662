// Small graphs covering every op family the GPU path generates kernels for, with
// non-power-of-two sizes, size-1 and broadcast dims, and non-contiguous views (transposes
// and strided slices feeding other ops). Run on the GPU (tests/gpu) and on the CPU
// emulator (tests/runtime), each compared with the reference executor.
#pragma once

#include <string>
#include <vector>

namespace braze::test {

struct OpCase {
  const char* name;
  const char* text;       // ONNX text syntax
  long long int_hi = 10;  // integer inputs drawn from [0, int_hi)
  double rtol = 1e-3, atol = 1e-5;
};

inline const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = {
      {"broadcast_add_mul", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,1,5] a, float[4,1] b) => (float[3,4,5] y) { t = Add(a, b)  y = Mul(t, a) })"},
      {"unary_chain", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[7,9] x) => (float[7,9] y) {
          a = Sigmoid(x)  b = Tanh(a)  c = Exp(b)  d = Sqrt(c)  e = Erf(d)  f = Softplus(e)
          g1 = LeakyRelu <alpha = 0.3> (f)  h = HardSwish(g1)  y = Mul(h, x) })"},
      {"half_and_bfloat", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float16[5,33] a, float16[33] b, bfloat16[5,33] c) => (float16[5,33] y, bfloat16[5,33] z) {
          y = Mul(a, b)  z = Sub(c, c) })",
       10, 2e-3, 2e-3},
      {"integers_and_bools", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (int64[6,7] a, int32[7] b, bool[6,7] m) => (int64[6,7] y, bool[6,7] z) {
          bb = Cast <to = 7> (b)  s = Add(a, bb)  d = Div(s, bb)  y = Where(m, d, a)
          l = Less(a, bb)  z = Xor(l, m) })"},
      {"div_by_constants", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[9,33] x) => (float[9,33] a, float[9,33] b, float[9,33] c, float[9,33] d, float[9,33] e) {
          s2 = Constant <value = float {1.4142135}> ()  a = Div(x, s2)
          q = Constant <value = float {0.25}> ()  b = Div(x, q)
          m7 = Constant <value = float {-7}> ()  c = Div(x, m7)
          tiny = Constant <value = float {1e-37}> ()  d = Div(x, tiny)
          huge = Constant <value = float {3e38}> ()  e = Div(x, huge) })",
       10, 1e-6, 1e-30},
      // float16 quotients by constants are products by the reciprocal (elementwise.cpp):
      // within a float16 rounding of the reference's.
      {"half_div_by_constants", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float16[9,33] x) => (float16[9,33] a, float16[9,33] c, float16[9,33] e) {
          s2f = Constant <value = float {1.4140625}> ()  s2 = Cast <to = 10> (s2f)  a = Div(x, s2)
          m7f = Constant <value = float {-7}> ()  m7 = Cast <to = 10> (m7f)  c = Div(x, m7)
          bigf = Constant <value = float {60000}> ()  big = Cast <to = 10> (bigf)  e = Div(x, big) })",
       10, 1e-3, 1e-7},
      // GELU written out (recognised as one Gelu by graph/passes/gelu_fusion) and Gelu, into
      // float16 over [-7, 7) and bfloat16 over [-1, 1): braze_gelu_erf_f16 / _bf16. Fused, 7 x
      // stays a float where the reference rounds it to 16 bits first, hence rtol above the type's
      // ulp.
      {"gelu_half", R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[9,65] x, bfloat16[9,65] b) => (float16[9,65] y, float16[9,65] w, bfloat16[9,65] z) {
          sf = Constant <value = float {7}> ()  s = Cast <to = 10> (sf)  xs = Mul(x, s)  y = Gelu(xs)
          s2f = Constant <value = float {1.4142135}> ()  s2 = Cast <to = 10> (s2f)
          onef = Constant <value = float {1}> ()  one = Cast <to = 10> (onef)
          hf = Constant <value = float {0.5}> ()  h = Cast <to = 10> (hf)
          d = Div(xs, s2)  e = Erf(d)  a = Add(e, one)  m = Mul(xs, a)  w = Mul(m, h)
          z = Gelu(b) })",
       10, 2e-2, 1e-6},
      // Ops whose result jumps (Floor, Less, Cast) on a float16 value computed in the kernel see
      // it rounded to float16, as the reference does: (1 + 2^-10)(1 - 2^-10) is 1 - 2^-20 in
      // float and 1 in float16 (its floor was 0 fused, 1 in the reference). x * 0 keeps the
      // product from folding.
      {"half_rounding_before_jumps", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float16[9,33] x) => (float16[9,33] f, bool[9,33] l, float[9,33] w) {
          zf = Constant <value = float {0}> ()  z = Cast <to = 10> (zf)
          af = Constant <value = float {1.0009765625}> ()  a = Cast <to = 10> (af)
          bf = Constant <value = float {0.9990234375}> ()  b = Cast <to = 10> (bf)
          onef = Constant <value = float {1}> ()  one = Cast <to = 10> (onef)
          x0 = Mul(x, z)  xa = Add(x0, a)  p = Mul(xa, b)
          f = Floor(p)  l = Less(p, one)  w = Cast <to = 1> (p) })",
       10, 0, 0},
      // A Transpose after a softmax that swaps two kept dims of equal size keeps the shape
      // but moves elements between rows: it must not join the reduction's kernel (it did,
      // and read its elements with the wrong rows' statistics).
      {"softmax_then_shape_keeping_transpose", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[37,3,3,5] x) => (float[37,3,3,5] y, float[37,3,3,5] s) {
          s = LogSoftmax <axis = 0> (x)  y = Transpose <perm = [0, 2, 1, 3]> (s) })"},
      // A float32 value rounded to float16 / bfloat16 by Cast and widened again inside one
      // fused kernel: exactly the 16-bit value (the rounding used to be skipped, as the
      // 16-bit types compute in float), also from float64.
      {"cast_round_trips", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[9,33] x, double[9,33] w) => (float[9,33] h, float[9,33] b, float[9,33] d) {
          xh = Cast <to = 10> (x)  h = Cast <to = 1> (xh)
          s = Mul(x, x)  sb = Cast <to = 16> (s)  b = Cast <to = 1> (sb)
          wh = Cast <to = 10> (w)  d = Cast <to = 1> (wh) })",
       10, 0, 0},
      {"cast_clip_where", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[4,6] x) => (int32[4,6] y, float[4,6] z) {
          lo = Constant <value = float {-0.25}> ()  hi = Constant <value = float {0.5}> ()
          c = Clip(x, lo, hi)  s = Mul(x, x)  y = Cast <to = 6> (s)  p = Greater(x, c)  z = Where(p, s, c) })"},
      {"reduce_axes", R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[3,5,7] x) => (float[1,5,1] y, float[3,5] z, float[5,7] w) {
          ax = Constant <value = int64[2] {0, 2}> ()  y = ReduceSum(x, ax)
          a2 = Constant <value = int64[1] {2}> ()  z = ReduceMax <keepdims = 0> (x, a2)
          a0 = Constant <value = int64[1] {0}> ()  w = ReduceLogSumExp <keepdims = 0> (x, a0) })"},
      {"argmax_cumsum", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[4,37] x) => (int64[4] i, float[4,37] c) {
          i = ArgMax <axis = 1, keepdims = 0> (x)
          ax = Constant <value = int64 {1}> ()  c = CumSum <exclusive = 1> (x, ax) })"},
      {"softmax_long_rows", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,1000] x, float[2,129,5] u) => (float[3,1000] y, float[2,129,5] v) {
          y = Softmax <axis = -1> (x)  v = LogSoftmax <axis = 1> (u) })"},
      {"layer_norm_and_friends", R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[2,7,300] x, float[300] s, float[300] b) => (float[2,7,300] y, float[2,7,300] z) {
          y = LayerNormalization <axis = -1> (x, s, b)
          ax = Constant <value = int64[1] {2}> ()  sq = Mul(x, x)  m = ReduceMean(sq, ax)
          eps = Constant <value = float {1e-6}> ()  a = Add(m, eps)  r = Sqrt(a)  q = Reciprocal(r)
          p = Mul(x, q)  z = Mul(p, s) })"},
      {"channel_norms", R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[2,6,5,3] x, float[6] s, float[6] b, float[6] m, float[6] v) =>
          (float[2,6,5,3] y1, float[2,6,5,3] y2, float[2,6,5,3] y3, float[2,6,5,3] y4) {
          va = Abs(v)
          y1 = BatchNormalization(x, s, b, m, va)  y2 = InstanceNormalization(x, s, b)
          y3 = MeanVarianceNormalization(x)  y4 = LpNormalization <axis = 1, p = 2> (x) })"},
      {"matmul_broadcast", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[2,1,33,17] a, float[3,17,19] b, float[17] v) => (float[2,3,33,19] y, float[2,1,33] z) {
          y = MatMul(a, b)  z = MatMul(a, v) })"},
      {"gemm_trans", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[21,10] a, float[19,21] b, float[19] c) => (float[10,19] y) {
          y = Gemm <alpha = 0.5, beta = 2.0, transA = 1, transB = 1> (a, b, c) })"},
      {"matmul_half", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float16[40,24] a, float16[24,16] b) => (float16[40,16] y) { y = MatMul(a, b) })",
       10, 1e-2, 1e-2},
      {"views_feeding_ops", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[4,6,10] x) => (float[6,4,5] y, float[10,6,4] z) {
          t = Transpose <perm = [1, 0, 2]> (x)
          st = Constant <value = int64[1] {1}> ()  en = Constant <value = int64[1] {10}> ()
          ax = Constant <value = int64[1] {2}> ()  sp = Constant <value = int64[1] {2}> ()
          s = Slice(t, st, en, ax, sp)  y = Relu(s)
          u = Transpose(x)  z = Neg(u) })"},
      {"concat_split_pad", R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[3,4] a, float[3,2] b, float[3,5] c) => (float[3,5] p, float[3,6] q, float[5,11] r) {
          k = Concat <axis = 1> (a, b, c)  p, q = Split <num_outputs = 2> (k)
          pads = Constant <value = int64[4] {1, 2, 1, 3}> ()  r = Pad <mode = "reflect"> (k, pads) })"},
      {"gather_family", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[5,7] d, int64[3,2] i, int64[5,7] j) => (float[3,2,7] y, float[5,7] z) {
          y = Gather <axis = 0> (d, i)  z = GatherElements <axis = 1> (d, j) })",
       5},
      {"gather_nd_to_scalar_and_rows", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,5] d, int64[2] i, int64[4,1] j) => (float[] y, float[4,5] z) {
          y = GatherND(d, i)  z = GatherND(d, j) })",
       3},
      {"expand_tile_d2s_trilu", R"(<ir_version: 8, opset_import: ["" : 17]>
        g (float[3,1] a, float[2,8,3,5] x, float[6,7] m) => (float[2,3,4] e, float[6,2] t, float[2,2,6,10] d, float[6,7] u) {
          sh = Constant <value = int64[3] {2, 3, 4}> ()  e = Expand(a, sh)
          rp = Constant <value = int64[2] {2, 2}> ()  t = Tile(a, rp)
          d = DepthToSpace <blocksize = 2, mode = "CRD"> (x)
          k = Constant <value = int64 {-1}> ()  u = Trilu <upper = 0> (m, k) })"},
  };
  return cases;
}

}  // namespace braze::test
