// The wgmma schedule (sm_90a) on products large enough to run many k-tiles through every
// pipeline stage and many tiles per SM, where the CPU reference would take too long for every
// element: each wgmma candidate against the mma.sync schedule (64 x 64 x 64) on the same
// inputs, element by element, and sampled rows against float64 sums on the CPU. A mismatch
// is reported with the output tiles it falls in, to point at the pipeline's fault. Skips
// without an sm_90 GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "codegen/lowering.h"
#include "codegen/codegen.h"
#include "fusion/partition.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/inputs.h"
#include "tests/gemm_test_util.h"
#include "tests/test_util.h"

namespace braze {
namespace {

struct BigCase {
  const char* name;
  const char* text;
  int64_t m, n, k;
  bool b_kcontig;         // B stored [N, K]
  bool residual = false;  // inputs a, b, a bias [N] and a residual [M, N] added to the product
};

const BigCase kCases[] = {
    {"matmul_4096x3072x768", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[4096,768] a, float16[768,3072] b) => (float16[4096,3072] y) { y = MatMul(a, b) })",
     4096, 3072, 768, false},
    {"gemm_transb_4096x3072x768", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[4096,768] a, float16[3072,768] b) => (float16[4096,3072] y) { y = Gemm <transB = 1> (a, b) })",
     4096, 3072, 768, true},
    {"matmul_1024x768x3072", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (bfloat16[1024,3072] a, bfloat16[3072,768] b) => (bfloat16[1024,768] y) { y = MatMul(a, b) })",
     1024, 768, 3072, false},
    // k-contiguous B (store_weights_k_major's weights) under two waves of 128 x 256 tiles: the
    // wave-fitting tiles whose width is not whole 64-column boxes (128 x 144, 128 x 48, 128 x
    // 80 and their neighbours), with partial tiles along m and n.
    {"gemm_transb_1000x2300x768", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[1000,768] a, float16[2300,768] b) => (float16[1000,2300] y) { y = Gemm <transB = 1> (a, b) })",
     1000, 2300, 768, true},
    {"gemm_transb_1024x768x3072", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (bfloat16[1024,3072] a, bfloat16[768,3072] b) => (bfloat16[1024,768] y) { y = Gemm <transB = 1> (a, b) })",
     1024, 768, 3072, true},
    {"gemm_transb_520x2552x2048", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[520,2048] a, float16[2552,2048] b) => (float16[520,2552] y) { y = Gemm <transB = 1> (a, b) })",
     520, 2552, 2048, true},
    // Few tiles over a long k: split-K clusters (the default: 8 blocks a 64 x 64 tile, 9 of the
    // 72 k-tiles each; 2 and 4 in the search space), partial tiles along m.
    {"gemm_transb_49x512x4608", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[49,4608] a, float16[512,4608] b) => (float16[49,512] y) { y = Gemm <transB = 1> (a, b) })",
     49, 512, 4608, true},
    {"matmul_196x256x2304", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (bfloat16[196,2304] a, bfloat16[2304,256] b) => (bfloat16[196,256] y) { y = MatMul(a, b) })",
     196, 256, 2304, false},
    // BERT b32's output projection: a bias and a residual in the epilogue, the residual copied
    // ahead into shared memory (the cooperative tiles before the k-loop, the ping-pong half
    // with ca as each tile begins).
    {"matmul_bias_residual_4096x768x768", R"(<ir_version: 8, opset_import: ["" : 20]>
      g (float16[4096,768] a, float16[768,768] b, float16[768] c, float16[4096,768] r)
          => (float16[4096,768] y) {
        p = MatMul(a, b)
        q = Add(p, c)
        y = Add(q, r) })",
     4096, 768, 768, false, true},
};

// Elements of got and want (m x n) further apart than float16 rounding of two fp32 sums can
// put them, summarised by 128 x 256 output tile.
std::string mismatches(const Tensor& got, const Tensor& want, int64_t n) {
  int64_t bad = 0;
  std::map<std::pair<int64_t, int64_t>, int64_t> tiles;
  std::string first;
  for (int64_t e = 0; e < want.numel(); ++e) {
    const double g = got.get_f64(e), w = want.get_f64(e);
    if (std::fabs(g - w) <= 2e-2 + 2e-2 * std::fabs(w)) continue;
    if (++bad <= 5) first += fmt::format(" ({}, {}): {} vs {};", e / n, e % n, g, w);
    ++tiles[{e / n / 128, e % n / 256}];
  }
  if (bad == 0) return "";
  std::string t;
  int shown = 0;
  for (const auto& [tile, count] : tiles)
    if (shown++ < 8) t += fmt::format(" [{}, {}]x{}", tile.first, tile.second, count);
  return fmt::format("{} of {} elements differ, in {} tiles of 128 x 256:{};{}", bad, want.numel(),
                     tiles.size(), t, first);
}

class GpuGemmWgmma : public ::testing::TestWithParam<BigCase> {};

TEST_P(GpuGemmWgmma, EveryCandidateAgreesWithMmaSyncAndFloat64) {
  const BigCase& c = GetParam();
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  gpu::EngineOptions o = gpu::default_engine_options();
  if (!o.target.sm90a) GTEST_SKIP() << "wgmma needs sm_90a, the GPU is " << o.arch.name();
  graph::Graph g = test::graph_from_text(c.text);
  graph::passes::run_pipeline(g);
  const std::vector<Tensor> in = test::random_inputs(g, 900);
  const std::vector<gpu::Step> base =
      gpu::generate_steps(g, fusion::plan_fused(g, codegen::kernel_lowerings()), o.target);
  const size_t gemm = test::gemm_step(base);
  ASSERT_LT(gemm, base.size());
  std::string why;
  auto mma = test::engine_with(
      g, base, gemm,
      {{"tc", 1}, {"bm", 64}, {"bn", 64}, {"bk", 64}, {"wm", 2}, {"wn", 2}, {"stages", 3}}, o,
      &why);
  ASSERT_TRUE(mma) << why;
  const Tensor want = test::run_poisoned(mma, in);
  // Sampled rows of the mma.sync result against float64 sums.
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{127}, c.m / 2 + 5, c.m - 1})
    for (int64_t j = 0; j < c.n && i < c.m; j += 37) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p)
        s += in[0].get_f64(i * c.k + p) * in[1].get_f64(c.b_kcontig ? j * c.k + p : p * c.n + j);
      if (c.residual) s += in[2].get_f64(j) + in[3].get_f64(i * c.n + j);
      ASSERT_NEAR(want.get_f64(i * c.n + j), s, 2e-2 + 1e-2 * std::fabs(s))
          << "mma.sync at " << i << ", " << j;
    }
  size_t tried = 0;
  for (const codegen::Tunables& t : codegen::candidates(g, base[gemm].group, o.target)) {
    if (!t.count("wg")) continue;
    ++tried;
    std::string what = c.name;
    for (const auto& [key, v] : t) what += fmt::format(" {}={}", key, v);
    auto engine = test::engine_with(g, base, gemm, t, o, &why);
    ASSERT_TRUE(engine) << what << ": " << why;
    for (int rep = 0; rep < 2; ++rep) {  // twice: a race need not strike every run
      const Tensor got = test::run_poisoned(engine, in);
      ASSERT_TRUE(got.defined());
      const std::string bad = mismatches(got, want, c.n);
      EXPECT_TRUE(bad.empty()) << what << " run " << rep << ": " << bad;
    }
  }
  EXPECT_GE(tried, 4u);
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGemmWgmma, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace braze
