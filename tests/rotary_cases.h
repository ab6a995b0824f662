// Rotary position embedding after a projection (graph/passes/rotary_projection.h), written out
// as Llama's exporters write it: Q (and K) projected, split into heads, then
// q · cos + Concat(−q[…, D/2:], q[…, :D/2]) · sin. The pipeline interleaves each head's weight
// columns and the GEMM's epilogue computes the rotation from each lane's pair of adjacent
// accumulators (SwapPairs), storing every head in [B, H, S, D]. `@` in the text is the element
// type. The emulator (tests/runtime) and the GPU (tests/gpu, every candidate) run them against
// the reference, which runs the graph before the passes.
#pragma once

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/test_util.h"

namespace braze::test {

struct RotaryCase {
  const char* name;
  std::string text;     // ONNX text syntax, `@` for the element type
  size_t swaps;         // SwapPairs after the pipeline (0: the pass declines)
  size_t gemm_kernels;  // GEMM groups of the fused plan
  size_t kernels;       // all groups
};

inline void PrintTo(const RotaryCase& c, std::ostream* os) { *os << c.name; }

// Llama's tables over (s, d), [.., S, D] as `shape` says: cos or sin of s · θ_t, t = d mod D/2,
// θ_t = base^(−2t/D) (shifted by `phase`), rounded to 1/64 so that every type holds them exactly.
inline std::string rotary_table(const char* name, const std::string& shape, int s, int d, bool sine,
                                double phase = 0) {
  std::string vals;
  for (int i = 0; i < s; ++i)
    for (int c = 0; c < d; ++c) {
      const double theta = std::pow(100.0, -2.0 * (c % (d / 2)) / d);
      const double v = sine ? std::sin(i * theta + phase) : std::cos(i * theta + phase);
      vals += fmt::format("{}{}", i || c ? ", " : "", std::round(v * 64) / 64);
    }
  return fmt::format("{0}f = Constant <value = float{1} {{{2}}}> ()  {0} = CastLike({0}f, x)\n",
                     name, shape, vals);
}

// A constant [k, n] weight of small values (multiples of 1/64, exact in every type): products
// near 1, so that the reference's rounding of each op to float16 (the kernel rounds once, at
// the end) stays within the comparison's tolerance where q · cos and rotate_half(q) · sin
// cancel.
inline std::string rotary_weight(const char* name, int k, int n, int seed) {
  std::string vals;
  for (int i = 0; i < k * n; ++i)
    vals += fmt::format("{}{}", i ? ", " : "", ((i * 7 + seed * 5) % 17 - 8) / 64.0);
  return fmt::format(
      "{0}f = Constant <value = float[{1},{2}] {{{3}}}> ()  {0} = CastLike({0}f, x)\n", name, k, n,
      vals);
}

// rotate_half of t [.., D] with cos c and sin s, as the dynamo exporter writes it: `out`.
inline std::string rotate_half(const std::string& t, const std::string& out, int d,
                               bool swapped_operands = false) {
  return fmt::format(
      "{0}_z = Constant <value = int64[1] {{0}}> ()  {0}_h = Constant <value = int64[1] {{{2}}}> "
      "()\n"
      "{0}_e = Constant <value = int64[1] {{{3}}}> ()  {0}_a = Constant <value = int64[1] {{-1}}> "
      "()\n"
      "{0}_lo = Slice({0}, {0}_z, {0}_h, {0}_a)  {0}_hi = Slice({0}, {0}_h, {0}_e, {0}_a)\n"
      "{0}_n = Neg({0}_hi)  {0}_r = Concat <axis = 3> ({0}_n, {0}_lo)\n"
      "{0}_c = Mul({4})  {0}_s = Mul({5})  {1} = Add({0}_c, {0}_s)\n",
      t, out, d / 2, d, swapped_operands ? "c, " + t : t + ", c",
      swapped_operands ? "s, " + t + "_r" : t + "_r, s");
}

// RotaryEmbedding's caches (opset 23): [positions, D/2] constants, cos or sin of i · θ_t,
// rounded to 1/64 as rotary_table's.
inline std::string rotary_cache(const char* name, int positions, int d, bool sine) {
  std::string vals;
  for (int i = 0; i < positions; ++i)
    for (int t = 0; t < d / 2; ++t) {
      const double theta = std::pow(100.0, -2.0 * t / d);
      const double v = sine ? std::sin(i * theta) : std::cos(i * theta);
      vals += fmt::format("{}{}", i || t ? ", " : "", std::round(v * 64) / 64);
    }
  return fmt::format(
      "{0}f = Constant <value = float[{1},{2}] {{{3}}}> ()  {0} = CastLike({0}f, x)\n", name,
      positions, d / 2, vals);
}

inline const std::vector<RotaryCase>& rotary_cases() {
  static const std::vector<RotaryCase> cases = {
      // Llama's attention inputs: Q (4 heads), K and V (2 heads each) of one activation, merged
      // into one product; Q and K rotated, V not; the three heads' groups read side by side.
      {"LlamaQkv",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,40,64] x) => (@[1,8,40,16] y) {
)" + rotary_weight("wq", 64, 64, 1) +
           rotary_weight("wk", 64, 32, 2) + rotary_weight("wv", 64, 32, 3) +
           rotary_table("c", "[1,1,40,16]", 40, 16, false) +
           rotary_table("s", "[1,1,40,16]", 40, 16, true) + R"(
      pq = MatMul(x, wq)  pk = MatMul(x, wk)  pv = MatMul(x, wv)
      sq = Constant <value = int64[4] {1, 40, 4, 16}> ()  skv = Constant <value = int64[4] {1, 40, 2, 16}> ()
      rq = Reshape(pq, sq)  tq = Transpose <perm = [0, 2, 1, 3]> (rq)
      rk = Reshape(pk, skv)  tk = Transpose <perm = [0, 2, 1, 3]> (rk)
      rv = Reshape(pv, skv)  v = Transpose <perm = [0, 2, 1, 3]> (rv)
)" + rotate_half("tq", "q", 16) +
           rotate_half("tk", "k", 16) + R"(
      y = Concat <axis = 1> (q, k, v) })",
       1, 1, 2},
      // One projection with a bias, two sequences of 9 positions, the tables [S, D] and the
      // products' operands the other way round.
      {"BiasedOddPositions",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[2,9,32] x) => (@[2,2,9,8] y) {
)" + rotary_weight("w", 32, 16, 4) +
           rotary_table("c", "[9,8]", 9, 8, false) + rotary_table("s", "[9,8]", 9, 8, true) + R"(
      bf = Constant <value = float[16] {0.5, -0.25, 0.125, 1, -1, 0.75, 0.0625, -0.5, 0.25, 0.375, -0.125, 1.5, -0.75, 0.5, 0.1875, -0.0625}> ()
      b = CastLike(bf, x)  p = MatMul(x, w)  pb = Add(p, b)
      sh = Constant <value = int64[4] {2, 9, 2, 8}> ()  r = Reshape(pb, sh)
      t = Transpose <perm = [0, 2, 1, 3]> (r)
)" + rotate_half("t", "y", 8, true) +
           R"( })",
       1, 1, 1},
      // Q and K rotated by different tables: not one rotation over the merged product, so the
      // pass leaves it (the rotations run as element-wise kernels).
      {"DifferentTables",
       R"(<ir_version: 8, opset_import: ["" : 18]>
    g (@[1,24,32] x) => (@[1,4,24,16] y) {
)" + rotary_weight("wq", 32, 32, 5) +
           rotary_weight("wk", 32, 32, 6) + rotary_table("c", "[1,1,24,16]", 24, 16, false) +
           rotary_table("s", "[1,1,24,16]", 24, 16, true) +
           rotary_table("c2", "[1,1,24,16]", 24, 16, false, 0.5) + R"(
      pq = MatMul(x, wq)  pk = MatMul(x, wk)
      sh = Constant <value = int64[4] {1, 24, 2, 16}> ()
      rq = Reshape(pq, sh)  tq = Transpose <perm = [0, 2, 1, 3]> (rq)
      rk = Reshape(pk, sh)  tk = Transpose <perm = [0, 2, 1, 3]> (rk)
      tq_c = Mul(tq, c)
      q_z = Constant <value = int64[1] {0}> ()  q_h = Constant <value = int64[1] {8}> ()
      q_e = Constant <value = int64[1] {16}> ()  q_a = Constant <value = int64[1] {-1}> ()
      q_lo = Slice(tq, q_z, q_h, q_a)  q_hi = Slice(tq, q_h, q_e, q_a)  q_n = Neg(q_hi)
      q_r = Concat <axis = 3> (q_n, q_lo)  q_s = Mul(q_r, s)  q = Add(tq_c, q_s)
      k_lo = Slice(tk, q_z, q_h, q_a)  k_hi = Slice(tk, q_h, q_e, q_a)  k_n = Neg(k_hi)
      k_r = Concat <axis = 3> (k_n, k_lo)  k_c = Mul(tk, c2)  k_s = Mul(k_r, s)  k = Add(k_c, k_s)
      y = Concat <axis = 1> (q, k) })",
       0, 1, 2},
      // Opset 23's RotaryEmbedding on 3-D Q and K ([B, S, h · D], num_heads), its caches
      // [B, S, D/2] given at run time (no position_ids): the cosines interleaved by a small
      // kernel, the signed sines (read by the product alone) in its epilogue as a side input,
      // the rotation in the merged product's epilogue, V's heads left alone.
      {"RotaryOpQkv",
       R"(<ir_version: 10, opset_import: ["" : 23]>
    g (@[2,9,64] x, @[2,9,8] c, @[2,9,8] s) => (@[2,8,9,16] y) {
)" + rotary_weight("wq", 64, 64, 7) +
           rotary_weight("wk", 64, 32, 8) + rotary_weight("wv", 64, 32, 9) + R"(
      pq = MatMul(x, wq)  pk = MatMul(x, wk)  pv = MatMul(x, wv)
      q = RotaryEmbedding <num_heads = 4> (pq, c, s)  k = RotaryEmbedding <num_heads = 2> (pk, c, s)
      sq = Constant <value = int64[4] {2, 9, 4, 16}> ()  skv = Constant <value = int64[4] {2, 9, 2, 16}> ()
      rq = Reshape(q, sq)  tq = Transpose <perm = [0, 2, 1, 3]> (rq)
      rk = Reshape(k, skv)  tk = Transpose <perm = [0, 2, 1, 3]> (rk)
      rv = Reshape(pv, skv)  tv = Transpose <perm = [0, 2, 1, 3]> (rv)
      y = Concat <axis = 1> (tq, tk, tv) })",
       1, 1, 3},
      // The interleaved form (GPT-J's pairs 2t, 2t + 1: no columns move) on a 4-D X after a
      // biased projection, the caches gathered at constant positions (folded into tables).
      {"RotaryOpInterleaved",
       R"(<ir_version: 10, opset_import: ["" : 23]>
    g (@[1,12,32] x) => (@[1,2,12,16] y) {
)" + rotary_weight("w", 32, 32, 10) +
           rotary_cache("cc", 16, 16, false) + rotary_cache("sc", 16, 16, true) + R"(
      bf = Constant <value = float[32] {0.5, -0.25, 0.125, 1, -1, 0.75, 0.0625, -0.5, 0.25, 0.375, -0.125, 1.5, -0.75, 0.5, 0.1875, -0.0625, 0.25, 0.5, -1, 0.125, 0.75, -0.375, 1, 0.0625, -0.5, 0.25, 0.625, -0.125, 0.5, -0.75, 0.375, 1}> ()
      b = CastLike(bf, x)  p = MatMul(x, w)  pb = Add(p, b)
      sh = Constant <value = int64[4] {1, 12, 2, 16}> ()  r = Reshape(pb, sh)
      t = Transpose <perm = [0, 2, 1, 3]> (r)
      pos = Constant <value = int64[1,12] {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}> ()
      y = RotaryEmbedding <interleaved = 1> (t, cc, sc, pos) })",
       1, 1, 1},
      // Only part of each head rotated (rotary_embedding_dim 8 of 16): not matched, so the
      // rotation stays element-wise after the product.
      {"RotaryOpPartial",
       R"(<ir_version: 10, opset_import: ["" : 23]>
    g (@[1,10,32] x, @[1,10,4] c, @[1,10,4] s) => (@[1,10,32] y) {
)" + rotary_weight("w", 32, 32, 11) +
           R"(
      p = MatMul(x, w)
      y = RotaryEmbedding <num_heads = 2, rotary_embedding_dim = 8> (p, c, s) })",
       0, 1, 2},
  };
  return cases;
}

inline std::string rotary_text(const RotaryCase& c, const std::string& dtype) {
  return with_element_type(c.text, dtype);
}

}  // namespace braze::test
