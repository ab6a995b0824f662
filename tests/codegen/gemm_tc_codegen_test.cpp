// The tensor-core GEMM schedule's generated CUDA: chosen for float16 / bfloat16 products on
// sm_80+, and for float32 ones at tf32, compiled with NVRTC for sm_90 (no GPU needed) into
// PTX that uses mma.sync, ldmatrix (16-bit) or ld.shared + cvt.rna.tf32 (tf32) and cp.async
// and keeps its accumulators out of local memory; every candidate of its search space
// compiles; the SIMT schedule keeps what it cannot take, and float32 without tf32; split-K
// over clusters where tiles are few and k long.
#include <algorithm>
#include <gtest/gtest.h>

#include <string>

#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/gemm_tc_cases.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

const codegen::Target kH200{90, 132};
const codegen::Target kH200Tf32{90, 132, false, true};

using test::gemm_group_of;
using test::GemmGroup;

bool is_tc(const codegen::Tunables& t) { return t.count("tc") && t.at("tc") == 1; }

// Compiles for sm_90 and returns the PTX.
std::string ptx_of(const codegen::Kernel& k) {
  gpu::Compiled c = gpu::nvrtc_compile(k.source, k.name, gpu::Arch::parse("sm_90"), true);
  EXPECT_FALSE(c.cubin.empty()) << k.name;
  return c.ptx;
}

void expect_tensor_core_ptx(const std::string& ptx, const std::string& type) {
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32." + type + "." + type + ".f32"),
            std::string::npos);
  EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x4"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.wait_group"), std::string::npos);
  // Accumulators and fragments stay in registers.
  EXPECT_EQ(ptx.find("ld.local"), std::string::npos);
  EXPECT_EQ(ptx.find("st.local"), std::string::npos);
}

class GemmTcCodegen : public ::testing::TestWithParam<std::tuple<test::GemmTcCase, const char*>> {};

TEST_P(GemmTcCodegen, ChosenAndCompilesToTensorCoreCode) {
  const auto& [c, dtype] = GetParam();
  GemmGroup gg = gemm_group_of(test::gemm_tc_text(c, dtype));
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const codegen::Kernel& k = *gc.kernel;
  EXPECT_TRUE(is_tc(k.tunables));
  EXPECT_NE(k.source.find("braze_tc_gemm<"), std::string::npos);
  EXPECT_GT(k.shared_bytes, 0u);
  EXPECT_LE(k.shared_bytes, 227u * 1024);
  expect_tensor_core_ptx(ptx_of(k), std::string(dtype) == "float16" ? "f16" : "bf16");
  // The operands' layouts pick plain or transposing fragment loads.
  EXPECT_NE(k.source.find(std::string(c.a_kcontig ? "true" : "false") + ", " +
                          (c.b_kcontig ? "true" : "false") + "> tile_gemm"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTcCodegen,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_tc_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(GemmTcCodegen, EveryCandidateCompiles) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    GemmGroup gg = gemm_group_of(test::gemm_tc_text(test::gemm_tc_cases()[1], dtype));
    std::vector<codegen::Tunables> cands = codegen::candidates(gg.g, gg.group, kH200);
    size_t tc = 0;
    for (const codegen::Tunables& t : cands) {
      if (!is_tc(t)) continue;
      EXPECT_EQ(tc, static_cast<size_t>(&t - cands.data())) << "tensor-core candidates come first";
      ++tc;
      codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200, &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      EXPECT_EQ(gc.kernel->tunables, t);
      EXPECT_LE(gc.kernel->shared_bytes, 227u * 1024);
      EXPECT_LE(gc.kernel->block[0], 1024u);
      expect_tensor_core_ptx(ptx_of(*gc.kernel), std::string(dtype) == "float16" ? "f16" : "bf16");
    }
    EXPECT_GE(tc, 6u);
    EXPECT_GT(cands.size(), tc) << "the SIMT candidates follow";
  }
}

// Few output tiles and a long k: split-K candidates, clusters of blocks each taking a share
// of k and adding their partial sums through distributed shared memory; none for the CPU
// emulator (no clusters) nor where the tiles already fill the SMs.
TEST(GemmTcCodegen, SplitKForFewTilesAndLongK) {
  auto splits_of = [](const std::string& text, const codegen::Target& target) {
    GemmGroup gg = gemm_group_of(text);
    std::vector<int> splits;
    for (const codegen::Tunables& t : codegen::candidates(gg.g, gg.group, target)) {
      if (!t.count("split")) continue;
      splits.push_back(t.at("split"));
      codegen::GroupCode gc = codegen::generate(gg.g, gg.group, target, &t);
      EXPECT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      if (!gc.kernel) continue;
      EXPECT_EQ(gc.kernel->grid[0] % static_cast<unsigned>(t.at("split")), 0u);
      EXPECT_NE(gc.kernel->source.find("__cluster_dims__(" + std::to_string(t.at("split"))),
                std::string::npos);
      std::string ptx = ptx_of(*gc.kernel);
      EXPECT_NE(ptx.find("barrier.cluster"), std::string::npos);
      EXPECT_NE(ptx.find("mapa"), std::string::npos);
      EXPECT_EQ(ptx.find("ld.local"), std::string::npos);
    }
    return splits;
  };
  const std::string small_m = R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[128,768] a, float16[768,768] b, float16[768] c) => (float16[128,768] y) {
      m = MatMul(a, b)  y = Add(m, c) })";
  std::vector<int> s = splits_of(small_m, kH200);
  {
    GemmGroup gg = gemm_group_of(small_m);
    codegen::Tunables def = codegen::candidates(gg.g, gg.group, kH200).front();
    EXPECT_EQ(def.count("split") ? def.at("split") : 1, 4)
        << "24 tiles of 64 x 64: split 4 by default";
  }
  EXPECT_NE(std::find(s.begin(), s.end(), 2), s.end());
  EXPECT_NE(std::find(s.begin(), s.end(), 4), s.end());
  EXPECT_TRUE(splits_of(small_m, codegen::Target{90, 132, true}).empty()) << "emulator";
  EXPECT_TRUE(splits_of(small_m, codegen::Target{80, 108}).empty()) << "sm_80: no clusters";
  EXPECT_TRUE(splits_of(R"(<ir_version: 8, opset_import: ["" : 20]>
    g (float16[4096,768] a, float16[768,3072] b) => (float16[4096,3072] y) { y = MatMul(a, b) })",
                        kH200)
                  .empty())
      << "the tiles fill the SMs";
}

// Small and medium problems get a 64 x 64 default tile, large ones (three waves) 128 x 256.
TEST(GemmTcCodegen, DefaultTileFollowsTheProblemSize) {
  auto default_of = [](const std::string& shape_a, const std::string& shape_b,
                       const std::string& shape_y) {
    GemmGroup gg = gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16)" + shape_a + R"( a, float16)" +
                                 shape_b + R"( b) => (float16)" + shape_y +
                                 R"( y) { y = MatMul(a, b) })");
    codegen::Tunables t = codegen::candidates(gg.g, gg.group, kH200).front();
    EXPECT_TRUE(is_tc(t));
    return std::make_pair(t.at("bm"), t.at("bn"));
  };
  EXPECT_EQ(default_of("[77,64]", "[64,200]", "[77,200]"), std::make_pair(64, 64));
  EXPECT_EQ(default_of("[2048,1024]", "[1024,2048]", "[2048,2048]"), std::make_pair(64, 64));
  EXPECT_EQ(default_of("[4096,768]", "[768,3072]", "[4096,3072]"), std::make_pair(64, 64));
  EXPECT_EQ(default_of("[4096,1024]", "[1024,4096]", "[4096,4096]"), std::make_pair(128, 256));
}

// What the tensor-core schedule cannot take stays with the SIMT one.
TEST(GemmTcCodegen, SimtKeepsTheRest) {
  const std::vector<std::pair<std::string, codegen::Target>> cases = {
      {R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[64,64] a, float[64,64] b) => (float[64,64] y) { y = MatMul(a, b) })",
       kH200},
      {R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float16[64,20] a, float16[20,64] b) => (float16[64,64] y) { y = MatMul(a, b) })",
       kH200},
      {R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float16[64,64] a, float16[64,60] b) => (float16[64,60] y) { y = MatMul(a, b) })",
       kH200},
      {R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float16[64,64] a, float16[64] v) => (float16[64] y) { y = MatMul(a, v) })",
       kH200},
      {R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float16[64,64] a, float16[64,64] b) => (float16[64,64] y) { y = MatMul(a, b) })",
       codegen::Target{75, 40}},
  };
  for (const auto& [text, target] : cases) {
    GemmGroup gg = gemm_group_of(text);
    for (const codegen::Tunables& t : codegen::candidates(gg.g, gg.group, target))
      EXPECT_FALSE(is_tc(t)) << text;
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, target);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    EXPECT_FALSE(is_tc(gc.kernel->tunables)) << text;
    EXPECT_EQ(gc.kernel->source.find("braze_tc_gemm"), std::string::npos);
    EXPECT_EQ(gc.kernel->source.find("mma.sync"), std::string::npos) << "helpers not included";
  }
}

// A Transpose in front of an operand is read in place as a view (the operand k-contiguous,
// like Gemm's transB), in float16 and in float32 at tf32: every candidate is a tensor-core one
// but the SIMT tail, and the kernel takes k itself, not the transposed copy.
TEST(GemmTcCodegen, TransposeInFrontIsReadInPlace) {
  for (const char* type : {"float16", "float"}) {
    const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
        g ({0}[2,64,32] q, {0}[2,48,32] k) => ({0}[2,64,48] y) {{
          kt = Transpose <perm = [0, 2, 1]> (k)  y = MatMul(q, kt) }})",
                                         type);
    GemmGroup gg = gemm_group_of(text);
    EXPECT_EQ(gg.group.nodes.size(), 2u) << "the Transpose is in the GEMM group";
    const codegen::Target t = std::string(type) == "float" ? kH200Tf32 : kH200;
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, t);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    EXPECT_TRUE(is_tc(gc.kernel->tunables)) << text;
    ASSERT_EQ(gc.kernel->params.size(), 3u);
    EXPECT_EQ(gg.g.value(gc.kernel->params[1].value).name, "k");
  }
}

// Asking for the tensor-core schedule where it does not apply is refused with the reason.
TEST(GemmTcCodegen, ForcedWhereItCannotApplySaysWhy) {
  GemmGroup gg = gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[64,20] a, float16[20,64] b) => (float16[64,64] y) { y = MatMul(a, b) })");
  codegen::Tunables t{{"tc", 1}, {"bm", 64}, {"bn", 64},   {"bk", 32},
                      {"wm", 2}, {"wn", 2},  {"stages", 4}};
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200, &t);
  EXPECT_FALSE(gc.kernel.has_value());
  EXPECT_NE(gc.fallback_reason.find("multiples of 8"), std::string::npos) << gc.fallback_reason;
}

// A k-contiguous operand's fragments load with ldmatrix (never .trans, which splits 16-bit
// elements), an m- or n-contiguous one's with ld.shared a float at a time.
void expect_tf32_ptx(const std::string& ptx, bool a_kcontig, bool b_kcontig) {
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  EXPECT_NE(ptx.find("cvt.rna.tf32.f32"), std::string::npos);
  EXPECT_EQ(ptx.find("ld.shared.f32") != std::string::npos, !a_kcontig || !b_kcontig);
  EXPECT_EQ(ptx.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos,
            a_kcontig || b_kcontig);
  EXPECT_EQ(ptx.find(".trans"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.wait_group"), std::string::npos);
  EXPECT_EQ(ptx.find("ld.local"), std::string::npos);
  EXPECT_EQ(ptx.find("st.local"), std::string::npos);
}

class GemmTf32Codegen : public ::testing::TestWithParam<test::GemmTcCase> {};

TEST_P(GemmTf32Codegen, ChosenAtTf32AndCompilesToTf32TensorCoreCode) {
  const test::GemmTcCase& c = GetParam();
  GemmGroup gg = gemm_group_of(test::gemm_tc_text(c, "float"));
  codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200Tf32);
  ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
  const codegen::Kernel& k = *gc.kernel;
  EXPECT_TRUE(is_tc(k.tunables));
  EXPECT_NE(k.source.find("braze_tc_gemm<float, "), std::string::npos);
  EXPECT_LE(k.shared_bytes, 227u * 1024);
  expect_tf32_ptx(ptx_of(k), c.a_kcontig, c.b_kcontig);
  EXPECT_NE(k.source.find(std::string(c.a_kcontig ? "true" : "false") + ", " +
                          (c.b_kcontig ? "true" : "false") + "> tile_gemm"),
            std::string::npos);
  // The same group at fp32: the exact SIMT kernel, another source and so another name
  // (the kernel cache and the tuning cache key on it).
  codegen::GroupCode exact = codegen::generate(gg.g, gg.group, kH200);
  ASSERT_TRUE(exact.kernel.has_value()) << exact.fallback_reason;
  EXPECT_FALSE(is_tc(exact.kernel->tunables));
  // No tensor-core instruction in its PTX (its source may include mma.cuh's helpers: the
  // SIMT kernel's cp.async stages come from there).
  const std::string exact_ptx = ptx_of(*exact.kernel);
  EXPECT_EQ(exact_ptx.find("mma.sync"), std::string::npos);
  EXPECT_EQ(exact_ptx.find("wgmma"), std::string::npos);
  EXPECT_NE(exact.kernel->name, k.name);
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTf32Codegen, ::testing::ValuesIn(test::gemm_tf32_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GemmTf32Codegen, EveryCandidateCompiles) {
  for (const char* name : {"gemm_transb_bias_gelu", "matmul_bias_relu", "gemm_transa_alpha_beta",
                           "gemm_transa_transb"}) {
    const test::GemmTcCase* c = nullptr;
    for (const test::GemmTcCase& k : test::gemm_tf32_cases())
      if (std::string(k.name) == name) c = &k;
    ASSERT_NE(c, nullptr);
    GemmGroup gg = gemm_group_of(test::gemm_tc_text(*c, "float"));
    std::vector<codegen::Tunables> cands = codegen::candidates(gg.g, gg.group, kH200Tf32);
    size_t tc = 0;
    for (const codegen::Tunables& t : cands) {
      if (!is_tc(t)) continue;
      EXPECT_EQ(tc, static_cast<size_t>(&t - cands.data())) << "tensor-core candidates come first";
      ++tc;
      codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200Tf32, &t);
      ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
      EXPECT_EQ(gc.kernel->tunables, t);
      EXPECT_LE(gc.kernel->shared_bytes, 227u * 1024);
      EXPECT_LE(gc.kernel->block[0], 1024u);
      expect_tf32_ptx(ptx_of(*gc.kernel), c->a_kcontig, c->b_kcontig);
    }
    EXPECT_GE(tc, 6u);
    EXPECT_GT(cands.size(), tc) << "the SIMT candidates follow";
  }
}

// The tf32 default tile grows with the problem as the float16 one does (to 128 x 128: larger
// tf32 tiles spill registers).
TEST(GemmTf32Codegen, DefaultTileFollowsTheProblemSize) {
  auto default_of = [](const std::string& a, const std::string& b, const std::string& y) {
    GemmGroup gg = gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float)" + a + R"( a, float)" +
                                 b + R"( b) => (float)" + y + R"( y) { y = MatMul(a, b) })");
    codegen::Tunables t = codegen::candidates(gg.g, gg.group, kH200Tf32).front();
    EXPECT_TRUE(is_tc(t));
    return std::make_tuple(t.at("bm"), t.at("bn"), t.at("bk"));
  };
  EXPECT_EQ(default_of("[77,64]", "[64,200]", "[77,200]"), std::make_tuple(64, 64, 16));
  EXPECT_EQ(default_of("[512,1024]", "[1024,4096]", "[512,4096]"), std::make_tuple(64, 128, 16));
  EXPECT_EQ(default_of("[2048,1024]", "[1024,2048]", "[2048,2048]"), std::make_tuple(128, 128, 16));
}

// At tf32, what 16-byte copies of floats cannot take (k or a contiguous dim not a multiple
// of 4) and vectors stay exact on the SIMT schedule; a
// forced tensor-core tile says why it cannot apply.
TEST(GemmTf32Codegen, SimtKeepsTheRest) {
  for (const char* text : {
           R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[64,30] a, float[30,64] b) => (float[64,64] y) { y = MatMul(a, b) })",
           R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[64,64] a, float[64,62] b) => (float[64,62] y) { y = MatMul(a, b) })",
           R"(<ir_version: 8, opset_import: ["" : 18]>
        g (float[64,64] a, float[64] v) => (float[64] y) { y = MatMul(a, v) })"}) {
    GemmGroup gg = gemm_group_of(text);
    for (const codegen::Tunables& t : codegen::candidates(gg.g, gg.group, kH200Tf32))
      EXPECT_FALSE(is_tc(t)) << text;
    codegen::GroupCode gc = codegen::generate(gg.g, gg.group, kH200Tf32);
    ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
    EXPECT_EQ(gc.kernel->source.find("mma.sync"), std::string::npos) << text;
  }
  GemmGroup gg = gemm_group_of(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[64,30] a, float[30,64] b) => (float[64,64] y) { y = MatMul(a, b) })");
  codegen::Tunables t{{"tc", 1}, {"bm", 64}, {"bn", 64},   {"bk", 32},
                      {"wm", 2}, {"wn", 2},  {"stages", 3}};
  codegen::GroupCode forced = codegen::generate(gg.g, gg.group, kH200Tf32, &t);
  EXPECT_FALSE(forced.kernel.has_value());
  EXPECT_NE(forced.fallback_reason.find("multiples of 4"), std::string::npos)
      << forced.fallback_reason;
  codegen::GroupCode exact = codegen::generate(gg.g, gg.group, kH200, &t);
  EXPECT_FALSE(exact.kernel.has_value());
  EXPECT_NE(exact.fallback_reason.find("--precision tf32"), std::string::npos)
      << exact.fallback_reason;
}

}  // namespace
}  // namespace braze
