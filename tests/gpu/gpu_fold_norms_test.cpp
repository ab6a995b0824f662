// LayerNormalization folded into the products that read it (graph/passes/fold_norms.h) on the
// GPU: a post-norm block in float16 / bfloat16, whose normalisation's statistics the wgmma
// schedule computes from A's tiles (on sm_90a no LayerNormalization kernel is left), run with
// the arena poisoned and compared with the block in float32. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "codegen/capabilities.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"
#include "tests/fold_norms_cases.h"
#include "tests/test_util.h"

namespace braze {
namespace {

void check_block(int k, DType half) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  graph::Graph g = test::folded_post_norm_block(k, 96, half);
  const gpu::EngineOptions opts = gpu::default_engine_options();
  fusion::Plan plan = codegen::plan_for(g, true, opts.target);
  if (opts.target.sm90a)
    for (const fusion::Group& grp : plan.groups)
      EXPECT_NE(grp.kind, fusion::GroupKind::Reduction) << "the statistics are the product's";
  auto engine = gpu::Engine::build(g, plan, opts);
  for (const gpu::Step& s : engine->steps()) {
    EXPECT_TRUE(s.kernel.has_value()) << s.fallback_reason;
    EXPECT_TRUE(s.split_note.empty()) << s.split_note;
  }
  // Against the block in float32 (inputs and outputs stay float32 through the conversion):
  // the folded kernels' relative L2 error at most 1.5 times that of the unfolded half-precision
  // block's reference. Not element by element against the folded graph's own reference, which
  // rounds the product to the half type before subtracting mean · c (a cancellation the
  // kernels, keeping the accumulator's float, do not suffer: on an H100, 2026-12-07, 5–20
  // elements a seed differed by 1–2 units in the last place that way).
  graph::Graph truth = test::graph_from_text(test::post_norm_block(k, 96));
  graph::passes::run_pipeline(truth);
  const graph::Graph unfolded = test::half_post_norm_block(k, 96, half);
  gpu::Session session(engine);
  auto rel = [](const Tensor& a, const Tensor& b) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double d = a.get_f64(i) - b.get_f64(i);
      num += d * d;
      den += b.get_f64(i) * b.get_f64(i);
    }
    return std::sqrt(num / den);
  };
  for (uint64_t seed : {21u, 22u}) {
    std::vector<Tensor> in = test::random_inputs(g, seed);
    gpu::RunOptions ro;
    ro.poison = true;
    std::vector<Tensor> got = session.run(in, ro);
    std::vector<Tensor> want = runtime::run_reference(truth, in);
    std::vector<Tensor> base = runtime::run_reference(unfolded, in);
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = rel(got[i], want[i]), b = rel(base[i], want[i]);
      std::printf(
          "%s seed %d: rel L2 to float32, folded on the GPU %.3e, unfolded reference %.3e\n",
          g.outputs()[i].name.c_str(), static_cast<int>(seed), e, b);
      EXPECT_LE(e, 1.5 * b) << g.outputs()[i].name << " seed " << seed << ": folded " << e
                            << ", unfolded " << b;
      EXPECT_GT(b, 0.0);
    }
  }
}

TEST(GpuFoldNorms, PostNormBlockFloat16) { check_block(256, DType::Float16); }
TEST(GpuFoldNorms, PostNormBlockBFloat16) { check_block(256, DType::BFloat16); }
// k not a multiple of the 64-element k-tile: the last tile's columns past k (TMA's zeros) stay
// out of the sums.
TEST(GpuFoldNorms, PostNormBlockOddKFloat16) { check_block(200, DType::Float16); }

}  // namespace
}  // namespace braze
