// Attention (tests/attention_cases.h) on the GPU, in float16, bfloat16 and float32 (the exact
// path): one flash kernel for each, every candidate
// of its search space built and run with the arena poisoned and compared element by element
// with the reference executor; and attention at model size (GPT-2's S = 1024 in
// gpu_gemm_views_test, Llama's grouped heads at S = 1024) against the reference. Skips without a
// GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/bench.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/attention_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuAttention : public ::testing::TestWithParam<std::tuple<test::AttentionCase, const char*>> {
};

TEST_P(GpuAttention, EveryCandidateMatchesTheReference) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::attention_text(c, dtype));
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  EXPECT_EQ(base.size(), c.kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 59);
  const Tensor want = runtime::run_reference(g, in).at(0);
  size_t attention = 0;
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (base[gi].group.kind != fusion::GroupKind::Attention) continue;
    ++attention;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    std::vector<codegen::Tunables> cands = codegen::candidates(g, base[gi].group, o.target);
    // The first wgmma candidate of each consumer count again, with three blocks taking every
    // item in turn (a block an SM does so only at model sizes).
    for (int cons : {1, 2}) {
      auto first = std::find_if(cands.begin(), cands.end(), [cons](const codegen::Tunables& t) {
        return t.count("wg") && t.at("cons") == cons;
      });
      if (first == cands.end()) continue;
      codegen::Tunables few = *first;
      few["blocks"] = 3;
      cands.push_back(few);
    }
    for (const codegen::Tunables& t : cands) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, gi, t, o, &why);
      ASSERT_TRUE(engine) << tun << why;
      EXPECT_TRUE(test::tensors_close(test::run_poisoned(engine, in), want))
          << c.name << " " << dtype << ": " << tun;
    }
  }
  EXPECT_EQ(attention, 1u);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuAttention,
                         ::testing::Combine(::testing::ValuesIn(test::attention_cases()),
                                            ::testing::Values("float16", "bfloat16", "float")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// Llama's grouped heads (4 query heads a KV head) at S = 1024 (16 key tiles), a causal
// mask; the default plan against the reference.
TEST(GpuAttentionAtModelSize, LlamaGroupedQueryCausal) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[1,8,1024,64] q, float16[1,2,1024,64] k, float16[1,2,1024,64] v) => (float16[1,8,1024,64] y) {
      a2 = Constant <value = int64[1] {2}> ()  es = Constant <value = int64[5] {1, 2, 4, 1024, 64}> ()
      hs = Constant <value = int64[4] {1, 8, 1024, 64}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      one = Constant <value = float {1}> ()  r = Constant <value = int64[2] {1024, 1024}> ()  full = Expand(one, r)
      tri = Trilu <upper = 0> (full)  zero = Constant <value = float {0}> ()  dead = Equal(tri, zero)
      nf = Constant <value = float {-1e30}> ()  ninf = CastLike(nf, q)  zq = CastLike(zero, q)
      mask = Where(dead, ninf, zq)
      s = MatMul(q, kt)  cf = Constant <value = float {0.125}> ()  c = CastLike(cf, q)  ss = Mul(s, c)
      sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, vr) })");
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  auto engine = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
  size_t attention = 0;
  for (const gpu::Step& s : engine->steps())
    attention += s.group.kind == fusion::GroupKind::Attention;
  EXPECT_EQ(attention, 1u);
  const std::vector<Tensor> in = test::random_inputs(g, 61);
  const Tensor want = runtime::run_reference(g, in).at(0);
  EXPECT_TRUE(test::tensors_close(test::run_poisoned(engine, in), want));
}

// Not a check (run with --gtest_also_run_disabled_tests): each candidate's median time on
// attention at the model rows' sizes, the default marked, and the rate in TFLOP/s of the
// full (unmasked) score matrix.
std::string causal_attention(int b, int h, int hk, int s, int d) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[{0},{1},{3},{4}] q, float16[{0},{2},{3},{4}] k, float16[{0},{2},{3},{4}] v) => (float16[{0},{1},{3},{4}] y) {{
      a2 = Constant <value = int64[1] {{2}}> ()  es = Constant <value = int64[5] {{{0}, {2}, {5}, {3}, {4}}}> ()
      hs = Constant <value = int64[4] {{{0}, {1}, {3}, {4}}}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      one = Constant <value = float {{1}}> ()  r = Constant <value = int64[2] {{{3}, {3}}}> ()  full = Expand(one, r)
      tri = Trilu <upper = 0> (full)  zero = Constant <value = float {{0}}> ()  dead = Equal(tri, zero)
      nf = Constant <value = float {{-1e30}}> ()  ninf = CastLike(nf, q)  zq = CastLike(zero, q)
      mask = Where(dead, ninf, zq)
      sc = MatMul(q, kt)  cf = Constant <value = float {{0.125}}> ()  c = CastLike(cf, q)  ss = Mul(sc, c)
      sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, vr) }})",
                     b, h, hk, s, d, h / hk);
}

std::string masked_attention(int b, int h, int s, int d) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[{0},{1},{2},{3}] q, float16[{0},{1},{2},{3}] k, float16[{0},{1},{2},{3}] v, float16[{0},1,{2},{2}] mask) => (float16[{0},{1},{2},{3}] y) {{
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  sc = MatMul(q, kt)  cf = Constant <value = float {{0.125}}> ()
      c = CastLike(cf, q)  ss = Mul(sc, c)  sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, v) }})",
                     b, h, s, d);
}

std::string plain_attention(int b, int h, int s, int d) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[{0},{1},{2},{3}] q, float16[{0},{1},{2},{3}] k, float16[{0},{1},{2},{3}] v) => (float16[{0},{1},{2},{3}] y) {{
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  sc = MatMul(q, kt)  cf = Constant <value = float {{0.088388}}> ()
      c = CastLike(cf, q)  ss = Mul(sc, c)  p = Softmax <axis = -1> (ss)  y = MatMul(p, v) }})",
                     b, h, s, d);
}

// Every candidate (the wgmma schedule's among them on sm_90a) on key loops of many tiles, so
// that each stage is reused many times: GQA causal at head dim 128 and 1000 keys, and not
// masked at head dim 64 and 777 keys, an additive [B, 1, S, S] mask at 300, against the reference.
TEST(GpuAttentionAtModelSize, EveryCandidateOnLongKeyLoops) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const gpu::EngineOptions o = gpu::default_engine_options();
  for (const std::string& text :
       {causal_attention(1, 8, 2, 1000, 128), plain_attention(2, 3, 777, 64),
        masked_attention(2, 3, 300, 64)}) {
    graph::Graph g = test::graph_from_text(text);
    graph::passes::run_pipeline(g);
    const std::vector<gpu::Step> base =
        gpu::generate_steps(g, codegen::plan_for(g, true, o.target), o.target);
    ASSERT_EQ(base.size(), 1u);
    const std::vector<Tensor> in = test::random_inputs(g, 67);
    const Tensor want = runtime::run_reference(g, in).at(0);
    for (const codegen::Tunables& t : codegen::candidates(g, base[0].group, o.target)) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, 0, t, o, &why);
      ASSERT_TRUE(engine) << tun << why;
      EXPECT_TRUE(test::tensors_close(test::run_poisoned(engine, in), want)) << tun;
    }
  }
}

TEST(GpuAttentionThroughput, DISABLED_EveryCandidateAtModelSizes) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const gpu::EngineOptions o = gpu::default_engine_options();
  const std::pair<const char*, std::string> cases[] = {
      {"bert b8 s128", masked_attention(8, 12, 128, 64)},
      {"bert b32 s128", masked_attention(32, 12, 128, 64)},
      {"gpt2 b1 s1024 causal", causal_attention(1, 12, 12, 1024, 64)},
      {"gpt2 b8 s512 causal", causal_attention(8, 12, 12, 512, 64)},
      {"llama b1 s512 gqa causal", causal_attention(1, 32, 4, 512, 64)},
      {"llama b1 s2048 gqa causal", causal_attention(1, 32, 4, 2048, 64)},
      {"A3 (1,32,2048,128) kv4 causal", causal_attention(1, 32, 4, 2048, 128)},
      {"A5 (4,16,4096,128)", plain_attention(4, 16, 4096, 128)}};
  for (const auto& [what, text] : cases) {
    graph::Graph g = test::graph_from_text(text);
    graph::passes::run_pipeline(g);
    const std::vector<gpu::Step> base =
        gpu::generate_steps(g, codegen::plan_for(g, true, o.target), o.target);
    ASSERT_EQ(base.size(), 1u) << what;
    const std::vector<Tensor> in = test::random_inputs(g, 7);
    const Shape& qs = g.value(g.inputs()[0]).shape;
    const double flops = 4.0 * qs[0] * qs[1] * qs[2] * qs[2] * qs[3];
    const std::vector<codegen::Tunables> cands = codegen::candidates(g, base[0].group, o.target);
    for (size_t ci = 0; ci < cands.size(); ++ci) {
      std::string why, tun;
      auto engine = test::engine_with(g, base, 0, cands[ci], o, &why);
      ASSERT_TRUE(engine) << why;
      gpu::Session session(engine);
      gpu::BenchOptions bo;
      bo.warmup = 5;
      bo.iters = 50;
      gpu::BenchResult r = gpu::benchmark(session, in, bo);
      for (const auto& [key, v] : cands[ci]) tun += fmt::format("{}={} ", key, v);
      std::printf("%-26s %s%-28s %8.1f us  %6.1f TFLOP/s\n", what, ci == 0 ? "(default) " : "",
                  tun.c_str(), r.latency_us.median, flops / r.latency_us.median * 1e-6);
    }
  }
}

}  // namespace
}  // namespace braze
