// Products whose operands are layouts (tests/gemm_view_cases.h) on the GPU: on sm_90a each
// GEMM runs on the wgmma schedule, its operands read by TMA through the views' strides (4-
// and 5-dimensional maps for split heads and grouped-query K / V); every candidate of the
// search space is built and run with the arena poisoned and compared element by element with
// the reference executor. Skips without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "graph/passes/pipeline.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/gemm_test_util.h"
#include "tests/gemm_view_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

class GpuGemmViews : public ::testing::TestWithParam<std::tuple<test::GemmViewCase, const char*>> {
};

TEST_P(GpuGemmViews, EveryCandidateReadsTheLayoutsInPlace) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const auto& [c, dtype] = GetParam();
  graph::Graph g = test::graph_from_text(test::gemm_view_text(c, dtype));
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  const fusion::Plan plan = codegen::plan_for(g, true, o.target);
  const std::vector<gpu::Step> base = gpu::generate_steps(g, plan, o.target);
  EXPECT_EQ(base.size(), c.gemm_kernels + c.other_kernels);
  const std::vector<Tensor> in = test::random_inputs(g, 43);
  const Tensor want = runtime::run_reference(g, in).at(0);
  for (size_t gi = 0; gi < base.size(); ++gi) {
    if (base[gi].group.kind != fusion::GroupKind::Gemm) continue;
    ASSERT_TRUE(base[gi].kernel) << base[gi].fallback_reason;
    EXPECT_EQ(codegen::schedule_name(*base[gi].kernel), o.target.sm90a ? "wgmma" : "mma");
    for (const codegen::Tunables& t : codegen::candidates(g, base[gi].group, o.target)) {
      std::string why, tun;
      for (const auto& [k, v] : t) tun += fmt::format("{}={} ", k, v);
      auto engine = test::engine_with(g, base, gi, t, o, &why);
      if (!engine) continue;  // a candidate this product's shape refuses
      const Tensor got = test::run_poisoned(engine, in);
      EXPECT_TRUE(test::tensors_close(got, want))
          << c.name << " " << dtype << " kernel " << gi << ": " << tun;
    }
  }
}

// GPT-2 small's attention block at its own size (S = 1024, 12 heads of 64, an additive mask
// broadcast over the heads): the engine built from its export deadlocked on the H200, in Q Kᵀ
// (one k-tile a tile, many tiles a persistent ping-pong block, the mask loaded in the
// epilogue): one thread arrived on the consumers' turn barrier, and a warp still storing its
// previous tile found the barrier two phases on. Without the mask the timing hid it. The
// default plan, run five times (a hang traps after 20 s in braze_mbar_wait and fails).
TEST(GpuGemmViewsAtModelSize, Gpt2Attention) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::graph_from_text(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float16[1,1024,2304] x, float16[1,1,1024,1024] mask) => (float16[1,1024,768] y) {
      sp = Constant <value = int64[3] {768, 768, 768}> ()  q, k, v = Split <axis = 2> (x, sp)
      sh = Constant <value = int64[4] {1, 1024, 12, 64}> ()
      qr = Reshape(q, sh)  kr = Reshape(k, sh)  vr = Reshape(v, sh)
      qt = Transpose <perm = [0, 2, 1, 3]> (qr)  kt = Transpose <perm = [0, 2, 3, 1]> (kr)
      vt = Transpose <perm = [0, 2, 1, 3]> (vr)
      cf = Constant <value = float {0.125}> ()  c = CastLike(cf, x)  s = MatMul(qt, kt)  ss = Mul(s, c)
      sm = Add(ss, mask)  p = Softmax <axis = -1> (sm)
      o = MatMul(p, vt)  ot = Transpose <perm = [0, 2, 1, 3]> (o)
      osh = Constant <value = int64[3] {1, 1024, 768}> ()  y = Reshape(ot, osh) })");
  graph::passes::run_pipeline(g);
  const gpu::EngineOptions o = gpu::default_engine_options();
  auto engine = gpu::Engine::build(g, codegen::plan_for(g, true, o.target), o);
  for (const gpu::Step& s : engine->steps()) {
    if (s.group.kind == fusion::GroupKind::Gemm) {
      EXPECT_EQ(codegen::schedule_name(*s.kernel), o.target.sm90a ? "wgmma" : "mma");
    }
  }
  const std::vector<Tensor> in = test::random_inputs(g, 47);
  const Tensor want = runtime::run_reference(g, in).at(0);
  for (int run = 0; run < 5; ++run)
    EXPECT_TRUE(test::tensors_close(test::run_poisoned(engine, in), want)) << run;
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuGemmViews,
                         ::testing::Combine(::testing::ValuesIn(test::gemm_view_cases()),
                                            ::testing::Values("float16", "bfloat16")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace braze
