// The Hopper wgmma GEMM schedule's generated CUDA, compiled with NVRTC for sm_90a (no GPU
// needed): offered on sm_90a only (not on sm_90, sm_80 or in the CPU emulator), for every
// float16 / bfloat16 case whose operands' batches it can address; every candidate compiles
// into PTX with wgmma.mma_async on both operands' layouts, TMA copies completing on
// mbarriers, register reallocation, and accumulators that never touch local memory; two
// tensor maps with boxes matching the shared tiles; cases it cannot take keep mma.sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/gemm_tc_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

using test::h200a;

bool is_wg(const codegen::Tunables& t) { return t.count("wg") && t.at("wg") == 1; }

std::vector<codegen::Tunables> wg_candidates(const test::GemmGroup& gg, const codegen::Target& t) {
  std::vector<codegen::Tunables> out;
  for (const codegen::Tunables& c : codegen::candidates(gg.g, gg.group, t))
    if (is_wg(c)) out.push_back(c);
  return out;
}

class GemmWgmmaCodegen
    : public ::testing::TestWithParam<std::tuple<test::GemmTcCase, const char*>> {};

TEST_P(GemmWgmmaCodegen, EveryCandidateCompilesToWgmmaAndTma) {
  const auto& [c, dtype] = GetParam();
  test::GemmGroup gg = test::gemm_group_of(test::gemm_tc_text(c, dtype));
  const std::vector<codegen::Tunables> cands = wg_candidates(gg, h200a());
  ASSERT_GE(cands.size(), 6u);
  EXPECT_TRUE(std::any_of(cands.begin(), cands.end(),
                          [](const codegen::Tunables& t) { return t.count("pp") > 0; }));
  EXPECT_TRUE(std::any_of(cands.begin(), cands.end(),
                          [](const codegen::Tunables& t) { return t.count("se") > 0; }));
  const std::string type = std::string(dtype) == "float16" ? "f16" : "bf16";
  for (const codegen::Tunables& t : cands) {
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), &t);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const codegen::Kernel& k = *gc.kernel;
    ASSERT_EQ(k.tensor_maps.size(), 2u);
    const int bm = t.at("bm"), bn = t.at("bn");
    const bool pp = t.count("pp") && t.at("pp") == 1;  // persistent, alternate tiles
    const int cw = t.count("cw") ? t.at("cw") : 1;     // a cooperative consumer's 64-row blocks
    EXPECT_EQ(k.block[0], pp ? 384u : 128u * (1 + bm / (64 * cw)));
    if (pp) {
      EXPECT_LE(k.grid[0], 132u);
    }
    EXPECT_LE(k.shared_bytes, 227u * 1024);
    // Boxes: 64 contiguous elements, then the tile's rows (k-contiguous) or 64 k-rows.
    const codegen::TensorMap &ma = k.tensor_maps[0], &mb = k.tensor_maps[1];
    EXPECT_EQ(ma.box[0], 64u);
    EXPECT_EQ(ma.box[1], c.a_kcontig ? static_cast<unsigned>(bm) : 64u);
    EXPECT_EQ(mb.box[0], 64u);
    EXPECT_EQ(mb.box[1], c.b_kcontig ? static_cast<unsigned>(bn) : 64u);
    EXPECT_EQ(ma.strides[0] % 16, 0u);
    EXPECT_EQ(mb.strides[0] % 16, 0u);
    EXPECT_LT(ma.param, k.params.size());
    EXPECT_LT(mb.param, k.params.size());
    EXPECT_FALSE(k.params[ma.param].is_output);
    gpu::Compiled comp = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true);
    ASSERT_FALSE(comp.cubin.empty());
    const std::string& ptx = comp.ptx;
    const std::string op =
        "wgmma.mma_async.sync.aligned.m64n" + std::to_string(bn) + "k16.f32." + type + "." + type;
    EXPECT_NE(ptx.find(op), std::string::npos) << k.name << " lacks " << op;
    // The transpose flags follow the layouts: 1 for an m- or n-contiguous operand.
    const std::string flags = std::string(", 1, 1, ") + (c.a_kcontig ? "0" : "1") + ", " +
                              (c.b_kcontig ? "0" : "1") + ";";
    EXPECT_NE(ptx.find(flags), std::string::npos) << k.name << " lacks " << flags;
    EXPECT_NE(ptx.find("cp.async.bulk.tensor.3d.shared::cluster.global"), std::string::npos);
    // se: the accumulators pass through shared memory between warpgroup barriers.
    const bool se = t.count("se") && t.at("se") != 0;
    EXPECT_EQ(ptx.find("ld.shared.v4.f32") != std::string::npos, se) << k.name;
    if (se) {
      EXPECT_NE(ptx.find("st.shared.v2.f32"), std::string::npos) << k.name;
      EXPECT_NE(ptx.find("bar.sync"), std::string::npos) << k.name;
    }
    EXPECT_NE(ptx.find("mbarrier.try_wait.parity"), std::string::npos);
    EXPECT_NE(ptx.find("wgmma.wait_group.sync.aligned"), std::string::npos);
    if (bm >= 128 || pp) {
      EXPECT_NE(ptx.find("setmaxnreg.inc.sync.aligned.u32 232"), std::string::npos);
    }
    EXPECT_EQ(ptx.find("ld.local"), std::string::npos) << k.name;
    EXPECT_EQ(ptx.find("st.local"), std::string::npos) << k.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmWgmmaCodegen,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_tc_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(GemmWgmmaCodegen, OnlyOnSm90a) {
  test::GemmGroup gg = test::gemm_group_of(test::gemm_tc_text(test::gemm_tc_cases()[0], "float16"));
  EXPECT_FALSE(wg_candidates(gg, h200a()).empty());
  EXPECT_TRUE(wg_candidates(gg, codegen::Target{90, 132}).empty()) << "sm_90 without the a";
  EXPECT_TRUE(wg_candidates(gg, codegen::Target{80, 108}).empty());
  codegen::Target emu = h200a();
  emu.emulated = true;
  EXPECT_TRUE(wg_candidates(gg, emu).empty()) << "the CPU emulator";
  codegen::Target tf32 = h200a();
  tf32.tf32 = true;
  test::GemmGroup gf = test::gemm_group_of(test::gemm_tc_text(test::gemm_tc_cases()[0], "float"));
  EXPECT_TRUE(wg_candidates(gf, tf32).empty()) << "an n-contiguous float32 B stays on mma.sync";
}

// float32 at --precision tf32: where both operands are k-contiguous (A [M, K], B [N, K]) the
// wgmma schedule takes the product, 32 floats a k-tile, in tf32 m64nNk8 steps; elsewhere (an
// m- or n-contiguous operand, which tf32's wgmma cannot read) mma.sync keeps it.
class GemmWgmmaTf32Codegen : public ::testing::TestWithParam<test::GemmTcCase> {};

TEST_P(GemmWgmmaTf32Codegen, KContiguousProductsRunTf32Wgmma) {
  const test::GemmTcCase& c = GetParam();
  codegen::Target tf32 = h200a();
  tf32.tf32 = true;
  test::GemmGroup gg = test::gemm_group_of(test::gemm_tc_text(c, "float"));
  const std::vector<codegen::Tunables> cands = wg_candidates(gg, tf32);
  if (!c.a_kcontig || !c.b_kcontig) {
    EXPECT_TRUE(cands.empty()) << c.name;
    return;
  }
  ASSERT_GE(cands.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const codegen::Tunables& t = cands[i];
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, tf32, &t);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const codegen::Kernel& k = *gc.kernel;
    for (const codegen::TensorMap& m : k.tensor_maps) {
      EXPECT_EQ(m.dtype, DType::Float32);
      EXPECT_EQ(m.box.at(0), 32u);
    }
    gpu::Compiled comp = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true);
    const std::string op =
        "wgmma.mma_async.sync.aligned.m64n" + std::to_string(t.at("bn")) + "k8.f32.tf32.tf32";
    EXPECT_NE(comp.ptx.find(op), std::string::npos) << k.name << " lacks " << op;
    EXPECT_EQ(comp.ptx.find("ld.local"), std::string::npos) << k.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmWgmmaTf32Codegen, ::testing::ValuesIn(test::gemm_tf32_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// The untuned default schedule of y = MatMul(a, b), float16 [m, k] x [k, n], on an H200.
// With b_kmajor, y = Gemm <transB = 1> (a, b), b [n, k] (store_weights_k_major's weights).
codegen::Tunables default_of(int m, int n, int k, bool b_kmajor = false) {
  const std::string text = b_kmajor ? fmt::format(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[{0},{2}] a, float16[{1},{2}] b) => (float16[{0},{1}] y) {{ y = Gemm <transB = 1> (a, b) }})",
                                                  m, n, k)
                                    : fmt::format(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[{0},{2}] a, float16[{2},{1}] b) => (float16[{0},{1}] y) {{ y = MatMul(a, b) }})",
                                                  m, n, k);
  test::GemmGroup gg = test::gemm_group_of(text);
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a());
  if (!gc.kernel) ADD_FAILURE() << gc.fallback_reason;
  return gc.kernel ? gc.kernel->tunables : codegen::Tunables{};
}

// Split-K: a product of few tiles over a long k (ResNet-50's last 3x3 convolution at batch 1,
// 49 x 512 x 4608, B k-major) runs 64 x 64 tiles in clusters of 8 blocks, each over 9 of the
// 72 k-tiles, rank 0 adding the others' sums through distributed shared memory; BERT's
// 128 x 768 x 768 (12 k-tiles) keeps one block a tile, split-K in its search space only.
TEST(GemmWgmmaCodegen, SplitKWhereFewTilesHaveLongK) {
  const codegen::Tunables t = default_of(49, 512, 4608, true);
  ASSERT_TRUE(is_wg(t));
  EXPECT_EQ(t.at("bm"), 64);
  EXPECT_EQ(t.at("bn"), 64);
  ASSERT_EQ(t.count("split"), 1u);
  EXPECT_EQ(t.at("split"), 8);
  test::GemmGroup gg = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[49,4608] a, float16[512,4608] b, float16[512] c) => (float16[49,512] y) {
      m = Gemm <transB = 1> (a, b, c)  y = Relu(m) })");
  std::vector<codegen::Tunables> splits;
  for (const codegen::Tunables& c : codegen::candidates(gg.g, gg.group, h200a()))
    if (is_wg(c) && c.count("split")) splits.push_back(c);
  ASSERT_GE(splits.size(), 3u);
  for (const codegen::Tunables& c : splits) {
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), &c);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    const codegen::Kernel& k = *gc.kernel;
    const unsigned tiles = 1u * (512u / static_cast<unsigned>(c.at("bn")));
    EXPECT_EQ(k.grid[0], tiles * static_cast<unsigned>(c.at("split")));
    EXPECT_NE(k.source.find(fmt::format("__cluster_dims__({}, 1, 1)", c.at("split"))),
              std::string::npos);
    gpu::Compiled comp = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90a"), true);
    EXPECT_NE(comp.ptx.find("barrier.cluster.arrive"), std::string::npos) << k.name;
    EXPECT_NE(comp.ptx.find("mapa"), std::string::npos) << k.name;
    EXPECT_EQ(comp.ptx.find("ld.local"), std::string::npos) << k.name;
  }
  const codegen::Tunables bert = default_of(128, 768, 768, true);
  EXPECT_EQ(bert.count("split"), 0u);
}

TEST(GemmWgmmaCodegen, DefaultTileFollowsTheOutputSize) {
  const codegen::Tunables big = default_of(4096, 3072, 768);
  EXPECT_TRUE(is_wg(big));
  EXPECT_EQ(big.at("bn"), 192) << "4 waves of 128 x 192 cost what 6 of 64 x 256 do";
  EXPECT_EQ(big.count("pp"), 1u) << "12 k-tiles a tile, 384 tiles: ping-pong";
  const codegen::Tunables qkv = default_of(4096, 2304, 768);
  EXPECT_EQ(qkv.at("bm"), 128);
  EXPECT_EQ(qkv.at("bn"), 192) << "2.9 waves of 128 x 192 against 4.4 of 64 x 256";
  EXPECT_EQ(qkv.count("pp"), 1u);
  const codegen::Tunables odd = default_of(4096, 2560, 768);
  EXPECT_EQ(odd.at("bn"), 256)
      << "64 x 256: 4.8 waves (5 x 16384 per SM); 128 x 192: 3.4 (4 x 24576)";
  const codegen::Tunables deep = default_of(8192, 8192, 4096);
  EXPECT_EQ(deep.at("bm"), 128);
  EXPECT_EQ(deep.at("bn"), 256);
  EXPECT_EQ(deep.count("pp"), 0u) << "64 k-tiles a tile: cooperative";
  EXPECT_EQ(default_of(4096, 768, 3072).at("bn"), 192)
      << "96 tiles of 128 x 256 on 132 SMs, 128 of 128 x 192";
  const char* small = R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[128,768] a, float16[768,768] b) => (float16[128,768] y) { y = MatMul(a, b) })";
  test::GemmGroup gs = test::gemm_group_of(small);
  std::vector<codegen::Tunables> c = codegen::candidates(gs.g, gs.group, h200a());
  ASSERT_FALSE(c.empty());
  EXPECT_TRUE(is_wg(c.front()));
  EXPECT_EQ(c.front().at("bn"), 64) << "few output tiles; B n-contiguous: whole 64-column boxes";
  EXPECT_EQ(c.front().at("bm"), 64) << "24 tiles of 64 x 64 rather than 12 of 128 x 64";
  EXPECT_TRUE(std::any_of(c.begin(), c.end(), [](const codegen::Tunables& t) {
    return t.count("split") > 0;
  })) << "split-K mma.sync still a candidate";
}

// Under two waves of 128 x 256 tiles, the tile that fills the 132 SMs: with B k-contiguous its
// width is any multiple of 32 that stages its epilogue (cuBLAS runs 132, 128 and 128 tiles
// of about these areas).
TEST(GemmWgmmaCodegen, WaveFittingTilesWhereBIsKContiguous) {
  auto tile = [](const codegen::Tunables& t) { return std::make_pair(t.at("bm"), t.at("bn")); };
  // What --tune found fastest on the H200 (2026-12-02): 12.64 us against 14.98 for 128 x 144
  // (unstaged), 16.64 against 18.43 for 128 x 64, 15.71 against 24.93 for 128 x 64.
  EXPECT_EQ(tile(default_of(1024, 2304, 768, true)), std::make_pair(128, 160))
      << "120 tiles; 128 x 192: 96";
  EXPECT_EQ(tile(default_of(1024, 768, 3072, true)), std::make_pair(64, 96))
      << "128 tiles; 128 x 64: 96";
  EXPECT_EQ(tile(default_of(512, 2560, 2048, true)), std::make_pair(64, 160))
      << "128 tiles; 128 x 64: 160";
  EXPECT_EQ(tile(default_of(1024, 2304, 768)), std::make_pair(128, 192))
      << "B n-contiguous: whole boxes";
  // Many tiles but n = 64 (GPT-2 b8's P V, 96 heads of 512 x 64 x 512): 64 columns wide, not
  // the ping-pong 64 x 256 of large outputs.
  test::GemmGroup pv = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[96,512,512] p, float16[96,512,64] v) => (float16[96,512,64] y) { y = MatMul(p, v) })");
  const codegen::Tunables pv_t = codegen::candidates(pv.g, pv.group, h200a()).front();
  EXPECT_EQ(tile(pv_t), std::make_pair(128, 64));
  EXPECT_EQ(pv_t.count("pp"), 0u);
  const codegen::Tunables gelu_wide = default_of(1024, 3072, 768, true);
  EXPECT_EQ(tile(gelu_wide), std::make_pair(128, 192));
  EXPECT_EQ(gelu_wide.at("se"), 1) << "a width of whole 32-column blocks stages its epilogue";
}

// An epilogue through a Reshape that keeps the last dim (BERT's rows back to [b, s, h]) reads
// a bias along that dim at j, with no division: per element, the index arithmetic of the
// linearised form (i * 2304 + j) % 2304 in 64 bits made BERT's projections 25% slower.
TEST(GemmWgmmaCodegen, EpilogueThroughAReshapeIndexesTheBiasByJ) {
  test::GemmGroup gg = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[1024,768] a, float16[2304,768] w, float16[2304] c) => (float16[8,128,2304] y) {
      m = Gemm <transB = 1> (a, w)  s = Constant <value = int64[3] {8, 128, 2304}> ()
      r = Reshape(m, s)  y = Add(r, c) })");
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a());
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  EXPECT_NE(src.find(", (j));"), std::string::npos) << "the bias read at j";
  EXPECT_EQ(src.find("2304LL + j) % 2304LL"), std::string::npos);
  // The store: the reshape's two digits of i are one term, and neither i nor j (both
  // guarded to their range) takes a modulo.
  EXPECT_NE(src.find("(long long)((unsigned)(i) * 2304u + (unsigned)(j))"), std::string::npos)
      << src;
  EXPECT_EQ(src.find("% 2304u"), std::string::npos);
  EXPECT_EQ(src.find("(unsigned)(i) / 128u"), std::string::npos);
}

// The staged epilogue's residual is copied into shared memory (cp.async, each thread its own
// vectors) before the k-loop and read there after it; the bias is loaded where it was. The
// 128 x 192 tile gives up a stage for the buffer.
TEST(GemmWgmmaCodegen, ResidualsAreCopiedToSharedMemoryBeforeTheKLoop) {
  test::GemmGroup res = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[4096,3072] a, float16[768,3072] w, float16[768] c, float16[4096,768] r) => (float16[4096,768] y) {
      m = Gemm <transB = 1> (a, w)  mb = Add(m, c)  y = Add(mb, r) })");
  codegen::GroupCode gc = codegen::generate(res.g, res.group, h200a());
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  const size_t copy = src.find(
      "braze_cp_async<8>(res_ptr + 0 + (((mi * 6 + c) * 4 + se_it) * 128 + se_t) * 8, (in3 + (i * "
      "768LL + j)));");
  const size_t loop =
      src.find("for (int kt = 0; kt < 48; ++kt)", src.find("const int cons = wg - 1;"));
  const size_t wait = src.find("braze_cp_async_wait_all();"),
               bar = src.find("braze_bar_sync(1 + cons, 128);");
  ASSERT_NE(copy, std::string::npos) << src;
  ASSERT_NE(loop, std::string::npos);
  EXPECT_LT(copy, loop) << "copied before the consumers' k-loop";
  EXPECT_LT(loop, wait);
  EXPECT_LT(wait, bar) << "waited for before the first staging barrier";
  EXPECT_NE(src.find("braze_val(res0.v[3])", bar), std::string::npos)
      << "the lanes read from shared memory";
  EXPECT_EQ(src.find("braze_vload<4>(in3"), std::string::npos)
      << "no load of the residual from global memory";
  EXPECT_NE(src.find("braze_vload<4>(in2, (j))", bar), std::string::npos)
      << "the bias loaded where it was";
  EXPECT_EQ(gc.kernel->tunables.at("bm"), 128);
  EXPECT_EQ(gc.kernel->tunables.at("bn"), 192);
  EXPECT_EQ(gc.kernel->tunables.at("stages"), 4) << "a stage fewer than the 5 that fit without it";
  EXPECT_LE(gc.kernel->shared_bytes, 227u * 1024u);
  const gpu::Compiled comp =
      gpu::nvrtc_compile(src, gc.kernel->name, gpu::Arch::parse("sm_90a"), true);
  EXPECT_NE(comp.ptx.find("cp.async.ca.shared.global"), std::string::npos);
}

// Only 16-bit float inputs are copied ahead (8-byte copies): with a boolean mask among the
// epilogue's row-wise inputs (4-byte vectors, once misaligned as 8-byte copies) the tile
// keeps its loads from global memory and all of its stages.
TEST(GemmWgmmaCodegen, ABooleanMaskKeepsTheEpilogueLoadsInGlobalMemory) {
  test::GemmGroup res = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[4096,768] a, float16[768,768] w, bool[4096,768] m, float16[4096,768] r) => (float16[4096,768] y) {
      p = MatMul(a, w)  y = Where(m, p, r) })");
  codegen::GroupCode gc = codegen::generate(res.g, res.group, h200a());
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  EXPECT_EQ(src.find("res_ptr"), std::string::npos) << src;
  EXPECT_EQ(src.find("braze_cp_async<"), std::string::npos);
  EXPECT_EQ(gc.kernel->tunables.at("stages"), 5);
}

// A store through a layout that permutes digits keeps them apart (attention's [b·h, s, d]
// product stored as [b, s, h, d]): b splits into b / 12 and b % 12, the top digit without
// a modulo.
TEST(GemmWgmmaCodegen, StoresThroughAPermutationKeepTheirDigits) {
  test::GemmGroup gg = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[24,128,128] p, float16[24,128,64] v) => (float16[2,128,12,64] y) {
      m = MatMul(p, v)  s = Constant <value = int64[4] {2, 12, 128, 64}> ()
      r = Reshape(m, s)  y = Transpose <perm = [0, 2, 1, 3]> (r) })");
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a());
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  EXPECT_NE(src.find("((unsigned)(b) / 12u) * 98304u + (unsigned)(i) * 768u + ((unsigned)(b) % "
                     "12u) * 64u + (unsigned)(j)"),
            std::string::npos)
      << src;
}

// A product of one wave of 128-row tiles (BERT-base b32's output projection + bias + residual:
// 128 tiles of 128 x 192 on 132 SMs) also offers --tune its half as a staged ping-pong tile,
// two a block, right after the default: one consumer's epilogue then overlaps the other's
// k-loop, where the cooperative tile stores all of its output after its last k-tile.
TEST(GemmWgmmaCodegen, OneWaveProductsOfferTheirHalfAsPingPong) {
  test::GemmGroup gg = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[4096,768] a, float16[768,768] w, float16[768] c, float16[4096,768] r)
        => (float16[4096,768] y) {
      m = Gemm <transB = 1> (a, w)  s = Add(m, c)  y = Add(s, r) })");
  const std::vector<codegen::Tunables> cands = wg_candidates(gg, h200a());
  ASSERT_GE(cands.size(), 2u);
  EXPECT_EQ(cands[0].at("bm"), 128);
  EXPECT_EQ(cands[0].at("bn"), 192);
  EXPECT_EQ(cands[0].count("pp"), 0u);
  const codegen::Tunables& half = cands[1];
  EXPECT_EQ(half.at("bm"), 64);
  EXPECT_EQ(half.at("bn"), 192);
  ASSERT_EQ(half.count("pp"), 1u);
  EXPECT_EQ(half.at("se"), 1);
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), &half);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  EXPECT_EQ(gc.kernel->grid[0], 132u);  // 256 tiles walked by one block an SM
  gpu::Compiled c = gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name,
                                       gpu::Arch::parse("sm_90a"), true, {"--ptxas-options=-v"});
  ASSERT_FALSE(c.cubin.empty());
  EXPECT_NE(c.ptx.find("wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16"), std::string::npos);
  EXPECT_NE(c.log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << c.log;
  // With the residual copied ahead (ca): the copies as each tile begins, before the consumer
  // waits for its turn; a stage fewer (5) to make room for 24 KB a consumer.
  ASSERT_GE(cands.size(), 3u);
  const codegen::Tunables& ahead = cands[2];
  ASSERT_EQ(ahead.count("ca"), 1u);
  EXPECT_EQ(ahead.at("bm"), 64);
  EXPECT_EQ(ahead.count("pp"), 1u);
  gc = codegen::generate(gg.g, gg.group, h200a(), &ahead);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const std::string& src = gc.kernel->source;
  const size_t copy = src.find("braze_cp_async<8>(res_ptr"),
               turn = src.find("braze_mbar_wait(turn");
  ASSERT_NE(copy, std::string::npos) << src;
  ASSERT_NE(turn, std::string::npos) << src;
  EXPECT_LT(copy, turn);
  EXPECT_NE(src.find("braze_cp_async_wait_all();"), std::string::npos);
  EXPECT_NE(src.find("for (int s = 0; s < 5; ++s)"), std::string::npos) << src;
  c = gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name, gpu::Arch::parse("sm_90a"), true,
                         {"--ptxas-options=-v"});
  ASSERT_FALSE(c.cubin.empty());
  EXPECT_NE(c.log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << c.log;
  EXPECT_LE(gc.kernel->shared_bytes, 227u * 1024);
}

// BERT b8's FFN up + GELU (one wave of 128 x 192): the ping-pong half, with nothing to copy
// ahead, so no ca candidate; asked for anyway, the schedule says why not.
TEST(GemmWgmmaCodegen, CopiesAheadOnlyWhereTheEpilogueReadsRows) {
  test::GemmGroup gg = test::gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[1024,768] a, float16[3072,768] w, float16[3072] c) => (float16[1024,3072] y) {
      m = Gemm <transB = 1> (a, w)  s = Add(m, c)  y = Gelu(s) })");
  const std::vector<codegen::Tunables> cands = wg_candidates(gg, h200a());
  ASSERT_GE(cands.size(), 2u);
  EXPECT_EQ(cands[1].at("bm"), 64);
  EXPECT_EQ(cands[1].count("pp"), 1u);
  for (const codegen::Tunables& t : cands) EXPECT_EQ(t.count("ca"), 0u);
  codegen::Tunables ahead = cands[1];
  ahead["ca"] = 1;
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), &ahead);
  EXPECT_FALSE(gc.kernel.has_value());
  EXPECT_NE(gc.fallback_reason.find("copied ahead"), std::string::npos) << gc.fallback_reason;
}

// BERT-base b32's products (M = 4096, weights k-major as store_weights_k_major stores them,
// the epilogues the model fuses): every candidate compiles; ptxas's registers and spills are
// printed for each (what --tune will time), and the untuned default spills at most 64 bytes
// (the ping-pong 128 x 192, 192 accumulators a thread, spills 48 bytes on the QKV product and
// is still its fastest tile by 11% on the H200: bench/RESULTS.md, 2026-12-04).
TEST(GemmWgmmaCodegen, BertB32CandidatesReportRegistersAndTheDefaultSpillsLittle) {
  const std::vector<std::pair<const char*, std::string>> products = {
      {"ffn_up_gelu", R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[4096,768] a, float16[3072,768] w, float16[3072] c) => (float16[4096,3072] y) {
          m = Gemm <transB = 1> (a, w)  s = Add(m, c)  y = Gelu(s) })"},
      {"qkv_bias", R"(<ir_version: 8, opset_import: ["" : 20]>
        g (float16[4096,768] a, float16[2304,768] w, float16[2304] c) => (float16[4096,2304] y) {
          m = Gemm <transB = 1> (a, w)  y = Add(m, c) })"},
  };
  for (const auto& [what, text] : products) {
    test::GemmGroup gg = test::gemm_group_of(text);
    const std::vector<codegen::Tunables> cands = wg_candidates(gg, h200a());
    ASSERT_FALSE(cands.empty()) << what;
    for (size_t i = 0; i < cands.size(); ++i) {
      codegen::GroupCode gc = codegen::generate(gg.g, gg.group, h200a(), &cands[i]);
      ASSERT_TRUE(gc.kernel.has_value()) << what << ": " << gc.fallback_reason;
      gpu::Compiled c =
          gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name, gpu::Arch::parse("sm_90a"), false,
                             {"--ptxas-options=-v"});
      ASSERT_FALSE(c.cubin.empty()) << what;
      const bool spills =
          c.log.find(" 0 bytes spill stores, 0 bytes spill loads") == std::string::npos;
      std::string tun;
      for (const auto& [key, v] : cands[i]) tun += fmt::format("{}={} ", key, v);
      const size_t used = c.log.find("Used ");
      std::printf("%-12s %s%s| %s\n", what, i == 0 ? "(default) " : "", tun.c_str(),
                  used == std::string::npos
                      ? "?"
                      : c.log.substr(used, c.log.find('\n', used) - used).c_str());
      if (spills) std::printf("%-12s   spills: %s\n", what, c.log.c_str());
      if (i == 0) {
        const size_t at = c.log.find(" bytes spill stores");
        ASSERT_NE(at, std::string::npos) << c.log;
        const size_t from = c.log.find_last_of(' ', at - 1) + 1;
        EXPECT_LE(std::stoi(c.log.substr(from, at - from)), 64) << what << "'s default spills:\n"
                                                                << c.log;
      }
    }
  }
}

}  // namespace
}  // namespace braze
