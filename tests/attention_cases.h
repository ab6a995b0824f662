// Attention as exporters write it, each of which the partitioner must make one `attention`
// kernel of (fusion/attention.h, codegen/attention.cpp): `@` in the text is the element type
// (float16, bfloat16, or float: the exact float32 path). The emulator (tests/runtime) runs the
// default tiles against the reference executor, the GPU (tests/gpu) every candidate.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace braze::test {

struct AttentionCase {
  const char* name;
  const char* text;
  size_t kernels;  // groups of the fused plan, the attention one of them
};

inline void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

inline std::string attention_text(const AttentionCase& c, const std::string& dtype) {
  return with_element_type(c.text, dtype);
}

inline const std::vector<AttentionCase>& attention_cases() {
  static const std::vector<AttentionCase> cases = {
      // BERT through sdpa (dynamo export): heads split off one QKV activation, Kᵀ through a
      // second Transpose, the scale after the product, an additive [B, 1, S, S] mask whose
      // last keys of batch 1 are masked with the dtype's minimum, Where(IsNaN(P), 0, P),
      // the output written back as [B, S, H·D]. S = 40: a partial query and key tile.
      {"BertSdpaMasked", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,40,192] x, int64[2,40] keep) => (@[2,40,64] y) {
      sp = Constant <value = int64[3] {64, 64, 64}> ()  q, k, v = Split <axis = 2> (x, sp)
      sh = Constant <value = int64[4] {2, 40, 2, 32}> ()
      qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
      qt = Transpose <perm = [0, 2, 1, 3]> (qr)  kt = Transpose <perm = [0, 2, 1, 3]> (kr)
      vt = Transpose <perm = [0, 2, 1, 3]> (vr)  ktt = Transpose <perm = [0, 1, 3, 2]> (kt)
      five = Constant <value = int64 {5}> ()  live = Less(keep, five)
      u2 = Constant <value = int64[2] {1, 2}> ()
      lm = Unsqueeze(live, u2)  ms = Constant <value = int64[4] {2, 1, 40, 40}> ()  le = Expand(lm, ms)
      zf = Constant <value = float {0}> ()  z = CastLike(zf, x)  lo = Constant <value = float {-65504}> ()  mn = CastLike(lo, x)
      mask = Where(le, z, mn)
      s = MatMul(qt, ktt)  cf = Constant <value = float {0.17677669}> ()  c = CastLike(cf, x)  ss = Mul(s, c)
      sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  nan = IsNaN(p)  pz = Where(nan, z, p)
      o = MatMul(pz, vt)  ot = Transpose <perm = [0, 2, 1, 3]> (o)
      osh = Constant <value = int64[3] {2, 40, 64}> ()  y = Reshape(ot, osh) })",
       2},
      // GPT-2: a causal mask (-inf above the diagonal, a constant the passes fold), Q and K
      // scaled by a scalar each, 72 tokens (two key tiles of 64, the second partial).
      {"Gpt2Causal", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,72,192] x) => (@[1,72,64] y) {
      sp = Constant <value = int64[3] {64, 64, 64}> ()  q, k, v = Split <axis = 2> (x, sp)
      sh = Constant <value = int64[4] {1, 72, 2, 32}> ()
      qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
      qt = Transpose <perm = [0, 2, 1, 3]> (qr)  kt = Transpose <perm = [0, 2, 3, 1]> (kr)
      vt = Transpose <perm = [0, 2, 1, 3]> (vr)
      one = Constant <value = float {1}> ()  ones_shape = Constant <value = int64[2] {72, 72}> ()
      full = Expand(one, ones_shape)
      tri = Trilu <upper = 0> (full)  zero = Constant <value = float {0}> ()  dead = Equal(tri, zero)
      nf = Constant <value = float {-1e30}> ()  ninf = CastLike(nf, x)  zx = CastLike(zero, x)
      mask = Where(dead, ninf, zx)
      cf = Constant <value = float {0.42044820}> ()  c = CastLike(cf, x)  qs = Mul(qt, c)  ks = Mul(kt, c)
      s = MatMul(qs, ks)  sm = Add(s, mask)  p = Softmax <axis = -1> (sm)
      o = MatMul(p, vt)  ot = Transpose <perm = [0, 2, 1, 3]> (o)
      osh = Constant <value = int64[3] {1, 72, 64}> ()  y = Reshape(ot, osh) })",
       1},
      // GPT-2 at batch 2: the causal mask repeated over the batch ([2, 1, S, S] once folded,
      // as the export at batch 8 has it), still read as the causal comparison.
      {"Gpt2BatchedCausalMask", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,72,192] x) => (@[2,72,64] y) {
      sp = Constant <value = int64[3] {64, 64, 64}> ()  q, k, v = Split <axis = 2> (x, sp)
      sh = Constant <value = int64[4] {2, 72, 2, 32}> ()
      qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
      qt = Transpose <perm = [0, 2, 1, 3]> (qr)  kt = Transpose <perm = [0, 2, 3, 1]> (kr)
      vt = Transpose <perm = [0, 2, 1, 3]> (vr)
      one = Constant <value = float {1}> ()  ones_shape = Constant <value = int64[2] {72, 72}> ()
      full = Expand(one, ones_shape)
      tri = Trilu <upper = 0> (full)  zero = Constant <value = float {0}> ()  dead = Equal(tri, zero)
      nf = Constant <value = float {-1e30}> ()  ninf = CastLike(nf, x)  zx = CastLike(zero, x)
      mask = Where(dead, ninf, zx)  bsh = Constant <value = int64[4] {2, 1, 72, 72}> ()
      maskb = Expand(mask, bsh)
      cf = Constant <value = float {0.42044820}> ()  c = CastLike(cf, x)  qs = Mul(qt, c)  ks = Mul(kt, c)
      s = MatMul(qs, ks)  sm = Add(s, maskb)  p = Softmax <axis = -1> (sm)
      o = MatMul(p, vt)  ot = Transpose <perm = [0, 2, 1, 3]> (o)
      osh = Constant <value = int64[3] {2, 72, 64}> ()  y = Reshape(ot, osh) })",
       1},
      // Llama: grouped-query K and V (2 KV heads for 4 query heads) repeated by Unsqueeze ->
      // Expand -> Reshape and read at stride 0, never copied; no mask, scale by Div.
      {"LlamaGroupedQuery", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,4,24,32] q, @[1,2,24,32] k, @[1,2,24,32] v) => (@[1,4,24,32] y) {
      a2 = Constant <value = int64[1] {2}> ()  es = Constant <value = int64[5] {1, 2, 2, 24, 32}> ()
      hs = Constant <value = int64[4] {1, 4, 24, 32}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      s = MatMul(q, kt)  df = Constant <value = float {5.656854}> ()  dv = CastLike(df, q)  sd = Div(s, dv)
      p = Softmax <axis = -1> (sd)  y = MatMul(p, vr) })",
       1},
      // Cross attention, query and key lengths apart (20 queries, 100 keys), head dim 80 (10
      // chunks a row: the padded, non-power-of-two row).
      {"CrossHeadDim80", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,20,80] q, @[2,100,80] k, @[2,100,80] v, @[2,20,100] bias) => (@[2,20,80] y) {
      kt = Transpose <perm = [0, 2, 1]> (k)  s0 = MatMul(q, kt)
      cf = Constant <value = float {0.1118034}> ()  c = CastLike(cf, q)  s = Mul(s0, c)  sb = Add(s, bias)
      p = Softmax <axis = -1> (sb)  y = MatMul(p, v) })",
       1},
      // Head dim 128, a strictly causal mask: query 0 sees no key (-inf in float16; in
      // bfloat16 -1e30, a uniform row), and Where(IsNaN(P), 0, P) gives it zeros.
      {"HeadDim128DeadRow", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,2,33,128] q, @[1,2,33,128] k, @[1,2,33,128] v) => (@[1,2,33,128] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s0 = MatMul(q, kt)
      cf = Constant <value = float {0.08838835}> ()  c = CastLike(cf, q)  s = Mul(s0, c)
      r = Constant <value = int64[2] {33, 33}> ()  one = Constant <value = float {1}> ()  full = Expand(one, r)
      below = Constant <value = int64 {-1}> ()  band = Trilu <upper = 0> (full, below)
      zero = Constant <value = float {0}> ()  dead = Equal(band, zero)
      nf = Constant <value = float {-1e30}> ()  ninf = CastLike(nf, q)  zq = CastLike(zero, q)
      mask = Where(dead, ninf, zq)  sm = Add(s, mask)  p = Softmax <axis = -1> (sm)
      nan = IsNaN(p)  pz = Where(nan, zq, p)  y = MatMul(pz, v) })",
       1},
      // No mask, head dim 128, 70 queries over 300 keys: every whole key tile takes the
      // scale as one FMA of the product (live), the partial last one the chain.
      {"LongKeysNoMaskHeadDim128", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,2,70,128] q, @[1,2,300,128] k, @[1,2,300,128] v) => (@[1,2,70,128] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s0 = MatMul(q, kt)
      cf = Constant <value = float {0.08838835}> ()  c = CastLike(cf, q)  s = Mul(s0, c)
      p = Softmax <axis = -1> (s)  y = MatMul(p, v) })",
       1},
      // BERT through the legacy exporter: the mask extended as (1 - mask) · -10000 over
      // [B, 1, 1, S] (one row for every query: a zero row stride), the scale as Div.
      {"BertLegacyExtendedMask", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,2,24,32] q, @[2,2,24,32] k, @[2,2,24,32] v, int64[2,24] keep) => (@[2,2,24,32] y) {
      two = Constant <value = int64 {2}> ()  kb = Less(keep, two)  kf = Cast <to = 1> (kb)
      ax = Constant <value = int64[2] {1, 2}> ()  ku = Unsqueeze(kf, ax)  onef = Constant <value = float {1}> ()
      inv = Sub(onef, ku)  big = Constant <value = float {-10000}> ()  ext = Mul(inv, big)  mask = CastLike(ext, q)
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s = MatMul(q, kt)  df = Constant <value = float {5.656854}> ()
      dv = CastLike(df, q)  sd = Div(s, dv)  sm = Add(sd, mask)  p = Softmax <axis = 3> (sm)  y = MatMul(p, v) })",
       2},
      // A boolean mask through Where(mask, scores, -inf) inside the chain: read element by
      // element (the emitter's path), keys checked against the sequence end one by one.
      {"BooleanMaskWhere", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,2,40,32] q, @[1,2,40,32] k, @[1,2,40,32] v, bool[1,1,40,40] live) => (@[1,2,40,32] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s0 = MatMul(q, kt)  cf = Constant <value = float {0.17677669}> ()
      c = CastLike(cf, q)  s = Mul(s0, c)  nf = Constant <value = float {-1e30}> ()  ninf = CastLike(nf, q)
      sm = Where(live, s, ninf)  p = Softmax <axis = -1> (sm)  nan = IsNaN(p)
      zf = Constant <value = float {0}> ()  z = CastLike(zf, q)  pz = Where(nan, z, p)  y = MatMul(pz, v) })",
       1},
      // PyTorch's masked_fill over a registered lower triangle, as eager code writes causal
      // attention: Where(Not(tril), -inf, scores), the boolean mask a constant the passes
      // fold (read as an index comparison, its dead key tiles skipped); K and V of one head
      // repeated for four (a GQA ratio of 4) and 70 tokens (a partial second key tile).
      {"MaskedFillCausalBool", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,4,70,32] q, @[1,1,70,32] k, @[1,1,70,32] v) => (@[1,4,70,32] y) {
      one = Constant <value = float {1}> ()  r = Constant <value = int64[2] {70, 70}> ()  full = Expand(one, r)
      tri = Trilu <upper = 0> (full)  half = Constant <value = float {0.5}> ()  tril = Greater(tri, half)
      ntril = Not(tril)
      a2 = Constant <value = int64[1] {2}> ()  es = Constant <value = int64[5] {1, 1, 4, 70, 32}> ()
      hs = Constant <value = int64[4] {1, 4, 70, 32}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      s0 = MatMul(q, kt)  cf = Constant <value = float {0.17677669}> ()  c = CastLike(cf, q)  s = Mul(s0, c)
      nf = Constant <value = float {-3.4e38}> ()  ninf = CastLike(nf, q)  sm = Where(ntril, ninf, s)
      p = Softmax <axis = -1> (sm)  y = MatMul(p, vr) })",
       1},
      // T5: no scale, a position bias per head ([1, H, S, S], a constant of the model).
      {"T5PositionBias", R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,3,20,64] q, @[2,3,20,64] k, @[2,3,20,64] v) => (@[2,3,20,64] y) {
      bias = Constant <value = float[1,3,1,20] {0.1, -0.2, 0.3, 0.0, 0.5, -0.6, 0.7, -0.8, 0.9, -1.0, 0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8, -0.9, 1.0,
                                               -0.1, 0.2, -0.3, 0.4, 0.0, 0.6, -0.7, 0.8, -0.9, 1.0, -0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9, -1.0,
                                               0.3, 0.3, -0.3, -0.3, 0.6, 0.6, -0.6, -0.6, 0.9, 0.9, -0.9, -0.9, 0.2, 0.2, -0.2, -0.2, 0.5, 0.5, -0.5, -0.5}> ()
      bq = CastLike(bias, q)  r = Constant <value = int64[4] {1, 3, 20, 20}> ()  pb = Expand(bq, r)
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  s0 = MatMul(q, kt)  cf = Constant <value = float {0.125}> ()
      c = CastLike(cf, q)  s = Mul(s0, c)  sb = Add(s, pb)  p = Softmax <axis = -1> (sb)  y = MatMul(p, v) })",
       1},
  };
  return cases;
}

}  // namespace braze::test
