// The Hopper flash-attention schedule's generated CUDA, compiled with NVRTC for sm_90a (no GPU
// needed): offered on sm_90a only, for head dims 64 and 128; every candidate compiles into
// PTX with Q Kᵀ on wgmma from shared memory and P V on wgmma with P from registers and V
// transposed, TMA copies on mbarriers, register reallocation where two consumer warpgroups
// share the SM, no spills and no wgmma serialised (ptxas's report); three tensor maps whose boxes
// are the tiles. Where it applies, it leads the search space.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "codegen/attention.h"
#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/attention_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

using test::h200a;

bool is_wg(const codegen::Tunables& t) { return t.count("wg") && t.at("wg") == 1; }

struct AttentionGroup {
  graph::Graph g;
  fusion::Group group;
};

AttentionGroup attention_group(const std::string& text, const codegen::Target& target) {
  AttentionGroup a{test::graph_from_text(text), {}};
  graph::passes::run_pipeline(a.g);
  for (const fusion::Group& gr : codegen::plan_for(a.g, true, target).groups)
    if (gr.kind == fusion::GroupKind::Attention) a.group = gr;
  EXPECT_FALSE(a.group.nodes.empty());
  return a;
}

std::string causal_gqa(int h, int hk, int s, int d) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[1,{0},{2},{3}] q, float16[1,{1},{2},{3}] k, float16[1,{1},{2},{3}] v) => (float16[1,{0},{2},{3}] y) {{
      a2 = Constant <value = int64[1] {{2}}> ()  es = Constant <value = int64[5] {{1, {1}, {4}, {2}, {3}}}> ()
      hs = Constant <value = int64[4] {{1, {0}, {2}, {3}}}> ()
      ku = Unsqueeze(k, a2)  ke = Expand(ku, es)  kr = Reshape(ke, hs)  kt = Transpose <perm = [0, 1, 3, 2]> (kr)
      vu = Unsqueeze(v, a2)  ve = Expand(vu, es)  vr = Reshape(ve, hs)
      one = Constant <value = float {{1}}> ()  r = Constant <value = int64[2] {{{2}, {2}}}> ()  full = Expand(one, r)
      tri = Trilu <upper = 0> (full)  zero = Constant <value = float {{0}}> ()  dead = Equal(tri, zero)
      nf = Constant <value = float {{-1e30}}> ()  ninf = CastLike(nf, q)  zq = CastLike(zero, q)
      mask = Where(dead, ninf, zq)
      sc = MatMul(q, kt)  cf = Constant <value = float {{0.125}}> ()  c = CastLike(cf, q)  ss = Mul(sc, c)
      sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, vr) }})",
                     h, hk, s, d, h / hk);
}

std::string masked(int b, int h, int s, int d) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[{0},{1},{2},{3}] q, float16[{0},{1},{2},{3}] k, float16[{0},{1},{2},{3}] v, float16[{0},1,{2},{2}] mask) => (float16[{0},{1},{2},{3}] y) {{
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  sc = MatMul(q, kt)  cf = Constant <value = float {{0.125}}> ()
      c = CastLike(cf, q)  ss = Mul(sc, c)  sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, v) }})",
                     b, h, s, d);
}

void expect_wgmma_kernels(const AttentionGroup& a, int d, const std::string& type,
                          const std::string& what) {
  size_t n = 0;
  for (const codegen::Tunables& t : codegen::candidates(a.g, a.group, h200a())) {
    if (!is_wg(t)) continue;
    ++n;
    const std::string tun =
        fmt::format("{} bn={} cons={} stages={} pp={}", what, t.at("bn"), t.at("cons"),
                    t.at("stages"), t.count("pp") ? t.at("pp") : 0);
    codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a(), &t);
    ASSERT_TRUE(gc.kernel.has_value()) << tun << ": " << gc.fallback_reason;
    const codegen::Kernel& k = *gc.kernel;
    EXPECT_EQ(codegen::schedule_name(k), "flash-wgmma");
    const unsigned bn = static_cast<unsigned>(t.at("bn")),
                   bm = 64u * static_cast<unsigned>(t.at("cons"));
    EXPECT_EQ(k.block[0], bm * 2 + 128) << tun;
    EXPECT_LE(k.shared_bytes, 227u * 1024) << tun;
    ASSERT_EQ(k.tensor_maps.size(), 3u) << tun;
    const unsigned rows[3] = {bm, bn, bn};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(k.tensor_maps[i].box[0], 64u) << tun;
      EXPECT_EQ(k.tensor_maps[i].box[1], rows[i]) << tun;
      EXPECT_EQ(k.tensor_maps[i].dims[0], static_cast<uint64_t>(d)) << tun;
      EXPECT_FALSE(k.params.at(k.tensor_maps[i].param).is_output) << tun;
    }
    gpu::Compiled comp = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true,
                                            {"--ptxas-options=-v"});
    ASSERT_FALSE(comp.cubin.empty()) << tun;
    const std::string& ptx = comp.ptx;
    const std::string qk =
        fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{}", bn, type, type);
    const std::string pv =
        fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{}", d, type, type);
    EXPECT_NE(ptx.find(qk), std::string::npos) << tun << " lacks " << qk;
    EXPECT_NE(ptx.find(pv), std::string::npos) << tun << " lacks " << pv;
    EXPECT_NE(ptx.find(", 1, 1, 1, 1;"), std::string::npos) << tun << ": P V's B (V) transposed";
    EXPECT_NE(ptx.find("cp.async.bulk.tensor"), std::string::npos) << tun;
    EXPECT_NE(ptx.find("mbarrier.try_wait.parity"), std::string::npos) << tun;
    EXPECT_EQ(ptx.find("setmaxnreg.inc") != std::string::npos, t.at("cons") == 2) << tun;
    EXPECT_NE(comp.log.find("0 bytes spill stores"), std::string::npos) << tun << ":\n" << comp.log;
    EXPECT_EQ(comp.log.find("serialized"), std::string::npos) << tun << ":\n"
                                                              << comp.log;  // C7512, C7520
  }
  EXPECT_GE(n, 5u) << what;
}

TEST(AttentionWgmmaCodegen, EveryCandidateCompilesToWgmmaWithoutSpills) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    const std::string type = std::string(dtype) == "float16" ? "f16" : "bf16";
    for (const test::AttentionCase& c : test::attention_cases()) {
      const std::string name = c.name;
      if (name != "HeadDim128DeadRow" && name != "T5PositionBias") continue;
      expect_wgmma_kernels(attention_group(test::attention_text(c, dtype), h200a()),
                           name == "HeadDim128DeadRow" ? 128 : 64, type, name + " " + dtype);
    }
  }
  expect_wgmma_kernels(attention_group(causal_gqa(32, 4, 2048, 128), h200a()), 128, "f16",
                       "GQA causal d128");
  expect_wgmma_kernels(attention_group(masked(32, 12, 128, 64), h200a()), 64, "f16", "BERT b32");
}

TEST(AttentionWgmmaCodegen, OnlyOnSm90aAndForHeadDims64And128) {
  const std::string text = causal_gqa(32, 4, 2048, 128);
  const AttentionGroup a = attention_group(text, h200a());
  EXPECT_TRUE(is_wg(codegen::candidates(a.g, a.group, h200a()).front()));
  codegen::Target plain{90, 132};
  for (const codegen::Tunables& t : codegen::candidates(a.g, a.group, plain))
    EXPECT_FALSE(is_wg(t));
  codegen::Target emulated = h200a();
  emulated.emulated = true;
  for (const codegen::Tunables& t : codegen::candidates(a.g, a.group, emulated))
    EXPECT_FALSE(is_wg(t));
  for (const test::AttentionCase& c : test::attention_cases())
    if (std::string(c.name) == "CrossHeadDim80") {
      const AttentionGroup x = attention_group(test::attention_text(c, "float16"), h200a());
      for (const codegen::Tunables& t : codegen::candidates(x.g, x.group, h200a()))
        EXPECT_FALSE(is_wg(t));
    }
}

// Where it applies the wgmma schedule leads (measured ahead at every model row's size), the
// mma.sync candidates still in the search space.
TEST(AttentionWgmmaCodegen, LeadsWhereItApplies) {
  for (int batch : {8, 32}) {
    const AttentionGroup a = attention_group(masked(batch, 12, 128, 64), h200a());
    const std::vector<codegen::Tunables> c = codegen::candidates(a.g, a.group, h200a());
    EXPECT_TRUE(is_wg(c.front()));
    EXPECT_FALSE(is_wg(c.back()));
  }
  // 128-row items fewer than the SMs over 4+ key tiles (32 heads at S = 512): 64-row items
  // first; 128-row ones at S = 2048, and over BERT b8's one key tile.
  for (int s : {512, 2048}) {
    const AttentionGroup a = attention_group(causal_gqa(32, 4, s, 64), h200a());
    const codegen::Tunables t = codegen::candidates(a.g, a.group, h200a()).front();
    ASSERT_TRUE(is_wg(t));
    EXPECT_EQ(t.at("cons"), s == 512 ? 1 : 2);
    EXPECT_EQ(t.at("bn"), 128);
  }
  const AttentionGroup bert = attention_group(masked(8, 12, 128, 64), h200a());
  EXPECT_EQ(codegen::candidates(bert.g, bert.group, h200a()).front().at("cons"), 2);
}

// A block an SM, each taking items (query tile, batch) in turn where there are more items than
// SMs; the tuner also gets the first tile as a block an item.
TEST(AttentionWgmmaCodegen, BlocksTakeItemsInTurn) {
  for (const auto& [text, items] : {std::pair{causal_gqa(32, 4, 2048, 64), 16u * 32u},
                                    std::pair{masked(8, 12, 128, 64), 96u}}) {
    const AttentionGroup a = attention_group(text, h200a());
    const std::vector<codegen::Tunables> c = codegen::candidates(a.g, a.group, h200a());
    ASSERT_TRUE(is_wg(c.front()));
    size_t per_item = 0;
    for (const codegen::Tunables& t : c) {
      if (!is_wg(t)) continue;
      const codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a(), &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      const unsigned bm = 64u * static_cast<unsigned>(t.at("cons"));
      const unsigned n = items * 128u / bm;  // `items` counts 128-row tiles
      const unsigned want = t.count("blocks") ? std::min(n, 132u) : n;
      per_item += t.count("blocks") == 0;
      EXPECT_EQ(gc.kernel->grid[0], want);
      EXPECT_EQ(gc.kernel->grid[1], 1u);
      EXPECT_NE(gc.kernel->source.find("braze_flash_slot(round)"), std::string::npos);
    }
    EXPECT_EQ(per_item, items > 132u ? 1u : 0u);
  }
}

// Items go in groups of batches whose K and V fit a share of L2 (A3's 1 MiB a head: at most
// 16 of 32), the last query tile of each group first — under a causal mask the smallest size
// of at most that many whose rounds share the key tiles as evenly as any (A3: groups of 1, the
// busiest block 34 key tiles where an even share is 33; of 16, 48); where every batch fits,
// one group, and the tuner also gets smaller groups (the last one short).
TEST(AttentionWgmmaCodegen, ItemsGoInGroupsOfBatchesWhoseKAndVFitL2) {
  const AttentionGroup a3 = attention_group(causal_gqa(32, 4, 2048, 128), h200a());
  const codegen::Tunables lead = codegen::candidates(a3.g, a3.group, h200a()).front();
  ASSERT_TRUE(is_wg(lead));
  ASSERT_EQ(lead.at("cons"), 2);
  EXPECT_EQ(lead.at("grp"), 16);
  const codegen::GroupCode gc = codegen::generate(a3.g, a3.group, h200a(), &lead);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  EXPECT_NE(gc.kernel->source.find("const int g = slot / 16;"), std::string::npos)
      << "groups of 1 batch of 16 query tiles";
  EXPECT_NE(gc.kernel->source.find("braze_key_tile_end[qt]"), std::string::npos) << "causal";
  const AttentionGroup bert = attention_group(masked(8, 12, 128, 64), h200a());
  const std::vector<codegen::Tunables> c = codegen::candidates(bert.g, bert.group, h200a());
  EXPECT_EQ(c.front().count("grp"), 0u);
  EXPECT_TRUE(std::any_of(c.begin(), c.end(), [](const codegen::Tunables& t) {
    return t.count("grp") && t.at("grp") == 95;
  }));
}

// Below a causal mask's diagonal the scores' chain of a scaled product (Mul or Div by a
// constant, the mask's 0 added) is the scale alone: the live tiles get it as a
// braze_live_scale (each exponent one FMA of the product); a softcap (tanh) keeps its chain.
TEST(AttentionWgmmaCodegen, LiveTilesOfAScaledChainTakeTheScale) {
  const std::string mul = causal_gqa(8, 4, 512, 64);
  std::string div = mul, cap = mul;
  const std::string scale = "ss = Mul(sc, c)";
  ASSERT_NE(mul.find(scale), std::string::npos);
  div.replace(div.find(scale), scale.size(),
              "ef = Constant <value = float {8}> ()  e8 = CastLike(ef, q)  ss = Div(sc, e8)");
  cap.replace(cap.find(scale), scale.size(),
              "s1 = Mul(sc, c)  cf30 = Constant <value = float {30}> ()  c30 = CastLike(cf30, q)  "
              "d1 = Div(s1, c30)  t1 = Tanh(d1)  ss = Mul(t1, c30)");
  for (const auto& [text, want] :
       {std::pair{mul, true}, std::pair{div, true}, std::pair{cap, false}}) {
    const AttentionGroup a = attention_group(text, h200a());
    const codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a());
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const std::string& src = gc.kernel->source;
    EXPECT_EQ(src.find("const braze_live_scale live{0.125f};") != std::string::npos, want) << src;
    EXPECT_EQ(src.find("auto live = [&]") != std::string::npos, !want);
  }
}

// With no mask, a chain that is a scale makes every whole key tile live (300 keys: two whole
// 128-key tiles, the third partial takes the chain); a mask that is not causal keeps them all on
// the chain.
TEST(AttentionWgmmaCodegen, WithoutAMaskEveryWholeTileTakesTheScale) {
  const std::string plain = R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[1,2,300,128] q, float16[1,2,300,128] k, float16[1,2,300,128] v) => (float16[1,2,300,128] y) {
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  sc = MatMul(q, kt)  cf = Constant <value = float {0.125}> ()
      c = CastLike(cf, q)  ss = Mul(sc, c)  p = Softmax <axis = -1> (ss)  y = MatMul(p, v) })";
  {
    const AttentionGroup a = attention_group(plain, h200a());
    const codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a());
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const std::string& src = gc.kernel->source;
    EXPECT_NE(src.find("const braze_live_scale live{0.125f};"), std::string::npos) << src;
    EXPECT_NE(src.find("flash::consume<false, true, true>"), std::string::npos) << src;
    EXPECT_NE(src.find("live, 2, round, tile0"), std::string::npos) << src;
  }
  const AttentionGroup a = attention_group(masked(2, 4, 256, 64), h200a());
  const codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a());
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  EXPECT_EQ(gc.kernel->source.find("braze_live_scale live"), std::string::npos);
  EXPECT_NE(gc.kernel->source.find("score, 0, round, tile0"), std::string::npos);
}

// A constant causal mask repeated over the batch ([2, 1, S, S], as GPT-2's export at batch 8
// folds it) is read as the causal comparison, its dead key tiles skipped; one whose slices
// differ (the second one strictly causal) stays a mask the kernel loads.
TEST(AttentionWgmmaCodegen, ACausalMaskRepeatedOverTheBatchIsCausal) {
  auto text = [](const std::string& second) {
    return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[2,4,256,64] q, float16[2,4,256,64] k, float16[2,4,256,64] v) => (float16[2,4,256,64] y) {{
      one = Constant <value = float {{1}}> ()  r = Constant <value = int64[2] {{256, 256}}> ()  full = Expand(one, r)
      tri = Trilu <upper = 0> (full)  {0}  zero = Constant <value = float {{0}}> ()
      dead = Equal(tri, zero)  dead2 = Equal(tri2, zero)
      nf = Constant <value = float {{-1e30}}> ()  ninf = CastLike(nf, q)  zq = CastLike(zero, q)
      m1 = Where(dead, ninf, zq)  m2 = Where(dead2, ninf, zq)
      ax = Constant <value = int64[2] {{0, 1}}> ()  u1 = Unsqueeze(m1, ax)  u2 = Unsqueeze(m2, ax)
      mask = Concat <axis = 0> (u1, u2)
      kt = Transpose <perm = [0, 1, 3, 2]> (k)  sc = MatMul(q, kt)  cf = Constant <value = float {{0.125}}> ()
      c = CastLike(cf, q)  ss = Mul(sc, c)  sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)  y = MatMul(p, v) }})",
                       second);
  };
  for (const auto& [second, want] :
       {std::pair{std::string("tri2 = Trilu <upper = 0> (full)"), std::string("causal")},
        std::pair{
            std::string(
                "m1k = Constant <value = int64 {-1}> ()  tri2 = Trilu <upper = 0> (full, m1k)"),
            std::string("additive")}}) {
    const std::string t = text(second);
    const AttentionGroup a = attention_group(t, h200a());
    std::string why;
    const auto dims = codegen::attention_dims(a.g, a.group, h200a(), &why);
    ASSERT_TRUE(dims.has_value()) << why;
    EXPECT_EQ(codegen::attention_mask_kind(a.g, *dims), want) << second;
    const codegen::GroupCode gc = codegen::generate(a.g, a.group, h200a());
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    EXPECT_EQ(gc.kernel->source.find("(j <= i + 0 ?") != std::string::npos, want == "causal")
        << second;
  }
}

}  // namespace
}  // namespace braze
