// LayerNormalization folded into the products that read it (graph/passes/fold_norms.h) on the
// GPU: a post-norm block in float16 / bfloat16, whose normalisation's statistics the wgmma
// schedule computes from A's tiles (on sm_90a no LayerNormalization kernel is left), run with
// the arena poisoned and compared with the reference executor on the same graph. Skips
// without a GPU.
#include <gtest/gtest.h>

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
  gpu::Session session(engine);
  for (uint64_t seed : {21u, 22u}) {
    std::vector<Tensor> in = test::random_inputs(g, seed);
    gpu::RunOptions ro;
    ro.poison = true;
    std::vector<Tensor> got = session.run(in, ro);
    std::vector<Tensor> want = runtime::run_reference(g, in);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(test::tensors_close(got[i], want[i])) << g.outputs()[i].name << " seed " << seed;
  }
}

TEST(GpuFoldNorms, PostNormBlockFloat16) { check_block(256, DType::Float16); }
TEST(GpuFoldNorms, PostNormBlockBFloat16) { check_block(256, DType::BFloat16); }
// k not a multiple of the 64-element k-tile: the last tile's columns past k (TMA's zeros) stay
// out of the sums.
TEST(GpuFoldNorms, PostNormBlockOddKFloat16) { check_block(200, DType::Float16); }

}  // namespace
}  // namespace braze
