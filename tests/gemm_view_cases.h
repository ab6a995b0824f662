// Products whose operands are layouts of another value, as real exports write them: each
// must run on the tensor-core schedule (mma.sync in the emulator, wgmma on sm_90a) reading
// the operands in place through strides, the layout ops inside the GEMM kernels. `@` in the
// text is the element type (float16 or bfloat16). The emulator (tests/runtime) and the GPU
// (tests/gpu) run them against the reference executor.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace braze::test {

struct GemmViewCase {
  const char* name;
  const char* text;      // ONNX text syntax, `@` for the element type
  size_t gemm_kernels;   // GEMM groups of the fused plan
  size_t other_kernels;  // the other groups
};

inline void PrintTo(const GemmViewCase& c, std::ostream* os) { *os << c.name; }

inline std::string gemm_view_text(const GemmViewCase& c, const std::string& dtype) {
  return with_element_type(c.text, dtype);
}

inline const std::vector<GemmViewCase>& gemm_view_cases() {
  static const std::vector<GemmViewCase> cases = {
      // GPT-2 (dynamo): one QKV projection split into heads; Q and K scaled by a scalar each;
      // Kᵀ through two transposes; the output back to [B, S, H·D] in the epilogue. (Without
      // the Softmax between the products, which would make them one attention kernel:
      // tests/attention_cases.h.)
      {"Gpt2SplitHeadsAttention", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,40,192] x) => (@[1,40,64] y) {
      sp = Constant <value = int64[3] {64, 64, 64}> ()  q, k, v = Split <axis = 2> (x, sp)
      sh = Constant <value = int64[4] {1, 40, 2, 32}> ()
      qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
      qt = Transpose <perm = [0, 2, 1, 3]> (qr)  kt = Transpose <perm = [0, 2, 1, 3]> (kr)
      vt = Transpose <perm = [0, 2, 1, 3]> (vr)  ktt = Transpose <perm = [0, 1, 3, 2]> (kt)
      cf = Constant <value = float {0.4}> ()  c = CastLike(cf, x)  qs = Mul(qt, c)  ks = Mul(ktt, c)  s = MatMul(qs, ks)
      o = MatMul(s, vt)  ot = Transpose <perm = [0, 2, 1, 3]> (o)
      osh = Constant <value = int64[3] {1, 40, 64}> ()  y = Reshape(ot, osh) })",
       2, 0},
      // Llama: grouped-query K and V ([B, 2 KV heads, S, D]) repeated over 2 heads each by
      // Unsqueeze -> Expand -> Reshape, never copied (stride 0 across a group's heads).
      {"LlamaGroupedQueryHeads", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,4,24,32] q, @[1,2,24,32] k, @[1,2,24,32] v) => (@[1,4,24,32] y) {
      a2 = Constant <value = int64[1] {2}> ()  es = Constant <value = int64[5] {1, 2, 2, 24, 32}> ()
      hs = Constant <value = int64[4] {1, 4, 24, 32}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      s = MatMul(q, kt)  y = MatMul(s, vr) })",
       2, 0},
      // A [B, S, K] activation flattened to rows for Gemm (transB, bias), and the product back.
      {"ReshapeGemmTransBReshape", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,64] x, @[96,64] w, @[96] b) => (@[2,24,96] y) {
      s1 = Constant <value = int64[2] {48, 64}> ()  xr = Reshape(x, s1)
      m = Gemm <transB = 1> (xr, w, b)  s2 = Constant <value = int64[3] {2, 24, 96}> ()  y = Reshape(m, s2) })",
       1, 0},
      // GPT-2's Conv1D weight stored [K, N]; the activation reshaped in front.
      {"ReshapeGemmWeightKByN", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[3,16,64] x, @[64,80] w, @[80] b) => (@[3,16,80] y) {
      s1 = Constant <value = int64[2] {48, 64}> ()  xr = Reshape(x, s1)
      m = Gemm(xr, w, b)  s2 = Constant <value = int64[3] {3, 16, 80}> ()  y = Reshape(m, s2) })",
       1, 0},
      // Batch dims permuted in front of a batched product, B broadcast over them.
      {"TransposedBatchDims", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[3,4,32,16] x, @[16,24] w) => (@[4,3,32,24] y) {
      xt = Transpose <perm = [1, 0, 2, 3]> (x)  y = MatMul(xt, w) })",
       1, 0},
      // BERT's Q projection: a batched activation against one weight (one product of all
      // rows, flatten_matmul_rows), bias, and the output written as [B, H, S, D] (the store
      // map: whole 16-element runs of D, vector stores).
      {"BatchedLinearWritesHeads", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,64] x, @[64,64] w, @[64] b) => (@[2,4,24,16] y) {
      m = MatMul(x, w)  a = Add(m, b)  sh = Constant <value = int64[4] {2, 24, 4, 16}> ()
      r = Reshape(a, sh)  y = Transpose <perm = [0, 2, 1, 3]> (r) })",
       1, 0},
      // BERT: Q, K and V projections (+ bias) split into heads, K as Kᵀ; the projections
      // write rows, and the attention products read Q, Kᵀ and V through the layout chains. No
      // softmax, and the scores scaled small: the output's scale must stay near 0.1, or the
      // reference's extra roundings (each op's result in fp16) exceed the element-wise
      // tolerance on the elements near zero, though the fused result is the closer to float64.
      {"BertProjectionsThenAttention", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,24,64] x, @[64,64] wq, @[64,64] wk, @[64,64] wv, @[64] bq, @[64] bk, @[64] bv) => (@[2,24,64] y) {
      sh = Constant <value = int64[4] {2, 24, 2, 32}> ()  osh = Constant <value = int64[3] {2, 24, 64}> ()
      mq = MatMul(x, wq)  aq = Add(mq, bq)  rq = Reshape(aq, sh)  q = Transpose <perm = [0, 2, 1, 3]> (rq)
      mk = MatMul(x, wk)  ak = Add(mk, bk)  rk = Reshape(ak, sh)  kt = Transpose <perm = [0, 2, 3, 1]> (rk)
      mv = MatMul(x, wv)  av = Add(mv, bv)  rv = Reshape(av, sh)  v = Transpose <perm = [0, 2, 1, 3]> (rv)
      cf = Constant <value = float {0.0002}> ()  c = CastLike(cf, x)  s = MatMul(q, kt)  ss = Mul(s, c)
      o = MatMul(ss, v)  ot = Transpose <perm = [0, 2, 1, 3]> (o)  y = Reshape(ot, osh) })",
       5, 0},
      // A transposed in place (its m dim contiguous) and a slice of B's rows.
      {"TransposedASlicedB", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,48,40] x, @[80,56] w) => (@[2,40,56] y) {
      xt = Transpose <perm = [0, 2, 1]> (x)
      s = Constant <value = int64[1] {16}> ()  e = Constant <value = int64[1] {64}> ()  a = Constant <value = int64[1] {0}> ()
      ws = Slice(w, s, e, a)  y = MatMul(xt, ws) })",
       1, 0},
  };
  return cases;
}

}  // namespace braze::test
