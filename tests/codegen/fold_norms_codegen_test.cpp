// The wgmma schedule computing a folded LayerNormalization's statistics from A's tiles
// (GemmDims::row_stats), compiled with NVRTC for sm_90a (no GPU needed): on sm_90a the
// statistics join a product's kernel (no reduction kernel left) and every candidate of that
// product compiles; on the emulator's target the LayerNormalization stays a kernel of
// its own computing them.
#include <gtest/gtest.h>

#include "codegen/capabilities.h"
#include "codegen/codegen.h"
#include "runtime/gpu/nvrtc.h"
#include "tests/fold_norms_cases.h"
#include "tests/gemm_test_util.h"

namespace braze {
namespace {

size_t reductions(const fusion::Plan& p) {
  size_t n = 0;
  for (const fusion::Group& g : p.groups) n += g.kind == fusion::GroupKind::Reduction;
  return n;
}

TEST(FoldNormsCodegen, StatisticsJoinTheProductsAndEveryCandidateCompiles) {
  for (int k : {256, 200}) {
    const graph::Graph g = test::folded_post_norm_block(k, 96, DType::Float16);
    const fusion::Plan plan = codegen::plan_for(g, true, test::h200a());
    std::string refused;
    for (const fusion::RefusedMerge& r : plan.refused)
      refused += g.node(r.producer).describe() + " -> " + g.node(r.consumer).describe() + ": " +
                 r.reason + "\n";
    EXPECT_EQ(reductions(plan), 0u) << "k " << k << "\n" << refused;
    size_t with_stats = 0;
    for (const fusion::Group& grp : plan.groups) {
      if (grp.kind != fusion::GroupKind::Gemm) continue;
      bool stats = false;
      for (graph::NodeId id : grp.nodes)
        stats = stats || g.node(id).op_type() == "LayerNormalization";
      if (!stats) continue;
      ++with_stats;
      const std::vector<codegen::Tunables> cands = codegen::candidates(g, grp, test::h200a());
      ASSERT_FALSE(cands.empty());
      for (size_t ci = 0; ci < cands.size() && (k == 256 || ci < 4); ++ci) {
        const codegen::Tunables& t = cands[ci];
        EXPECT_FALSE(t.count("split") && t.at("split") != 1) << "split-K sees part of each row";
        codegen::GroupCode gc = codegen::generate(g, grp, test::h200a(), &t);
        ASSERT_TRUE(gc.kernel.has_value()) << gc.fallback_reason;
        gpu::Compiled c = gpu::nvrtc_compile(gc.kernel->source, gc.kernel->name,
                                             gpu::Arch::parse("sm_90a"), true);
        EXPECT_FALSE(c.cubin.empty()) << gc.kernel->name;
        EXPECT_NE(c.ptx.find("wgmma.mma_async"), std::string::npos);
      }
    }
    // One product computes them (and writes them); the other reads them from it.
    EXPECT_EQ(with_stats, 1u);
  }
}

TEST(FoldNormsCodegen, OffSm90aTheStatisticsAreAKernelOfTheirOwn) {
  const graph::Graph g = test::folded_post_norm_block(256, 96, DType::Float16);
  codegen::Target sm80;
  sm80.sm = 80;
  EXPECT_EQ(reductions(codegen::plan_for(g, true, sm80)), 1u);
}

}  // namespace
}  // namespace braze
